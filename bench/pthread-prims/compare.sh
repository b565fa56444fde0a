#!/usr/bin/env bash
# Runs pthread-prims natively and under `arbrun --standalone --` back to back (alternating, so that
# both modes see the same machine load), and prints per operation the median of each mode, the
# speedup under arbrun, and the issue's goal with met / NOT met.
#
# Usage: bench/pthread-prims/compare.sh [--build-dir DIR] [--repeat N] [--seconds S]
#            [--iterations N] [--only NAME[,NAME...]] [--arbrun-args "ARGS"]
#            [--sysbench [--sysbench-threads N] [--sysbench-time T]]
#   --build-dir   the CMake build tree with bin/pthread-prims and bin/arbrun (default <repo>/build)
#   --repeat      runs per mode, alternating native/arbrun; medians are reported (default 3)
#   --seconds     minimum duration of each measurement inside pthread-prims (default 0.2)
#   --iterations  a fixed operation count instead (the smoke test uses tiny ones)
#   --only        benchmarks to run (pthread-prims --list names them)
#   --arbrun-args extra arbrun options, e.g. "--cores 2" (always added: --standalone --stats)
#   --sysbench    also `sysbench threads --threads=N --time=T run`, events/s (default 4 threads, 2 s)
#
# speedup = how many times faster under arbrun (native ns/op / arbrun ns/op, or arbrun ops/s /
# native ops/s). Timings need a quiet machine: on a shared one, compare only runs taken together.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
repeat=3
seconds=0.2
iterations=
only=
arbrun_args=
sysbench=0
sb_threads=4
sb_time=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    --repeat) repeat=${2:?--repeat needs a count}; shift ;;
    --seconds) seconds=${2:?--seconds needs a duration}; shift ;;
    --iterations) iterations=${2:?--iterations needs a count}; shift ;;
    --only) only=${2:?--only needs names}; shift ;;
    --arbrun-args) arbrun_args=${2?--arbrun-args needs a value}; shift ;;
    --sysbench) sysbench=1 ;;
    --sysbench-threads) sb_threads=${2:?--sysbench-threads needs a count}; shift ;;
    --sysbench-time) sb_time=${2:?--sysbench-time needs seconds}; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --repeat needs a positive integer" >&2; exit 2; }

prims=$build/bin/pthread-prims
arbrun=$build/bin/arbrun
for bin in "$prims" "$arbrun"; do
  [[ -x $bin ]] || {
    echo "compare.sh: $bin is missing; build it: cmake --build $build --target pthread-prims arbrun arbrun_preload" >&2
    exit 1
  }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/pthread-prims.XXXXXX")
trap 'rm -rf "$work"' EXIT
prims_args=()
if [[ -n $iterations ]]; then prims_args+=(--iterations "$iterations"); else prims_args+=(--seconds "$seconds"); fi
[[ -n $only ]] && prims_args+=(--only "$only")
# shellcheck disable=SC2206  # word splitting of --arbrun-args is intended
under_arbrun=("$arbrun" --standalone --stats $arbrun_args --)

# One run of `mode` (native | arbrun): appends "mode name value unit" lines to $work/results.
# An arbrun run must show the runtime's --stats line, or the program did not run as user threads.
run_once() {
  local mode=$1
  shift
  local cmd=("$@")
  [[ $mode == arbrun ]] && cmd=("${under_arbrun[@]}" "$@")
  if ! "${cmd[@]}" >"$work/out" 2>"$work/err"; then
    echo "compare.sh: $mode run failed: ${cmd[*]}" >&2
    cat "$work/err" >&2
    exit 1
  fi
  if [[ $mode == arbrun ]] && ! grep -q "^arbrun: stats:" "$work/err"; then
    echo "compare.sh: the arbrun run printed no 'arbrun: stats:' line (runtime not used?):" >&2
    cat "$work/err" >&2
    exit 1
  fi
}

sysbench_once() {
  local mode=$1
  run_once "$mode" sysbench threads --threads="$sb_threads" --time="$sb_time" run
  awk -v mode="$mode" '
    /total time:/ { t = $3; sub(/s$/, "", t) }
    /total number of events:/ { e = $5 }
    END {
      if (t > 0 && e > 0) printf "%s sysbench_threads %.6g events/s\n", mode, e / t
      else { print "compare.sh: cannot read sysbench output" > "/dev/stderr"; exit 1 }
    }' "$work/out" >>"$work/results"
}

echo "== pthread-prims: $repeat runs per mode, alternating; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((i = 1; i <= repeat; i++)); do
  for mode in native arbrun; do
    run_once "$mode" "$prims" "${prims_args[@]}"
    awk -v mode="$mode" 'NF == 3 { print mode, $0 }' "$work/out" >>"$work/results"
    if ((sysbench)); then sysbench_once "$mode"; fi
  done
  echo "   run $i/$repeat done" >&2
done

# Medians per (mode, name), then one row per name with the speedup and the issue's goal.
awk '
  function goal(name) {  # minimum speedup the issue asks for, or "" for none
    if (name == "spawn_join" || name == "condvar_pingpong") return 100
    if (name == "mutex_uncontended") return 1 / 1.3
    if (name == "mutex_contended_4t") return 1
    if (name == "sysbench_threads") return 10
    return ""
  }
  function goaltext(name) {
    if (name == "spawn_join" || name == "condvar_pingpong") return ">= 100x faster"
    if (name == "mutex_uncontended") return "within 1.3x of native"
    if (name == "mutex_contended_4t") return "no slower"
    if (name == "sysbench_threads") return ">= 10x faster"
    return "-"
  }
  function median(key,   n, i, j, t, v) {
    n = count[key]
    for (i = 1; i <= n; i++) v[i] = val[key, i]
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  {
    key = $1 SUBSEP $2
    val[key, ++count[key]] = $3
    unit[$2] = $4
    if (!($2 in seen)) { seen[$2] = 1; order[++names] = $2 }
  }
  END {
    printf "%-20s %14s %14s %-9s %9s  %-22s %s\n", "op", "native", "arbrun", "unit", "speedup", "goal", ""
    for (k = 1; k <= names; k++) {
      name = order[k]
      if (!((("native" SUBSEP name) in count) && (("arbrun" SUBSEP name) in count))) {
        printf "%-20s missing a mode\n", name; bad = 1; continue
      }
      n = median("native" SUBSEP name); a = median("arbrun" SUBSEP name)
      lower = unit[name] == "ns/op"
      speedup = lower ? (a > 0 ? n / a : 0) : (n > 0 ? a / n : 0)
      g = goal(name)
      verdict = g == "" ? "" : (speedup >= g ? "met" : "NOT met")
      printf "%-20s %14.4g %14.4g %-9s %8.2fx  %-22s %s\n", name, n, a, unit[name], speedup, goaltext(name), verdict
    }
    exit bad
  }' "$work/results"
