"""results.csv and report.md for `arbparsec run`."""
import csv
import io
import os

from . import stats

COLUMNS = ["benchmark", "mode", "run", "wall_s", "cpu_s", "max_rss_kb", "output_ok"]
GOAL_RATIO = 1.05  # arbrun within 5% of native wall time, or faster


def write_results(path, rows):
    """rows: dicts with COLUMNS' keys."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([r["benchmark"], r["mode"], r["run"], f"{r['wall_s']:.4f}",
                        f"{r['cpu_s']:.4f}", int(r["max_rss_kb"]),
                        "yes" if r["output_ok"] else "no"])


def read_results(path):
    """results.csv back as dicts with typed values; ValueError names a malformed line."""
    with open(path, newline="") as f:
        return parse_results(f.read(), path)


def parse_results(text, name="results.csv"):
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header != COLUMNS:
        raise ValueError(f"{name}: header {header}, expected {','.join(COLUMNS)}")
    rows = []
    for n, rec in enumerate(reader, start=2):
        if not rec:
            continue
        try:
            if len(rec) != len(COLUMNS) or rec[6] not in ("yes", "no") or not rec[0] or not rec[1]:
                raise ValueError
            rows.append({"benchmark": rec[0], "mode": rec[1], "run": int(rec[2]),
                         "wall_s": float(rec[3]), "cpu_s": float(rec[4]),
                         "max_rss_kb": int(rec[5]), "output_ok": rec[6] == "yes"})
        except ValueError:
            raise ValueError(f"{name}:{n}: malformed row {rec}") from None
    return rows


def summarize(rows):
    """Per benchmark (in first-seen order): per mode medians and counts, and arbrun/native
    ratios of the medians. Returns a list of dicts."""
    order, by = [], {}
    for r in rows:
        if r["benchmark"] not in by:
            order.append(r["benchmark"])
            by[r["benchmark"]] = {}
        by[r["benchmark"]].setdefault(r["mode"], []).append(r)
    out = []
    for name in order:
        modes = {}
        for mode, rs in by[name].items():
            modes[mode] = {
                "runs": len(rs),
                "ok": sum(1 for r in rs if r["output_ok"]),
                "wall": stats.median([r["wall_s"] for r in rs]),
                "cpu": stats.median([r["cpu_s"] for r in rs]),
                "rss": stats.median([r["max_rss_kb"] for r in rs]),
                "wall_min": min(r["wall_s"] for r in rs),
                "wall_max": max(r["wall_s"] for r in rs),
            }
        nat, arb = modes.get("native"), modes.get("arbrun")
        out.append({
            "benchmark": name,
            "modes": modes,
            "wall_ratio": stats.ratio(arb and arb["wall"], nat and nat["wall"]),
            "cpu_ratio": stats.ratio(arb and arb["cpu"], nat and nat["cpu"]),
            "rss_ratio": stats.ratio(arb and arb["rss"], nat and nat["rss"]),
            "all_ok": all(m["ok"] == m["runs"] for m in modes.values()),
        })
    return out


def _f(x, fmt="{:.3f}"):
    return "—" if x is None else fmt.format(x)


def verdict(s):
    """The goal for one benchmark: outputs match and arbrun within 5% of native (or faster)."""
    if not s["all_ok"]:
        return "output mismatch"
    if s["wall_ratio"] is None:
        return "—"
    if s["wall_ratio"] < 0.95:
        return "faster"
    return "within 5%" if s["wall_ratio"] <= GOAL_RATIO else "slower"


def render_run_report(summary, meta):
    """report.md text. meta: title, lines (list of setup lines), checks {bench: text},
    cores {bench: (avg, peak)}, plots [(caption, file)], failures [text]."""
    out = [f"# {meta.get('title', 'arbparsec run')}", ""]
    for line in meta.get("lines", []):
        out.append(f"- {line}")
    out.append("")
    out.append("Medians over the runs; ratios are arbrun / native (below 1: arbrun is faster). "
               "Outputs are compared with the first of the native calibration runs made before "
               "any comparison; a program whose output differs between native runs is judged by "
               "its exit status (\"varies natively, exit status compared\").")
    out.append("")
    out.append("| benchmark | native wall s | arbrun wall s | wall ratio | native CPU s | arbrun CPU s "
               "| CPU ratio | native RSS MiB | arbrun RSS MiB | RSS ratio | arbrun cores avg/peak "
               "| outputs ok | outputs compared | verdict |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    determinism = meta.get("determinism", {})
    cores = meta.get("cores", {})
    for s in summary:
        nat, arb = s["modes"].get("native"), s["modes"].get("arbrun")
        ok = sum(m["ok"] for m in s["modes"].values())
        runs = sum(m["runs"] for m in s["modes"].values())
        avg, peak = cores.get(s["benchmark"], (None, None))
        out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}/{} | {} | {} |".format(
            s["benchmark"], _f(nat and nat["wall"]), _f(arb and arb["wall"]),
            _f(s["wall_ratio"], "{:.2f}"), _f(nat and nat["cpu"]), _f(arb and arb["cpu"]),
            _f(s["cpu_ratio"], "{:.2f}"), _f(nat and nat["rss"] / 1024, "{:.1f}"),
            _f(arb and arb["rss"] / 1024, "{:.1f}"), _f(s["rss_ratio"], "{:.2f}"),
            "—" if avg is None else f"{avg:.2f}/{peak}", ok, runs,
            determinism.get(s["benchmark"], "—"), verdict(s)))
    ratios = [s["wall_ratio"] for s in summary if s["wall_ratio"] is not None]
    if ratios:
        met = sum(1 for s in summary if verdict(s) in ("faster", "within 5%"))
        out.append("")
        cpu = [s["cpu_ratio"] for s in summary if s["cpu_ratio"] is not None]
        rss = [s["rss_ratio"] for s in summary if s["rss_ratio"] is not None]
        out.append(f"Geometric means of the ratios: wall {stats.geomean(ratios):.3f}"
                   + (f", CPU {stats.geomean(cpu):.3f}" if cpu else "")
                   + (f", peak RSS {stats.geomean(rss):.3f}" if rss else "") + ". "
                   f"Goal (every output matches; arbrun within 5% of native or faster): "
                   f"{met} of {len(summary)} benchmarks.")
    checks = meta.get("checks", {})
    if checks:
        out += ["", "## Output checks", ""]
        for name, text in checks.items():
            out.append(f"- {name}: {text}")
    failures = meta.get("failures", [])
    if failures:
        out += ["", "## Failures", ""] + [f"- {f}" for f in failures]
    plots = meta.get("plots", [])
    if plots:
        out += ["", "## Plots", ""] + [f"![{cap}]({fn})" for cap, fn in plots]
    return "\n".join(out) + "\n"


def summary_table(summary):
    """A short plain-text table for the terminal."""
    lines = [f"{'benchmark':<14} {'native s':>9} {'arbrun s':>9} {'wall':>5} {'CPU':>5} {'RSS':>5} "
             f"{'ok':>5}  verdict"]
    for s in summary:
        nat, arb = s["modes"].get("native"), s["modes"].get("arbrun")
        ok = sum(m["ok"] for m in s["modes"].values())
        runs = sum(m["runs"] for m in s["modes"].values())
        lines.append(f"{s['benchmark']:<14} {_f(nat and nat['wall']):>9} {_f(arb and arb['wall']):>9} "
                     f"{_f(s['wall_ratio'], '{:.2f}'):>5} {_f(s['cpu_ratio'], '{:.2f}'):>5} "
                     f"{_f(s['rss_ratio'], '{:.2f}'):>5} {ok:>2}/{runs:<2}  {verdict(s)}")
    return "\n".join(lines)


def write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
