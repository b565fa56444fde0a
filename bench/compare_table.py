#!/usr/bin/env python3
"""Prints compare.sh's side-by-side table from Google Benchmark JSON files (stdlib only).

Inputs: arbrt-bench's JSON (arbrt and std::thread columns), and optionally fiber-bench's and the Go
peer's (same layout). Every value is the median over repetitions of ns per operation: the `per_op`
counter (real time per operation; one operation is what the row names, e.g. one one-way handoff,
whatever one benchmark iteration does). The "arbrt cpu" column is the median of cpu_time /
ops_per_iter: CPU time of the carrier that ran the timed loop, which leaves out time the host took
the CPU away from it (a loaded machine inflates real time, not this).
"""

import argparse
import json
import statistics
import sys

# Rows: (label, arbrt benchmark, std::thread benchmark, Boost.Fiber benchmark, Go benchmark).
ROWS = [
    ("spawn + join, same core", "BM_SpawnJoin", "BM_StdThread_SpawnJoin", "BM_Fiber_SpawnJoin",
     "BM_Go_SpawnJoin"),
    ("create on other core -> runs", "BM_CreateCrossCore", None, None, None),
    ("condvar ping-pong, one way", "BM_CondvarPingPong", "BM_StdThread_CondvarPingPong",
     "BM_Fiber_CondvarPingPong", "BM_Go_CondPingPong"),
    ("  (Go: unbuffered channel)", None, None, None, "BM_Go_ChannelPingPong"),
    ("condvar ping-pong cross-core", "BM_CondvarPingPongCrossCore", None, None, None),
    ("  floor: cache line, one way", "BM_CacheLineHandoffCrossCore", None, None, None),
    ("yield (one switch)", "BM_Yield", "BM_StdThread_Yield", "BM_Fiber_Yield", "BM_Go_Yield"),
    ("mutex lock+unlock, uncontended", "BM_MutexUncontended", "BM_StdThread_MutexUncontended",
     "BM_Fiber_MutexUncontended", "BM_Go_MutexUncontended"),
    ("signal->block, 0 blocked", "BM_SignalBlocked/0", None, None, None),
    ("signal->block, 55 blocked", "BM_SignalBlocked/55", None, None, None),
    ("signal->block, 1000 blocked", "BM_SignalBlocked/1000", None, None, None),
    ("create throughput (ns/thread)", "BM_CreateThroughput", None, None, None),
    ("  same, 1024 unfinished", "BM_CreateThroughputDeepBacklog", None, None, None),
]

TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# Published numbers the issue quotes, for the footnote.
PUBLISHED = ("published: Arachne 320 ns cross-core create, 272 ns condvar notify; Shenango 148 ns "
             "spawn-join, 100 ns condvar ping-pong, 52 ns yield ping-pong; kernel threads ~13 us")


def load(path):
    """Returns ({benchmark name: {"real": [ns/op...], "cpu": [ns/op...]}}, context) from one JSON
    file."""
    with open(path) as f:
        data = json.load(f)
    runs = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"]).removesuffix("/real_time")
        ops = float(b.get("ops_per_iter", 1.0)) or 1.0
        unit = TO_NS[b.get("time_unit", "ns")]
        real = b["per_op"] * 1e9 if "per_op" in b else b["real_time"] * unit / ops
        entry = runs.setdefault(name, {"real": [], "cpu": []})
        entry["real"].append(real)
        if "cpu_time" in b:
            entry["cpu"].append(b["cpu_time"] * unit / ops)
    return runs, data.get("context", {})


def median(runs, name, kind="real"):
    """Median ns/op of `name` over its repetitions, or None when it did not run."""
    if not name or name not in runs or not runs[name][kind]:
        return None
    return statistics.median(runs[name][kind])


def fmt(ns):
    """A value for one table cell: ns below 10 us, else us."""
    if ns is None:
        return "-"
    if ns >= 10_000:
        return f"{ns / 1000:.1f} us"
    return f"{ns:.1f}" if ns < 100 else f"{ns:.0f}"


def verdict(ok):
    return "ok" if ok else "MISS"


