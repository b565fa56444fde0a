// Text helpers for messages and traces.
#include "format.h"

#include <cstdio>

namespace arbrt::policy::detail {

// The largest unit that keeps the number >= 1, with up to six decimals trimmed of trailing zeros,
// so messages echo values the way the user wrote them ("50 ms", not "50000000") and traces keep
// the microseconds of a time in seconds ("1.20002 s").
std::string formatDuration(uint64_t ns) {
    struct Unit {
        uint64_t ns;
        const char* name;
    };
    static constexpr Unit kUnits[] = {{1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}};
    for (const Unit& unit : kUnits) {
        if (ns < unit.ns) continue;
        char text[48];
        std::snprintf(text, sizeof text, "%.6f", static_cast<double>(ns) / unit.ns);
        std::string number(text);
        while (number.back() == '0') number.pop_back();
        if (number.back() == '.') number.pop_back();
        return number + " " + unit.name;
    }
    return std::to_string(ns) + " ns";
}

// Two decimals are enough to see which side of a threshold a value fell on.
std::string formatRatio(double value) {
    char text[48];
    std::snprintf(text, sizeof text, "%.2f", value);
    return text;
}

// Shortest form (%g), so an error message echoes a bad value recognisably.
std::string formatNumber(double value) {
    char text[48];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

}  // namespace arbrt::policy::detail
