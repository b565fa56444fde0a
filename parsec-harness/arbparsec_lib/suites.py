"""The benchmark suites: the builtin workloads, and discovery of a user's PARSEC 3.0 installation.

A Benchmark says how to run one program in a scratch directory and how its output is checked
against the native run's (`check`):
  checksum      the "checksum HEX" line a builtin workload prints (and its "ok NAME" line)
  files         output files, byte for byte
  sorted-lines  output files' lines, in any order (the program writes them as work completes)
  stdout        standard output without timing and PARSEC banner lines
  exit          exit status only (the result depends on thread interleaving)
"""
import fnmatch
import glob
import hashlib
import os
import re
import shlex
from dataclasses import dataclass, field

SIZES = ("test", "simsmall", "simmedium", "native")


@dataclass
class Benchmark:
    name: str
    argv: list
    check: str = "exit"
    outputs: list = field(default_factory=list)  # for files / sorted-lines: globs in the run dir
    env: dict = field(default_factory=dict)
    inputs: str = None  # a tar archive unpacked into the run directory first
    note: str = ""

    def describe_check(self):
        if self.check == "checksum":
            return "checksum line"
        if self.check == "files":
            return "identical " + ", ".join(self.outputs)
        if self.check == "sorted-lines":
            return "same lines of " + ", ".join(self.outputs)
        if self.check == "stdout":
            return "same stdout (timings dropped)"
        return "exit status only" + (f" ({self.note})" if self.note else "")


class SuiteError(Exception):
    """A suite cannot be used at all (the message says why and what to do)."""


# ---------------------------------------------------------------------------------------------
# builtin

BUILTIN = {
    # name: (PARSEC programs whose threading pattern it follows, pattern)
    "dataparallel": ("blackscholes, fluidanimate", "data-parallel phases with pthread barriers"),
    "montecarlo": ("swaptions", "independent Monte Carlo threads"),
    "trylockspin": ("streamcluster, fluidanimate", "trylock-spin barriers, a mutex per cell"),
    "pipeline": ("dedup, ferret", "condvar pipeline with bounded queues"),
    "framethreads": ("x264", "a thread per frame, waiting on the previous frame's rows"),
    "yieldspin": ("bodytrack, OpenMP runtimes", "sched_yield spin barriers, dynamic work"),
    "openmpmine": ("freqmine", "libgomp: parallel for schedule(dynamic), critical merges, barriers"),
}

# Builtin workloads that CMake builds only where the compiler can (name: what it needs); when one
# is not built, the whole suite runs without it (naming it still asks for it).
OPTIONAL_BUILTIN = {"openmpmine": "a C compiler with OpenMP (-fopenmp, libgomp)"}


def builtin_suite(where, size, threads, names=None, seconds=None):
    """The builtin workloads of a layout.Layout (a build tree's BUILD/bin/parsec-workloads, or
    the installed ones)."""
    chosen = names or list(BUILTIN)
    benches, missing = [], []
    for name in chosen:
        if name not in BUILTIN:
            raise SuiteError(f"unknown builtin workload '{name}' (known: {', '.join(BUILTIN)})")
        exe = where.workload(name)
        if not os.access(exe, os.X_OK):
            if names is None and name in OPTIONAL_BUILTIN:
                continue
            missing.append(exe)
            continue
        argv = [exe, "--threads", str(threads), "--size", size]
        if seconds:
            argv += ["--seconds", f"{seconds:g}"]
        benches.append(Benchmark(name, argv, check="checksum"))
    if missing:
        raise SuiteError(f"builtin workloads missing: {', '.join(missing)}; {where.fix}")
    return benches


# ---------------------------------------------------------------------------------------------
# PARSEC 3.0

@dataclass
class ParsecSpec:
    group: str  # apps | kernels
    exe: str
    args: dict  # size -> argument string with ${NTHREADS}
    check: str
    outputs: list = field(default_factory=list)
    env: dict = field(default_factory=dict)  # values may use ${NTHREADS}
    configs: tuple = ("gcc-pthreads", "gcc")
    needs_inputs: bool = True
    note: str = ""


_X264 = ("--quiet --qp 20 --partitions b8x8,i4x4 --ref 5 --direct auto --b-pyramid --weightb "
         "--mixed-refs --no-fast-pskip --me umh --subme 7 --analyse b8x8,i4x4 --threads ${NTHREADS} "
         "-o eledream.264 ")

