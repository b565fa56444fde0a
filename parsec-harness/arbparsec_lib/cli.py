"""Command line of arbparsec: run, colocate, list."""
import argparse
import os
import re
import shlex
import sys

from . import layout, machine, runner, servers, suites



class UsageError(Exception):
    """Bad options: one line on stderr, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) that point at --help."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def _convert(convert, text, what):
    """convert(text), or the argparse error "'TEXT' is not WHAT" when it raises ValueError."""
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {what}") from None


def _matching(pattern, text, form):
    """text when it matches the regular expression as a whole, else "'TEXT' is not FORM"."""
    if not re.fullmatch(pattern, text):
        raise argparse.ArgumentTypeError(f"'{text}' is not {form}")
    return text


def positive_int(text):
    v = _convert(int, text, "a whole number")
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return v


def positive_float(text):
    v = _convert(float, text, "a number")
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"'{text}' must be a positive number")
    return v


def non_negative_float(text):
    if text.strip() == "0":
        return 0.0
    return positive_float(text)


def parse_modes(text):
    modes = [m.strip() for m in text.split(",") if m.strip()]
    if not modes:
        raise argparse.ArgumentTypeError("give native, arbrun or native,arbrun")
    for m in modes:
        if m not in ("native", "arbrun"):
            raise argparse.ArgumentTypeError(f"unknown mode '{m}' (native, arbrun)")
    if len(set(modes)) != len(modes):
        raise argparse.ArgumentTypeError(f"mode given twice in '{text}'")
    return modes


def parse_rates(text):
    """RATE[:RATE...] in requests per second (positive numbers)."""
    parts = text.split(":")
    if not text or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"'{text}' is not RATE[:RATE...]")
    rates = []
    for p in parts:
        r = _convert(float, p, "a rate (requests per second)")
        if not 1 <= r <= 1e7:
            raise argparse.ArgumentTypeError(f"rate {p} is not in 1..10000000 requests per second")
        rates.append(r)
    if len(rates) > 64:
        raise argparse.ArgumentTypeError("at most 64 load steps")
    return rates


def parse_cores(text):
    return _matching(r"\d+(:\d*)?", text, "N, MIN: or MIN:MAX")


def parse_cpu_list(text):
    return _matching(r"\d+(-\d+)?(,\d+(-\d+)?)*", text, "a CPU list like 0-3 or 0,2-5")


def calibration_runs(text):
    v = _convert(int, text, "a whole number")
    if not 1 <= v <= 20:
        raise argparse.ArgumentTypeError(f"'{text}' is not in 1..20")
    return v


def parse_nice(text):
    v = _convert(int, text, "a nice value")
    if not 0 <= v <= 19:
        raise argparse.ArgumentTypeError(f"nice value {v} not in 0..19")
    return v


def absolute_path(text):
    """A path option, made absolute at once: the runs happen in scratch directories, where a
    relative --build-dir or --out would name something else."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    return os.path.abspath(os.path.expanduser(text))


def common_paths(p):
    p.add_argument("--build-dir", metavar="DIR", type=absolute_path, default=None,
                   help="CMake build tree with bin/arbrun, bin/core-arbiter, bin/arbloadgen and "
                        "bin/parsec-workloads/ (default: the programs installed with this "
                        "arbparsec, or the source tree's build/ when run from there)")
    p.add_argument("--arbrun", metavar="PATH", type=absolute_path, default=None,
                   help="the arbrun launcher (default: the one beside core-arbiter, see "
                        "--build-dir)")
    p.add_argument("--tmpdir", metavar="DIR", type=absolute_path, default=None,
                   help="where the scratch directory is made (default: $TMPDIR or /tmp)")
    p.add_argument("--keep", action="store_true",
                   help="keep the scratch directory (run directories, logs) and say where")


