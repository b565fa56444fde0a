// The exec family and posix_spawn on a user thread: a new program starts with the signal mask of
// the thread that started it (execve(2); posix_spawn(3) without POSIX_SPAWN_SETSIGMASK). The
// thread's mask is virtual (signals.h) and the kernel passes on the carrier's real one, which
// blocks nothing the program asked for: a child would lose every signal its parent blocked. So:
// - execve, execv, execvp, execvpe, execl, execlp, execle, fexecve, execveat: the carrier's real
//   mask becomes the thread's virtual one for the call (ExecMask); a call that fails gives it back.
//   While it lasts, signals the thread blocks are blocked on the carrier too, which changes
//   nothing for the program: they would wait in the virtual pending sets anyway;
// - posix_spawn, posix_spawnp: without POSIX_SPAWN_SETSIGMASK in the attributes, a copy of them
//   with the flag and the thread's mask (glibc's child sets it before it execs).
// - system(): glibc's spawns through its internal posix_spawn, with the carrier's real mask, and
//   then blocks the carrier in an internal waitpid for as long as the command runs. So it is
//   system() as POSIX and glibc define it, made of the interposed calls: SIGINT and SIGQUIT
//   ignored and SIGCHLD blocked in the caller while the command runs (the dispositions shared by
//   concurrent calls: the first saves them, the last puts them back), /bin/sh -c -- command
//   spawned with the caller's mask and those two signals at their defaults unless they were
//   ignored, waited for at user level; a cancelled caller kills the command and reaps it;
// - popen(): glibc's spawns through its internal posix_spawn too, but returns once the child
//   exists: the carrier's real mask is the thread's for the call (ExecMask, in stdio_locks.cc's
//   popen).
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "arbrt/embed/spin_lock.h"
#include "libc/real_libc.h"
#include "libc/shim.h"
#include "process/exec.h"
#include "signals/signals.h"

namespace arbrun {
namespace {

// The arguments of an execl-style call after `first`, up to and including the terminating null;
// for execle, *envp receives the pointer after the null.
std::vector<char*> collectArguments(const char* first, va_list ap, char*** envp) {
    std::vector<char*> argv{const_cast<char*>(first)};
    while (argv.back() != nullptr) argv.push_back(va_arg(ap, char*));
    if (envp) *envp = va_arg(ap, char**);
    return argv;
}

// posix_spawn's attributes with the calling user thread's mask, unless they set one already;
// `scratch` holds the copy.
const posix_spawnattr_t* withThreadMask(const posix_spawnattr_t* attr, posix_spawnattr_t* scratch) {
    if (!onUserThread()) return attr;
    short flags = 0;
    if (attr) {
        if (posix_spawnattr_getflags(attr, &flags) != 0 || (flags & POSIX_SPAWN_SETSIGMASK))
            return attr;
        *scratch = *attr;  // glibc's attributes are a plain struct, with no pointers
    } else {
        posix_spawnattr_init(scratch);
    }
    sigset_t mask;
    sigemptyset(&mask);
    const uint64_t bits = currentSignalMask();
    for (int sig = 1; sig <= 64; ++sig) {
        if (bits & (uint64_t{1} << (sig - 1))) sigaddset(&mask, sig);
    }
    posix_spawnattr_setsigmask(scratch, &mask);
    posix_spawnattr_setflags(scratch, short(flags | POSIX_SPAWN_SETSIGMASK));
    return scratch;
}

// system()'s shared dispositions (see the top): a count of the calls in progress and what the
// first one replaced. Under gSystemLock, which is held only around those steps.
arbrt::embed::SpinLock gSystemLock;
int gSystemCalls = 0;
struct sigaction gSavedInt, gSavedQuit;

// One system() call's changes to the calling thread and process, undone by the destructor, which
// also runs when cancellation unwinds the caller out of the wait: the command is then killed and
// reaped first, as glibc does.
class ShellCommand {
  public:
    ShellCommand() {
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        {
            std::lock_guard<arbrt::embed::SpinLock> lock(gSystemLock);
            if (gSystemCalls++ == 0) {
                sigaction(SIGINT, &ignore, &gSavedInt);
                sigaction(SIGQUIT, &ignore, &gSavedQuit);
            }
            intIgnored_ = gSavedInt.sa_handler == SIG_IGN;
            quitIgnored_ = gSavedQuit.sa_handler == SIG_IGN;
        }
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        pthread_sigmask(SIG_BLOCK, &chld, &saved_);
    }

