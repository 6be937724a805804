"""RQ (Python's job queue, from PyPI) against cairnd, as a user runs it: jobs enqueued, real
`rq worker` processes run them in burst mode, results read back. RQ 2 and later keep each job's
results in a stream (XADD with MAXLEN, XREVRANGE, XREAD BLOCK), so nothing finishes without
streams."""
import datetime
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import rq
    from rq import Queue
    from rq.job import JobStatus
except ImportError:  # scripts/test installs it; a bare pytest run may lack it
    rq = None

pytestmark = pytest.mark.skipif(rq is None, reason="rq is not installed (pip install rq)")

import rq_tasks  # noqa: E402  (the workers import it from HERE too)


def workers(server, count, *extra):
    """`count` burst workers, run to the end."""
    url = f"redis://127.0.0.1:{server.port}"
    procs = [subprocess.Popen([sys.executable, "-m", "rq.cli", "worker", "--burst", "--url", url, "--path", HERE,
                               "--quiet", *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for _ in range(count)]
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0, out.decode()[-2000:]


def test_rq_jobs_finish_with_results(fresh_server):
    server = fresh_server()
    conn = server.client()
    assert int(rq.__version__.split(".")[0]) >= 2
    q = Queue("default", connection=conn)
    jobs = [q.enqueue(rq_tasks.square, i) for i in range(1950)]
    failing = [q.enqueue(rq_tasks.fail, i) for i in range(50)]
    workers(server, 2)
    for i, job in enumerate(jobs):
        assert job.get_status(refresh=True) == JobStatus.FINISHED, (i, job.get_status())
        assert job.return_value(refresh=True) == i * i
    registry = q.failed_job_registry
    assert sorted(registry.get_job_ids()) == sorted(j.id for j in failing)
    for job in failing:
        assert job.get_status(refresh=True) == JobStatus.FAILED
        assert "fails on purpose" in job.latest_result().exc_string
    assert len(q) == 0


def test_rq_scheduled_jobs_run_with_the_scheduler(fresh_server):
    server = fresh_server()
    conn = server.client()
    q = Queue("default", connection=conn)
    later = q.enqueue_in(datetime.timedelta(seconds=1), rq_tasks.greet, "later")
    at = q.enqueue_at(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1), rq_tasks.greet, "at")
    assert later.get_status() == JobStatus.SCHEDULED
    time.sleep(2)
    workers(server, 1, "--with-scheduler")
    assert later.return_value(refresh=True) == "hello later"
    assert at.return_value(refresh=True) == "hello at"


def test_rq_waits_for_a_result_through_a_blocking_read(fresh_server):
    """Job.latest_result(timeout=...) waits with XREAD BLOCK on the job's result stream."""
    server = fresh_server()
    conn = server.client()
    q = Queue("default", connection=conn)
    job = q.enqueue(rq_tasks.square, 12)
    worker = subprocess.Popen([sys.executable, "-c", f"import time, subprocess, sys; time.sleep(1); "
                               f"subprocess.run([sys.executable, '-m', 'rq.cli', 'worker', '--burst', '--quiet', "
                               f"'--url', 'redis://127.0.0.1:{server.port}', '--path', {HERE!r}], check=True)"])
    started = time.time()
    result = job.latest_result(timeout=30)
    assert result is not None and result.return_value == 144
    assert time.time() - started < 25
    worker.wait(60)