RUN_EPILOG = """\
Suites:
  builtin  the project's own workloads in the threading patterns of PARSEC programs, each with a
           verifiable checksum: dataparallel (blackscholes/fluidanimate: barrier phases),
           montecarlo (swaptions: independent threads), trylockspin (streamcluster/fluidanimate:
           trylock-spin barriers, a mutex per cell), pipeline (dedup/ferret: condvar pipeline,
           bounded queues), framethreads (x264: a thread per frame), yieldspin (sched_yield
           spin barriers), openmpmine (freqmine: OpenMP/libgomp dynamic loops, critical
           merges, barriers). Built by CMake into BUILD/bin/parsec-workloads/ and
           installed with arbrun.
  parsec   a PARSEC 3.0 installation of yours (never downloaded, never built by this harness):
           the pthreads builds (pkgs/*/NAME/inst/*-linux.gcc-pthreads/bin) and the standard
           inputs (pkgs/*/NAME/inputs/input_SIZE.tar) of blackscholes, bodytrack, canneal,
           dedup, facesim, ferret, fluidanimate, freqmine, raytrace, streamcluster, swaptions,
           vips and x264 at any of PARSEC's sizes (test, simdev, simsmall, simmedium, simlarge,
           native); binary, arguments and exported variables from the installation's
           parsec/SIZE.runconf files (PARSEC 3.0's own arguments where one cannot be read),
           with ${NTHREADS} = --threads (fluidanimate: the largest power of two at most that;
           swaptions: -ns raised to the thread count where PARSEC's is smaller). Missing
           builds and inputs are listed with the parsecmgmt command or archive that provides
           them; the rest run. See parsec-harness/README.md.

Determinism calibration: before any comparison, each program runs natively
--calibration-runs times (2; not timed). The first run's output is the reference (builtin: the
checksum line; PARSEC: its output files or standard output; the exit status only for canneal
and facesim). A program whose output differs between native runs (these or the timed ones) is
reported as "varies natively, exit status compared". Every run is timed: wall time, CPU time
and peak RSS from wait4(), cores held over time from arbrun --trace; the report gives arbrun /
native ratios of each. Runs alternate between the modes. Output in DIR: results.csv
(benchmark,mode,run,wall_s,cpu_s,max_rss_kb,output_ok), runs.json (details), report.md
(medians, arbrun/native ratios), wall.png and cores.png, traces/. A progress line per run goes
to stderr.

Exit status: 0 every output matched, 1 a run failed or differed, 2 bad options or a suite that
cannot run at all, 130 interrupted (everything started is stopped either way).

Examples:
  arbparsec run --suite builtin --size simsmall --repeat 3 --out /tmp/ap
  arbparsec run --suite parsec --parsec-home ~/parsec-3.0 --size simmedium --threads 4 \\
      --benchmarks 'blackscholes,stream*' --out /tmp/ap-parsec
"""

COLOCATE_EPILOG = """\
The colocation experiment. Four configurations, one after another, each for --duration seconds:
  arbrun alone   the server under arbrun (--priority 0) with a private core arbiter, no batch
  arbrun mix     the same, with the batch tenants under arbrun at --priority 7
  native alone   the server natively
  native mix     the server natively, the batch tenants under nice -n 19 (as people do today)

Servers (--server), Debian's, unmodified, on a free port of 127.0.0.1:
  memcached  -U 0 -t N (-u root when run as root); load in memcached's text protocol
  redis      redis-server without persistence (--save '' --appendonly no), --io-threads N;
             load in RESP (GET and SET commands)
arbloadgen (parsec-harness/loadgen) sends an open-loop Poisson load (fixed seed) of gets and
sets over several connections; latency is measured from each request's scheduled send time.

Batch tenants (--batch): builtin workloads repeat their computation (--seconds) in one process
for the whole configuration (throughput = repetitions per second; checksums compared with the
native mix's); PARSEC programs, parsec:APP with --parsec-home, are run again and again, each run
a fresh process in a fresh run directory with the inputs of --batch-size (throughput = runs
that exited 0 and ended inside the load window, per second; every run's output is checked
against the native mix's runs, or its exit status where the output varies natively).

The private arbiter: backend auto uses cgroup cpusets (real isolation: managed cores run only
granted carriers) when run as root with a cpuset hierarchy and at least --min-isolated-cpus
CPUs; otherwise the fake backend on a simulated machine with a managed core per CPU plus one
for the server (whose carrier sleeps when idle): nothing is pinned, the kernel still shares the
CPUs, so the batch tenants also run under nice -n 19 in the arbrun mix (override with
--arbrun-batch-nice). The report says which. The server may grow to all managed cores but one.

Output in DIR: report.md (latency p50/p99/p99.9 per configuration, ratios to alone, batch
throughput, goals), colocate.csv (per-second latency of every configuration), summary.json,
latency.png, cores.png (cores per tenant over time in the arbrun mix), throughput.png, traces/,
loadgen logs. A progress line every second on stderr.

Exit status: 0 all configurations ran, 1 a configuration failed, 2 bad options or a missing
program (77 when the server is not installed), 130 interrupted.

Examples (the first is the README's demo):
  arbparsec colocate --server memcached --batch dataparallel,montecarlo --load 5000:20000:5000 \\
      --duration 15 --out /tmp/coloc
  arbparsec colocate --server redis --batch parsec:swaptions,parsec:canneal \\
      --parsec-home ~/parsec-3.0 --batch-size simsmall --load 5000 --duration 30 --out /tmp/c2
"""


