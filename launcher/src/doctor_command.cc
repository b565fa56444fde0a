// `arbrun doctor`: the real probe, the checks, the report.
#include <cstdio>

#include "doctor_checks.h"
#include "doctor_system.h"
#include "subcommands.h"

namespace arbrun {

// All the logic is in runChecks(); this only connects it to the machine and stdout.
int runDoctor(const Invocation& invocation) {
    const std::unique_ptr<SystemProbe> probe = makeSystemProbe();
    const std::vector<Check> checks = runChecks(*probe, invocation.config.arbiterSocket);
    std::fputs(formatReport(checks).c_str(), stdout);
    return doctorExitStatus(checks);
}

}  // namespace arbrun
