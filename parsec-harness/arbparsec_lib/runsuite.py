"""`arbparsec run`: every benchmark of a suite, natively and under arbrun, alternately."""
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time

from . import machine, plots, report, suites, traces
from .runner import REGISTRY, run


def _extract(archive, dest):
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(archive) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(dest, filter="data")
        else:  # Python < 3.11.4: refuse absolute names and '..' ourselves
            for m in tf.getmembers():
                if m.name.startswith("/") or ".." in m.name.split("/") or m.issym() or m.islnk():
                    raise ValueError(f"{archive}: unsafe member {m.name}")
            tf.extractall(dest)


def _link_tree(src, dest):
    """dest mirrors src's directories, with a symlink per file (inputs are shared between runs;
    outputs land in dest)."""
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        target = os.path.join(dest, rel) if rel != "." else dest
        os.makedirs(target, exist_ok=True)
        for name in files:
            os.symlink(os.path.join(root, name), os.path.join(target, name))


def _tail(path, n=3):
    try:
        with open(path, errors="replace") as f:
            lines = [l.rstrip() for l in f.readlines() if l.strip()]
        return " | ".join(lines[-n:])
    except OSError:
        return ""


class SuiteRun:
    def __init__(self, opts, benches, arbrun_argv, spawn, progress=None):
        self.o = opts
        self.spawn = spawn  # arbparsec-spawn, for exact rusage
        self.benches = benches
        self.arbrun_argv = arbrun_argv  # arbrun and its options, before --trace/--
        self.progress = progress or sys.stderr  # looked up now: tests redirect it
        self.rows, self.details, self.failures = [], [], []
        self.refs = {}
        self.determinism = {}  # benchmark -> how its outputs were compared, after calibration
        self.cores = {}
        self.core_series = {}

    def log(self, text):
        print(text, file=self.progress, flush=True)

    def _argv(self, bench, mode, trace):
        if mode == "native":
            return list(bench.argv)
        return self.arbrun_argv + ["--trace", trace, "--"] + bench.argv

    def one(self, bench, mode, run_no, scratch, label):
        run_dir = os.path.join(scratch, bench.name, f"{mode}-{run_no}")
        os.makedirs(run_dir)
        if bench.inputs:
            inputs = os.path.join(scratch, bench.name, "inputs")
            if not os.path.isdir(inputs):
                _extract(bench.inputs, inputs)
            _link_tree(inputs, run_dir)
        trace = os.path.join(self.o.out, "traces", f"{bench.name}-{mode}-{run_no}.csv")
        env = dict(os.environ)
        env.update(bench.env)
        stdout_path = os.path.join(scratch, bench.name, f"{mode}-{run_no}.stdout")
        stderr_path = os.path.join(scratch, bench.name, f"{mode}-{run_no}.stderr")
        res = run(self._argv(bench, mode, trace), cwd=run_dir, env=env, stdout_path=stdout_path,
                  stderr_path=stderr_path, timeout_s=self.o.timeout, spawn_helper=self.spawn,
                  result_path=os.path.join(scratch, bench.name, f"{mode}-{run_no}.rusage"))
        with open(stdout_path, errors="replace") as f:
            out_text = f.read()
        fp = suites.fingerprint(bench, run_dir, out_text) if res.ok else None
        why = ""
        if not res.ok:
            why = f"{res.describe()}: {_tail(stderr_path)}"
        elif fp is None:
            why = "output missing or incomplete"
        if not self.o.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        return res, fp, why, out_text, (trace if mode == "arbrun" else None)

    def execute(self, scratch):
        total = len(self.benches) * self.o.repeat * len(self.o.modes)
        done = [0, total]
        for bench in self.benches:
            self.run_benchmark(bench, scratch, done)

    def calibrate(self, bench, scratch):
        """The native calibration runs (--calibration-runs, two by default) before any
        comparison: their outputs are the reference; when they differ from each other, the
        program's output varies natively. Returns the calibration records."""
        cal = []
        for i in range(1, self.o.calibration_runs + 1):
            res, fp, why, _, _ = self.one(bench, "native", f"calibration{i}", scratch, "calibration")
            cal.append({"res": res, "fp": fp, "why": why})
            self.details.append({"benchmark": bench.name, "mode": "native", "run": f"calibration-{i}",
                                 "returncode": res.returncode, "timed_out": res.timed_out,
                                 "fingerprint": fp, "problem": why, "wall_s": res.wall_s,
                                 "cpu_s": res.cpu_s, "max_rss_kb": res.max_rss_kb})
            self.log(f"[cal] {bench.name} native calibration run {i}/{self.o.calibration_runs}: "
                     + (f"{res.wall_s:.3f} s" if fp is not None else f"FAILED ({why})"))
        return cal

    def run_benchmark(self, bench, scratch, done):
        cal = self.calibrate(bench, scratch)
        ref = cal[0]
        if ref["fp"] is None:
            self.failures.append(f"{bench.name} native calibration run 1 (the reference): {ref['why']}")
        self.refs[bench.name] = ref["fp"]
        runs = []  # (row, detail, res, fp, why) of the alternating runs
        for r in range(1, self.o.repeat + 1):
            for mode in self.o.modes:
                done[0] += 1
                res, fp, why, out_text, trace = self.one(bench, mode, r, scratch, mode)
                row = {"benchmark": bench.name, "mode": mode, "run": r, "wall_s": res.wall_s,
                       "cpu_s": res.cpu_s, "max_rss_kb": res.max_rss_kb, "output_ok": False}
                cores = None
                if trace and os.path.isfile(trace):
                    try:
                        pts = traces.cores_held(trace)
                        cores = traces.summary(pts)
                        if bench.name not in self.core_series:
                            self.core_series[bench.name] = pts
                            self.cores[bench.name] = cores
                    except ValueError as e:
                        self.failures.append(f"{bench.name} {mode} run {r}: bad trace: {e}")
                detail = {"benchmark": bench.name, "mode": mode, "run": r,
                          "returncode": res.returncode, "timed_out": res.timed_out,
                          "fingerprint": fp, "problem": why, "trace": trace,
                          "cores_avg_peak": cores, "units": suites.units_line(out_text)}
                runs.append((row, detail, res, fp, why))
                varies = natively_varies(bench, [c["fp"] for c in cal] +
                                         [x[3] for x in runs if x[0]["mode"] == "native"])
                ok, why_now = judge(bench, ref["fp"], varies, res, fp, why)
                self.log(f"[{done[0]}/{done[1]}] {bench.name} {mode} run {r}/{self.o.repeat}: "
                         f"{res.wall_s:.3f} s wall, {res.cpu_s:.3f} s CPU, "
                         f"{res.max_rss_kb // 1024} MiB, "
                         + ("output ok" if ok else f"FAILED: {why_now or 'no native reference'}")
                         + (" (exit status compared: output varies natively)" if varies and ok else ""))
        # The verdicts, once every native output is known: a native run that differs from the
        # reference means the output varies natively, whatever the calibration runs showed.
        native_fps = [c["fp"] for c in cal] + [x[3] for x in runs if x[0]["mode"] == "native"]
        varies = natively_varies(bench, native_fps)
        self.determinism[bench.name] = determinism_text(bench, varies, len(native_fps))
        for row, detail, res, fp, why in runs:
            ok, why = judge(bench, ref["fp"], varies, res, fp, why)
            row["output_ok"] = ok
            detail["problem"] = why
            if not ok and why:
                self.failures.append(f"{bench.name} {row['mode']} run {row['run']}: {why}")
            self.rows.append(row)
            self.details.append(detail)


