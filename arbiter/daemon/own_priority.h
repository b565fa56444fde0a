// The arbiter's own CPU priority (--nice). The arbiter decides how fast a core changes hands, and
// it runs on the unmanaged CPUs beside everything else on the machine: at niceness 0 a release's
// acknowledgement waited there 100-350 us behind a starting tenant's threads (which the arbiter's
// release poll yields to, server.cc). bench/release-latency/run.sh --backend cgroup-v1 --nice
// 0,-10,-20,0,-10,-20 on a 2-vCPU VM (one unmanaged CPU): release p50 551/501 us at 0, 337/384 us
// at -10, 322/322 us at -20. The arbiter runs a few hundred microseconds of CPU per hand-over, so
// its priority costs the other programs on those CPUs little.
#pragma once

#include "sys.h"

namespace arbd {

// Sets the calling thread's niceness to `nice` (call it before the arbiter has other threads:
// niceness is per thread on Linux). Logs what it did: a refusal (no CAP_SYS_NICE) is a warning,
// not an error, since the arbiter works at any priority. Returns 0 or the errno of the refusal.
int applyOwnNice(Sys& sys, int nice);

}  // namespace arbd
