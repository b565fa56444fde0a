// pthread-prims: the cost of pthread primitives as an ordinary program sees them. It is linked to
// nothing of arbrun's (plain -pthread), so the same binary is measured natively and under
// `arbrun -- pthread-prims` (compare.sh runs both and prints the ratios).
//
//   pthread-prims [--only NAME[,NAME...]] [--iterations N | --seconds S] [--json] [--list]
//
// Each benchmark runs a fixed number of operations (--iterations N), or (default) doubles its
// count until one run takes at least S seconds (--seconds, default 0.2). Output: one line per
// benchmark, "name value unit" (ns/op: lower is better; ops/s: higher is better), or one JSON
// object with --json.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

uint64_t nowNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// Ends the program on a failed pthread call: a benchmark that measured a failure is worthless.
void check(int err, const char* what) {
    if (err == 0) return;
    std::fprintf(stderr, "pthread-prims: %s failed: %s\n", what, std::strerror(err));
    std::exit(1);
}

void* returnArg(void* arg) {
    return arg;
}

// spawn_join: create one thread, join it, repeat (one thread alive at a time).
uint64_t spawnJoin(uint64_t iterations) {
    const uint64_t start = nowNs();
    for (uint64_t i = 0; i < iterations; ++i) {
        pthread_t thread;
        check(pthread_create(&thread, nullptr, returnArg, nullptr), "pthread_create");
        check(pthread_join(thread, nullptr), "pthread_join");
    }
    return nowNs() - start;
}

// condvar_pingpong: the turn passes between two threads through one mutex and two condvars;
// each iteration is two one-way handoffs, the time reported is per handoff.
struct PingPong {
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t toPong = PTHREAD_COND_INITIALIZER, toPing = PTHREAD_COND_INITIALIZER;
    int turn = 0;  // 0: ping's, 1: pong's; guarded by mutex
    uint64_t rounds = 0;
};

void* pongThread(void* raw) {
    auto* p = static_cast<PingPong*>(raw);
    pthread_mutex_lock(&p->mutex);
    for (uint64_t i = 0; i < p->rounds; ++i) {
        while (p->turn != 1) pthread_cond_wait(&p->toPong, &p->mutex);
        p->turn = 0;
        pthread_cond_signal(&p->toPing);
    }
    pthread_mutex_unlock(&p->mutex);
    return nullptr;
}

uint64_t condvarPingPong(uint64_t iterations) {
    PingPong p;
    p.rounds = (iterations + 1) / 2;
    pthread_t pong;
    check(pthread_create(&pong, nullptr, pongThread, &p), "pthread_create");
    const uint64_t start = nowNs();
    pthread_mutex_lock(&p.mutex);
    for (uint64_t i = 0; i < p.rounds; ++i) {
        p.turn = 1;
        pthread_cond_signal(&p.toPong);
        while (p.turn != 0) pthread_cond_wait(&p.toPing, &p.mutex);
    }
    pthread_mutex_unlock(&p.mutex);
    const uint64_t elapsed = nowNs() - start;
    check(pthread_join(pong, nullptr), "pthread_join");
    return elapsed * iterations / (2 * p.rounds);  // per handoff, scaled to `iterations`
}

// mutex_uncontended: lock/unlock pairs by one thread.
uint64_t mutexUncontended(uint64_t iterations) {
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    const uint64_t start = nowNs();
    for (uint64_t i = 0; i < iterations; ++i) {
        pthread_mutex_lock(&mutex);
        pthread_mutex_unlock(&mutex);
    }
    return nowNs() - start;
}

// mutex_contended_4t: four threads each do iterations/4 lock/unlock pairs around a small critical
// section (a few shared counters); reported as total pairs per second.
constexpr int kContenders = 4;
struct Contended {
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    uint64_t perThread = 0;
    uint64_t counters[4] = {};  // guarded by mutex
};

