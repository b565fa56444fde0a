// interruptedInLibraryAt: which interrupted contexts count as inside the preload library.
#include "signals/interrupted_at.h"

#include <gtest/gtest.h>

namespace {

constexpr uintptr_t kLibraryLow = 0x10000, kLibraryHigh = 0x20000;  // the library's code
constexpr uintptr_t kEntry = 0x7000;                                // `syscall; ret` in libc's text
constexpr uintptr_t kProgramPc = 0x3000;                            // the program's code

bool inLibrary(uintptr_t pc) {
    return pc >= kLibraryLow && pc < kLibraryHigh;
}

TEST(InterruptedInLibraryAt, PcInItsCode_CountsWithoutReadingTheStack) {
    EXPECT_TRUE(
        arbrun::interruptedInLibraryAt(kLibraryLow + 0x40, nullptr, kEntry, false, inLibrary));
}

TEST(InterruptedInLibraryAt, ProgramCode_DoesNotCount) {
    const uintptr_t top = kLibraryLow + 0x40;  // whatever the stack holds
    EXPECT_FALSE(arbrun::interruptedInLibraryAt(kProgramPc, &top, kEntry, false, inLibrary));
}

TEST(InterruptedInLibraryAt, RawSyscallReturningIntoTheLibrary_Counts) {
    const uintptr_t top = kLibraryLow + 0x123;
    EXPECT_TRUE(
        arbrun::interruptedInLibraryAt(kEntry + 2, &top, kEntry, false, inLibrary));  // on `ret`
    EXPECT_TRUE(
        arbrun::interruptedInLibraryAt(kEntry, &top, kEntry, false, inLibrary));  // restarted
}

TEST(InterruptedInLibraryAt, ProgramsOwnGetpidOnTheSameSequence_DoesNotCount) {
    const uintptr_t top = kProgramPc + 0x10;  // libc's getpid called by the program
    EXPECT_FALSE(arbrun::interruptedInLibraryAt(kEntry + 2, &top, kEntry, false, inLibrary));
}

TEST(InterruptedInLibraryAt, ProgramsRawCallPassedThrough_DoesNotCount) {
    const uintptr_t top = kLibraryLow + 0x123;  // made by the library, for the program
    EXPECT_FALSE(arbrun::interruptedInLibraryAt(kEntry + 2, &top, kEntry, true, inLibrary));
    EXPECT_FALSE(arbrun::interruptedInLibraryAt(kEntry, &top, kEntry, true, inLibrary));
    EXPECT_TRUE(arbrun::interruptedInLibraryAt(kLibraryLow, nullptr, kEntry, true, inLibrary));
}

TEST(InterruptedInLibraryAt, ElsewhereInLibc_DoesNotReadTheStack) {
    EXPECT_FALSE(arbrun::interruptedInLibraryAt(kEntry + 3, nullptr, kEntry, false, inLibrary));
    EXPECT_FALSE(arbrun::interruptedInLibraryAt(kEntry - 1, nullptr, kEntry, false, inLibrary));
}

TEST(InterruptedInLibraryAt, NoEntryYet_OnlyTheCodeRangesCount) {
    EXPECT_FALSE(arbrun::interruptedInLibraryAt(0, nullptr, 0, false, inLibrary));
    EXPECT_FALSE(arbrun::interruptedInLibraryAt(2, nullptr, 0, false, inLibrary));
}

}  // namespace
