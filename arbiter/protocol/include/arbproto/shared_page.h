// Layout of the per-process "release" page the arbiter shares with a client (read-only for the
// client). The arbiter sets release[k] to 1 to ask the process to give core k back and clears it
// once the release is acknowledged; the client's dispatcher reads release[k] with one relaxed load
// per pass. After setting flags the arbiter increments releaseSeq and wakes it (a futex word in
// shared memory, so FUTEX_WAKE without FUTEX_PRIVATE_FLAG): a client thread may sleep on it
// instead of polling, and interrupt a carrier whose user thread computes (fast release).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "arbproto/messages.h"

namespace arbproto {

constexpr uint32_t kPageMagic = 0x50425241;  // "ARBP"
constexpr uint32_t kPageVersion = 1;
constexpr size_t kSharedPageSize = 4096;

// Written only by the arbiter (the client's mapping is read-only); read by any client thread.
// Relaxed ordering suffices: the flag is a hint to act, and the release itself is confirmed over
// the socket, which orders everything that matters.
struct SharedPage {
    uint32_t magic;
    uint32_t version;
    uint32_t maxCoreIds;
    // Incremented (release order, after the flags) each time the arbiter sets a release flag.
    // Arbiters before this field existed left it 0 and never woke it: waiters must use a timeout.
    std::atomic<uint32_t> releaseSeq;
    uint64_t epoch;
    uint8_t reserved1[40];  // header fills one cache line; flags start on the next
    std::atomic<uint8_t> release[kMaxCoreIds];
};

static_assert(sizeof(SharedPage) == kSharedPageSize);
static_assert(std::atomic<uint8_t>::is_always_lock_free);
static_assert(offsetof(SharedPage, release) == 64);
static_assert(offsetof(SharedPage, releaseSeq) == 12);

}  // namespace arbproto
