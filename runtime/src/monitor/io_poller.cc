// Layer B: readiness waits through the runtime's own epoll. A waiting user thread registers one
// entry per descriptor in a bucketed table (keyed by fd), arms the descriptor in the runtime's
// epoll with EPOLLONESHOT (the interest is the union of every waiter's events on that fd) and
// parks. Whoever waits on the epoll takes the entries an event satisfies off the table, re-arms the
// descriptor for the remaining ones and makes their threads runnable. One-shot arming makes stale
// registrations harmless: a closed-and-reused fd number fires at most once more, and its waiters
// re-check.
//
// Who waits on the epoll (Go's netpoller, issue 15). Natively, a readiness wait costs one wake-up:
// the waiting thread's. A dedicated poller kernel thread costs two: it wakes on the event, then
// wakes a sleeping carrier (futex) to run the thread. So the epoll is waited on by carriers:
//
// - The netpoller. An idle carrier that has nothing to run after its adaptive poll (idle_spin.h)
//   takes the netpoller role if nobody holds it (one CAS on `holder`; at most one carrier at a
//   time) and blocks in epoll_pwait2 instead of on its futex, until its sleep budget (its own next
//   timer deadline, or every busy core's if it is the keeper; 1 ms in arbiter mode) runs out.
//   Other idle carriers sleep on their futex as before. The epoll set holds an eventfd (the
//   wake-up descriptor): a waker that finds the carrier's `sleeping` word at kSleepingInEpoll
//   (exchange to 0, as for the futex) writes it instead of a futex wake, so new work, a steal
//   request (wakep), a core release (release_watcher.cc, releaseCore), a lend-back and stop all
//   interrupt the wait exactly as they interrupt a futex sleep, through the same publish / fence /
//   look protocol (invariant 9). On readiness the carrier runs the first ready thread itself and
//   queues the others on its own core (waking one idle core to steal them): one wake-up per event,
//   on the core that will run the thread.
// - Polling carriers. A carrier still in its idle poll looks at the epoll without waiting (at most
//   every kPeekIntervalNs among all carriers) while the role is vacant and waits exist, so an
//   event that arrives while every idle carrier polls is caught within microseconds, as the old
//   poller thread's wake-up was.
// - The monitor (Go's sysmon rule). When the role is vacant (every carrier busy, or its holder
//   left to run work while the other idle carriers sleep on their futexes: they found the role
//   taken, and nothing hands it over) and waits exist, the monitor looks at the epoll without
//   waiting once the last look is kNetpollStaleNs old, and makes the ready threads runnable on
//   their cores (waking them as any wake-up does). Readiness is therefore never lost and waits at
//   most ~kNetpollStaleNs plus the monitor's nap while the role is vacant; a carrier that returns
//   to its dispatcher takes the role sooner.
//
// A stale wake-up write (the waker lost the race with a time-out) makes the next netpoller return
// once for nothing: it drains the eventfd and goes back to sleep. The eventfd and the epoll are
// closed only after every carrier and the monitor have been joined (runtime.cc), so no late write
// can reach a reused descriptor number.
//
// Rejected:
// - Handing the role over when its holder leaves the epoll to run work (waking a carrier asleep on
//   its futex to take it): on a lightly loaded server that is a second wake-up per event where
//   natively there is one, to catch only the events that arrive while the holder runs a thread.
// - Keeping the poller thread always in epoll_wait beside a netpolling carrier: epoll wakes its
//   waiters exclusively in queue order, so the poller thread (first in the queue) would take most
//   events and the second wake-up would stay.
// - Switching the poller thread on only while no carrier holds the role: every hand-over of the
//   role would wake or kick it (an eventfd write), three wake-ups per event instead of two.
// - Every idle carrier in epoll_wait (one eventfd each): the carriers cannot be woken one at a
//   time (an eventfd in the shared set wakes whichever waiter epoll picks), and a nested epoll per
//   carrier wakes all of them on every event.
// - Making the program's descriptors non-blocking or moving each waiter's descriptors into a
//   per-core epoll: the first changes what the program observes, the second needs a descriptor to
//   follow its thread when it is stolen.
// - epoll_wait's millisecond timeout: a carrier's sleep budget is its next timer deadline, which
//   is often sub-millisecond; epoll_pwait2 (Linux 5.11) takes nanoseconds. On an older kernel the
//   budget is rounded up to the next millisecond (timers of a netpolling carrier fire up to 1 ms
//   late there).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <memory>
#include <vector>

