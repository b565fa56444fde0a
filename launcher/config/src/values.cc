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

namespace {

// A whole number of microseconds: 0, or within [min, max] (min 0: any value up to max).
bool parseMicrosecondsAs(std::string_view label, std::string_view text, uint64_t min, uint64_t max,
                         std::string_view form, uint32_t* out, std::string* error) {
    uint64_t value = 0;
    if (!parseDecimal(text, max, &value) || (value != 0 && value < min)) {
        return invalid(label, text, "", form, error);
    }
    *out = static_cast<uint32_t>(value);
    return true;
}

}  // namespace

// 0 turns preemption off; otherwise bounded so that the monitor's checks stay cheap (>= 100 us)
// and a computing thread cannot hold a core for more than a second.
bool parseTimeSliceAs(std::string_view label, std::string_view text, Config* config,
                      std::string* error) {
    return parseMicrosecondsAs(label, text, kMinTimeSliceUs, kMaxTimeSliceUs, kTimeSliceForm,
                               &config->timeSliceUs, error);
}

// Bounded by half the arbiter's default forced-reclaim timeout (10 ms): a release held back longer
// would be taken by force.
bool parseReleaseDeferAs(std::string_view label, std::string_view text, Config* config,
                         std::string* error) {
    return parseMicrosecondsAs(label, text, 0, kMaxReleaseDeferUs, kReleaseDeferForm,
                               &config->releaseDeferUs, error);
}

// An idle core that polls is quick to take new work but burns its CPU; bounded so that an idle
// core always sleeps in the end.
bool parseIdleSpinAs(std::string_view label, std::string_view text, Config* config,
                     std::string* error) {
    return parseMicrosecondsAs(label, text, 0, kMaxIdleSpinUs, kIdleSpinForm, &config->idleSpinUs,
                               error);
}

// The monitor cannot look more often than its shortest nap (20 us); past a second the safety net
// would hardly be one.
bool parseRetakeAfterAs(std::string_view label, std::string_view text, Config* config,
                        std::string* error) {
    return parseMicrosecondsAs(label, text, kMinRetakeAfterUs, kMaxRetakeAfterUs, kRetakeAfterForm,
                               &config->retakeAfterUs, error);
}

// Exact, lowercase names, as the estimator's.
bool parseDispatchAs(std::string_view label, std::string_view text, Config* config,
                     std::string* error) {
    if (text == "fifo" || text == "cohort") {
        config->dispatch = text == "cohort" ? Dispatch::cohort : Dispatch::fifo;
        return true;
    }
    return invalid(label, text, "unknown dispatch", kDispatchForm, error);
}

// At least one thread per cohort (1: FIFO order, cohorts only counted); bounded so that the thread
// FIFO would run next never waits behind more than a thousand others.
bool parseCohortMaxAs(std::string_view label, std::string_view text, Config* config,
                      std::string* error) {
    uint64_t value = 0;
    if (!parseDecimal(text, kMaxCohortThreads, &value) || value == 0) {
        return invalid(label, text, "", kCohortMaxForm, error);
    }
    config->cohortMax = static_cast<uint32_t>(value);
    return true;
}

// A cohort must be allowed some time (0 would be FIFO in disguise: say --cohort-max 1 instead);
// past a second the thread FIFO would run next would wait too long.
bool parseCohortMaxUsAs(std::string_view label, std::string_view text, Config* config,
                        std::string* error) {
    uint64_t value = 0;
    if (!parseDecimal(text, kMaxCohortUs, &value) || value == 0) {
        return invalid(label, text, "", kCohortMaxUsForm, error);
    }
    config->cohortMaxUs = static_cast<uint32_t>(value);
    return true;
}

