// The user-thread runtime on a real arbiter client: what only the pair exercises. The runtime's
// release watcher sleeps in the client's futex_waitv with no time-out, so stop() must wake it
// through the watcher's interrupt word; a lost wake-up hangs stop() (the test's time-out).
#include <arbrt/arbrt.h>
#include <gtest/gtest.h>

#include <atomic>

#include "arbclient/client.h"
#include "test_support.h"

namespace {

using arbclient::CoreArbiterClient;

// Starts the runtime on a fresh client, waits for its core to be granted and for a thread to run
// on it, then shuts the client down and stops the runtime, many times: each stop races the watcher
// going back to sleep after the grant.
TEST(RuntimeOnClient, Stop_EndsTheReleaseWatchersUntimedWait) {
    arbtest::TempDir dir;
    ASSERT_FALSE(dir.path().empty());
    const std::string socket = dir / "arbiter.sock";
    arbtest::ArbiterProcess arbiter(
        socket, {"--backend", "fake", "--cgroup-root", dir / "cg", "--cpus", "0-2", "--reserve",
                 "1", "--log-level", "warn"});
    ASSERT_TRUE(arbiter.ready());
    for (int round = 0; round < 20; ++round) {
        std::string error;
        auto client = CoreArbiterClient::connect(socket, &error);
        ASSERT_TRUE(client) << error;
        arbrt::RuntimeOptions options;
        options.numCores = 2;
        options.coreProvider = client.get();
        options.priority = 5;
        options.minCores = 1;
        ASSERT_FALSE(arbrt::start(options).has_value());
        std::atomic<bool> ran{false};
        arbrt::ThreadId t = arbrt::createThread([&] { ran.store(true); });
        EXPECT_EQ(arbrt::join(t), 0);  // returns once a granted core ran it
        EXPECT_TRUE(ran.load());
        client->shutdown();
        EXPECT_TRUE(arbrt::stop()) << "round " << round;
    }
}

}  // namespace
