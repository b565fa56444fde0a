// A user thread's scheduling policy and priority, kept as glibc keeps them in its thread
// descriptor (what pthread_getschedparam and pthread_getattr_np report), since the kernel only
// knows the carriers.
#pragma once

#include <atomic>
#include <cstdint>

namespace arbrun {

// Lives in ShimThreadState (zeroed at creation: SCHED_OTHER, priority 0, inherited). One word, so
// a reader never sees a policy with another call's priority: bits 0-31 the policy as the program
// passed it (SCHED_RESET_ON_FORK included, as glibc stores it), bits 32-39 the priority, bit 40
// whether the thread was created with PTHREAD_EXPLICIT_SCHED. Written by its creator before it
// runs and then by CAS from any thread (pthread_setschedparam, setschedprio, sched_setscheduler on
// itself); read by any thread.
struct ScheduleState {
    std::atomic<uint64_t> word;
};

}  // namespace arbrun
