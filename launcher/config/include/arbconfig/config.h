// arbrun's configuration: the one parser shared by the `arbrun` launcher (command-line options) and
// the preload library (ARBRUN_* environment variables), so the two can never disagree.
//
// Safe to link into a shared object loaded with LD_PRELOAD: no global constructors, no iostreams,
// no exceptions thrown by this code (only std::bad_alloc from the standard library), nothing
// allocated before it is called. Every function is pure (no global state) and may be called from
// any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arbproto/messages.h"

namespace arbconfig {

// How a thread is scheduled; see ARCHITECTURE.md ("core policy").
enum class ThreadClass {
    normal,     // the shared pool of the process's cores
    exclusive,  // a core of its own: nothing else runs on its carrier
    batch,      // cores held at a lower priority; the first to lose cores
};

// One `--class RULE=CLASS` rule. A plain value: copy freely, no concurrency rules.
struct ClassRule {
    enum class Kind {
        sym,     // glob on the start routine's symbol (demangled for C++)
        name,    // glob on the thread's name
        index,   // creation-order range [first, last]
        caller,  // glob on any function on the creating thread's stack
    };
    Kind kind = Kind::sym;
    std::string glob;  // sym/name/caller: shell glob (*, ?, [..], \) with fnmatch semantics
    uint64_t first = 0, last = 0;  // index: N or N-M (0 = the first thread created after main)
    ThreadClass threadClass = ThreadClass::normal;
    std::string text;  // the rule as written ("sym:worker*=batch"), for messages

    friend bool operator==(const ClassRule&, const ClassRule&) = default;
};

// How the process estimates the cores it needs (arbiter mode). Ranges are in the forms below; the
// runtime's estimators (runtime/policy) validate the same bounds again. A plain value.
enum class Estimator { arachne, fast };
struct EstimatorSettings {
    Estimator kind = Estimator::arachne;  // --estimator
    double loadFactor = 1.5;              // --load-factor X: Arachne's scale-up threshold
    uint32_t hysteresisPct = 9;           // --hysteresis PCT: Arachne's scale-down margin
    uint32_t windowMs = 50;               // --window MS: Arachne's measurement window
    uint32_t checkPeriodUs = 10;          // --check-period US: the fast estimator's period
    uint32_t idleGraceUs = 250;           // --idle-grace US: fast: the starting idle grace

    friend bool operator==(const EstimatorSettings&, const EstimatorSettings&) = default;
};

// How a core picks the next thread to run (--dispatch); see RuntimeOptions::dispatch.
enum class Dispatch { fifo, cohort };

// The whole configuration. A plain value: copy freely, no concurrency rules.
struct Config {
    uint32_t minCores = 1, maxCores = 0;  // --cores N | MIN:MAX | MIN: ; 0 = one per allowed CPU
    int priority = 3;                     // --priority 0-7, 0 = highest
    std::vector<ClassRule> classRules;    // --class RULE=CLASS, repeatable, first match wins
    ThreadClass defaultClass = ThreadClass::normal;            // --default-class
    std::string arbiterSocket = arbproto::kDefaultSocketPath;  // --arbiter PATH
    bool standalone = false;                                   // --standalone
    bool stats = false;                                        // --stats
    bool verbose = false;                                      // --verbose
    // --explain-classes: one line on stderr per created thread, the rule that classified it and
    // its class (--verbose prints them too).
    bool explainClasses = false;
    // --native-syscalls: leave system calls the program issues outside libc to the kernel (no
    // syscall user dispatch); only the retake then covers those that block.
    bool nativeSyscalls = false;
    uint32_t timeSliceUs = 1'000;  // --time-slice US; 0 = threads are never preempted
    // --release-defer US: how long a core the arbiter asks back may wait for its runner to park
    // (barrier-aware release); 0 = preempt at once.
    uint32_t releaseDeferUs = 1'000;
    // --idle-spin US: how long an idle core polls for work before its carrier sleeps.
    uint32_t idleSpinUs = 50;
    // --retake-after US: how long a thread may sleep in a system call nobody caught while others
    // wait for its core, before the call is re-issued as a blocking call and the core lent; 0 =
    // off (needs preemption, --time-slice not 0).
    uint32_t retakeAfterUs = 100;
    // --dispatch fifo|cohort: cohort prefers, among the next threads a core would run, one parked
    // at the same resume point as the thread it just ran (the same stage of another request), for
    // at most --cohort-max threads and --cohort-max-us microseconds per cohort.
    Dispatch dispatch = Dispatch::fifo;
    uint32_t cohortMax = 8;
    uint32_t cohortMaxUs = 100;
    std::string tracePath;        // --trace FILE; empty = no core timeline
    EstimatorSettings estimator;  // --estimator and its settings

