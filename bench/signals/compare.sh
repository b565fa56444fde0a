#!/usr/bin/env bash
# Signal handler latency, natively and under `arbrun --standalone`: signal_latency.c's round trip
# (a child sigqueue()s the parent and spins until the parent's handler has answered in shared
# memory) for SIGRTMIN and SIGUSR1, while the parent's only thread waits in waitpid, in a pipe
# read, or computes, and, for SIGRTMIN, computes reading the clock (clock_gettime in the loop).
# Spinning rows need two free CPUs, or the figures include the scheduler's. Per row, the median
# over RUNS processes (default 3) of each process's p50 and p99 round trip, in microseconds.
# Prints the load average: on a shared machine compare only numbers taken together.
#
# Usage: bench/signals/compare.sh [--build DIR] [-n ROUNDS] [-r RUNS]
#   --build DIR   the CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build)
#   -n ROUNDS     round trips per process (default 3000)
#   -r RUNS       processes per mode and row (default 3)
# A run that fails or passes 60 s counts as failed (reported, not in the medians).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
rounds=3000
runs=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    -n) rounds=${2:?-n needs a number}; shift ;;
    -r) runs=${2:?-r needs a number}; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $rounds =~ ^[1-9][0-9]*$ && $rounds -le 1000000 ]] ||
  { echo "compare.sh: -n must be a number of round trips from 1 to 1000000" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: -r must be a positive number of runs" >&2; exit 2; }
arbrun=$build/bin/arbrun
[[ -x $arbrun ]] || { echo "compare.sh: $arbrun is missing (cmake --build $build --target arbrun arbrun_preload)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-signals.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/signal_latency" "$here/signal_latency.c"

rows=("rt waitpid" "rt read" "rt spin" "rt clock" "usr1 waitpid" "usr1 read" "usr1 spin")
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < runs; ++i)); do
  for row in "${rows[@]}"; do
    read -r sig how <<<"$row"
    for mode in native arbrun; do
      cmd=("$tmp/signal_latency" "$sig" "$how" "$rounds")
      [[ $mode == arbrun ]] && cmd=("$arbrun" --standalone -- "${cmd[@]}")
      out=$tmp/$mode-$sig-$how
      # The child exits once it has printed, the parent then; a child whose parent `timeout`
      # ended gives up after 10 s without an answer.
      if ! timeout -k 5 60 "${cmd[@]}" >>"$out" 2>/dev/null; then
        echo "  $mode, $sig $how: a run failed or timed out" >&2
      fi
    done
  done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
median() {  # file key
  [[ -s $1 ]] || { echo n/a; return; }
  sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
printf '%-8s %-8s %12s %12s %12s %12s\n' signal wait native_p50 native_p99 arbrun_p50 arbrun_p99
for row in "${rows[@]}"; do
  read -r sig how <<<"$row"
  printf '%-8s %-8s %12s %12s %12s %12s\n' "$sig" "$how" \
    "$(median "$tmp/native-$sig-$how" p50_us)" "$(median "$tmp/native-$sig-$how" p99_us)" \
    "$(median "$tmp/arbrun-$sig-$how" p50_us)" "$(median "$tmp/arbrun-$sig-$how" p99_us)"
done
