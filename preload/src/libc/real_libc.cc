#include "libc/real_libc.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace arbrun {

void* lookupReal(const char* name, const char* version) {
    void* p = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
    if (!p) {
        const char head[] = "arbrun: libc lacks ";
        (void)!write(STDERR_FILENO, head, sizeof head - 1);
        (void)!write(STDERR_FILENO, name, std::strlen(name));
        (void)!write(STDERR_FILENO, "\n", 1);
        std::abort();
    }
    return p;
}

}  // namespace arbrun
