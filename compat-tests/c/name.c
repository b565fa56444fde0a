// name: pthread_setname_np/pthread_getname_np on self, on another thread and on main; names of
// exactly 15 characters work, 16 or more are ERANGE (name unchanged), and a getname buffer
// shorter than the name is ERANGE. A new thread starts with its creator's name (the kernel copies
// it at clone), and prctl(PR_SET_NAME/PR_GET_NAME) names the calling thread like setname on self.
#include <sys/prctl.h>

#include "../common/compat.h"

static pthread_barrier_t b;

// Sets its own name, then lets main inspect and rename it.
static void* named(void* arg) {
    CHECK_RC(pthread_setname_np(pthread_self(), (const char*)arg), 0);
    char buf[16];
    CHECK_RC(pthread_getname_np(pthread_self(), buf, sizeof buf), 0);
    CHECK(strcmp(buf, (const char*)arg) == 0, "own name is '%s'", buf);
    pthread_barrier_wait(&b);  // main checks and renames us
    pthread_barrier_wait(&b);
    CHECK_RC(pthread_getname_np(pthread_self(), buf, sizeof buf), 0);
    CHECK(strcmp(buf, "renamed") == 0, "name after rename by main is '%s'", buf);
    return NULL;
}

// Hands back a heap copy of the calling thread's name, then renames itself through prctl (the
// kernel truncates to 15 characters) and checks both views agree.
static void* report_name(void* arg) {
    (void)arg;
    char* name = (char*)malloc(16);
    CHECK_RC(pthread_getname_np(pthread_self(), name, 16), 0);
    char viaPrctl[16];
    CHECK_SYS(prctl(PR_GET_NAME, viaPrctl, 0, 0, 0));
    CHECK(strcmp(viaPrctl, name) == 0, "prctl name '%s' != getname '%s'", viaPrctl, name);
    CHECK_SYS(prctl(PR_SET_NAME, "prctl-name-longer-than-15", 0, 0, 0));
    char buf[16];
    CHECK_RC(pthread_getname_np(pthread_self(), buf, sizeof buf), 0);
    CHECK(strcmp(buf, "prctl-name-long") == 0, "name after prctl: '%s'", buf);
    return name;
}

int main(void) {
    compat_start("name");
    // A thread created before anyone renamed main has main's (the process's) name.
    char mine[16];
    CHECK_RC(pthread_getname_np(pthread_self(), mine, sizeof mine), 0);
    char* first = (char*)compat_join(compat_spawn(report_name, NULL));
    CHECK(strcmp(first, mine) == 0, "new thread named '%s', creator '%s'", first, mine);
    free(first);
    CHECK_RC(pthread_barrier_init(&b, NULL, 2), 0);
    pthread_t t = compat_spawn(named, (void*)"worker-1");
    pthread_barrier_wait(&b);
    char buf[32];
    CHECK_RC(pthread_getname_np(t, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "worker-1") == 0, "worker name seen from main: '%s'", buf);
    CHECK_RC(pthread_setname_np(t, "renamed"), 0);
    CHECK_RC(pthread_getname_np(t, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "renamed") == 0, "after rename: '%s'", buf);
    // Too long (16 chars) for another thread and for self.
    CHECK_RC(pthread_setname_np(t, "0123456789abcdef"), ERANGE);
    CHECK_RC(pthread_getname_np(t, buf, sizeof buf), 0);
    CHECK(strcmp(buf, "renamed") == 0, "name changed by a failed setname: '%s'", buf);
    // Buffer too small for the name.
    char tiny[4];
    CHECK_RC(pthread_getname_np(t, tiny, sizeof tiny), ERANGE);
    pthread_barrier_wait(&b);
    compat_join(t);

    // Main thread: 15 characters fit exactly, 16 do not.
    CHECK_RC(pthread_setname_np(pthread_self(), "0123456789abcde"), 0);
    CHECK_RC(pthread_getname_np(pthread_self(), buf, 16), 0);
    CHECK(strcmp(buf, "0123456789abcde") == 0, "main name '%s'", buf);
    CHECK_RC(pthread_setname_np(pthread_self(), "0123456789abcdef"), ERANGE);
    CHECK_RC(pthread_getname_np(pthread_self(), buf, 15), ERANGE);
    CHECK_RC(pthread_setname_np(pthread_self(), "main"), 0);
    CHECK_RC(pthread_getname_np(pthread_self(), buf, sizeof buf), 0);
    CHECK(strcmp(buf, "main") == 0, "main name '%s'", buf);
    // ... and a thread created now inherits the new name.
    char* inherited = (char*)compat_join(compat_spawn(report_name, NULL));
    CHECK(strcmp(inherited, "main") == 0, "thread created after the rename is '%s'", inherited);
    free(inherited);

    // Many threads with distinct names keep them.
    enum { N = 8 };
    pthread_t ts[N];
    char names[N][16];
    CHECK_RC(pthread_barrier_destroy(&b), 0);
    CHECK_RC(pthread_barrier_init(&b, NULL, N + 1), 0);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "w%d", i);
        ts[i] = compat_spawn(named, names[i]);
    }
    pthread_barrier_wait(&b);
    for (int i = 0; i < N; i++) {
        CHECK_RC(pthread_getname_np(ts[i], buf, sizeof buf), 0);
        CHECK(strcmp(buf, names[i]) == 0, "thread %d name '%s'", i, buf);
        CHECK_RC(pthread_setname_np(ts[i], "renamed"), 0);
    }
    pthread_barrier_wait(&b);
    for (int i = 0; i < N; i++) compat_join(ts[i]);
    return compat_ok();
}
