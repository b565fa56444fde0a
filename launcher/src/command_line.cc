// Command-line parsing. CLI11 recognises the options and renders --help; every value is then
// validated by the arbconfig parsers (the same ones the preload library uses on ARBRUN_*), so the
// launcher and the library accept exactly the same things. The subcommands go through the same
// code with their own option tables.
#include "command_line.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <optional>

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

// One value-taking option: its CLI11 handle, how messages name it, the form quoted when its value
// is missing, and its parser.
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
    bool standalone = false, stats = false, verbose = false, explainClasses = false;
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

// Each value option keeps every occurrence (TakeAll) so each is validated: every --class is a
// rule; for the other options the last one wins, as with most Unix tools.
void addValueOption(Options* o, const char* name, const char* typeName, std::string_view form,
                    ValueParser parse, const std::string& description) {
    CLI::Option* option = o->app.add_option(name, description)
                              ->type_name(typeName)
                              ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    o->values.push_back({option, option->get_name(), form, parse});
}

// --arbiter, shared by every subcommand; the description says what it is for in each.
void addArbiterOption(Options* o, const std::string& description) {
    addValueOption(
        o, "--arbiter", "PATH", arbconfig::kArbiterForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseArbiterPath(v, &inv->config, e);
        },
        description);
    o->arbiter = o->values.back().option;
}

// The core estimator and its settings (arbiter mode: the request follows the estimate within
// --cores MIN:MAX).
void registerEstimatorOptions(Options* o) {
    addValueOption(
        o, "--estimator", "NAME", arbconfig::kEstimatorForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseEstimator(v, &inv->config, e);
        },
        "How the process estimates the cores it needs (with an arbiter):\n"
        "  arachne  per-core utilisation and load factor over a window: one\n"
        "           core more when the load factor exceeds --load-factor, one\n"
        "           less when the work fits with --hysteresis to spare\n"
        "  fast     a thread that waited across two checks (--check-period)\n"
        "           asks for a core at once; a core idle for --idle-grace is\n"
        "           given back. Default arachne");
    addValueOption(
        o, "--load-factor", "X", arbconfig::kLoadFactorForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseLoadFactor(v, &inv->config, e);
        },
        "arachne: scale up above this average load factor. Default 1.5");
    addValueOption(
        o, "--hysteresis", "PCT", arbconfig::kHysteresisForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseHysteresis(v, &inv->config, e);
        },
        "arachne: scale down only when the work fits in one core fewer\n"
        "with this much utilisation to spare. Default 9");
    addValueOption(
        o, "--window", "MS", arbconfig::kWindowForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseWindow(v, &inv->config, e);
        },
        "arachne: measurement window, one decision per window. Default 50");
    addValueOption(
        o, "--check-period", "US", arbconfig::kCheckPeriodForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseCheckPeriod(v, &inv->config, e);
        },
        "fast: how often queues are checked. Default 10");
    addValueOption(
        o, "--idle-grace", "US", arbconfig::kIdleGraceForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseIdleGrace(v, &inv->config, e);
        },
        "fast: a core idle this long is given back. Default 250");
}

