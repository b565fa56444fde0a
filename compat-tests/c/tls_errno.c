// tls_errno: thread-local storage of the program itself — __thread variables (with initial
// values, arrays, addresses distinct per thread) and errno are per thread: a thread that sets
// errno does not change another's, even across context switches; 16 threads update their
// own TLS counters 100,000 times interleaved with sched_yield and keep exact values.
#include <sched.h>

#include "../common/compat.h"

static __thread long tls_counter = 5;
static __thread int tls_array[64] = {1, 2, 3};
static __thread char tls_name[32];
enum { N = 16 };
static uintptr_t addrs[N];
static pthread_barrier_t b;

static void* worker(void* arg) {
    intptr_t id = (intptr_t)arg;
    CHECK(tls_counter == 5 && tls_array[0] == 1 && tls_array[2] == 3 && tls_array[63] == 0,
          "thread %ld: wrong initial TLS values", (long)id);
    CHECK(tls_name[0] == 0, "TLS .tbss not zeroed");
    snprintf(tls_name, sizeof tls_name, "thread-%ld", (long)id);
    addrs[id] = (uintptr_t)&tls_counter;
    errno = (int)(1000 + id);
    pthread_barrier_wait(&b);  // every thread has set errno before anyone checks
    for (int i = 0; i < 100000; i++) {
        tls_counter += id;
        tls_array[i % 64]++;
        if (i % 1000 == 0) sched_yield();
    }
    sched_yield();  // a successful call in between leaves errno alone
    pthread_barrier_wait(&b);
    CHECK(errno == 1000 + id, "thread %ld: errno is %d", (long)id, errno);
    char want[32];
    snprintf(want, sizeof want, "thread-%ld", (long)id);
    CHECK(strcmp(tls_name, want) == 0, "thread %ld: TLS name '%s'", (long)id, tls_name);
    CHECK_EQ(tls_counter, 5 + 100000L * id);
    long sum = 0;
    for (int i = 0; i < 64; i++) sum += tls_array[i];
    CHECK_EQ(sum, 1 + 2 + 3 + 100000);
    return NULL;
}

int main(void) {
    compat_start("tls_errno");
    CHECK_RC(pthread_barrier_init(&b, NULL, N), 0);
    pthread_t t[N];
    for (intptr_t i = 0; i < N; i++) t[i] = compat_spawn(worker, (void*)i);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            CHECK(addrs[i] != addrs[j], "threads %d and %d share TLS", i, j);
    CHECK_EQ(tls_counter, 5);
    // errno after a failing call in this thread.
    CHECK_ERRNO(close(-1), EBADF);
    return compat_ok();
}