void* contender(void* raw) {
    auto* c = static_cast<Contended*>(raw);
    for (uint64_t i = 0; i < c->perThread; ++i) {
        pthread_mutex_lock(&c->mutex);
        for (uint64_t& counter : c->counters) counter += i;
        pthread_mutex_unlock(&c->mutex);
    }
    return nullptr;
}

uint64_t mutexContended(uint64_t iterations) {
    Contended c;
    c.perThread = (iterations + kContenders - 1) / kContenders;
    pthread_t threads[kContenders];
    const uint64_t start = nowNs();
    for (pthread_t& t : threads) check(pthread_create(&t, nullptr, contender, &c), "create");
    for (pthread_t& t : threads) check(pthread_join(t, nullptr), "pthread_join");
    const uint64_t elapsed = nowNs() - start;
    return elapsed * iterations / (c.perThread * kContenders);
}

// sched_yield: one thread yielding (nothing else runnable in the program).
uint64_t schedYield(uint64_t iterations) {
    const uint64_t start = nowNs();
    for (uint64_t i = 0; i < iterations; ++i) sched_yield();
    return nowNs() - start;
}

// detached_create: detached threads that each bump a counter; the last of a batch signals the
// creator through a condvar. Batches of at most 256 keep the number alive bounded natively.
struct Detached {
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t done = PTHREAD_COND_INITIALIZER;
    uint64_t finished = 0;  // guarded by mutex
};

void* detachedBody(void* raw) {
    auto* d = static_cast<Detached*>(raw);
    pthread_mutex_lock(&d->mutex);
    ++d->finished;
    pthread_cond_signal(&d->done);
    pthread_mutex_unlock(&d->mutex);
    return nullptr;
}

uint64_t detachedCreate(uint64_t iterations) {
    constexpr uint64_t kBatch = 256;
    Detached d;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    const uint64_t start = nowNs();
    for (uint64_t created = 0; created < iterations;) {
        const uint64_t batchEnd = created + kBatch < iterations ? created + kBatch : iterations;
        for (; created < batchEnd; ++created) {
            pthread_t thread;
            check(pthread_create(&thread, &attr, detachedBody, &d), "pthread_create");
        }
        pthread_mutex_lock(&d.mutex);
        while (d.finished < created) pthread_cond_wait(&d.done, &d.mutex);
        pthread_mutex_unlock(&d.mutex);
    }
    const uint64_t elapsed = nowNs() - start;
    pthread_attr_destroy(&attr);
    return elapsed;
}

enum class Unit { nsPerOp, opsPerSecond };

struct Benchmark {
    const char* name;
    uint64_t (*run)(uint64_t iterations);  // returns the elapsed ns for `iterations` operations
    Unit unit;
    const char* what;
};

const Benchmark kBenchmarks[] = {
    {"spawn_join", spawnJoin, Unit::nsPerOp, "pthread_create + pthread_join, one thread at a time"},
    {"condvar_pingpong", condvarPingPong, Unit::nsPerOp, "one-way condvar handoff, 2 threads"},
    {"mutex_uncontended", mutexUncontended, Unit::nsPerOp, "lock + unlock, one thread"},
    {"mutex_contended_4t", mutexContended, Unit::opsPerSecond,
     "lock + unlock pairs per second, 4 threads, small critical section"},
    {"sched_yield", schedYield, Unit::nsPerOp, "sched_yield, one thread"},
    {"detached_create", detachedCreate, Unit::opsPerSecond,
     "detached threads created and finished per second"},
};

struct Options {
    std::vector<std::string> only;  // empty: all
    uint64_t iterations = 0;        // 0: calibrate to `seconds`
    double seconds = 0.2;
    bool json = false;
};

[[noreturn]] void usage(const char* error) {
    std::fprintf(stderr,
                 "pthread-prims: %s\nusage: pthread-prims [--only NAME[,NAME...]] "
                 "[--iterations N | --seconds S] [--json] [--list]\n",
                 error);
    std::exit(2);
}

bool selected(const Options& options, const char* name) {
    if (options.only.empty()) return true;
    for (const std::string& only : options.only)
        if (only == name) return true;
    return false;
}

