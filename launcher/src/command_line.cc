// Command-line parsing. CLI11 recognises the options and renders --help; every value is then
// validated by the arbconfig parsers (the same ones the preload library uses on ARBRUN_*), so the
// launcher and the library accept exactly the same things.
#include "command_line.h"

#include <CLI/CLI.hpp>
#include <optional>

#include "help_text.h"

#ifndef ARBRUN_VERSION
#define ARBRUN_VERSION "unknown"
#endif

namespace arbrun {
namespace {

using arbconfig::Config;

// One value-taking option: its CLI11 handle and the form quoted when its value is missing.
struct ValueOption {
    CLI::Option* option;
    std::string_view form;
};

// The registered options. Owned by parseCommandLine's stack frame; single-threaded.
struct Options {
    CLI::App app{"", "arbrun"};
    ValueOption cores, priority, classRule, defaultClass, arbiter;
    bool standalone = false, stats = false, verbose = false;
};

// Each value option keeps every occurrence (TakeAll) so each is validated: every --class is a
// rule; for the other options the last one wins, as with most Unix tools.
ValueOption addValueOption(CLI::App* app, const char* name, const char* typeName,
                           std::string_view form, const std::string& description) {
    CLI::Option* option = app->add_option(name, description)
                              ->type_name(typeName)
                              ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    return {option, form};
}

// The option table. Descriptions are wrapped by hand: CLI11 2.1 indents but does not wrap.
void registerOptions(Options* o) {
    CLI::App* app = &o->app;
    o->cores = addValueOption(app, "--cores", "N|MIN:MAX", arbconfig::kCoresForm,
                              "Cores the process may hold: N exactly N; MIN:MAX a range the core\n"
                              "policy moves within; MIN: at least MIN, at most one per CPU in\n"
                              "arbrun's affinity mask. 1 <= MIN <= MAX <= 256. Default 1:");
    o->priority = addValueOption(app, "--priority", "0-7", arbconfig::kPriorityForm,
                                 "Priority at the core arbiter: 0 highest, 7 lowest. Default 3");
    o->classRule =
        addValueOption(app, "--class", "RULE=CLASS", arbconfig::kClassRuleForm,
                       "Classify threads; repeatable, the first matching rule wins. RULE:\n"
                       "  sym:GLOB     the start routine's symbol (C++ names demangled)\n"
                       "  name:GLOB    the thread's name\n"
                       "  caller:GLOB  any function on the creating thread's stack\n"
                       "  index:N[-M]  creation order, 0 = first thread created after main\n"
                       "CLASS: normal (the shared cores), exclusive (a core of its own),\n"
                       "batch (cores held at a lower priority, the first to go).\n"
                       "GLOB: * any run, ? one character, [a-z] [!0-9] [[:digit:]] sets,\n"
                       "\\ makes the next character literal. Quote rules in the shell");
    o->defaultClass = addValueOption(app, "--default-class", "CLASS", arbconfig::kThreadClassForm,
                                     "Class of threads no rule matches. Default normal");
    o->arbiter =
        addValueOption(app, "--arbiter", "PATH", arbconfig::kArbiterForm,
                       "The core arbiter's Unix socket. Default /run/arbrun/arbiter.sock.\n"
                       "If it cannot be reached the program says so once and runs standalone");
    app->add_flag("--standalone", o->standalone,
                  "Contact no arbiter; run on the CPUs in arbrun's affinity mask.\n"
                  "Excludes --arbiter");
    app->add_flag("--stats", o->stats,
                  "On exit, print to stderr: threads created, peak live threads,\n"
                  "context switches, blocking calls handed off");
    app->add_flag("--verbose", o->verbose,
                  "Say what arbrun and the runtime do (the environment passed on,\n"
                  "cores granted and released, class matches) on stderr");
    for (CLI::Option* flag : {app->get_option("--standalone"), app->get_option("--stats"),
                              app->get_option("--verbose")}) {
        flag->disable_flag_override();  // "--stats=2" is an error, not "true"
    }
    app->set_version_flag("--version", "arbrun " ARBRUN_VERSION, "Print the version and exit");
    app->allow_extras();  // unknown options are reported by us, one line, naming the option
    decorateHelp(app);
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

// An argument in single quotes for a one-line message (control bytes shown as '?').
std::string quote(std::string text) {
    for (char& c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    return "'" + text + "'";
}

// Unknown options get the same one line whether CLI11 or findProgram() noticed them.
std::string unknownOption(const std::string& arg) {
    return "unknown option " + quote(arg) + "; see 'arbrun --help' for the options";
}

// CLI11's own errors, rewritten to one line that names the option and the accepted form.
std::string describeParseError(const Options& o, const CLI::ParseError& e) {
    const std::vector<std::string> extras = o.app.remaining();
    if (!extras.empty()) {
        return unknownOption(extras.front());
    }
    const std::string what = e.what();
    for (const std::string flag : {"standalone", "stats", "verbose"}) {
        // CLI11 names a flag "stats" or "--stats" depending on the error.
        if (what.rfind(flag + " ", 0) == 0 || what.find("--" + flag) != std::string::npos) {
            return "--" + flag + " takes no value";
        }
    }
    for (const ValueOption* v :
         {&o.cores, &o.priority, &o.classRule, &o.defaultClass, &o.arbiter}) {
        const std::string name = v->option->get_name();
        if (what.compare(0, name.size() + 1, name + ":") == 0) {
            return name + ": a value is required; expected " + std::string(v->form);
        }
    }
    return what + "; see 'arbrun --help'";
}

// Runs every value of every option through its arbconfig parser, in command-line order per
// option. Returns the first error, or nullopt.
std::optional<std::string> buildConfig(const Options& o, Config* config) {
    std::string error;
    for (const std::string& v : o.cores.option->results()) {
        if (!arbconfig::parseCores(v, config, &error)) return error;
    }
    for (const std::string& v : o.priority.option->results()) {
        if (!arbconfig::parsePriority(v, config, &error)) return error;
    }
    for (const std::string& v : o.classRule.option->results()) {
        if (!arbconfig::parseClassRule(v, &config->classRules.emplace_back(), &error)) return error;
    }
    for (const std::string& v : o.defaultClass.option->results()) {
        if (!arbconfig::parseThreadClass(v, &config->defaultClass, &error)) return error;
    }
    for (const std::string& v : o.arbiter.option->results()) {
        if (!arbconfig::parseArbiterPath(v, config, &error)) return error;
    }
    if (o.standalone && o.arbiter.option->count() > 0) {
        return "--standalone and --arbiter exclude each other (standalone mode contacts no "
               "arbiter); give one of them";
    }
    config->standalone = o.standalone;
    config->stats = o.stats;
    config->verbose = o.verbose;
    return std::nullopt;
}

}  // namespace

ParseResult parseCommandLine(const std::vector<std::string>& args, Invocation* invocation) {
    Options o;
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
        return {ParseOutcome::usageError, unknownOption(o.app.remaining().front())};
    }
    Invocation next;
    if (auto error = buildConfig(o, &next.config)) return {ParseOutcome::usageError, *error};
    if (programStart >= args.size()) {
        return {ParseOutcome::usageError,
                "no program given; usage: arbrun [options] -- program [args] (see arbrun --help)"};
    }
    next.command.assign(args.begin() + static_cast<std::ptrdiff_t>(programStart), args.end());
    *invocation = std::move(next);
    return {ParseOutcome::run, {}};
}

}  // namespace arbrun
