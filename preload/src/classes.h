// Thread classes (`--class RULE=CLASS`): the rules are matched when pthread_create creates a user
// thread (start routine's symbol through libunwind, creation index, the creating stack's functions)
// and again when the thread is named. The placement the class drives comes with the core policy;
// this records the class per thread and, with --verbose, says which rule gave it.
#pragma once

#include <atomic>
#include <cstdint>

#include "arbconfig/config.h"
#include "arbrt/thread.h"
#include "class_rules.h"

namespace arbrun {

// A user thread's class, one member of ShimThreadState. All-zero (the runtime zeroes the storage
// at creation) means "not classified": main(), threads created before the rules were read, or a
// process without rules; classOf() then answers the default class.
// Concurrency: `index` and `fixedRule` are written by the creating thread before the thread is
// launched and only read afterwards; `decision` is replaced whole (one relaxed atomic word) by
// reclassifyOnName(), which may run on any thread, and read by any thread.
struct ThreadClassState {
    uint64_t index;                  // creation index (0 = first thread created after main)
    std::atomic<uint32_t> decision;  // 0, or kClassified | class << 16 | rule
    RuleIndex fixedRule;             // first sym:/index:/caller: rule that matched, or kNoRule
};

// pthread_create's fast check: false when there are neither rules nor --verbose, and then the
// whole feature costs this one load and branch.
bool classesActive();

// What pthread_create works out about a new thread before it exists; lives in its frame.
struct NewThreadClass {
    ThreadClassState state;  // copied into the thread by recordThreadClass()
    char symbol[160];        // start routine's symbol for the --verbose line (may be truncated)
};

// Computes the facts and the class of a thread about to be created by pthread_create with start
// routine `start`. `returnAddress` is pthread_create's own return address: the caller: frames are
// the ones from there outwards. Call only when classesActive().
void classifyNewThread(void* (*start)(void*), void* returnAddress, NewThreadClass* out);

// Stores `computed` in the thread `created` (allocated, not yet launched) and logs the --verbose
// line "arbrun: thread N (symbol) -> class C (rule R)".
void recordThreadClass(arbrt::ThreadId created, const NewThreadClass& computed);

// Re-evaluates the name: rules for `thread` now named `name` (for pthread_setname_np and
// prctl(PR_SET_NAME) interposers; call it after the name is stored). First match wins over all
// the thread's facts, exactly as at creation: a name: rule placed before the rule that matched at
// creation takes over; one placed after it does not. A thread never classified (main()) gets the
// name: rules only. Any thread may call it; `name` may be null (unnamed).
void reclassifyOnName(arbrt::ThreadId thread, const char* name);

// The class of a live user thread (the default class when it was never classified).
arbconfig::ThreadClass classOf(arbrt::ThreadId thread);

}  // namespace arbrun
