// A program built against an installed libarbrt (pkg-config arbrt): 100 user threads add to a
// counter under an arbrt::Mutex on 2 carriers. Prints "ok arbrt_api_check" on success.
#include <arbrt/arbrt.h>

#include <cstdio>
#include <vector>

int main() {
    if (arbrt::start({.numCores = 2})) {
        std::fprintf(stderr, "arbrt_api_check: arbrt::start failed\n");
        return 1;
    }
    arbrt::Mutex lock;
    long counter = 0;
    std::vector<arbrt::ThreadId> threads;
    for (int i = 0; i < 100; ++i) {
        threads.push_back(arbrt::createThread([&] {
            for (int k = 0; k < 100; ++k) {
                lock.lock();
                ++counter;
                lock.unlock();
            }
        }));
    }
    for (arbrt::ThreadId t : threads) arbrt::join(t);
    arbrt::stop();
    if (counter != 100 * 100) {
        std::fprintf(stderr, "arbrt_api_check: counter %ld\n", counter);
        return 1;
    }
    std::puts("ok arbrt_api_check");
    return 0;
}