# PARSEC 3.0's own run configurations (pkgs/*/*/parsec/SIZE.runconf), used when a runconf file
# cannot be read. The harness prefers the installation's runconf files.
PARSEC = {
    "blackscholes": ParsecSpec("apps", "blackscholes", {
        "test": "${NTHREADS} in_4.txt prices.txt",
        "simsmall": "${NTHREADS} in_4K.txt prices.txt",
        "simmedium": "${NTHREADS} in_16K.txt prices.txt",
        "native": "${NTHREADS} in_10M.txt prices.txt"}, "files", ["prices.txt"]),
    "bodytrack": ParsecSpec("apps", "bodytrack", {
        "test": "sequenceB_1 4 1 5 1 0 ${NTHREADS}",
        "simsmall": "sequenceB_1 4 1 1000 5 0 ${NTHREADS}",
        "simmedium": "sequenceB_2 4 2 2000 5 0 ${NTHREADS}",
        "native": "sequenceB_261 4 261 4000 5 0 ${NTHREADS}"}, "files", ["sequenceB_*/poses.txt"]),
    "canneal": ParsecSpec("kernels", "canneal", {
        "test": "${NTHREADS} 5 100 10.nets 1",
        "simsmall": "${NTHREADS} 10000 2000 100000.nets 32",
        "simmedium": "${NTHREADS} 15000 2000 200000.nets 64",
        "native": "${NTHREADS} 15000 2000 2500000.nets 6000"}, "exit",
        note="swaps race by design: the routing cost varies run to run"),
    "dedup": ParsecSpec("kernels", "dedup", {
        s: "-c -p -v -t ${NTHREADS} -i media.dat -o output.dat.ddp" for s in SIZES},
        "files", ["output.dat.ddp"]),
    "facesim": ParsecSpec("apps", "facesim", {
        s: "-timing -threads ${NTHREADS}" for s in SIZES}, "exit",
        note="writes its state files under Storytelling/output with timings"),
    "ferret": ParsecSpec("apps", "ferret", {
        "test": "corel lsh queries 5 5 ${NTHREADS} output.txt",
        "simsmall": "corel lsh queries 10 20 ${NTHREADS} output.txt",
        "simmedium": "corel lsh queries 10 20 ${NTHREADS} output.txt",
        "native": "corel lsh queries 50 20 ${NTHREADS} output.txt"}, "sorted-lines", ["output.txt"]),
    "fluidanimate": ParsecSpec("apps", "fluidanimate", {
        "test": "${NTHREADS} 1 in_5K.fluid out.fluid",
        "simsmall": "${NTHREADS} 5 in_35K.fluid out.fluid",
        "simmedium": "${NTHREADS} 5 in_100K.fluid out.fluid",
        "native": "${NTHREADS} 500 in_500K.fluid out.fluid"}, "files", ["out.fluid"]),
    "freqmine": ParsecSpec("apps", "freqmine", {
        "test": "T10I4D100K_3.dat 1",
        "simsmall": "kosarak_250k.dat 220",
        "simmedium": "kosarak_500k.dat 410",
        "native": "webdocs_250k.dat 11000"}, "stdout", env={"OMP_NUM_THREADS": "${NTHREADS}"},
        configs=("gcc-pthreads", "gcc", "gcc-openmp"),
        note="PARSEC ships freqmine as OpenMP only (libgomp's threads are pthreads)"),
    "raytrace": ParsecSpec("apps", "rtview", {
        "test": "octahedron.obj -automove -nthreads ${NTHREADS} -frames 1 -res 1 1",
        "simsmall": "happy_buddha.obj -automove -nthreads ${NTHREADS} -frames 3 -res 480 270",
        "simmedium": "happy_buddha.obj -automove -nthreads ${NTHREADS} -frames 3 -res 960 540",
        "native": "thai_statue.obj -automove -nthreads ${NTHREADS} -frames 200 -res 1920 1080"},
        "stdout"),
    "streamcluster": ParsecSpec("kernels", "streamcluster", {
        "test": "2 5 1 10 10 5 none output.txt ${NTHREADS}",
        "simsmall": "10 20 32 4096 4096 1000 none output.txt ${NTHREADS}",
        "simmedium": "10 20 64 8192 8192 1000 none output.txt ${NTHREADS}",
        "native": "10 20 128 1000000 200000 5000 none output.txt ${NTHREADS}"},
        "files", ["output.txt"], needs_inputs=False),
    "swaptions": ParsecSpec("apps", "swaptions", {
        "test": "-ns 1 -sm 5 -nt ${NTHREADS}",
        "simsmall": "-ns 16 -sm 10000 -nt ${NTHREADS}",
        "simmedium": "-ns 32 -sm 20000 -nt ${NTHREADS}",
        "native": "-ns 128 -sm 1000000 -nt ${NTHREADS}"}, "stdout", needs_inputs=False),
    "vips": ParsecSpec("apps", "vips", {
        "test": "im_benchmark barbados_256x288.v output.v",
        "simsmall": "im_benchmark pomegranate_1600x1200.v output.v",
        "simmedium": "im_benchmark vulture_2336x2336.v output.v",
        "native": "im_benchmark orion_18000x18000.v output.v"}, "files", ["output.v"],
        env={"IM_CONCURRENCY": "${NTHREADS}"}),
    "x264": ParsecSpec("apps", "x264", {
        "test": _X264 + "eledream_32x18_1.y4m",
        "simsmall": _X264 + "eledream_640x360_8.y4m",
        "simmedium": _X264 + "eledream_640x360_32.y4m",
        "native": _X264 + "eledream_1920x1080_512.y4m"}, "files", ["eledream.264"]),
}


