// The fast start's answers (arbfast/fast_start.h), each against what the full launcher or the
// standard library says for the same input: execvp's program search, lexically_normal(), and
// inspectFile()'s ELF facts.
#include <arbexe/elf_facts.h>
#include <arbfast/fast_start.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "helpers/temp_dir.h"

namespace {

namespace fs = std::filesystem;

using launcher_test::TempDir;

std::string found(const char* name, const char* searchPath) {
    arbfast::Path out;
    return arbfast::findProgram(name, searchPath, &out) ? std::string(out.text, out.size)
                                                        : std::string("<none>");
}

std::string joined(const char* file, const char* relative) {
    arbfast::Path out;
    return arbfast::joinRelative(file, relative, &out) ? std::string(out.text, out.size)
                                                       : std::string("<none>");
}

// An ELF64 header with `count` program headers right after it, every one PT_LOAD but the one at
// `interpAt` (none when out of range), which is PT_INTERP.
std::string elfImage(size_t count, size_t interpAt) {
    Elf64_Ehdr header{};
    header.e_ident[EI_MAG0] = ELFMAG0;
    header.e_ident[EI_MAG1] = ELFMAG1;
    header.e_ident[EI_MAG2] = ELFMAG2;
    header.e_ident[EI_MAG3] = ELFMAG3;
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_DYN;
    header.e_machine = EM_X86_64;
    header.e_phoff = sizeof header;
    header.e_phentsize = sizeof(Elf64_Phdr);
    header.e_phnum = uint16_t(count);
    std::string image(reinterpret_cast<const char*>(&header), sizeof header);
    for (size_t i = 0; i < count; ++i) {
        Elf64_Phdr p{};
        p.p_type = i == interpAt ? PT_INTERP : PT_LOAD;
        image.append(reinterpret_cast<const char*>(&p), sizeof p);
    }
    return image;
}

TEST(FindProgram, NameWithASlashIsTakenAsIs) {
    EXPECT_EQ(found("./prog", "/usr/bin"), "./prog");
    EXPECT_EQ(found("/nonexistent/prog", "/usr/bin"), "/nonexistent/prog");
}

TEST(FindProgram, FirstExecutableRegularFileOnPathWins) {
    TempDir s;
    ASSERT_FALSE(s.path().empty());
    s.write("a/prog", "#!/bin/sh\n", 0644);           // not executable
    fs::create_directories(s.path() / "b" / "prog");  // a directory
    const std::string c = s.write("c/prog", "#!/bin/sh\n", 0755);
    s.write("d/prog", "#!/bin/sh\n", 0755);  // later on PATH
    const std::string path = (s.path() / "a").string() + ":" + (s.path() / "b").string() + ":" +
                             (s.path() / "c/").string() + ":" + (s.path() / "d").string();
    EXPECT_EQ(found("prog", path.c_str()), c);  // "c/" gets no second slash
    EXPECT_EQ(found("prog", (s.path() / "a").c_str()), "<none>");
    EXPECT_EQ(found("no-such-program-arbfast-test", path.c_str()), "<none>");
    EXPECT_EQ(found("", path.c_str()), "<none>");
}

TEST(FindProgram, UnsetPathUsesExecvpsDefault) {
    EXPECT_EQ(found("sh", nullptr), "/bin/sh");
    EXPECT_EQ(found("sh", ""), "/bin/sh");
}

// An empty PATH entry (leading, trailing or doubled ':') is the current directory: the name
// itself, relative, as execvp runs it.
TEST(FindProgram, EmptyEntryIsTheCurrentDirectory) {
    TempDir s;
    ASSERT_FALSE(s.path().empty());
    s.write("prog", "#!/bin/sh\n", 0755);
    const fs::path before = fs::current_path();
    fs::current_path(s.path());
    EXPECT_EQ(found("prog", "/nonexistent-arbfast-test:"), "prog");
    EXPECT_EQ(found("prog", ":/bin"), "prog");
    EXPECT_EQ(found("prog", "/bin::/usr/bin"), "prog");
    EXPECT_EQ(found("prog", "/bin:/usr/bin"), "<none>");
    fs::current_path(before);
}

TEST(FindProgram, NamesAndEntriesThatDoNotFitAreSkipped) {
    const std::string longName(arbfast::kPathCapacity, 'x');
    EXPECT_EQ(found(longName.c_str(), "/bin"), "<none>");
    const std::string longEntry = "/" + std::string(arbfast::kPathCapacity, 'y') + ":/bin";
    EXPECT_EQ(found("sh", longEntry.c_str()), "/bin/sh");
}

// What preload_library.cc relied on std::filesystem for: the same text, case by case.
TEST(JoinRelative, MatchesLexicallyNormal) {
    const std::pair<const char*, const char*> cases[] = {
        {"/usr/bin/arbrun", "../lib/arbrun/libarbrun.so"},
        {"/usr/bin/arbrun", "../lib/x86_64-linux-gnu/arbrun/libarbrun.so"},
        {"/work/main/build/bin/arbrun", "../lib/libarbrun.so"},
        {"/opt/a/bin/arbrun", "./../lib//libarbrun.so"},
        {"/a/b/c/d/arbrun", "../../../x/./y/../z.so"},
        {"/bin/arbrun", "../../../lib/libarbrun.so"},  // never above the root
        {"/arbrun", "../lib/libarbrun.so"},
        {"/a//b/./arbrun", "lib.so"},
        {"/a/b/../arbrun", "lib.so"},
    };
    for (const auto& [file, relative] : cases) {
        const std::string expected =
            (fs::path(file).parent_path() / relative).lexically_normal().string();
        EXPECT_EQ(joined(file, relative), expected) << file << " + " << relative;
    }
}

TEST(JoinRelative, RefusesRelativeFilesAndOverlongResults) {
    EXPECT_EQ(joined("bin/arbrun", "../lib/libarbrun.so"), "<none>");
    EXPECT_EQ(joined("", "lib.so"), "<none>");
    const std::string longDir = "/" + std::string(arbfast::kPathCapacity - 8, 'd') + "/arbrun";
    EXPECT_EQ(joined(longDir.c_str(), "lib/libarbrun.so"), "<none>");
    EXPECT_EQ(joined(longDir.c_str(), "../lib/libarbrun.so"), "/lib/libarbrun.so");
}

arbfast::ProgramKind expectedKind(const std::string& path) {
    arbexe::ElfFacts facts;
    std::string error;
    if (!arbexe::inspectFile(path, &facts, &error)) return arbfast::ProgramKind::unreadable;
    if (!facts.elf) return arbfast::ProgramKind::notElf64;
    return facts.dynamic ? arbfast::ProgramKind::dynamicProgram
                         : arbfast::ProgramKind::staticProgram;
}

// The fast start execs only what inspectFile() calls dynamic; anything else goes to the full
// launcher, which announces a static program. So the two must agree on every file.
TEST(ProgramKind, AgreesWithInspectFile) {
    TempDir s;
    ASSERT_FALSE(s.path().empty());
    const std::string full = elfImage(12, 1);
    const std::vector<std::pair<std::string, arbfast::ProgramKind>> files = {
        {"/proc/self/exe", arbfast::ProgramKind::dynamicProgram},
        {"/bin/sh", arbfast::ProgramKind::dynamicProgram},
        {s.write("dynamic", full, 0755), arbfast::ProgramKind::dynamicProgram},
        {s.write("static", elfImage(12, 99), 0755), arbfast::ProgramKind::staticProgram},
        {s.write("no-headers", elfImage(0, 0), 0755), arbfast::ProgramKind::staticProgram},
        // PT_INTERP beyond the first 64 headers: neither looks that far.
        {s.write("interp-at-70", elfImage(80, 70), 0755), arbfast::ProgramKind::staticProgram},
        // Headers cut short: not read, so no PT_INTERP seen.
        {s.write("truncated", full.substr(0, full.size() - 10), 0755),
         arbfast::ProgramKind::staticProgram},
        {s.write("short", full.substr(0, 20), 0755), arbfast::ProgramKind::notElf64},
        {s.write("script", "#!/bin/sh\nexit 0\n", 0755), arbfast::ProgramKind::notElf64},
        {s.write("empty", "", 0755), arbfast::ProgramKind::notElf64},
        {(s.path() / "missing").string(), arbfast::ProgramKind::unreadable},
    };
    for (const auto& [path, kind] : files) {
        EXPECT_EQ(int(arbfast::programKind(path.c_str())), int(kind)) << path;
        EXPECT_EQ(int(arbfast::programKind(path.c_str())), int(expectedKind(path))) << path;
    }
    std::string wrongEntrySize = full;
    reinterpret_cast<Elf64_Ehdr*>(wrongEntrySize.data())->e_phentsize = 32;
    const std::string odd = s.write("odd-entry-size", wrongEntrySize, 0755);
    EXPECT_EQ(int(arbfast::programKind(odd.c_str())), int(arbfast::ProgramKind::notElf64));
    EXPECT_EQ(int(expectedKind(odd)), int(arbfast::ProgramKind::notElf64));
}

}  // namespace
