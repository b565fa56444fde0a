// dlopen_tls: a library with thread-local variables (global-dynamic and initial-exec, with
// initial values) is dlopen'ed while 4 threads already exist, then used from those threads and
// from 4 threads created afterwards: every thread starts from the initial values, has its own
// copies (distinct addresses, independent updates), and its updates are exact.
#include <dlfcn.h>

#include "../common/compat.h"

#ifndef COMPAT_TLS_LIB
#error "COMPAT_TLS_LIB must name the library to dlopen"
#endif

typedef long (*add_fn)(long);
typedef long (*ok_fn)(void);
typedef uintptr_t (*addr_fn)(void);
static add_fn lib_add;
static ok_fn lib_initial_ok;
static addr_fn lib_gd_addr, lib_ie_addr;

enum { EARLY = 4, LATE = 4, N = EARLY + LATE };
static pthread_barrier_t loaded;
static pthread_barrier_t all_alive;  // keeps every thread alive until all recorded addresses
static uintptr_t gd_addrs[N], ie_addrs[N];

static void* user(void* arg) {
    intptr_t id = (intptr_t)arg;
    if (id < EARLY) pthread_barrier_wait(&loaded);  // created before dlopen; wait for it
    CHECK(lib_initial_ok(), "thread %ld: TLS of the late-loaded library not initialised", (long)id);
    gd_addrs[id] = lib_gd_addr();
    ie_addrs[id] = lib_ie_addr();
    pthread_barrier_wait(&all_alive);  // addresses of live threads only (dead ones are reused)
    long last = 0;
    for (long i = 1; i <= 1000; i++) {
        last = lib_add(id + 1);
        if (i % 100 == 0) sched_yield();
    }
    // gd = 1000 + 1000*(id+1), ie = 2000 + 1000*(id+1).
    CHECK_EQ(last, 3000 + 2000 * (id + 1));
    return NULL;
}

int main(void) {
    compat_start("dlopen_tls");
    CHECK_RC(pthread_barrier_init(&loaded, NULL, EARLY + 1), 0);
    CHECK_RC(pthread_barrier_init(&all_alive, NULL, N), 0);
    pthread_t t[N];
    for (intptr_t i = 0; i < EARLY; i++) t[i] = compat_spawn(user, (void*)i);
    void* h = dlopen(COMPAT_TLS_LIB, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen %s: %s", COMPAT_TLS_LIB, dlerror());
    lib_add = (add_fn)dlsym(h, "tls_lib_add");
    lib_initial_ok = (ok_fn)dlsym(h, "tls_lib_initial_ok");
    lib_gd_addr = (addr_fn)dlsym(h, "tls_lib_gd_addr");
    lib_ie_addr = (addr_fn)dlsym(h, "tls_lib_ie_addr");
    CHECK(lib_add && lib_initial_ok && lib_gd_addr && lib_ie_addr, "dlsym failed");
    pthread_barrier_wait(&loaded);
    for (intptr_t i = EARLY; i < N; i++) t[i] = compat_spawn(user, (void*)i);
    for (int i = 0; i < N; i++) compat_join(t[i]);
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) {
            CHECK(gd_addrs[i] != gd_addrs[j],
                  "threads %d and %d share a global-dynamic TLS variable", i, j);
            CHECK(ie_addrs[i] != ie_addrs[j],
                  "threads %d and %d share an initial-exec TLS variable", i, j);
        }
    // Main thread too.
    CHECK(lib_initial_ok(), "main: TLS not initialised");
    CHECK_EQ(lib_add(1), 3002);
    return compat_ok();
}