def expand(text, threads):
    return text.replace("${NTHREADS}", str(threads)).replace("$NTHREADS", str(threads))


_ASSIGN = re.compile(r'^\s*(run_exec|run_args)\s*=\s*(?:"([^"]*)"|\'([^\']*)\'|(\S*))\s*(?:#.*)?$')


def parse_runconf(text):
    """run_exec and run_args from a PARSEC runconf file (shell assignments), as a dict."""
    out = {}
    for line in text.splitlines():
        m = _ASSIGN.match(line)
        if m:
            out[m.group(1)] = next(g for g in m.groups()[1:] if g is not None)
    return out


@dataclass
class Discovery:
    ready: list  # Benchmark
    missing: list  # (name, reason, fix)


def find_build(pkg_dir, spec, config=None):
    """The installed binary of a package (pkgs/GROUP/NAME), trying the configurations in order;
    returns (path, config) or (None, None)."""
    configs = (config,) if config else spec.configs
    for cfg in configs:
        for inst in sorted(glob.glob(os.path.join(pkg_dir, "inst", f"*-linux.{cfg}"))):
            exe = os.path.join(inst, "bin", spec.exe)
            if os.access(exe, os.X_OK):
                return exe, cfg
    return None, None


def discover_parsec(home, size, threads, names=None, config=None):
    """Finds the PARSEC 3.0 benchmarks under home: binaries (pthreads builds), inputs and the
    run arguments. Nothing is downloaded or built."""
    if not home:
        raise SuiteError("--suite parsec needs --parsec-home DIR (or PARSEC_HOME): the top of a "
                         "PARSEC 3.0 tree with bin/parsecmgmt and pkgs/")
    if not os.path.isdir(os.path.join(home, "pkgs")):
        raise SuiteError(f"{home} does not look like PARSEC 3.0 (no pkgs/ directory); give the "
                         "directory parsec-3.0.tar.gz unpacked into")
    if size not in SIZES:
        raise SuiteError(f"unknown size '{size}'")
    ready, missing = [], []
    for name in names or list(PARSEC):
        if name not in PARSEC:
            raise SuiteError(f"unknown PARSEC benchmark '{name}' (known: {', '.join(PARSEC)})")
        spec = PARSEC[name]
        pkg = os.path.join(home, "pkgs", spec.group, name)
        want_cfg = config or spec.configs[0]
        build_hint = (f"cd {home} && source env.sh && parsecmgmt -a build -p {name} "
                      f"-c {want_cfg}")
        if not os.path.isdir(pkg):
            missing.append((name, f"no package directory {pkg}",
                            f"unpack parsec-3.0-core.tar.gz (it holds every package) into {home}"))
            continue
        exe, cfg = find_build(pkg, spec, config)
        if exe is None:
            tried = " or ".join(f"inst/*-linux.{c}/bin/{spec.exe}" for c in ((config,) if config else spec.configs))
            missing.append((name, f"not built ({pkg}/{tried} not found)", build_hint))
            continue
        archive = os.path.join(pkg, "inputs", f"input_{size}.tar")
        if spec.needs_inputs and not os.path.isfile(archive):
            where = "parsec-3.0-input-native.tar.gz" if size == "native" else (
                "parsec-3.0-core.tar.gz" if size == "test" else "parsec-3.0-input-sim.tar.gz")
            missing.append((name, f"no {size} input ({archive} not found)",
                            f"unpack PARSEC's {where} over {home}"))
            continue
        args = spec.args[size]
        runconf = os.path.join(pkg, "parsec", f"{size}.runconf")
        if os.path.isfile(runconf):
            try:
                with open(runconf) as f:
                    parsed = parse_runconf(f.read())
                if "run_args" in parsed and "$" not in expand(parsed["run_args"], threads):
                    args = parsed["run_args"]
            except OSError:
                pass
        env = {k: expand(v, threads) for k, v in spec.env.items()}
        note = spec.note
        if cfg != "gcc-pthreads":
            note = (note + "; " if note else "") + f"built as {cfg}"
        ready.append(Benchmark(name, [exe] + shlex.split(expand(args, threads)), check=spec.check,
                               outputs=list(spec.outputs), env=env,
                               inputs=archive if os.path.isfile(archive) else None, note=note))
    return Discovery(ready, missing)


