// Thread classes (`--class RULE=CLASS`): the rules are matched when pthread_create creates a user
// thread (start routine's symbol through libunwind, creation index, the creating stack's functions)
// and again when the thread is named. The class goes to the runtime, whose core policy places the
// thread by it (runtime/src/sched/core_policy.h); this records the class per thread and, with
// --explain-classes or --verbose, says which rule gave it.
#pragma once

#include <atomic>
#include <cstdint>

#include "arbconfig/config.h"
#include "arbrt/thread.h"
#include "threads/class_rules.h"

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

// The runtime's class for a configured one (the two enums list the same classes in one order).
inline arbrt::ThreadClass runtimeClass(arbconfig::ThreadClass threadClass) {
    static_assert(int(arbrt::ThreadClass::normal) == int(arbconfig::ThreadClass::normal) &&
                  int(arbrt::ThreadClass::exclusive) == int(arbconfig::ThreadClass::exclusive) &&
                  int(arbrt::ThreadClass::batch) == int(arbconfig::ThreadClass::batch));
    return arbrt::ThreadClass(int(threadClass));
}

// pthread_create's fast check: false when there are no rules, no --explain-classes or --verbose
// and the default class is normal, and then the whole feature costs this one load and branch (the
// thread is normal).
bool classesActive();

// The class of threads no rule matches (--default-class), for the runtime; also main()'s.
arbrt::ThreadClass defaultRuntimeClass();

// What pthread_create works out about a new thread before it exists; lives in its frame.
struct NewThreadClass {
    ThreadClassState state;  // copied into the thread by recordThreadClass()
    char symbol[160];        // start routine's symbol for the explaining line (may be truncated)

    // The class it gets, for ThreadAttributes::threadClass.
    arbrt::ThreadClass runtimeClass() const;
};

// Computes the facts and the class of a thread about to be created by pthread_create with start
// routine `start`. `returnAddress` is pthread_create's own return address: the caller: frames are
// the ones from there outwards. Call only when classesActive().
void classifyNewThread(void* (*start)(void*), void* returnAddress, NewThreadClass* out);

// Stores `computed` in the thread `created` (allocated, not yet launched) and, with
// --explain-classes or --verbose, says "arbrun: thread N (symbol) -> class C (rule K: RULE)" or
// "... (default)".
void recordThreadClass(arbrt::ThreadId created, const NewThreadClass& computed);

// The runtime could reserve no core for the exclusive thread `computed` describes (it runs on the
// shared cores until one can be reserved). Standalone: a warning, once per process, with what to
// do; with a core arbiter (which is asked for the core) only with --explain-classes/--verbose.
void reportExclusiveFallback(const NewThreadClass& computed);

// Re-evaluates the name: rules for `thread` now named `name` (for pthread_setname_np and
// prctl(PR_SET_NAME) interposers; call it after the name is stored). First match wins over all
// the thread's facts, exactly as at creation: a name: rule placed before the rule that matched at
// creation takes over; one placed after it does not. A thread never classified (main()) gets the
// name: rules only. A changed class goes to the runtime (arbrt::setThreadClass: applied at the
// thread's next switch). Any thread may call it; `name` may be null (unnamed).
void reclassifyOnName(arbrt::ThreadId thread, const char* name);

// The class of a live user thread (the default class when it was never classified).
arbconfig::ThreadClass classOf(arbrt::ThreadId thread);

}  // namespace arbrun