// The options of running a program (arbrun and arbrun ab). Descriptions are wrapped by hand:
// CLI11 2.1 indents but does not wrap.
void registerRunOptions(Options* o) {
    CLI::App* app = &o->app;
    addValueOption(
        o, "--cores", "N|MIN:MAX", arbconfig::kCoresForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseCores(v, &inv->config, e);
        },
        "Cores the process may hold: N exactly N; MIN:MAX a range the core\n"
        "policy moves within; MIN: at least MIN, at most one per CPU in\n"
        "arbrun's affinity mask. 1 <= MIN <= MAX <= 256. Default 1:");
    addValueOption(
        o, "--priority", "0-7", arbconfig::kPriorityForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parsePriority(v, &inv->config, e);
        },
        "Priority at the core arbiter: 0 highest, 7 lowest. Default 3");
    addValueOption(
        o, "--time-slice", "US", arbconfig::kTimeSliceForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseTimeSlice(v, &inv->config, e);
        },
        "How long a thread may compute without calling anything while\n"
        "others wait for its core, before it is preempted (at a safe point:\n"
        "never inside libc or arbrun). Also how fast a core the arbiter asks\n"
        "for is given back by such a thread. 0: never preempt. Default 10000");
    registerEstimatorOptions(o);
    addValueOption(
        o, "--trace", "FILE", arbconfig::kTraceForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseTracePath(v, &inv->config, e);
        },
        "Write a CSV timeline of the process's cores to FILE: grants,\n"
        "releases, requests to the arbiter, and each core's utilisation\n"
        "every 10 ms (columns time_s,event,core,cpu,value). Plot it with\n"
        "tools/plot-trace.py FILE OUT.png");
    addValueOption(
        o, "--class", "RULE=CLASS", arbconfig::kClassRuleForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseClassRule(v, &inv->config.classRules.emplace_back(), e);
        },
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
        "\\ makes the next character literal. Quote rules in the shell");
    addValueOption(
        o, "--default-class", "CLASS", arbconfig::kThreadClassForm,
        [](std::string_view v, Invocation* inv, std::string* e) {
            return arbconfig::parseThreadClass(v, &inv->config.defaultClass, e);
        },
        "Class of threads no rule matches. Default normal");
    addArbiterOption(o,
                     "The core arbiter's Unix socket. Default /run/arbrun/arbiter.sock.\n"
                     "If it cannot be reached the program says so once and runs standalone");
    app->add_flag("--standalone", o->standalone,
                  "Contact no arbiter; run on the CPUs in arbrun's affinity mask.\n"
                  "Excludes --arbiter");
    app->add_flag("--stats", o->stats,
                  "On exit, print to stderr: threads created, peak live threads,\n"
                  "context switches, blocking calls handed off, cores reserved for\n"
                  "exclusive threads and exclusive threads that got none");
    app->add_flag("--verbose", o->verbose,
                  "Say what arbrun and the runtime do (the environment passed on,\n"
                  "cores granted and released, class matches) on stderr");
    app->add_flag("--explain-classes", o->explainClasses,
                  "For each thread the program creates, say on stderr, one line each,\n"
                  "which --class rule matched (or default) and the class it got:\n"
                  "'arbrun: thread 3 (work) -> class batch (rule 1: sym:w*=batch)';\n"
                  "also for renamed threads. --verbose says it as well");
    for (CLI::Option* flag : {app->get_option("--standalone"), app->get_option("--stats"),
                              app->get_option("--verbose"), app->get_option("--explain-classes")}) {
        flag->disable_flag_override();  // "--stats=2" is an error, not "true"
    }
}

// The option table of `o->subcommand`.
void registerOptions(Options* o) {
    switch (o->subcommand) {
        case Subcommand::run:
            registerRunOptions(o);
            o->app.set_version_flag("--version", "arbrun " ARBRUN_VERSION,
                                    "Print the version and exit");
            break;
        case Subcommand::ab:
            addValueOption(o, "-n,--runs", "RUNS", kAbRunsForm, parseRuns,
                           "Pairs of runs: native, arbrun, native, arbrun, ... Default 5");
            o->values.back().label = "-n";
            registerRunOptions(o);
            break;
        case Subcommand::doctor:
            addArbiterOption(o,
                             "The core arbiter's Unix socket to check. Default\n"
                             "/run/arbrun/arbiter.sock (the socket arbrun uses)");
            break;
    }
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
    for (const std::string flag : {"standalone", "stats", "verbose", "explain-classes"}) {
        // CLI11 names a flag "stats" or "--stats" depending on the error.
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
    if (o.standalone && o.arbiter->count() > 0) {
        return "--standalone and --arbiter exclude each other (standalone mode contacts no "
               "arbiter); give one of them";
    }
    invocation->config.standalone = o.standalone;
    invocation->config.stats = o.stats;
    invocation->config.verbose = o.verbose;
    invocation->config.explainClasses = o.explainClasses;
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
