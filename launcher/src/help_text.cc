// The hand-written parts of `arbrun --help`.
#include "help_text.h"

#include <memory>

namespace arbrun {
namespace {

constexpr const char* kDescription =
    "Runs an unmodified pthread program as user-level threads on cores granted by\n"
    "the core arbiter: its pthread, sleep and blocking calls go to the arbrun runtime.";

constexpr const char* kFooter =
    "The program runs with the preload library first in LD_PRELOAD (libarbrun.so, found\n"
    "from this executable's location: ../lib/arbrun/ when installed, ../lib/ in a build\n"
    "tree; or $ARBRUN_PRELOAD_LIB) and the options in ARBRUN_CORES,\n"
    "ARBRUN_PRIORITY, ARBRUN_CLASS, ARBRUN_DEFAULT_CLASS, ARBRUN_ARBITER, ARBRUN_STANDALONE,\n"
    "ARBRUN_STATS, ARBRUN_VERBOSE and ARBRUN_EXPLAIN_CLASSES, which replace any already set.\n"
    "The '--' may be left out when the program's name does not start with '-'.\n"
    "Go programs (Go's runtime schedules its own threads) and statically linked programs\n"
    "(they never load the library) run natively; one line on stderr says so.\n"
    "\n"
    "Examples:\n"
    "  arbrun -- ./server --port 8080\n"
    "  arbrun --cores 2:4 --priority 1 -- memcached -t 4\n"
    "  arbrun --priority 6 --class 'sym:encode_*=batch' -- x264 --threads 4 -o out.mkv in.y4m\n"
    "  arbrun --class 'name:io-*=exclusive' --class 'index:0-1=exclusive' -- ./app\n"
    "  arbrun --explain-classes --class 'sym:worker*=exclusive' -- ./app\n"
    "  arbrun --standalone --cores 2 --stats -- pigz -p 4 big.tar\n"
    "\n"
    "Exit status:\n"
    "  arbrun replaces itself with the program (exec), so the exit status is the program's\n"
    "  own, and a program killed by a signal leaves arbrun killed by the same signal.\n"
    "  Before the program starts, arbrun exits with:\n"
    "  2    bad options, no program given, or the preload library is missing\n"
    "  126  the program was found but cannot be executed\n"
    "  127  the program was not found\n"
    "\n"
    "Subcommands (only as the first argument; run a program named doctor or ab\n"
    "with 'arbrun -- doctor'):\n"
    "  doctor  check what arbrun needs of this machine: FSGSBASE, glibc, syscall\n"
    "          user dispatch, cgroup cpusets and how fast threads move between them,\n"
    "          root, the core arbiter, the preload library; and which programs run\n"
    "          natively (Go, static)\n"
    "  ab      run a program natively and under arbrun alternately; compare\n"
    "          wall time, CPU time, peak RSS and output\n"
    "  See 'arbrun doctor --help' and 'arbrun ab --help'.";

constexpr const char* kDoctorDescription =
    "Checks what arbrun needs of this machine. One line per check: OK, WARN (arbrun\n"
    "works, at a cost) or FAIL (it cannot work as intended), with what a missing piece\n"
    "costs and how to fix it.";

constexpr const char* kDoctorFooter =
    "Checks: FSGSBASE (fast thread-pointer switch); glibc (the runtime's own thread-layout\n"
    "probe); syscalls (whether system calls a program issues outside libc, as OpenMP\n"
    "and JIT code do, can be caught: Linux syscall user dispatch, 5.11+); cgroup\n"
    "cpusets, v1 or v2 (from /proc/self/mountinfo); moves (whether the kernel moves a\n"
    "thread between cpusets without waiting for an RCU grace period: favordynmods);\n"
    "root (the arbiter's cpuset backends need it); the core arbiter (hello and status\n"
    "over its socket); the preload library (found as arbrun finds it, then /bin/true run\n"
    "under it standalone);\n"
    "runtimes (a note: which programs run natively whatever arbrun is asked, Go programs\n"
    "and statically linked ones, and why).\n"
    "\n"
    "Exit status:\n"
    "  0  no check FAILed (WARNs allowed)\n"
    "  1  at least one check FAILed\n"
    "  2  bad options";

constexpr const char* kAbDescription =
    "Runs the program natively and under arbrun alternately (native, arbrun, native,\n"
    "arbrun, ... RUNS pairs) and prints the medians of wall time, CPU time (user+sys)\n"
    "and peak RSS of each mode, the ratio arbrun/native of each, and whether every\n"
    "run's stdout and exit status matched those of the first native run.";

constexpr const char* kAbFooter =
    "The options other than -n are arbrun's (see 'arbrun --help') and apply to the\n"
    "arbrun runs. Each run's stdout goes to an unlinked temporary file in $TMPDIR (or\n"
    "/tmp) and is compared byte for byte; stdin is /dev/null; stderr passes through,\n"
    "so arbrun's own warnings (running standalone, ...) are seen. CPU time and peak RSS\n"
    "include the program's waited-for children. A progress line per run goes to\n"
    "stderr, the table to stdout.\n"
    "\n"
    "Example:\n"
    "  arbrun ab -n 10 --cores 2 -- pigz -p 4 -c big.tar\n"
    "\n"
    "Exit status:\n"
    "  0    every run's stdout and exit status matched the first native run's (the\n"
    "       program's own exit status, whatever it is, is not a failure)\n"
    "  1    a run differed (the report names it)\n"
    "  2    bad options, no program given, or the preload library is missing\n"
    "  126  the program was found but cannot be executed\n"
    "  127  the program was not found";

// The hand-written parts of one command's help.
struct HelpText {
    const char* usage;
    const char* description;
    const char* footer;
};

// Each subcommand's texts; the main usage lists the subcommands' usage lines too.
HelpText helpText(Subcommand subcommand) {
    switch (subcommand) {
        case Subcommand::doctor:
            return {"Usage: arbrun doctor [--arbiter PATH]", kDoctorDescription, kDoctorFooter};
        case Subcommand::ab:
            return {"Usage: arbrun ab [-n RUNS] [options] [--] program [args...]", kAbDescription,
                    kAbFooter};
        case Subcommand::run:
            break;
    }
    return {
        "Usage: arbrun [options] [--] program [args...]\n"
        "       arbrun doctor [--arbiter PATH]\n"
        "       arbrun ab [-n RUNS] [options] [--] program [args...]",
        kDescription, kFooter};
}

// CLI11 would print the description, then "arbrun [OPTIONS]"; the usage line with the program
// and its arguments comes first, then what arbrun does.
class Formatter : public CLI::Formatter {
  public:
    explicit Formatter(HelpText text) : text_(text) {}
    std::string make_description(const CLI::App*) const override { return ""; }
    std::string make_usage(const CLI::App*, std::string) const override {
        return std::string(text_.usage) + "\n\n" + text_.description + "\n";
    }

  private:
    HelpText text_;
};

}  // namespace

// Called once per parse; the formatter is shared-owned by the app.
void decorateHelp(CLI::App* app, Subcommand subcommand) {
    const HelpText text = helpText(subcommand);
    app->footer(text.footer);
    auto formatter = std::make_shared<Formatter>(text);
    formatter->column_width(28);
    app->formatter(formatter);
}

}  // namespace arbrun