// One table for the estimator's integer settings: their option names, bounds and forms, so the
// command line and the environment parse them alike.
struct IntegerSetting {
    EstimatorField field;
    uint64_t min, max;
    std::string_view form;
    uint32_t EstimatorSettings::*member;
};
constexpr IntegerSetting kIntegerSettings[] = {
    {EstimatorField::hysteresis, 1, 49, kHysteresisForm, &EstimatorSettings::hysteresisPct},
    {EstimatorField::window, 1, 60'000, kWindowForm, &EstimatorSettings::windowMs},
    {EstimatorField::checkPeriod, 5, 50'000, kCheckPeriodForm, &EstimatorSettings::checkPeriodUs},
    {EstimatorField::idleGrace, 10, 60'000'000, kIdleGraceForm, &EstimatorSettings::idleGraceUs},
};

bool parseEstimatorFieldAs(EstimatorField field, std::string_view label, std::string_view text,
                           Config* config, std::string* error) {
    EstimatorSettings& s = config->estimator;
    if (field == EstimatorField::kind) {
        if (text == "arachne" || text == "fast") {
            s.kind = text == "fast" ? Estimator::fast : Estimator::arachne;
            return true;
        }
        return invalid(label, text, "unknown estimator", kEstimatorForm, error);
    }
    if (field == EstimatorField::loadFactor) {
        double value = 0;
        if (!parseFixedPoint(text, &value) || value <= 1.0 || value > 64.0) {
            return invalid(label, text, "", kLoadFactorForm, error);
        }
        s.loadFactor = value;
        return true;
    }
    for (const IntegerSetting& setting : kIntegerSettings) {
        if (setting.field != field) continue;
        uint64_t value = 0;
        if (!parseDecimal(text, setting.max, &value) || value < setting.min) {
            return invalid(label, text, "", setting.form, error);
        }
        s.*setting.member = static_cast<uint32_t>(value);
        return true;
    }
    return invalid(label, text, "", "", error);
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

bool parseReleaseDefer(std::string_view text, Config* config, std::string* error) {
    return detail::parseReleaseDeferAs("--release-defer", text, config, error);
}

bool parseIdleSpin(std::string_view text, Config* config, std::string* error) {
    return detail::parseIdleSpinAs("--idle-spin", text, config, error);
}

bool parseRetakeAfter(std::string_view text, Config* config, std::string* error) {
    return detail::parseRetakeAfterAs("--retake-after", text, config, error);
}

bool parseDispatch(std::string_view text, Config* config, std::string* error) {
    return detail::parseDispatchAs("--dispatch", text, config, error);
}

bool parseCohortMax(std::string_view text, Config* config, std::string* error) {
    return detail::parseCohortMaxAs("--cohort-max", text, config, error);
}

bool parseCohortMaxUs(std::string_view text, Config* config, std::string* error) {
    return detail::parseCohortMaxUsAs("--cohort-max-us", text, config, error);
}

std::string_view dispatchName(Dispatch dispatch) {
    return dispatch == Dispatch::cohort ? "cohort" : "fifo";
}

bool parseTracePath(std::string_view text, Config* config, std::string* error) {
    return detail::parseTracePathAs("--trace", text, config, error);
}

bool parseEstimator(std::string_view text, Config* config, std::string* error) {
    return detail::parseEstimatorFieldAs(detail::EstimatorField::kind, "--estimator", text, config,
                                         error);
}

bool parseLoadFactor(std::string_view text, Config* config, std::string* error) {
    return detail::parseEstimatorFieldAs(detail::EstimatorField::loadFactor, "--load-factor", text,
                                         config, error);
}

bool parseHysteresis(std::string_view text, Config* config, std::string* error) {
    return detail::parseEstimatorFieldAs(detail::EstimatorField::hysteresis, "--hysteresis", text,
                                         config, error);
}

bool parseWindow(std::string_view text, Config* config, std::string* error) {
    return detail::parseEstimatorFieldAs(detail::EstimatorField::window, "--window", text, config,
                                         error);
}

bool parseCheckPeriod(std::string_view text, Config* config, std::string* error) {
    return detail::parseEstimatorFieldAs(detail::EstimatorField::checkPeriod, "--check-period",
                                         text, config, error);
}

bool parseIdleGrace(std::string_view text, Config* config, std::string* error) {
    return detail::parseEstimatorFieldAs(detail::EstimatorField::idleGrace, "--idle-grace", text,
                                         config, error);
}

std::optional<std::string> checkConsistency(const Config& config, std::string_view idleGraceLabel) {
    const EstimatorSettings& s = config.estimator;
    if (uint64_t(s.idleGraceUs) >= 2 * uint64_t(s.checkPeriodUs)) return std::nullopt;
    std::string error;
    detail::invalid(idleGraceLabel, std::to_string(s.idleGraceUs),
                    "idleness is only seen at the check that ends an idle interval, so it must "
                    "cover two check periods of " +
                        std::to_string(s.checkPeriodUs) + " us",
                    kIdleGraceForm, &error);
    return error;
}

std::string_view estimatorName(Estimator estimator) {
    return estimator == Estimator::fast ? "fast" : "arachne";
}

bool parseThreadClass(std::string_view text, ThreadClass* out, std::string* error) {
    return detail::parseThreadClassAs("--default-class", text, out, error);
}

bool parseArbiterPath(std::string_view text, Config* config, std::string* error) {
    return detail::parseArbiterPathAs("--arbiter", text, config, error);
}

}  // namespace arbconfig
