"""`arbparsec colocate`: memcached beside batch tenants, under arbrun and natively.

Per configuration: (a private core arbiter,) memcached, the batch tenants, then arbloadgen for
--duration seconds; then everything is stopped by process group, the arbiter last (it removes
its cpusets). Times are on CLOCK_MONOTONIC, with t = 0 at the load's start."""
import csv
import json
import os
import shlex
import shutil
import socket
import sys
import tempfile
import time

from . import machine, plots, stats, suites, traces
from .runner import REGISTRY, Process

CONFIGS = {
    "arbrun-alone": ("arbrun", False),
    "arbrun-mix": ("arbrun", True),
    "native-alone": ("native", False),
    "native-mix": ("native", True),
}
P99_GOAL = 1.5  # memcached p99 with batch / alone, under arbrun
THROUGHPUT_GOAL = 0.8  # batch throughput under arbrun / in the native mix


class ColocateError(Exception):
    """A configuration could not run; the message says what happened."""


def parse_loadgen_summary(text):
    """arbloadgen's summary line as a dict of numbers; ValueError when there is none."""
    for line in text.splitlines():
        if line.startswith("arbloadgen: sent "):
            parts = line.split()[1:]
            if len(parts) % 2:
                break
            try:
                return {parts[i]: float(parts[i + 1]) for i in range(0, len(parts), 2)}
            except ValueError:
                break
    raise ValueError("no arbloadgen summary line")


def parse_configs(text):
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise ValueError("--configs: give at least one configuration")
    for n in names:
        if n not in CONFIGS:
            raise ValueError(f"--configs: unknown configuration '{n}' (known: {', '.join(CONFIGS)})")
    if len(set(names)) != len(names):
        raise ValueError("--configs: a configuration is given twice")
    return names


def cpu_list(cpus):
    """A sorted CPU list as ranges: [0,1,2,5] -> '0-2,5'."""
    cpus = sorted(set(cpus))
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def count_cpus(text):
    n = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        n += (int(hi) - int(lo) + 1) if hi else 1
    return n


def choose_backend(requested, is_root, hierarchy, ncpus, min_isolated):
    """(backend, why) for the private arbiter."""
    if requested != "auto":
        return requested, "chosen with --backend"
    if not is_root:
        return "fake", "not root, so no cpusets"
    if not hierarchy:
        return "fake", "no cpuset hierarchy is mounted"
    if ncpus < min_isolated:
        return "fake", (f"only {ncpus} CPUs (cpusets need at least {min_isolated}: with one "
                        "unmanaged CPU and the server's core, the batch would get none)")
    return hierarchy, f"root, {hierarchy} cpusets, {ncpus} CPUs"


def cpuset_mount(kind):
    try:
        with open("/proc/mounts") as f:
            for line in f:
                p = line.split()
                if kind == "cgroup-v1" and p[2] == "cgroup" and "cpuset" in p[3].split(","):
                    return p[1]
                if kind == "cgroup-v2" and p[2] == "cgroup2":
                    return p[1]
    except OSError:
        pass
    return None


