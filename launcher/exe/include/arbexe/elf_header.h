// The ELF header checks both readers of a program's ELF file make: inspectElf() (elf_facts.h) and
// the launcher's fast start (arbfast/fast_start.h), which runs before glibc's start-up. So this
// header is freestanding: inline functions over <elf.h>'s types, no library call.
#pragma once

#include <elf.h>

#include <cstddef>

namespace arbexe {

// Program headers read at most (Go binaries have ~14, C++ ones a few more).
constexpr size_t kMaxProgramHeaders = 64;

// Whether `header` starts a little-endian ELF64 file whose program headers, if it has any, are of
// the size these readers read.
inline bool isReadableElf64(const Elf64_Ehdr& header) {
    return header.e_ident[EI_MAG0] == ELFMAG0 && header.e_ident[EI_MAG1] == ELFMAG1 &&
           header.e_ident[EI_MAG2] == ELFMAG2 && header.e_ident[EI_MAG3] == ELFMAG3 &&
           header.e_ident[EI_CLASS] == ELFCLASS64 && header.e_ident[EI_DATA] == ELFDATA2LSB &&
           (header.e_phnum == 0 || header.e_phentsize == sizeof(Elf64_Phdr));
}

// How many of its program headers are read: the first kMaxProgramHeaders.
inline size_t programHeadersToRead(const Elf64_Ehdr& header) {
    return header.e_phnum < kMaxProgramHeaders ? header.e_phnum : kMaxProgramHeaders;
}

}  // namespace arbexe
