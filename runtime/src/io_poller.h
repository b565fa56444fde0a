// The runtime's readiness poller (io_poller.cc): an epoll instance and the kernel thread that waits
// on it. Started and stopped with the runtime.
#pragma once

namespace arbrt::detail {

// Creates the epoll instance and the poller thread; false if the kernel refuses either.
bool startPoller();
// Wakes the poller thread, joins it and closes its descriptors (no waiter may remain).
void stopPoller();

}  // namespace arbrt::detail