    friend bool operator==(const Config&, const Config&) = default;
};

// Limits, and the accepted forms that every error message quotes (shared with `arbrun --help`).
inline constexpr uint32_t kMaxCores = 256;
inline constexpr int kLowestPriority = 7;
inline constexpr size_t kMaxSocketPathBytes = 107;  // sizeof(sockaddr_un::sun_path) - 1
inline constexpr std::string_view kCoresForm = "N, MIN:MAX or MIN: with 1 <= MIN <= MAX <= 256";
inline constexpr std::string_view kPriorityForm = "an integer from 0 (highest) to 7 (lowest)";
inline constexpr std::string_view kThreadClassForm = "normal, exclusive or batch";
inline constexpr std::string_view kClassRuleForm =
    "RULE=CLASS with RULE sym:GLOB, name:GLOB, caller:GLOB or index:N[-M] and CLASS normal, "
    "exclusive or batch";
inline constexpr std::string_view kArbiterForm = "a Unix socket path of 1 to 107 bytes";
inline constexpr std::string_view kEstimatorForm = "arachne or fast";
inline constexpr std::string_view kLoadFactorForm = "a number above 1 and at most 64, e.g. 1.5";
inline constexpr std::string_view kHysteresisForm = "a percentage from 1 to 49";
inline constexpr std::string_view kWindowForm = "milliseconds from 1 to 60000";
inline constexpr std::string_view kCheckPeriodForm = "microseconds from 5 to 50000";
inline constexpr std::string_view kIdleGraceForm =
    "microseconds from 10 to 60000000, at least twice the check period";
inline constexpr std::string_view kTraceForm = "a file path to write the CSV timeline to";
inline constexpr uint32_t kMinTimeSliceUs = 100, kMaxTimeSliceUs = 1'000'000;
inline constexpr std::string_view kTimeSliceForm =
    "0 (never preempt) or microseconds from 100 to 1000000";
inline constexpr uint32_t kMaxReleaseDeferUs = 5'000;
inline constexpr uint32_t kMaxIdleSpinUs = 1'000'000;
inline constexpr std::string_view kIdleSpinForm = "microseconds from 0 to 1000000";
inline constexpr uint32_t kMinRetakeAfterUs = 20, kMaxRetakeAfterUs = 1'000'000;
inline constexpr std::string_view kRetakeAfterForm = "0 (off) or microseconds from 20 to 1000000";
inline constexpr std::string_view kDispatchForm = "fifo or cohort";
inline constexpr uint32_t kMaxCohortThreads = 1'024;
inline constexpr std::string_view kCohortMaxForm = "an integer from 1 to 1024";
inline constexpr uint32_t kMaxCohortUs = 1'000'000;
inline constexpr std::string_view kCohortMaxUsForm = "microseconds from 1 to 1000000";
inline constexpr std::string_view kReleaseDeferForm =
    "0 (always preempt) or microseconds up to 5000 (half the arbiter's forced-reclaim timeout)";

// Option parsers. Each validates one option's text; on success it fills its output and returns
// true; on error it leaves the output unchanged, returns false and sets *error (if not null) to one
// line naming the option and the accepted form, e.g. "--cores: '0' is not valid; expected N, ...".
bool parseCores(std::string_view text, Config* config, std::string* error);
bool parsePriority(std::string_view text, Config* config, std::string* error);
bool parseClassRule(std::string_view text, ClassRule* rule, std::string* error);
bool parseTimeSlice(std::string_view text, Config* config, std::string* error);
bool parseReleaseDefer(std::string_view text, Config* config, std::string* error);
bool parseIdleSpin(std::string_view text, Config* config, std::string* error);
bool parseRetakeAfter(std::string_view text, Config* config, std::string* error);
bool parseTracePath(std::string_view text, Config* config, std::string* error);
bool parseDispatch(std::string_view text, Config* config, std::string* error);
bool parseCohortMax(std::string_view text, Config* config, std::string* error);
bool parseCohortMaxUs(std::string_view text, Config* config, std::string* error);
std::string_view dispatchName(Dispatch dispatch);
bool parseEstimator(std::string_view text, Config* config, std::string* error);
bool parseLoadFactor(std::string_view text, Config* config, std::string* error);
bool parseHysteresis(std::string_view text, Config* config, std::string* error);
bool parseWindow(std::string_view text, Config* config, std::string* error);
bool parseCheckPeriod(std::string_view text, Config* config, std::string* error);
bool parseIdleGrace(std::string_view text, Config* config, std::string* error);
// What no single option can check: the idle grace covers at least two check periods. Returns the
// one-line error naming `idleGraceLabel` (the option or variable), or nullopt. The launcher and
// fromEnvironment() both apply it.
std::optional<std::string> checkConsistency(const Config& config,
                                            std::string_view idleGraceLabel = "--idle-grace");
std::string_view estimatorName(Estimator estimator);
bool parseThreadClass(std::string_view text, ThreadClass* out, std::string* error);
bool parseArbiterPath(std::string_view text, Config* config, std::string* error);

// Names as written in options and in the environment ("batch", "caller").
std::string_view threadClassName(ThreadClass threadClass);
std::string_view ruleKindName(ClassRule::Kind kind);
// The canonical text of a rule ("index:2-5=batch"); parseClassRule() reads it back to an equal rule
// (with `text` set to it).
std::string formatClassRule(const ClassRule& rule);

// Environment variables. Every Config field round-trips through them.
inline constexpr const char* kEnvCores = "ARBRUN_CORES";                 // N | MIN:MAX | MIN:
inline constexpr const char* kEnvPriority = "ARBRUN_PRIORITY";           // 0-7
inline constexpr const char* kEnvClass = "ARBRUN_CLASS";                 // rule;rule;... (below)
inline constexpr const char* kEnvDefaultClass = "ARBRUN_DEFAULT_CLASS";  // normal|exclusive|batch
inline constexpr const char* kEnvArbiter = "ARBRUN_ARBITER";             // socket path
inline constexpr const char* kEnvStandalone = "ARBRUN_STANDALONE";       // 1 | 0
inline constexpr const char* kEnvStats = "ARBRUN_STATS";                 // 1 | 0
inline constexpr const char* kEnvVerbose = "ARBRUN_VERBOSE";             // 1 | 0
inline constexpr const char* kEnvTimeSlice = "ARBRUN_TIME_SLICE_US";     // 0 | 100-1000000
inline constexpr const char* kEnvReleaseDefer = "ARBRUN_RELEASE_DEFER_US";   // 0-5000
inline constexpr const char* kEnvIdleSpin = "ARBRUN_IDLE_SPIN_US";           // 0-1000000
inline constexpr const char* kEnvRetakeAfter = "ARBRUN_RETAKE_AFTER_US";     // 0 | 20-1000000
inline constexpr const char* kEnvTrace = "ARBRUN_TRACE";                     // file path, or empty
inline constexpr const char* kEnvEstimator = "ARBRUN_ESTIMATOR";             // arachne | fast
inline constexpr const char* kEnvLoadFactor = "ARBRUN_LOAD_FACTOR";          // e.g. 1.5
inline constexpr const char* kEnvHysteresis = "ARBRUN_HYSTERESIS_PCT";       // 1-49
inline constexpr const char* kEnvWindow = "ARBRUN_WINDOW_MS";                // 1-60000
inline constexpr const char* kEnvCheckPeriod = "ARBRUN_CHECK_PERIOD_US";     // 5-50000
inline constexpr const char* kEnvIdleGrace = "ARBRUN_IDLE_GRACE_US";         // 10-60000000
inline constexpr const char* kEnvExplainClasses = "ARBRUN_EXPLAIN_CLASSES";  // 1 | 0
inline constexpr const char* kEnvNativeSyscalls = "ARBRUN_NATIVE_SYSCALLS";  // 1 | 0
inline constexpr const char* kEnvDispatch = "ARBRUN_DISPATCH";               // fifo | cohort
inline constexpr const char* kEnvCohortMax = "ARBRUN_COHORT_MAX";            // 1-1024
inline constexpr const char* kEnvCohortMaxUs = "ARBRUN_COHORT_MAX_US";       // 1-1000000

// Every variable above with its value for `config`, in the order listed (all of them, always, so a
// launcher overrides whatever its own environment held). ARBRUN_CLASS holds the rules in order,
// each as written in `--class` (its `text`, or formatClassRule() when `text` does not parse back to
// the same rule), separated by ';'; inside a rule '%' is written %25 and ';' is written %3B.
std::vector<std::pair<std::string, std::string>> toEnvironment(const Config& config);

// Reads the variables through `lookup` (tests pass a map; the preload library passes getenv).
// Unset or empty variables keep the values already in *config. Booleans accept 1/0, true/false,
// yes/no, on/off. On a malformed value it returns false, leaves *config unchanged and sets *error
// (if not null) to one line naming the variable and the accepted form.
bool fromEnvironment(const std::function<const char*(const char*)>& lookup, Config* config,
                     std::string* error);

// What the preload library knows about a thread when it classifies it.
struct ThreadFacts {
    std::string_view symbol;                // start routine's symbol, demangled; empty when unknown
    std::string_view name;                  // thread name; empty when unnamed
    uint64_t index = 0;                     // creation order, 0 = first thread created after main
    std::vector<std::string_view> callers;  // functions on the creating stack, innermost first
};

// The class of the first rule that matches `facts` (sym/name/caller: glob match; caller: any
// caller; index: first <= index <= last), with *matched (if not null) set to that rule; nullopt
// and *matched = nullptr when no rule matches. Pure; allocates nothing.
std::optional<ThreadClass> matchClass(const std::vector<ClassRule>& rules, const ThreadFacts& facts,
                                      const ClassRule** matched = nullptr);

}  // namespace arbconfig
