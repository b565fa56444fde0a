// parseCpuList / formatCpuList: the kernel cpulist format both ways.
#include <gtest/gtest.h>

#include "arbpolicy/topology.h"

namespace arbpolicy {
namespace {

using Ids = std::vector<int>;

TEST(ParseCpuList, SinglesAndRanges) {
    EXPECT_EQ(parseCpuList("0-3,8,10-11"), Ids({0, 1, 2, 3, 8, 10, 11}));
    EXPECT_EQ(parseCpuList("5"), Ids({5}));
    EXPECT_EQ(parseCpuList("7-7"), Ids({7}));
}

TEST(ParseCpuList, SysfsNewlineAndWhitespace) {
    EXPECT_EQ(parseCpuList("0-1\n"), Ids({0, 1}));
    EXPECT_EQ(parseCpuList("  2,3 \t\n"), Ids({2, 3}));
}

TEST(ParseCpuList, EmptyIsNoCpus) {
    EXPECT_EQ(parseCpuList(""), Ids());
    EXPECT_EQ(parseCpuList("\n"), Ids());
}

TEST(ParseCpuList, UnsortedAndOverlappingAreNormalised) {
    EXPECT_EQ(parseCpuList("8,0-2,1,2-3"), Ids({0, 1, 2, 3, 8}));
}

TEST(ParseCpuList, MalformedIsRejected) {
    for (const char* bad : {",", "1,", ",1", "1,,2", "3-1", "-1", "1-", "a", "1a", "1 2", "1-2-3",
                            "+1", "1;2", "0x3", "99999999999", "65536", "0-65536", " , "}) {
        EXPECT_EQ(parseCpuList(bad), std::nullopt) << "'" << bad << "'";
    }
}

TEST(ParseCpuList, LargestIdAccepted) {
    EXPECT_EQ(parseCpuList("65535"), Ids({kMaxCpuId}));
}

TEST(FormatCpuList, CompressesRuns) {
    EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
    EXPECT_EQ(formatCpuList({5}), "5");
    EXPECT_EQ(formatCpuList({}), "");
}

TEST(FormatCpuList, SortsDedupsAndSkipsNegative) {
    EXPECT_EQ(formatCpuList({3, 1, 2, 2, -4, 9}), "1-3,9");
}

TEST(FormatCpuList, RoundTripsThroughParse) {
    for (const char* text : {"0", "0-1", "0,2,4", "0-3,8,10-11", "1-2,4-5,7", ""}) {
        std::optional<Ids> ids = parseCpuList(text);
        ASSERT_TRUE(ids) << text;
        EXPECT_EQ(formatCpuList(*ids), text);
    }
}

}  // namespace
}  // namespace arbpolicy
