// fork_child_last_thread: in a fork child, main() calls pthread_exit while another thread still
// runs; the child ends with status 0 once that thread returns, and not before (its output must
// arrive), whichever of the two exits last. 20 children, so both orders occur.
#include <sys/wait.h>
#include <unistd.h>

#include "../common/compat.h"

static int go[2], out[2];

static void* worker(void* arg) {
    (void)arg;
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(3);  // main is about to call pthread_exit
    for (int i = 0; i < 1000; ++i) sched_yield();
    if (write(out[1], "w", 1) != 1) _exit(4);
    return NULL;
}

static void child(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) _exit(2);
    if (write(go[1], "g", 1) != 1) _exit(5);
    pthread_exit(NULL);  // the process lives on until the worker returns
}

int main(void) {
    compat_start("fork_child_last_thread");
    for (int round = 0; round < 20; ++round) {
        CHECK_SYS(pipe(go));
        CHECK_SYS(pipe(out));
        const pid_t pid = fork();
        CHECK(pid >= 0, "fork failed");
        if (pid == 0) child();
        close(go[0]);
        close(go[1]);
        close(out[1]);
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "round %d: the child ended with status %#x, not exit(0) after its last thread", round,
              status);
        char byte = 0;
        CHECK(read(out[0], &byte, 1) == 1 && byte == 'w',
              "round %d: the worker's output was lost (the child exited with main)", round);
        close(out[0]);
    }
    return compat_ok();
}
