// caps_drop: a daemon started as root drops to a user and keeps only the capabilities it needs,
// the way setpriv, libcap-ng's capng_change_id and daemons such as chronyd do it, then starts its
// worker threads. The kernel keeps capabilities, securebits, keep-caps, no_new_privs, seccomp
// filters and the fs ids per thread; a program that sets them while it has one thread expects its
// process to have them, wherever its code runs next and in every thread it makes afterwards. Each
// case runs in a forked child (the test process stays root):
//   keepcaps  prctl(PR_SET_KEEPCAPS), setgroups, setresgid, setresuid, then capset (libc's, with
//   the
//             caller's tid in the header, as libcap-ng passes it) to keep CAP_NET_BIND_SERVICE;
//   ambient   no_new_privs, PR_CAPBSET_DROP, securebits (keep-caps), capset through syscall(),
//             setgid, setuid, PR_CAP_AMBIENT_RAISE through the `syscall` instruction itself;
//   seccomp   an allow-all seccomp filter (with no_new_privs);
//   fsuid     setfsuid and setfsgid.
// After each step every kernel thread's /proc/self/task/*/status must show the expected Uid, Gid,
// Groups, capability sets, NoNewPrivs and Seccomp lines; main then moves around (yields, sleeps)
// checking its own state with capget and prctl and binding a port below 1024; two workers (one
// parked in a condvar, one computing) are made and check the same. Needs root: prints a SKIP line
// and exits 77 otherwise.
#include <dirent.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../common/compat.h"
#include "../common/raw_syscall.h"

extern int capset(void* header, void* data);  // glibc's (its header is libcap's)

#define NOBODY 65534u
#define CAP_BIT(c) (1ull << (c))

// What every kernel thread of the process must show; a field left empty is not checked.
struct want {
    char uid[64], gid[64], groups[128];
    char cap_inh[24], cap_prm[24], cap_eff[24], cap_bnd[24], cap_amb[24];
    char no_new_privs[8], seccomp[8];
    int securebits;  // -1: not checked (not in status: each worker reads it with prctl)
};

static struct want expected;  // written by the test thread before a round; read by workers after
static unsigned long long bounding_at_start;

static void hex(char* out, unsigned long long v) {
    snprintf(out, 24, "%016llx", v);
}

// The value of one "Name:\tvalue" line of a status file, whitespace collapsed to single spaces.
static int status_field(const char* path, const char* name, char* out, size_t size) {
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    const size_t len = strlen(name);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, name, len) != 0 || line[len] != ':') continue;
        size_t n = 0;
        int space = 1;  // drop leading blanks
        for (const char* p = line + len + 1; *p && *p != '\n'; p++) {
            const int blank = *p == ' ' || *p == '\t';
            if (blank && space) continue;
            if (n + 1 < size) out[n++] = blank ? ' ' : *p;
            space = blank;
        }
        while (n > 0 && out[n - 1] == ' ') n--;
        out[n] = 0;
        found = 1;
    }
    fclose(f);
    return found;
}

static void check_field(const char* path, const char* name, const char* want, const char* step) {
    if (!want[0]) return;
    char got[256];
    if (!status_field(path, name, got, sizeof got)) return;  // the task has just exited
    CHECK(strcmp(got, want) == 0, "after %s, %s: %s is '%s', expected '%s'", step, path, name, got,
          want);
}

// Every kernel thread of the process must show `expected`.
static void check_tasks(const char* step) {
    DIR* d = opendir("/proc/self/task");
    CHECK(d != NULL, "opendir /proc/self/task: %s", strerror(errno));
    int tasks = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[96];
        snprintf(path, sizeof path, "/proc/self/task/%.24s/status", e->d_name);
        check_field(path, "Uid", expected.uid, step);
        check_field(path, "Gid", expected.gid, step);
        check_field(path, "Groups", expected.groups, step);
        check_field(path, "CapInh", expected.cap_inh, step);
        check_field(path, "CapPrm", expected.cap_prm, step);
        check_field(path, "CapEff", expected.cap_eff, step);
        check_field(path, "CapBnd", expected.cap_bnd, step);
        check_field(path, "CapAmb", expected.cap_amb, step);
        check_field(path, "NoNewPrivs", expected.no_new_privs, step);
        check_field(path, "Seccomp", expected.seccomp, step);
        tasks++;
    }
    closedir(d);
    CHECK(tasks >= 1, "after %s: no tasks", step);
}

// The calling thread's own capability sets (capget on itself) and prctl-visible state.
static void check_self(const char* who) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    CHECK_SYS(syscall(SYS_capget, &h, d));
    char v[24];
    hex(v, (unsigned long long)d[1].effective << 32 | d[0].effective);
    CHECK(!expected.cap_eff[0] || !strcmp(v, expected.cap_eff), "%s: effective %s, expected %s",
          who, v, expected.cap_eff);
    hex(v, (unsigned long long)d[1].permitted << 32 | d[0].permitted);
    CHECK(!expected.cap_prm[0] || !strcmp(v, expected.cap_prm), "%s: permitted %s, expected %s",
          who, v, expected.cap_prm);
    if (expected.no_new_privs[0]) {
        const int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
        CHECK(nnp == atoi(expected.no_new_privs), "%s: no_new_privs %d, expected %s", who, nnp,
              expected.no_new_privs);
    }
    if (expected.securebits >= 0) {
        const int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        CHECK(bits == expected.securebits, "%s: securebits %#x, expected %#x", who, bits,
              expected.securebits);
    }
}

