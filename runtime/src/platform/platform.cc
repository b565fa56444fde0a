// The public face of the runtime's platform checks; start() uses the same functions.
#include "arbrt/embed/platform.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

#include <cerrno>
#include <cstring>

#include "tls/glibc_layout.h"
#include "tls/libc_text.h"

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

// How far past getpid's entry a `syscall; ret` is looked for.
constexpr size_t kNearbyBytes = 32;

// Libc's own getpid (not an interposer's), or 0.
uintptr_t libcGetpid() {
    return reinterpret_cast<uintptr_t>(dlvsym(RTLD_DEFAULT, "getpid", "GLIBC_2.2.5"));
}

// The first `syscall; ret` (0f 05 c3) in [begin, begin + size).
bool findSyscallReturn(uintptr_t begin, size_t size, uintptr_t* at) {
    static constexpr unsigned char kSyscallRet[] = {0x0f, 0x05, 0xc3};
    const void* hit = memmem(reinterpret_cast<const void*>(begin), size, kSyscallRet, 3);
    if (!hit) return false;
    *at = reinterpret_cast<uintptr_t>(hit);
    return true;
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
    // two instructions, whatever instruction stream it was cut from. glibc's getpid wrapper is
    // one (`mov $39, %eax; syscall; ret`): looking there first spares a scan of some 400 KiB of
    // libc's text (about 200 us of start-up, most of it page faults); the scan stays the fallback.
    const uintptr_t nearby = libcGetpid();
    if (nearby >= out->begin && nearby + kNearbyBytes <= out->end &&
        findSyscallReturn(nearby, kNearbyBytes, &out->syscallReturn)) {
        return true;
    }
    if (findSyscallReturn(out->begin, out->end - out->begin, &out->syscallReturn)) return true;
    *why = "no `syscall; ret` sequence in libc's text";
    return false;
}

bool kernelHasSyscallDispatch(const LibcText& text, std::string* why) {
    // PR_SET_SYSCALL_USER_DISPATCH (59), PR_SYS_DISPATCH_ON/OFF (1/0): from <sys/prctl.h> on newer
    // glibc; spelled out for older headers.
    constexpr int kSetDispatch = 59;
    // libc's prctl itself, from its text (a call made elsewhere could be trapped where dispatch is
    // on already, as in a fork child): under the preload library the name `prctl` is the program's
    // entry point, which refuses the program's own syscall user dispatch. Without the preload (the
    // launcher's doctor) RTLD_NEXT finds libc's too.
    using Prctl = int (*)(int, unsigned long, unsigned long, unsigned long, unsigned long);
    static const auto libcPrctl = [] {
        void* next = dlsym(RTLD_NEXT, "prctl");
        return next ? reinterpret_cast<Prctl>(next) : reinterpret_cast<Prctl>(&prctl);
    }();
    if (libcPrctl(kSetDispatch, 1, text.begin, text.end - text.begin, 0) != 0) {
        *why = std::string("the kernel refuses syscall user dispatch (") + std::strerror(errno) +
               "; Linux 5.11+ has it)";
        return false;
    }
    libcPrctl(kSetDispatch, 0, 0, 0, 0);
    return true;
}

}  // namespace arbrt::detail

namespace arbrt {

bool syscallDispatchAvailable(std::string* why) {
    detail::LibcText text;
    return detail::findLibcText(&text, why) && detail::kernelHasSyscallDispatch(text, why);
}

}  // namespace arbrt
