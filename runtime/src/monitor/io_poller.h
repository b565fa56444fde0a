// The runtime's readiness poller (io_poller.cc): an epoll instance with a wake-up eventfd in its
// set, waited on by an idle carrier (the netpoller), looked at by polling carriers and, while every
// carrier is busy, by the monitor. Created and closed with the runtime.
#pragma once

#include <cstdint>

namespace arbrt::detail {

struct Core;
struct ThreadContext;

// The monitor looks at the epoll when nobody has for this long while readiness waits exist and no
// carrier holds the netpoller role (Go's sysmon rule; Go uses 10 ms).
constexpr uint64_t kNetpollStaleNs = 200'000;

// Creates the epoll instance and its wake-up eventfd; false if the kernel refuses either.
bool startPoller();
// Closes the descriptors. Only once no carrier, spare or monitor can touch them any more (joined).
void stopPoller();

// Takes the netpoller role for `core` (idle, about to sleep) if no carrier holds it and the core is
// not reserved for an exclusive thread (it would run nobody else's I/O). At most one holder.
bool takeNetpollRole(Core* core);
// Gives the role back (its holder, after its wait); stamps the end of its last look.
void dropNetpollRole(Core* core);
// The holder's sleep: blocks in the epoll for at most `budgetNs` (~0: no limit; 0: a look) or until
// wakeNetpoller(). Returns the first ready thread this core may run, claimed for the caller to run
// now (the others are queued here, or woken where they belong), or null.
ThreadContext* netpollWait(Core* core, uint64_t budgetNs);
// A polling (idle, not yet sleeping) carrier's look at the epoll without waiting, while the role is
// vacant and readiness waits exist, at most every few microseconds among all carriers. Returns as
// netpollWait().
ThreadContext* netpollPeek(Core* core);
// Interrupts the holder's wait (a waker that exchanged its core's `sleeping` from
// kSleepingInEpoll to 0).
void wakeNetpoller();
// The monitor's look (Go's sysmon): when the role is vacant, waits exist and the last look is
// kNetpollStaleNs old, looks without waiting and wakes the ready threads on their cores. Returns
// how long until the next look may be due (~0: none while nothing changes).
uint64_t netpollFromMonitor();

// Introspection (tests, statistics): the core holding the role (-1: none), and counts.
int netpollHolder();
struct NetpollCounts {
    uint64_t waitsInProgress;     // readiness waits registered now
    uint64_t netpollWaits;        // blocking waits by netpolling carriers
    uint64_t readiedByNetpoller;  // threads made runnable by a netpolling carrier
    uint64_t readiedByPeek;       // ... by a polling carrier's look
    uint64_t readiedByMonitor;    // ... by the monitor's look
};
NetpollCounts netpollCounts();

}  // namespace arbrt::detail
