// single_threaded_flag: glibc's __libc_single_threaded (read by libstdc++'s reference counts, by
// malloc and by stdio to skip atomics and locks) must be false from the moment a second thread can
// run: in the creator after pthread_create returns, and in the new thread itself; it may be true
// before (as natively in a program that has created no thread), and once false it stays false.
#include <sys/single_threaded.h>

#include "../common/compat.h"

static void* report(void* arg) {
    *(int*)arg = __libc_single_threaded;
    return NULL;
}

int main(void) {
    compat_start("single_threaded_flag");
    const int at_start = __libc_single_threaded;
    int seen_by_thread = -1;
    pthread_t t;
    CHECK_RC(pthread_create(&t, NULL, report, &seen_by_thread), 0);
    CHECK(__libc_single_threaded == 0, "still single-threaded after pthread_create (was %d)",
          at_start);
    CHECK_RC(pthread_join(t, NULL), 0);
    CHECK(seen_by_thread == 0, "the new thread saw single-threaded %d", seen_by_thread);
    CHECK(__libc_single_threaded == 0, "single-threaded again after the join");
    return compat_ok();
}
