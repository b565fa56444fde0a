// glibc's stdio takes a stream's lock only once the process has had a second thread
// (_IO_FLAGS2_NEED_LOCK, set on every stream by glibc's first pthread_create). This library's own
// kernel threads (the runtime's carrier, the signal helper) set it at start-up, so a program that
// never creates a thread paid for a lock on every getc and putc: ten times their native cost
// (50 M getc: 650 against 55 ms on the development VM). So streams stay lock-free, as natively,
// until the program creates its first thread besides main().
#pragma once

#include <stdio.h>

namespace arbrun {

// At start-up, before this library creates any kernel thread: remembers whether stdio is still
// lock-free (the process has one thread).
void noteStdioBeforeThreads();

// After the runtime's kernel threads exist: if stdio was lock-free before them and glibc's flag
// is where it is expected, clears it on every stream again. Nothing but the program's one thread
// uses stdio meanwhile (this library writes its messages with write(2)).
void relaxStdioLocks();

// Before the program's first thread besides main() can run: every stream locks again, as
// natively after pthread_create (streams opened later lock by themselves: glibc's own switch is
// on). One load when there is nothing to do.
void restoreStdioLocks();

// A stream the program opened while streams are lock-free: made lock-free too. Returns `stream`.
FILE* relaxNewStream(FILE* stream);

}  // namespace arbrun
