// Finding libc's text and a `syscall; ret` in it (src/libc_text.h), the runtime's own way into the
// kernel that syscall user dispatch never traps.
#include <gtest/gtest.h>

#include <string>

#include "tls/libc_text.h"

namespace {

TEST(LibcText, FindLibcText_SyscallReturnLiesInLibcText) {
    arbrt::detail::LibcText text;
    std::string why;
    ASSERT_TRUE(arbrt::detail::findLibcText(&text, &why)) << why;
    ASSERT_LT(text.begin, text.end);
    ASSERT_GE(text.syscallReturn, text.begin);
    ASSERT_LE(text.syscallReturn + 3, text.end);
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.syscallReturn);
    EXPECT_EQ(bytes[0], 0x0f);  // syscall
    EXPECT_EQ(bytes[1], 0x05);
    EXPECT_EQ(bytes[2], 0xc3);  // ret
}

}  // namespace
