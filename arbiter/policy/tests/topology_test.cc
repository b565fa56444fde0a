// Topology: synthetic machines and reading a fake sysfs tree written into a temporary directory.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "arbpolicy/topology.h"

namespace arbpolicy {
namespace {

namespace fs = std::filesystem;

// A temporary directory (mkdtemp under $TMPDIR or /tmp), removed with everything in it when the
// test ends, however it ends.
class TempDir {
  public:
    TempDir() {
        const char* base = getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/arbpolicy-XXXXXX";
        if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        if (!path_.empty()) fs::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

// Writes `text` to root/relative, creating directories.
void writeFile(const std::string& root, const std::string& relative, const std::string& text) {
    fs::path path = fs::path(root) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

// A fake sysfs cpu tree: cpu id -> (package, per-socket core id), plus the online list.
void writeSysfs(const std::string& root, const std::map<int, std::pair<int, int>>& cpus,
                const std::string& online) {
    for (const auto& [id, where] : cpus) {
        std::string dir = "devices/system/cpu/cpu" + std::to_string(id) + "/topology/";
        writeFile(root, dir + "physical_package_id", std::to_string(where.first) + "\n");
        writeFile(root, dir + "core_id", std::to_string(where.second) + "\n");
    }
    writeFile(root, "devices/system/cpu/online", online + "\n");
}

// Two sockets x 2 cores x 2 threads, core ids per socket as sysfs reports them (0 and 1 on each).
std::map<int, std::pair<int, int>> twoSocketMachine() {
    return {{0, {0, 0}}, {1, {0, 1}}, {2, {1, 0}}, {3, {1, 1}},
            {4, {0, 0}}, {5, {0, 1}}, {6, {1, 0}}, {7, {1, 1}}};
}

TEST(Synthetic, NumbersLikeLinux) {
    Topology t = Topology::synthetic(2, 3, 2);
    ASSERT_EQ(t.cpus.size(), 12u);
    for (const Cpu& cpu : t.cpus) {
        EXPECT_EQ(cpu.core, cpu.id % 6) << cpu.id;
        EXPECT_EQ(cpu.socket, (cpu.id % 6) / 3) << cpu.id;
    }
    EXPECT_EQ(t.cpus[1].core, t.cpus[7].core);  // siblings are id and id + sockets*cores
}

TEST(Synthetic, SortedAndUniqueIds) {
    Topology t = Topology::synthetic(2, 64, 2);
    ASSERT_EQ(t.cpus.size(), 256u);
    for (size_t i = 0; i < t.cpus.size(); ++i) EXPECT_EQ(t.cpus[i].id, static_cast<int>(i));
    std::set<int> cores;
    for (const Cpu& cpu : t.cpus) cores.insert(cpu.core);
    EXPECT_EQ(cores.size(), 128u);
}

TEST(Synthetic, NonPositiveArgumentsGiveEmpty) {
    EXPECT_TRUE(Topology::synthetic(0, 4, 2).cpus.empty());
    EXPECT_TRUE(Topology::synthetic(1, -1, 2).cpus.empty());
    EXPECT_TRUE(Topology::synthetic(1, 4, 0).cpus.empty());
}

TEST(FromSysfs, ReadsOnlineCpusAndMakesCoreIdsMachineWide) {
    TempDir dir;
    ASSERT_FALSE(dir.path().empty());
    writeSysfs(dir.path(), twoSocketMachine(), "0-7");
    std::string error;
    std::optional<Topology> t = Topology::fromSysfs(dir.path(), "", &error);
    ASSERT_TRUE(t) << error;
    ASSERT_EQ(t->cpus.size(), 8u);
    EXPECT_EQ(t->ids(), std::vector<int>({0, 1, 2, 3, 4, 5, 6, 7}));
    // Socket 0 core 0 and socket 1 core 0 are different physical cores.
    EXPECT_NE(t->cpus[0].core, t->cpus[2].core);
    for (int id = 0; id < 4; ++id) {
        EXPECT_EQ(t->cpus[id].core, t->cpus[id + 4].core) << id;
        EXPECT_EQ(t->cpus[id].socket, t->cpus[id + 4].socket) << id;
    }
    std::set<int> cores;
    for (const Cpu& cpu : t->cpus) cores.insert(cpu.core);
    EXPECT_EQ(cores.size(), 4u);
    EXPECT_EQ(t->cpus[2].socket, 1);
}

TEST(FromSysfs, SelectedCpusOnly) {
    TempDir dir;
    writeSysfs(dir.path(), twoSocketMachine(), "0-7");
    std::string error;
    std::optional<Topology> t = Topology::fromSysfs(dir.path(), "1-2,6", &error);
    ASSERT_TRUE(t) << error;
    EXPECT_EQ(formatCpuList(t->ids()), "1-2,6");
    EXPECT_EQ(t->cpus[1].core, t->cpus[2].core);  // cpus 2 and 6 are siblings
}

TEST(FromSysfs, OnlineListWithHoles) {
    TempDir dir;
    auto cpus = twoSocketMachine();
    cpus.erase(5);
    writeSysfs(dir.path(), cpus, "0-4,6-7");
    std::string error;
    std::optional<Topology> t = Topology::fromSysfs(dir.path(), "", &error);
    ASSERT_TRUE(t) << error;
    EXPECT_EQ(formatCpuList(t->ids()), "0-4,6-7");
}

TEST(FromSysfs, MissingFileIsAnErrorNamingIt) {
    TempDir dir;
    writeSysfs(dir.path(), twoSocketMachine(), "0-7");
    std::string error;
    EXPECT_FALSE(Topology::fromSysfs(dir.path(), "0-8", &error));
    EXPECT_NE(error.find("cpu8/topology/physical_package_id"), std::string::npos) << error;
    EXPECT_NE(error.find("No such file"), std::string::npos) << error;
}

TEST(FromSysfs, MissingOnlineIsAnError) {
    TempDir dir;
    std::string error;
    EXPECT_FALSE(Topology::fromSysfs(dir.path(), "", &error));
    EXPECT_NE(error.find("online"), std::string::npos) << error;
}

TEST(FromSysfs, MalformedFilesAreErrors) {
    for (const char* bad : {"", "x\n", "1 2\n", "3x\n"}) {
        TempDir dir;
        writeSysfs(dir.path(), twoSocketMachine(), "0-7");
        writeFile(dir.path(), "devices/system/cpu/cpu3/topology/core_id", bad);
        std::string error;
        EXPECT_FALSE(Topology::fromSysfs(dir.path(), "", &error)) << "'" << bad << "'";
        EXPECT_NE(error.find("malformed"), std::string::npos) << error;
        EXPECT_NE(error.find("cpu3/topology/core_id"), std::string::npos) << error;
    }
}

TEST(FromSysfs, MalformedOnlineIsAnError) {
    TempDir dir;
    writeSysfs(dir.path(), twoSocketMachine(), "0-");
    std::string error;
    EXPECT_FALSE(Topology::fromSysfs(dir.path(), "", &error));
    EXPECT_NE(error.find("online"), std::string::npos) << error;
}

TEST(FromSysfs, MalformedCpuArgumentIsAnError) {
    TempDir dir;
    writeSysfs(dir.path(), twoSocketMachine(), "0-7");
    std::string error;
    EXPECT_FALSE(Topology::fromSysfs(dir.path(), "3-1", &error));
    EXPECT_NE(error.find("3-1"), std::string::npos) << error;
}

TEST(FromSysfs, NullErrorPointerIsAllowed) {
    TempDir dir;
    EXPECT_FALSE(Topology::fromSysfs(dir.path(), "", nullptr));
}

}  // namespace
}  // namespace arbpolicy
