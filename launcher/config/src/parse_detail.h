// Internal to arbconfig: the option parsers with the name to report in errors as a parameter, so
// that `--cores` and `ARBRUN_CORES` go through the same code and differ only in the label.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "arbconfig/config.h"

namespace arbconfig::detail {

// `text` in single quotes, with control bytes, DEL, '\'' and '\\' escaped (\n, \t, \xNN), so an
// error message built from user input stays on one line.
std::string quoted(std::string_view text);

// Sets *error (if not null) to "<label>: '<text>' is not valid[: <reason>]; expected <form>" and
// returns false, so parsers can `return invalid(...)`.
bool invalid(std::string_view label, std::string_view text, std::string_view reason,
             std::string_view form, std::string* error);

// Unsigned decimal digits only (no sign, no spaces, at least one digit), value <= max.
bool parseDecimal(std::string_view text, uint64_t max, uint64_t* out);

bool parseCoresAs(std::string_view label, std::string_view text, Config* config,
                  std::string* error);
// The estimator's settings; `field` names which one (its option table in values.cc).
enum class EstimatorField { kind, loadFactor, hysteresis, window, checkPeriod, idleGrace };
bool parseEstimatorFieldAs(EstimatorField field, std::string_view label, std::string_view text,
                           Config* config, std::string* error);
// Decimal number with an optional fraction ("1", "1.5", "2.25"), no sign or exponent.
bool parseFixedPoint(std::string_view text, double* out);
bool parseTracePathAs(std::string_view label, std::string_view text, Config* config,
                      std::string* error);
bool parseTimeSliceAs(std::string_view label, std::string_view text, Config* config,
                      std::string* error);
bool parseReleaseDeferAs(std::string_view label, std::string_view text, Config* config,
                         std::string* error);
bool parseIdleSpinAs(std::string_view label, std::string_view text, Config* config,
                     std::string* error);
bool parseRetakeAfterAs(std::string_view label, std::string_view text, Config* config,
                        std::string* error);
bool parseDispatchAs(std::string_view label, std::string_view text, Config* config,
                     std::string* error);
bool parseCohortMaxAs(std::string_view label, std::string_view text, Config* config,
                      std::string* error);
bool parseCohortMaxUsAs(std::string_view label, std::string_view text, Config* config,
                        std::string* error);
bool parsePriorityAs(std::string_view label, std::string_view text, Config* config,
                     std::string* error);
bool parseThreadClassAs(std::string_view label, std::string_view text, ThreadClass* out,
                        std::string* error);
bool parseArbiterPathAs(std::string_view label, std::string_view text, Config* config,
                        std::string* error);
bool parseClassRuleAs(std::string_view label, std::string_view text, ClassRule* rule,
                      std::string* error);
// 1/0, true/false, yes/no, on/off (lowercase).
bool parseBoolAs(std::string_view label, std::string_view text, bool* out, std::string* error);

}  // namespace arbconfig::detail
