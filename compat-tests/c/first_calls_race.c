// first_calls_race: threads that make their first calls of blocking libc functions at the same
// moment, in fresh processes. Under arbrun the first call of each interposed function also looks
// up the real one; a lookup that made a racing caller wait (a thread-safe static's guard) parked
// that caller inside its blocking-call bracket, and a core could then be left with a stamp nobody
// clears: the process hung. Here each of ROUNDS child processes (this program re-executed, so
// every lookup is a first one) starts THREADS threads that leave one barrier together and make the
// same calls; each child must finish, with the calls' results as natively, within
// CHILD_DEADLINE_MS (a hung child is killed and reported).
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/compat.h"

#define ROUNDS 40
#define THREADS 8
#define CHILD_DEADLINE_MS 10000

static pthread_barrier_t start_line;

// The calls every thread makes first, each through a blocking-call wrapper under arbrun; returns
// 0 when each result is what it is natively (regular file: pread reads its one byte, fsync and
// flock succeed; /dev/null: fdatasync fails with EINVAL).
static void* first_calls(void* arg) {
    const char* path = arg;
    int rc = pthread_barrier_wait(&start_line);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) return (void*)1;
    const int fd = open(path, O_RDWR);
    if (fd < 0) return (void*)2;
    char byte = 0;
    if (pread(fd, &byte, 1, 0) != 1 || byte != 'x') return (void*)3;
    if (fsync(fd) != 0) return (void*)4;
    if (flock(fd, LOCK_SH) != 0 || flock(fd, LOCK_UN) != 0) return (void*)5;
    const int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd < 0) return (void*)6;
    errno = 0;
    if (fdatasync(null_fd) != -1 || errno != EINVAL) return (void*)7;
    close(null_fd);
    close(fd);
    return NULL;
}

// One child: THREADS threads race through first_calls(); exit status 0, or the first failing
// step's number.
static int child_main(const char* path) {
    if (pthread_barrier_init(&start_line, NULL, THREADS) != 0) return 20;
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; ++i) {
        if (pthread_create(&threads[i], NULL, first_calls, (void*)path) != 0) return 21;
    }
    int status = 0;
    for (int i = 0; i < THREADS; ++i) {
        void* result;
        if (pthread_join(threads[i], &result) != 0) return 22;
        if (result && !status) status = (int)(intptr_t)result;
    }
    return status;
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "child") == 0) return child_main(argv[2]);
    compat_start("first_calls_race");
    char path[] = "/tmp/first_calls_race.XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
    const int wrote = (int)write(fd, "x", 1);
    close(fd);
    if (wrote != 1) unlink(path);
    CHECK(wrote == 1, "write: %s", strerror(errno));
    for (int round = 0; round < ROUNDS; ++round) {
        const pid_t pid = fork();
        if (pid == 0) {
            char* child_argv[] = {argv[0], "child", path, NULL};
            execv("/proc/self/exe", child_argv);
            _exit(30);
        }
        if (pid < 0) unlink(path);
        CHECK(pid > 0, "fork: %s", strerror(errno));
        const int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        const int ready = pidfd >= 0 ? poll(&p, 1, CHILD_DEADLINE_MS) : -1;
        if (ready != 1) kill(pid, SIGKILL);  // our own child: hung, or no pidfd to wait on
        int status = 0;
        const pid_t waited = waitpid(pid, &status, 0);
        if (pidfd >= 0) close(pidfd);
        if (ready != 1 || waited != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            unlink(path);
        }
        CHECK(pidfd >= 0, "pidfd_open: %s", strerror(errno));
        CHECK(ready == 1, "round %d: the child was still running after %d ms (hung): killed", round,
              CHILD_DEADLINE_MS);
        CHECK(waited == pid && WIFEXITED(status), "round %d: child status 0x%x", round, status);
        CHECK(WEXITSTATUS(status) == 0, "round %d: a thread failed at step %d", round,
              WEXITSTATUS(status));
    }
    unlink(path);
    return compat_ok();
}
