// arbrt-demo: what the runtime does, shown on a small workload (the README's main-job command runs
// it until the arbrun launcher can run an unmodified program).
#include <arbrt/arbrt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

thread_local int tlsCounter = 0;  // one per user thread, like with kernel threads

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 10,000 user threads each bump their own thread_local and a shared counter under a Mutex.
void manyThreads() {
    constexpr int kThreads = 10'000;
    arbrt::Mutex mutex;
    long total = 0;
    bool tlsOk = true;
    std::vector<arbrt::ThreadId> ids;
    ids.reserve(kThreads);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kThreads; ++i) {
        ids.push_back(arbrt::createThread([&, i] {
            for (int k = 0; k < 10; ++k) {
                ++tlsCounter;
                arbrt::yield();
            }
            mutex.lock();
            total += i;
            tlsOk = tlsOk && tlsCounter == 10;
            mutex.unlock();
        }));
    }
    for (auto id : ids) arbrt::join(id);
    std::printf(
        "  10,000 user threads (10 yields each): %.1f ms, sum %s, thread_local per thread %s\n",
        secondsSince(t0) * 1e3, total == long(kThreads) * (kThreads - 1) / 2 ? "ok" : "WRONG",
        tlsOk ? "ok" : "WRONG");
}

// Spawn-and-join latency: user threads against kernel threads (std::thread) in the same process.
void spawnJoin() {
    constexpr int kRounds = 20'000;
    double userNs = 0;
    arbrt::ThreadId driver = arbrt::createThread([&] {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kRounds; ++i) {
            arbrt::join(arbrt::createThreadOn(arbrt::currentCore(), [] {}));
        }
        userNs = secondsSince(t0) * 1e9 / kRounds;
    });
    arbrt::join(driver);
    const int kernelRounds = 2'000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kernelRounds; ++i) std::thread([] {}).join();
    const double kernelNs = secondsSince(t0) * 1e9 / kernelRounds;
    std::printf("  spawn+join: user thread %.0f ns, std::thread %.0f ns (%.0fx)\n", userNs,
                kernelNs, kernelNs / userNs);
}

}  // namespace

int main(int argc, char** argv) {
    arbrt::RuntimeOptions options;
    if (argc > 1) options.numCores = std::atoi(argv[1]);
    if (auto err = arbrt::start(options)) {
        std::fprintf(stderr, "arbrt-demo: %s\n", err->message.c_str());
        return 1;
    }
    std::printf("arbrt runtime: %d cores (carriers)\n", arbrt::numCores());
    manyThreads();
    spawnJoin();
    const arbrt::RuntimeStats s = arbrt::stats();
    std::printf("  threads created %llu, peak live %llu, context switches %llu, steals %llu\n",
                (unsigned long long)s.threadsCreated, (unsigned long long)s.peakLiveThreads,
                (unsigned long long)s.contextSwitches, (unsigned long long)s.steals);
    for (int c = 0; c < arbrt::numCores(); ++c) {
        std::printf("  core %d busy %.1f ms\n", c, arbrt::coreBusyNs(c) / 1e6);
    }
    arbrt::stop();
    return 0;
}