def memcached_ready(port, timeout_s=0.5):
    """True when memcached answers 'version' on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            s.sendall(b"version\r\n")
            return s.recv(64).startswith(b"VERSION")
    except OSError:
        return False


class Experiment:
    def __init__(self, o, arbrun, progress=sys.stderr):
        self.o = o
        self.arbrun = arbrun
        self.progress = progress
        self.layout = o.layout
        self.scratch = None
        self.cgroup_dirs = []
        self.is_root = os.geteuid() == 0

    def say(self, text):
        print(text, file=self.progress, flush=True)

    # -- pieces ------------------------------------------------------------------------------

    def log_file(self, cfg, what):
        return open(os.path.join(self.scratch, f"{cfg}.{what}.log"), "wb")

    def start_arbiter(self, cfg):
        d = os.path.join(self.scratch, f"{cfg}-arbiter")
        os.makedirs(d)
        sock = os.path.join(d, "arb.sock")
        if self.backend == "fake":
            root = os.path.join(d, "cg")
            os.makedirs(root)
        elif self.backend in ("cgroup-v1", "cgroup-v2"):
            mount = cpuset_mount(self.backend)
            if not mount:
                raise ColocateError(f"no {self.backend} hierarchy mounted")
            root = os.path.join(mount, f"arbparsec-{os.getpid()}-{cfg}")
            self.cgroup_dirs.append(root)
        else:
            root = None
        argv = ["timeout", "-k", "5", str(int(self.life_s)), self.layout.program("core-arbiter"),
                "--backend", self.backend, "--cpus", self.cpus, "--reserve", "1", "--socket", sock,
                "--metrics", os.path.join(d, "metrics.txt"), "--log-level", "warn"]
        if root:
            argv += ["--cgroup-root", root]
        log = self.log_file(cfg, "arbiter")
        p = Process(argv, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if p.poll_exit() or time.monotonic() > deadline:
                p.stop()
                raise ColocateError("core-arbiter did not start: "
                                    + self.tail(os.path.join(self.scratch, f"{cfg}.arbiter.log")))
            time.sleep(0.02)
        return p, sock

    def tail(self, path, n=3):
        try:
            with open(path, errors="replace") as f:
                return " | ".join(l.strip() for l in f.readlines()[-n:] if l.strip())
        except OSError:
            return "(no log)"

    def start_memcached(self, cfg, mode, sock, trace):
        base = [self.o.memcached] + (["-u", "root"] if self.is_root else []) + [
            "-l", "127.0.0.1", "-U", "0", "-t", str(self.o.server_threads), "-c", "4096"]
        for attempt in range(5):
            port = machine.free_port()
            argv = base + ["-p", str(port)]
            if mode == "arbrun":
                argv = [self.arbrun, "--arbiter", sock, "--priority", "0", "--cores",
                        self.server_cores, "--trace", trace] + shlex.split(
                            self.o.server_arbrun_args) + ["--"] + argv
            argv = ["timeout", "-k", "5", str(int(self.life_s))] + argv
            log = self.log_file(cfg, "memcached")
            p = Process(argv, stdout=log, stderr=log)
            log.close()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if memcached_ready(port):
                    return p, port
                if p.poll_exit():
                    break
                time.sleep(0.05)
            p.stop()
            self.say(f"  memcached did not come up on port {port} (try {attempt + 1}): "
                     + self.tail(os.path.join(self.scratch, f"{cfg}.memcached.log")))
        raise ColocateError("memcached would not start")

    def start_batch(self, cfg, mode, sock, name, index):
        exe = self.layout.workload(name)
        # Runs past the load window; stopped when the load ends (it counts what finished inside).
        seconds = self.o.duration + 60
        argv = [exe, "--threads", str(self.o.batch_threads), "--size", self.o.batch_size,
                "--seconds", f"{seconds:g}"]
        trace = None
        nice = self.o.native_batch_nice
        if mode == "arbrun":
            trace = os.path.join(self.o.out, "traces", f"{cfg}-batch{index}-{name}.csv")
            argv = [self.arbrun, "--arbiter", sock, "--priority", "7", "--trace", trace] + \
                shlex.split(self.o.batch_arbrun_args) + ["--"] + argv
            nice = self.arbrun_batch_nice
        if nice:
            argv = ["nice", "-n", str(nice)] + argv
        argv = ["timeout", "-k", "5", str(int(self.life_s))] + argv
        out = open(os.path.join(self.scratch, f"{cfg}.batch{index}.out"), "wb")
        err = self.log_file(cfg, f"batch{index}")
        p = Process(argv, stdout=out, stderr=err)
        out.close()
        err.close()
        return p, trace

    # -- one configuration -------------------------------------------------------------------

    def run_config(self, cfg):
        mode, mix = CONFIGS[cfg]
        result = {"config": cfg, "mode": mode, "mix": mix, "load_before": machine.loadavg()}
        arbiter = sock = server = lg = None
        server_trace = None
        batch = []
        try:
            if mode == "arbrun":
                arbiter, sock = self.start_arbiter(cfg)
                server_trace = os.path.join(self.o.out, "traces", f"{cfg}-memcached.csv")
            server, port = self.start_memcached(cfg, mode, sock, server_trace)
            time.sleep(0.5)  # memcached's start-up threads settle before anything competes
            if mix:
                for i, name in enumerate(self.batch_names):
                    batch.append((name,) + self.start_batch(cfg, mode, sock, name, i))
            log_path = os.path.join(self.o.out, "logs", f"{cfg}.latency.log")
            argv = [self.layout.helper("arbloadgen"), "--port", str(port),
                    "--rate", ":".join(f"{r:g}" for r in self.o.load),
                    "--duration", f"{self.o.duration:g}", "--connections", str(self.o.connections),
                    "--keys", str(self.o.keys), "--value-size", str(self.o.value_size),
                    "--get-ratio", f"{self.o.get_ratio:g}", "--seed", str(self.o.seed),
                    "--log", log_path]
            lg_out = os.path.join(self.scratch, f"{cfg}.loadgen.out")
            with open(lg_out, "wb") as out:
                err = self.log_file(cfg, "loadgen")
                lg = Process(argv, stdout=out, stderr=err)
                err.close()
            self.watch(cfg, lg, batch)
            lg_res = lg.wait(30)
            with open(lg_out, errors="replace") as f:
                lg_text = f.read()
            if not lg_res.ok:
                raise ColocateError(f"arbloadgen {lg_res.describe()}: "
                                    + self.tail(os.path.join(self.scratch, f"{cfg}.loadgen.log")))
            summary = parse_loadgen_summary(lg_text)
            t0 = summary["start_s"]
            result["loadgen"] = summary
            # Batch throughput: repetitions finished inside the load window [t0, t0 + D].
            end = t0 + self.o.duration
            result["batch"] = []
            for i, (name, p, trace) in enumerate(batch):
                early = p.poll_exit()
                r = p.stop()
                with open(os.path.join(self.scratch, f"{cfg}.batch{i}.out"), errors="replace") as f:
                    text = f.read()
                times = suites.unit_times(text)
                units = suites.count_in_window(times, t0, end)
                entry = {"name": name, "returncode": r.returncode, "cpu_s": r.cpu_s,
                         "units": units, "units_total": len(times),
                         "throughput": units / self.o.duration if units else None,
                         "checksum": suites.checksum_line(text),
                         "start_s": p.start_time - t0, "trace": trace}
                log = os.path.join(self.scratch, f"{cfg}.batch{i}.log")
                if early or "FAIL" in self.tail(log, 20) or not units:
                    entry["problem"] = (f"{r.describe()} before the load ended" if early else
                                        "no repetition finished in the load window"
                                        if not units else "failed its check") + \
                        ": " + self.tail(log)
                result["batch"].append(entry)
            srv = server.stop()
            result["server"] = {"returncode": srv.returncode, "cpu_s": srv.cpu_s,
                                "start_s": server.start_time - t0, "trace": server_trace}
            with open(log_path) as f:
                samples = stats.parse_latency_log(f)
            result["overall"] = stats.overall(samples, skip_s=min(self.o.warmup, self.o.duration / 2))
            result["per_second"] = stats.per_second(samples, duration_s=self.o.duration)
        finally:  # by process group, the arbiter last (it removes its cpusets when it stops)
            for proc in [p for _, p, _ in batch] + [server, lg]:
                if proc is not None:
                    proc.stop()
            if arbiter is not None:
                arbiter.stop(grace_s=5)
        result["load_after"] = machine.loadavg()
        return result

    def watch(self, cfg, lg, batch):
        """Waits for the load generator, a progress line every few seconds (every second on a
        terminal, rewritten in place)."""
        tty = hasattr(self.progress, "isatty") and self.progress.isatty()
        start = time.monotonic()
        limit = self.o.duration + 60
        next_line = start + 1
        while not lg.wait_exit(0.2):
            now = time.monotonic()
            if now - start > limit:
                raise ColocateError(f"arbloadgen still running after {limit:.0f} s")
            if now >= next_line:
                el = now - start
                step = min(len(self.o.load) - 1, int(el / (self.o.duration / len(self.o.load))))
                alive = sum(1 for _, p, _ in batch if not p.poll_exit())
                text = (f"  [{cfg}] {min(el, self.o.duration):4.0f}/{self.o.duration:g} s, "
                        f"load {self.o.load[step]:g} req/s"
                        + (f", batch tenants running {alive}/{len(batch)}" if batch else ""))
                if tty:
                    print("\r" + text, end="", file=self.progress, flush=True)
                    next_line = now + 1
                else:
                    print(text, file=self.progress, flush=True)
                    next_line = now + 5
        if tty:
            print(file=self.progress)

    # -- the whole experiment ----------------------------------------------------------------

    def setup(self):
        o = self.o
        try:
            self.configs = parse_configs(o.configs)
        except ValueError as e:
            return 2, f"arbparsec colocate: {e}"
        try:
            self.batch_names = suites.select(o.batch, list(suites.BUILTIN)) or []
        except suites.SuiteError as e:
            return 2, f"arbparsec colocate: --batch: {e}"
        if shutil.which(o.memcached) is None:
            return 77, (f"arbparsec colocate: {o.memcached} not found: install Debian's memcached "
                        "(apt-get install memcached; scripts/setup.sh does)")
        needed = ([self.layout.program("core-arbiter"), self.layout.helper("arbloadgen")]
                  + [self.layout.workload(n) for n in self.batch_names])
        for exe in needed:
            if not os.access(exe, os.X_OK):
                return 2, f"arbparsec colocate: {exe} missing: {self.layout.fix}"
        ncpus = machine.cpus()
        self.backend, self.backend_why = choose_backend(
            o.backend, self.is_root, machine.cpuset_hierarchy(), ncpus, o.min_isolated_cpus)
        if self.backend == "fake":
            # One simulated managed core per CPU for the batch, plus the server's: nothing is
            # pinned, and the server's carrier sleeps in the kernel whenever it has nothing to do,
            # so counting its core as a whole CPU would leave a CPU's worth of batch capacity
            # unused (the kernel hands the CPU back to the server's carrier when it wakes; the
            # batch is niced for that).
            self.cpus = o.cpus or f"0-{ncpus + 1}"
        else:
            self.cpus = o.cpus or cpu_list(os.sched_getaffinity(0))
        self.managed = count_cpus(self.cpus) - 1
        if self.managed < 1:
            return 2, "arbparsec colocate: --cpus must hold at least two CPUs"
        # The server may grow to all managed cores but one: the batch keeps at least one.
        self.server_cores = o.server_cores or f"1:{max(1, self.managed - 1)}"
        isolated = self.backend in ("cgroup-v1", "cgroup-v2")
        self.arbrun_batch_nice = (o.arbrun_batch_nice if o.arbrun_batch_nice is not None
                                  else (0 if isolated else 19))
        # Every started process is bounded by timeout(1) even if this harness is killed -9.
        self.life_s = o.duration + 120
        return 0, None

    def describe(self):
        o = self.o
        isolated = self.backend in ("cgroup-v1", "cgroup-v2")
        lines = [
            f"machine: {machine.describe()}",
            f"arbiter: backend {self.backend} ({self.backend_why}), --cpus {self.cpus}, "
            f"{self.managed} managed core(s), the lowest CPU unmanaged"
            + ("" if isolated else "; nothing is pinned: the kernel still shares the CPUs between "
               "all carriers, so the arbiter decides how many cores each tenant runs on but "
               "cannot keep the batch off the server's CPUs"),
            f"server: memcached -t {o.server_threads} (Debian's, unmodified); under arbrun "
            f"--priority 0 --cores {self.server_cores}"
            + (f" {o.server_arbrun_args}" if o.server_arbrun_args else ""),
            f"batch: {', '.join(self.batch_names) or 'none'} ({o.batch_threads} threads, size "
            f"{o.batch_size} repetitions); under arbrun --priority 7"
            + (f" and nice -n {self.arbrun_batch_nice}" if self.arbrun_batch_nice else "")
            + f"; natively nice -n {o.native_batch_nice}",
            f"load: open-loop Poisson, {':'.join(f'{r:g}' for r in o.load)} req/s over "
            f"{o.duration:g} s per configuration, {o.connections} connections, {o.keys} keys of "
            f"{o.value_size} B, {o.get_ratio:g} gets, seed {o.seed}; overall quantiles leave out "
            f"the first {min(o.warmup, o.duration / 2):g} s",
        ]
        return lines

    def run(self):
        o = self.o
        os.makedirs(os.path.join(o.out, "traces"), exist_ok=True)
        os.makedirs(os.path.join(o.out, "logs"), exist_ok=True)
        self.scratch = tempfile.mkdtemp(prefix="arbparsec-colocate.", dir=o.tmpdir)
        results, failures = [], []
        try:
            for i, cfg in enumerate(self.configs):
                self.say(f"[{i + 1}/{len(self.configs)}] {cfg}: "
                         + ("memcached alone" if not CONFIGS[cfg][1] else
                            f"memcached + {', '.join(self.batch_names)}")
                         + (" under arbrun" if CONFIGS[cfg][0] == "arbrun" else " natively"))
                try:
                    r = self.run_config(cfg)
                except (ColocateError, ValueError, OSError) as e:
                    failures.append(f"{cfg}: {e}")
                    self.say(f"  [{cfg}] FAILED: {e}")
                    continue
                results.append(r)
                ov = r["overall"]
                bt = ", ".join(f"{b['name']} {b['throughput']:.2f}/s" if b["throughput"] else
                               f"{b['name']} FAILED" for b in r.get("batch", []))
                self.say(f"  [{cfg}] p50 {fmt_us(ov['p50'])} p99 {fmt_us(ov['p99'])} "
                         f"p99.9 {fmt_us(ov['p999'])}, {int(r['loadgen']['answered'])} answers"
                         + (f"; batch {bt}" if bt else ""))
                for b in r.get("batch", []):
                    if b.get("problem"):
                        failures.append(f"{cfg}: batch {b['name']}: {b['problem']}")
                if r["loadgen"].get("lost") or r["loadgen"].get("errors"):
                    failures.append(f"{cfg}: {int(r['loadgen']['lost'])} requests unanswered, "
                                    f"{int(r['loadgen']['errors'])} errors")
        finally:
            REGISTRY.kill_all()
            for d in self.cgroup_dirs:  # the arbiter removes them; a killed one may not have
                remove_cgroup_tree(d)
            if o.keep:
                self.say(f"arbparsec: scratch directory kept: {self.scratch}")
            else:
                shutil.rmtree(self.scratch, ignore_errors=True)
        return results, failures


def remove_cgroup_tree(path):
    if not os.path.isdir(path):
        return
    for root, dirs, _files in os.walk(path, topdown=False):
        for d in dirs:
            try:
                os.rmdir(os.path.join(root, d))
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def fmt_us(v):
    if v is None:
        return "—"
    return f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} µs"


def analyse(results):
    """Ratios and goals from the configurations' results (pure: unit-tested)."""
    by = {r["config"]: r for r in results}

    def p99(cfg):
        r = by.get(cfg)
        return r["overall"]["p99"] if r else None

    def throughput(cfg):
        r = by.get(cfg)
        if not r or not r.get("batch"):
            return None
        return {b["name"]: b["throughput"] for b in r["batch"]}

    arb_ratio = stats.ratio(p99("arbrun-mix"), p99("arbrun-alone"))
    nat_ratio = stats.ratio(p99("native-mix"), p99("native-alone"))
    ta, tn = throughput("arbrun-mix"), throughput("native-mix")
    per_tenant = {}
    if ta and tn:
        for name in ta:
            per_tenant[name] = stats.ratio(ta.get(name), tn.get(name))
    tput_ratio = (stats.geomean(per_tenant.values())
                  if per_tenant and all(v is not None for v in per_tenant.values()) else None)
    # The batch's results must not depend on where it ran.
    outputs = {}
    am, nm = by.get("arbrun-mix"), by.get("native-mix")
    if am and nm:
        for b in am.get("batch") or []:
            other = next((x for x in nm.get("batch") or [] if x["name"] == b["name"]), None)
            if other is not None:
                outputs[b["name"]] = b["checksum"] is not None and b["checksum"] == other["checksum"]
    return {
        "batch_outputs_match": outputs,
        "p99_ratio_arbrun": arb_ratio,
        "p99_ratio_native": nat_ratio,
        "p99_goal_met": None if arb_ratio is None else arb_ratio <= P99_GOAL,
        "throughput_ratio": tput_ratio,
        "throughput_per_tenant": per_tenant,
        "throughput_goal_met": None if tput_ratio is None else tput_ratio >= THROUGHPUT_GOAL,
        "p99_mix_arbrun_vs_native": stats.ratio(p99("arbrun-mix"), p99("native-mix")),
    }


