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

# Input sizes: the builtin workloads know four; PARSEC 3.0's input sets are six.
BUILTIN_SIZES = ("test", "simsmall", "simmedium", "native")
PARSEC_SIZES = ("test", "simdev", "simsmall", "simmedium", "simlarge", "native")
SIZES = PARSEC_SIZES  # every size an option may name


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
        """How the output is checked, with the benchmark's notes (argument fixes, builds)."""
        note = f" ({self.note})" if self.note else ""
        if self.check == "checksum":
            return "checksum line" + note
        if self.check == "files":
            return "identical " + ", ".join(self.outputs) + note
        if self.check == "sorted-lines":
            return "same lines of " + ", ".join(self.outputs) + note
        if self.check == "stdout":
            return "same stdout (timings dropped)" + note
        return "exit status only" + note


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
    if size not in BUILTIN_SIZES:
        raise SuiteError(f"the builtin workloads have sizes {', '.join(BUILTIN_SIZES)}; "
                         f"'{size}' is a PARSEC input set only")
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
#
# parsecmgmt runs a package from pkgs/GROUP/NAME/inst/PLATFORM.CONFIG/ (PLATFORM such as
# amd64-linux): it unpacks pkgs/GROUP/NAME/inputs/input_SIZE.tar into the run directory,
# sources pkgs/GROUP/NAME/parsec/SIZE.runconf (shell assignments: run_exec, the binary
# relative to the installation directory; run_args, its arguments with ${NTHREADS}; and for
# some packages exported variables such as OMP_NUM_THREADS=${NTHREADS}), and runs
# run_exec run_args there. The harness does the same, reading the runconf itself rather than
# sourcing it.

@dataclass
class ParsecSpec:
    group: str  # apps | kernels
    exe: str  # run_exec's file name, used when no runconf can be read
    args: dict  # size -> PARSEC 3.0's run_args (with ${NTHREADS}), used when no runconf can be read
    check: str
    outputs: list = field(default_factory=list)
    env: dict = field(default_factory=dict)  # values may use ${NTHREADS}; the runconf's exports win
    configs: tuple = ("gcc-pthreads", "gcc")
    no_input_sizes: tuple = ()  # sizes that need no inputs/input_SIZE.tar (all: a generator)
    note: str = ""


_X264 = ("--quiet --qp 20 --partitions b8x8,i4x4 --ref 5 --direct auto --b-pyramid --weightb "
         "--mixed-refs --no-fast-pskip --me umh --subme 7 --analyse b8x8,i4x4 --threads ${NTHREADS} "
         "-o eledream.264 ")


def _sizes(test, simdev, simsmall, simmedium, simlarge, native):
    return dict(zip(PARSEC_SIZES, (test, simdev, simsmall, simmedium, simlarge, native)))


