// findMainArena/useMainArena (arbrt/embed/tls.h, src/tls/main_arena.cc): a user thread that asks
// allocates from glibc's main arena, as the initial thread does; one that does not gets an arena
// of its own, as a native thread would. Each test runs in a process of its own (ctest), so this
// thread is the initial one.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "arbrt/embed/tls.h"
#include "test_util.h"

namespace {

// glibc's chunk flag: the chunk belongs to an arena other than the main one. Read through a
// pointer to glibc's malloc so the compiler does not treat the header word as out of bounds.
bool fromMainArena() {
    static auto* libcMalloc =
        reinterpret_cast<void* (*)(size_t)>(dlsym(RTLD_DEFAULT, "__libc_malloc"));
    void* p = libcMalloc(48);
    size_t sizeWord = 0;
    std::memcpy(&sizeWord, static_cast<char*>(p) - sizeof sizeWord, sizeof sizeWord);
    free(p);
    return (sizeWord & 4) == 0;
}

class MainArena : public arbrt_test::RuntimeTest<1> {};

TEST_F(MainArena, UseMainArena_UserThreadAllocatesFromTheMainArena) {
    ASSERT_TRUE(fromMainArena()) << "the initial thread itself is not on the main arena";
    ASSERT_TRUE(arbrt::findMainArena());
    bool used = false, main = false;
    arbrt::ThreadId t = arbrt::createThread([&] {
        used = arbrt::useMainArena();
        main = fromMainArena();
    });
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_TRUE(used);
    EXPECT_TRUE(main);
}

TEST_F(MainArena, WithoutUseMainArena_UserThreadHasAnArenaOfItsOwn) {
    ASSERT_TRUE(arbrt::findMainArena());
    bool main = true;
    arbrt::ThreadId t = arbrt::createThread([&] { main = fromMainArena(); });
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_FALSE(main);
}

TEST_F(MainArena, UseMainArena_RefusedOnceTheThreadHasAllocated) {
    ASSERT_TRUE(arbrt::findMainArena());
    bool used = true, main = true;
    arbrt::ThreadId t = arbrt::createThread([&] {
        void* volatile p = malloc(16);  // its own arena is set now (volatile: kept by the compiler)
        free(p);
        used = arbrt::useMainArena();
        main = fromMainArena();
    });
    ASSERT_EQ(arbrt::join(t), 0);
    EXPECT_FALSE(used);
    EXPECT_FALSE(main) << "the thread left its arena";
}

}  // namespace