// --- Workers: one parked in a condvar, one computing; each checks itself when a round is posted.
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static int round_no, reports, stop;  // guarded by m
static int posted;                   // atomic mirror of round_no (-1: stop) for the computing one
static volatile unsigned long sink;
static int (*worker_task)(void);  // guarded by m: run once by the parked worker in a round

static void report(void) {
    pthread_mutex_lock(&m);
    reports++;
    pthread_cond_signal(&done);
    pthread_mutex_unlock(&m);
}

static void* parked(void* arg) {
    (void)arg;
    int seen = 0;
    pthread_mutex_lock(&m);
    for (;;) {
        while (round_no == seen && !stop) pthread_cond_wait(&wake, &m);
        if (stop) break;
        seen = round_no;
        int (*task)(void) = worker_task;
        worker_task = NULL;
        pthread_mutex_unlock(&m);
        if (task) CHECK(task() == 0, "task on the parked thread failed: %s", strerror(errno));
        check_self("thread parked in a condvar");
        pthread_mutex_lock(&m);
        reports++;
        pthread_cond_signal(&done);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static void* computing(void* arg) {
    (void)arg;
    unsigned long x = 1;
    int seen = 0;
    for (;;) {
        for (int i = 0; i < 100000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
        const int r = __atomic_load_n(&posted, __ATOMIC_ACQUIRE);
        if (r < 0) break;
        if (r != seen) {
            seen = r;
            check_self("computing thread");
            report();
        }
        sched_yield();
    }
    return NULL;
}

enum { WORKERS = 2 };
static pthread_t workers[WORKERS];

static void start_workers(void) {
    workers[0] = compat_spawn(parked, NULL);
    workers[1] = compat_spawn(computing, NULL);
}

// Posts a round (running `task` on the parked worker first, if any) and waits for both reports.
static void round_trip(int (*task)(void)) {
    pthread_mutex_lock(&m);
    reports = 0;
    worker_task = task;
    round_no++;
    if (!task) __atomic_store_n(&posted, round_no, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&wake);
    if (task) {  // the computing thread checks only once the task has run
        while (reports < 1) pthread_cond_wait(&done, &m);
        __atomic_store_n(&posted, round_no, __ATOMIC_RELEASE);
    }
    struct timespec deadline = compat_deadline_ms(CLOCK_REALTIME, COMPAT_LONG_MS);
    while (reports < WORKERS) {
        int e = pthread_cond_timedwait(&done, &m, &deadline);
        CHECK(e == 0 || e == ETIMEDOUT, "cond_timedwait: %s", strerror(e));
        CHECK(e == 0 || reports >= WORKERS, "only %d of %d threads checked", reports, WORKERS);
    }
    pthread_mutex_unlock(&m);
}

static void stop_workers(void) {
    pthread_mutex_lock(&m);
    stop = 1;
    __atomic_store_n(&posted, -1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < WORKERS; i++) compat_join(workers[i]);
}

// A port below 1024 needs CAP_NET_BIND_SERVICE: EACCES without it (checked before the address is
// looked up, so a port in use says EADDRINUSE instead, which is fine here).
static int bind_privileged(void) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(719)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = bind(s, (struct sockaddr*)&a, sizeof a);
    int err = errno;
    close(s);
    if (rc != 0 && err == EADDRINUSE) rc = 0;
    errno = err;
    return rc;
}

static void set_ids(unsigned uid, unsigned gid, const char* groups) {
    snprintf(expected.uid, sizeof expected.uid, "%u %u %u %u", uid, uid, uid, uid);
    snprintf(expected.gid, sizeof expected.gid, "%u %u %u %u", gid, gid, gid, gid);
    snprintf(expected.groups, sizeof expected.groups, "%s", groups);
}

// capset of the calling thread (header pid: the caller's tid, as libcap-ng passes it).
static int set_caps(unsigned long long eff, unsigned long long prm, unsigned long long inh,
                    int through_syscall) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, (int)syscall(SYS_gettid)};
    struct __user_cap_data_struct d[2] = {
        {(unsigned)eff, (unsigned)prm, (unsigned)inh},
        {(unsigned)(eff >> 32), (unsigned)(prm >> 32), (unsigned)(inh >> 32)}};
    if (through_syscall) return (int)syscall(SYS_capset, &h, d);
    return capset(&h, d);
}