#include "arbrt/embed/raw_syscall.h"
#include "arbrt/io.h"
#include "arbrt/time.h"
#include "monitor/io_poller.h"
#include "platform/arch.h"
#include "sched/runtime_state.h"

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441  // x86-64, Linux 5.11
#endif

namespace arbrt {
namespace detail {
namespace {

constexpr uint64_t kWakeKey = ~uint64_t{0};
constexpr uint32_t kAlwaysReported = EPOLLERR | EPOLLHUP;
constexpr int kBuckets = 256;
constexpr int kMaxEvents = 64;
// A polling carrier looks at the epoll at most this often (all carriers together): a syscall per
// look, while the ~100 ns steal passes between looks keep catching queued work.
constexpr uint64_t kPeekIntervalNs = 2'000;

// One waiting thread's whole wait (all its descriptors). Lives on the waiter's stack; a poller
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

// The epoll, its wake-up eventfd and who waits on it. `epfd` and `wakeFd` are immutable between
// startPoller() and stopPoller(). The role words share a line of their own: `holder` (the id of the
// core whose carrier is the netpoller, -1: vacant) is CAS'd by idle carriers and cleared by its
// holder; `lastPollTsc` (when a look at the epoll last ended) is written by whoever looked and read
// by polling carriers and the monitor; `waits` (readiness waits in progress) is written by the
// waiting threads. All relaxed: they are hints, and the wake-up itself goes through the core's
// `sleeping` word and its fences (invariant 9).
struct Poller {
    int epfd = -1;
    int wakeFd = -1;
    alignas(64) std::atomic<int> holder{-1};
    std::atomic<uint64_t> lastPollTsc{0};
    std::atomic<uint64_t> waits{0};
    std::atomic<bool> havePwait2{true};                // cleared once the kernel says ENOSYS
    alignas(64) std::atomic<uint64_t> byNetpoller{0};  // statistics (NetpollCounts)
    std::atomic<uint64_t> byPeek{0};
    std::atomic<uint64_t> byMonitor{0};
    std::atomic<uint64_t> netpollWaits{0};
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
// Raw calls, no errno: a carrier waiting in place (waitInPlace) re-arms from a parked thread's TLS,
// whose errno the thread would find changed when it resumes.
int arm(int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events | EPOLLONESHOT;
    ev.data.u64 = uint64_t(uint32_t(fd));
    const long ptr = reinterpret_cast<long>(&ev);
    long r = sysCall(SYS_epoll_ctl, gPoller->epfd, EPOLL_CTL_MOD, fd, ptr);
    if (r == -ENOENT) r = sysCall(SYS_epoll_ctl, gPoller->epfd, EPOLL_CTL_ADD, fd, ptr);
    return int(-r);
}

// Where the threads an event readies go. On a carrier (`here` set): the first one this core may
// run is claimed for the caller to run directly, the others are queued on this core (each a
// claimed, parked thread, so setting its core is ours to do); threads this core may not run, and
// threads not parked yet (a permit is left for them), take the ordinary wake-up path. For the
// monitor (`here` null): the ordinary wake-up path, to their own cores.
class ReadySink {
  public:
    // `counter` counts the threads readied, each before it can run (tests read it after).
    ReadySink(Core* here, std::atomic<uint64_t>& counter) : here_(here), counter_(counter) {}

    void add(ThreadId id) {
        counter_.fetch_add(1, std::memory_order_relaxed);
        ThreadContext* t = id.context;
        t->eventWake.store(1, std::memory_order_relaxed);  // before it can be queued
        if (!here_ || !claimParked(t, id.generation)) {
            signalContext(t, id.generation, Wake::wakeup);
            return;
        }
        // As a joiner run directly (thread.cc): allowed here, the core takes it, and an exclusive
        // thread stays on its own core.
        const Core* reserved = std::atomic_ref(t->reservedCore).load(std::memory_order_relaxed);
        if (!t->allowed.test(size_t(here_->id)) || !acceptsThread(here_, t) ||
            (reserved && reserved != here_)) {
            enqueue(t, Wake::wakeup);  // its own core (or wherever it is allowed), woken there
            return;
        }
        t->core = here_;
        if (!first_) {
            first_ = t;
            return;
        }
        enqueue(t, Wake::requeue);  // requeue: the wake-up for helpers is finish()'s
        queuedHere_ = true;
    }

