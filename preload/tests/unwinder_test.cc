// The unwinder forwarders (src/libc/unwinder.cc), linked into this test as into libarbrun.so:
// static libstdc++ and libgcc, so every _Unwind_* call of the C++ runtime's throw, catch, cleanup
// and rethrow code goes through them to the shared libgcc_s, loaded on the first throw.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "libc/unwinder.h"

namespace {

bool libgccMapped() {
    FILE* maps = std::fopen("/proc/self/maps", "r");
    if (!maps) return false;
    char line[4096];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, maps)) found = std::strstr(line, "libgcc_s");
    std::fclose(maps);
    return found;
}

int gDestroyed = 0;
struct CountsDestruction {
    ~CountsDestruction() { ++gDestroyed; }
};

// A frame with a cleanup (the destructor) between the throw and the catch: _Unwind_Resume.
[[gnu::noinline]] void throwThrough(int depth) {
    CountsDestruction local;
    if (depth == 0) throw std::runtime_error("from the innermost frame");
    throwThrough(depth - 1);
}

// Catches and rethrows (__cxa_rethrow: _Unwind_Resume_or_Rethrow).
[[gnu::noinline]] void catchAndRethrow() {
    try {
        throwThrough(3);
    } catch (const std::runtime_error&) {
        throw;
    }
}

TEST(Unwinder, ThrowCleanupsAndRethrow_LoadTheSharedUnwinderOnFirstUse) {
    // One test per process (ctest runs each alone): nothing has unwound yet.
    ASSERT_FALSE(libgccMapped()) << "libgcc_s was loaded at start-up (a dependency again?)";
    std::string caught;
    try {
        catchAndRethrow();
    } catch (const std::runtime_error& e) {
        caught = e.what();
    }
    EXPECT_EQ(caught, "from the innermost frame");
    EXPECT_EQ(gDestroyed, 4);
    EXPECT_TRUE(libgccMapped());
}

TEST(Unwinder, LoadUnwinder_LoadsOnceAndThrowsStillWork) {
    ASSERT_FALSE(libgccMapped());
    arbrun::loadUnwinder();
    EXPECT_TRUE(libgccMapped());
    arbrun::loadUnwinder();  // a second call returns at once
    int caught = 0;
    for (int i = 0; i < 100; ++i) {
        try {
            throwThrough(i % 5);
        } catch (const std::exception&) {
            ++caught;
        }
    }
    EXPECT_EQ(caught, 100);
}

}  // namespace
