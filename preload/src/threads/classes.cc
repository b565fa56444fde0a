// Thread classes at pthread_create: facts through libunwind, rules through ClassRuleSet.
//
// libunwind is loaded with dlopen(RTLD_LOCAL) when the rules need symbols (or --verbose names
// threads), never linked: libunwind.so exports its own _Unwind_RaiseException, _Unwind_GetIP,
// backtrace, ... and, loaded as a dependency of an LD_PRELOAD library, those would interpose the
// program's libgcc_s versions (C++ exceptions and glibc's cancellation unwinding would then mix two
// unwinders). Its static archive is not position-independent, so it cannot be linked in hidden.
#include "threads/classes.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <libunwind.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "libc/shim.h"
#include "threads/thread_state.h"

#ifndef ARBRUN_LIBUNWIND_SONAME
#define ARBRUN_LIBUNWIND_SONAME "libunwind.so.8"
#endif

namespace arbrun {
namespace {

constexpr uint32_t kClassified = 1u << 31;
constexpr int kMaxFrames = 64;  // deep enough for any creating stack a rule would name

// The libunwind entry points we use, resolved once at start-up; all null when it is missing.
struct Unwinder {
    unw_addr_space_t space = nullptr;
    unw_accessors_t* accessors = nullptr;
    int (*backtrace)(void**, int) = nullptr;
    int (*procInfo)(unw_addr_space_t, unw_word_t, unw_proc_info_t*, void*) = nullptr;  // optional

    bool usable() const { return accessors && accessors->get_proc_name && backtrace; }
};

// Written once by the library constructor below, before the program's main() and before any
// other user thread exists; read-only afterwards (so read without synchronisation).
bool gActive = false;
bool gExplain = false;  // --explain-classes or --verbose: a line per classified thread
const ClassRuleSet* gRules = nullptr;  // never freed: threads may be created during exit()
arbconfig::ThreadClass gDefaultClass = arbconfig::ThreadClass::normal;
Unwinder gUnwinder;
// Creation order of pthread_create'd user threads; counted only while the feature is active.
std::atomic<uint64_t> gNextIndex{0};

// Symbol lookups read the ELF file each time (tens of µs), while programs create many threads
// from the same few start routines and call sites: a direct-mapped cache of recent answers, keyed
// by address and exactness. Guarded by a spinlock held only to copy one entry (never across a
// lookup), so contention costs little and a lookup never waits on another.
struct SymbolCache {
    static constexpr size_t kEntries = 256;
    struct Entry {
        uintptr_t key = 0;  // address | exact (bit 63); 0: empty
        std::string symbol;
    };
    std::atomic_flag lock = ATOMIC_FLAG_INIT;
    Entry entries[kEntries];

    static uintptr_t keyOf(uintptr_t ip, bool exact) { return ip | (uintptr_t(exact) << 63); }
    static size_t slotOf(uintptr_t key) { return (key ^ (key >> 12)) % kEntries; }
    void acquire() {
        while (lock.test_and_set(std::memory_order_acquire)) {
        }
    }
    void release() { lock.clear(std::memory_order_release); }

