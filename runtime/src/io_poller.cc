// Layer B: readiness waits through the runtime's own epoll. A waiting user thread registers one
// entry per descriptor in a bucketed table (keyed by fd), arms the descriptor in the runtime's
// epoll with EPOLLONESHOT (the interest is the union of every waiter's events on that fd) and
// parks. The poller thread, blocked in epoll_wait, takes the entries an event satisfies off the
// table, re-arms the descriptor for the remaining ones and wakes their threads. One-shot arming
// makes stale registrations harmless: a closed-and-reused fd number fires at most once more, and
// its waiters re-check.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "arbrt/io.h"
#include "arbrt/time.h"
#include "arch.h"
#include "io_poller.h"
#include "runtime_state.h"

namespace arbrt {
namespace detail {
namespace {

constexpr uint64_t kStopKey = ~uint64_t{0};
constexpr uint32_t kAlwaysReported = EPOLLERR | EPOLLHUP;
constexpr int kBuckets = 256;

// One waiting thread's whole wait (all its descriptors). Lives on the waiter's stack; the poller
// touches it only under the lock of a bucket that still lists one of its entries.
struct WaitGroup {
    ThreadId thread;
    std::atomic<uint32_t> fired{0};
};

// One descriptor of a wait. Linked into its bucket while armed; `ready` written by the poller
// under the bucket lock.
struct FdEntry {
    int fd = -1;
    uint32_t events = 0;
    uint32_t ready = 0;
    WaitGroup* group = nullptr;
    FdEntry* prev = nullptr;
    FdEntry* next = nullptr;
    bool linked = false;
};

// Entries hashed by fd. Guarded by `lock`; entries of one fd are always in the same bucket, so the
// union of interests (and epoll_ctl for the fd) is computed under one lock.
struct alignas(64) Bucket {
    SpinLock lock{LockRank::poller};
    FdEntry* head = nullptr;
};

struct Poller {
    int epfd = -1;
    int stopFd = -1;
    pthread_t thread{};
    Bucket buckets[kBuckets];
};

Poller* gPoller = nullptr;

Bucket& bucketFor(int fd) {
    return gPoller->buckets[unsigned(fd) % kBuckets];
}

void link(Bucket& b, FdEntry* e) {
    e->prev = nullptr;
    e->next = b.head;
    if (b.head) b.head->prev = e;
    b.head = e;
    e->linked = true;
}

void unlink(Bucket& b, FdEntry* e) {
    if (e->prev) {
        e->prev->next = e->next;
    } else {
        b.head = e->next;
    }
    if (e->next) e->next->prev = e->prev;
    e->linked = false;
}

uint32_t interestFor(const Bucket& b, int fd) {
    uint32_t events = 0;
    for (FdEntry* e = b.head; e; e = e->next) {
        if (e->fd == fd) events |= e->events;
    }
    return events;
}

// Arms `fd` for `events` (one-shot). Returns 0 or an errno value. Caller holds the fd's bucket.
int arm(int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events | EPOLLONESHOT;
    ev.data.u64 = uint64_t(uint32_t(fd));
    if (epoll_ctl(gPoller->epfd, EPOLL_CTL_MOD, fd, &ev) == 0) return 0;
    if (errno != ENOENT) return errno;
    if (epoll_ctl(gPoller->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) return 0;
    return errno;
}

// The poller's reaction to one event: wakes every waiter the event satisfies and re-arms the fd
// for the others. Thread handles are copied out under the lock, so no waiter's memory is touched
// after it could have returned.
void dispatchEvent(int fd, uint32_t revents) {
    Bucket& b = bucketFor(fd);
    ThreadId toWake[16];
    int n = 0;
    std::vector<ThreadId> more;
    b.lock.lock();
    for (FdEntry* e = b.head; e;) {
        FdEntry* next = e->next;
        const uint32_t hit = revents & (e->events | kAlwaysReported);
        if (e->fd == fd && hit) {
            e->ready = hit;
            unlink(b, e);
            if (e->group->fired.exchange(1, std::memory_order_acq_rel) == 0) {
                if (n < 16) {
                    toWake[n++] = e->group->thread;
                } else {
                    more.push_back(e->group->thread);
                }
            }
        }
        e = next;
    }
    if (const uint32_t rest = interestFor(b, fd)) arm(fd, rest);
    b.lock.unlock();
    for (int i = 0; i < n; ++i) signal(toWake[i]);
    for (ThreadId t : more) signal(t);
}

void* pollerMain(void*) {
    epoll_event events[64];
    for (;;) {
        const int n = epoll_wait(gPoller->epfd, events, 64, -1);
        if (n < 0) continue;  // EINTR
        for (int i = 0; i < n; ++i) {
            if (events[i].data.u64 == kStopKey) return nullptr;
            dispatchEvent(int(uint32_t(events[i].data.u64)), events[i].events);
        }
    }
}

void unregister(FdEntry* entries, int count) {
    for (int i = 0; i < count; ++i) {
        FdEntry* e = &entries[i];
        if (e->fd < 0) continue;
        Bucket& b = bucketFor(e->fd);
        b.lock.lock();
        if (e->linked) unlink(b, e);
        b.lock.unlock();
    }
}

// Registers every entry; on failure unregisters those done and returns the errno value.
int registerAll(FdEntry* entries, int count) {
    for (int i = 0; i < count; ++i) {
        FdEntry* e = &entries[i];
        Bucket& b = bucketFor(e->fd);
        b.lock.lock();
        link(b, e);
        const int err = arm(e->fd, interestFor(b, e->fd));
        if (err) unlink(b, e);
        b.lock.unlock();
        if (err) {
            unregister(entries, i);
            return err;
        }
    }
    return 0;
}

// Parks until the group fired, the deadline passed or the caller is interrupted.
int parkForGroup(WaitGroup& group, uint64_t deadlineNs, bool (*interrupted)()) {
    while (group.fired.load(std::memory_order_acquire) == 0) {
        if (interrupted && interrupted()) return -EINTR;
        if (deadlineNs != kNoDeadline && nowNs() >= deadlineNs) return 0;
        if (deadlineNs == kNoDeadline) {
            block();
        } else {
            blockUntil(deadlineNs);
        }
    }
    return 0;
}

}  // namespace

bool startPoller() {
    if (gPoller) {  // a fork child rebuilding the runtime: the parent's poller thread is gone
        close(gPoller->epfd);
        close(gPoller->stopFd);
        delete gPoller;
        gPoller = nullptr;
    }
    auto p = std::make_unique<Poller>();
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->stopFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (p->epfd < 0 || p->stopFd < 0) {
        if (p->epfd >= 0) close(p->epfd);
        if (p->stopFd >= 0) close(p->stopFd);
        return false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kStopKey;
    epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->stopFd, &ev);
    gPoller = p.release();
    if (hostCreateThread(&gPoller->thread, pollerMain, nullptr) != 0) {
        close(gPoller->epfd);
        close(gPoller->stopFd);
        delete gPoller;
        gPoller = nullptr;
        return false;
    }
    return true;
}

void stopPoller() {
    if (!gPoller) return;
    const uint64_t one = 1;
    (void)!write(gPoller->stopFd, &one, sizeof one);
    hostJoinThread(gPoller->thread);
    close(gPoller->epfd);
    close(gPoller->stopFd);
    delete gPoller;
    gPoller = nullptr;
}

}  // namespace detail

using namespace detail;

int waitForFds(FdInterest* fds, int count, uint64_t deadlineNs, bool (*interrupted)()) {
    if (!currentContext() || !gPoller) return -EPERM;
    if (count <= 0) return -EINVAL;
    WaitGroup group;
    group.thread = self();
    FdEntry onStack[8];
    std::unique_ptr<FdEntry[]> onHeap;
    FdEntry* entries = onStack;
    if (count > 8) {
        onHeap = std::make_unique<FdEntry[]>(size_t(count));
        entries = onHeap.get();
    }
    for (int i = 0; i < count; ++i) {
        fds[i].ready = 0;
        entries[i].fd = fds[i].fd;
        entries[i].events = fds[i].events;
        entries[i].group = &group;
    }
    if (const int err = registerAll(entries, count)) return -err;
    const int outcome = parkForGroup(group, deadlineNs, interrupted);
    unregister(entries, count);
    int ready = 0;
    for (int i = 0; i < count; ++i) {
        fds[i].ready = entries[i].ready;  // written under the bucket lock, which we took since
        if (fds[i].ready) ++ready;
    }
    return ready > 0 ? ready : outcome;
}

}  // namespace arbrt
