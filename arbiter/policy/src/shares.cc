// The counting half of the allocation policy: how many cores each process gets at each priority
// level. Levels are served from 0 down; within a level cores are water-filled.
//
// Minimums take two phases. Admission: count, drop the least deserving process that got some cores
// but fewer than its minimum, count again, until none is short. Admission looks only at the
// requests (ties by priority, then key), never at what is held, so it decides the same way when
// re-run on its own result. Final count: the admitted processes again, now with the odd cores going
// to processes that already hold them, which is what keeps the even split stable between calls.
// Among the processes sharing the last level served, one whose minimum needs the odd core gets it
// first (in both phases), so the final count keeps every admitted process at its minimum: the two
// counts differ only in who gets the odd cores of that one level.
//
// Odd-core turns (OddCoreTurns) act in the final count only, and only among the processes of that
// one level that do not need an odd core for their minimum: they decide who of those gets the
// remaining odd cores, never how many.
#include <algorithm>
#include <numeric>

#include "arbpolicy/allocation.h"

namespace arbpolicy {
namespace {

// One process while its share is being computed. Built from its request; perLevel/total are
// rewritten by every counting pass; dropped only ever goes from false to true.
struct Entry {
    ProcessKey key = 0;
    std::array<uint32_t, kPriorityLevels> requested{};
    uint32_t maxCores = 0;
    uint32_t minimum = 0;  // effective minimum: minCores capped by what it can use at all
    uint32_t held = 0;     // cpus held now
    int bestLevel = kPriorityLevels;  // its most important level with a request
    size_t keepRank = 0;              // 0 = most deserving of its minimum (see rankForKeeping)
    bool dropped = false;             // below its minimum: gets nothing
    std::array<uint32_t, kPriorityLevels> perLevel{};
    uint32_t total = 0;
    TurnStamps turns{};           // odd-core turn stamps: the input, restamped by a rotating count
    bool holdsSharedOdd = false;  // set by the final count (see ProcessShare)
    bool waitsForOdd = false;
};

// How the cores that cannot be split evenly are handed out (after minimum-needy processes).
enum class TieBreak {
    byRank,      // admission: by keepRank, independent of holdings and turns
    byHoldings,  // final count: holding more beyond higher-level cores first, then the most recent
                 // turn, then smaller key
    byTurn,      // final count when rotating: least recent turn first, then holding less, then key
};

// One counting pass: its tie-break and, for a rotating count, the next fresh turn stamp.
struct Pass {
    TieBreak tieBreak = TieBreak::byRank;
    uint64_t nextStamp = 1;
};

// One process's demand at the level being filled.
struct Bid {
    size_t entry;
    ProcessKey key;
    uint32_t demand;
    int64_t order;  // tie-break, smaller first: keepRank, or minus the cpus held beyond `total`
    uint64_t turn;  // its turn stamp at this level
    int tier = 0;   // 0: one more core lifts it to its minimum; 1: no need; 2: short anyway
};

// The effective minimum: a minimum above everything the process could use means "all of it".
uint32_t effectiveMinimum(const ProcessRequest& request) {
    uint64_t wanted = 0;
    for (uint32_t n : request.requested) wanted += n;
    uint64_t usable = std::min<uint64_t>(wanted, request.maxCores);
    return static_cast<uint32_t>(std::min<uint64_t>(request.minCores, usable));
}

// One entry from one request.
Entry makeEntry(const ProcessRequest& request, const std::map<ProcessKey, uint32_t>& held,
                const OddCoreTurns& turns) {
    Entry entry;
    entry.key = request.key;
    entry.requested = request.requested;
    entry.maxCores = request.maxCores;
    entry.minimum = effectiveMinimum(request);
    auto it = held.find(request.key);
    entry.held = it == held.end() ? 0 : it->second;
    auto stamps = turns.stamps.find(request.key);
    if (stamps != turns.stamps.end()) entry.turns = stamps->second;
    for (int level = kPriorityLevels - 1; level >= 0; --level) {
        if (request.requested[level] > 0) entry.bestLevel = level;
    }
    return entry;
}

// One entry per distinct key (first occurrence wins), sorted by key so every pass is deterministic.
// Sorting indices rather than using a set: this runs on every allocation.
std::vector<Entry> buildEntries(const std::vector<ProcessRequest>& requests,
                                const std::map<ProcessKey, uint32_t>& held,
                                const OddCoreTurns& turns) {
    std::vector<size_t> order(requests.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return requests[a].key < requests[b].key; });
    std::vector<Entry> entries;
    entries.reserve(requests.size());
    for (size_t i : order) {
        if (entries.empty() || entries.back().key != requests[i].key) {
            entries.push_back(makeEntry(requests[i], held, turns));
        }
    }
    return entries;
}

// Who deserves its minimum most: higher priority (best requested level) first, then the smaller
// key. Processes short of their minimum are dropped in the reverse order. Holdings play no part
// (see the top of the file); a daemon that numbers processes in arrival order thereby keeps older
// processes running when a newcomer at the same priority cannot also get its minimum.
void rankForKeeping(std::vector<Entry>* entries) {
    std::vector<size_t> order(entries->size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const Entry& x = (*entries)[a];
        const Entry& y = (*entries)[b];
        return x.bestLevel != y.bestLevel ? x.bestLevel < y.bestLevel : x.key < y.key;
    });
    for (size_t rank = 0; rank < order.size(); ++rank) (*entries)[order[rank]].keepRank = rank;
}

