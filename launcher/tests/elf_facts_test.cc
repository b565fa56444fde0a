// arbexe: ELF images built in memory (headers, notes and sections laid out by hand), the test
// binary itself, and the objects loaded in this process.
#include "arbexe/elf_facts.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace arbexe {
namespace {

// Appends one note (name and desc padded to `align`) to `out`.
void addNote(std::vector<unsigned char>* out, const std::string& name, uint32_t type,
             const std::string& desc, size_t align = 4) {
    Elf64_Nhdr h{uint32_t(name.size() + 1), uint32_t(desc.size()), type};
    const auto* p = reinterpret_cast<const unsigned char*>(&h);
    out->insert(out->end(), p, p + sizeof h);
    out->insert(out->end(), name.begin(), name.end());
    out->push_back('\0');
    while (out->size() % align) out->push_back(0);
    out->insert(out->end(), desc.begin(), desc.end());
    while (out->size() % align) out->push_back(0);
}

// What an image should contain; build() lays it out as an ELF64 file.
struct ImageSpec {
    bool interp = true;
    std::vector<unsigned char> notes;  // one PT_NOTE segment when not empty
    size_t noteAlign = 4;
    std::string sectionName;     // one extra PROGBITS section with this name, when not empty
    std::string sectionContent;  // its bytes
};

// ELF header, program headers, notes, section contents, section-name table, section headers.
std::vector<unsigned char> build(const ImageSpec& spec) {
    std::vector<unsigned char> image(sizeof(Elf64_Ehdr));
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_shentsize = sizeof(Elf64_Shdr);
    std::vector<Elf64_Phdr> ph;
    const std::string interp = "/lib64/ld-linux-x86-64.so.2";
    if (spec.interp) ph.push_back(Elf64_Phdr{PT_INTERP, PF_R, 0, 0, 0, interp.size() + 1, 0, 1});
    if (!spec.notes.empty()) {
        ph.push_back(Elf64_Phdr{PT_NOTE, PF_R, 0, 0, 0, spec.notes.size(), spec.notes.size(),
                                spec.noteAlign});
    }
    eh.e_phoff = image.size();
    eh.e_phnum = uint16_t(ph.size());
    image.resize(image.size() + ph.size() * sizeof(Elf64_Phdr));
    // Contents, recording where each landed.
    auto append = [&image](const void* data, size_t size) {
        while (image.size() % 16) image.push_back(0);
        const size_t at = image.size();
        const auto* p = static_cast<const unsigned char*>(data);
        image.insert(image.end(), p, p + size);
        return at;
    };
    for (Elf64_Phdr& p : ph) {
        if (p.p_type == PT_INTERP) p.p_offset = append(interp.c_str(), interp.size() + 1);
        if (p.p_type == PT_NOTE) p.p_offset = append(spec.notes.data(), spec.notes.size());
    }
    if (!ph.empty()) {
        std::memcpy(image.data() + eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr));
    }
    std::vector<Elf64_Shdr> sh(1);  // section 0 is null
    std::string names(1, '\0');
    auto addSection = [&](const std::string& name, uint32_t type, const void* data, size_t size) {
        Elf64_Shdr s{};
        s.sh_name = uint32_t(names.size());
        names += name + '\0';
        s.sh_type = type;
        s.sh_offset = append(data, size);
        s.sh_size = size;
        sh.push_back(s);
    };
    if (!spec.sectionName.empty()) {
        addSection(spec.sectionName, SHT_PROGBITS, spec.sectionContent.data(),
                   spec.sectionContent.size());
    }
    const std::string text(64, '\x90');
    addSection(".text", SHT_PROGBITS, text.data(), text.size());
    // The name table's own name is in the table it describes.
    Elf64_Shdr strtab{};
    strtab.sh_name = uint32_t(names.size());
    names += std::string(".shstrtab") + '\0';
    strtab.sh_type = SHT_STRTAB;
    strtab.sh_offset = append(names.data(), names.size());
    strtab.sh_size = names.size();
    sh.push_back(strtab);
    eh.e_shstrndx = uint16_t(sh.size() - 1);
    eh.e_shnum = uint16_t(sh.size());
    eh.e_shoff = append(sh.data(), sh.size() * sizeof(Elf64_Shdr));
    std::memcpy(image.data(), &eh, sizeof eh);
    return image;
}

ElfFacts inspect(const std::vector<unsigned char>& image) {
    return inspectElf([&image](uint64_t offset, void* out, size_t size) {
        if (offset > image.size() || size > image.size() - offset) return false;
        std::memcpy(out, image.data() + offset, size);
        return true;
    });
}

const std::string kGoMagic = std::string("\xff Go buildinf:", 14) + std::string(18, '\0');

std::vector<unsigned char> goNotes(size_t align = 4) {
    std::vector<unsigned char> notes;
    addNote(&notes, "GNU", NT_GNU_BUILD_ID, std::string(20, '\x5a'), align);
    addNote(&notes, "Go", 4, "l_74cxdSqkIHZRh8SijR/kXWO5asMELq502ijJzqS", align);
    return notes;
}

