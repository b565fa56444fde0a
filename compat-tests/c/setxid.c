// setxid: the set*id family changes the credentials of every thread of the process (POSIX),
// although the kernel keeps them per thread. With threads computing, parked in a condvar and
// blocked in read() on a pipe, main (and, for one step, another thread) calls setgroups, setresgid,
// setregid, setgid, setegid, setresuid, seteuid, setreuid and setuid; after every step each thread
// reads its own credentials with the raw system calls, and main reads every kernel thread's in
// /proc/self/task/*/status. The steps are reversible for root (the saved uid stays 0) and are
// undone at the end. Then three forked children drop root for good (the test process keeps it):
// from main with threads of their own running, from main before making them, and from a thread
// while the others run; each checks the same. Needs root: prints a SKIP line and exits 77
// otherwise.
#include <dirent.h>
#include <grp.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/compat.h"

enum { MAX_GROUPS = 64, WORKERS = 4 /* computing, 2 parked, reader */ };

// One thread's credentials; groups sorted ascending (the kernel keeps them sorted).
struct creds {
    unsigned uid[3], gid[3];  // real, effective, saved
    int ngroups;
    unsigned groups[MAX_GROUPS];
};

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;  // a new round (or stop) for the workers
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;  // a worker reported
static int round_no;                                    // guarded by m
static int reports;                                     // guarded by m: checks done this round
static int stop;                                        // guarded by m
static struct creds expected;                           // guarded by m
static int posted_round;  // atomic mirror of round_no for the computing thread
static int pipefd[2];
static volatile unsigned long sink;

static int cmp_unsigned(const void* a, const void* b) {
    unsigned x = *(const unsigned*)a, y = *(const unsigned*)b;
    return x < y ? -1 : x > y;
}

// The calling thread's own credentials, straight from the kernel (per thread).
static void read_creds(struct creds* c) {
    uid_t u[3];
    gid_t g[3];
    gid_t groups[MAX_GROUPS];
    CHECK_SYS(syscall(SYS_getresuid, &u[0], &u[1], &u[2]));
    CHECK_SYS(syscall(SYS_getresgid, &g[0], &g[1], &g[2]));
    long n = syscall(SYS_getgroups, MAX_GROUPS, groups);
    CHECK(n >= 0, "getgroups: %s", strerror(errno));
    memset(c, 0, sizeof *c);
    for (int i = 0; i < 3; i++) {
        c->uid[i] = u[i];
        c->gid[i] = g[i];
    }
    c->ngroups = (int)n;
    for (int i = 0; i < c->ngroups; i++) c->groups[i] = groups[i];
    qsort(c->groups, (size_t)c->ngroups, sizeof c->groups[0], cmp_unsigned);
}

static int same(const struct creds* a, const struct creds* b) {
    if (memcmp(a->uid, b->uid, sizeof a->uid) || memcmp(a->gid, b->gid, sizeof a->gid)) return 0;
    if (a->ngroups != b->ngroups) return 0;
    return memcmp(a->groups, b->groups, sizeof a->groups[0] * (size_t)a->ngroups) == 0;
}

static void describe(const struct creds* c, char* out, size_t size) {
    int n = snprintf(out, size, "uid %u/%u/%u gid %u/%u/%u groups", c->uid[0], c->uid[1], c->uid[2],
                     c->gid[0], c->gid[1], c->gid[2]);
    for (int i = 0; i < c->ngroups && n > 0 && (size_t)n < size; i++)
        n += snprintf(out + n, size - (size_t)n, " %u", c->groups[i]);
}

static void check_creds(const struct creds* got, const struct creds* want, const char* who) {
    if (same(got, want)) return;
    char g[160], w[160];
    describe(got, g, sizeof g);
    describe(want, w, sizeof w);
    COMPAT_FAIL("%.100s has %.160s, expected %.160s", who, g, w);
}

// Checks the caller's own credentials against `want`.
static void check_self(const struct creds* want, const char* who) {
    struct creds got;
    read_creds(&got);
    check_creds(&got, want, who);
}

