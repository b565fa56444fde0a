#!/usr/bin/env python3
"""Turns an `arbrun --trace FILE` timeline into a PNG.

Usage: tools/plot-trace.py TRACE.csv OUT.png [--title TEXT]

Top panel: cores the process held over time (a step per grant/release) and the cores it asked the
arbiter for. Bottom panel: each core's utilisation (the fraction of each ~10 ms interval it ran
user threads). Needs Debian's python3-matplotlib. Exit status 2 on a malformed trace.
"""
import argparse
import csv
import sys

EVENTS = {"start", "grant", "release", "request", "util", "stop"}


def read_trace(path):
    """Rows as (time, event, core, cpu, value); raises ValueError naming the bad line."""
    rows = []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != ["time_s", "event", "core", "cpu", "value"]:
            raise ValueError(f"{path}: not an arbrun trace (header {header})")
        for n, row in enumerate(reader, start=2):
            if len(row) != 5 or row[1] not in EVENTS:
                raise ValueError(f"{path}:{n}: malformed row {row}")
            try:
                rows.append((float(row[0]), row[1], int(row[2]), int(row[3]), float(row[4])))
            except ValueError:
                raise ValueError(f"{path}:{n}: malformed row {row}") from None
    return rows


def series(rows):
    """Held-cores steps, request steps and per-core utilisation points."""
    held, held_t, held_v = set(), [0.0], [0]
    req_t, req_v = [], []
    util = {}
    for t, event, core, _cpu, value in rows:
        if event == "grant":
            held.add(core)
        elif event == "release":
            held.discard(core)
        elif event == "request":
            req_t.append(t)
            req_v.append(value)
            continue
        elif event == "util":
            util.setdefault(core, ([], []))
            util[core][0].append(t)
            util[core][1].append(value)
            continue
        else:
            continue
        held_t.append(t)
        held_v.append(len(held))
    return (held_t, held_v), (req_t, req_v), util


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("out")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    try:
        rows = read_trace(args.trace)
    except (OSError, ValueError) as e:
        print(f"plot-trace: {e}", file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (held_t, held_v), (req_t, req_v), util = series(rows)
    end = rows[-1][0] if rows else 1.0
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(10, 6))
    top.step(held_t + [end], held_v + [held_v[-1]], where="post", label="cores held")
    if req_t:
        top.step(req_t + [end], req_v + [req_v[-1]], where="post", linestyle="--", label="requested")
    top.set_ylabel("cores")
    top.legend(loc="upper right")
    for core in sorted(util):
        bottom.plot(util[core][0], util[core][1], linewidth=0.8, label=f"core {core}")
    bottom.set_ylim(0, 1.05)
    bottom.set_ylabel("utilisation")
    bottom.set_xlabel("seconds")
    if 0 < len(util) <= 16:
        bottom.legend(loc="upper right", ncol=4, fontsize="small")
    fig.suptitle(args.title or args.trace)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
