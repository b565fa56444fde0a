// Fast release in arbiter mode (release_watcher.cc): a thread that reacts to the arbiter's release
// requests at once instead of at the dispatchers' next pass.
#pragma once

namespace arbrt::detail {

// Starts the watcher when the core provider offers release wake-ups (true when there is nothing
// to start); false if the thread cannot be created.
bool startReleaseWatcher();
// Joins it; call after setting RuntimeState::stopping.
void stopReleaseWatcher();

}  // namespace arbrt::detail