def format_missing(home, missing):
    lines = [f"  {name}: {reason}\n      fix: {fix}" for name, reason, fix in missing]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# output fingerprints

_TIMING = re.compile(r"(time|timing|seconds|\bsec\b|elapsed|ROI|\[PARSEC\]|\[HOOKS\]|"
                     r"PARSEC Benchmark Suite|Number of threads|throughput)", re.IGNORECASE)


def filter_stdout(text):
    """Standard output without lines that carry timings or PARSEC's banners."""
    return "\n".join(l for l in text.splitlines() if not _TIMING.search(l))


def checksum_line(text):
    """The value of a builtin workload's "checksum HEX" line, or None."""
    for line in text.splitlines():
        if line.startswith("checksum "):
            return line.split()[1]
    return None


def units_line(text):
    for line in text.splitlines():
        if line.startswith("units "):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def unit_times(text):
    """The CLOCK_MONOTONIC times of a builtin workload's "unit N T" lines (batch mode), in
    order; a malformed or out-of-order line ends the list (a killed program's last line may be
    cut short)."""
    times = []
    for line in text.splitlines():
        if not line.startswith("unit "):
            continue
        parts = line.split()
        try:
            if len(parts) != 3 or int(parts[1]) != len(times) + 1:
                break
            times.append(float(parts[2]))
        except ValueError:
            break
    return times


def count_in_window(times, start, end):
    """How many of the times fall in [start, end]."""
    return sum(1 for t in times if start <= t <= end)


def fingerprint(bench, run_dir, stdout_text):
    """A string that must be equal between the native run and every other run; None when the
    output is missing or incomplete (the run failed its check by itself)."""
    if bench.check == "checksum":
        value = checksum_line(stdout_text)
        if value is None or f"ok {bench.name}" not in stdout_text.splitlines():
            return None
        return value
    if bench.check == "stdout":
        return hashlib.sha256(filter_stdout(stdout_text).encode()).hexdigest()
    if bench.check in ("files", "sorted-lines"):
        h = hashlib.sha256()
        for pattern in bench.outputs:
            matches = sorted(glob.glob(os.path.join(run_dir, pattern)))
            matches = [m for m in matches if os.path.isfile(m)]
            if not matches:
                return None
            for path in matches:
                h.update(os.path.relpath(path, run_dir).encode() + b"\0")
                with open(path, "rb") as f:
                    data = f.read()
                if bench.check == "sorted-lines":
                    data = b"\n".join(sorted(data.splitlines()))
                h.update(hashlib.sha256(data).digest())
        return h.hexdigest()
    return ""


def select(names_csv, known):
    """A comma-separated selection (globs allowed) of known names, in the known order."""
    if not names_csv:
        return None
    wanted = [n.strip() for n in names_csv.split(",") if n.strip()]
    out = []
    for w in wanted:
        hits = [k for k in known if fnmatch.fnmatchcase(k, w)]
        if not hits:
            raise SuiteError(f"no benchmark matches '{w}' (known: {', '.join(known)})")
        out += [h for h in hits if h not in out]
    return out
