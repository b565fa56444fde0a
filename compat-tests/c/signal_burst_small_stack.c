// signal_burst_small_stack: a thread with a small stack (64 KiB) takes a burst of pthread_kill
// signals while it cannot take them (it runs a SIGSEGV handler, which blocks everything else),
// then takes them once the handler returns. Natively the burst merges into one pending SIGUSR1,
// handled once; whatever an implementation does to deliver them, it must not overflow the
// thread's stack. Each round: the thread faults on a PROT_NONE page, its handler waits (bounded)
// until main has sent the burst, then makes the page writable and returns; the thread must then
// have handled SIGUSR1 by the end of its next sched_yield and go on. Under arbrun each pthread_kill
// interrupts the thread's carrier (SIGCANCEL), and those interruptions queue while the handler
// runs.
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/compat.h"
#include "../common/compat_wait.h"

#define ROUNDS 5
#define BURST 400
#define STACK_KIB 64
#define HANDLER_BOUND_MS 2000

static atomic_int in_fault, burst_sent, burst_seen, usr1_handled;
static char* page;
static long page_size;

static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&usr1_handled, 1);
}

// Waits (bounded: on one core main cannot run meanwhile) for main's burst, then repairs the page.
// A handshake with a bound, not a sleep: where main runs beside it the burst always arrives here.
static void on_segv(int sig) {
    (void)sig;
    atomic_store(&in_fault, 1);
    const int64_t end = compat_now_ns(CLOCK_MONOTONIC) + HANDLER_BOUND_MS * 1000000LL;
    while (!atomic_load(&burst_sent) && compat_now_ns(CLOCK_MONOTONIC) < end) {
    }
    atomic_store(&burst_seen, atomic_load(&burst_sent));
    mprotect(page, (size_t)page_size, PROT_READ | PROT_WRITE);
}

static void* faulter(void* arg) {
    (void)arg;
    *(volatile char*)page = 1;  // faults: on_segv runs, then the store is retried
    sched_yield();  // takes the pending SIGUSR1 at the latest (natively: during on_segv)
    return NULL;
}

int main(void) {
    compat_start("signal_burst_small_stack");
    page_size = sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_usr1;
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    sa.sa_handler = on_segv;
    CHECK_SYS(sigaction(SIGSEGV, &sa, NULL));
    pthread_attr_t attr;
    CHECK_RC(pthread_attr_init(&attr), 0);
    CHECK_RC(pthread_attr_setstacksize(&attr, STACK_KIB * 1024), 0);
    for (int round = 0; round < ROUNDS; round++) {
        page = mmap(NULL, (size_t)page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(page != MAP_FAILED, "mmap failed");
        atomic_store(&in_fault, 0);
        atomic_store(&burst_sent, 0);
        atomic_store(&burst_seen, 0);
        atomic_store(&usr1_handled, 0);
        pthread_t t;
        CHECK_RC(pthread_create(&t, &attr, faulter, NULL), 0);
        compat_wait_at_least(&in_fault, 1, "faulting thread in its handler");
        for (int i = 0; i < BURST; i++) CHECK_RC(pthread_kill(t, SIGUSR1), 0);
        atomic_store(&burst_sent, 1);
        compat_join(t);
        // Only a burst that arrived while the handler ran is sure to be handled: on one core main
        // sends it after the bounded wait, possibly after the thread ended.
        if (atomic_load(&burst_seen))
            CHECK(atomic_load(&usr1_handled) >= 1, "SIGUSR1 not handled (round %d)", round);
        CHECK_SYS(munmap(page, (size_t)page_size));
    }
    CHECK_RC(pthread_attr_destroy(&attr), 0);
    return compat_ok();
}
