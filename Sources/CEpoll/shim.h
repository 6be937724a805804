// epoll for the server's Poller. Glibc's Swift module leaves out <sys/epoll.h>, and
// `struct epoll_event` is packed on x86-64, so Swift sees only these small wrappers, which
// pass descriptors and event bits as plain arrays.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <unistd.h>

#define CAIRN_EPOLL_BATCH 256

static const uint32_t cairn_epoll_in = EPOLLIN;
static const uint32_t cairn_epoll_out = EPOLLOUT;
static const uint32_t cairn_epoll_rdhup = EPOLLRDHUP;
static const int cairn_epoll_add = EPOLL_CTL_ADD;
static const int cairn_epoll_mod = EPOLL_CTL_MOD;
static const int cairn_epoll_del = EPOLL_CTL_DEL;
static const int cairn_epoll_batch = CAIRN_EPOLL_BATCH;

static inline int cairn_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int cairn_epoll_ctl(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event event = { .events = events, .data = { .fd = fd } };
    return epoll_ctl(epfd, op, fd, &event);
}

// Waits at most `timeout` ms for up to CAIRN_EPOLL_BATCH ready descriptors; fills `fds` and
// `events` (each CAIRN_EPOLL_BATCH long) and returns how many, or -1 with errno.
static inline int cairn_epoll_wait(int epfd, int *fds, uint32_t *events, int timeout) {
    struct epoll_event ready[CAIRN_EPOLL_BATCH];
    int n = epoll_wait(epfd, ready, CAIRN_EPOLL_BATCH, timeout);
    for (int i = 0; i < n; i++) {
        fds[i] = ready[i].data.fd;
        events[i] = ready[i].events;
    }
    return n;
}

// An eventfd that wakes a Poller waiting in epoll_wait (`Poller.post`).
static inline int cairn_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

static inline void cairn_eventfd_signal(int fd) {
    uint64_t one = 1;
    (void)!write(fd, &one, sizeof one);
}

static inline void cairn_eventfd_clear(int fd) {
    uint64_t count;
    (void)!read(fd, &count, sizeof count);
}