    bool find(uintptr_t key, std::string* out) {
        acquire();
        const Entry& entry = entries[slotOf(key)];
        const bool hit = entry.key == key;
        if (hit) *out = entry.symbol;
        release();
        return hit;
    }
    void store(uintptr_t key, const std::string& symbol) {
        acquire();
        Entry& entry = entries[slotOf(key)];
        entry.key = key;
        entry.symbol = symbol;
        release();
    }
};
SymbolCache* gSymbolCache = nullptr;  // created with gRules, never freed (as gRules)

// Loads libunwind privately (see the file comment) and looks up the three entry points; says
// once why symbols will not match when it cannot.
void loadUnwinder() {
    void* handle = dlopen(ARBRUN_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        logWarning("cannot load %s (%s); sym: and caller: class rules will not match",
                   ARBRUN_LIBUNWIND_SONAME, dlerror());
        return;
    }
    auto* space = static_cast<unw_addr_space_t*>(dlsym(handle, "_ULx86_64_local_addr_space"));
    auto getAccessors = reinterpret_cast<unw_accessors_t* (*)(unw_addr_space_t)>(
        dlsym(handle, "_Ux86_64_get_accessors"));
    gUnwinder.backtrace = reinterpret_cast<int (*)(void**, int)>(dlsym(handle, "unw_backtrace"));
    if (space && getAccessors) {
        gUnwinder.space = *space;
        gUnwinder.accessors = getAccessors(*space);
    }
    if (!gUnwinder.usable())
        logWarning("%s lacks the local unwinding API; sym: and caller: class rules will not match",
                   ARBRUN_LIBUNWIND_SONAME);
}

// Reads the rules with the same parser as start-up (a malformed environment makes start-up run
// the program natively, so nothing is classified then either). Priority 102: after the runtime
// start in startup.cc (101), before the program's constructors.
__attribute__((constructor(102))) void readClassRules() {
    arbconfig::Config config;
    if (!arbconfig::fromEnvironment([](const char* name) { return getenv(name); }, &config,
                                    nullptr))
        return;
    gDefaultClass = config.defaultClass;
    const bool explain = config.verbose || config.explainClasses;
    if (config.classRules.empty() && !explain &&
        config.defaultClass == arbconfig::ThreadClass::normal)
        return;
    auto* rules = new ClassRuleSet(std::move(config.classRules), config.defaultClass);
    gExplain = explain;
    if (rules->needsSymbol() || rules->needsCallers() || gExplain) loadUnwinder();
    gSymbolCache = new SymbolCache;
    gRules = rules;
    gActive = true;
}

// Whether the symbol found for `ip` (starting at ip - offset) is really the function holding
// it: in a stripped library a local function has no symbol, and the lookup returns the nearest
// exported one before it (std::thread's start routine came out as
// std::error_code::default_error_condition). The unwind tables know the function's true start.
bool symbolOwnsIp(uintptr_t ip, unw_word_t offset) {
    if (!gUnwinder.procInfo) return true;
    unw_proc_info_t info{};
    if (gUnwinder.procInfo(gUnwinder.space, ip, &info, nullptr) != 0) return true;  // no tables
    return info.start_ip == ip - offset;
}

// The function containing `ip` by the ELF symbol tables (.symtab too, so static functions of an
// unstripped binary resolve), demangled when it is a C++ name; empty when unknown. With
// `exact`, only a symbol starting at `ip` counts (a start routine's address is its entry).
std::string symbolAt(uintptr_t ip, bool exact) {
    if (!gUnwinder.usable()) return {};
    char raw[512];
    unw_word_t offset = 0;
    if (gUnwinder.accessors->get_proc_name(gUnwinder.space, ip, raw, sizeof raw, &offset,
                                           nullptr) != 0)
        return {};
    if (exact ? offset != 0 : !symbolOwnsIp(ip, offset)) return {};
    if (raw[0] != '_' || raw[1] != 'Z') return raw;
    int status = 0;
    char* demangled = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
    std::string out = status == 0 && demangled ? demangled : raw;
    std::free(demangled);
    return out;
}

// symbolAt() through the cache.
std::string cachedSymbolAt(uintptr_t ip, bool exact) {
    const uintptr_t key = SymbolCache::keyOf(ip, exact);
    std::string symbol;
    if (gSymbolCache->find(key, &symbol)) return symbol;
    symbol = symbolAt(ip, exact);
    gSymbolCache->store(key, symbol);
    return symbol;
}

// The creating stack's functions, innermost first, starting at pthread_create's caller (frames
// inside this library are not the program's). Return addresses point after the call: look up
// ip - 1 so that a call ending a function is attributed to it.
std::vector<std::string> callersFrom(void* returnAddress) {
    void* frames[kMaxFrames];
    const int count = gUnwinder.usable() ? gUnwinder.backtrace(frames, kMaxFrames) : 0;
    int first = 1;
    for (int i = 0; i < count; ++i) {
        if (frames[i] == returnAddress) {
            first = i;
            break;
        }
    }
    std::vector<std::string> callers;
    for (int i = first; i < count; ++i)
        callers.push_back(cachedSymbolAt(reinterpret_cast<uintptr_t>(frames[i]) - 1, false));
    return callers;
}

uint32_t encode(const ClassDecision& decision) {
    return kClassified | uint32_t(decision.threadClass) << 16 | decision.rule;
}

ClassDecision decode(uint32_t word) {
    return {arbconfig::ThreadClass((word >> 16) & 0xff), RuleIndex(word & 0xffff)};
}

// The class's name as a C string for the explaining lines.
const char* className(arbconfig::ThreadClass threadClass) {
    return threadClassName(threadClass).data();  // views of string literals: NUL-terminated
}

// "rule 2: sym:worker*=batch" (numbered from 1 in --class order, as ARBRUN_CLASS errors number
// them) or "default", for the explaining lines.
std::string ruleText(const ClassDecision& decision) {
    const arbconfig::ClassRule* rule = gRules->rule(decision.rule);
    if (!rule) return "default";
    return "rule " + std::to_string(decision.rule + 1) + ": " + rule->text;
}

// Whether the "no core can be reserved" line was said (once per process).
std::atomic<bool> gFallbackSaid{false};

}  // namespace

bool classesActive() {
    return gActive;
}

arbrt::ThreadClass defaultRuntimeClass() {
    return runtimeClass(gDefaultClass);
}

arbrt::ThreadClass NewThreadClass::runtimeClass() const {
    return arbrun::runtimeClass(decode(state.decision.load(std::memory_order_relaxed)).threadClass);
}

// Everything but the name is known now; the name is empty until the thread names itself.
void classifyNewThread(void* (*start)(void*), void* returnAddress, NewThreadClass* out) {
    const uint64_t index = gNextIndex.fetch_add(1, std::memory_order_relaxed);
    const bool wantSymbol = gRules->needsSymbol() || gExplain;
    const std::string symbol =
        wantSymbol ? cachedSymbolAt(reinterpret_cast<uintptr_t>(start), true) : "";
    std::vector<std::string> callerNames;
    if (gRules->needsCallers()) callerNames = callersFrom(returnAddress);
    arbconfig::ThreadFacts facts;
    facts.symbol = symbol;
    facts.index = index;
    facts.callers.assign(callerNames.begin(), callerNames.end());
    const RuleIndex fixedRule = gRules->firstFixedMatch(facts);
    out->state.index = index;
    out->state.fixedRule = fixedRule;
    out->state.decision.store(encode(gRules->decide(fixedRule, "")), std::memory_order_relaxed);
    std::snprintf(out->symbol, sizeof out->symbol, "%s", symbol.empty() ? "?" : symbol.c_str());
}

// The thread is not running yet, so plain stores suffice; launching it publishes them.
void recordThreadClass(arbrt::ThreadId created, const NewThreadClass& computed) {
    ShimThreadState* shim = shimStateOf(created);
    if (!shim) return;
    ThreadClassState& state = shim->threadClass;
    const uint32_t word = computed.state.decision.load(std::memory_order_relaxed);
    state.index = computed.state.index;
    state.fixedRule = computed.state.fixedRule;
    state.decision.store(word, std::memory_order_relaxed);
    if (!gExplain) return;
    const ClassDecision decision = decode(word);
    logAlways("thread %llu (%s) -> class %s (%s)", (unsigned long long)computed.state.index,
              computed.symbol, className(decision.threadClass), ruleText(decision).c_str());
}

// Standalone, the process's cores are all it will have: a warning, with what to do. With a core
// arbiter the request already asks for a core per exclusive thread, and the reservation follows
// its grant: expected at start-up, so said only when asked (--verbose, --explain-classes).
void reportExclusiveFallback(const NewThreadClass& computed) {
    if (coresFromArbiter()) {
        if (!gExplain) return;
        logAlways(
            "no granted core can be reserved yet for exclusive thread %llu (%s): it runs on "
            "the shared cores until the core arbiter grants one more (one core always "
            "stays shared)",
            (unsigned long long)computed.state.index, computed.symbol);
        return;
    }
    if (gFallbackSaid.exchange(true, std::memory_order_relaxed)) return;
    logWarning(
        "no core can be reserved for exclusive thread %llu (%s): one core always stays "
        "shared; it runs on the shared cores until one can be (give the process more "
        "cores with --cores)",
        (unsigned long long)computed.state.index, computed.symbol);
}

// Relaxed: the word is self-contained, and a concurrent reader may see either class. The runtime
// applies a change at the thread's next switch, whoever names it.
void reclassifyOnName(arbrt::ThreadId thread, const char* name) {
    if (!gActive || gRules->empty()) return;
    ShimThreadState* shim = shimStateOf(thread);
    if (!shim) return;
    ThreadClassState& state = shim->threadClass;
    const uint32_t before = state.decision.load(std::memory_order_relaxed);
    const bool classified = before != 0;
    const RuleIndex fixedRule = classified ? state.fixedRule : kNoRule;
    const ClassDecision decision = gRules->decide(fixedRule, name ? name : "");
    state.decision.store(encode(decision), std::memory_order_relaxed);
    const arbconfig::ThreadClass previous = classified ? decode(before).threadClass : gDefaultClass;
    if (decision.threadClass != previous) {
        arbrt::setThreadClass(thread, runtimeClass(decision.threadClass));
    }
    if (!gExplain) return;
    if (classified) {
        logAlways("thread %llu named '%s' -> class %s (%s)", (unsigned long long)state.index,
                  name ? name : "", className(decision.threadClass), ruleText(decision).c_str());
    } else {
        logAlways("thread named '%s' -> class %s (%s)", name ? name : "",
                  className(decision.threadClass), ruleText(decision).c_str());
    }
}

arbconfig::ThreadClass classOf(arbrt::ThreadId thread) {
    const ShimThreadState* shim = shimStateOf(thread);
    const uint32_t word = shim ? shim->threadClass.decision.load(std::memory_order_relaxed) : 0;
    if (word) return decode(word).threadClass;
    return gDefaultClass;
}

}  // namespace arbrun