    ~ShellCommand() {
        if (child_ > 0) {  // unwinding: the caller was cancelled while it waited
            int state;
            pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
            kill(child_, SIGKILL);
            int status;
            while (waitpid(child_, &status, 0) < 0 && errno == EINTR) {
            }
            pthread_setcancelstate(state, nullptr);
        }
        {
            std::lock_guard<arbrt::embed::SpinLock> lock(gSystemLock);
            if (--gSystemCalls == 0) {
                sigaction(SIGINT, &gSavedInt, nullptr);
                sigaction(SIGQUIT, &gSavedQuit, nullptr);
            }
        }
        pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
    }

    ShellCommand(const ShellCommand&) = delete;
    ShellCommand& operator=(const ShellCommand&) = delete;

    // Spawns the shell and waits for it: its wait status, 127 << 8 if it could not be spawned
    // (errno then says why), -1 if the wait failed.
    int run(const char* command) {
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t defaults;
        sigemptyset(&defaults);
        if (!intIgnored_) sigaddset(&defaults, SIGINT);
        if (!quitIgnored_) sigaddset(&defaults, SIGQUIT);
        posix_spawnattr_setsigdefault(&attr, &defaults);
        posix_spawnattr_setsigmask(&attr, &saved_);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
        char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>("--"),
                        const_cast<char*>(command), nullptr};
        pid_t pid;
        const int err = ARBRUN_REAL(posix_spawn)(&pid, "/bin/sh", nullptr, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
        if (err != 0) {
            errno = err;
            return 127 << 8;
        }
        child_ = pid;
        int status;
        while (waitpid(pid, &status, 0) < 0) {  // a cancellation point: the destructor reaps
            if (errno != EINTR) {
                status = -1;
                break;
            }
        }
        child_ = 0;
        return status;
    }

  private:
    sigset_t saved_;
    pid_t child_ = 0;
    bool intIgnored_ = false, quitIgnored_ = false;
};

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT int system(const char* command) {
    if (!onUserThread()) return ARBRUN_REAL(system)(command);
    if (!command) {  // is a shell available? glibc asks one to exit
        ShellCommand probe;
        return probe.run("exit 0") == 0;
    }
    ShellCommand shell;
    return shell.run(command);
}

ARBRUN_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
    const ExecMask mask;
    return ARBRUN_REAL(execve)(path, argv, envp);
}

ARBRUN_EXPORT int execv(const char* path, char* const argv[]) {
    const ExecMask mask;
    return ARBRUN_REAL(execv)(path, argv);
}

ARBRUN_EXPORT int execvp(const char* file, char* const argv[]) {
    const ExecMask mask;
    return ARBRUN_REAL(execvp)(file, argv);
}

ARBRUN_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
    const ExecMask mask;
    return ARBRUN_REAL(execvpe)(file, argv, envp);
}

ARBRUN_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
    const ExecMask mask;
    return ARBRUN_REAL(fexecve)(fd, argv, envp);
}

ARBRUN_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                           int flags) {
    const ExecMask mask;
    return ARBRUN_REAL(execveat)(dirfd, path, argv, envp, flags);
}

ARBRUN_EXPORT int execl(const char* path, const char* arg, ...) {
    va_list ap;
    va_start(ap, arg);
    std::vector<char*> argv = collectArguments(arg, ap, nullptr);
    va_end(ap);
    return execv(path, argv.data());
}

ARBRUN_EXPORT int execlp(const char* file, const char* arg, ...) {
    va_list ap;
    va_start(ap, arg);
    std::vector<char*> argv = collectArguments(arg, ap, nullptr);
    va_end(ap);
    return execvp(file, argv.data());
}

ARBRUN_EXPORT int execle(const char* path, const char* arg, ...) {
    va_list ap;
    va_start(ap, arg);
    char** envp = nullptr;
    std::vector<char*> argv = collectArguments(arg, ap, &envp);
    va_end(ap);
    return execve(path, argv.data(), envp);
}

ARBRUN_EXPORT int posix_spawn(pid_t* pid, const char* path,
                              const posix_spawn_file_actions_t* actions,
                              const posix_spawnattr_t* attr, char* const argv[],
                              char* const envp[]) {
    posix_spawnattr_t scratch;
    return ARBRUN_REAL(posix_spawn)(pid, path, actions, withThreadMask(attr, &scratch), argv, envp);
}

ARBRUN_EXPORT int posix_spawnp(pid_t* pid, const char* file,
                               const posix_spawn_file_actions_t* actions,
                               const posix_spawnattr_t* attr, char* const argv[],
                               char* const envp[]) {
    posix_spawnattr_t scratch;
    return ARBRUN_REAL(posix_spawnp)(pid, file, actions, withThreadMask(attr, &scratch), argv,
                                     envp);
}
