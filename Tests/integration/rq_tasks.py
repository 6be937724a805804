"""Job functions for test_rq.py: RQ's workers import them by module path."""


def square(n):
    return n * n


def fail(n):
    raise ValueError(f"job {n} fails on purpose")


def greet(name):
    return f"hello {name}"
