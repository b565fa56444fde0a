#include "release_page.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

namespace arbd {

std::unique_ptr<ReleasePage> ReleasePage::create(Sys& sys, uint64_t epoch, int* fdToSend,
                                                 std::string* error) {
    int fd = -1;
    if (int e = sys.createSharedMemory(arbproto::kSharedPageSize, &fd)) {
        if (error) *error = std::string("memfd_create: ") + strerror(e);
        return nullptr;
    }
    void* mem = mmap(nullptr, arbproto::kSharedPageSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        if (error) *error = std::string("mmap release page: ") + strerror(errno);
        close(fd);
        return nullptr;
    }
    auto* page = new (mem) arbproto::SharedPage{};
    page->magic = arbproto::kPageMagic;
    page->version = arbproto::kPageVersion;
    page->maxCoreIds = arbproto::kMaxCoreIds;
    page->epoch = epoch;
    // F_SEAL_FUTURE_WRITE forbids new writable mappings (ours predates it). Without it (kernels
    // before 5.1) hand out a read-only reopen of the memfd instead.
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) !=
        0) {
        std::string self = "/proc/self/fd/" + std::to_string(fd);
        int ro = open(self.c_str(), O_RDONLY | O_CLOEXEC);
        close(fd);
        if (ro < 0) {
            if (error)
                *error = std::string("cannot make release page read-only: ") + strerror(errno);
            munmap(mem, arbproto::kSharedPageSize);
            return nullptr;
        }
        fd = ro;
    }
    *fdToSend = fd;
    return std::unique_ptr<ReleasePage>(new ReleasePage(page));
}

void ReleasePage::set(int core, bool on) {
    page_->release[core].store(on ? 1 : 0, std::memory_order_relaxed);
    if (!on) return;
    page_->releaseSeq.fetch_add(1, std::memory_order_release);
    // Shared futex (the memfd is mapped by the client too): no FUTEX_PRIVATE_FLAG. Cannot fail in
    // a way that matters (no waiter is fine), so no error path.
    const long woken =
        syscall(SYS_futex, &page_->releaseSeq, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
    // A release watcher woken on this CPU (on a small host the unmanaged set may be one CPU) would
    // otherwise wait for the rest of the arbiter's batch (~20 us on a 2-vCPU VM) before it can
    // signal the carrier: let it go first. Elsewhere it runs anyway and the yield returns at once.
    if (woken > 0) sched_yield();
}

ReleasePage::~ReleasePage() {
    munmap(page_, arbproto::kSharedPageSize);
}

}  // namespace arbd
