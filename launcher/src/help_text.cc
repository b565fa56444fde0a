// The hand-written parts of `arbrun --help`.
#include "help_text.h"

#include <memory>

namespace arbrun {
namespace {

constexpr const char* kDescription =
    "Runs an unmodified pthread program as user-level threads on cores granted by\n"
    "the core arbiter: its pthread, sleep and blocking calls go to the arbrun runtime.";

constexpr const char* kFooter =
    "The program runs with the preload library first in LD_PRELOAD (../lib/libarbrun.so\n"
    "beside this executable, or $ARBRUN_PRELOAD_LIB) and the options in ARBRUN_CORES,\n"
    "ARBRUN_PRIORITY, ARBRUN_CLASS, ARBRUN_DEFAULT_CLASS, ARBRUN_ARBITER, ARBRUN_STANDALONE,\n"
    "ARBRUN_STATS and ARBRUN_VERBOSE, which replace any already set. The '--' may be left\n"
    "out when the program's name does not start with '-'.\n"
    "\n"
    "Examples:\n"
    "  arbrun -- ./server --port 8080\n"
    "  arbrun --cores 2:4 --priority 1 -- memcached -t 4\n"
    "  arbrun --priority 6 --class 'sym:encode_*=batch' -- x264 --threads 4 -o out.mkv in.y4m\n"
    "  arbrun --class 'name:io-*=exclusive' --class 'index:0-1=exclusive' -- ./app\n"
    "  arbrun --standalone --cores 2 --stats -- pigz -p 4 big.tar\n"
    "\n"
    "Exit status:\n"
    "  arbrun replaces itself with the program (exec), so the exit status is the program's\n"
    "  own, and a program killed by a signal leaves arbrun killed by the same signal.\n"
    "  Before the program starts, arbrun exits with:\n"
    "  2    bad options, no program given, or the preload library is missing\n"
    "  126  the program was found but cannot be executed\n"
    "  127  the program was not found";

// CLI11 would print the description, then "arbrun [OPTIONS]"; the usage line with the program
// and its arguments comes first, then what arbrun does.
class Formatter : public CLI::Formatter {
  public:
    std::string make_description(const CLI::App*) const override { return ""; }
    std::string make_usage(const CLI::App*, std::string) const override {
        return std::string("Usage: arbrun [options] [--] program [args...]\n\n") + kDescription +
               "\n";
    }
};

}  // namespace

// Called once per parse; the formatter is shared-owned by the app.
void decorateHelp(CLI::App* app) {
    app->footer(kFooter);
    auto formatter = std::make_shared<Formatter>();
    formatter->column_width(28);
    app->formatter(formatter);
}

}  // namespace arbrun