def build_parser():
    top = Parser(prog="arbparsec",
                 description="PARSEC and real servers as tenants of arbrun, side by side with "
                             "Linux: runs, checks, reports and plots.",
                 formatter_class=argparse.RawDescriptionHelpFormatter,
                 epilog="Subcommands: run, colocate, list. See 'arbparsec SUBCOMMAND --help'.")
    sub = top.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=Parser)

    r = sub.add_parser("run", help="run a suite natively and under arbrun, check outputs, report",
                       description="Runs every benchmark of a suite natively and under arbrun, "
                                   "checks outputs against the native run's, and reports.",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=RUN_EPILOG)
    r.add_argument("--suite", choices=("builtin", "parsec"), default="builtin",
                   help="builtin workloads or a PARSEC 3.0 installation (default: builtin)")
    r.add_argument("--parsec-home", metavar="DIR", type=absolute_path, default=os.environ.get("PARSEC_HOME"),
                   help="top of the PARSEC 3.0 tree (default: $PARSEC_HOME)")
    r.add_argument("--parsec-config", metavar="NAME", default=None,
                   help="PARSEC build configuration to use (default: gcc-pthreads, then gcc; "
                        "freqmine also gcc-openmp)")
    r.add_argument("--benchmarks", metavar="LIST", default=None,
                   help="comma-separated benchmarks to run, globs allowed (default: all)")
    r.add_argument("--size", choices=suites.SIZES, default="simsmall",
                   help="input size: PARSEC's test, simdev, simsmall, simmedium, simlarge, native; "
                        "the builtin workloads have test, simsmall, simmedium, native "
                        "(default: simsmall)")
    r.add_argument("--threads", type=positive_int, default=machine.cpus(), metavar="N",
                   help="threads per program (default: this machine's CPUs, %(default)s)")
    r.add_argument("--repeat", type=positive_int, default=3, metavar="R",
                   help="runs per mode (default: 3)")
    r.add_argument("--calibration-runs", type=calibration_runs, default=2, metavar="N",
                   help="native runs made before any comparison, per benchmark (not timed): the "
                        "first is the reference output; when they differ, the output varies "
                        "natively and runs are judged by exit status (default: 2; 1: a single "
                        "reference, no calibration)")
    r.add_argument("--mode", type=parse_modes, default=["native", "arbrun"], metavar="LIST",
                   dest="modes", help="native, arbrun or both in run order (default: native,arbrun)")
    r.add_argument("--out", metavar="DIR", type=absolute_path, required=True, help="where results and reports go")
    r.add_argument("--arbrun-args", metavar="ARGS", default="--standalone",
                   help="options for arbrun before its '--' (default: '--standalone'; e.g. "
                        "'--arbiter /run/arbrun/arbiter.sock --priority 5')")
    r.add_argument("--timeout", type=positive_float, default=1800, metavar="S",
                   help="seconds a single run may take before its process group is killed "
                        "(default: 1800)")
    common_paths(r)

    c = sub.add_parser("colocate", help="a server (memcached, redis) at high priority beside "
                                        "batch tenants, under arbrun and natively",
                       description="The colocation experiment: a server (memcached or redis) "
                                   "under arbrun at high priority beside low-priority batch "
                                   "tenants (builtin workloads or PARSEC programs), then the same "
                                   "mix natively with the batch niced.",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=COLOCATE_EPILOG)
    c.add_argument("--server", choices=tuple(servers.SERVERS), default="memcached",
                   help="the latency-sensitive server: " + ", ".join(
                       f"{s.name} (Debian's {s.package})" for s in servers.SERVERS.values())
                   + " (default: memcached)")
    c.add_argument("--server-bin", metavar="PATH", default=None,
                   help="the server's program (default: memcached or redis-server from PATH)")
    c.add_argument("--batch", metavar="LIST", required=True,
                   help="comma-separated batch tenants: builtin workloads (one process each, "
                        "repeating) and PARSEC programs as parsec:APP (run again and again; "
                        "needs --parsec-home), e.g. dataparallel,parsec:swaptions")
    c.add_argument("--parsec-home", metavar="DIR", type=absolute_path,
                   default=os.environ.get("PARSEC_HOME"),
                   help="top of the PARSEC 3.0 tree, for parsec:APP tenants (default: $PARSEC_HOME)")
    c.add_argument("--parsec-config", metavar="NAME", default=None,
                   help="PARSEC build configuration for parsec:APP tenants (default: gcc-pthreads, "
                        "then gcc; freqmine also gcc-openmp)")
    c.add_argument("--load", type=parse_rates, required=True, metavar="RATE[:RATE...]",
                   help="requests per second; several rates are steps of equal length")
    c.add_argument("--duration", type=positive_float, default=20, metavar="S",
                   help="seconds of load per configuration (default: 20)")
    c.add_argument("--out", metavar="DIR", type=absolute_path, required=True, help="where results and reports go")
    c.add_argument("--configs", default="arbrun-alone,arbrun-mix,native-alone,native-mix",
                   metavar="LIST", help="configurations to run, in order (default: all four)")
    c.add_argument("--server-threads", type=positive_int, default=None, metavar="N",
                   help="memcached -t N (default: CPUs, " + str(max(1, machine.cpus())) + "); "
                        "redis-server --io-threads N (default: 1, redis's own)")
    c.add_argument("--server-cores", type=parse_cores, default=None, metavar="MIN:MAX",
                   help="arbrun --cores for memcached (default: 1:M, M = managed cores - 1, "
                        "so the batch keeps at least one)")
    c.add_argument("--batch-threads", type=positive_int, default=max(1, machine.cpus()),
                   metavar="N", help="threads per batch tenant (default: CPUs, %(default)s)")
    c.add_argument("--batch-size", choices=suites.SIZES, default="test",
                   help="size of one batch repetition or PARSEC run (PARSEC: any of its six "
                        "input sets; builtin: test, simsmall, simmedium, native; default: test)")
    c.add_argument("--connections", type=positive_int, default=8, metavar="N",
                   help="load generator connections (default: 8)")
    c.add_argument("--keys", type=positive_int, default=10000, metavar="K",
                   help="distinct keys (default: 10000)")
    c.add_argument("--value-size", type=positive_int, default=100, metavar="B",
                   help="bytes per value (default: 100)")
    c.add_argument("--get-ratio", type=non_negative_float, default=0.9, metavar="F",
                   help="fraction of gets (default: 0.9)")
    c.add_argument("--seed", type=positive_int, default=1, help="load generator seed (default: 1)")
    c.add_argument("--warmup", type=non_negative_float, default=1.0, metavar="S",
                   help="first seconds of each configuration left out of the overall quantiles "
                        "(default: 1)")
    c.add_argument("--backend", choices=("auto", "fake", "cgroup-v1", "cgroup-v2", "affinity"),
                   default="auto", help="the private core arbiter's backend (default: auto)")
    c.add_argument("--cpus", type=parse_cpu_list, default=None, metavar="LIST",
                   help="the arbiter's --cpus, the lowest unmanaged (default: this machine's "
                        "CPUs; fake: 0-(CPUs+1), i.e. a managed core per CPU plus the server's)")
    c.add_argument("--loadgen-cpus", type=parse_cpu_list, default=None, metavar="LIST",
                   help="run the load generator on these CPUs (taskset): on a big host, keep it "
                        "off the CPUs the server and batch share (default: wherever this harness "
                        "may run)")
    c.add_argument("--min-isolated-cpus", type=positive_int, default=4, metavar="N",
                   help="backend auto uses cpusets only with at least N CPUs (default: 4): with "
                        "fewer, the server's one core leaves the batch none")
    c.add_argument("--native-batch-nice", type=parse_nice, default=19, metavar="N",
                   help="nice value of the batch in the native mix (default: 19)")
    c.add_argument("--arbrun-batch-nice", type=parse_nice, default=None, metavar="N",
                   help="nice value of the batch in the arbrun mix (default: 19 with the fake "
                        "backend, 0 with a cpuset backend)")
    c.add_argument("--server-estimator", choices=("arachne", "fast"), default="arachne",
                   help="how the server under arbrun estimates its cores (arbrun --estimator; "
                        "default arachne). On a 2-vCPU VM (fake backend, memcached beside two "
                        "batch tenants): arachne kept memcached on one core, about native alone "
                        "but twice the native mix's median beside the batch; fast asks for a "
                        "second core whenever a request waits, which cut the mix's median below "
                        "the native mix's in two runs of three but raised the alone run's p99")
    c.add_argument("--server-arbrun-args", default="", metavar="ARGS",
                   help="more arbrun options for the server; a value starting with '-' needs the "
                        "'=' form: --server-arbrun-args='--estimator fast'")
    c.add_argument("--batch-arbrun-args", default="", metavar="ARGS",
                   help="more arbrun options for the batch tenants (--batch-arbrun-args='...')")
    c.add_argument("--memcached", default=None, metavar="PATH",
                   help="the memcached binary (the same as --server-bin with --server memcached)")
    common_paths(c)

    ls = sub.add_parser("list", help="list the benchmarks a suite finds here (and what is missing)",
                        description="Lists the benchmarks of a suite and, for PARSEC, what is "
                                    "missing and how to get it.")
    ls.add_argument("--suite", choices=("builtin", "parsec"), default="builtin")
    ls.add_argument("--parsec-home", metavar="DIR", type=absolute_path, default=os.environ.get("PARSEC_HOME"))
    ls.add_argument("--parsec-config", metavar="NAME", default=None)
    ls.add_argument("--benchmarks", metavar="LIST", default=None,
                    help="comma-separated benchmarks, globs allowed (default: all)")
    ls.add_argument("--size", choices=suites.SIZES, default="simsmall")
    ls.add_argument("--threads", type=positive_int, default=machine.cpus(), metavar="N")
    ls.add_argument("--build-dir", metavar="DIR", type=absolute_path, default=None,
                    help="CMake build tree (default: as for run)")
    return top