// Parses one task's status file; returns 0 if the task is gone.
static int read_task(const char* tid, struct creds* c) {
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/self/task/%.24s/status", tid);
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    memset(c, 0, sizeof *c);
    int seen = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned v[4];
        if (!strncmp(line, "Uid:", 4) &&
            sscanf(line + 4, "%u %u %u %u", &v[0], &v[1], &v[2], &v[3]) == 4) {
            CHECK(v[3] == v[1], "task %s: fsuid %u is not the euid %u", tid, v[3], v[1]);
            memcpy(c->uid, v, sizeof c->uid);
            seen |= 1;
        } else if (!strncmp(line, "Gid:", 4) &&
                   sscanf(line + 4, "%u %u %u %u", &v[0], &v[1], &v[2], &v[3]) == 4) {
            CHECK(v[3] == v[1], "task %s: fsgid %u is not the egid %u", tid, v[3], v[1]);
            memcpy(c->gid, v, sizeof c->gid);
            seen |= 2;
        } else if (!strncmp(line, "Groups:", 7)) {
            char* p = line + 7;
            char* end;
            for (;;) {
                unsigned long g = strtoul(p, &end, 10);
                if (end == p) break;
                CHECK(c->ngroups < MAX_GROUPS, "task %s: too many groups", tid);
                c->groups[c->ngroups++] = (unsigned)g;
                p = end;
            }
            seen |= 4;
        }
    }
    fclose(f);
    CHECK(seen == 7, "task %s: status lacks Uid/Gid/Groups", tid);
    qsort(c->groups, (size_t)c->ngroups, sizeof c->groups[0], cmp_unsigned);
    return 1;
}

// Every kernel thread of the process must have `want` (a thread made meanwhile inherits it).
static void check_tasks(const struct creds* want, const char* step) {
    DIR* d = opendir("/proc/self/task");
    CHECK(d != NULL, "opendir /proc/self/task: %s", strerror(errno));
    int tasks = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        struct creds got;
        if (!read_task(e->d_name, &got)) continue;
        char who[128];
        snprintf(who, sizeof who, "after %.60s, task %.24s", step, e->d_name);
        check_creds(&got, want, who);
        tasks++;
    }
    closedir(d);
    CHECK(tasks >= 1, "after %s: no tasks", step);
}

static void report(void) {
    pthread_mutex_lock(&m);
    reports++;
    pthread_cond_signal(&done);
    pthread_mutex_unlock(&m);
}

static struct creds expected_now(void) {
    pthread_mutex_lock(&m);
    struct creds c = expected;
    pthread_mutex_unlock(&m);
    return c;
}