# PARSEC 3.0's run arguments (pkgs/*/*/parsec/SIZE.runconf), written down from PARSEC 3.0's
# layout and cross-checked against published run scripts, not against an installation (none is
# available here): the harness uses them only when an installation's runconf file cannot be
# read or uses variables the harness cannot know, and says so.
PARSEC = {
    "blackscholes": ParsecSpec("apps", "blackscholes", _sizes(
        "${NTHREADS} in_4.txt prices.txt", "${NTHREADS} in_16.txt prices.txt",
        "${NTHREADS} in_4K.txt prices.txt", "${NTHREADS} in_16K.txt prices.txt",
        "${NTHREADS} in_64K.txt prices.txt", "${NTHREADS} in_10M.txt prices.txt"),
        "files", ["prices.txt"]),
    "bodytrack": ParsecSpec("apps", "bodytrack", _sizes(
        "sequenceB_1 4 1 5 1 0 ${NTHREADS}", "sequenceB_1 4 1 100 3 0 ${NTHREADS}",
        "sequenceB_1 4 1 1000 5 0 ${NTHREADS}", "sequenceB_2 4 2 2000 5 0 ${NTHREADS}",
        "sequenceB_4 4 4 4000 5 0 ${NTHREADS}", "sequenceB_261 4 261 4000 5 0 ${NTHREADS}"),
        "files", ["sequenceB_*/poses.txt"]),
    "canneal": ParsecSpec("kernels", "canneal", _sizes(
        "${NTHREADS} 5 100 10.nets 1", "${NTHREADS} 100 300 100.nets 2",
        "${NTHREADS} 10000 2000 100000.nets 32", "${NTHREADS} 15000 2000 200000.nets 64",
        "${NTHREADS} 15000 2000 400000.nets 128", "${NTHREADS} 15000 2000 2500000.nets 6000"),
        "exit", note="swaps race by design: the routing cost varies run to run"),
    "dedup": ParsecSpec("kernels", "dedup", {
        s: f"-c -p -v -t ${{NTHREADS}} -i {f} -o output.dat.ddp" for s, f in _sizes(
            "test.dat", "hamlet.dat", "media.dat", "media.dat", "media.dat",
            "FC-6-x86_64-disc1.iso").items()}, "files", ["output.dat.ddp"]),
    "facesim": ParsecSpec("apps", "facesim", _sizes(
        "-h", "-h", "-timing -threads ${NTHREADS}", "-timing -threads ${NTHREADS}",
        "-timing -threads ${NTHREADS}", "-timing -threads ${NTHREADS} -lastframe 100"),
        "exit", no_input_sizes=("test", "simdev"),
        note="writes its state files under Storytelling/output with timings; test and simdev "
             "only print its usage (-h)"),
    "ferret": ParsecSpec("apps", "ferret", _sizes(
        "corel lsh queries 5 5 ${NTHREADS} output.txt", "corel lsh queries 5 5 ${NTHREADS} output.txt",
        "corel lsh queries 10 20 ${NTHREADS} output.txt", "corel lsh queries 10 20 ${NTHREADS} output.txt",
        "corel lsh queries 10 20 ${NTHREADS} output.txt", "corel lsh queries 50 20 ${NTHREADS} output.txt"),
        "sorted-lines", ["output.txt"]),
    "fluidanimate": ParsecSpec("apps", "fluidanimate", _sizes(
        "${NTHREADS} 1 in_5K.fluid out.fluid", "${NTHREADS} 3 in_15K.fluid out.fluid",
        "${NTHREADS} 5 in_35K.fluid out.fluid", "${NTHREADS} 5 in_100K.fluid out.fluid",
        "${NTHREADS} 5 in_300K.fluid out.fluid", "${NTHREADS} 500 in_500K.fluid out.fluid"),
        "files", ["out.fluid"]),
    "freqmine": ParsecSpec("apps", "freqmine", _sizes(
        "T10I4D100K_3.dat 1", "T10I4D100K_1k.dat 3", "kosarak_250k.dat 220",
        "kosarak_500k.dat 410", "kosarak_990k.dat 790", "webdocs_250k.dat 11000"),
        "stdout", env={"OMP_NUM_THREADS": "${NTHREADS}"},
        configs=("gcc-pthreads", "gcc", "gcc-openmp"),
        note="PARSEC ships freqmine as OpenMP only (libgomp's threads are pthreads)"),
    "raytrace": ParsecSpec("apps", "rtview", _sizes(
        "octahedron.obj -automove -nthreads ${NTHREADS} -frames 1 -res 1 1",
        "bunny.obj -automove -nthreads ${NTHREADS} -frames 1 -res 16 16",
        "happy_buddha.obj -automove -nthreads ${NTHREADS} -frames 3 -res 480 270",
        "happy_buddha.obj -automove -nthreads ${NTHREADS} -frames 3 -res 960 540",
        "happy_buddha.obj -automove -nthreads ${NTHREADS} -frames 3 -res 1920 1080",
        "thai_statue.obj -automove -nthreads ${NTHREADS} -frames 200 -res 1920 1080"), "stdout"),
    "streamcluster": ParsecSpec("kernels", "streamcluster", _sizes(
        "2 5 1 10 10 5 none output.txt ${NTHREADS}", "3 10 3 16 16 10 none output.txt ${NTHREADS}",
        "10 20 32 4096 4096 1000 none output.txt ${NTHREADS}",
        "10 20 64 8192 8192 1000 none output.txt ${NTHREADS}",
        "10 20 128 16384 16384 1000 none output.txt ${NTHREADS}",
        "10 20 128 1000000 200000 5000 none output.txt ${NTHREADS}"),
        "files", ["output.txt"], no_input_sizes=PARSEC_SIZES),
    "swaptions": ParsecSpec("apps", "swaptions", _sizes(
        "-ns 1 -sm 5 -nt ${NTHREADS}", "-ns 3 -sm 50 -nt ${NTHREADS}",
        "-ns 16 -sm 10000 -nt ${NTHREADS}", "-ns 32 -sm 20000 -nt ${NTHREADS}",
        "-ns 64 -sm 40000 -nt ${NTHREADS}", "-ns 128 -sm 1000000 -nt ${NTHREADS}"),
        "stdout", no_input_sizes=PARSEC_SIZES),
    "vips": ParsecSpec("apps", "vips", {
        s: f"im_benchmark {f} output.v" for s, f in _sizes(
            "barbados_256x288.v", "barbados_256x288.v", "pomegranate_1600x1200.v",
            "vulture_2336x2336.v", "bigben_2662x5500.v", "orion_18000x18000.v").items()},
        "files", ["output.v"], env={"IM_CONCURRENCY": "${NTHREADS}"}),
    "x264": ParsecSpec("apps", "x264", {
        s: _X264 + f for s, f in _sizes(
            "eledream_32x18_1.y4m", "eledream_64x36_3.y4m", "eledream_640x360_8.y4m",
            "eledream_640x360_32.y4m", "eledream_640x360_128.y4m",
            "eledream_1920x1080_512.y4m").items()}, "files", ["eledream.264"]),
}

