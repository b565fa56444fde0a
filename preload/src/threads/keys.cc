// pthread keys for user threads. The key functions stay glibc's own: pthread_setspecific and
// pthread_getspecific work on THREAD_SELF's `struct pthread`, which for a user thread is its own
// TCB, so values are per user thread already, and pthread_key_create/delete (EAGAIN past
// PTHREAD_KEYS_MAX, sequence numbers that hide stale values of a recycled key) need nothing
// from us. What glibc cannot do is run the destructors: its start_thread never runs for a user
// thread. runKeyDestructors() does that part, reading glibc's key tables:
//   __pthread_keys[1024]         {seq, destructor}; seq odd while the key exists
//   struct pthread: specific[32] pointers to blocks of 32 {seq, data}; specific[0] points at the
//                                TCB's first block
//                   specific_used set by pthread_setspecific(non-NULL), right after specific[]
// The layout is checked once against the _thread_db descriptors glibc exports for debuggers
// ({bits, count, offset}); if it differs, destructors are skipped with one warning.
#include "threads/keys.h"
#include <atomic>

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "libc/real_libc.h"
#include "libc/shim.h"

namespace arbrun {
namespace {

constexpr size_t kBlocks = 32, kBlockEntries = 32;

// glibc's struct pthread_key_data and struct pthread_key_struct.
struct KeyData {
    uintptr_t seq;
    void* data;
};
struct KeyStruct {
    uintptr_t seq;
    void (*destructor)(void*);
};

// Where glibc keeps things; written once by the first exiting thread, read-only afterwards.
struct KeyLayout {
    const KeyStruct* keys = nullptr;  // __pthread_keys
    size_t specificOffset = 0;        // struct pthread: specific[]
    size_t specificUsedOffset = 0;    // struct pthread: specific_used
};

// Checks one {bits, count, offset} descriptor.
bool descriptorIs(const char* name, uint32_t bits, uint32_t count, uint32_t* offset) {
    auto* d = static_cast<const uint32_t*>(dlvsym(RTLD_DEFAULT, name, "GLIBC_PRIVATE"));
    if (!d || d[0] != bits || d[1] != count) return false;
    if (offset) *offset = d[2];
    return true;
}

bool sizeIs(const char* name, uint32_t size) {
    auto* d = static_cast<const uint32_t*>(dlvsym(RTLD_DEFAULT, name, "GLIBC_PRIVATE"));
    return d && d[0] == size;
}

// Probes glibc's key layout; an empty layout (keys == nullptr) when it is not the known one.
KeyLayout probeLayout() {
    KeyLayout layout;
    uint32_t specific = 0, seq = 1, data = 1, keySeq = 1, destructor = 1;
    const bool known =
        descriptorIs("_thread_db_pthread_specific", 64 * kBlocks, 1, &specific) &&
        descriptorIs("_thread_db_pthread_key_data_seq", 64, 1, &seq) && seq == 0 &&
        descriptorIs("_thread_db_pthread_key_data_data", 64, 1, &data) && data == 8 &&
        sizeIs("_thread_db_sizeof_pthread_key_data", sizeof(KeyData)) &&
        descriptorIs("_thread_db_pthread_key_data_level2_data", 128, kBlockEntries, nullptr) &&
        descriptorIs("_thread_db___pthread_keys", 128, PTHREAD_KEYS_MAX, nullptr) &&
        descriptorIs("_thread_db_pthread_key_struct_seq", 64, 1, &keySeq) && keySeq == 0 &&
        descriptorIs("_thread_db_pthread_key_struct_destr", 64, 1, &destructor) &&
        destructor == 8 && sizeIs("_thread_db_sizeof_pthread_key_struct", sizeof(KeyStruct));
    const void* keys = dlvsym(RTLD_DEFAULT, "__pthread_keys", "GLIBC_PRIVATE");
    if (!known || !keys) {
        logWarning("unknown layout of glibc's pthread keys: key destructors will not run");
        return layout;
    }
    layout.keys = static_cast<const KeyStruct*>(keys);
    layout.specificOffset = specific;
    layout.specificUsedOffset = specific + kBlocks * sizeof(void*);  // `bool specific_used`
    return layout;
}

const KeyLayout& keyLayout() {
    static const KeyLayout layout = probeLayout();
    return layout;
}

KeyData** blocksOf(char* self, const KeyLayout& layout) {
    return reinterpret_cast<KeyData**>(self + layout.specificOffset);
}

bool& specificUsed(char* self, const KeyLayout& layout) {
    return *reinterpret_cast<bool*>(self + layout.specificUsedOffset);
}

// One pass over every key, in index order like glibc: each non-NULL value is cleared, then
// handed to its destructor if the key still exists with the same sequence number (a deleted or
// recreated key's value is the program's to free). Destructors may set values again, even in
// blocks that did not exist yet, so each block pointer is re-read.
void destroyOnePass(char* self, const KeyLayout& layout) {
    KeyData** blocks = blocksOf(self, layout);
    for (size_t b = 0; b < kBlocks; ++b) {
        KeyData* block = std::atomic_ref(blocks[b]).load(std::memory_order_relaxed);
        if (!block) continue;
        for (size_t i = 0; i < kBlockEntries; ++i) {
            void* data = block[i].data;
            if (!data) continue;
            block[i].data = nullptr;
            const KeyStruct& key = layout.keys[b * kBlockEntries + i];
            const uintptr_t keySeq = std::atomic_ref(key.seq).load(std::memory_order_relaxed);
            void (*destructor)(void*) =
                std::atomic_ref(key.destructor).load(std::memory_order_relaxed);
            if (block[i].seq == keySeq && destructor) destructor(data);
        }
    }
}

// Leaves the storage as a fresh thread has it: first block zeroed, the others freed (glibc
// allocated them with calloc in pthread_setspecific).
void releaseStorage(char* self, const KeyLayout& layout) {
    KeyData** blocks = blocksOf(self, layout);
    if (blocks[0]) std::memset(blocks[0], 0, kBlockEntries * sizeof(KeyData));
    for (size_t b = 1; b < kBlocks; ++b) {
        std::free(blocks[b]);
        blocks[b] = nullptr;
    }
    specificUsed(self, layout) = false;
}

// Runs the key destructors of the calling thread (see keys.h).
void destroyKeys() {
    const KeyLayout& layout = keyLayout();
    if (!layout.keys) return;
    char* self = reinterpret_cast<char*>(pthread_self());  // the TCB: glibc's THREAD_SELF
    bool& used = specificUsed(self, layout);
    if (!std::atomic_ref(used).load(std::memory_order_relaxed)) return;  // no value was ever set
    for (int round = 0; round < PTHREAD_DESTRUCTOR_ITERATIONS; ++round) {
        std::atomic_ref(used).store(false, std::memory_order_relaxed);
        destroyOnePass(self, layout);
        if (!std::atomic_ref(used).load(std::memory_order_relaxed))
            break;  // no destructor set a value
    }
    releaseStorage(self, layout);
}

}  // namespace

void runKeyDestructors() {
    // glibc's order at thread exit: thread_local destructors first, then the keys'.
    using TlsDtors = void (*)();
    static const auto callTlsDtors =
        reinterpret_cast<TlsDtors>(lookupReal("__call_tls_dtors", "GLIBC_PRIVATE"));
    callTlsDtors();
    destroyKeys();
}

}  // namespace arbrun
