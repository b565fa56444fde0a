// mmap, munmap, mremap, shmat and shmdt: glibc's, followed by one atomic increment that tells
// inSharedMapping() (shared_memory.h) to reread the shared ranges before its next answer. mmap
// counts only when it may add a shared mapping or replace one (MAP_SHARED, MAP_FIXED); the others
// always count (a removed shared range may come back as private memory).
#include <sys/mman.h>
#include <sys/shm.h>

#include <cstdarg>

#include "libc/real_libc.h"
#include "libc/shim.h"
#include "sync/shared_memory.h"

namespace arbrun {
namespace {

// Whether an mmap with these flags may change which addresses are shared.
bool mayChangeShared(int flags) {
    return (flags & (MAP_SHARED | MAP_FIXED | MAP_FIXED_NOREPLACE)) != 0;
}

}  // namespace
}  // namespace arbrun

using namespace arbrun;

ARBRUN_EXPORT void* mmap(void* address, size_t length, int prot, int flags, int fd, off_t offset) {
    void* result = ARBRUN_REAL(mmap)(address, length, prot, flags, fd, offset);
    if (mayChangeShared(flags)) noteMappingsChanged();
    return result;
}

// The same symbol under its large-file name (glibc exports both).
ARBRUN_EXPORT void* mmap64(void* address, size_t length, int prot, int flags, int fd,
                           off64_t offset) {
    void* result = ARBRUN_REAL(mmap64)(address, length, prot, flags, fd, offset);
    if (mayChangeShared(flags)) noteMappingsChanged();
    return result;
}

ARBRUN_EXPORT int munmap(void* address, size_t length) {
    const int result = ARBRUN_REAL(munmap)(address, length);
    noteMappingsChanged();
    return result;
}

// The new address is passed only with MREMAP_FIXED (glibc's own wrapper reads it the same way).
ARBRUN_EXPORT void* mremap(void* old, size_t oldSize, size_t newSize, int flags, ...) {
    void* newAddress = nullptr;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        newAddress = va_arg(ap, void*);
        va_end(ap);
    }
    void* result = ARBRUN_REAL(mremap)(old, oldSize, newSize, flags, newAddress);
    noteMappingsChanged();
    return result;
}

ARBRUN_EXPORT void* shmat(int id, const void* address, int flags) {
    void* result = ARBRUN_REAL(shmat)(id, address, flags);
    noteMappingsChanged();
    return result;
}

ARBRUN_EXPORT int shmdt(const void* address) {
    const int result = ARBRUN_REAL(shmdt)(address);
    noteMappingsChanged();
    return result;
}
