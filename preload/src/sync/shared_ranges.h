// Which addresses lie in memory shared with other processes: the pure part (no system calls, no
// allocation), unit-tested on its own. shared_memory.cc feeds it /proc/self/maps and keeps the
// result.
#pragma once

#include <cstddef>
#include <cstdint>

namespace arbrun {

// [begin, end): one range of the address space.
struct AddressRange {
    uintptr_t begin;
    uintptr_t end;
    friend bool operator==(const AddressRange&, const AddressRange&) = default;
};

// Reads the text of /proc/<pid>/maps in pieces of any size (a line may be split between two
// feed() calls) and reports each maximal run of shared mappings (permission flag 's': MAP_SHARED
// files and anonymous memory, System V shm) to `emit`, in address order, adjacent shared mappings
// merged into one range. Lines it cannot read are skipped. A run is reported once it ends: at the
// first mapping after it that is not adjacent or not shared, or at finish().
class MapsParser {
  public:
    using Emit = void (*)(void* context, AddressRange range);
    MapsParser(Emit emit, void* context) : emit_(emit), context_(context) {}

    void feed(const char* text, size_t size);
    // End of the text: reports the last run.
    void finish();

  private:
    enum class State : uint8_t { start, end, perms, skip };
    void consume(char c);
    void endLine();
    void mapping(uintptr_t begin, uintptr_t end, bool shared);

    Emit emit_;
    void* context_;
    State state_ = State::start;
    int permIndex_ = 0;
    bool digits_ = false;  // the current hex field has at least one digit
    uintptr_t begin_ = 0, end_ = 0;
    bool haveRun_ = false;
    AddressRange run_{0, 0};
};

// Whether `address` lies in one of `count` ranges sorted by address and disjoint (what MapsParser
// reports), the i-th read by rangeAt(i) (a table read under a sequence lock loads each field
// atomically). O(log count).
template <typename RangeAt>
bool rangesContain(size_t count, uintptr_t address, RangeAt rangeAt) {
    // The first range that begins after `address`; the one before it is the only candidate.
    size_t low = 0, high = count;
    while (low < high) {
        const size_t mid = low + (high - low) / 2;
        if (rangeAt(mid).begin <= address) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    return low > 0 && address < rangeAt(low - 1).end;
}

// The same over a plain array.
inline bool rangesContain(const AddressRange* ranges, size_t count, uintptr_t address) {
    return rangesContain(count, address, [ranges](size_t i) { return ranges[i]; });
}

}  // namespace arbrun
