/* Preloaded into cairnd under valgrind by scripts/profile.
 *
 * libdispatch parks the main thread in sigsuspend() with a mask that lives in read-only memory
 * (a static const in _dispatch_sigsuspend). Valgrind 3.19 edits the mask in place before the
 * syscall (to keep its own signals deliverable) and dies with SIGSEGV on the write. Passing a
 * copy on the stack changes nothing for the program and lets valgrind run it. */
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, (long)(_NSIG / 8));
}
