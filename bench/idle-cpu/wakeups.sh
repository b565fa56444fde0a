#!/usr/bin/env bash
# What a process that waits costs, natively and under arbrun (standalone or with an arbiter):
# waiting_program.c (two threads blocked reading a pipe while main sleeps SECONDS) reports its own
# context switches and CPU time, every thread included (the runtime's carriers, monitor and, with
# an arbiter, release watcher and request sender under arbrun). Natively a
# waiting process is not scheduled at all; under arbrun its runtime should cost about as little.
#
# Usage: bench/idle-cpu/wakeups.sh [--build-dir DIR] [--baseline DIR] [--seconds S]
#            [--backend standalone|fake|cgroup-v1|cgroup-v2]
#   --build-dir  CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build)
#   --baseline   another such tree (e.g. main's): its arbrun runs too, as mode "baseline"
#   --seconds    how long the program waits (default 3)
#   --backend    standalone (default: arbrun --standalone) or a core-arbiter backend: the script
#                starts the build's core-arbiter (fake: CPUs 0-3, pins nothing; the cgroup
#                backends: CPUs 0 and 1, root only) and runs arbrun --arbiter against it; the
#                arbiter and its cpusets are removed on exit
# Prints one row per mode: voluntary and involuntary context switches, and per second of waiting.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
baseline=
seconds=3
backend=standalone
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    --baseline) baseline=${2:?--baseline needs a directory}; shift ;;
    --seconds) seconds=${2:?--seconds needs a number}; shift ;;
    --backend) backend=${2:?--backend needs standalone, fake, cgroup-v1 or cgroup-v2}; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "wakeups.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "wakeups.sh: --seconds needs a positive integer" >&2; exit 2; }
[[ -x $build/bin/arbrun ]] || { echo "wakeups.sh: $build/bin/arbrun not found: build first" >&2; exit 2; }
if [[ -n $baseline && ! -x $baseline/bin/arbrun ]]; then
  echo "wakeups.sh: $baseline/bin/arbrun not found" >&2
  exit 2
fi

# shellcheck source=../lib/server.sh
source "$here/../lib/server.sh"
bench_check_backend wakeups.sh "$backend"
bench_scratch wakeups
cc -O2 -pthread -o "$work/waiting_program" "$here/waiting_program.c"
mode_args=(--standalone)
if [[ $backend != standalone ]]; then
  bench_start_arbiter wakeups.sh "$backend" "$build"
  mode_args=("${arbiter_args[@]}")
fi

printf '%-9s %10s %12s %14s %8s\n' mode voluntary involuntary "voluntary/s" "CPU ms"
row() {  # MODE COMMAND...: runs it, prints its row
  local mode=$1 out v i c
  shift
  out=$("$@" "$work/waiting_program" "$seconds" 2>"$work/err") || {
    echo "wakeups.sh: $mode run failed:" >&2
    cat "$work/err" >&2
    exit 1
  }
  read -r _ v _ i _ c <<<"$out"
  [[ $v =~ ^[0-9]+$ && $i =~ ^[0-9]+$ && $c =~ ^[0-9]+$ ]] || { echo "wakeups.sh: $mode printed '$out'" >&2; exit 1; }
  awk -v m="$mode" -v v="$v" -v i="$i" -v c="$c" -v s="$seconds" \
    'BEGIN { printf "%-9s %10d %12d %14.1f %8.1f\n", m, v, i, v / s, c / 1000 }'
}
row native env
row arbrun "$build/bin/arbrun" "${mode_args[@]}" --
if [[ -n $baseline ]]; then row baseline "$baseline/bin/arbrun" "${mode_args[@]}" --; fi
