// The core timeline (`arbrun --trace FILE`): a CSV file with one row per event,
//   time_s,event,core,cpu,value
// time_s: seconds since the runtime started; event: start (value = cores the process may use),
// grant / release (a core becomes usable / stops being usable; cpu = the arbiter's cpu, -1
// standalone), request (value = cores asked of the arbiter), util (value = the fraction of the
// last interval the core ran user threads; one row per active core about every 10 ms), stop.
// Rows go straight to the file (a write per batch), so a process that exits without stopping the
// runtime loses nothing but the last interval.
#pragma once

#include <string>

namespace arbrt::detail {

enum class TraceEvent { start, grant, release, request, util, stop };

// Opens (truncates) the file; false with *error if it cannot. Call before the carriers start.
bool openTrace(const std::string& path, std::string* error);
// Any kernel thread of the runtime (never a user thread's hot path). No-op when tracing is off.
void traceEvent(TraceEvent event, int core, int cpu, double value);
// Monitor: appends util rows when the last ones are at least 10 ms old.
void traceUtilisationIfDue();
// Whether a trace file is open (the monitor then never sleeps deep: util rows stay regular).
bool tracing();
// Stop: writes the stop row and closes the file.
void closeTrace();

}  // namespace arbrt::detail