// Computes without calls between rounds (yielding now and then, so that it never holds a core for
// good), checking its credentials when a round is posted.
static void* computing(void* arg) {
    (void)arg;
    unsigned long x = 1;
    int seen = 0;
    for (;;) {
        for (int i = 0; i < 200000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
        const int r = __atomic_load_n(&posted_round, __ATOMIC_ACQUIRE);
        if (r < 0) break;
        if (r != seen) {
            struct creds want = expected_now();
            check_self(&want, "computing thread");
            seen = r;
            report();
        }
        sched_yield();
    }
    return NULL;
}

static void* parked(void* arg) {
    (void)arg;
    int seen = 0;
    pthread_mutex_lock(&m);
    for (;;) {
        while (round_no == seen && !stop) pthread_cond_wait(&wake, &m);
        if (stop) break;
        seen = round_no;
        struct creds want = expected;
        pthread_mutex_unlock(&m);
        check_self(&want, "thread parked in a condvar");
        pthread_mutex_lock(&m);
        reports++;
        pthread_cond_signal(&done);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static void* reader(void* arg) {
    (void)arg;
    char b;
    for (;;) {
        ssize_t n = read(pipefd[0], &b, 1);
        if (n == 0) break;  // end of the test
        CHECK(n == 1, "read: %s", n < 0 ? strerror(errno) : "short");
        struct creds want = expected_now();
        check_self(&want, "thread blocked in read");
        report();
    }
    return NULL;
}

typedef int (*change_fn)(void);

static void* change_on_thread(void* arg) {
    return (void*)(intptr_t)((change_fn)arg)();
}

// One step: make the change (on main or on a new thread), check main, every kernel thread and every
// worker against `want`.
static void step(const char* what, change_fn change, int on_thread, const struct creds* want) {
    pthread_mutex_lock(&m);
    expected = *want;
    pthread_mutex_unlock(&m);
    errno = 0;
    int rc;
    if (on_thread) {
        pthread_t t;
        CHECK_RC(pthread_create(&t, NULL, change_on_thread, (void*)change), 0);
        rc = (int)(intptr_t)compat_join(t);
    } else {
        rc = change();
    }
    CHECK(rc == 0, "%s failed: %s", what, strerror(errno));
    check_self(want, "main");
    check_tasks(want, what);
    pthread_mutex_lock(&m);
    reports = 0;
    round_no++;
    __atomic_store_n(&posted_round, round_no, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&m);
    CHECK(write(pipefd[1], "x", 1) == 1, "write");
    struct timespec deadline = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    pthread_mutex_lock(&m);
    while (reports < WORKERS) {
        int e = pthread_cond_timedwait(&done, &m, &deadline);
        CHECK(e == 0 || e == ETIMEDOUT, "cond_timedwait: %s", strerror(e));
        CHECK(e == 0 || reports >= WORKERS, "after %s: only %d of %d threads checked", what,
              reports, WORKERS);
    }
    pthread_mutex_unlock(&m);
}

static void set_uid(struct creds* c, unsigned r, unsigned e, unsigned s) {
    c->uid[0] = r, c->uid[1] = e, c->uid[2] = s;
}
static void set_gid(struct creds* c, unsigned r, unsigned e, unsigned s) {
    c->gid[0] = r, c->gid[1] = e, c->gid[2] = s;
}

static int do_setgroups(void) {
    const gid_t g[] = {91011, 1234, 5678};
    return setgroups(3, g);
}
static int do_setresgid(void) {
    return setresgid(4321, 4322, 0);
}
static int do_setregid(void) {
    return setregid((gid_t)-1, 4323);
}
static int do_setgid(void) {
    return setgid(4330);
}
static int do_setegid(void) {
    return setegid(4331);
}
static int do_setresuid(void) {
    return setresuid(0, 65534, 0);
}
static int do_seteuid_root(void) {
    return seteuid(0);
}
static int do_setreuid(void) {
    return setreuid((uid_t)-1, 65533);
}
static int do_setreuid_root(void) {
    return setreuid((uid_t)-1, 0);
}
static int do_setuid_root(void) {
    return setuid(0);
}
static int do_setresgid_root(void) {
    return setresgid(0, 0, 0);
}
static struct creds original;
static int do_restore_groups(void) {
    gid_t g[MAX_GROUPS];
    for (int i = 0; i < original.ngroups; i++) g[i] = original.groups[i];
    return setgroups((size_t)original.ngroups, g);
}

// --- The forked child: its own threads (one parked, one computing) see it drop root for good.
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cc = PTHREAD_COND_INITIALIZER;
static int child_go;  // guarded by cm; atomically read by the computing thread
static struct creds child_want;

static void* child_parked(void* arg) {
    (void)arg;
    pthread_mutex_lock(&cm);
    while (!child_go) pthread_cond_wait(&cc, &cm);
    pthread_mutex_unlock(&cm);
    check_self(&child_want, "child's parked thread");
    return NULL;
}

static void* child_computing(void* arg) {
    (void)arg;
    unsigned long x = 3;
    while (!__atomic_load_n(&child_go, __ATOMIC_ACQUIRE)) {
        for (int i = 0; i < 200000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
        sched_yield();
    }
    check_self(&child_want, "child's computing thread");
    return NULL;
}

// The drop itself: setgroups, setgid and setuid (mode 0, 1), or setregid and setreuid (mode 2).
static int drop_for_good(int mode) {
    const gid_t g[] = {4444};
    if (setgroups(1, g) != 0) return -1;
    if (mode == 2) return setregid(4444, 4444) != 0 ? -1 : setreuid(65534, 65534);
    if (setgid(4444) != 0) return -1;
    return setuid(65534);
}

static void* drop_on_thread(void* arg) {
    (void)arg;
    return (void*)(intptr_t)drop_for_good(2);
}

// mode 0: main drops with the threads running; 1: main drops before making them; 2: a thread made
// for it drops (setregid, setreuid) with the others running.
static int child_main(int mode) {
    child_want = original;
    set_uid(&child_want, 65534, 65534, 65534);
    set_gid(&child_want, 4444, 4444, 4444);
    child_want.ngroups = 1;
    child_want.groups[0] = 4444;
    if (mode == 1) {
        CHECK_SYS(drop_for_good(mode));
        check_tasks(&child_want, "the child's drop before its threads");
    }
    pthread_t a = compat_spawn(child_parked, NULL);
    pthread_t b = compat_spawn(child_computing, NULL);
    if (mode == 0) CHECK_SYS(drop_for_good(mode));
    if (mode == 2) {
        pthread_t t = compat_spawn(drop_on_thread, NULL);
        CHECK((intptr_t)compat_join(t) == 0, "drop on a thread failed");
    }
    check_self(&child_want, "child's main");
    check_tasks(&child_want, "the child's drop");
    CHECK_ERRNO(setuid(0), EPERM);
    CHECK_ERRNO(seteuid(0), EPERM);
    pthread_mutex_lock(&cm);
    __atomic_store_n(&child_go, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&cc);
    pthread_mutex_unlock(&cm);
    compat_join(a);
    compat_join(b);
    check_self(&child_want, "child's main at the end");
    check_tasks(&child_want, "the child's threads ended");
    return 0;
}

int main(void) {
    compat_start("setxid");
    if (geteuid() != 0) {
        printf("SKIP setxid: needs root\n");
        return 77;
    }
    read_creds(&original);
    CHECK(original.uid[0] == 0 && original.uid[2] == 0, "needs real and saved uid 0");
    CHECK_SYS(pipe(pipefd));
    pthread_t t[WORKERS];
    t[0] = compat_spawn(computing, NULL);
    t[1] = compat_spawn(parked, NULL);
    t[2] = compat_spawn(parked, NULL);
    t[3] = compat_spawn(reader, NULL);

    struct creds c = original;
    c.ngroups = 3;
    c.groups[0] = 1234, c.groups[1] = 5678, c.groups[2] = 91011;
    step("setgroups", do_setgroups, 0, &c);
    set_gid(&c, 4321, 4322, 0);
    step("setresgid", do_setresgid, 0, &c);
    set_gid(&c, 4321, 4323, 4323);  // egid != rgid: the saved gid follows the egid
    step("setregid", do_setregid, 0, &c);
    set_gid(&c, 4330, 4330, 4330);  // root: all three
    step("setgid", do_setgid, 0, &c);
    set_gid(&c, 4330, 4331, 4330);
    step("setegid", do_setegid, 0, &c);
    set_uid(&c, 0, 65534, 0);
    step("setresuid on another thread", do_setresuid, 1, &c);
    set_uid(&c, 0, 0, 0);
    step("seteuid", do_seteuid_root, 0, &c);
    set_uid(&c, 0, 65533, 65533);
    step("setreuid", do_setreuid, 1, &c);
    set_uid(&c, 0, 0, 65533);  // euid == ruid: the saved uid stays
    step("setreuid back", do_setreuid_root, 0, &c);
    set_uid(&c, 0, 0, 0);  // root: all three
    step("setuid", do_setuid_root, 0, &c);
    set_gid(&c, original.gid[0], original.gid[1], original.gid[2]);
    CHECK(original.gid[0] == 0 && original.gid[1] == 0 && original.gid[2] == 0,
          "expected gid 0/0/0 at start");
    step("setresgid back", do_setresgid_root, 0, &c);
    step("setgroups back", do_restore_groups, 0, &original);

    for (int mode = 0; mode < 3; mode++) {
        fflush(stdout);
        pid_t pid = fork();
        CHECK_SYS(pid);
        if (pid == 0) _exit(child_main(mode));
        int status;
        CHECK_SYS(waitpid(pid, &status, 0));
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status %#x", mode, status);
        check_self(&original, "main after the child");
    }

    pthread_mutex_lock(&m);
    stop = 1;
    __atomic_store_n(&posted_round, -1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&m);
    close(pipefd[1]);
    for (int i = 0; i < WORKERS; i++) compat_join(t[i]);
    close(pipefd[0]);
    return compat_ok();
}
