// Where libc's code is, for syscall user dispatch (syscall_dispatch.h): its executable segment (the
// one range a carrier may issue system calls from without trapping) and a `syscall; ret` sequence
// inside it, through which the runtime issues its own raw calls. Pure lookups; no state.
#pragma once

#include <cstdint>
#include <string>

namespace arbrt::detail {

struct LibcText {
    uintptr_t begin = 0;  // the executable PT_LOAD segment of libc.so.6: [begin, end)
    uintptr_t end = 0;
    uintptr_t syscallReturn = 0;  // the address of a `0f 05 c3` (syscall; ret) inside it
};

// Finds libc's executable segment and a `syscall; ret` in it; false with *why when either is
// missing (a static program, an unknown libc).
bool findLibcText(LibcText* out, std::string* why);

// Whether this kernel accepts PR_SET_SYSCALL_USER_DISPATCH for the calling thread (turned on over
// `text` and straight off again); false with *why (the kernel's answer) otherwise.
bool kernelHasSyscallDispatch(const LibcText& text, std::string* why);

}  // namespace arbrt::detail
