// Forks N children (default 50) one after another; each exits at once and is waited for. Exit
// status 0 when every child exited with 0. compare.sh times the whole process natively and under
// arbrun and subtracts the start-up rows: what is left is the cost of N fork+exit+wait.
// With "shell" as the second argument it does what a shell does for each command: a SIGCHLD
// handler is installed first, and each child execs /bin/true.
//
// Usage: fork_loop [N [shell]]
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void onChild(int sig) {
    (void)sig;
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 50;
    const int shell = argc > 2 && strcmp(argv[2], "shell") == 0;
    if (n < 1 || (argc > 2 && !shell)) return 2;
    if (shell) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = onChild;
        sa.sa_flags = SA_RESTART;
        if (sigaction(SIGCHLD, &sa, NULL) != 0) return 1;
    }
    for (int i = 0; i < n; ++i) {
        const pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            if (shell) execl("/bin/true", "true", (char*)NULL);
            _exit(shell ? 127 : 0);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    return 0;
}