def render_report(results, analysis, lines, failures, plot_files):
    out = ["# arbparsec colocate: memcached beside batch tenants, under arbrun and natively", ""]
    out += [f"- {l}" for l in lines] + [""]
    out += ["| configuration | answered | p50 | p99 | p99.9 | p99 / alone | batch throughput (units/s) "
            "| batch CPU s | server CPU s | avg cores (server / batch) | load avg before |",
            "|---|---:|---:|---:|---:|---:|---|---:|---:|---|---|"]
    by = {r["config"]: r for r in results}
    for r in results:
        alone = by.get(f"{r['mode']}-alone")
        rel = stats.ratio(r["overall"]["p99"], alone["overall"]["p99"]) if alone else None
        batch = r.get("batch") or []
        bt = ", ".join(f"{b['name']} {b['throughput']:.2f}" if b["throughput"] else f"{b['name']} —"
                       for b in batch) or "—"
        bcpu = f"{sum(b['cpu_s'] for b in batch):.1f}" if batch else "—"
        cores = r.get("avg_cores")
        out.append(f"| {r['config']} | {int(r['loadgen']['answered'])} | {fmt_us(r['overall']['p50'])} "
                   f"| {fmt_us(r['overall']['p99'])} | {fmt_us(r['overall']['p999'])} "
                   f"| {'—' if rel is None else f'{rel:.2f}'} | {bt} | {bcpu} "
                   f"| {r['server']['cpu_s']:.1f} | {cores or '—'} | {r['load_before']} |")
    a = analysis
    out += ["", "## Goals", ""]

    def f2(x):
        return "—" if x is None else f"{x:.2f}"

    def met(x):
        return "—" if x is None else ("met" if x else "NOT met")

    out.append(f"- memcached p99 with the batch / alone: under arbrun {f2(a['p99_ratio_arbrun'])} "
               f"(goal <= {P99_GOAL}: {met(a['p99_goal_met'])}); natively, batch niced: "
               f"{f2(a['p99_ratio_native'])}")
    out.append(f"- batch throughput under arbrun / native mix: {f2(a['throughput_ratio'])} "
               f"(goal >= {THROUGHPUT_GOAL}: {met(a['throughput_goal_met'])})"
               + ("; per tenant " + ", ".join(f"{k} {f2(v)}" for k, v in
                                              a["throughput_per_tenant"].items())
                  if a["throughput_per_tenant"] else ""))
    if a["batch_outputs_match"]:
        out.append("- batch results (checksums) under arbrun equal to native: " + ", ".join(
            f"{k} {'yes' if v else 'NO'}" for k, v in a["batch_outputs_match"].items()))
    out.append(f"- memcached p99 in the arbrun mix / in the native mix: "
               f"{f2(a['p99_mix_arbrun_vs_native'])}")
    if failures:
        out += ["", "## Problems", ""] + [f"- {f}" for f in failures]
    if plot_files:
        out += ["", "## Plots", ""] + [f"![{c}]({f})" for c, f in plot_files]
    out += ["", "Per-second latency of every configuration: colocate.csv; everything in "
            "summary.json; the load generator's logs in logs/, arbrun traces in traces/."]
    return "\n".join(out) + "\n"