def natively_varies(bench, native_fps):
    """True when the native runs that produced an output did not all produce the same one."""
    seen = {fp for fp in native_fps if fp is not None}
    return bench.check != "exit" and len(seen) > 1


def judge(bench, ref_fp, varies, res, fp, why):
    """(output_ok, problem) of one run against the native reference. A program whose output
    varies natively (or whose check is the exit status) is judged by its exit status."""
    if ref_fp is None:
        return False, why or "no native reference"
    if not res.ok:
        return False, why
    if varies:
        return True, ""
    if fp is None:
        return False, why or "output missing or incomplete"
    if fp != ref_fp:
        return False, "output differs from the native run's"
    return True, ""


def determinism_text(bench, varies, native_runs):
    if bench.check == "exit":
        return "exit status compared" + (f" ({bench.note})" if bench.note else "")
    if varies:
        return "varies natively, exit status compared"
    return f"same output in all {native_runs} native runs"


def run_command(o, arbrun_argv, benches, meta_lines, checks):
    """Runs, writes DIR/results.csv, DIR/runs.json, DIR/report.md and plots; returns the exit
    status (0: every output matched)."""
    os.makedirs(os.path.join(o.out, "traces"), exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="arbparsec-run.", dir=o.tmpdir)
    spawn = o.layout.helper("arbparsec-spawn")
    if not os.access(spawn, os.X_OK):
        print(f"arbparsec: {spawn} not built: peak RSS includes the harness's own", file=sys.stderr)
        meta_lines.append(f"peak RSS: {spawn} missing, so each figure is at least the Python "
                          "interpreter's")
        spawn = None
    sr = SuiteRun(o, benches, arbrun_argv, spawn)
    load_before = machine.loadavg()
    started = time.time()
    try:
        sr.execute(scratch)
    finally:
        REGISTRY.kill_all()
        if o.keep:
            print(f"arbparsec: scratch directory kept: {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    report.write_results(os.path.join(o.out, "results.csv"), sr.rows)
    with open(os.path.join(o.out, "runs.json"), "w") as f:
        json.dump({"meta": meta_lines, "runs": sr.details, "determinism": sr.determinism}, f,
                  indent=1)
    summary = report.summarize(sr.rows)
    plot_files = []
    title = f"{o.suite} suite, size {o.size}, {o.threads} threads"
    walls = plots.run_walls(summary, os.path.join(o.out, "wall.png"), title)
    if walls:
        plot_files.append(("median wall time, native and arbrun", walls))
    cores = plots.run_cores(sr.core_series, os.path.join(o.out, "cores.png"),
                            "cores held under arbrun (first run of each benchmark)")
    if cores:
        plot_files.append(("cores held over time under arbrun", cores))
    if not plots.available():
        meta_lines.append("plots: python3-matplotlib is not installed, no PNG written")
    meta_lines = meta_lines + [
        f"load average before/after: {load_before} / {machine.loadavg()}",
        f"elapsed: {time.time() - started:.1f} s"]
    text = report.render_run_report(summary, {
        "title": f"arbparsec run: {title}, {o.repeat} repeat(s)",
        "lines": meta_lines, "checks": checks, "cores": sr.cores, "plots": plot_files,
        "determinism": sr.determinism,
        "failures": sr.failures})
    report.write_text(os.path.join(o.out, "report.md"), text)
    print(report.summary_table(summary))
    print(f"arbparsec: wrote {o.out}/results.csv, report.md"
          + "".join(f", {fn}" for _, fn in plot_files))
    return 0 if all(r["output_ok"] for r in sr.rows) and not sr.failures else 1