TEST(InspectElf, PlainDynamicProgram) {
    ImageSpec spec;
    addNote(&spec.notes, "GNU", NT_GNU_BUILD_ID, std::string(20, '\x11'));
    const ElfFacts f = inspect(build(spec));
    EXPECT_TRUE(f.elf);
    EXPECT_TRUE(f.dynamic);
    EXPECT_FALSE(f.go);
}

TEST(InspectElf, GoBuildIdNote) {
    ImageSpec spec;
    spec.notes = goNotes();
    const ElfFacts f = inspect(build(spec));
    EXPECT_TRUE(f.dynamic);
    EXPECT_TRUE(f.go);
}

TEST(InspectElf, GoBuildIdNoteInASegmentAlignedTo8) {
    ImageSpec spec;
    spec.notes = goNotes(8);
    spec.noteAlign = 8;
    EXPECT_TRUE(inspect(build(spec)).go);
}

TEST(InspectElf, StaticGoWithoutBuildIdIsFoundByItsBuildInfo) {
    ImageSpec spec;
    spec.interp = false;
    spec.sectionName = ".go.buildinfo";
    spec.sectionContent = kGoMagic;
    const ElfFacts f = inspect(build(spec));
    EXPECT_TRUE(f.elf);
    EXPECT_FALSE(f.dynamic);
    EXPECT_TRUE(f.go);
}

TEST(InspectElf, BuildInfoSectionWithoutGoMagicIsNotGo) {
    ImageSpec spec;
    spec.sectionName = ".go.buildinfo";
    spec.sectionContent = std::string(32, 'x');
    EXPECT_FALSE(inspect(build(spec)).go);
}

TEST(InspectElf, ANoteNamedGoOfAnotherTypeIsNotGo) {
    ImageSpec spec;
    addNote(&spec.notes, "Go", 1, "abcd");
    addNote(&spec.notes, "Gopher", 4, "abcd");
    EXPECT_FALSE(inspect(build(spec)).go);
}

TEST(InspectElf, NotElf) {
    const std::string script = "#!/bin/sh\necho hi\n";
    const ElfFacts f = inspect(std::vector<unsigned char>(script.begin(), script.end()));
    EXPECT_FALSE(f.elf);
    EXPECT_FALSE(f.go);
}

TEST(InspectElf, Elf32IsNotInspected) {
    std::vector<unsigned char> image = build(ImageSpec{});
    image[EI_CLASS] = ELFCLASS32;
    EXPECT_FALSE(inspect(image).elf);
}

// Every length the file claims is checked before use: truncations and absurd sizes give "not
// Go", never a read outside the image (ASan would see one).
TEST(InspectElf, TruncatedAndCorruptImagesAreHandled) {
    ImageSpec spec;
    spec.notes = goNotes();
    spec.sectionName = ".go.buildinfo";
    spec.sectionContent = kGoMagic;
    const std::vector<unsigned char> whole = build(spec);
    for (size_t size = 0; size < whole.size(); size += 7) {
        inspect(std::vector<unsigned char>(whole.begin(), whole.begin() + long(size)));
    }
    std::vector<unsigned char> bad = whole;
    Elf64_Ehdr eh;
    std::memcpy(&eh, bad.data(), sizeof eh);
    eh.e_phnum = 0xffff;
    eh.e_shnum = 0xffff;
    eh.e_shoff = ~uint64_t(0) - 8;
    std::memcpy(bad.data(), &eh, sizeof eh);
    EXPECT_TRUE(inspect(bad).elf);
}

TEST(NotesHaveGoBuildId, HugeSizesInANoteEndTheScan) {
    std::vector<unsigned char> notes;
    addNote(&notes, "GNU", 3, "x");
    Elf64_Nhdr h;
    std::memcpy(&h, notes.data(), sizeof h);
    h.n_descsz = 0xffffffffu;
    std::memcpy(notes.data(), &h, sizeof h);
    const std::vector<unsigned char> go = goNotes();
    notes.insert(notes.end(), go.begin(), go.end());
    EXPECT_FALSE(notesHaveGoBuildId(notes.data(), notes.size(), 4));
    EXPECT_TRUE(notesHaveGoBuildId(go.data(), go.size(), 4));
    EXPECT_FALSE(notesHaveGoBuildId(go.data(), 0, 4));
}

TEST(InspectFile, ThisTestBinaryIsADynamicNonGoProgram) {
    ElfFacts f;
    std::string error;
    ASSERT_TRUE(inspectFile("/proc/self/exe", &f, &error)) << error;
    EXPECT_TRUE(f.elf);
    EXPECT_TRUE(f.dynamic);
    EXPECT_FALSE(f.go);
}

TEST(InspectFile, MissingFileIsAnError) {
    ElfFacts f;
    std::string error;
    EXPECT_FALSE(inspectFile("/nonexistent-arbexe-test/prog", &f, &error));
    EXPECT_EQ(error, "No such file or directory");
}

TEST(LoadedGoObject, NoneInThisProcess) {
    EXPECT_EQ(loadedGoObject(), nullptr);
}

}  // namespace
}  // namespace arbexe
