"""PNG plots (Debian's python3-matplotlib, Agg backend). Every function returns the file name it
wrote, or None when matplotlib is missing (the report then says so)."""
import os


def _plt():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, path):
    """Lays the figure out, writes it to path at 100 dpi and closes it (pyplot keeps every open
    figure alive); returns the file name the report links to."""
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return os.path.basename(path)


def available():
    return _plt() is not None


def run_walls(summary, path, title):
    """Median wall time per benchmark, native and arbrun side by side, min-max as error bars."""
    plt = _plt()
    if plt is None:
        return None
    names = [s["benchmark"] for s in summary]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(names) + 2), 4.5))
    width = 0.38
    for i, (mode, colour) in enumerate((("native", "tab:gray"), ("arbrun", "tab:blue"))):
        xs, ys, lo, hi = [], [], [], []
        for j, s in enumerate(summary):
            m = s["modes"].get(mode)
            if not m:
                continue
            xs.append(j + (i - 0.5) * width)
            ys.append(m["wall"])
            lo.append(m["wall"] - m["wall_min"])
            hi.append(m["wall_max"] - m["wall"])
        if xs:
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=mode, color=colour)
    for j, s in enumerate(summary):
        if s["wall_ratio"] is not None:
            top = max(m["wall_max"] for m in s["modes"].values())
            ax.annotate(f"{s['wall_ratio']:.2f}x", (j, top), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20)
    ax.set_ylabel("wall time (s), median; bars min-max")
    ax.set_title(title)
    ax.legend()
    return _save(plt, fig, path)


def run_cores(series, path, title):
    """Cores held over time by each benchmark's first arbrun run. series: {name: points}."""
    plt = _plt()
    if plt is None or not series:
        return None
    fig, ax = plt.subplots(figsize=(9, 4))
    for name, pts in series.items():
        if not pts:
            continue
        t0 = pts[0][0]
        ax.step([t - t0 for t, _ in pts], [v for _, v in pts], where="post", label=name)
    ax.set_xlabel("seconds since the program started")
    ax.set_ylabel("cores held")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return _save(plt, fig, path)


def colocate_latency(per_config, path, title, loads=None):
    """memcached p50/p99/p99.9 per second for every configuration, one panel each (shared
    axes, log scale). per_config: [(label, rows from stats.per_second)]."""
    plt = _plt()
    if plt is None or not per_config:
        return None
    fig, axes = plt.subplots(len(per_config), 1, sharex=True, sharey=True,
                             figsize=(10, 2.2 * len(per_config) + 1), squeeze=False)
    for ax, (label, rows) in zip(axes[:, 0], per_config):
        xs = [r["second"] + 0.5 for r in rows if r["count"]]
        for key, style in (("p50", "-"), ("p99", "-"), ("p999", ":")):
            ax.plot(xs, [r[key] for r in rows if r["count"]], style, marker=".",
                    label={"p50": "p50", "p99": "p99", "p999": "p99.9"}[key])
        ax.set_yscale("log")
        ax.set_ylabel("µs")
        ax.set_title(label, fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
    axes[0, 0].legend(loc="upper right", fontsize="small", ncol=3)
    axes[-1, 0].set_xlabel("seconds" + (f" (load steps: {loads} req/s)" if loads else ""))
    fig.suptitle(title)
    return _save(plt, fig, path)


def colocate_cores(tenants, path, title, duration=None):
    """Cores per tenant over time in the arbrun mix, stacked. tenants: [(label, points)] with
    points on the experiment's clock."""
    plt = _plt()
    if plt is None or not any(pts for _, pts in tenants):
        return None
    import bisect

    times = sorted({t for _, pts in tenants for t, _ in pts})
    if duration is not None:
        times = [t for t in times if t <= duration] + [duration]
    levels = []
    for _, pts in tenants:
        ts = [t for t, _ in pts]
        vs = [v for _, v in pts]
        levels.append([vs[bisect.bisect_right(ts, t) - 1] if ts and t >= ts[0] else 0 for t in times])
    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.stackplot(times, levels, labels=[lbl for lbl, _ in tenants], step="post", alpha=0.8)
    ax.set_xlabel("seconds")
    ax.set_ylabel("cores held")
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize="small")
    return _save(plt, fig, path)


def colocate_throughput(bars, path, title):
    """Batch throughput (units/s) per configuration. bars: [(label, value)]."""
    plt = _plt()
    if plt is None or not bars:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar([b[0] for b in bars], [b[1] or 0 for b in bars], color=["tab:blue", "tab:gray"][:len(bars)])
    for i, (_, v) in enumerate(bars):
        if v is not None:
            ax.annotate(f"{v:.2f}", (i, v), ha="center", va="bottom")
    ax.set_ylabel("batch units / s")
    ax.set_title(title)
    return _save(plt, fig, path)