// Gives `cores` to `entry` at `level`.
void grant(Entry* entry, int level, uint32_t cores) {
    entry->perLevel[level] += cores;
    entry->total += cores;
}

// The processes that want cores at `level`, each demand capped by what maxCores still allows.
void collectBids(const std::vector<Entry>& entries, int level, TieBreak tieBreak,
                 std::vector<Bid>* bids) {
    bids->clear();
    for (size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        if (e.dropped || e.total >= e.maxCores) continue;
        uint32_t demand = std::min(e.requested[level], e.maxCores - e.total);
        if (demand == 0) continue;
        int64_t order = tieBreak == TieBreak::byRank
                            ? static_cast<int64_t>(e.keepRank)
                            : static_cast<int64_t>(e.total) - static_cast<int64_t>(e.held);
        bids->push_back(Bid{i, e.key, demand, order, e.turns[level]});
    }
}

// Order of the bids for the odd cores within one tier (see TieBreak).
bool oddCoreFirst(const Bid& a, const Bid& b, TieBreak tieBreak) {
    if (tieBreak == TieBreak::byTurn) {
        if (a.turn != b.turn) return a.turn < b.turn;
        if (a.order != b.order) return a.order > b.order;
    } else {
        if (a.order != b.order) return a.order < b.order;
        if (tieBreak == TieBreak::byHoldings && a.turn != b.turn) return a.turn > b.turn;
    }
    return a.key < b.key;
}

// The final count's record of the odd cores among the processes that do not need one for their
// minimum (tier 1): who holds one and who waits (only where both exist), and a fresh turn stamp, in
// the order they were chosen, for each holder that starts a turn: every holder when rotating, else
// those that did not hold an odd core of this level already.
void recordOddCores(std::vector<Bid>::iterator first, std::vector<Bid>::iterator last,
                    uint32_t base, int level, Pass* pass, std::vector<Entry>* entries) {
    if (pass->tieBreak == TieBreak::byRank) return;
    bool anyHolder = false, anyWaiter = false;
    for (auto it = first; it != last; ++it) {
        if (it->tier != 1) continue;
        bool holds = (*entries)[it->entry].perLevel[level] > base;
        anyHolder |= holds;
        anyWaiter |= !holds;
    }
    if (!anyHolder || !anyWaiter) return;
    for (auto it = first; it != last; ++it) {
        if (it->tier != 1) continue;
        Entry& e = (*entries)[it->entry];
        bool holds = e.perLevel[level] > base;
        e.holdsSharedOdd |= holds;
        e.waitsForOdd |= !holds;
        const bool heldBefore = -it->order > static_cast<int64_t>(base);  // order = -(held beyond)
        if (holds && (pass->tieBreak == TieBreak::byTurn || !heldBefore))
            e.turns[level] = pass->nextStamp++;
    }
}

// Splits the cores that cannot be split evenly, one extra each: first to processes that reach
// their minimum only with it, then to those it does not matter to, last to those short of their
// minimum even with it; within each group in tie-break order.
void splitEvenly(std::vector<Bid>::iterator first, std::vector<Bid>::iterator last,
                 uint32_t remaining, int level, Pass* pass, std::vector<Entry>* entries) {
    const uint32_t count = static_cast<uint32_t>(last - first);
    const uint32_t base = remaining / count;
    uint32_t extra = remaining % count;
    for (auto it = first; it != last; ++it) {
        const Entry& e = (*entries)[it->entry];
        uint64_t withBase = static_cast<uint64_t>(e.total) + base;
        it->tier = withBase >= e.minimum ? 1 : withBase + 1 == e.minimum ? 0 : 2;
    }
    const TieBreak tieBreak = pass->tieBreak;
    std::sort(first, last, [tieBreak](const Bid& a, const Bid& b) {
        if (a.tier != b.tier) return a.tier < b.tier;
        return oddCoreFirst(a, b, tieBreak);
    });
    for (auto it = first; it != last; ++it) {
        uint32_t cores = base + (extra > 0 ? 1 : 0);
        if (extra > 0) --extra;
        grant(&(*entries)[it->entry], level, cores);
    }
    recordOddCores(first, last, base, level, pass, entries);
}

