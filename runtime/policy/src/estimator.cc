// Shared parts of the estimator interface: reason names, decision traces, limit validation.
#include <string>

#include "arbrt/policy/estimator.h"
#include "format.h"

namespace arbrt::policy {

using detail::formatDuration;
using detail::formatRatio;

// Stable names: traces and tests compare them as text.
std::string_view toString(Reason reason) {
    switch (reason) {
        case Reason::hold:
            return "hold";
        case Reason::steady:
            return "steady";
        case Reason::loadFactorHigh:
            return "loadFactorHigh";
        case Reason::utilisationLow:
            return "utilisationLow";
        case Reason::queuedAcrossChecks:
            return "queuedAcrossChecks";
        case Reason::coreIdle:
            return "coreIdle";
    }
    return "unknown";
}

// "granted -> wanted" first so a trace reads as a sequence of moves, then the evidence.
std::string describe(const Decision& d) {
    std::string text = d.cores == d.granted ? std::to_string(d.cores) + " cores"
                                            : std::to_string(d.granted) + " -> " +
                                                  std::to_string(d.cores) + " cores";
    const std::string core = std::to_string(d.coreId);
    switch (d.reason) {
        case Reason::hold:
            text += " (hold)";
            break;
        case Reason::steady:
            text += ": steady";
            break;
        case Reason::loadFactorHigh:
            text += ": load factor " + formatRatio(d.measured) + " > " + formatRatio(d.limit);
            break;
        case Reason::utilisationLow:
            text += ": utilisation with one core fewer " + formatRatio(d.measured) + " < " +
                    formatRatio(d.limit);
            break;
        case Reason::queuedAcrossChecks:
            text += ": a thread on core " + core + " waited across two checks (>= " +
                    formatDuration(static_cast<uint64_t>(d.measured)) + ")";
            break;
        case Reason::coreIdle:
            text += ": core " + core + " idle for " +
                    formatDuration(static_cast<uint64_t>(d.measured)) + " (grace " +
                    formatDuration(static_cast<uint64_t>(d.limit)) + ")";
            break;
    }
    if (d.clamped) text += " (clamped to the core limit)";
    return text;
}

// Same bounds and wording as arbrun's --cores (launcher/config), so the two read alike.
std::optional<std::string> validate(const CoreLimits& limits) {
    if (limits.minCores >= 1 && limits.minCores <= limits.maxCores &&
        limits.maxCores <= static_cast<uint32_t>(kMaxCoreIds)) {
        return std::nullopt;
    }
    return "cores " + std::to_string(limits.minCores) + ":" + std::to_string(limits.maxCores) +
           " are not valid: need MIN:MAX with 1 <= MIN <= MAX <= " + std::to_string(kMaxCoreIds);
}

}  // namespace arbrt::policy
