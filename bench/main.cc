// arbrt-bench's main: starts the arbrt runtime (2 cores by default, whatever the host has), runs
// the Google Benchmark benchmarks, then stops the runtime.
//
// Own flags (removed before Google Benchmark parses the rest):
//   --arbrt_cores=N          cores (carriers) to start; default 2. Cross-core benchmarks need 2.
//   --arbrt_idle_spin_ns=N   how long an idle carrier polls before sleeping; default: the
//   runtime's.
//   --arbrt_pooled_contexts=N  contexts (stack + TCB) pooled per core; default: the runtime's.
#include <arbrt/arbrt.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

constexpr int kDefaultCores = 2;

// Parses "--name=value" into *value; returns true when `arg` is that flag.
bool parseFlag(const char* arg, const char* name, uint64_t* value) {
    const size_t n = std::strlen(name);
    if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
    *value = std::strtoull(arg + n + 1, nullptr, 10);
    return true;
}

// Removes this program's own flags from argv (Google Benchmark rejects flags it does not know)
// and applies them to `options`.
void takeOwnFlags(int* argc, char** argv, arbrt::RuntimeOptions* options) {
    int out = 1;
    for (int i = 1; i < *argc; ++i) {
        uint64_t value = 0;
        if (parseFlag(argv[i], "--arbrt_cores", &value)) {
            options->numCores = int(value);
        } else if (parseFlag(argv[i], "--arbrt_idle_spin_ns", &value)) {
            options->idleSpinNs = value;
        } else if (parseFlag(argv[i], "--arbrt_pooled_contexts", &value)) {
            options->pooledContextsPerCore = size_t(value);
        } else {
            argv[out++] = argv[i];
        }
    }
    *argc = out;
    argv[out] = nullptr;
}

// Detached children (BM_CreateCrossCore) may still be exiting when the last benchmark returns;
// stop() refuses while user threads live, so wait for them a bounded time.
bool stopRuntime() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arbrt::stats().liveThreads != 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return arbrt::stop();
}

}  // namespace

int main(int argc, char** argv) {
    arbrt::RuntimeOptions options;
    options.numCores = kDefaultCores;
    takeOwnFlags(&argc, argv, &options);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    if (auto err = arbrt::start(options)) {
        std::fprintf(stderr, "arbrt-bench: cannot start the runtime: %s\n", err->message.c_str());
        return 1;
    }
    benchmark::AddCustomContext("arbrt_cores", std::to_string(arbrt::numCores()));
    benchmark::AddCustomContext("arbrt_idle_spin_ns", std::to_string(options.idleSpinNs));
    benchmark::AddCustomContext("arbrt_pooled_contexts",
                                std::to_string(options.pooledContextsPerCore));
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    const arbrt::RuntimeStats s = arbrt::stats();
    if (!stopRuntime()) {
        std::fprintf(stderr, "arbrt-bench: runtime did not stop (%llu user threads still live)\n",
                     (unsigned long long)arbrt::stats().liveThreads);
        return 1;
    }
    std::fprintf(stderr,
                 "arbrt-bench: %llu user threads created, %llu context switches, %llu steals\n",
                 (unsigned long long)s.threadsCreated, (unsigned long long)s.contextSwitches,
                 (unsigned long long)s.steals);
    return 0;
}