bool known(const std::string& name) {
    for (const Benchmark& b : kBenchmarks)
        if (name == b.name) return true;
    return false;
}

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage((arg + " needs a value").c_str());
            return argv[++i];
        };
        if (arg == "--only") {
            std::string list = value();
            for (size_t pos = 0; pos <= list.size();) {
                const size_t comma = list.find(',', pos);
                const std::string name =
                    list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
                if (!known(name)) usage(("unknown benchmark '" + name + "' (see --list)").c_str());
                options.only.push_back(name);
                if (comma == std::string::npos) break;
                pos = comma + 1;
            }
        } else if (arg == "--iterations") {
            const std::string text = value();
            char* end = nullptr;
            options.iterations = std::strtoull(text.c_str(), &end, 10);
            if (!*text.c_str() || *end || options.iterations == 0)
                usage("--iterations needs a positive integer");
        } else if (arg == "--seconds") {
            const std::string text = value();
            char* end = nullptr;
            options.seconds = std::strtod(text.c_str(), &end);
            if (!*text.c_str() || *end || !(options.seconds > 0 && options.seconds <= 600))
                usage("--seconds needs a number of seconds in (0, 600]");
        } else if (arg == "--json") {
            options.json = true;
        } else if (arg == "--list") {
            for (const Benchmark& b : kBenchmarks) std::printf("%-20s %s\n", b.name, b.what);
            std::exit(0);
        } else if (arg == "-h" || arg == "--help") {
            std::printf(
                "usage: pthread-prims [--only NAME[,NAME...]] [--iterations N | --seconds S]"
                " [--json] [--list]\n");
            std::exit(0);
        } else {
            usage(("unknown argument '" + arg + "'").c_str());
        }
    }
    return options;
}

struct Result {
    const Benchmark* benchmark;
    uint64_t iterations;
    uint64_t elapsedNs;

    double value() const {
        const double ns = elapsedNs ? double(elapsedNs) : 1.0;
        return benchmark->unit == Unit::nsPerOp ? ns / double(iterations)
                                                : double(iterations) * 1e9 / ns;
    }
    const char* unit() const { return benchmark->unit == Unit::nsPerOp ? "ns/op" : "ops/s"; }
};

// Fixed count, or doubling from a small count until a run lasts `seconds` (one warm-up run first,
// so that stacks and pools are in place before the measured run).
Result measure(const Benchmark& b, const Options& options) {
    if (options.iterations) {
        b.run(options.iterations < 16 ? options.iterations : 16);
        return {&b, options.iterations, b.run(options.iterations)};
    }
    const uint64_t target = uint64_t(options.seconds * 1e9);
    uint64_t iterations = 16;
    b.run(iterations);
    for (;;) {
        const uint64_t elapsed = b.run(iterations);
        if (elapsed >= target || iterations >= (uint64_t(1) << 40))
            return {&b, iterations, elapsed};
        // Aim a little past the target from the rate seen so far (at most 100x per step).
        const double factor = elapsed ? 1.2 * double(target) / double(elapsed) : 100.0;
        iterations = uint64_t(double(iterations) * (factor < 2 ? 2 : factor > 100 ? 100 : factor));
    }
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    std::vector<Result> results;
    for (const Benchmark& b : kBenchmarks) {
        if (!selected(options, b.name)) continue;
        results.push_back(measure(b, options));
        if (!options.json) {
            const Result& r = results.back();
            std::printf("%s %.6g %s\n", b.name, r.value(), r.unit());
            std::fflush(stdout);
        }
    }
    if (options.json) {
        std::printf("{\"results\": [");
        for (size_t i = 0; i < results.size(); ++i) {
            const Result& r = results[i];
            std::printf(
                "%s\n  {\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", "
                "\"iterations\": %llu, \"elapsed_ns\": %llu}",
                i ? "," : "", r.benchmark->name, r.value(), r.unit(),
                (unsigned long long)r.iterations, (unsigned long long)r.elapsedNs);
        }
        std::printf("\n]}\n");
    }
    return 0;
}