    // The thread the caller runs now (or null), once every event is in. Threads queued here besides
    // it are work for an idle core (wakep); a core being released runs nothing more.
    ThreadContext* finish() {
        if (!here_) return nullptr;
        if (first_ && (here_->releaseRequested.load(std::memory_order_relaxed) ||
                       !here_->active.load(std::memory_order_relaxed))) {
            enqueue(first_, Wake::wakeup);  // pushed elsewhere, that core woken
            first_ = nullptr;
        }
        if (queuedHere_) wakeIdleCoreForBalance(here_);
        return first_;
    }

  private:
    Core* here_;
    ThreadContext* first_ = nullptr;
    bool queuedHere_ = false;
    std::atomic<uint64_t>& counter_;
};

// The reaction to one event: hands every waiter the event satisfies to `sink` and re-arms the fd
// for the others. Thread handles are copied out under the lock, so no waiter's memory is touched
// after it could have returned.
void dispatchEvent(int fd, uint32_t revents, ReadySink& sink) {
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
    for (int i = 0; i < n; ++i) sink.add(toWake[i]);
    for (ThreadId t : more) sink.add(t);
}

// Empties the wake-up eventfd (a wake-up that was meant for this wait, or a stale one).
void drainWakeFd() {
    uint64_t count;
    sysCall(SYS_read, gPoller->wakeFd, reinterpret_cast<long>(&count), sizeof count);
}

// One epoll wait of at most `timeoutNs` (0: a look; ~0: no limit), raw (no interposed wrapper, no
// errno: this runs on carriers and the monitor). Returns the number of events, 0 on time-out or
// interruption (EINTR: the caller's loop looks again).
int waitEvents(epoll_event* events, uint64_t timeoutNs) {
    Poller& p = *gPoller;
    if (p.havePwait2.load(std::memory_order_relaxed)) {
        timespec ts{time_t(timeoutNs / 1'000'000'000), long(timeoutNs % 1'000'000'000)};
        const long n = sysCall(SYS_epoll_pwait2, p.epfd, reinterpret_cast<long>(events), kMaxEvents,
                               timeoutNs == ~uint64_t{0} ? 0 : reinterpret_cast<long>(&ts), 0, 0);
        if (n != -ENOSYS) return n > 0 ? int(n) : 0;
        p.havePwait2.store(false, std::memory_order_relaxed);
    }
    const long ms = timeoutNs == ~uint64_t{0} ? -1
                    : timeoutNs == 0
                        ? 0
                        : long(std::min<uint64_t>((timeoutNs + 999'999) / 1'000'000, 1u << 30));
    const long n = sysCall(SYS_epoll_wait, p.epfd, reinterpret_cast<long>(events), kMaxEvents, ms);
    return n > 0 ? int(n) : 0;
}

// Hands the events of one wait to `sink`; the wake-up descriptor is drained, not dispatched.
void dispatchAll(const epoll_event* events, int n, ReadySink& sink) {
    for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == kWakeKey) {
            drainWakeFd();
            continue;
        }
        dispatchEvent(int(uint32_t(events[i].data.u64)), events[i].events, sink);
    }
}

// A look at the epoll without waiting, for `here` (a polling carrier) or the monitor (null).
ThreadContext* lookWithoutWaiting(Core* here, std::atomic<uint64_t>& counter) {
    epoll_event events[kMaxEvents];
    const int n = waitEvents(events, 0);
    gPoller->lastPollTsc.store(rdtsc(), std::memory_order_relaxed);
    if (n == 0) return nullptr;
    ReadySink sink(here, counter);
    dispatchAll(events, n, sink);
    return sink.finish();
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

// Closes a poller's descriptors and frees it.
void destroyPoller(Poller* p) {
    if (p->epfd >= 0) close(p->epfd);
    if (p->wakeFd >= 0) close(p->wakeFd);
    delete p;
}

}  // namespace

bool startPoller() {
    if (gPoller) {  // a fork child rebuilding the runtime: the parent's carriers are gone
        destroyPoller(gPoller);
        gPoller = nullptr;
    }
    auto* p = new Poller;
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->wakeFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: reported until drained, so no write is lost
    ev.data.u64 = kWakeKey;
    if (p->epfd < 0 || p->wakeFd < 0 || epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->wakeFd, &ev) != 0) {
        destroyPoller(p);
        return false;
    }
    p->lastPollTsc.store(rdtsc(), std::memory_order_relaxed);
    gPoller = p;
    return true;
}

void stopPoller() {
    if (!gPoller) return;
    destroyPoller(gPoller);
    gPoller = nullptr;
}

bool takeNetpollRole(Core* core) {
    Poller* p = gPoller;
    if (!p || core->reservedFor.load(std::memory_order_relaxed)) return false;
    int vacant = -1;
    return p->holder.load(std::memory_order_relaxed) == -1 &&
           p->holder.compare_exchange_strong(vacant, core->id, std::memory_order_relaxed);
}

void dropNetpollRole(Core* core) {
    Poller* p = gPoller;
    p->lastPollTsc.store(rdtsc(), std::memory_order_relaxed);
    if (p->holder.load(std::memory_order_relaxed) == core->id) {
        p->holder.store(-1, std::memory_order_relaxed);
    }
}

ThreadContext* netpollWait(Core* core, uint64_t budgetNs) {
    Poller& p = *gPoller;
    epoll_event events[kMaxEvents];
    p.netpollWaits.fetch_add(1, std::memory_order_relaxed);
    const int n = waitEvents(events, budgetNs);
    if (n == 0) return nullptr;
    ReadySink sink(core, p.byNetpoller);
    dispatchAll(events, n, sink);
    return sink.finish();
}

ThreadContext* netpollPeek(Core* core) {
    Poller* p = gPoller;
    if (!p || p->waits.load(std::memory_order_relaxed) == 0 ||
        p->holder.load(std::memory_order_relaxed) != -1) {
        return nullptr;
    }
    uint64_t last = p->lastPollTsc.load(std::memory_order_relaxed);
    const uint64_t now = rdtsc();
    if (now - last < ticksForNs(kPeekIntervalNs) ||
        !p->lastPollTsc.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
        return nullptr;  // looked at recently, or another carrier looks now
    }
    return lookWithoutWaiting(core, p->byPeek);
}

void wakeNetpoller() {
    const uint64_t one = 1;
    sysCall(SYS_write, gPoller->wakeFd, reinterpret_cast<long>(&one), sizeof one);
}

uint64_t netpollFromMonitor() {
    Poller* p = gPoller;
    if (!p || p->waits.load(std::memory_order_relaxed) == 0 ||
        p->holder.load(std::memory_order_relaxed) != -1) {
        return ~uint64_t{0};  // nothing to look for, or a carrier waits on the epoll
    }
    const uint64_t staleTicks = ticksForNs(kNetpollStaleNs);
    const uint64_t age = rdtsc() - p->lastPollTsc.load(std::memory_order_relaxed);
    if (age < staleTicks) return ticksToNs(staleTicks - age);
    lookWithoutWaiting(nullptr, p->byMonitor);
    return kNetpollStaleNs;
}

int netpollHolder() {
    return gPoller ? gPoller->holder.load(std::memory_order_relaxed) : -1;
}

NetpollCounts netpollCounts() {
    NetpollCounts c{};
    if (Poller* p = gPoller) {
        c.waitsInProgress = p->waits.load(std::memory_order_relaxed);
        c.netpollWaits = p->netpollWaits.load(std::memory_order_relaxed);
        c.readiedByNetpoller = p->byNetpoller.load(std::memory_order_relaxed);
        c.readiedByPeek = p->byPeek.load(std::memory_order_relaxed);
        c.readiedByMonitor = p->byMonitor.load(std::memory_order_relaxed);
    }
    return c;
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
    // Counted before the descriptors are armed. Polling carriers and the monitor look only while
    // the count is non-zero; a netpolling carrier waits regardless of it, so a stale zero only
    // delays the monitor's look to its next pass while every carrier is busy.
    gPoller->waits.fetch_add(1, std::memory_order_relaxed);
    if (const int err = registerAll(entries, count)) {
        gPoller->waits.fetch_sub(1, std::memory_order_relaxed);
        return -err;
    }
    const int outcome = parkForGroup(group, deadlineNs, interrupted);
    unregister(entries, count);
    gPoller->waits.fetch_sub(1, std::memory_order_relaxed);
    int ready = 0;
    for (int i = 0; i < count; ++i) {
        fds[i].ready = entries[i].ready;  // written under the bucket lock, which we took since
        if (fds[i].ready) ++ready;
    }
    return ready > 0 ? ready : outcome;
}

}  // namespace arbrt
