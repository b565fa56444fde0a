// setxid_single: the su and runuser pattern: a program that has only its main thread installs a
// signal handler (compat_start's SIGALRM one; under arbrun that is when the library creates its
// signal helper thread, from main()) and then drops from root to nobody with initgroups (whose
// setgroups is glibc's internal one, which no interposed symbol sees), setresgid and setresuid in
// its own process. glibc applies each call to every thread of the process (its SIGSETXID
// broadcast): the calls must return, and every kernel thread of the process must end up nobody's. Needs root: prints a SKIP line and exits 77 otherwise.
#include <dirent.h>
#include <grp.h>

#include "../common/compat.h"

#define NOBODY 65534u

// Whether /proc/self/task/<tid>/status has `line` (e.g. "Uid:\t65534\t...") for every task.
static int every_task_has(const char* line) {
    DIR* dir = opendir("/proc/self/task");
    if (!dir) return 0;
    int ok = 1, tasks = 0;
    struct dirent* e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.') continue;
        char path[300], text[4096];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE* f = fopen(path, "r");
        if (!f) continue;  // a thread that just exited
        const size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = '\0';
        ok &= strstr(text, line) != NULL;
        ++tasks;
    }
    closedir(dir);
    return ok && tasks > 0;
}

int main(void) {
    compat_start("setxid_single");
    if (geteuid() != 0) {
        printf("SKIP setxid_single: needs root\n");
        return 77;
    }
    CHECK(initgroups("nobody", NOBODY) == 0, "initgroups: %s", strerror(errno));
    CHECK(setresgid(NOBODY, NOBODY, NOBODY) == 0, "setresgid: %s", strerror(errno));
    CHECK(setresuid(NOBODY, NOBODY, NOBODY) == 0, "setresuid: %s", strerror(errno));
    CHECK(getuid() == NOBODY && geteuid() == NOBODY && getgid() == NOBODY, "ids not nobody's");
    CHECK(every_task_has("Uid:\t65534\t65534\t65534\t65534"), "a kernel thread kept another uid");
    CHECK(every_task_has("Gid:\t65534\t65534\t65534\t65534"), "a kernel thread kept another gid");
    CHECK(every_task_has("Groups:\t65534"), "a kernel thread kept other groups");
    return compat_ok();
}
