// embed::interruptCarrierOf: one real-time signal in flight per carrier. A sender that finds one
// untaken sends nothing (the handler to come reads what it published); a carrier that could not
// take them for a while (descheduled on a loaded host, or here: the signal blocked) used to get
// one queued per send, delivered nested (SA_NODEFER) until its stack overflowed.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "arbrt/embed/threads.h"
#include "test_util.h"

namespace {

using arbrt_test::eventually;

class InterruptOneCore : public arbrt_test::RuntimeTest<1> {};

std::atomic<int> gTaken{0};

void onInterrupt(int, siginfo_t*, void*) {
    arbrt::embed::interruptTaken();
    gTaken.fetch_add(1);
}

// Blocks or unblocks `sig` on the calling kernel thread (the carrier), bypassing the runtime.
void maskOnCarrier(int how, int sig) {
    const uint64_t set = uint64_t{1} << (sig - 1);
    syscall(SYS_rt_sigprocmask, how, &set, nullptr, sizeof set);
}

TEST_F(InterruptOneCore, InterruptCarrierOf_OneSignalInFlightWhileUntaken) {
    const int sig = SIGRTMIN + 3;
    struct sigaction sa {};
    sa.sa_sigaction = onInterrupt;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    struct sigaction old {};
    ASSERT_EQ(sigaction(sig, &sa, &old), 0);
    gTaken = 0;
    constexpr int kSends = 1000;
    std::atomic<int> phase{0};  // 1: target blocks the signal; 2: sent; 3: taken, send again
    int takenAfterBurst = -1;
    const arbrt::ThreadId target = arbrt::createThread([&] {
        maskOnCarrier(SIG_BLOCK, sig);
        phase = 1;
        while (phase.load() != 2) {
        }
        maskOnCarrier(SIG_UNBLOCK, sig);  // every queued signal is delivered here
        takenAfterBurst = gTaken.load();
        phase = 3;
        while (gTaken.load() == takenAfterBurst) {
        }
    });
    ASSERT_TRUE(eventually([&] { return phase.load() == 1; }));
    for (int i = 0; i < kSends; ++i) EXPECT_TRUE(arbrt::embed::interruptCarrierOf(target, sig));
    phase = 2;
    ASSERT_TRUE(eventually([&] { return phase.load() == 3; }));
    // One, or a few where the burst outlasted the resend interval on a loaded host; not 1,000.
    EXPECT_GE(takenAfterBurst, 1);
    EXPECT_LE(takenAfterBurst, 5);
    // Taken: the next interruption is sent at once.
    EXPECT_TRUE(arbrt::embed::interruptCarrierOf(target, sig));
    EXPECT_EQ(arbrt::join(target), 0);
    EXPECT_FALSE(arbrt::embed::interruptCarrierOf(target, sig)) << "a finished thread runs nowhere";
    sigaction(sig, &old, nullptr);
}

}  // namespace
