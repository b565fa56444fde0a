"""`arbparsec colocate`: a server (memcached or redis) beside batch tenants, under arbrun and
natively.

Per configuration: (a private core arbiter,) the server, the batch tenants, then arbloadgen for
--duration seconds; then everything is stopped by process group, the arbiter last (it removes
its cpusets). Times are on CLOCK_MONOTONIC, with t = 0 at the load's start.

Batch tenants are builtin workloads repeating their computation (--seconds) in one process, or
PARSEC programs (parsec:APP) run again and again, a fresh process in a fresh run directory each
time, by a ParsecLoop thread of the harness."""
import csv
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from . import machine, plots, servers, stats, suites, traces
from .runner import REGISTRY, Process
from .runsuite import _extract, _link_tree

CONFIGS = {
    "arbrun-alone": ("arbrun", False),
    "arbrun-mix": ("arbrun", True),
    "native-alone": ("native", False),
    "native-mix": ("native", True),
}
P99_GOAL = 1.5  # server p99 with batch / alone, under arbrun
# What an operator compares (analyse()["against_native"]): the arbrun mix against the native
# machine without the batch (the ideal: on isolated cores, p99 at most ISOLATED_P99_GOAL times it)
# and against the native mix (today's practice), and arbrun alone against native alone (both no
# worse: ratio <= 1).
ISOLATED_P99_GOAL = 1.5
COMPARISONS = (("arbrun-mix", "native-alone", "the ideal"),
               ("arbrun-mix", "native-mix", "today's practice"),
               ("arbrun-alone", "native-alone", "the server alone"))
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


def pinned(argv, cpus):
    """argv run on the CPUs of `cpus` (a CPU list) through taskset(1), or unchanged when None."""
    return ["taskset", "--cpu-list", cpus] + list(argv) if cpus else list(argv)


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


@dataclass
class Tenant:
    """One batch tenant: a builtin workload (bench is its name) or a PARSEC program (bench is
    its Benchmark, run again and again)."""
    label: str
    kind: str  # builtin | parsec
    bench: object


