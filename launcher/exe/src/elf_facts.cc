// The ELF reading behind elf_facts.h. Every size the file claims is bounded before it is read,
// so a corrupt or hostile file costs a few KiB of reads at most and never a crash.
#include "arbexe/elf_facts.h"

#include "arbexe/elf_header.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace arbexe {
namespace {

// Bounds on what is read beside the program headers (elf_header.h): more sections or note bytes
// than any real program has (Go binaries have ~35 sections; C++ ones a few more).
constexpr size_t kMaxSections = 512;
constexpr size_t kMaxNoteBytes = 4096;
constexpr size_t kMaxSectionNameBytes = 16384;

// Go's linker names its build-id note "Go" (namesz 4, "Go\0\0") with type 4
// (ELF_NOTE_GOBUILDID_TAG); the build-info blob starts with this 14-byte magic.
constexpr uint32_t kGoBuildIdType = 4;
constexpr char kGoBuildInfoMagic[] = "\xff Go buildinf:";
constexpr size_t kGoBuildInfoMagicSize = sizeof kGoBuildInfoMagic - 1;

// Rounds n up to a multiple of align (a power of two).
size_t alignUp(size_t n, size_t align) {
    return (n + align - 1) & ~(align - 1);
}

// The ELF header, when the image starts with one for little-endian ELF64 with entries of the
// sizes this code reads.
bool readHeader(const ReadAt& read, Elf64_Ehdr* header) {
    return read(0, header, sizeof *header) && isReadableElf64(*header);
}

// Whether one PT_NOTE segment, read from the file, holds Go's build-id note.
bool segmentHasGoNote(const ReadAt& read, const Elf64_Phdr& note) {
    const size_t size = note.p_filesz < kMaxNoteBytes ? size_t(note.p_filesz) : kMaxNoteBytes;
    std::vector<unsigned char> bytes(size);
    if (size == 0 || !read(note.p_offset, bytes.data(), size)) return false;
    return notesHaveGoBuildId(bytes.data(), size, note.p_align == 8 ? 8 : 4);
}

// The section headers (the count from section 0 when e_shnum overflows), bounded.
bool readSections(const ReadAt& read, const Elf64_Ehdr& header, std::vector<Elf64_Shdr>* sections) {
    if (header.e_shoff == 0 || header.e_shentsize != sizeof(Elf64_Shdr)) return false;
    size_t count = header.e_shnum;
    if (count == 0) {
        Elf64_Shdr first;
        if (!read(header.e_shoff, &first, sizeof first)) return false;
        count = size_t(first.sh_size);
    }
    if (count == 0 || count > kMaxSections) return false;
    sections->resize(count);
    return read(header.e_shoff, sections->data(), count * sizeof(Elf64_Shdr));
}

// Whether a section named .go.buildinfo exists and starts with Go's build-info magic (so a C
// program with a section of that name by chance is not taken for Go).
bool hasGoBuildInfo(const ReadAt& read, const Elf64_Ehdr& header) {
    std::vector<Elf64_Shdr> sections;
    if (!readSections(read, header, &sections)) return false;
    size_t namesIndex = header.e_shstrndx;
    if (namesIndex == SHN_XINDEX) namesIndex = sections[0].sh_link;
    if (namesIndex == SHN_UNDEF || namesIndex >= sections.size()) return false;
    const Elf64_Shdr& namesSection = sections[namesIndex];
    const size_t namesSize = namesSection.sh_size < kMaxSectionNameBytes
                                 ? size_t(namesSection.sh_size)
                                 : kMaxSectionNameBytes;
    std::vector<char> names(namesSize + 1, '\0');
    if (namesSize == 0 || !read(namesSection.sh_offset, names.data(), namesSize)) return false;
    for (const Elf64_Shdr& s : sections) {
        if (s.sh_name >= namesSize || std::strcmp(&names[s.sh_name], ".go.buildinfo") != 0) {
            continue;
        }
        char magic[kGoBuildInfoMagicSize];
        return s.sh_type == SHT_PROGBITS && s.sh_size >= sizeof magic &&
               read(s.sh_offset, magic, sizeof magic) &&
               std::memcmp(magic, kGoBuildInfoMagic, sizeof magic) == 0;
    }
    return false;
}

}  // namespace

// Notes are (namesz, descsz, type, name, desc); name and desc each start at an offset aligned to
// `align` from the segment's start (the header is 12 bytes: with 8, the name's padding counts).
bool notesHaveGoBuildId(const void* notes, size_t size, size_t align) {
    const auto* bytes = static_cast<const unsigned char*>(notes);
    size_t at = 0;
    while (at <= size && size - at >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr note;
        std::memcpy(&note, bytes + at, sizeof note);
        const size_t nameAt = at + sizeof note;
        if (note.n_namesz > size - nameAt) return false;
        const char* name = reinterpret_cast<const char*>(bytes + nameAt);
        if (note.n_type == kGoBuildIdType && note.n_namesz >= 3 &&
            std::memcmp(name, "Go\0", 3) == 0) {
            return true;
        }
        const size_t descAt = alignUp(nameAt + note.n_namesz, align);
        if (descAt > size || note.n_descsz > size - descAt) return false;
        at = alignUp(descAt + note.n_descsz, align);
    }
    return false;
}

// Program headers first (every program has a few, and the Go note sits among the first pages);
// the section headers only when no Go note was found.
ElfFacts inspectElf(const ReadAt& read) {
    ElfFacts facts;
    Elf64_Ehdr header;
    if (!readHeader(read, &header)) return facts;
    facts.elf = true;
    const size_t count = programHeadersToRead(header);
    std::vector<Elf64_Phdr> programHeaders(count);
    if (count != 0 && read(header.e_phoff, programHeaders.data(), count * sizeof(Elf64_Phdr))) {
        for (const Elf64_Phdr& p : programHeaders) {
            if (p.p_type == PT_INTERP) facts.dynamic = true;
            if (p.p_type == PT_NOTE && !facts.go) facts.go = segmentHasGoNote(read, p);
        }
    }
    if (!facts.go) facts.go = hasGoBuildInfo(read, header);
    return facts;
}

// pread until `size` bytes or end of file; EINTR retried.
bool inspectFile(const std::string& path, ElfFacts* facts, std::string* error) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *error = std::strerror(errno);
        return false;
    }
    *facts = inspectElf([fd](uint64_t offset, void* out, size_t size) {
        auto* to = static_cast<char*>(out);
        while (size > 0) {
            const ssize_t n = pread(fd, to, size, off_t(offset));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            to += n;
            size -= size_t(n);
            offset += uint64_t(n);
        }
        return true;
    });
    close(fd);
    return true;
}

}  // namespace arbexe
