// main_arena: main() allocates from glibc's main arena (the brk heap), threads from arenas of
// their own, as natively. Under arbrun main() runs as a user thread with a TCB of its own; it
// must still get the main arena, or a program that grows its heap in main() pays one mprotect
// per page (an arena's heap) where it pays one brk per 128 KiB natively.
#include <stdint.h>
#include <unistd.h>

#include "../common/compat.h"

// Whether `p` lies in the brk heap: between the program break at start and the current one.
// (An address, not a pointer: the compiler would take the pointee for read.)
static uintptr_t initial_break;
static int in_brk_heap(uintptr_t p) {
    return p >= initial_break && p < (uintptr_t)sbrk(0);
}

static void* thread_allocates(void* arg) {
    (void)arg;
    void* p = malloc(64);
    const int in_heap = in_brk_heap((uintptr_t)p);
    free(p);
    return (void*)(intptr_t)in_heap;
}

int main(void) {
    compat_start("main_arena");
    // A bound below the brk heap (which starts within 32 MiB of the program's data and may have
    // grown already); arenas of other threads are mappings far above the break.
    initial_break = (uintptr_t)sbrk(0) - 64 * 1024 * 1024;
    void* blocks[4096];
    for (int i = 0; i < 4096; ++i) {
        blocks[i] = malloc(512);  // 2 MiB: the heap grows while main() allocates
        CHECK(blocks[i] != NULL, "malloc failed");
        CHECK(in_brk_heap((uintptr_t)blocks[i]),
              "main()'s block %d is outside the brk heap (%p, break %p)", i, blocks[i], sbrk(0));
    }
    for (int i = 0; i < 4096; ++i) free(blocks[i]);
    CHECK((intptr_t)compat_join(compat_spawn(thread_allocates, NULL)) == 0,
          "a thread allocated from the brk heap (it has an arena of its own natively)");
    return compat_ok();
}
