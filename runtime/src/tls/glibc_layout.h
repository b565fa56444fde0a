// The glibc 2.36 x86-64 layout knowledge (struct pthread / tcbhead_t offsets) and its check against
// the running glibc. Apart from GlibcTcb, which uses it, so the check can be linked alone (the
// launcher's `arbrun doctor` runs it without the rest of the runtime).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace arbrt::detail {

// Offsets checked against _thread_db_* by checkGlibcLayout().
inline constexpr size_t kSizeofPthread = 2368;
inline constexpr size_t kTcbOffset = 0x0, kDtvOffset = 0x8, kSelfOffset = 0x10,
                        kMultipleThreads = 0x18;
inline constexpr size_t kSysinfo = 0x20, kStackGuard = 0x28, kPointerGuard = 0x30, kFeature1 = 0x48;
inline constexpr size_t kList = 704, kTid = 720, kRobustHead = 736, kSpecific1stBlock = 784,
                        kSpecific = 1296;
inline constexpr size_t kSpecificUsed = 1552, kStackBlock = 1680, kStackBlockSize = 1688,
                        kGuardSize = 1696;
inline constexpr size_t kSpecificBlocks = 32, kKeyDataSize = 16;

// A TCB header word glibc 2.36 leaves unused (tcbhead_t::__glibc_unused2, after the runtime's two
// slots in arch.h; checked zero at start-up): the generation of the static TLS list this TCB's
// static block holds.
inline constexpr size_t kTlsGenerationSlot = 144;

// A field of a TCB / struct pthread at `offset`.
template <typename T>
T& field(void* tcb, size_t offset) {
    return *reinterpret_cast<T*>(static_cast<char*>(tcb) + offset);
}

// The glibc version, the libthread_db descriptors and the calling thread's own TCB agree with the
// offsets above, and the TCB words the runtime uses are free. False with *why set otherwise.
// Reads only; call from a thread whose TCB glibc allocated.
bool checkGlibcLayout(std::string* why);

}  // namespace arbrt::detail
