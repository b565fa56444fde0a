// A small threaded program for start-up timing: 4 threads each add to a counter under a mutex and
// are joined; exit status 0 when the sum is right.
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long sum;

static void* work(void* arg) {
    pthread_mutex_lock(&lock);
    sum += (long)arg;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void) {
    pthread_t ids[4];
    for (long i = 0; i < 4; ++i) {
        if (pthread_create(&ids[i], NULL, work, (void*)(i + 1)) != 0) return 1;
    }
    for (int i = 0; i < 4; ++i) pthread_join(ids[i], NULL);
    return sum == 10 ? 0 : 1;
}
