#include "own_priority.h"

#include <string.h>

#include "log.h"

namespace arbd {

int applyOwnNice(Sys& sys, int nice) {
    int current = 0;
    if (int e = sys.getOwnNice(&current)) {
        logf(LogLevel::kWarn, "cannot read its own niceness (%s); --nice %d not applied",
             strerror(e), nice);
        return e;
    }
    if (current == nice) return 0;  // started at it (e.g. by a service manager's Nice=)
    if (int e = sys.setOwnNice(nice)) {
        // Raising niceness is always allowed; only lowering it can be refused.
        logf(LogLevel::kWarn,
             "cannot lower its niceness from %d to %d (%s: needs CAP_SYS_NICE or an RLIMIT_NICE "
             "that allows it); core hand-overs may wait behind busy unmanaged cpus (--nice %d "
             "keeps this one and silences this line)",
             current, nice, strerror(e), current);
        return e;
    }
    logf(LogLevel::kInfo, "niceness %d (was %d)", nice, current);
    return 0;
}

}  // namespace arbd
