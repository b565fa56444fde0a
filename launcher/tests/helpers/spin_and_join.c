// A program that never touches signals: main() creates a thread that writes "spinning\n" to
// standard output and then computes until the process ends, and waits for it in pthread_join.
// Under `arbrun --cores 1` that thread holds the only carrier, so a process-directed signal sent
// to the program arrives while a thread other than main() runs. alarm(20) bounds a run nobody
// ends (the test that starts it kills it).
#include <pthread.h>
#include <unistd.h>

static void* spin(void* arg) {
    (void)arg;
    (void)!write(1, "spinning\n", 9);
    for (volatile unsigned long n = 0;; n = n + 1) {
    }
    return NULL;
}

int main(void) {
    alarm(20);
    pthread_t t;
    if (pthread_create(&t, NULL, spin, NULL) != 0) return 1;
    pthread_join(t, NULL);
    return 0;
}
