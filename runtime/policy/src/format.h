// Small text helpers shared by validation messages and decision traces.
#pragma once

#include <cstdint>
#include <string>

namespace arbrt::policy::detail {

// A duration as a person writes it: "999 ns", "10 us", "1.5 ms", "50 ms", "60 s".
std::string formatDuration(uint64_t ns);
// A ratio with two decimals: "1.50".
std::string formatRatio(double value);
// A value as the user may have written it: "1.5", "0.09", "nan".
std::string formatNumber(double value);

}  // namespace arbrt::policy::detail
