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
// Not covered: system() and popen(), which spawn through glibc's internal functions with the
// carrier's real mask.
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "libc/real_libc.h"
#include "libc/shim.h"
#include "signals/signals.h"

namespace arbrun {
namespace {

// The carrier's real mask is the calling user thread's virtual one while this lives; nothing on a
// kernel thread (whose mask is real already).
class ExecMask {
  public:
    ExecMask() : active_(onUserThread()) {
        if (active_) saved_ = swapRealMaskForExec(currentSignalMask());
    }
    ~ExecMask() {
        if (!active_) return;
        const int savedErrno = errno;  // the failed exec's
        swapRealMaskForExec(saved_);
        errno = savedErrno;
    }
    ExecMask(const ExecMask&) = delete;
    ExecMask& operator=(const ExecMask&) = delete;

  private:
    bool active_;
    uint64_t saved_ = 0;
};

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

}  // namespace
}  // namespace arbrun

using namespace arbrun;

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
