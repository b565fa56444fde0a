// The public face of the runtime's platform checks; start() uses the same functions.
#include "arbrt/platform.h"

#include <gnu/libc-version.h>
#include <sys/auxv.h>

#include "glibc_layout.h"

namespace arbrt {

// HWCAP2_FSGSBASE (bit 1): the kernel sets it only when the CPU has the instructions and it has
// enabled them (Linux 5.9+).
bool fsgsbaseAvailable() {
    return (getauxval(AT_HWCAP2) & 2) != 0;
}

// gnu_get_libc_version() behind the runtime's header, so callers need no glibc-specific include.
std::string glibcVersion() {
    return gnu_get_libc_version();
}

// Exactly the check GlibcTcb::probe() starts with, minus resolving and recording anything.
bool glibcLayoutSupported(std::string* why) {
    return detail::checkGlibcLayout(why);
}

}  // namespace arbrt
