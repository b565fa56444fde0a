// class_threads_cpp: C++ names for the --class end-to-end test (class_rules_e2e.sh cpp): a start
// routine in a namespace (matched demangled, "pool::worker(void*)") and a std::thread started from
// a member function (a caller: rule on its demangled name). Prints "ok class_threads_cpp".
#include <pthread.h>

#include <cstdio>
#include <thread>

namespace pool {

void* worker(void* arg) {
    return arg;
}

struct Launcher {
    // Not inlined: it must appear on the creating stack under its own name.
    __attribute__((noinline)) static void start() {
        std::thread thread([] {});
        thread.join();
    }
};

}  // namespace pool

int main() {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, pool::worker, nullptr) != 0) return 1;
    if (pthread_join(thread, nullptr) != 0) return 1;
    pool::Launcher::start();
    std::printf("ok class_threads_cpp\n");
    return 0;
}