# The PARSEC archive that holds each size's inputs/input_SIZE.tar.
INPUT_ARCHIVES = {"test": "parsec-3.0-core.tar.gz", "simdev": "parsec-3.0-core.tar.gz",
                  "simsmall": "parsec-3.0-input-sim.tar.gz",
                  "simmedium": "parsec-3.0-input-sim.tar.gz",
                  "simlarge": "parsec-3.0-input-sim.tar.gz",
                  "native": "parsec-3.0-input-native.tar.gz"}


def expand(text, threads):
    return text.replace("${NTHREADS}", str(threads)).replace("$NTHREADS", str(threads))


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand_vars(text, variables):
    """text with $NAME and ${NAME} replaced from variables; (result, names it did not know)."""
    unknown = []

    def sub(m):
        name = m.group(1) or m.group(2)
        if name in variables:
            return variables[name]
        unknown.append(name)
        return m.group(0)

    return _VAR.sub(sub, text), unknown


class RunconfError(ValueError):
    """A runconf file the harness cannot read as shell assignments."""


@dataclass
class Runconf:
    run_exec: str = None  # relative to the installation directory, e.g. bin/rtview
    run_args: str = None  # unexpanded
    exports: dict = field(default_factory=dict)  # exported NAME -> unexpanded value
    assigned: dict = field(default_factory=dict)  # every NAME=VALUE, unexpanded, in order


