// The launcher's look at the program before exec: PATH resolution as execvp does it, and the
// line for programs the preload library cannot take.
#include "program_check.h"

#include <gtest/gtest.h>

namespace arbrun {
namespace {

TEST(ResolveProgram, NameWithASlashIsTakenAsIs) {
    EXPECT_EQ(resolveProgram("./prog", "/usr/bin"), "./prog");
    EXPECT_EQ(resolveProgram("/nonexistent/prog", "/usr/bin"), "/nonexistent/prog");
}

TEST(ResolveProgram, SearchesPathInOrder) {
    EXPECT_EQ(resolveProgram("sh", "/nonexistent-arbrun-test:/bin"), "/bin/sh");
    EXPECT_EQ(resolveProgram("sh", "/bin/:/usr/bin"), "/bin/sh");
    EXPECT_EQ(resolveProgram("no-such-program-arbrun-test", "/bin:/usr/bin"), "");
    EXPECT_EQ(resolveProgram("", "/bin"), "");
}

TEST(ResolveProgram, UnsetPathUsesExecvpsDefault) {
    EXPECT_EQ(resolveProgram("sh", nullptr), "/bin/sh");
    EXPECT_EQ(resolveProgram("sh", ""), "/bin/sh");
}

TEST(NativeNotice, DynamicProgramsAndScriptsNeedNone) {
    EXPECT_EQ(nativeNotice("./app", {true, true, false}), "");
    EXPECT_EQ(nativeNotice("./goprog", {true, true, true}), "");  // the library says it
    EXPECT_EQ(nativeNotice("./script.sh", {false, false, false}), "");
}

TEST(NativeNotice, StaticProgramsRunNatively) {
    EXPECT_EQ(nativeNotice("./app", {true, false, false}),
              "./app is statically linked (the preload library cannot load into it); running it "
              "natively");
    EXPECT_EQ(nativeNotice("./goprog", {true, false, true}),
              "./goprog is a Go program (its runtime schedules its own threads), statically "
              "linked (the preload library cannot load into it); running it natively");
}

TEST(NativeNoticeFor, ReadsTheResolvedFile) {
    EXPECT_EQ(nativeNoticeFor("sh", "/bin"), "");
    EXPECT_EQ(nativeNoticeFor("/nonexistent-arbrun-test/prog", "/bin"), "");
}

}  // namespace
}  // namespace arbrun
