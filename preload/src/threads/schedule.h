// Scheduling policies and priorities per user thread (schedule_state.h keeps them).
//
// pthread_setschedparam, pthread_setschedprio, pthread_getschedparam, pthread_getattr_np,
// pthread_create with PTHREAD_EXPLICIT_SCHED, and sched_setscheduler/sched_getscheduler/
// sched_setparam/sched_getparam on the calling thread (pid 0 or its own id) act on the user
// thread's record and never on a carrier. Changes are validated as the kernel validates
// sched_setscheduler(2): EINVAL for an unknown policy (SCHED_DEADLINE included: it needs
// sched_setattr) or a priority outside its range; EPERM without CAP_SYS_NICE for a real-time
// policy or priority RLIMIT_RTPRIO does not allow, for leaving SCHED_IDLE where RLIMIT_NICE does
// not allow it, and for dropping SCHED_RESET_ON_FORK; ESRCH for a thread that has exited. A
// SCHED_FIFO/RR priority becomes the thread's real-time priority in the runtime, which orders its
// core's run queue (arbrt::setThreadPriority); SCHED_OTHER, BATCH and IDLE threads have none.
// What glibc reports is reported: a new thread inherits its creator's settings unless its
// attributes say PTHREAD_EXPLICIT_SCHED and set a policy or a priority (the one not set is the
// creator's); the main thread starts with the process's own.
//
// The nice value too is the thread's own, as Linux keeps it per thread: setpriority(PRIO_PROCESS)
// and getpriority on the calling thread (who 0 or its own id), nice(), and their raw system calls
// read and write the record; a new thread inherits its creator's (a negative one becomes 0 under
// SCHED_RESET_ON_FORK). Lowering it is checked as the kernel checks it (EACCES without
// CAP_SYS_NICE beyond RLIMIT_NICE). Made on a carrier it would have reniced every thread that
// carrier runs. The runtime does not weigh it: threads of one core take turns whatever their nice
// value, and carriers keep the process's. PRIO_PGRP, PRIO_USER and other threads' ids go to the
// kernel.
#pragma once

#include <pthread.h>

#include "arbrt/thread.h"

namespace arbrun {

struct ScheduleSettings {
    int policy = SCHED_OTHER;  // as the program passed it, SCHED_RESET_ON_FORK included
    int priority = 0;
    bool explicitSched = false;  // created with PTHREAD_EXPLICIT_SCHED (pthread_getattr_np)
    int nice = 0;                // -20..19 (setpriority, nice)
};

// Before a thread is created by the calling thread: its settings from `attr` (null: inherited) and
// its runtime priority in `runtimePriority`. Returns 0, or EINVAL/EPERM where glibc's
// pthread_create fails (the kernel refused the settings for the new thread).
int newThreadSchedule(const pthread_attr_t* attr, ScheduleSettings* out, int* runtimePriority);
// On the creating thread, before `created` can run: records its settings.
void initSchedule(arbrt::ThreadId created, const ScheduleSettings& settings);
// The settings of a live user thread (for pthread_getattr_np); false when it has exited.
bool scheduleOf(arbrt::ThreadId thread, ScheduleSettings* out);

// setpriority/getpriority as their raw system calls (the kernel's convention: getpriority returns
// 20 - nice, errors are -errno), or kNotHandled (robust_list.h) for a call that is not about the
// calling user thread's own nice value.
long priorityCall(long number, const long args[6]);
// sched_setattr/sched_getattr (raw convention) for the calling user thread's own record: the
// policy, priority, SCHED_RESET_ON_FORK and nice value; SCHED_DEADLINE is refused with EPERM (the
// runtime cannot reserve a user thread a deadline bandwidth). kNotHandled for other threads.
long schedAttrCall(long number, const long args[6]);

}  // namespace arbrun
