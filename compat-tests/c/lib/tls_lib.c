// tls_lib: a shared library loaded with dlopen by dlopen_tls. It has thread-local variables with
// initial values in both TLS models that matter (global-dynamic through __tls_get_addr, and
// initial-exec taken from the static TLS surplus when loaded late), plus a TLS array.
#include <stdint.h>

__thread long gd_counter = 1000;  // global-dynamic (default for a shared library)
__attribute__((tls_model("initial-exec"))) __thread long ie_counter = 2000;
__thread char gd_array[256] = {1, 2, 3};

// Adds `v` to both counters of the calling thread and returns their sum.
long tls_lib_add(long v) {
    gd_counter += v;
    ie_counter += v;
    return gd_counter + ie_counter;
}

// Returns the initial-state checksum of this thread's TLS (0 if any initial value is wrong).
long tls_lib_initial_ok(void) {
    if (gd_counter != 1000 || ie_counter != 2000) return 0;
    if (gd_array[0] != 1 || gd_array[1] != 2 || gd_array[2] != 3 || gd_array[255] != 0) return 0;
    return 1;
}

// Addresses of this thread's copies, to check that threads do not share them.
uintptr_t tls_lib_gd_addr(void) {
    return (uintptr_t)&gd_counter;
}
uintptr_t tls_lib_ie_addr(void) {
    return (uintptr_t)&ie_counter;
}
