// LD_PRELOAD composition and the preload library's default location, plus exec's status mapping.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "launch.h"
#include "preload_library.h"

namespace arbrun {
namespace {

TEST(PrependPreload, EmptyExisting) {
    EXPECT_EQ(prependPreload("", "/l/libarbrun.so"), "/l/libarbrun.so");
}

TEST(PrependPreload, KeepsTheRestInOrder) {
    EXPECT_EQ(prependPreload("/a.so:/b.so", "/l/x.so"), "/l/x.so:/a.so:/b.so");
    EXPECT_EQ(prependPreload("/a.so /b.so", "/l/x.so"), "/l/x.so:/a.so:/b.so");
    EXPECT_EQ(prependPreload("::/a.so: :", "/l/x.so"), "/l/x.so:/a.so");
}

TEST(PrependPreload, DropsAnotherCopyOfTheLibrary) {
    EXPECT_EQ(prependPreload("/a.so:/l/x.so:/b.so", "/l/x.so"), "/l/x.so:/a.so:/b.so");
    EXPECT_EQ(prependPreload("/l/x.so", "/l/x.so"), "/l/x.so");
}

TEST(DefaultPreloadPath, SiblingLibDirectory) {
    EXPECT_EQ(defaultPreloadPath("/opt/arbrun/bin/arbrun"), "/opt/arbrun/lib/libarbrun.so");
    EXPECT_EQ(defaultPreloadPath("/work/main/build/bin/arbrun"),
              "/work/main/build/lib/libarbrun.so");
}

TEST(PreloadCandidates, InstalledLayoutFirstThenBuildTree) {
    EXPECT_EQ(preloadCandidates("/usr/bin/arbrun", "../lib/arbrun/libarbrun.so"),
              (std::vector<std::string>{"/usr/lib/arbrun/libarbrun.so", "/usr/lib/libarbrun.so"}));
    EXPECT_EQ(preloadCandidates("/usr/bin/arbrun", "../lib/x86_64-linux-gnu/arbrun/libarbrun.so"),
              (std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/arbrun/libarbrun.so",
                                        "/usr/lib/libarbrun.so"}));
    EXPECT_EQ(preloadCandidates("/work/main/build/bin/arbrun", "../lib/arbrun/libarbrun.so"),
              (std::vector<std::string>{"/work/main/build/lib/arbrun/libarbrun.so",
                                        "/work/main/build/lib/libarbrun.so"}));
}

TEST(PreloadCandidates, OneEntryWhenBothLayoutsAgree) {
    EXPECT_EQ(preloadCandidates("/opt/a/bin/arbrun", "../lib/libarbrun.so"),
              (std::vector<std::string>{"/opt/a/lib/libarbrun.so"}));
}

TEST(InstalledPreloadRelPath, RelativeToTheExecutablesDirectory) {
    const std::string rel(installedPreloadRelPath());
    ASSERT_FALSE(rel.empty());
    EXPECT_NE(rel.front(), '/') << rel;
    EXPECT_TRUE(rel.ends_with("/libarbrun.so")) << rel;
}

TEST(LocatePreloadLibrary, OverrideMissingIsAnError) {
    std::string path, error;
    EXPECT_FALSE(locatePreloadLibrary("/nonexistent-arbrun-test/libarbrun.so", &path, &error));
    EXPECT_NE(error.find("preload library /nonexistent-arbrun-test/libarbrun.so not found (No "
                         "such file or directory); check ARBRUN_PRELOAD_LIB"),
              std::string::npos)
        << error;
}

TEST(LocatePreloadLibrary, DirectoryIsNotALibrary) {
    std::string path, error;
    EXPECT_FALSE(locatePreloadLibrary("/", &path, &error));
    EXPECT_NE(error.find("is not a regular file"), std::string::npos) << error;
}

TEST(LocatePreloadLibrary, SeparatorsInThePathAreRefused) {
    std::string path, error;
    EXPECT_FALSE(locatePreloadLibrary("/a b/libarbrun.so", &path, &error));
    EXPECT_NE(error.find("contains ':' or a space"), std::string::npos) << error;
}

TEST(ExitStatusForExecError, LikeAShell) {
    EXPECT_EQ(exitStatusForExecError(ENOENT), 127);
    EXPECT_EQ(exitStatusForExecError(ENOTDIR), 127);
    EXPECT_EQ(exitStatusForExecError(EACCES), 126);
    EXPECT_EQ(exitStatusForExecError(ENOEXEC), 126);
    EXPECT_EQ(exitStatusForExecError(E2BIG), 126);
}

}  // namespace
}  // namespace arbrun
