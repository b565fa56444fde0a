// attr_stack: pthread_attr_setstacksize (EINVAL below PTHREAD_STACK_MIN), setstack with a
// caller-provided buffer (the thread's locals lie inside it), setguardsize/getguardsize, and
// pthread_getattr_np inside the thread (stack bounds contain a local, size >= requested,
// detach state and guard size as created).
#include <sys/mman.h>

#include "../common/compat.h"

struct probe {
    size_t want_size;  // requested stack size (0: not checked)
    char* buf;         // caller-provided stack (NULL: none)
    size_t buf_size;
    size_t want_guard;  // expected guard size reported (SIZE_MAX: not checked)
    int want_detach;
    int ok;  // set to 1 by the thread when all checks passed
};

// Checks this thread's attributes as seen by pthread_getattr_np.
static void* check_self(void* arg) {
    struct probe* p = (struct probe*)arg;
    char local = 0;
    pthread_attr_t a;
    CHECK_RC(pthread_getattr_np(pthread_self(), &a), 0);
    void* addr = NULL;
    size_t size = 0;
    CHECK_RC(pthread_attr_getstack(&a, &addr, &size), 0);
    CHECK((char*)&local >= (char*)addr && (char*)&local < (char*)addr + size,
          "local %p outside reported stack [%p, +%zu)", (void*)&local, addr, size);
    size_t ss = 0;
    CHECK_RC(pthread_attr_getstacksize(&a, &ss), 0);
    CHECK_EQ(ss, size);
    if (p->want_size)
        CHECK(size >= p->want_size, "stack size %zu < requested %zu", size, p->want_size);
    if (p->buf) {
        CHECK((char*)addr >= p->buf && (char*)addr + size <= p->buf + p->buf_size,
              "reported stack [%p,+%zu) not inside the user buffer [%p,+%zu)", addr, size,
              (void*)p->buf, p->buf_size);
        CHECK(&local >= p->buf && &local < p->buf + p->buf_size, "local not on the user stack");
    }
    if (p->want_guard != SIZE_MAX) {
        size_t g = 1;
        CHECK_RC(pthread_attr_getguardsize(&a, &g), 0);
        CHECK_EQ(g, p->want_guard);
    }
    int ds = -1;
    CHECK_RC(pthread_attr_getdetachstate(&a, &ds), 0);
    CHECK_EQ(ds, p->want_detach);
    pthread_attr_destroy(&a);
    // Use a good part of the stack to show it is really usable.
    size_t use = (p->want_size ? p->want_size : p->buf_size) / 2;
    volatile char* big = (volatile char*)__builtin_alloca(use);
    for (size_t i = 0; i < use; i += 512) big[i] = (char)i;
    p->ok = 1;
    return NULL;
}

int main(void) {
    compat_start("attr_stack");
    long page = sysconf(_SC_PAGESIZE);
    pthread_attr_t a;
    CHECK_RC(pthread_attr_init(&a), 0);

    // Defaults: joinable, guard size one page, stack size reported non-zero.
    int ds = -1;
    CHECK_RC(pthread_attr_getdetachstate(&a, &ds), 0);
    CHECK_EQ(ds, PTHREAD_CREATE_JOINABLE);
    size_t g = 0;
    CHECK_RC(pthread_attr_getguardsize(&a, &g), 0);
    CHECK_EQ(g, page);
    size_t ss = 0;
    CHECK_RC(pthread_attr_getstacksize(&a, &ss), 0);
    CHECK(ss >= (size_t)PTHREAD_STACK_MIN, "default stack size %zu", ss);

    // Too small a stack size is EINVAL and leaves the attribute unchanged.
    CHECK_RC(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN - 1), EINVAL);
    size_t ss2 = 0;
    CHECK_RC(pthread_attr_getstacksize(&a, &ss2), 0);
    CHECK_EQ(ss2, ss);

    // Explicit stack sizes: small, 64 KiB, 1 MiB, 16 MiB.
    size_t sizes[] = {PTHREAD_STACK_MIN, 64 * 1024, 1024 * 1024, 16 * 1024 * 1024};
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK_RC(pthread_attr_setstacksize(&a, sizes[i]), 0);
        CHECK_RC(pthread_attr_getstacksize(&a, &ss), 0);
        CHECK_EQ(ss, sizes[i]);
        struct probe p = {sizes[i], NULL, 0, (size_t)page, PTHREAD_CREATE_JOINABLE, 0};
        pthread_t t;
        CHECK_RC(pthread_create(&t, &a, check_self, &p), 0);
        compat_join(t);
        CHECK(p.ok, "thread with stack size %zu failed", sizes[i]);
    }

    // Guard size: a larger guard is reported back by getattr_np.
    CHECK_RC(pthread_attr_setstacksize(&a, 256 * 1024), 0);
    CHECK_RC(pthread_attr_setguardsize(&a, 4 * page), 0);
    CHECK_RC(pthread_attr_getguardsize(&a, &g), 0);
    CHECK_EQ(g, 4 * page);
    {
        struct probe p = {256 * 1024, NULL, 0, 4 * (size_t)page, PTHREAD_CREATE_JOINABLE, 0};
        pthread_t t;
        CHECK_RC(pthread_create(&t, &a, check_self, &p), 0);
        compat_join(t);
        CHECK(p.ok, "thread with a 4-page guard failed");
    }
    pthread_attr_destroy(&a);

    // A caller-provided stack (from mmap and from malloc'd memory).
    for (int kind = 0; kind < 2; kind++) {
        size_t size = 512 * 1024;
        char* buf;
        if (kind == 0) {
            buf =
                (char*)mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            CHECK(buf != MAP_FAILED, "mmap");
        } else {
            CHECK_RC(posix_memalign((void**)&buf, 64, size), 0);
        }
        CHECK_RC(pthread_attr_init(&a), 0);
        CHECK_RC(pthread_attr_setstack(&a, buf, size), 0);
        void* ga = NULL;
        size_t gs = 0;
        CHECK_RC(pthread_attr_getstack(&a, &ga, &gs), 0);
        CHECK(ga == buf && gs == size, "getstack returned %p/%zu", ga, gs);
        // With a user stack, glibc ignores the guard size; the reported guard is not checked.
        struct probe p = {0, buf, size, SIZE_MAX, PTHREAD_CREATE_JOINABLE, 0};
        pthread_t t;
        CHECK_RC(pthread_create(&t, &a, check_self, &p), 0);
        compat_join(t);
        CHECK(p.ok, "thread on a user stack (kind %d) failed", kind);
        pthread_attr_destroy(&a);
        if (kind == 0)
            munmap(buf, size);
        else
            free(buf);
    }
    // setstack with too small a size is EINVAL.
    char small[64];
    CHECK_RC(pthread_attr_init(&a), 0);
    CHECK_RC(pthread_attr_setstack(&a, small, sizeof small), EINVAL);
    pthread_attr_destroy(&a);

    // Main thread: getattr_np works and contains a local.
    char local;
    CHECK_RC(pthread_getattr_np(pthread_self(), &a), 0);
    void* addr;
    size_t size;
    CHECK_RC(pthread_attr_getstack(&a, &addr, &size), 0);
    CHECK(&local >= (char*)addr && &local < (char*)addr + size, "main's local outside its stack");
    pthread_attr_destroy(&a);
    return compat_ok();
}
