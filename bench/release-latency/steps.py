#!/usr/bin/env python3
"""Where a release's time goes, from an ftrace text trace of a release-latency run (run.sh --trace).

For every release the arbiter asks for (its shared FUTEX_WAKE on the release page, the only
non-private wake it issues), the steps that follow in the tenant and back in the arbiter:

  watcher runs     the tenant's release watcher returns from its futex_waitv
  watcher signals  the watcher's tgkill to the carrier of the core asked back
  signal taken     that carrier takes the signal (signal_deliver)
  release sent     that carrier's first send after it: RELEASE_DONE
  arbiter reads    the arbiter's epoll_wait returns after that

Times are microseconds after the arbiter's wake; each step is the first of its kind after the
previous one, so asks that come close together may share steps. A release whose carrier was not
running a thread (the watcher only wakes it: no signal) is counted apart. Usage: steps.py TRACE
ARBITER_PID TENANT_PID; prints one row per step (median, min, max) and the counts; exits 1 when
the trace holds no ask of the arbiter.
"""
import re
import statistics
import sys

# "  comm-TID  [CPU] flags  TIMESTAMP: event..." (comm may contain '-' and spaces).
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+(?:\(\s*(\d+|-+)\)\s+)?\[\d+\]\s+\S+\s+([\d.]+):\s+(.*)$")
STEPS = ("watcher runs", "watcher signals", "signal taken", "release sent", "arbiter reads")
WINDOW_S = 0.05  # a release's steps all come within this (the arbiter forces one after 10 ms)


def parse(path):
    """(time, tid, tgid or None, text) for every event line."""
    events = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            m = LINE.match(raw)
            if not m:
                continue
            tgid = int(m.group(3)) if m.group(3) and m.group(3).isdigit() else None
            events.append((float(m.group(4)), int(m.group(2)), tgid, m.group(5)))
    return events


def belongs(event, pid, tids):
    """Whether an event is one of the process's threads (by tgid when the trace records it)."""
    return event[2] == pid if event[2] is not None else event[1] in tids


def steps_of(events, start, arbiter, tenant_tids, tenant):
    """The step times (seconds after the ask) of the release asked at events[start]."""
    t0 = events[start][0]
    found = {}
    watcher = target = carrier_tid = None
    for t, tid, tgid, text in events[start + 1:]:
        if t - t0 > WINDOW_S:
            break
        ours = belongs((t, tid, tgid, text), tenant, tenant_tids)
        if "watcher runs" not in found:
            if ours and text.startswith("sys_futex_waitv ->"):
                found["watcher runs"] = t - t0
                watcher = tid
            continue
        if "watcher signals" not in found:
            if tid == watcher and text.startswith("sys_tgkill("):
                m = re.search(r"pid: (0x[0-9a-f]+|\d+)", text)
                target = int(m.group(1), 0) if m else None
                found["watcher signals"] = t - t0
            elif tid == watcher and text.startswith("sys_futex_waitv("):
                break  # back asleep without a signal: the carrier was idle
            continue
        if "signal taken" not in found:
            if tid == target and text.startswith("signal_deliver:"):
                found["signal taken"] = t - t0
                carrier_tid = tid
            continue
        if "release sent" not in found:
            if tid == carrier_tid and text.startswith(("sys_sendto(", "sys_sendmsg(")):
                found["release sent"] = t - t0
            continue
        if tid == arbiter and text.startswith("sys_epoll_wait ->"):
            found["arbiter reads"] = t - t0
            break
    return found


def main(argv):
    if len(argv) != 4:
        print("usage: steps.py TRACE ARBITER_PID TENANT_PID", file=sys.stderr)
        return 2
    events = parse(argv[1])
    arbiter, tenant = int(argv[2]), int(argv[3])
    tenant_tids = {tid for _, tid, tgid, _ in events if tgid == tenant}
    # Without tgids in the trace: every thread that is not the arbiter's and issued a
    # futex_waitv or took a signal (the tenant is the only other traced process).
    if not tenant_tids:
        tenant_tids = {tid for _, tid, _, text in events
                       if tid != arbiter and text.startswith(("sys_futex_waitv", "signal_deliver"))}
    asks = [i for i, (_, tid, _, text) in enumerate(events)
            if tid == arbiter and text.startswith("sys_futex(") and re.search(r"op: (0x)?1,", text)]
    complete, unsignalled = [], 0
    for i in asks:
        found = steps_of(events, i, arbiter, tenant_tids, tenant)
        if len(found) == len(STEPS):
            complete.append(found)
        elif "watcher runs" in found and "watcher signals" not in found:
            unsignalled += 1
    print(f"{'step (us after the arbiter asked)':<36} {'median':>8} {'min':>8} {'max':>8}")
    for step in STEPS:
        values = [1e6 * f[step] for f in complete]
        if values:
            print(f"{step:<36} {statistics.median(values):8.1f} {min(values):8.1f} "
                  f"{max(values):8.1f}")
    print(f"releases asked {len(asks)}, traced through every step {len(complete)}, "
          f"carrier idle (woken, no signal) {unsignalled}")
    return 0 if asks else 1  # no ask at all: the trace missed the arbiter


if __name__ == "__main__":
    sys.exit(main(sys.argv))
