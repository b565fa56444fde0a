// N threads that compute until the process is killed (at most 10 minutes): a program whose core
// estimate stays at its maximum, for the cgroup tests' arbrun clients. Usage: spin_threads N
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

std::atomic<unsigned long> sink{0};

// Pure computation, no calls: the runtime sees a busy core (and preempts it when others wait).
void spin() {
    for (;;) sink.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    alarm(600);  // a safety net only: the tests kill it
    std::vector<std::thread> threads;
    for (int i = 1; i < n; i++) threads.emplace_back(spin);
    spin();
}