def parse_batch(text, size, threads, parsec_home=None, parsec_config=None):
    """--batch as [Tenant]: comma-separated builtin workloads and parsec:APP entries (globs
    allowed in both). SuiteError says what is wrong."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise suites.SuiteError("give at least one batch tenant (a builtin workload or parsec:APP)")
    tenants = []
    for item in items:
        if item.startswith("parsec:"):
            pattern = item[len("parsec:"):]
            if not pattern:
                raise suites.SuiteError("'parsec:' names no PARSEC program (e.g. parsec:swaptions)")
            names = suites.select(pattern, list(suites.PARSEC))
            suites.check_parsec_home(parsec_home)
            for n in names:
                found = suites.parsec_benchmark(parsec_home, n, size, threads, parsec_config)
                if not isinstance(found, suites.Benchmark):
                    raise suites.SuiteError(f"parsec:{n} cannot run here: {found[0]}; fix: {found[1]}")
                tenants.append(Tenant(f"parsec:{n}", "parsec", found))
        else:
            if size not in suites.BUILTIN_SIZES:
                raise suites.SuiteError(
                    f"builtin workload '{item}' has no size '{size}' (--batch-size: "
                    f"{', '.join(suites.BUILTIN_SIZES)} for builtin workloads)")
            for n in suites.select(item, list(suites.BUILTIN)):
                tenants.append(Tenant(n, "builtin", n))
    out, seen = [], set()
    for t in tenants:
        if t.label not in seen:
            seen.add(t.label)
            out.append(t)
    return out


class ParsecLoop(threading.Thread):
    """Runs one PARSEC program again and again until stopped, each run a fresh process (its own
    group) in a fresh run directory with the inputs linked in. Records every run's CLOCK_MONOTONIC
    start and end, exit status, CPU time and output fingerprint. Only this thread waits for and
    reaps its processes; stop() (from the main thread) only signals them."""

    def __init__(self, bench, wrap, run_root, inputs_dir, trace_dir):
        super().__init__(daemon=True)
        self.bench = bench
        self.wrap = wrap  # argv, trace path or None -> the argv to start
        self.run_root = run_root
        self.inputs_dir = inputs_dir
        self.trace_dir = trace_dir
        self.runs = []  # dicts: start, end, returncode, cpu_s, fingerprint, killed, cores
        self.error = None
        self.start_time = time.monotonic()
        self._lock = threading.Lock()  # guards _stopping and _current
        self._stopping = False
        self._current = None

    def run(self):
        n = 0
        env = dict(os.environ)
        env.update(self.bench.env)
        try:
            while True:
                n += 1
                run_dir = os.path.join(self.run_root, f"run{n}")
                os.makedirs(run_dir)
                if self.inputs_dir:
                    _link_tree(self.inputs_dir, run_dir)
                trace = os.path.join(self.trace_dir, f"run{n}.csv") if self.trace_dir else None
                out_path = os.path.join(self.run_root, f"run{n}.out")
                with self._lock:
                    if self._stopping:
                        shutil.rmtree(run_dir, ignore_errors=True)
                        break
                    with open(out_path, "wb") as out, open(out_path + ".err", "wb") as err:
                        self._current = Process(self.wrap(self.bench.argv, trace), cwd=run_dir,
                                                env=env, stdout=out, stderr=err)
                proc = self._current
                res = proc.wait()
                end = time.monotonic()
                with self._lock:
                    killed = self._stopping
                    self._current = None
                with open(out_path, errors="replace") as f:
                    text = f.read()
                fp = suites.fingerprint(self.bench, run_dir, text) if res.ok else None
                cores = []
                if trace:
                    try:
                        cores = traces.cores_held(trace)
                    except ValueError:
                        cores = []
                    if os.path.exists(trace):
                        os.unlink(trace)
                problem = "" if res.ok else f"{res.describe()}: " + _tail(out_path + ".err")
                self.runs.append({"start": proc.start_time, "end": end, "returncode": res.returncode,
                                  "cpu_s": res.cpu_s, "fingerprint": fp, "killed": killed,
                                  "cores": cores, "problem": problem})
                shutil.rmtree(run_dir, ignore_errors=True)
                for path in (out_path, out_path + ".err"):  # a failed run's stay (--keep)
                    if os.path.exists(path) and (res.ok or killed):
                        os.unlink(path)
                if killed:
                    break
        except Exception as e:  # reported by the main thread; the loop ends
            self.error = f"{type(e).__name__}: {e}"

    def stop(self, grace_s=3.0):
        """Ends the loop: the run in progress is signalled (SIGTERM, then SIGKILL) and not
        counted; waits for the thread."""
        with self._lock:
            self._stopping = True
            proc = self._current
        if proc is not None:
            proc.signal_group(signal.SIGTERM)
        self.join(grace_s)
        if self.is_alive():
            with self._lock:
                proc = self._current
            if proc is not None:
                proc.signal_group(signal.SIGKILL)
            self.join(30)


def _tail(path, n=3):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(l.strip() for l in f.readlines()[-n:] if l.strip())
    except OSError:
        return "(no log)"


def parsec_tenant_result(bench, runs, t0, duration):
    """The tenant entry of a PARSEC loop's runs: throughput = runs that exited 0 and ended in the
    load window [t0, t0 + duration], per second (pure: unit-tested)."""
    done = [r for r in runs if not r["killed"]]
    inside = [r for r in done if t0 <= r["end"] <= t0 + duration]
    ok = [r for r in inside if r["returncode"] == 0]
    failed = [r for r in done if r["returncode"] != 0]
    entry = {"kind": "parsec", "check": bench.check, "runs": len(done), "units": len(ok),
             "units_total": sum(1 for r in done if r["returncode"] == 0),
             "throughput": len(ok) / duration if ok else None,
             "cpu_s": sum(r["cpu_s"] for r in runs),
             "returncode": failed[0]["returncode"] if failed else 0,
             "fingerprints": sorted({r["fingerprint"] for r in done
                                     if r["returncode"] == 0 and r["fingerprint"] is not None}),
             "missing_output": sum(1 for r in done if r["returncode"] == 0 and r["fingerprint"] is None),
             "failed_runs": len(failed), "checksum": None}
    problems = []
    if failed:
        problems.append(f"{len(failed)} of {len(done)} runs failed (first: {failed[0]['problem']})")
    if entry["missing_output"] and bench.check != "exit":
        problems.append(f"{entry['missing_output']} runs left no output to check")
    if not ok and not failed:
        # A measurement, not an error: every run outlasted the window (a loaded machine, a large
        # input). The report shows no throughput and says why.
        entry["note"] = ("no run finished in the load window (a longer --duration or a smaller "
                         "--batch-size gives a throughput)")
    if problems:
        entry["problem"] = "; ".join(problems)
    return entry


def compare_outputs(arb, nat):
    """Whether a tenant's results under arbrun equal its native ones, and how they were compared:
    (True/False/None, how). Builtin: the checksum line. PARSEC: every arbrun run's output
    fingerprint is the one the native runs gave; when the native runs disagree among themselves
    (or the check is the exit status), every arbrun run must have exited 0."""
    if arb.get("kind", "builtin") == "builtin":
        return (arb.get("checksum") is not None and arb.get("checksum") == nat.get("checksum"),
                "checksum")
    if not nat.get("runs") or not arb.get("runs"):
        return None, "no completed runs to compare"
    if arb.get("check") == "exit":
        return arb.get("failed_runs", 0) == 0, "exit status compared"
    if len(nat.get("fingerprints", [])) > 1:
        return arb.get("failed_runs", 0) == 0, "varies natively, exit status compared"
    same = set(arb.get("fingerprints", [])) <= set(nat.get("fingerprints", []))
    return (same and arb.get("failed_runs", 0) == 0 and not arb.get("missing_output")
            and bool(nat.get("fingerprints"))), "outputs"


class Experiment:
    @property
    def isolated(self):
        """Whether the private arbiter has cpusets (real isolation), once setup() chose it."""
        return self.backend in ("cgroup-v1", "cgroup-v2")

    @property
    def native_cpus(self):
        """The CPUs the native configurations run on: the arbiter's whole set (taskset) when it
        has cpusets, so that both modes get the same CPUs (on a big host, a native server free to
        use every CPU would also share the load generator's); None with the fake backend, whose
        CPUs are not the machine's."""
        return self.cpus if self.isolated else None

    def __init__(self, o, arbrun, progress=None):
        self.o = o
        self.arbrun = arbrun
        self.progress = progress or sys.stderr  # looked up now: tests redirect it
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
        elif self.isolated:
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

    def start_server(self, cfg, mode, sock, trace):
        srv = self.server
        workdir = os.path.join(self.scratch, f"{cfg}-server")
        os.makedirs(workdir, exist_ok=True)
        for attempt in range(5):
            port = machine.free_port()
            argv = srv.argv(self.server_bin, port, self.server_threads, self.is_root, workdir)
            if mode == "arbrun":
                argv = [self.arbrun, "--arbiter", sock, "--priority", "0", "--cores",
                        self.server_cores, "--estimator", self.o.server_estimator,
                        "--trace", trace] + shlex.split(
                            self.o.server_arbrun_args) + ["--"] + argv
            else:
                argv = pinned(argv, self.native_cpus)
            argv = ["timeout", "-k", "5", str(int(self.life_s))] + argv
            log = self.log_file(cfg, "server")
            p = Process(argv, stdout=log, stderr=log, cwd=workdir)
            log.close()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if srv.ready(port):
                    return p, port
                if p.poll_exit():
                    break
                time.sleep(0.05)
            p.stop()
            self.say(f"  {srv.name} did not come up on port {port} (try {attempt + 1}): "
                     + self.tail(os.path.join(self.scratch, f"{cfg}.server.log")))
        raise ColocateError(f"{srv.name} would not start")

    def wrap_batch(self, argv, mode, sock, trace):
        """A batch program's argv under arbrun (priority 7) or natively, niced as configured,
        bounded by timeout(1)."""
        nice = self.o.native_batch_nice
        if mode == "arbrun":
            argv = [self.arbrun, "--arbiter", sock, "--priority", "7"] + (
                ["--trace", trace] if trace else []) + shlex.split(self.o.batch_arbrun_args) + \
                ["--"] + list(argv)
            nice = self.arbrun_batch_nice
        else:
            argv = pinned(argv, self.native_cpus)
        if nice:
            argv = ["nice", "-n", str(nice)] + argv
        return ["timeout", "-k", "5", str(int(self.life_s))] + argv

    def inputs_of(self, tenant):
        """A PARSEC tenant's inputs, unpacked once into the scratch directory (shared by every
        run of every configuration)."""
        if not tenant.bench.inputs:
            return None
        d = os.path.join(self.scratch, "inputs", tenant.bench.name)
        if not os.path.isdir(d):
            _extract(tenant.bench.inputs, d)
        return d

    def start_parsec(self, cfg, mode, sock, tenant, index):
        root = os.path.join(self.scratch, f"{cfg}.batch{index}")
        os.makedirs(root)
        trace_dir = None
        if mode == "arbrun":
            trace_dir = os.path.join(root, "traces")
            os.makedirs(trace_dir)
        loop = ParsecLoop(tenant.bench, lambda argv, trace: self.wrap_batch(argv, mode, sock, trace),
                          root, self.inputs_of(tenant), trace_dir)
        loop.start()
        return loop

    def start_batch(self, cfg, mode, sock, name, index):
        exe = self.layout.workload(name)
        # Runs past the load window; stopped when the load ends (it counts what finished inside).
        seconds = self.o.duration + 60
        argv = [exe, "--threads", str(self.o.batch_threads), "--size", self.o.batch_size,
                "--seconds", f"{seconds:g}"]
        trace = None
        if mode == "arbrun":
            trace = os.path.join(self.o.out, "traces", f"{cfg}-batch{index}-{name}.csv")
        argv = self.wrap_batch(argv, mode, sock, trace)
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
                server_trace = os.path.join(self.o.out, "traces", f"{cfg}-{self.server.name}.csv")
            server, port = self.start_server(cfg, mode, sock, server_trace)
            time.sleep(0.5)  # the server's start-up threads settle before anything competes
            if mix:
                for i, t in enumerate(self.tenants):
                    if t.kind == "parsec":
                        batch.append({"tenant": t, "proc": None, "trace": None,
                                      "loop": self.start_parsec(cfg, mode, sock, t, i)})
                    else:
                        proc, trace = self.start_batch(cfg, mode, sock, t.bench, i)
                        batch.append({"tenant": t, "proc": proc, "trace": trace, "loop": None})
            log_path = os.path.join(self.o.out, "logs", f"{cfg}.latency.log")
            argv = [self.layout.helper("arbloadgen"), "--port", str(port),
                    "--rate", ":".join(f"{r:g}" for r in self.o.load),
                    "--duration", f"{self.o.duration:g}", "--connections", str(self.o.connections),
                    "--keys", str(self.o.keys), "--value-size", str(self.o.value_size),
                    "--get-ratio", f"{self.o.get_ratio:g}", "--seed", str(self.o.seed),
                    "--protocol", self.server.protocol, "--log", log_path]
            argv = pinned(argv, self.o.loadgen_cpus)
            lg_out = os.path.join(self.scratch, f"{cfg}.loadgen.out")
            # The server's threads' run-queue waits over the load: on CPUs the tenants share, the
            # kernel's scheduling, not the server, may be what its latency waits for.
            server_pid = machine.only_child(server.pid)
            sched_before = machine.scheduling(server_pid) if server_pid else None
            with open(lg_out, "wb") as out:
                err = self.log_file(cfg, "loadgen")
                lg = Process(argv, stdout=out, stderr=err)
                err.close()
            self.watch(cfg, lg, batch)
            sched_after = machine.scheduling(server_pid) if server_pid else None
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
            for i, b in enumerate(batch):
                if b["loop"] is not None:
                    entry = self.collect_parsec(b, t0)
                else:
                    entry = self.collect_builtin(cfg, i, b, t0)
                entry["name"] = b["tenant"].label
                result["batch"].append(entry)
            srv = server.stop()
            result["server"] = {"name": self.server.name, "returncode": srv.returncode,
                                "cpu_s": srv.cpu_s,
                                "wait_us_per_slice": machine.wait_per_slice_us(sched_before,
                                                                               sched_after),
                                "start_s": server.start_time - t0, "trace": server_trace}
            with open(log_path) as f:
                samples = stats.parse_latency_log(f)
            result["overall"] = stats.overall(samples, skip_s=min(self.o.warmup, self.o.duration / 2))
            result["per_second"] = stats.per_second(samples, duration_s=self.o.duration)
        finally:  # by process group, the arbiter last (it removes its cpusets when it stops)
            for b in batch:
                if b["loop"] is not None:
                    b["loop"].stop()
            for proc in [b["proc"] for b in batch] + [server, lg]:
                if proc is not None:
                    proc.stop()
            if arbiter is not None:
                arbiter.stop(grace_s=5)
        result["load_after"] = machine.loadavg()
        return result

    def collect_builtin(self, cfg, i, b, t0):
        """Stops a builtin tenant; its "unit N T" lines inside the load window [t0, t0 + D]."""
        p = b["proc"]
        early = p.poll_exit()
        r = p.stop()
        with open(os.path.join(self.scratch, f"{cfg}.batch{i}.out"), errors="replace") as f:
            text = f.read()
        times = suites.unit_times(text)
        units = suites.count_in_window(times, t0, t0 + self.o.duration)
        entry = {"kind": "builtin", "returncode": r.returncode, "cpu_s": r.cpu_s,
                 "units": units, "units_total": len(times),
                 "throughput": units / self.o.duration if units else None,
                 "checksum": suites.checksum_line(text),
                 "start_s": p.start_time - t0, "trace": b["trace"]}
        log = os.path.join(self.scratch, f"{cfg}.batch{i}.log")
        if early or "FAIL" in self.tail(log, 20) or not units:
            entry["problem"] = (f"{r.describe()} before the load ended" if early else
                                "no repetition finished in the load window"
                                if not units else "failed its check") + ": " + self.tail(log)
        return entry

    def collect_parsec(self, b, t0):
        """Stops a PARSEC tenant's loop; its runs that ended inside the load window."""
        loop = b["loop"]
        loop.stop()
        entry = parsec_tenant_result(loop.bench, loop.runs, t0, self.o.duration)
        entry["start_s"] = loop.start_time - t0
        entry["cores_runs"] = [(r["start"] - t0, r["cores"]) for r in loop.runs if r["cores"]]
        if loop.error:
            entry["problem"] = f"the run loop failed: {loop.error}"
        return entry

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
                alive = sum(1 for b in batch if (b["loop"].is_alive() if b["loop"] is not None
                                                 else not b["proc"].poll_exit()))
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
            self.tenants = parse_batch(o.batch, o.batch_size, o.batch_threads, o.parsec_home,
                                       o.parsec_config)
        except suites.SuiteError as e:
            return 2, f"arbparsec colocate: --batch: {e}"
        self.batch_names = [t.label for t in self.tenants]
        self.server = servers.SERVERS[o.server]
        self.server_bin = o.server_bin or self.server.binary
        self.server_threads = o.server_threads or self.server.default_threads(machine.cpus())
        if shutil.which(self.server_bin) is None:
            return 77, (f"arbparsec colocate: {self.server_bin} not found: install Debian's "
                        f"{self.server.package} (apt-get install {self.server.package}; "
                        "scripts/setup.sh does) or give --server-bin PATH")
        builtin = [t.bench for t in self.tenants if t.kind == "builtin"]
        needed = ([self.layout.program("core-arbiter"), self.layout.helper("arbloadgen")]
                  + [self.layout.workload(n) for n in builtin])
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
        self.arbrun_batch_nice = (o.arbrun_batch_nice if o.arbrun_batch_nice is not None
                                  else (0 if self.isolated else 19))
        # Every started process is bounded by timeout(1) even if this harness is killed -9.
        self.life_s = o.duration + 120
        return 0, None

    def native_lines(self):
        """describe()'s line on where the native configurations run (none with the fake backend:
        they run wherever the harness may)."""
        if not self.native_cpus:
            return []
        return [f"natively: the server and the batch on CPUs {self.native_cpus} (taskset), the "
                "arbiter's whole set"]

    def describe(self):
        o = self.o
        lines = [
            f"machine: {machine.describe()}",
            f"arbiter: backend {self.backend} ({self.backend_why}), --cpus {self.cpus}, "
            f"{self.managed} managed core(s), the lowest CPU unmanaged"
            + ("" if self.isolated else "; nothing is pinned: the kernel still shares the CPUs "
               "between all carriers, so the arbiter decides how many cores each tenant runs on "
               "but cannot keep the batch off the server's CPUs"),
            f"server: {self.server.name} ({self.server_bin}, unmodified; "
            f"{self.server.threads_meaning}: {self.server_threads}; load in its own protocol, "
            f"{self.server.protocol}); under arbrun --priority 0 --cores {self.server_cores} "
            f"--estimator {o.server_estimator}"
            + (f" {o.server_arbrun_args}" if o.server_arbrun_args else ""),
            f"batch: {', '.join(self.batch_names) or 'none'} ({o.batch_threads} threads, size "
            f"{o.batch_size}; builtin workloads repeat in one process, PARSEC programs are run "
            "again and again, a run counting when it ends inside the load window); under arbrun "
            "--priority 7"
            + (f" and nice -n {self.arbrun_batch_nice}" if self.arbrun_batch_nice else "")
            + f"; natively nice -n {o.native_batch_nice}",
            *self.native_lines(),
            f"load: open-loop Poisson, {':'.join(f'{r:g}' for r in o.load)} req/s over "
            f"{o.duration:g} s per configuration, {o.connections} connections, {o.keys} keys of "
            f"{o.value_size} B, {o.get_ratio:g} gets, seed {o.seed}; overall quantiles leave out "
            f"the first {min(o.warmup, o.duration / 2):g} s"
            + (f"; the load generator on CPUs {o.loadgen_cpus}" if o.loadgen_cpus else ""),
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
                         + (f"{self.server.name} alone" if not CONFIGS[cfg][1] else
                            f"{self.server.name} + {', '.join(self.batch_names)}")
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
                               f"{b['name']} " + ("FAILED" if b.get("problem") else
                                                  "no run in the window")
                               for b in r.get("batch", []))
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


def analyse(results, isolated=False):
    """Ratios and goals from the configurations' results (pure: unit-tested). `isolated`: the
    arbiter had cpusets (the arbrun mix's p99 against native alone then has a goal)."""
    by = {r["config"]: r for r in results}

    def quantile(cfg, q):
        r = by.get(cfg)
        return r["overall"][q] if r else None

    against = []
    for mine, theirs, what in COMPARISONS:
        p50 = stats.ratio(quantile(mine, "p50"), quantile(theirs, "p50"))
        p99 = stats.ratio(quantile(mine, "p99"), quantile(theirs, "p99"))
        if theirs == "native-alone" and mine == "arbrun-mix":
            goal = f"p99 <= {ISOLATED_P99_GOAL} on isolated cores" if isolated else None
            met = None if p99 is None or not isolated else p99 <= ISOLATED_P99_GOAL
        else:
            goal = "p50 and p99 <= 1"
            met = None if p50 is None or p99 is None else (p50 <= 1.0 and p99 <= 1.0)
        against.append({"config": mine, "versus": theirs, "what": what, "p50": p50, "p99": p99,
                        "goal": goal, "met": met})

    def p99(cfg):
        return quantile(cfg, "p99")

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
    outputs, how = {}, {}
    am, nm = by.get("arbrun-mix"), by.get("native-mix")
    if am and nm:
        for b in am.get("batch") or []:
            other = next((x for x in nm.get("batch") or [] if x["name"] == b["name"]), None)
            if other is not None:
                outputs[b["name"]], how[b["name"]] = compare_outputs(b, other)
    return {
        "batch_outputs_match": outputs,
        "batch_outputs_compared": how,
        "p99_ratio_arbrun": arb_ratio,
        "p99_ratio_native": nat_ratio,
        "p99_goal_met": None if arb_ratio is None else arb_ratio <= P99_GOAL,
        "throughput_ratio": tput_ratio,
        "throughput_per_tenant": per_tenant,
        "throughput_goal_met": None if tput_ratio is None else tput_ratio >= THROUGHPUT_GOAL,
        "p99_mix_arbrun_vs_native": stats.ratio(p99("arbrun-mix"), p99("native-mix")),
        "against_native": against,
    }


def render_report(results, analysis, lines, failures, plot_files, server="memcached"):
    out = [f"# arbparsec colocate: {server} beside batch tenants, under arbrun and natively", ""]
    out += [f"- {l}" for l in lines] + [""]
    out += ["| configuration | answered | p50 | p99 | p99.9 | p99 / alone | batch throughput (/s: repetitions; PARSEC: runs) "
            "| batch CPU s | server CPU s | server run-queue wait (µs per time slice) "
            "| avg cores (server / batch) | load avg before |",
            "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|"]
    by = {r["config"]: r for r in results}
    for r in results:
        alone = by.get(f"{r['mode']}-alone")
        rel = stats.ratio(r["overall"]["p99"], alone["overall"]["p99"]) if alone else None
        batch = r.get("batch") or []
        bt = ", ".join(f"{b['name']} {b['throughput']:.2f}" if b["throughput"] else f"{b['name']} —"
                       for b in batch) or "—"
        bcpu = f"{sum(b['cpu_s'] for b in batch):.1f}" if batch else "—"
        cores = r.get("avg_cores")
        wait = r["server"].get("wait_us_per_slice")
        out.append(f"| {r['config']} | {int(r['loadgen']['answered'])} | {fmt_us(r['overall']['p50'])} "
                   f"| {fmt_us(r['overall']['p99'])} | {fmt_us(r['overall']['p999'])} "
                   f"| {'—' if rel is None else f'{rel:.2f}'} | {bt} | {bcpu} "
                   f"| {r['server']['cpu_s']:.1f} | {'—' if wait is None else f'{wait:.0f}'} "
                   f"| {cores or '—'} | {r['load_before']} |")
    out += ["", "Server run-queue wait: how long the server's threads were runnable but not running, "
            "per time slice, over the load (their /proc schedstat): on CPUs the tenants share "
            "(fake backend, native runs), time the kernel gave the server's CPU to another thread."]
    a = analysis
    out += ["", "## Goals", ""]

    def f2(x):
        return "—" if x is None else f"{x:.2f}"

    def met(x):
        return "—" if x is None else ("met" if x else "NOT met")

    out.append(f"- {server} p99 with the batch / alone: under arbrun {f2(a['p99_ratio_arbrun'])} "
               f"(goal <= {P99_GOAL}: {met(a['p99_goal_met'])}); natively, batch niced: "
               f"{f2(a['p99_ratio_native'])}")
    out.append(f"- batch throughput under arbrun / native mix: {f2(a['throughput_ratio'])} "
               f"(goal >= {THROUGHPUT_GOAL}: {met(a['throughput_goal_met'])})"
               + ("; per tenant " + ", ".join(f"{k} {f2(v)}" for k, v in
                                              a["throughput_per_tenant"].items())
                  if a["throughput_per_tenant"] else ""))
    if a["batch_outputs_match"]:
        how = a.get("batch_outputs_compared", {})
        out.append("- batch results under arbrun equal to native: " + ", ".join(
            f"{k} {'—' if v is None else ('yes' if v else 'NO')}"
            + (f" ({how[k]})" if how.get(k) else "")
            for k, v in a["batch_outputs_match"].items()))
    runs = [(r["config"], b) for r in results for b in r.get("batch") or [] if b.get("kind") == "parsec"]
    if runs:
        out.append("- PARSEC tenants, completed runs (inside the load window / all; failed): " + "; ".join(
            f"{cfg} {b['name']} {b['units']}/{b['runs']}; {b['failed_runs']}" for cfg, b in runs))
    out.append(f"- {server} p99 in the arbrun mix / in the native mix: "
               f"{f2(a['p99_mix_arbrun_vs_native'])}")
    out += ["", "## Against native", ""]
    for c in a.get("against_native", []):
        out.append(f"- {c['config']} / {c['versus']} ({c['what']}): p50 {f2(c['p50'])}, "
                   f"p99 {f2(c['p99'])}"
                   + (f" (goal {c['goal']}: {met(c['met'])})" if c["goal"] else ""))
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
    lines.append("against native (p50, p99): " + "; ".join(
        f"{c['config']} / {c['versus']} {f2(c['p50'])}, {f2(c['p99'])}"
        for c in a.get("against_native", [])))
    return "\n".join(lines)


def tenant_cores(r):
    """[(label, points on the experiment clock)] of the configuration's arbrun tenants."""
    out = []
    srv = r.get("server") or {}
    if srv.get("trace"):
        out.append((srv.get("name", "server"), traces.cores_held(srv["trace"], srv["start_s"])))
    for b in r.get("batch") or []:
        if b.get("trace"):
            out.append((b["name"], traces.cores_held(b["trace"], b["start_s"])))
        elif b.get("cores_runs"):  # a PARSEC tenant: its runs one after another
            out.append((b["name"], [(start + t, v) for start, pts in b["cores_runs"]
                                    for t, v in pts]))
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
    analysis = analyse(results, isolated=exp.isolated)
    loads = ":".join(f"{r:g}" for r in o.load)
    plot_files = []
    p = plots.colocate_latency(per_config, os.path.join(o.out, "latency.png"),
                               f"{exp.server.name} latency per second", loads)
    if p:
        plot_files.append((f"{exp.server.name} latency per second", p))
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
    text = render_report(results, analysis, lines, failures, plot_files, exp.server.name)
    with open(os.path.join(o.out, "report.md"), "w") as f:
        f.write(text)
    slim = [dict(r, batch=[{k: v for k, v in b.items() if k != "cores_runs"}
                           for b in r.get("batch") or []]) for r in results]
    with open(os.path.join(o.out, "summary.json"), "w") as f:
        json.dump({"setup": lines, "results": slim, "analysis": analysis, "failures": failures},
                  f, indent=1)
    print(summary_text(results, analysis))
    print(f"arbparsec: wrote {o.out}/report.md, colocate.csv, summary.json"
          + "".join(f", {fn}" for _, fn in plot_files))
    return 1 if failures or len(results) < len(exp.configs) else 0