def summary_text(results, analysis):
    lines = [f"{'configuration':<14} {'p50':>9} {'p99':>9} {'p99.9':>9}  batch units/s"]
    for r in results:
        bt = ", ".join(f"{b['name']} {b['throughput']:.2f}" if b["throughput"] else f"{b['name']} —"
                       for b in r.get("batch") or []) or "—"
        lines.append(f"{r['config']:<14} {fmt_us(r['overall']['p50']):>9} "
                     f"{fmt_us(r['overall']['p99']):>9} {fmt_us(r['overall']['p999']):>9}  {bt}")
    a = analysis

    def f2(x):
        return "—" if x is None else f"{x:.2f}"

    lines.append(f"p99 with batch / alone: arbrun {f2(a['p99_ratio_arbrun'])} (goal <= {P99_GOAL}), "
                 f"native {f2(a['p99_ratio_native'])}; batch throughput arbrun / native "
                 f"{f2(a['throughput_ratio'])} (goal >= {THROUGHPUT_GOAL})")
    return "\n".join(lines)


def tenant_cores(r):
    """[(label, points on the experiment clock)] of the configuration's arbrun tenants."""
    out = []
    srv = r.get("server") or {}
    if srv.get("trace"):
        out.append(("memcached", traces.cores_held(srv["trace"], srv["start_s"])))
    for b in r.get("batch") or []:
        if b.get("trace"):
            out.append((b["name"], traces.cores_held(b["trace"], b["start_s"])))
    return out


