// The public face of the runtime's platform checks; start() uses the same functions.
#include "arbrt/platform.h"

#include <gnu/libc-version.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

#include <cerrno>
#include <cstring>

#include "glibc_layout.h"
#include "libc_text.h"

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

namespace arbrt::detail {
namespace {

struct LibcSearch {
    LibcText* out;
    bool found;
};

bool isLibc(const char* path) {
    const char* base = std::strrchr(path, '/');
    base = base ? base + 1 : path;
    return std::strncmp(base, "libc.so", 7) == 0;
}

// dl_iterate_phdr callback: the executable segment of the object named libc.so*.
int findLibcSegment(dl_phdr_info* info, size_t, void* raw) {
    auto* search = static_cast<LibcSearch*>(raw);
    if (!info->dlpi_name || !isLibc(info->dlpi_name)) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        search->out->begin = info->dlpi_addr + ph.p_vaddr;
        search->out->end = search->out->begin + ph.p_memsz;
        search->found = true;
        return 1;
    }
    return 0;
}

}  // namespace

bool findLibcText(LibcText* out, std::string* why) {
    *out = {};
    LibcSearch search{out, false};
    dl_iterate_phdr(findLibcSegment, &search);
    if (!search.found) {
        *why = "libc.so is not loaded (a static program?)";
        return false;
    }
    // Any `syscall; ret` byte sequence will do: executed from its first byte it is exactly those
    // two instructions, whatever instruction stream it was cut from (glibc's getpid-like wrappers
    // end that way).
    const auto* text = reinterpret_cast<const unsigned char*>(out->begin);
    const size_t size = out->end - out->begin;
    for (size_t i = 0; i + 3 <= size; ++i) {
        if (text[i] == 0x0f && text[i + 1] == 0x05 && text[i + 2] == 0xc3) {
            out->syscallReturn = out->begin + i;
            return true;
        }
    }
    *why = "no `syscall; ret` sequence in libc's text";
    return false;
}

bool kernelHasSyscallDispatch(const LibcText& text, std::string* why) {
    // PR_SET_SYSCALL_USER_DISPATCH (59), PR_SYS_DISPATCH_ON/OFF (1/0): from <sys/prctl.h> on newer
    // glibc; spelled out for older headers.
    constexpr int kSetDispatch = 59;
    if (prctl(kSetDispatch, 1, text.begin, text.end - text.begin, 0) != 0) {
        *why = std::string("the kernel refuses syscall user dispatch (") + std::strerror(errno) +
               "; Linux 5.11+ has it)";
        return false;
    }
    prctl(kSetDispatch, 0, 0, 0, 0);
    return true;
}

}  // namespace arbrt::detail

namespace arbrt {

bool syscallDispatchAvailable(std::string* why) {
    detail::LibcText text;
    return detail::findLibcText(&text, why) && detail::kernelHasSyscallDispatch(text, why);
}

}  // namespace arbrt