def _find_arbrun(o):
    path = o.arbrun or o.layout.program("arbrun")
    if not os.access(path, os.X_OK):
        raise UsageError(f"arbparsec: arbrun not found at {path}: {o.layout.fix}, or give "
                         "--arbrun PATH")
    return os.path.abspath(path)


def _benches(o):
    """(benchmarks, meta lines, check descriptions) for run/list; SuiteError when unusable."""
    if o.suite == "builtin":
        names = suites.select(getattr(o, "benchmarks", None), list(suites.BUILTIN))
        benches = suites.builtin_suite(o.layout, o.size, o.threads, names)
        lines = ["suite: builtin workloads (" + "; ".join(
            f"{n}: {suites.BUILTIN[n][1]}, like {suites.BUILTIN[n][0]}" for n in
            (names or suites.BUILTIN)) + ")"]
        return benches, lines, []
    names = suites.select(getattr(o, "benchmarks", None), list(suites.PARSEC))
    found = suites.discover_parsec(o.parsec_home, o.size, o.threads, names, o.parsec_config)
    lines = [f"suite: PARSEC 3.0 at {o.parsec_home}: {len(found.ready)} of "
             f"{len(found.ready) + len(found.missing)} benchmarks ready"]
    return found.ready, lines, found.missing


def cmd_list(o):
    try:
        benches, lines, missing = _benches(o)
    except suites.SuiteError as e:
        print(f"arbparsec list: {e}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    for b in benches:
        env = " ".join(f"{k}={v}" for k, v in b.env.items())
        print(f"  ready   {b.name:<14} {(env + ' ') if env else ''}{shlex.join(b.argv)}"
              f"{'  [inputs ' + b.inputs + ']' if b.inputs else ''}  check: {b.describe_check()}")
    if missing:
        print("missing:")
        print(suites.format_missing(o.parsec_home, missing))
    return 0


def cmd_run(o):
    from . import runsuite

    arbrun_argv = None
    if "arbrun" in o.modes:
        try:
            extra = shlex.split(o.arbrun_args)
        except ValueError as e:
            raise UsageError(f"arbparsec run: --arbrun-args: {e}")
        if "--" in extra or "--trace" in extra:
            raise UsageError("arbparsec run: --arbrun-args must not contain '--' or --trace "
                             "(the harness adds them)")
        arbrun_argv = [_find_arbrun(o)] + extra
    try:
        benches, lines, missing = _benches(o)
    except suites.SuiteError as e:
        print(f"arbparsec run: {e}", file=sys.stderr)
        return 2
    if missing:
        print(f"arbparsec run: {len(missing)} PARSEC benchmark(s) cannot run here:\n"
              + suites.format_missing(o.parsec_home, missing), file=sys.stderr)
    if not benches:
        print("arbparsec run: nothing to run", file=sys.stderr)
        return 2
    lines = [f"machine: {machine.describe()}"] + lines + [
        f"size {o.size}, {o.threads} threads, {o.repeat} run(s) per mode, modes {','.join(o.modes)}"]
    if arbrun_argv:
        lines.append("arbrun: " + shlex.join(arbrun_argv) + " --trace FILE -- PROGRAM")
    for name, reason, _fix in missing:
        lines.append(f"not run: {name}: {reason}")
    checks = {b.name: b.describe_check() for b in benches}
    o.out = os.path.abspath(o.out)
    return runsuite.run_command(o, arbrun_argv, benches, lines, checks)


def cmd_colocate(o):
    from . import colocate

    if o.memcached:
        if o.server != "memcached":
            raise UsageError(f"arbparsec colocate: --memcached with --server {o.server}: give "
                             "--server-bin PATH")
        if o.server_bin and o.server_bin != o.memcached:
            raise UsageError("arbparsec colocate: --memcached and --server-bin disagree")
        o.server_bin = o.memcached
    return colocate.main(o, _find_arbrun(o))


def main(argv=None):
    parser = build_parser()
    try:
        o = parser.parse_args(argv)
        if o.command is None:
            parser.print_help()
            return 2
        o.layout = layout.resolve(o.build_dir)
        runner.install_signal_handlers()
        if o.command == "list":
            return cmd_list(o)
        if o.command == "run":
            return cmd_run(o)
        return cmd_colocate(o)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        runner.REGISTRY.kill_all()
        print("arbparsec: interrupted; everything it started was stopped", file=sys.stderr)
        return 130
    except runner.Terminated as e:
        runner.REGISTRY.kill_all()
        print(f"arbparsec: {e}; everything it started was stopped", file=sys.stderr)
        return 143
