// pthread_exit_main: main() calls pthread_exit while another thread still runs; the process lives
// on until the last thread ends and then exits with status 0. The worker prints the ok line after
// checking that main is gone from the process's point of view only in the way POSIX allows (its
// atexit handlers have not run yet).
#include "../common/compat.h"

static volatile int atexit_ran;  // set by the atexit handler, which runs only at process exit
static pthread_t main_thread;

static void on_exit_handler(void) {
    atexit_ran = 1;
}

static void* last_thread(void* arg) {
    (void)arg;
    // Wait until main has (very likely) called pthread_exit; the check below does not depend on it.
    usleep(50000);
    CHECK(!atexit_ran, "atexit handlers ran while a thread was still alive");
    // Main's result is not joinable-visible, but the thread must be able to keep working.
    long sum = 0;
    for (int i = 0; i < 1000; i++) sum += i;
    CHECK_EQ(sum, 499500);
    compat_ok();
    return NULL;  // last thread: the process now exits with status 0
}

int main(void) {
    compat_start("pthread_exit_main");
    atexit(on_exit_handler);
    main_thread = pthread_self();
    pthread_t t = compat_spawn(last_thread, NULL);
    (void)t;
    pthread_exit(NULL);
}
