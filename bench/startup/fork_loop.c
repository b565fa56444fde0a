// Forks N children (default 50) one after another; each exits at once and is waited for. Exit
// status 0 when every child exited with 0. compare.sh times the whole process natively and under
// arbrun and subtracts the start-up rows: what is left is the cost of N fork+exit+wait.
//
// Usage: fork_loop [N]
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 50;
    if (n < 1) return 2;
    for (int i = 0; i < n; ++i) {
        const pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) _exit(0);
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
    }
    return 0;
}
