// The helper thread (helper.cc): a kernel thread of this library, with every signal blocked, that
// hands process-directed signals to a thread (handlers must not touch the runtime's locks),
// alerts again threads that have not taken theirs, retries asynchronous cancellations, and
// receives held signals in its window (signal_queue.h).
#pragma once

namespace arbrun {

// Starts the helper, once. The first call that makes signals the program's business makes it (a
// disposition or mask it sets, a wait, a pthread_kill, an asynchronous cancellation): a program
// that never does (every command of a shell script) has no thread for it.
void startHelperOnce();
// Whether it was started (acquire): before that, a recorded signal has no one to hand it out.
bool helperStarted();
// Has the helper make a pass (hand out, alert, refill). Async-signal-safe.
void wakeHelper();

// A thread that found the helper's window open: keeps it from reopening (once, *shut set) and
// wakes the helper, which closes it at once; reopenHelperWindow() lets it go on.
void waitForHelperWindowToShut(bool* shut);
void reopenHelperWindow();

// Fork child, before restartSignalHelperAfterFork() (signals.h): no wake-up is outstanding.
void resetHelperAfterFork();

}  // namespace arbrun
