// Parsers for the scalar options (--cores, --priority, --default-class, --arbiter, booleans) and
// the names of classes and rule kinds. The public functions are the labelled ones with the
// command-line option's name as the label.
#include <array>

#include "parse_detail.h"

namespace arbconfig {
namespace {

// Indexed by the enum's value; constexpr so nothing runs at load time.
constexpr std::array<std::string_view, 3> kClassNames = {"normal", "exclusive", "batch"};
constexpr std::array<std::string_view, 4> kKindNames = {"sym", "name", "index", "caller"};

}  // namespace

// Table lookups: the names are the parser's vocabulary, so both directions share one table.
std::string_view threadClassName(ThreadClass threadClass) {
    return kClassNames[static_cast<size_t>(threadClass)];
}

std::string_view ruleKindName(ClassRule::Kind kind) {
    return kKindNames[static_cast<size_t>(kind)];
}

namespace detail {

// "N" means exactly N cores; "MIN:" leaves the maximum at 0 (one per allowed CPU).
bool parseCoresAs(std::string_view label, std::string_view text, Config* config,
                  std::string* error) {
    const size_t colon = text.find(':');
    uint64_t lo = 0, hi = 0;
    if (!parseDecimal(text.substr(0, colon), kMaxCores, &lo)) {
        return invalid(label, text, "", kCoresForm, error);
    }
    if (colon == std::string_view::npos) {
        hi = lo;
    } else if (colon + 1 < text.size() && !parseDecimal(text.substr(colon + 1), kMaxCores, &hi)) {
        return invalid(label, text, "", kCoresForm, error);
    }
    if (lo == 0) return invalid(label, text, "at least one core is needed", kCoresForm, error);
    if (hi != 0 && hi < lo) return invalid(label, text, "MIN exceeds MAX", kCoresForm, error);
    config->minCores = static_cast<uint32_t>(lo);
    config->maxCores = static_cast<uint32_t>(hi);
    return true;
}

// The arbiter's eight levels; anything else is refused rather than clamped, so a typo is seen.
bool parsePriorityAs(std::string_view label, std::string_view text, Config* config,
                     std::string* error) {
    uint64_t value = 0;
    if (!parseDecimal(text, kLowestPriority, &value)) {
        return invalid(label, text, "", kPriorityForm, error);
    }
    config->priority = static_cast<int>(value);
    return true;
}

// 0 turns preemption off; otherwise bounded so that the monitor's checks stay cheap (>= 100 us)
// and a computing thread cannot hold a core for more than a second.
bool parseTimeSliceAs(std::string_view label, std::string_view text, Config* config,
                      std::string* error) {
    uint64_t value = 0;
    if (!parseDecimal(text, kMaxTimeSliceUs, &value) || (value != 0 && value < kMinTimeSliceUs)) {
        return invalid(label, text, "", kTimeSliceForm, error);
    }
    config->timeSliceUs = static_cast<uint32_t>(value);
    return true;
}

// Any non-empty path without a NUL byte; whether it can be written is the launcher's check (it
// creates the file before starting the program).
bool parseTracePathAs(std::string_view label, std::string_view text, Config* config,
                      std::string* error) {
    if (text.empty() || text.find('\0') != std::string_view::npos) {
        return invalid(label, text, "", kTraceForm, error);
    }
    config->tracePath = std::string(text);
    return true;
}

// Exact, lowercase names: the same spelling in options, environment and messages.
bool parseThreadClassAs(std::string_view label, std::string_view text, ThreadClass* out,
                        std::string* error) {
    for (size_t i = 0; i < kClassNames.size(); ++i) {
        if (text == kClassNames[i]) {
            *out = static_cast<ThreadClass>(i);
            return true;
        }
    }
    return invalid(label, text, "unknown class", kThreadClassForm, error);
}

// Only what a Unix socket address can hold is checked; whether it exists is the preload library's
// start-up check (it reports an unreachable arbiter and runs standalone).
bool parseArbiterPathAs(std::string_view label, std::string_view text, Config* config,
                        std::string* error) {
    if (text.empty()) return invalid(label, text, "the path is empty", kArbiterForm, error);
    if (text.size() > kMaxSocketPathBytes) {
        return invalid(label, text, "the path is " + std::to_string(text.size()) + " bytes long",
                       kArbiterForm, error);
    }
    if (text.find('\0') != std::string_view::npos) {
        return invalid(label, text, "the path contains a NUL byte", kArbiterForm, error);
    }
    config->arbiterSocket = std::string(text);
    return true;
}

// toEnvironment writes 1/0; the common spellings are accepted for people setting ARBRUN_* by hand.
bool parseBoolAs(std::string_view label, std::string_view text, bool* out, std::string* error) {
    if (text == "1" || text == "true" || text == "yes" || text == "on") {
        *out = true;
        return true;
    }
    if (text == "0" || text == "false" || text == "no" || text == "off") {
        *out = false;
        return true;
    }
    return invalid(label, text, "", "1 or 0 (also true/false, yes/no, on/off)", error);
}

}  // namespace detail

// The public parsers report errors under the command-line option's name.
bool parseCores(std::string_view text, Config* config, std::string* error) {
    return detail::parseCoresAs("--cores", text, config, error);
}

bool parsePriority(std::string_view text, Config* config, std::string* error) {
    return detail::parsePriorityAs("--priority", text, config, error);
}

bool parseTimeSlice(std::string_view text, Config* config, std::string* error) {
    return detail::parseTimeSliceAs("--time-slice", text, config, error);
}

bool parseTracePath(std::string_view text, Config* config, std::string* error) {
    return detail::parseTracePathAs("--trace", text, config, error);
}

bool parseThreadClass(std::string_view text, ThreadClass* out, std::string* error) {
    return detail::parseThreadClassAs("--default-class", text, out, error);
}

bool parseArbiterPath(std::string_view text, Config* config, std::string* error) {
    return detail::parseArbiterPathAs("--arbiter", text, config, error);
}

}  // namespace arbconfig
