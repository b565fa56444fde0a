// exec_spawn: starting programs from a threaded process — vfork+execve, fork+execve,
// posix_spawn and system() while 4 threads run; exit statuses come back through waitpid
// (`sh -c 'exit N'`); a pipe from the child's stdout is read by another thread; a failing exec
// in a vfork child reports 127 via _exit.
#include <spawn.h>
#include <sys/wait.h>

#include "../common/compat.h"

extern char** environ;
static volatile int stop;

static void* spinner(void* arg) {
    volatile long* x = (volatile long*)arg;
    while (!stop) {
        *x += 1;
        if (*x % 1000 == 0) sched_yield();
    }
    return NULL;
}

static int wait_status(pid_t pid) {
    int status;
    CHECK_SYS(waitpid(pid, &status, 0));
    CHECK(WIFEXITED(status), "child killed (status 0x%x)", status);
    return WEXITSTATUS(status);
}

struct reader_arg {
    int fd;
    char buf[256];
};

static void* reader(void* arg) {
    struct reader_arg* r = (struct reader_arg*)arg;
    size_t n = 0;
    ssize_t k;
    while ((k = read(r->fd, r->buf + n, sizeof r->buf - 1 - n)) > 0) n += (size_t)k;
    r->buf[n] = 0;
    return NULL;
}

int main(void) {
    compat_start("exec_spawn");
    long counters[4] = {0};
    pthread_t t[4];
    for (int i = 0; i < 4; i++) t[i] = compat_spawn(spinner, &counters[i]);
    fflush(stdout);

    for (int k = 0; k < 10; k++) {
        char code[32];
        snprintf(code, sizeof code, "exit %d", k + 3);
        char* argv[] = {(char*)"sh", (char*)"-c", code, NULL};
        pid_t pid = vfork();
        CHECK_SYS(pid);
        if (pid == 0) {
            execve("/bin/sh", argv, environ);
            _exit(127);
        }
        CHECK_EQ(wait_status(pid), k + 3);
        pid = fork();
        CHECK_SYS(pid);
        if (pid == 0) {
            execve("/bin/sh", argv, environ);
            _exit(127);
        }
        CHECK_EQ(wait_status(pid), k + 3);
        CHECK_RC(posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ), 0);
        CHECK_EQ(wait_status(pid), k + 3);
    }
    // Exec failure inside vfork.
    pid_t pid = vfork();
    CHECK_SYS(pid);
    if (pid == 0) {
        char* argv[] = {(char*)"/nonexistent/program", NULL};
        execve(argv[0], argv, environ);
        _exit(127);
    }
    CHECK_EQ(wait_status(pid), 127);

    // system().
    int st = system("exit 7");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7, "system() status 0x%x", st);

    // Child output through a pipe, read by another thread.
    int p[2];
    CHECK_SYS(pipe(p));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    char* argv[] = {(char*)"sh", (char*)"-c", (char*)"echo hello-from-child", NULL};
    CHECK_RC(posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    struct reader_arg ra = {p[0], {0}};
    pthread_t r = compat_spawn(reader, &ra);
    compat_join(r);
    close(p[0]);
    CHECK_EQ(wait_status(pid), 0);
    CHECK(strcmp(ra.buf, "hello-from-child\n") == 0, "child output '%s'", ra.buf);

    stop = 1;
    for (int i = 0; i < 4; i++) compat_join(t[i]);
    return compat_ok();
}
