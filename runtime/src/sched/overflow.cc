#include "sched/overflow.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "sched/context.h"

namespace arbrt::detail {
namespace {

struct sigaction gPrevious;
std::atomic<bool> gInstalled{false};

// Large frames can skip past one page: treat faults up to 64 KiB below the stack as overflows too.
constexpr uintptr_t kOverflowSlack = 64 * 1024;

bool isOverflow(const ThreadContext* t, const void* addr) {
    if (!t || !t->stack.low) return false;
    const auto a = reinterpret_cast<uintptr_t>(addr);
    const auto low = reinterpret_cast<uintptr_t>(t->stack.low);
    return a + kOverflowSlack >= low && a < low + t->stack.guard;
}

// Async-signal-safe decimal formatting.
char* formatUnsigned(char* end, uint64_t v) {
    do {
        *--end = char('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

void writeAll(const char* s, size_t n) {
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0) return;
        s += w, n -= size_t(w);
    }
}

void reportOverflow(const ThreadContext* t) {
    char digits[24];
    char* num = formatUnsigned(digits + sizeof digits, t->stack.usable());
    const char head[] = "arbrt: stack overflow in a user thread (stack of ";
    const char tail[] =
        " bytes); give the thread a larger stack (pthread_attr_setstacksize, "
        "ThreadAttributes::stackSize or RuntimeOptions::defaultStackSize)\n";
    writeAll(head, sizeof head - 1);
    writeAll(num, size_t(digits + sizeof digits - num));
    writeAll(tail, sizeof tail - 1);
}

void onSegv(int sig, siginfo_t* info, void* ucontext) {
    ThreadContext* t;
    asm volatile("mov %%fs:128, %0" : "=r"(t));  // kUserThreadSlot
    if (isOverflow(t, info->si_addr)) {
        reportOverflow(t);
        ::signal(SIGSEGV, SIG_DFL);  // returning re-executes the fault, which now ends the process
        return;
    }
    if ((gPrevious.sa_flags & SA_SIGINFO) && gPrevious.sa_sigaction) {
        gPrevious.sa_sigaction(sig, info, ucontext);
    } else if (gPrevious.sa_handler != SIG_DFL && gPrevious.sa_handler != SIG_IGN) {
        gPrevious.sa_handler(sig);
    } else {
        ::signal(SIGSEGV, SIG_DFL);
    }
}

}  // namespace

void installOverflowHandler() {
    if (gInstalled.exchange(true)) return;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = onSegv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &gPrevious);
}

AltStack::AltStack() {
    size_ = 64 * 1024;
    memory_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory_ == MAP_FAILED) {
        memory_ = nullptr;
        return;
    }
    stack_t ss{};
    ss.ss_sp = memory_;
    ss.ss_size = size_;
    sigaltstack(&ss, nullptr);
}

AltStack::~AltStack() {
    if (!memory_) return;
    stack_t ss{};
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, nullptr);
    munmap(memory_, size_);
}

}  // namespace arbrt::detail