// Main keeps its state across yields, sleeps and blocking calls (under arbrun: on whichever
// carrier it runs next), then two workers made now inherit it and check it themselves.
static void move_around_and_make_threads(const char* step, int (*task)(void)) {
    for (int i = 0; i < 20; i++) {
        if (i % 2)
            sched_yield();
        else
            usleep(200);
        check_self("main");
        if (task) CHECK(task() == 0, "main after %s: %s", step, strerror(errno));
    }
    start_workers();
    round_trip(NULL);
    if (task) round_trip(task);
    check_tasks(step);
    stop_workers();
}

static int case_keepcaps(void) {
    const unsigned long long keep = CAP_BIT(CAP_NET_BIND_SERVICE);
    CHECK_SYS(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
    CHECK_SYS(setgroups(0, NULL));
    CHECK_SYS(setresgid(NOBODY, NOBODY, NOBODY));
    CHECK_SYS(setresuid(NOBODY, NOBODY, NOBODY));
    set_ids(NOBODY, NOBODY, "");
    hex(expected.cap_eff, 0);  // keep-caps keeps the permitted set only
    hex(expected.cap_prm, bounding_at_start);
    check_tasks("setresuid with keep-caps");
    check_self("main");
    CHECK_SYS(set_caps(keep, keep, 0, 0));
    hex(expected.cap_eff, keep);
    hex(expected.cap_prm, keep);
    hex(expected.cap_inh, 0);
    check_tasks("capset");
    CHECK_ERRNO(setresuid(0, 0, 0), EPERM);
    move_around_and_make_threads("capset", bind_privileged);
    return 0;
}

static int case_ambient(void) {
    const unsigned long long keep = CAP_BIT(CAP_NET_BIND_SERVICE);
    const unsigned long long bnd = bounding_at_start & ~CAP_BIT(CAP_SYS_ADMIN);
    CHECK_SYS(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    CHECK_SYS(prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0));
    CHECK_SYS(prctl(PR_SET_SECUREBITS, 1 << 4 /* SECBIT_KEEP_CAPS */, 0, 0, 0));
    CHECK_SYS(set_caps(keep | CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID),
                       keep | CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID), keep, 1));
    CHECK_SYS(setgroups(0, NULL));
    CHECK_SYS(setgid(NOBODY));
    CHECK_SYS(setuid(NOBODY));
    // After the uid change, which clears the ambient set.
    const long r =
        raw6(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0, 0);
    CHECK(r == 0, "raw prctl(PR_CAP_AMBIENT_RAISE): %s", strerror((int)-r));
    set_ids(NOBODY, NOBODY, "");
    hex(expected.cap_amb, keep);
    hex(expected.cap_inh, keep);
    hex(expected.cap_prm, keep | CAP_BIT(CAP_SETUID) | CAP_BIT(CAP_SETGID));
    hex(expected.cap_eff, 0);  // a uid change to non-root clears the effective set
    hex(expected.cap_bnd, bnd);
    strcpy(expected.no_new_privs, "1");
    expected.securebits = 1 << 4;
    check_tasks("setuid with ambient capabilities");
    move_around_and_make_threads("setuid with ambient capabilities", NULL);
    return 0;
}

// An allow-all filter.
static int install_filter(void) {
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {1, &allow};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static int case_seccomp(void) {
    CHECK_SYS(install_filter());
    strcpy(expected.no_new_privs, "1");
    strcpy(expected.seccomp, "2");
    check_tasks("a seccomp filter");
    move_around_and_make_threads("a seccomp filter", NULL);
    return 0;
}

static int case_fsuid(void) {
    setfsgid(4242);
    setfsuid(4343);
    CHECK_EQ(setfsuid((uid_t)-1), 4343);
    CHECK_EQ(setfsgid((gid_t)-1), 4242);
    strcpy(expected.uid, "0 0 0 4343");
    strcpy(expected.gid, "0 0 0 4242");
    check_tasks("setfsuid");
    move_around_and_make_threads("setfsuid", NULL);
    return 0;
}

static void run_case(const char* name, int (*fn)(void)) {
    fflush(stdout);
    pid_t pid = fork();
    CHECK_SYS(pid);
    if (pid == 0) {
        compat_name_ = name;
        memset(&expected, 0, sizeof expected);
        expected.securebits = -1;
        _exit(fn());
    }
    int status;
    CHECK_SYS(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "case %s: child status %#x", name, status);
}

int main(void) {
    compat_start("caps_drop");
    if (geteuid() != 0) {
        printf("SKIP caps_drop: needs root\n");
        return 77;
    }
    char bnd[24];
    CHECK(status_field("/proc/self/status", "CapBnd", bnd, sizeof bnd), "no CapBnd in status");
    bounding_at_start = strtoull(bnd, NULL, 16);
    CHECK(bounding_at_start & CAP_BIT(CAP_SYS_ADMIN) && bounding_at_start & CAP_BIT(CAP_SETUID),
          "needs CAP_SYS_ADMIN and CAP_SETUID in the bounding set");
    run_case("caps_drop keepcaps", case_keepcaps);
    run_case("caps_drop ambient", case_ambient);
    run_case("caps_drop seccomp", case_seccomp);
    run_case("caps_drop fsuid", case_fsuid);
    return compat_ok();
}
