// first_calls_race: threads that make their first calls of blocking libc functions at the same
// moment, in fresh processes. Under arbrun the first call of each interposed function also looks
// up the real one; a lookup that made a racing caller wait (a thread-safe static's guard) parked
// that caller inside its blocking-call bracket, and once another thread made a blocking call on
// that core meanwhile, the waiter's close spun for a lend that never came: the process hung. Here
// each of ROUNDS child processes (this program re-executed, so every lookup is a first one) starts
// THREADS racers that meet before each call and make the same calls together, beside NOISE
// threads making short blocking calls; each child must finish, with the calls' results as
// natively, within CHILD_DEADLINE_MS (a hung child is killed and reported). Two racers: both spin
// at each meeting point, so under `--cores 1` the first waits for a time slice, and more would
// wait for several.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/compat.h"

#define ROUNDS 40
#define THREADS 2
#define NOISE 2
#define CHILD_DEADLINE_MS 10000

// The threads meet before every call: each counts itself in and spins until all have, so they
// leave together (a barrier's wake-ups would stagger them by more than a lookup takes).
static atomic_int arrived;

static void rendezvous(int step) {
    atomic_fetch_add(&arrived, 1);
    while (atomic_load(&arrived) < step * THREADS) {
    }
}

// The calls every thread makes first, each through a blocking-call wrapper under arbrun, all
// threads together; returns 0 when each result is what it is natively (regular file: pread reads
// its one byte, fsync and flock succeed; /dev/null: fdatasync fails with EINVAL).
static void* first_calls(void* arg) {
    const char* path = arg;
    rendezvous(1);
    const int fd = open(path, O_RDWR);
    if (fd < 0) return (void*)2;
    rendezvous(2);
    char byte = 0;
    if (pread(fd, &byte, 1, 0) != 1 || byte != 'x') return (void*)3;
    rendezvous(3);
    if (fsync(fd) != 0) return (void*)4;
    rendezvous(4);
    if (flock(fd, LOCK_SH) != 0 || flock(fd, LOCK_UN) != 0) return (void*)5;
    const int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd < 0) return (void*)6;
    rendezvous(5);
    errno = 0;
    if (fdatasync(null_fd) != -1 || errno != EINVAL) return (void*)7;
    close(null_fd);
    close(fd);
    return NULL;
}

// Meanwhile: short blocking calls (each bracketed under arbrun) on whatever core is free, the
// other threads a racer that waits would share its core with; until the racers are done.
static atomic_int racers_done;

static void* bracketed_calls(void* arg) {
    (void)arg;
    const int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd < 0) return (void*)8;
    while (atomic_load(&racers_done) < THREADS) {
        errno = 0;
        if (fdatasync(null_fd) != -1 || errno != EINVAL) return (void*)9;
        sched_yield();
    }
    close(null_fd);
    return NULL;
}

static void* racer(void* arg) {
    void* result = first_calls(arg);
    atomic_fetch_add(&racers_done, 1);
    return result;
}

// One child: THREADS racers through first_calls() beside NOISE threads making bracketed calls;
// exit status 0, or the first failing step's number.
static int child_main(const char* path) {
    pthread_t threads[THREADS + NOISE];
    for (int i = 0; i < THREADS + NOISE; ++i) {
        void* (*fn)(void*) = i < THREADS ? racer : bracketed_calls;
        if (pthread_create(&threads[i], NULL, fn, (void*)path) != 0) return 21;
    }
    int status = 0;
    for (int i = 0; i < THREADS + NOISE; ++i) {
        void* result;
        if (pthread_join(threads[i], &result) != 0) return 22;
        if (result && !status) status = (int)(intptr_t)result;
    }
    return status;
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "child") == 0) return child_main(argv[2]);
    compat_start("first_calls_race");
    char path[PATH_MAX];
    compat_temp_template(path, sizeof path, "first_calls_race");
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
