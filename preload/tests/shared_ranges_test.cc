// MapsParser and rangesContain: which addresses /proc/self/maps says are shared, whatever the
// pieces the text arrives in; lookups at every boundary.
#include "sync/shared_ranges.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace arbrun {
namespace {

// A maps excerpt as the kernel prints it: private text, adjacent shared mappings (merged), a
// private mapping right after a shared one, System V shm, the stack.
const char kMaps[] =
    "55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1311 /usr/bin/cat\n"
    "55d0c0a02000-55d0c0a07000 r-xp 00002000 08:01 1311 /usr/bin/cat\n"
    "7f10a0000000-7f10a0001000 rw-s 00000000 00:01 2048 /dev/zero (deleted)\n"
    "7f10a0001000-7f10a0003000 r--s 00000000 08:01 77 /var/lib/data.db\n"
    "7f10a0003000-7f10a0004000 rw-p 00000000 00:00 0 \n"
    "7f10a0010000-7f10a0020000 rw-s 00000000 00:01 32768 /SYSV00000000 (deleted)\n"
    "7f10a0020000-7f10a0021000 rw-p 00000000 00:00 0\n"
    "7ffd1c5e0000-7ffd1c601000 rw-p 00000000 00:00 0 [stack]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";

const std::vector<AddressRange> kExpected = {
    {0x7f10a0000000, 0x7f10a0003000},
    {0x7f10a0010000, 0x7f10a0020000},
};

// Collects what a parser reports.
struct Collected {
    std::vector<AddressRange> ranges;
    static void add(void* self, AddressRange r) {
        static_cast<Collected*>(self)->ranges.push_back(r);
    }
};

// Parses `text` fed in pieces of `piece` bytes.
std::vector<AddressRange> parse(const std::string& text, size_t piece) {
    Collected out;
    MapsParser parser(Collected::add, &out);
    for (size_t i = 0; i < text.size(); i += piece) {
        parser.feed(text.data() + i, std::min(piece, text.size() - i));
    }
    parser.finish();
    return out.ranges;
}

TEST(MapsParser, Parse_SharedRunsMergedInAddressOrder) {
    EXPECT_EQ(parse(kMaps, sizeof kMaps), kExpected);
}

TEST(MapsParser, Parse_AnySplitOfTheText) {
    for (size_t piece = 1; piece <= 97; ++piece) {
        EXPECT_EQ(parse(kMaps, piece), kExpected) << "pieces of " << piece;
    }
}

TEST(MapsParser, Parse_LastLineWithoutNewlineAndSharedAtTheEnd) {
    const std::string text =
        "1000-2000 rw-p 00000000 00:00 0\n"
        "3000-4000 rw-s 00000000 00:01 5 /dev/zero (deleted)";
    EXPECT_EQ(parse(text, text.size()), (std::vector<AddressRange>{{0x3000, 0x4000}}));
}

TEST(MapsParser, Parse_SkipsLinesItCannotRead) {
    const std::string text =
        "\n"
        "garbage line\n"
        "-2000 rw-s\n"
        "1000- rw-s\n"
        "1000-2000\n"
        "1000-2000 rw\n"
        "5000-4000 rw-s 0 0:0 0\n"  // end before begin
        "6000-7000 rw-x 0 0:0 0\n"  // no s/p flag
        "8000-9000 rw-s 0 0:0 0\n";
    EXPECT_EQ(parse(text, 3), (std::vector<AddressRange>{{0x8000, 0x9000}}));
}

TEST(MapsParser, Parse_NoSharedMappings) {
    EXPECT_TRUE(parse("1000-2000 rw-p 0 0:0 0\n3000-4000 r-xp 0 0:0 0\n", 5).empty());
    EXPECT_TRUE(parse("", 1).empty());
}

TEST(MapsParser, Parse_ThisProcessSeesItsOwnSharedMapping) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    void* shared = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    void* priv = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(shared, MAP_FAILED);
    ASSERT_NE(priv, MAP_FAILED);
    std::ifstream maps("/proc/self/maps");
    std::stringstream text;
    text << maps.rdbuf();
    const std::vector<AddressRange> ranges = parse(text.str(), 4096);
    const auto at = [](void* p, size_t offset) { return reinterpret_cast<uintptr_t>(p) + offset; };
    EXPECT_TRUE(rangesContain(ranges.data(), ranges.size(), at(shared, 0)));
    EXPECT_TRUE(rangesContain(ranges.data(), ranges.size(), at(shared, page - 4)));
    EXPECT_FALSE(rangesContain(ranges.data(), ranges.size(), at(priv, 0)));
    EXPECT_FALSE(rangesContain(ranges.data(), ranges.size(), at(priv, page - 4)));
    munmap(shared, page);
    munmap(priv, page);
}

TEST(RangesContain, Boundaries) {
    const AddressRange* r = kExpected.data();
    const size_t n = kExpected.size();
    EXPECT_FALSE(rangesContain(r, n, 0));
    EXPECT_FALSE(rangesContain(r, n, 0x7f10a0000000 - 1));
    EXPECT_TRUE(rangesContain(r, n, 0x7f10a0000000));
    EXPECT_TRUE(rangesContain(r, n, 0x7f10a0002fff));
    EXPECT_FALSE(rangesContain(r, n, 0x7f10a0003000));
    EXPECT_FALSE(rangesContain(r, n, 0x7f10a000ffff));
    EXPECT_TRUE(rangesContain(r, n, 0x7f10a0010000));
    EXPECT_FALSE(rangesContain(r, n, 0x7f10a0020000));
    EXPECT_FALSE(rangesContain(r, n, UINTPTR_MAX));
    EXPECT_FALSE(rangesContain(r, 0, 0x7f10a0000000));
}

TEST(RangesContain, AgreesWithALinearScan) {
    std::mt19937_64 rng(20240501);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<AddressRange> ranges;
        uintptr_t at = rng() % 64;
        const int count = int(rng() % 20);
        for (int i = 0; i < count; ++i) {
            at += 1 + rng() % 16;  // a gap of at least one: disjoint and not adjacent
            const uintptr_t end = at + 1 + rng() % 16;
            ranges.push_back({at, end});
            at = end;
        }
        for (uintptr_t a = 0; a < at + 20; ++a) {
            bool linear = false;
            for (const AddressRange& r : ranges) linear |= a >= r.begin && a < r.end;
            ASSERT_EQ(rangesContain(ranges.data(), ranges.size(), a), linear)
                << "trial " << trial << " address " << a;
        }
    }
}

}  // namespace
}  // namespace arbrun
