// Command-line parsing. CLI11 recognises the options and renders --help; every value is then
// validated by the arbconfig parsers (the same ones the preload library uses on ARBRUN_*), so the
// launcher and the library accept exactly the same things. The subcommands go through the same
// code with their own option tables.
#include "command_line.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <optional>
#include <span>

#include "arbproto/messages.h"
#include "help_text.h"

#ifndef ARBRUN_VERSION
#define ARBRUN_VERSION "unknown"
#endif

namespace arbrun {
namespace {

using arbconfig::Config;

// Applies one value of an option to the invocation; false with *error set to one line naming the
// option and the accepted form.
using ValueParser = bool (*)(std::string_view text, Invocation* invocation, std::string* error);

// One value-taking option as the tables below declare it. Descriptions are wrapped by hand:
// CLI11 2.1 indents but does not wrap.
struct ValueSpec {
    const char* name;             // CLI11's names ("-n,--runs")
    const char* typeName;         // the value's name in --help
    std::string_view form;        // quoted when the value is missing
    ValueParser parse;            // validates and applies one value
    const char* description;      // --help text
    const char* label = nullptr;  // how messages name it; nullptr: CLI11's name ("--runs")
};

// One flag: it sets a bool of the Config and takes no value.
struct FlagSpec {
    const char* name;
    bool Config::*field;
    const char* description;
};

// One registered value option: its CLI11 handle, how messages name it, the form quoted when its
// value is missing, and its parser.
struct ValueOption {
    CLI::Option* option;
    std::string label;
    std::string_view form;
    ValueParser parse;
};

// The registered options of one subcommand. Owned by parseCommandLine's stack frame;
// single-threaded.
struct Options {
    explicit Options(Subcommand s) : subcommand(s) {}
    Subcommand subcommand;
    CLI::App app{"", "arbrun"};
    std::vector<ValueOption> values;  // values are applied option by option, in this order
    CLI::Option* arbiter = nullptr;
    Config flags;  // only the kRunFlags fields are used: CLI11 sets them while parsing
};

// How messages and help name the command ("arbrun ab").
std::string commandName(Subcommand subcommand) {
    switch (subcommand) {
        case Subcommand::doctor:
            return "arbrun doctor";
        case Subcommand::ab:
            return "arbrun ab";
        case Subcommand::run:
            break;
    }
    return "arbrun";
}

// An argument in single quotes for a one-line message (control bytes shown as '?').
std::string quote(std::string text) {
    for (char& c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    return "'" + text + "'";
}

// -n RUNS: decimal digits only, like the arbconfig parsers, with the same message shape.
bool parseRuns(std::string_view text, Invocation* invocation, std::string* error) {
    int value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || text[0] == '-' || ec != std::errc() || stop != end || value < 1 ||
        value > kMaxAbRuns) {
        *error = "-n: " + quote(std::string(text)) + " is not valid; expected " +
                 std::string(kAbRunsForm);
        return false;
    }
    invocation->runs = value;
    return true;
}

// Most options set Config fields through the arbconfig parser of the same name, so the launcher
// and the preload library (ARBRUN_*) accept exactly the same values.
template <bool (*Parse)(std::string_view, Config*, std::string*)>
bool intoConfig(std::string_view text, Invocation* invocation, std::string* error) {
    return Parse(text, &invocation->config, error);
}

// Every --class is one more rule, in command-line order (the first matching rule wins).
bool parseClassOption(std::string_view text, Invocation* invocation, std::string* error) {
    return arbconfig::parseClassRule(text, &invocation->config.classRules.emplace_back(), error);
}

// --default-class sets a ThreadClass, not a whole Config.
bool parseDefaultClassOption(std::string_view text, Invocation* invocation, std::string* error) {
    return arbconfig::parseThreadClass(text, &invocation->config.defaultClass, error);
}

// --arbiter, shared by every subcommand; the description says what it is for in each.
constexpr ValueSpec arbiterOption(const char* description) {
    return {"--arbiter", "PATH", arbconfig::kArbiterForm, intoConfig<arbconfig::parseArbiterPath>,
            description};
}

// The value options of running a program (arbrun and arbrun ab), in --help order.
constexpr ValueSpec kRunValueOptions[] = {
    {"--cores", "N|MIN:MAX", arbconfig::kCoresForm, intoConfig<arbconfig::parseCores>,
     "Cores the process may hold: N exactly N; MIN:MAX a range the core\n"
     "policy moves within; MIN: at least MIN, at most one per CPU in\n"
     "arbrun's affinity mask. 1 <= MIN <= MAX <= 256. Default 1:"},
    {"--priority", "0-7", arbconfig::kPriorityForm, intoConfig<arbconfig::parsePriority>,
     "Priority at the core arbiter: 0 highest, 7 lowest. Default 3"},
    {"--time-slice", "US", arbconfig::kTimeSliceForm, intoConfig<arbconfig::parseTimeSlice>,
     "How long a thread may compute without calling anything while\n"
     "others wait for its core, before it is preempted (at a safe point:\n"
     "never inside libc or arbrun). Also how fast a core the arbiter asks\n"
     "for is given back by such a thread. 0: never preempt. Default 1000"},
    {"--release-defer", "US", arbconfig::kReleaseDeferForm,
     intoConfig<arbconfig::parseReleaseDefer>,
     "When the arbiter asks for a core back, how long the release may wait\n"
     "for the core's thread to park (wait at a barrier, lock or condition)\n"
     "if its rhythm so far says it will within that time, instead of\n"
     "preempting it mid-phase. A thread that never parks is preempted at\n"
     "once. 0: always preempt. At most 5000. Default 1000"},
    {"--idle-spin", "US", arbconfig::kIdleSpinForm, intoConfig<arbconfig::parseIdleSpin>,
     "The most an idle core polls for new work before its carrier sleeps.\n"
     "Polling takes new work within microseconds instead of a kernel\n"
     "wake-up, but burns the CPU: each core polls this long only while\n"
     "most of its recent idle gaps were this short, else a brief probe.\n"
     "Lower it where the program's cores are not its own (no arbiter\n"
     "isolation) and other processes need them.\n"
     "0: sleep at once. At most 1000000. Default 50"},
    {"--retake-after", "US", arbconfig::kRetakeAfterForm, intoConfig<arbconfig::parseRetakeAfter>,
     "How long a thread may sleep in a system call that arbrun did not\n"
     "catch (one libc makes internally, or a raw call where syscall user\n"
     "dispatch is missing) while others wait for its core: then the call\n"
     "is re-issued as a blocking call and the core handed to a spare\n"
     "kernel thread. Only calls a restart cannot change (futex waits\n"
     "without a timeout, reads, writes, accept, wait4, ...). 0: off.\n"
     "Needs --time-slice other than 0. Default 100"},
    {"--dispatch", "NAME", arbconfig::kDispatchForm, intoConfig<arbconfig::parseDispatch>,
     "How a core picks the next thread to run:\n"
     "  fifo    the thread it woke itself, else the oldest runnable one\n"
     "  cohort  prefer, among the next few, a thread blocked at the same\n"
     "          place in the program (the return address of the call it\n"
     "          blocked in) as the thread just run: the same stage of\n"
     "          another request, run back to back while its code and data\n"
     "          are in the caches (cohort scheduling). Bounded by\n"
     "          --cohort-max and --cohort-max-us; then the oldest runs.\n"
     "Default fifo"},
    {"--cohort-max", "N", arbconfig::kCohortMaxForm, intoConfig<arbconfig::parseCohortMax>,
     "cohort: the most threads run back to back for one place. Default 8"},
    {"--cohort-max-us", "US", arbconfig::kCohortMaxUsForm, intoConfig<arbconfig::parseCohortMaxUs>,
     "cohort: the longest one cohort may go on (microseconds). Default 100"},
    // The core estimator and its settings (arbiter mode: the request follows the estimate
    // within --cores MIN:MAX).
    {"--estimator", "NAME", arbconfig::kEstimatorForm, intoConfig<arbconfig::parseEstimator>,
     "How the process estimates the cores it needs (with an arbiter):\n"
     "  arachne  per-core utilisation and load factor over a window: one\n"
     "           core more when the load factor exceeds --load-factor, one\n"
     "           less when the work fits with --hysteresis to spare\n"
     "  fast     a thread that waited across two checks (--check-period)\n"
     "           asks for a core at once; a core idle for the grace is given\n"
     "           back (--idle-grace, longer while give-backs are asked back\n"
     "           soon). Default arachne; fast suits a latency-sensitive server"},
    {"--load-factor", "X", arbconfig::kLoadFactorForm, intoConfig<arbconfig::parseLoadFactor>,
     "arachne: scale up above this average load factor. Default 1.5"},
    {"--hysteresis", "PCT", arbconfig::kHysteresisForm, intoConfig<arbconfig::parseHysteresis>,
     "arachne: scale down only when the work fits in one core fewer\n"
     "with this much utilisation to spare. Default 9"},
    {"--window", "MS", arbconfig::kWindowForm, intoConfig<arbconfig::parseWindow>,
     "arachne: measurement window, one decision per window. Default 50"},
    {"--check-period", "US", arbconfig::kCheckPeriodForm, intoConfig<arbconfig::parseCheckPeriod>,
     "fast: how often queues are checked. Default 10"},
    {"--idle-grace", "US", arbconfig::kIdleGraceForm, intoConfig<arbconfig::parseIdleGrace>,
     "fast: a core idle this long is given back. The grace doubles\n"
     "after each give-back asked back within four graces (up to 64x)\n"
     "and halves after one that held that long. Default 250"},
    {"--trace", "FILE", arbconfig::kTraceForm, intoConfig<arbconfig::parseTracePath>,
     "Write a CSV timeline of the process's cores to FILE: grants,\n"
     "releases, requests to the arbiter, and each core's utilisation\n"
     "every 10 ms (columns time_s,event,core,cpu,value). Plot it with\n"
     "arbrun-plot-trace FILE OUT.png (tools/plot-trace.py in the source tree)"},
    {"--class", "RULE=CLASS", arbconfig::kClassRuleForm, parseClassOption,
     "Classify threads; repeatable, the first matching rule wins. RULE:\n"
     "  sym:GLOB     the start routine's symbol (C++ names demangled)\n"
     "  name:GLOB    the thread's name\n"
     "  caller:GLOB  any function on the creating thread's stack\n"
     "  index:N[-M]  creation order, 0 = first thread created after main\n"
     "CLASS: normal (the shared cores), exclusive (a core of its own,\n"
     "nothing else runs there; one core always stays shared), batch\n"
     "(runs only when no normal thread waits for its core; its cores\n"
     "are asked for one priority lower, the first to go).\n"
     "GLOB: * any run, ? one character, [a-z] [!0-9] [[:digit:]] sets,\n"
     "\\ makes the next character literal. Quote rules in the shell"},
    {"--default-class", "CLASS", arbconfig::kThreadClassForm, parseDefaultClassOption,
     "Class of threads no rule matches. Default normal"},
    arbiterOption("The core arbiter's Unix socket. Default " ARBPROTO_DEFAULT_SOCKET ".\n"
                  "If it cannot be reached the program says so once and runs standalone"),
};

// The flags of running a program, after its value options in --help.
constexpr FlagSpec kRunFlags[] = {
    {"--standalone", &Config::standalone,
     "Contact no arbiter; run on the CPUs in arbrun's affinity mask.\n"
     "Excludes --arbiter"},
    {"--stats", &Config::stats,
     "On exit, print to stderr: threads created, peak live threads,\n"
     "context switches, parks resumed in place (a thread that waited\n"
     "with nothing else to run on its core and went on with no switch),\n"
     "blocking calls handed off, readiness events by who saw them,\n"
     "cores reserved for exclusive threads and exclusive threads that\n"
     "got none, cohorts formed and their mean size (--dispatch cohort)"},
    {"--verbose", &Config::verbose,
     "Say what arbrun and the runtime do (the environment passed on,\n"
     "cores granted and released, class matches) on stderr"},
    {"--native-syscalls", &Config::nativeSyscalls,
     "Leave system calls the program issues outside libc (OpenMP's futex\n"
     "waits, JIT code) to the kernel instead of catching them with\n"
     "syscall user dispatch. For a program that uses syscall user dispatch\n"
     "itself; such calls then block a kernel thread until --retake-after\n"
     "hands its core on"},
    {"--explain-classes", &Config::explainClasses,
     "For each thread the program creates, say on stderr, one line each,\n"
     "which --class rule matched (or default) and the class it got:\n"
     "'arbrun: thread 3 (work) -> class batch (rule 1: sym:w*=batch)';\n"
     "also for renamed threads. --verbose says it as well"},
};

// `arbrun ab`'s own option, before the run options.
constexpr ValueSpec kAbValueOptions[] = {
    {"-n,--runs", "RUNS", kAbRunsForm, parseRuns,
     "Pairs of runs: native, arbrun, native, arbrun, ... Default 5", "-n"},
};

// `arbrun doctor` checks the machine and the arbiter it would use.
constexpr ValueSpec kDoctorValueOptions[] = {
    arbiterOption("The core arbiter's Unix socket to check. Default\n" ARBPROTO_DEFAULT_SOCKET
                  " (the socket arbrun uses)"),
};

// Each value option keeps every occurrence (TakeAll) so each is validated: every --class is a
// rule; for the other options the last one wins, as with most Unix tools.
void addValueOptions(Options* o, std::span<const ValueSpec> specs) {
    for (const ValueSpec& spec : specs) {
        CLI::Option* option = o->app.add_option(spec.name, spec.description)
                                  ->type_name(spec.typeName)
                                  ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        o->values.push_back({option, spec.label ? std::string(spec.label) : option->get_name(),
                             spec.form, spec.parse});
    }
}

// Flags write straight into o->flags; "--stats=2" is an error, not "true".
void addFlags(Options* o, std::span<const FlagSpec> specs) {
    for (const FlagSpec& spec : specs) {
        o->app.add_flag(spec.name, o->flags.*spec.field, spec.description)->disable_flag_override();
    }
}

// The option table of `o->subcommand`.
void registerOptions(Options* o) {
    switch (o->subcommand) {
        case Subcommand::run:
            addValueOptions(o, kRunValueOptions);
            addFlags(o, kRunFlags);
            o->app.set_version_flag("--version", "arbrun " ARBRUN_VERSION,
                                    "Print the version and exit");
            break;
        case Subcommand::ab:
            addValueOptions(o, kAbValueOptions);
            addValueOptions(o, kRunValueOptions);
            addFlags(o, kRunFlags);
            break;
        case Subcommand::doctor:
            addValueOptions(o, kDoctorValueOptions);
            break;
    }
    o->arbiter = o->app.get_option("--arbiter");
    o->app.allow_extras();  // unknown options are reported by us, one line, naming the option
    decorateHelp(&o->app, o->subcommand);
}

// Index of the first argument of the program: just past the first "--", or the first argument
// that is not an option or an option's value; args.size() when there is none. The options are
// args[0, *optionsEnd).
size_t findProgram(const CLI::App& app, const std::vector<std::string>& args, size_t* optionsEnd) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--") {
            *optionsEnd = i;
            return i + 1;
        }
        if (arg.size() < 2 || arg[0] != '-') {
            *optionsEnd = i;
            return i;
        }
        if (arg.find('=') != std::string::npos) continue;  // --name=value
        const CLI::Option* option = app.get_option_no_throw(arg);
        if (option && option->get_items_expected_max() > 0 && i + 1 < args.size() &&
            args[i + 1] != "--") {
            ++i;  // skip the option's value, whatever it looks like
        }
    }
    *optionsEnd = args.size();
    return args.size();
}