// Water-filling at one level: smallest demands first, each satisfied while it is within the even
// share of what is left; once one is not, the rest (all wanting more than the even share) split the
// remainder evenly. Returns the cores left for lower levels.
uint32_t waterFill(std::vector<Bid>* bids, uint32_t remaining, int level, Pass* pass,
                   std::vector<Entry>* entries) {
    std::sort(bids->begin(), bids->end(), [](const Bid& a, const Bid& b) {
        return a.demand != b.demand ? a.demand < b.demand : a.key < b.key;
    });
    for (auto it = bids->begin(); it != bids->end(); ++it) {
        uint32_t fairShare = remaining / static_cast<uint32_t>(bids->end() - it);
        if (it->demand > fairShare) {
            splitEvenly(it, bids->end(), remaining, level, pass, entries);
            return 0;
        }
        grant(&(*entries)[it->entry], level, it->demand);
        remaining -= it->demand;
    }
    return remaining;
}

// One counting pass over all levels with the current set of non-dropped processes.
void countOnce(uint32_t capacity, Pass* pass, std::vector<Entry>* entries, std::vector<Bid>* bids) {
    for (Entry& e : *entries) {
        e.perLevel = {};
        e.total = 0;
    }
    uint32_t remaining = capacity;
    for (int level = 0; level < kPriorityLevels && remaining > 0; ++level) {
        collectBids(*entries, level, pass->tieBreak, bids);
        if (!bids->empty()) remaining = waterFill(bids, remaining, level, pass, entries);
    }
}

// Drops the least deserving (highest keepRank) process that got some cores but fewer than its
// minimum; its cores may lift others to their minimum, so the caller counts again. Processes that
// got nothing are left in (they take nothing from anyone, and a later drop may lift them) until no
// such process is left; then those still short are marked dropped. Returns whether to count again.
bool dropShortOfMinimum(std::vector<Entry>* entries) {
    Entry* victim = nullptr;
    for (Entry& e : *entries) {
        bool shortOfMinimum = !e.dropped && e.total > 0 && e.total < e.minimum;
        if (shortOfMinimum && (victim == nullptr || e.keepRank > victim->keepRank)) victim = &e;
    }
    if (victim != nullptr) {
        victim->dropped = true;
        return true;
    }
    for (Entry& e : *entries) {
        if (e.total < e.minimum) e.dropped = true;
    }
    return false;
}

// Fresh stamps must be larger than every stamp given, including those of processes not in
// `requests` (the caller may keep them), so that "least recent" stays a total order.
uint64_t firstFreshStamp(const OddCoreTurns& turns) {
    uint64_t newest = 0;
    for (const auto& [key, stamps] : turns.stamps)
        for (uint64_t stamp : stamps) newest = std::max(newest, stamp);
    return newest + 1;
}

}  // namespace

// Admission (drop one short process at a time; each drop can only raise the others' shares, so at
// most one pass per process), then the final count with holdings (or, rotating, turns) as the
// tie-break.
Shares computeShares(uint32_t capacity, const std::vector<ProcessRequest>& requests,
                     const std::map<ProcessKey, uint32_t>& held, const OddCoreTurns& turns) {
    std::vector<Entry> entries = buildEntries(requests, held, turns);
    rankForKeeping(&entries);
    std::vector<Bid> bids;
    bids.reserve(entries.size());
    Pass admission;
    do {
        countOnce(capacity, &admission, &entries, &bids);
    } while (dropShortOfMinimum(&entries));
    Pass finalCount;
    finalCount.tieBreak = turns.rotate ? TieBreak::byTurn : TieBreak::byHoldings;
    finalCount.nextStamp = firstFreshStamp(turns);
    countOnce(capacity, &finalCount, &entries, &bids);
    Shares shares;
    for (const Entry& e : entries) {
        shares[e.key] =
            ProcessShare{e.perLevel, e.total, e.dropped, e.holdsSharedOdd, e.waitsForOdd, e.turns};
    }
    return shares;
}

}  // namespace arbpolicy
