// glibc's stdio takes a stream's lock only once the process has had a second thread
// (_IO_FLAGS2_NEED_LOCK, set on every stream by glibc's first pthread_create). This library's own
// kernel threads (the runtime's, the signal helper) set it when they are created, so a program that
// never creates a thread paid for a lock on every getc and putc: ten times their native cost
// (50 M getc: 650 against 55 ms on the development VM). So streams stay lock-free, as natively,
// until the program creates its first thread besides main().
#pragma once

#include <stdio.h>

namespace arbrun {

// At start-up, before this library creates any kernel thread: remembers whether stdio is still
// lock-free (the process has one thread).
void noteStdioBeforeThreads();

// After this library created a kernel thread (the runtime's at start-up, the signal helper when
// the program first touches signals), on the program's thread, while the program has no thread
// besides main(): if stdio was lock-free before them and glibc's flag is where it is expected,
// clears it on every stream again. Nothing but the program's one thread uses stdio meanwhile
// (this library writes its messages with write(2)). Does nothing once the program has created a
// thread.
void relaxStdioLocks();

// Before the program's first thread besides main() can run: every stream locks again, as
// natively after pthread_create (streams opened later lock by themselves: glibc's own switch is
// on). One load when there is nothing to do.
void restoreStdioLocks();

// A stream the program opened while streams are lock-free: made lock-free too. Returns `stream`.
FILE* relaxNewStream(FILE* stream);

}  // namespace arbrun