// Unknown options get the same one line whether CLI11 or findProgram() noticed them.
std::string unknownOption(const Options& o, const std::string& arg) {
    return "unknown option " + quote(arg) + "; see '" + commandName(o.subcommand) +
           " --help' for the options";
}

// CLI11's own errors, rewritten to one line that names the option and the accepted form.
std::string describeParseError(const Options& o, const CLI::ParseError& e) {
    const std::vector<std::string> extras = o.app.remaining();
    if (!extras.empty()) {
        return unknownOption(o, extras.front());
    }
    const std::string what = e.what();
    for (const FlagSpec& spec : kRunFlags) {
        // CLI11 names a flag "stats" or "--stats" depending on the error.
        const std::string flag = std::string(spec.name).substr(2);
        if (what.rfind(flag + " ", 0) == 0 || what.find("--" + flag) != std::string::npos) {
            return "--" + flag + " takes no value";
        }
    }
    for (const ValueOption& v : o.values) {
        const std::string name = v.option->get_name();
        if (what.compare(0, name.size() + 1, name + ":") == 0) {
            return v.label + ": a value is required; expected " + std::string(v.form);
        }
    }
    return what + "; see '" + commandName(o.subcommand) + " --help'";
}

// Runs every value of every option through its parser, in command-line order per option.
// Returns the first error, or nullopt.
std::optional<std::string> buildInvocation(const Options& o, Invocation* invocation) {
    std::string error;
    for (const ValueOption& v : o.values) {
        for (const std::string& value : v.option->results()) {
            if (!v.parse(value, invocation, &error)) return error;
        }
    }
    if (o.flags.standalone && o.arbiter->count() > 0) {
        return "--standalone and --arbiter exclude each other (standalone mode contacts no "
               "arbiter); give one of them";
    }
    for (const FlagSpec& spec : kRunFlags) {
        invocation->config.*spec.field = o.flags.*spec.field;
    }
    return arbconfig::checkConsistency(invocation->config);
}

