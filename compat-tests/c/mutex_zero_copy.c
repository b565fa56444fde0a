// mutex_zero_copy: objects used without their init functions — mutexes and condvars in calloc'd
// (zero-filled) memory, contended; a recursive mutex initialised in one place and memcpy'd to
// another before first use keeps its type; copies of PTHREAD_MUTEX_INITIALIZER and of
// PTHREAD_COND_INITIALIZER made with memcpy and by struct assignment work; an object moved by
// memcpy after init but before use works.
#include "../common/compat.h"

enum { NM = 64, NT = 4, ITERS = 20000 };

struct slot {
    pthread_mutex_t m;
    pthread_cond_t c;
    long value;
    int turn;
};
static struct slot* slots;  // calloc'd, never initialised with pthread_*_init

static void* hammer(void* arg) {
    uint64_t seed = 12345 + (uintptr_t)arg;
    for (int i = 0; i < ITERS; i++) {
        struct slot* s = &slots[compat_rand(&seed) % NM];
        pthread_mutex_lock(&s->m);
        s->value++;
        pthread_mutex_unlock(&s->m);
    }
    return NULL;
}

// Condvar in zero-filled memory: two threads take turns on slot 0.
static void* turn_taker(void* arg) {
    int me = (int)(intptr_t)arg;
    struct slot* s = &slots[0];
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&s->m);
        while (s->turn != me) pthread_cond_wait(&s->c, &s->m);
        s->turn = 1 - me;
        pthread_cond_signal(&s->c);
        pthread_mutex_unlock(&s->m);
    }
    return NULL;
}

static pthread_mutex_t* probe_m;
static void* try_probe(void* arg) {
    (void)arg;
    return (void*)(intptr_t)pthread_mutex_trylock(probe_m);
}

int main(void) {
    compat_start("mutex_zero_copy");
    slots = (struct slot*)calloc(NM, sizeof *slots);
    pthread_t t[NT];
    for (intptr_t i = 0; i < NT; i++) t[i] = compat_spawn(hammer, (void*)i);
    for (int i = 0; i < NT; i++) compat_join(t[i]);
    long sum = 0;
    for (int i = 0; i < NM; i++) sum += slots[i].value;
    CHECK_EQ(sum, (long)NT * ITERS);
    t[0] = compat_spawn(turn_taker, (void*)0);
    t[1] = compat_spawn(turn_taker, (void*)1);
    compat_join(t[0]);
    compat_join(t[1]);
    CHECK_EQ(slots[0].turn, 0);
    free(slots);

    // A recursive mutex initialised, then memcpy'd before first use.
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_t original;
    CHECK_RC(pthread_mutex_init(&original, &a), 0);
    pthread_mutexattr_destroy(&a);
    pthread_mutex_t* copy = (pthread_mutex_t*)malloc(sizeof *copy);
    memcpy(copy, &original, sizeof original);
    CHECK_RC(pthread_mutex_lock(copy), 0);
    CHECK_RC(pthread_mutex_lock(copy), 0);  // recursive: no deadlock
    probe_m = copy;
    pthread_t p = compat_spawn(try_probe, NULL);
    CHECK_EQ((intptr_t)compat_join(p), EBUSY);
    CHECK_RC(pthread_mutex_unlock(copy), 0);
    CHECK_RC(pthread_mutex_unlock(copy), 0);
    CHECK_RC(pthread_mutex_unlock(copy), EPERM);
    // The original, never used, still works on its own.
    CHECK_RC(pthread_mutex_lock(&original), 0);
    CHECK_RC(pthread_mutex_lock(&original), 0);
    CHECK_RC(pthread_mutex_unlock(&original), 0);
    CHECK_RC(pthread_mutex_unlock(&original), 0);
    free(copy);

    // Copies of the static initialisers, by memcpy and by assignment, in an array.
    static const pthread_mutex_t init_m = PTHREAD_MUTEX_INITIALIZER;
    static const pthread_cond_t init_c = PTHREAD_COND_INITIALIZER;
    slots = (struct slot*)malloc(NM * sizeof *slots);
    memset(slots, 0xA5, NM * sizeof *slots);  // garbage first: only the copies make them valid
    for (int i = 0; i < NM; i++) {
        if (i % 2)
            memcpy(&slots[i].m, &init_m, sizeof init_m);
        else
            slots[i].m = init_m;
        memcpy(&slots[i].c, &init_c, sizeof init_c);
        slots[i].value = 0;
        slots[i].turn = 0;
    }
    for (intptr_t i = 0; i < NT; i++) t[i] = compat_spawn(hammer, (void*)(i + 100));
    for (int i = 0; i < NT; i++) compat_join(t[i]);
    sum = 0;
    for (int i = 0; i < NM; i++) sum += slots[i].value;
    CHECK_EQ(sum, (long)NT * ITERS);
    t[0] = compat_spawn(turn_taker, (void*)0);
    t[1] = compat_spawn(turn_taker, (void*)1);
    compat_join(t[0]);
    compat_join(t[1]);

    // Move an initialised, unused mutex+cond pair to new memory with memcpy, then use it.
    struct slot* moved = (struct slot*)malloc(sizeof *moved);
    struct slot fresh;
    pthread_mutex_init(&fresh.m, NULL);
    pthread_cond_init(&fresh.c, NULL);
    memcpy(moved, &fresh, sizeof fresh);
    moved->turn = 0;
    struct slot* keep = slots;
    slots = moved;
    t[0] = compat_spawn(turn_taker, (void*)0);
    t[1] = compat_spawn(turn_taker, (void*)1);
    compat_join(t[0]);
    compat_join(t[1]);
    CHECK_EQ(moved->turn, 0);
    free(moved);
    free(keep);
    return compat_ok();
}
