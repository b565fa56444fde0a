// malloc_stdio: libc state shared between threads — 8 threads malloc/realloc/free 200,000 blocks
// of varied sizes (blocks freed by other threads than those that allocated them, through a
// mutex-protected exchange), and 8 threads fprintf 2,000 lines each into one FILE (stdio's lock:
// every line intact); flockfile keeps a multi-call record together.
#include "../common/compat.h"

enum { NT = 8, ALLOCS = 25000, LINES = 2000, XCH = 256 };
static pthread_mutex_t xm = PTHREAD_MUTEX_INITIALIZER;
static void* exchange[XCH];  // guarded by xm
static FILE* out;

static void* allocator(void* arg) {
    uint64_t seed = 77 + (uintptr_t)arg;
    for (int i = 0; i < ALLOCS; i++) {
        size_t size = 1 + compat_rand(&seed) % 4096;
        unsigned char* p = (unsigned char*)malloc(size);
        CHECK(p != NULL, "malloc");
        memset(p, (int)(size & 0xff), size);
        if (i % 3 == 0) {
            p = (unsigned char*)realloc(p, size * 2);
            CHECK(p != NULL, "realloc");
            CHECK(p[size - 1] == (unsigned char)(size & 0xff), "realloc lost data");
            p[0] = (unsigned char)(size & 0xff);
        }
        // Store size in a header-ish way: first byte pattern checks on free by another thread.
        int slot = (int)(compat_rand(&seed) % XCH);
        pthread_mutex_lock(&xm);
        void* old = exchange[slot];
        exchange[slot] = p;
        pthread_mutex_unlock(&xm);
        free(old);
    }
    return NULL;
}

static void* printer(void* arg) {
    intptr_t id = (intptr_t)arg;
    for (int i = 0; i < LINES; i++) {
        if (i % 10 == 0) {
            flockfile(out);
            fprintf(out, "T%ld ", (long)id);
            fprintf(out, "L%d ", i);
            fputs("locked\n", out);
            funlockfile(out);
        } else {
            fprintf(out, "T%ld L%d plain\n", (long)id, i);
        }
    }
    return NULL;
}

int main(void) {
    compat_start("malloc_stdio");
    pthread_t t[NT];
    for (intptr_t i = 0; i < NT; i++) t[i] = compat_spawn(allocator, (void*)i);
    for (int i = 0; i < NT; i++) compat_join(t[i]);
    for (int i = 0; i < XCH; i++) free(exchange[i]);

    out = tmpfile();
    CHECK(out != NULL, "tmpfile");
    for (intptr_t i = 0; i < NT; i++) t[i] = compat_spawn(printer, (void*)i);
    for (int i = 0; i < NT; i++) compat_join(t[i]);
    rewind(out);
    char line[128];
    int count[NT] = {0}, next[NT] = {0};
    while (fgets(line, sizeof line, out)) {
        long id;
        int idx;
        char kind[16];
        CHECK(sscanf(line, "T%ld L%d %15s", &id, &idx, kind) == 3, "mangled line '%s'", line);
        CHECK(id >= 0 && id < NT, "bad id in '%s'", line);
        CHECK(idx == next[id], "thread %ld: line %d out of order (expected %d)", id, idx, next[id]);
        CHECK(strcmp(kind, idx % 10 == 0 ? "locked" : "plain") == 0, "bad kind in '%s'", line);
        next[id]++;
        count[id]++;
    }
    for (int i = 0; i < NT; i++) CHECK_EQ(count[i], LINES);
    fclose(out);
    return compat_ok();
}