def main(o, arbrun):
    exp = Experiment(o, arbrun)
    code, msg = exp.setup()
    if code:
        print(msg, file=sys.stderr)
        return code
    o.out = os.path.abspath(o.out)
    lines = exp.describe()
    for line in lines:
        exp.say(line)
    started = time.time()
    results, failures = exp.run()
    duration = o.duration
    per_config, cores_plot = [], None
    for r in results:
        per_config.append((r["config"], r["per_second"]))
        if r["mode"] == "arbrun":
            try:
                tc = tenant_cores(r)
            except ValueError as e:
                failures.append(f"{r['config']}: bad trace: {e}")
                tc = []
            avgs = [f"{stats.step_average(pts, 0, duration):.2f}" if pts else "—" for _, pts in tc]
            r["avg_cores"] = " / ".join(avgs) if avgs else None
            if r["mix"]:
                cores_plot = tc
    with open(os.path.join(o.out, "colocate.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "second", "count", "p50_us", "p99_us", "p999_us"])
        for cfg, rows in per_config:
            for row in rows:
                w.writerow([cfg, row["second"], row["count"]] +
                           ["" if row[k] is None else f"{row[k]:.1f}" for k in ("p50", "p99", "p999")])
    analysis = analyse(results)
    loads = ":".join(f"{r:g}" for r in o.load)
    plot_files = []
    p = plots.colocate_latency(per_config, os.path.join(o.out, "latency.png"),
                               "memcached latency per second", loads)
    if p:
        plot_files.append(("memcached latency per second", p))
    if cores_plot:
        p = plots.colocate_cores(cores_plot, os.path.join(o.out, "cores.png"),
                                 "cores per tenant, arbrun mix", duration)
        if p:
            plot_files.append(("cores per tenant over time (arbrun mix)", p))
    bars = []
    for cfg in ("arbrun-mix", "native-mix"):
        r = next((x for x in results if x["config"] == cfg), None)
        if r and r.get("batch"):
            tp = [b["throughput"] for b in r["batch"]]
            bars.append((cfg, sum(tp) if all(t is not None for t in tp) else None))
    p = plots.colocate_throughput(bars, os.path.join(o.out, "throughput.png"),
                                  "batch throughput (sum over tenants)")
    if p:
        plot_files.append(("batch throughput", p))
    if not plots.available():
        lines.append("plots: python3-matplotlib is not installed, no PNG written")
    lines.append(f"elapsed: {time.time() - started:.0f} s")
    text = render_report(results, analysis, lines, failures, plot_files)
    with open(os.path.join(o.out, "report.md"), "w") as f:
        f.write(text)
    slim = [{k: v for k, v in r.items()} for r in results]
    with open(os.path.join(o.out, "summary.json"), "w") as f:
        json.dump({"setup": lines, "results": slim, "analysis": analysis, "failures": failures},
                  f, indent=1)
    print(summary_text(results, analysis))
    print(f"arbparsec: wrote {o.out}/report.md, colocate.csv, summary.json"
          + "".join(f", {fn}" for _, fn in plot_files))
    return 1 if failures or len(results) < len(exp.configs) else 0