// The first argument names a subcommand, or it is part of running a program.
Subcommand subcommandOf(const std::vector<std::string>& args) {
    if (!args.empty() && args[0] == "doctor") return Subcommand::doctor;
    if (!args.empty() && args[0] == "ab") return Subcommand::ab;
    return Subcommand::run;
}

// The complaint when the program is missing (run, ab) or present (doctor).
std::optional<std::string> checkProgram(Subcommand subcommand, const std::vector<std::string>& args,
                                        size_t start) {
    if (subcommand == Subcommand::doctor) {
        if (start >= args.size()) return std::nullopt;
        return "unexpected argument " + quote(args[start]) +
               "; usage: arbrun doctor [--arbiter PATH] (see arbrun doctor --help)";
    }
    if (start < args.size()) return std::nullopt;
    if (subcommand == Subcommand::ab) {
        return "no program given; usage: arbrun ab [-n RUNS] [options] -- program [args] (see "
               "arbrun ab --help)";
    }
    return "no program given; usage: arbrun [options] -- program [args] (see arbrun --help)";
}

}  // namespace

ParseResult parseCommandLine(const std::vector<std::string>& allArgs, Invocation* invocation) {
    const Subcommand subcommand = subcommandOf(allArgs);
    const std::vector<std::string> args(allArgs.begin() + (subcommand == Subcommand::run ? 0 : 1),
                                        allArgs.end());
    Options o(subcommand);
    registerOptions(&o);
    size_t optionsEnd = 0;
    const size_t programStart = findProgram(o.app, args, &optionsEnd);
    try {
        // CLI11 consumes a reversed vector.
        o.app.parse(std::vector<std::string>(args.rend() - optionsEnd, args.rend()));
    } catch (const CLI::CallForHelp&) {
        std::string help = o.app.help();
        while (!help.empty() && help.back() == '\n') help.pop_back();
        return {ParseOutcome::done, help + "\n"};
    } catch (const CLI::CallForVersion& e) {
        return {ParseOutcome::done, std::string(e.what()) + "\n"};
    } catch (const CLI::ParseError& e) {
        return {ParseOutcome::usageError, describeParseError(o, e)};
    }
    if (!o.app.remaining().empty()) {
        return {ParseOutcome::usageError, unknownOption(o, o.app.remaining().front())};
    }
    Invocation next;
    next.subcommand = subcommand;
    if (auto error = buildInvocation(o, &next)) return {ParseOutcome::usageError, *error};
    if (auto error = checkProgram(subcommand, args, programStart)) {
        return {ParseOutcome::usageError, *error};
    }
    if (programStart < args.size()) {
        next.command.assign(args.begin() + static_cast<std::ptrdiff_t>(programStart), args.end());
    }
    *invocation = std::move(next);
    return {ParseOutcome::run, {}};
}

}  // namespace arbrun