def judged(arbrt, name, limit):
    """"ok"/"MISS" for real time, then for CPU time in parentheses (a loaded host inflates only the
    first)."""
    real, cpu = median(arbrt, name), median(arbrt, name, "cpu")
    text = verdict(real <= limit)
    if cpu is not None:
        text += f" (cpu {verdict(cpu <= limit)})"
    return text


def goals(arbrt):
    """{row label: goal text with ok/MISS} for the issue's goals, judged on the medians."""
    out = {}
    spawn, std_spawn = median(arbrt, "BM_SpawnJoin"), median(arbrt, "BM_StdThread_SpawnJoin")
    if spawn is not None:
        ratio = std_spawn / spawn if std_spawn else None
        ratio_text = f"{ratio:.0f}x {verdict(ratio >= 50)}" if ratio else "?"
        out["spawn + join, same core"] = (f"<=150 {judged(arbrt, 'BM_SpawnJoin', 150)}; "
                                          f">=50x std: {ratio_text}")
    for label, name, limit in [("create on other core -> runs", "BM_CreateCrossCore", 300),
                               ("condvar ping-pong, one way", "BM_CondvarPingPong", 100),
                               ("yield (one switch)", "BM_Yield", 40),
                               ("mutex lock+unlock, uncontended", "BM_MutexUncontended", 20)]:
        if median(arbrt, name) is not None:
            out[label] = f"<={limit} {judged(arbrt, name, limit)}"
    zero, many = median(arbrt, "BM_SignalBlocked/0"), median(arbrt, "BM_SignalBlocked/1000")
    if zero and many is not None:
        out["signal->block, 1000 blocked"] = (f"<=2x of 0 blocked: {many / zero:.2f}x "
                                             f"{verdict(many <= 2 * zero)}")
    return out


def reps_of(runs):
    counts = [len(r["real"]) for r in runs.values()]
    return max(counts) if counts else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arbrt", required=True, help="arbrt-bench JSON output")
    parser.add_argument("--fiber", help="fiber-bench JSON output (Boost.Fiber column)")
    parser.add_argument("--go", help="Go peer JSON output (Go column)")
    args = parser.parse_args()

    arbrt, context = load(args.arbrt)
    fiber = load(args.fiber)[0] if args.fiber else {}
    go = load(args.go)[0] if args.go else {}
    goal_text = goals(arbrt)

    header = ["operation (ns/op, median)", "arbrt", "arbrt cpu", "std::thread", "Boost.Fiber",
              "Go", "goal (arbrt)"]
    lines = []
    for label, a, s, f, g in ROWS:
        lines.append([label, fmt(median(arbrt, a)), fmt(median(arbrt, a, "cpu")),
                      fmt(median(arbrt, s)), fmt(median(fiber, f)), fmt(median(go, g)),
                      goal_text.get(label, "")])
    widths = [max(len(row[i]) for row in [header] + lines) for i in range(len(header))]

    def render(row):
        cells = [row[0].ljust(widths[0])]
        cells += [row[i].rjust(widths[i]) for i in range(1, len(row) - 1)]
        cells.append(row[-1].ljust(widths[-1]))
        return "| " + " | ".join(cells) + " |"

    print(render(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in lines:
        print(render(row))
    print()
    print(f"repetitions: arbrt {reps_of(arbrt)}, Boost.Fiber {reps_of(fiber) or '-'}, "
          f"Go {reps_of(go) or '-'}. Same-core rows: both threads on one core (arbrt: pinned; "
          "std::thread: pinned to one CPU; Boost.Fiber: one thread; Go: GOMAXPROCS=1).")
    print("arbrt cpu = the driver carrier's CPU time per op (excludes time the host preempted it);"
          " goals are judged on real time, and on cpu in parentheses.")
    load_avg = context.get("load_avg")
    if load_avg:
        print(f"host: {context.get('num_cpus', '?')} CPUs, load average "
              f"{' '.join(f'{x:.2f}' for x in load_avg)} when arbrt-bench started; arbrt cores "
              f"{context.get('arbrt_cores', '?')}, idle spin {context.get('arbrt_idle_spin_ns', '?')} ns")
    print(PUBLISHED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
