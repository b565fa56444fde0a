#include "arbclient/client.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

namespace arbclient {

using arbproto::ServerMessage;
using arbproto::ServerStream;

// One carrier kernel thread. Fields are protected by the client's mu_, except that while `blocked`
// the carrier thread itself owns `fd`/`stream` and reads them without the lock.
struct CoreArbiterClient::Carrier {
    int tid = 0;
    int fd = -1;
    std::unique_ptr<ServerStream> stream;
    uint64_t epoch = 0;  // session epoch `fd` belongs to
    int core = -1;       // core held, -1 while waiting
    uint64_t generation = 0;
    bool blocked = false;
};

namespace {

// gettid() as a raw syscall: glibc's cached tid may belong to a user thread under the runtime.
int currentTid() {
    return static_cast<int>(syscall(SYS_gettid));
}

// Closes and marks the slot empty, so a second close can never hit a reused descriptor.
void closeFd(int* fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

// Default monitor starter: a detached std::thread (the destructor waits for monitorExited_).
bool defaultStartThread(std::function<void()> body, std::string* error) {
    try {
        std::thread(std::move(body)).detach();
        return true;
    } catch (const std::system_error& e) {
        if (error) *error = e.what();
        return false;
    }
}

// How long the control socket waits for a reply before the call fails (SO_RCVTIMEO).
constexpr long kReplyTimeoutSeconds = 5;

// Reads one reply, turning an arbiter ErrorReply or a stream failure into `error`.
bool readReply(ServerStream* stream, ServerMessage* reply, std::string* error, int* passedFd) {
    if (stream->next(reply, error, passedFd) != ServerStream::Result::kMessage) return false;
    if (auto* e = std::get_if<arbproto::ErrorReply>(reply)) {
        if (error) *error = "arbiter refused: " + e->text;
        return false;
    }
    return true;
}

}  // namespace

CoreArbiterClient::CoreArbiterClient(std::string socketPath, ClientOptions options)
    : socketPath_(std::move(socketPath)), options_(std::move(options)) {}

// Convenience overload with default options.
std::unique_ptr<CoreArbiterClient> CoreArbiterClient::connect(const std::string& socketPath,
                                                              std::string* error) {
    return connect(socketPath, ClientOptions{}, error);
}

// Reserves the page address, opens the session, then starts the monitor: a failure at any step
// returns nullptr with a one-line reason and leaves nothing running.
std::unique_ptr<CoreArbiterClient> CoreArbiterClient::connect(const std::string& socketPath,
                                                              const ClientOptions& options,
                                                              std::string* error) {
    std::unique_ptr<CoreArbiterClient> client(new CoreArbiterClient(socketPath, options));
    // Reserve the page's address once; sessions are mapped over it with MAP_FIXED.
    void* page =
        mmap(nullptr, arbproto::kSharedPageSize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    client->stopFd_ = eventfd(0, EFD_CLOEXEC);
    if (page == MAP_FAILED || client->stopFd_ < 0) {
        if (page != MAP_FAILED) munmap(page, arbproto::kSharedPageSize);
        if (error) *error = std::string("cannot set up client: ") + strerror(errno);
        return nullptr;
    }
    client->page_ = static_cast<arbproto::SharedPage*>(page);
    if (!client->openSession(false, error)) return nullptr;
    auto start = options.startThread ? options.startThread : defaultStartThread;
    CoreArbiterClient* self = client.get();
    self->monitorRunning_ = true;
    if (!start([self] { self->monitorLoop(); }, error)) {
        self->monitorRunning_ = false;
        return nullptr;
    }
    return client;
}

// Waits for the monitor and for every carrier to leave blockUntilCoreAvailable before freeing
// anything they use; only then says goodbye (the arbiter reclaims the cores at once).
CoreArbiterClient::~CoreArbiterClient() {
    shutdown();
    std::unique_lock lock(mu_);
    monitorExited_.wait(lock, [&] { return !monitorRunning_; });
    carriersLeft_.wait(lock, [&] { return carriersInside_ == 0; });
    if (controlFd_ >= 0) {
        std::string ignored;
        arbproto::sendMessage(controlFd_, arbproto::Goodbye{}, &ignored);
    }
    for (auto& [tid, c] : carriers_) closeFd(&c->fd);
    closeFd(&controlFd_);
    closeFd(&stopFd_);
    if (page_) munmap(page_, arbproto::kSharedPageSize);
}

// Wakes everything that may be waiting: the monitor (eventfd), blocked carriers (shutdown(2) of
// their sockets) and carriers waiting for a session (condition variable).
void CoreArbiterClient::shutdown() {
    stopping_.store(true);
    uint64_t one = 1;
    if (stopFd_ >= 0 && write(stopFd_, &one, sizeof(one)) < 0) {
        // The eventfd counter cannot overflow with one write per shutdown; nothing to do.
    }
    std::lock_guard lock(mu_);
    // shutdown(2), not close(2): a blocked reader wakes up and the descriptor cannot be reused
    // under it.
    for (auto& [tid, c] : carriers_)
        if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
    sessionChanged_.notify_all();
}

// Connects, says hello, maps the release page over page_ and (on reconnect) re-registers every
// carrier that holds a core and resends the last request, before publishing the new session.
bool CoreArbiterClient::openSession(bool reconnect, std::string* error) {
    std::string why;
    int fd = arbproto::connectUnix(socketPath_, &why);
    if (fd < 0) {
        if (error) *error = "cannot reach core arbiter at " + socketPath_ + " (" + why + ")";
        return false;
    }
    // Replies on the control socket (hello, request acknowledgements) come within milliseconds from
    // a healthy arbiter; an arbiter that stops answering must not hang the program's start-up.
    const timeval replyTimeout{kReplyTimeoutSeconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &replyTimeout, sizeof replyTimeout);
    auto stream = std::make_unique<ServerStream>(fd);
    arbproto::Hello hello;
    hello.flags = reconnect ? arbproto::kHelloFlagReconnect : 0;
    ServerMessage reply;
    int memfd = -1;
    if (!arbproto::sendMessage(fd, hello, &why) || !readReply(stream.get(), &reply, &why, &memfd) ||
        !std::holds_alternative<arbproto::HelloReply>(reply) || memfd < 0) {
        if (error) *error = "core arbiter handshake failed: " + (why.empty() ? "no page" : why);
        closeFd(&memfd);
        close(fd);
        return false;
    }
    const auto& hr = std::get<arbproto::HelloReply>(reply);
    std::unique_lock lock(mu_);
    void* mapped =
        mmap(page_, arbproto::kSharedPageSize, PROT_READ, MAP_SHARED | MAP_FIXED, memfd, 0);
    close(memfd);
    // A release waiter may sleep on the page just replaced (none before the first session).
    if (reconnect) pageSwapped();
    if (mapped == MAP_FAILED || page_->magic != arbproto::kPageMagic ||
        page_->version != arbproto::kPageVersion) {
        if (error) *error = "core arbiter sent an unusable release page";
        mmap(page_, arbproto::kSharedPageSize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
             -1, 0);
        if (reconnect) pageSwapped();
        close(fd);
        return false;
    }
    controlFd_ = fd;
    controlStream_ = std::move(stream);
    sessionId_ = hr.sessionId;
    if (!reconnect) firstUid_ = geteuid();
    if (reconnect) {
        for (auto& [tid, c] : carriers_) {
            if (c->core < 0) continue;
            if (!attachCarrier(c.get(), c->core, sessionId_, sessionEpoch_ + 1, &why)) {
                // The carrier keeps running; it is re-registered when it next blocks.
                closeFd(&c->fd);
            }
        }
    }
    sessionEpoch_++;
    connected_.store(true, std::memory_order_release);
    bool resend = reconnect && haveRequest_;
    lock.unlock();
    if (resend) exchangeRequest(&why);
    sessionChanged_.notify_all();
    return true;
}

// Opens a carrier connection and registers `carrier` (claiming `claimedCore` after a restart).
// Called with mu_ held by the monitor, or without it by the carrier thread for itself (on a scratch
// Carrier). `epoch` is the session the new connection belongs to.
bool CoreArbiterClient::attachCarrier(Carrier* carrier, int claimedCore, uint64_t sessionId,
                                      uint64_t epoch, std::string* error) {
    int fd = arbproto::connectUnix(socketPath_, error);
    if (fd < 0) return false;
    auto stream = std::make_unique<ServerStream>(fd);
    arbproto::Attach attach;
    attach.sessionId = sessionId;
    attach.tid = carrier->tid;
    attach.claimedCore = claimedCore;
    ServerMessage reply;
    if (!arbproto::sendMessage(fd, attach, error) ||
        !readReply(stream.get(), &reply, error, nullptr) ||
        !std::holds_alternative<arbproto::AttachReply>(reply)) {
        close(fd);
        return false;
    }
    closeFd(&carrier->fd);
    carrier->fd = fd;
    carrier->stream = std::move(stream);
    carrier->epoch = epoch;
    if (claimedCore >= 0) carrier->generation = std::get<arbproto::AttachReply>(reply).generation;
    return true;
}

// Carriers are keyed by kernel tid, not thread_local: under the runtime, TLS follows user threads.
// Caller holds mu_.
CoreArbiterClient::Carrier* CoreArbiterClient::carrierForThisThread() {
    int tid = currentTid();
    auto& slot = carriers_[tid];
    if (!slot) {
        slot = std::make_unique<Carrier>();
        slot->tid = tid;
    }
    return slot.get();
}

// Waits until a session newer than `failedEpoch` is up, or shutdown, or 100 ms passed (then the
// caller simply retries: the failure may have concerned only its own connection).
void CoreArbiterClient::waitForNewSession(std::unique_lock<std::mutex>& lock,
                                          uint64_t failedEpoch) {
    sessionChanged_.wait_for(lock, std::chrono::milliseconds(100), [&] {
        return stopping_.load() || (connected_.load() && sessionEpoch_ != failedEpoch);
    });
}

// Attaches the calling thread on first use (or after a restart), sends BLOCK and waits on its own
// socket without holding mu_, so the arbiter's grant wakes exactly this thread.
int CoreArbiterClient::blockUntilCoreAvailable() {
    std::unique_lock lock(mu_);
    Carrier* c = carrierForThisThread();
    carriersInside_++;
    c->blocked = true;
    int result = -1;
    while (!stopping_.load()) {
        uint64_t epoch = sessionEpoch_;
        uint64_t sessionId = sessionId_;
        if (!connected_.load()) {
            waitForNewSession(lock, epoch);
            continue;
        }
        if (c->fd < 0 || c->epoch != epoch) {
            std::string why;
            lock.unlock();
            Carrier fresh;
            fresh.tid = c->tid;
            bool ok = attachCarrier(&fresh, -1, sessionId, epoch, &why);
            lock.lock();
            if (!ok || sessionEpoch_ != epoch) {
                closeFd(&fresh.fd);
                waitForNewSession(lock, epoch);
                continue;
            }
            closeFd(&c->fd);
            c->fd = fresh.fd;
            c->stream = std::move(fresh.stream);
            c->epoch = epoch;
            if (stopping_.load()) break;  // shutdown() may have missed this new descriptor
        }
        int fd = c->fd;
        ServerStream* stream = c->stream.get();
        lock.unlock();
        std::string why;
        ServerMessage reply;
        bool ok = arbproto::sendMessage(fd, arbproto::Block{}, &why) &&
                  readReply(stream, &reply, &why, nullptr) &&
                  std::holds_alternative<arbproto::Granted>(reply);
        lock.lock();
        if (ok) {
            const auto& g = std::get<arbproto::Granted>(reply);
            c->core = g.core;
            c->generation = g.generation;
            byCore_[g.core] = c;
            result = g.core;
            break;
        }
        closeFd(&c->fd);
        c->stream.reset();
        if (!stopping_.load()) waitForNewSession(lock, epoch);
    }
    c->blocked = false;
    carriersInside_--;
    carriersLeft_.notify_all();
    return result;
}

namespace {

constexpr uint64_t kFallbackWaitNs = 5'000'000;  // bounds a page swap's delay without futex_waitv

// System calls issued directly: inside the preload library, libc's syscall() is interposed and
// emulates futexes in the process's own table, where the arbiter's wake-up (a kernel FUTEX_WAKE
// from another process) would never arrive. Only from kernel threads that do not trap raw system
// calls: the runtime's release watcher and this client's monitor thread.
long directSyscall(long nr, long a, long b, long c, long d, long e) {
    long ret;
    register long r10 asm("r10") = d;
    register long r8 asm("r8") = e;
    asm volatile("syscall"
                 : "=a"(ret)
                 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                 : "rcx", "r11", "memory");
    return ret;
}

// A shared (not private) futex wait on the page, with a relative time-out: the fallback.
void futexWaitShared(const std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeoutNs) {
    const timespec ts{time_t(timeoutNs / 1'000'000'000), long(timeoutNs % 1'000'000'000)};
    directSyscall(SYS_futex, reinterpret_cast<long>(word), FUTEX_WAIT, expected,
                  reinterpret_cast<long>(&ts), 0);
}

// futex_waitv (Linux 5.16+) on up to three words, each with its own sharing; until an absolute
// CLOCK_MONOTONIC deadline, or none. Returns the index woken, or -errno (ENOSYS on older kernels).
long futexWaitv(futex_waitv* waiters, unsigned count, uint64_t timeoutNs) {
    timespec deadline;
    timespec* at = nullptr;
    if (timeoutNs != CoreProvider::kNoTimeout) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        const uint64_t ns = uint64_t(deadline.tv_nsec) + timeoutNs % 1'000'000'000;
        deadline.tv_sec += time_t(timeoutNs / 1'000'000'000 + ns / 1'000'000'000);
        deadline.tv_nsec = long(ns % 1'000'000'000);
        at = &deadline;
    }
    return directSyscall(SYS_futex_waitv, reinterpret_cast<long>(waiters), count, 0,
                         reinterpret_cast<long>(at), CLOCK_MONOTONIC);
}

futex_waitv waiterOn(const std::atomic<uint32_t>& word, uint32_t expected, bool shared) {
    futex_waitv w{};
    w.val = expected;
    w.uaddr = reinterpret_cast<uintptr_t>(&word);
    w.flags = FUTEX_32 | (shared ? 0 : FUTEX_PRIVATE_FLAG);
    return w;
}

std::atomic<bool> gNoFutexWaitv{false};  // set once futex_waitv failed (see its caller)

}  // namespace

// pageSwaps_ is read before releaseSeq: a swap after that read changes pageSwaps_ before its wake,
// so futex_waitv either finds it changed or is woken; a swap before it means releaseSeq was read
// from the new page already.
bool CoreArbiterClient::waitForReleaseRequests(uint32_t* seen,
                                               const std::atomic<uint32_t>& interrupt,
                                               uint32_t interruptSeen, uint64_t timeoutNs) {
    const uint32_t swaps = pageSwaps_.load(std::memory_order_acquire);
    const uint32_t before = page_->releaseSeq.load(std::memory_order_acquire);
    if (before == *seen && interrupt.load(std::memory_order_acquire) == interruptSeen) {
        long woken = -ENOSYS;
        if (!gNoFutexWaitv.load(std::memory_order_relaxed)) {
            futex_waitv waiters[3] = {waiterOn(page_->releaseSeq, before, true),
                                      waiterOn(interrupt, interruptSeen, false),
                                      waiterOn(pageSwaps_, swaps, false)};
            woken = futexWaitv(waiters, 3, timeoutNs);
            // Woken (an index), a word already changed, timed out or a signal: done. Anything else
            // (ENOSYS on Linux < 5.16, or an error this kernel gives for these words) would return
            // at once every time: the fallback from now on.
            if (woken < 0 && woken != -EAGAIN && woken != -ETIMEDOUT && woken != -EINTR) {
                gNoFutexWaitv.store(true, std::memory_order_relaxed);
                woken = -ENOSYS;
            }
        }
        if (woken == -ENOSYS)
            futexWaitShared(&page_->releaseSeq, before, std::min(timeoutNs, kFallbackWaitNs));
    }
    const uint32_t now = page_->releaseSeq.load(std::memory_order_acquire);
    if (now == *seen) return false;
    *seen = now;
    return true;
}

// Called by the thread that remapped page_, after the remap.
void CoreArbiterClient::pageSwapped() {
    pageSwaps_.fetch_add(1, std::memory_order_release);
    directSyscall(SYS_futex, reinterpret_cast<long>(&pageSwaps_), FUTEX_WAKE_PRIVATE, 1, 0, 0);
}

// Forgets the core locally first, then acknowledges with the grant's generation (a stale one is
// ignored by the arbiter). While the arbiter is away there is nobody to tell.
void CoreArbiterClient::releaseCore(int coreId) {
    std::lock_guard lock(mu_);
    auto it = byCore_.find(coreId);
    if (it == byCore_.end()) return;
    Carrier* c = it->second;
    byCore_.erase(it);
    c->core = -1;
    if (c->fd >= 0 && connected_.load() && c->epoch == sessionEpoch_) {
        std::string ignored;  // a lost arbiter is noticed (and handled) by the monitor
        arbproto::ReleaseDone done;
        done.core = coreId;
        done.generation = c->generation;
        arbproto::sendMessage(c->fd, done, &ignored);
    }
}

// Caches the request (resent after a reconnect) and exchanges it synchronously, so errors surface
// here. ctlMu_ keeps one exchange at a time on the control socket.
bool CoreArbiterClient::setRequestedCores(const std::array<uint32_t, kPriorityLevels>& perPriority,
                                          uint32_t minCores, uint32_t maxCores,
                                          std::string* error) {
    if (minCores > maxCores) {
        if (error) *error = "minCores > maxCores";
        return false;
    }
    std::lock_guard ctl(ctlMu_);
    {
        std::lock_guard lock(mu_);
        haveRequest_ = true;
        lastPerPriority_ = perPriority;
        lastMin_ = minCores;
        lastMax_ = maxCores;
        if (!connected_.load()) {
            if (error) *error = "core arbiter unavailable; the request is sent when it is back";
            return false;
        }
    }
    return exchangeRequest(error);
}

// Sends the cached request on the control socket and waits for the acknowledgement. Caller holds
// ctlMu_ (or is openSession, before the session is published).
bool CoreArbiterClient::exchangeRequest(std::string* error) {
    arbproto::SetRequest request;
    int fd;
    ServerStream* stream;
    {
        std::lock_guard lock(mu_);
        request.perPriority = lastPerPriority_;
        request.minCores = lastMin_;
        request.maxCores = lastMax_;
        fd = controlFd_;
        stream = controlStream_.get();
    }
    if (fd < 0) {
        if (error) *error = "core arbiter unavailable";
        return false;
    }
    ServerMessage reply;
    if (!arbproto::sendMessage(fd, request, error) || !readReply(stream, &reply, error, nullptr))
        return false;
    if (!std::holds_alternative<arbproto::RequestAck>(reply)) {
        if (error) *error = "unexpected reply to a core request";
        return false;
    }
    return true;
}

// Watches the control socket for hang-up only (POLLRDHUP, not POLLIN: replies are read by the
// callers of setRequestedCores) and drives reconnection.
void CoreArbiterClient::monitorLoop() {
    while (!stopping_.load()) {
        int fd;
        {
            std::lock_guard lock(mu_);
            fd = controlFd_;
        }
        pollfd fds[2] = {{fd, POLLRDHUP, 0}, {stopFd_, POLLIN, 0}};
        int n = poll(fds, 2, -1);
        if (n < 0 && errno == EINTR) continue;
        if (stopping_.load() || fds[1].revents) break;
        if (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
            sessionLost();
            reconnectLoop();
        }
    }
    std::lock_guard lock(mu_);
    monitorRunning_ = false;
    monitorExited_.notify_all();
}

// The arbiter went away: carriers keep their cores (the page is replaced by a zero page, so no
// release is requested) and the carriers' connections of the dead session are dropped.
void CoreArbiterClient::sessionLost() {
    std::lock_guard ctl(ctlMu_);
    std::lock_guard lock(mu_);
    connected_.store(false, std::memory_order_release);
    mmap(page_, arbproto::kSharedPageSize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
         0);
    pageSwapped();
    closeFd(&controlFd_);
    controlStream_.reset();
    for (auto& [tid, c] : carriers_)
        if (!c->blocked) closeFd(&c->fd);
    sessionChanged_.notify_all();
}

// Retries with exponential back-off until a new session is up or the client shuts down.
void CoreArbiterClient::reconnectLoop() {
    int delay = options_.reconnectMinMs;
    bool told = false;
    while (!stopping_.load()) {
        pollfd stop = {stopFd_, POLLIN, 0};
        if (poll(&stop, 1, delay) > 0) return;
        std::string why;
        {
            std::lock_guard ctl(ctlMu_);
            if (openSession(true, &why)) {
                reconnections_.fetch_add(1, std::memory_order_relaxed);
                return;
            }
        }
        if (!told) told = reportLockedOut(why);
        delay = std::min(delay * 2, options_.reconnectMaxMs);
    }
}

// A process that dropped privileges after it connected (a daemon started as root, setpriv, su)
// may no longer open the arbiter's socket (mode 0660, owner and --socket-group only): the
// arbiter's SO_PEERCRED check cannot follow a uid change, and the old connections died with the
// old arbiter. Retrying goes on (the socket's group or mode may be fixed meanwhile), but the
// process is told once, on stderr, since its cores are no longer reserved for it meanwhile.
// Returns whether it said so (only for a refusal by permission).
bool CoreArbiterClient::reportLockedOut(const std::string& why) const {
    if (why.find(strerror(EACCES)) == std::string::npos &&
        why.find(strerror(EPERM)) == std::string::npos)
        return false;
    dprintf(STDERR_FILENO,
            "arbrun: cannot reconnect to the restarted core arbiter as uid %u (the process "
            "connected as uid %u): %s; its cores are not reserved for it until it can (allow the "
            "user with core-arbiter --socket-group)\n",
            unsigned(geteuid()), unsigned(firstUid_), why.c_str());
    return true;
}

}  // namespace arbclient