_ASSIGN = re.compile(r"^\s*(export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def parse_runconf(text):
    """A PARSEC runconf file (a shell fragment of assignments and comments) as a Runconf.
    Lines that are not assignments (comments, blank lines) are skipped; a value is one shell
    word (quotes removed, a trailing comment dropped). RunconfError on unbalanced quotes."""
    rc = Runconf()
    lines = text.replace("\\\n", "").splitlines()
    for n, line in enumerate(lines, start=1):
        m = _ASSIGN.match(line)
        if not m:
            continue
        try:
            words = shlex.split(m.group(3), comments=True)
        except ValueError as e:
            raise RunconfError(f"line {n}: {e}") from None
        value = words[0] if words else ""
        name = m.group(2)
        rc.assigned[name] = value
        if m.group(1):
            rc.exports[name] = value
        if name == "run_exec":
            rc.run_exec = value
        elif name == "run_args":
            rc.run_args = value
    return rc


def resolve_runconf(rc, threads):
    """(argv words, env, unknown variable names): run_args and the exports with ${NTHREADS}
    and the file's own earlier assignments expanded."""
    known = {"NTHREADS": str(threads)}
    unknown = []
    for name, value in rc.assigned.items():
        if name in ("run_args", "run_exec"):
            continue
        known[name], u = expand_vars(value, known)
        unknown += u
    args, u = expand_vars(rc.run_args or "", known)
    unknown += u
    env = {k: known.get(k, "") for k in rc.exports}
    return shlex.split(args), env, sorted(set(unknown))


def _power_of_two_at_most(n):
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def threads_for(name, threads):
    """The ${NTHREADS} a package can run with, and why it differs from --threads ('' when not):
    fluidanimate partitions its grid in powers of two and refuses other thread counts."""
    if name == "fluidanimate" and _power_of_two_at_most(threads) != threads:
        p = _power_of_two_at_most(threads)
        return p, f"fluidanimate runs only with a power-of-two thread count: {p} threads, not {threads}"
    return threads, ""


def fix_argv(name, args, threads):
    """(args, note): the package's arguments adjusted where PARSEC's own run configuration cannot
    run with this many threads. swaptions refuses fewer swaptions (-ns) than threads (-nt) and
    prints its usage (PARSEC's test size has -ns 1): -ns is raised to the thread count."""
    if name != "swaptions":
        return args, ""
    args = list(args)
    try:
        i = args.index("-ns")
        nt = int(args[args.index("-nt") + 1]) if "-nt" in args else threads
        ns = int(args[i + 1])
    except (ValueError, IndexError):
        return args, ""
    if ns < nt:
        args[i + 1] = str(nt)
        return args, f"-ns {ns} raised to {nt}: swaptions refuses fewer swaptions than threads"
    return args, ""


@dataclass
class Discovery:
    ready: list  # Benchmark
    missing: list  # (name, reason, fix)


def find_build(pkg_dir, run_exec, configs):
    """The installed binary of a package (pkgs/GROUP/NAME): run_exec under the first
    inst/PLATFORM.CONFIG directory that has it, trying the configurations in order; returns
    (path, config) or (None, None)."""
    for cfg in configs:
        for inst in sorted(glob.glob(os.path.join(pkg_dir, "inst", f"*.{cfg}"))):
            exe = os.path.join(inst, run_exec)
            if os.path.isfile(exe) and os.access(exe, os.X_OK):
                return exe, cfg
    return None, None


def _read_runconf(path):
    """(Runconf or None, why it is not used)."""
    if not os.path.isfile(path):
        return None, f"no {path}"
    try:
        with open(path, errors="replace") as f:
            rc = parse_runconf(f.read())
    except (OSError, RunconfError) as e:
        return None, f"{path} unreadable ({e})"
    if rc.run_args is None:
        return None, f"{path} sets no run_args"
    return rc, ""


def parsec_benchmark(home, name, size, threads, config=None):
    """One PARSEC package as a Benchmark, or (reason, fix) when it cannot run here."""
    spec = PARSEC[name]
    pkg = os.path.join(home, "pkgs", spec.group, name)
    configs = (config,) if config else spec.configs
    build_hint = (f"cd {home} && source env.sh && parsecmgmt -a build -p {name} "
                  f"-c {configs[0]}")
    if not os.path.isdir(pkg):
        return (f"no package directory {pkg}",
                f"unpack parsec-3.0-core.tar.gz (it holds every package) into {home}")
    nthreads, thread_note = threads_for(name, threads)
    runconf = os.path.join(pkg, "parsec", f"{size}.runconf")
    rc, why = _read_runconf(runconf)
    notes = [thread_note] if thread_note else []
    env = {k: expand(v, nthreads) for k, v in spec.env.items()}
    args = None
    if rc is not None:
        words, rc_env, unknown = resolve_runconf(rc, nthreads)
        if unknown:
            why = (f"{runconf} uses " + ", ".join("${" + u + "}" for u in unknown)
                   + ", which only parsecmgmt's configuration defines")
        else:
            args = words
            env.update(rc_env)
    if args is None:
        args = shlex.split(expand(spec.args[size], nthreads))
        notes.append(f"{why}: PARSEC 3.0's {size} arguments used")
    run_exec = (rc.run_exec if rc is not None and rc.run_exec else f"bin/{spec.exe}")
    exe, cfg = find_build(pkg, run_exec, configs)
    if exe is None:
        tried = " or ".join(f"inst/*.{c}/{run_exec}" for c in configs)
        return f"not built ({pkg}/{tried} not found)", build_hint
    archive = os.path.join(pkg, "inputs", f"input_{size}.tar")
    if size not in spec.no_input_sizes and not os.path.isfile(archive):
        return (f"no {size} input ({archive} not found)",
                f"unpack PARSEC's {INPUT_ARCHIVES[size]} over {home}")
    args, fix_note = fix_argv(name, args, nthreads)
    if fix_note:
        notes.append(fix_note)
    if cfg != "gcc-pthreads":
        notes.append(f"built as {cfg}")
    if spec.note:
        notes.insert(0, spec.note)
    return Benchmark(name, [exe] + args, check=spec.check, outputs=list(spec.outputs), env=env,
                     inputs=archive if os.path.isfile(archive) else None,
                     note="; ".join(notes))


def check_parsec_home(home):
    if not home:
        raise SuiteError("--suite parsec needs --parsec-home DIR (or PARSEC_HOME): the top of a "
                         "PARSEC 3.0 tree with bin/parsecmgmt and pkgs/")
    if not os.path.isdir(os.path.join(home, "pkgs")):
        raise SuiteError(f"{home} does not look like PARSEC 3.0 (no pkgs/ directory); give the "
                         "directory parsec-3.0.tar.gz unpacked into")


def discover_parsec(home, size, threads, names=None, config=None):
    """Finds the PARSEC 3.0 benchmarks under home: binaries (pthreads builds), inputs and the
    run arguments. Nothing is downloaded or built."""
    check_parsec_home(home)
    if size not in PARSEC_SIZES:
        raise SuiteError(f"unknown size '{size}' (PARSEC's: {', '.join(PARSEC_SIZES)})")
    ready, missing = [], []
    for name in names or list(PARSEC):
        if name not in PARSEC:
            raise SuiteError(f"unknown PARSEC benchmark '{name}' (known: {', '.join(PARSEC)})")
        found = parsec_benchmark(home, name, size, threads, config)
        if isinstance(found, Benchmark):
            ready.append(found)
        else:
            missing.append((name,) + found)
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
