// /proc/self/mountinfo parsing (arbmounts), for the core arbiter's backend detection and arbrun
// doctor's cgroup check.
#include <gtest/gtest.h>

#include <map>

#include "arbmounts/cgroup_mounts.h"

namespace arbmounts {
namespace {

using Strings = std::vector<std::string>;

TEST(ParseCgroupMounts, HybridHost) {
    const auto mounts = parseCgroupMounts(
        "23 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime shared:9 - cgroup cgroup rw,cpuset\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n");
    ASSERT_EQ(mounts.size(), 4u);
    EXPECT_EQ(mounts[0].version, 1);
    EXPECT_EQ(mounts[0].mountPoint, "/sys/fs/cgroup/cpuset");
    EXPECT_EQ(mounts[0].controllers, (Strings{"rw", "cpuset"}));
    EXPECT_EQ(mounts[1].controllers, (Strings{"rw", "cpu", "cpuacct"}));
    EXPECT_EQ(mounts[2].controllers, (Strings{"rw", "xattr", "name=systemd"}));
    EXPECT_EQ(mounts[3].version, 2);
    EXPECT_EQ(mounts[3].mountPoint, "/sys/fs/cgroup/unified");
    EXPECT_TRUE(mounts[3].controllers.empty());
}

TEST(ParseCgroupMounts, FavorDynmodsOnEitherVersion) {
    const auto mounts = parseCgroupMounts(
        "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate,favordynmods\n"
        "42 31 0:39 / /sys/fs/cgroup/v1fav rw - cgroup cgroup rw,favordynmods,cpu\n"
        "43 31 0:40 / /sys/fs/cgroup/notquite rw - cgroup2 cgroup2 rw,favordynmodsx\n");
    ASSERT_EQ(mounts.size(), 4u);
    EXPECT_FALSE(mounts[0].favorDynmods);
    EXPECT_TRUE(mounts[1].favorDynmods);
    EXPECT_TRUE(mounts[2].favorDynmods);
    EXPECT_FALSE(mounts[3].favorDynmods);  // a whole option only
}

TEST(ParseCgroupMounts, SeveralOptionalFields) {
    const auto mounts = parseCgroupMounts(
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 master:1 propagate_from:2 - cgroup2 "
        "cgroup2 rw,nsdelegate,memory_recursiveprot\n");
    ASSERT_EQ(mounts.size(), 1u);
    EXPECT_EQ(mounts[0].version, 2);
    EXPECT_EQ(mounts[0].mountPoint, "/sys/fs/cgroup");
}

TEST(ParseCgroupMounts, OctalEscapesInTheMountPoint) {
    const auto mounts =
        parseCgroupMounts("50 1 0:40 / /mnt/my\\040cg\\134x rw - cgroup none rw,cpuset\n");
    ASSERT_EQ(mounts.size(), 1u);
    EXPECT_EQ(mounts[0].mountPoint, "/mnt/my cg\\x");
}

TEST(ParseCgroupMounts, MalformedLinesAreSkipped) {
    const auto mounts = parseCgroupMounts(
        "garbage\n"
        "1 2 3 - cgroup\n"
        "60 1 0:41 / /c rw - cgroup\n"  // no source: malformed
        "\n"
        "61 1 0:42 / /ok rw - cgroup2 cgroup2");  // no super options, no final newline
    ASSERT_EQ(mounts.size(), 1u);
    EXPECT_EQ(mounts[0].mountPoint, "/ok");
}

TEST(ParseCgroupMounts, NoCgroups) {
    EXPECT_TRUE(parseCgroupMounts("").empty());
    EXPECT_TRUE(parseCgroupMounts("23 1 8:1 / / rw - ext4 /dev/sda1 rw\n").empty());
}

TEST(ListsController, WholeWordsOnly) {
    EXPECT_TRUE(listsController("cpuset cpu io\n", "cpuset"));
    EXPECT_TRUE(listsController("cpu io cpuset", "cpuset"));
    EXPECT_FALSE(listsController("cpusetx cpu\n", "cpuset"));
    EXPECT_FALSE(listsController("", "cpuset"));
}

// cgroup.controllers texts by path; a path not listed cannot be read.
std::function<std::optional<std::string>(const std::string&)> filesOf(
    std::map<std::string, std::string> files, std::vector<std::string>* asked = nullptr) {
    return
        [files = std::move(files), asked](const std::string& path) -> std::optional<std::string> {
            if (asked) asked->push_back(path);
            auto it = files.find(path);
            if (it == files.end()) return std::nullopt;
            return it->second;
        };
}

TEST(CpusetLayout, FirstOfEachKindAndTheFirstV2OfferingCpuset) {
    const auto mounts = parseCgroupMounts(
        "30 1 0:30 / /a rw - cgroup2 cgroup2 rw\n"
        "31 1 0:31 / /v1 rw - cgroup cgroup rw,cpuset\n"
        "32 1 0:32 / /b rw - cgroup2 cgroup2 rw,favordynmods\n"
        "33 1 0:33 / /c rw - cgroup2 cgroup2 rw\n"
        "34 1 0:34 / /v1bis rw - cgroup cgroup rw,cpuset,favordynmods\n");
    std::vector<std::string> asked;
    const CpusetLayout layout =
        cpusetLayout(mounts, filesOf({{"/a/cgroup.controllers", "cpu io\n"},
                                      {"/b/cgroup.controllers", "cpuset\n"},
                                      {"/c/cgroup.controllers", "cpuset\n"}},
                                     &asked));
    EXPECT_EQ(layout.v1Cpuset, "/v1");
    EXPECT_EQ(layout.v2, "/a");
    EXPECT_EQ(layout.v2Cpuset, "/b");
    EXPECT_EQ(layout.favoring, "/b");
    // Only cgroup2 mounts are asked, and none after the one that offers cpuset.
    EXPECT_EQ(asked, (Strings{"/a/cgroup.controllers", "/b/cgroup.controllers"}));
}

TEST(CpusetLayout, UnreadableControllersOfferNothing) {
    const auto mounts = parseCgroupMounts(
        "30 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
        "31 1 0:31 / /v1 rw - cgroup cgroup rw,cpu\n");
    const CpusetLayout layout = cpusetLayout(mounts, filesOf({}));
    EXPECT_EQ(layout.v2, "/sys/fs/cgroup");
    EXPECT_TRUE(layout.v2Cpuset.empty());
    EXPECT_TRUE(layout.v1Cpuset.empty());  // a v1 hierarchy without cpuset
    EXPECT_TRUE(layout.favoring.empty());
}

}  // namespace
}  // namespace arbmounts
