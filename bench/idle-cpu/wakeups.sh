#!/usr/bin/env bash
# What a process that waits costs, natively and under `arbrun --standalone`: waiting_program.c
# (two threads blocked reading a pipe while main sleeps SECONDS) reports its own context switches
# and CPU time, every thread included (the runtime's carriers and monitor under arbrun). Natively a
# waiting process is not scheduled at all; under arbrun its runtime should cost about as little.
#
# Usage: bench/idle-cpu/wakeups.sh [--build-dir DIR] [--baseline DIR] [--seconds S]
#   --build-dir  CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build)
#   --baseline   another such tree (e.g. main's): its arbrun runs too, as mode "baseline"
#   --seconds    how long the program waits (default 3)
# Prints one row per mode: voluntary and involuntary context switches, and per second of waiting.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
baseline=
seconds=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    --baseline) baseline=${2:?--baseline needs a directory}; shift ;;
    --seconds) seconds=${2:?--seconds needs a number}; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

tmp=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-wakeups.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread -o "$tmp/waiting_program" "$here/waiting_program.c"

printf '%-9s %10s %12s %14s %8s\n' mode voluntary involuntary "voluntary/s" "CPU ms"
row() {  # MODE COMMAND...: runs it, prints its row
  local mode=$1 out v i c
  shift
  out=$("$@" "$tmp/waiting_program" "$seconds" 2>"$tmp/err") || {
    echo "wakeups.sh: $mode run failed:" >&2
    cat "$tmp/err" >&2
    exit 1
  }
  read -r _ v _ i _ c <<<"$out"
  [[ $v =~ ^[0-9]+$ && $i =~ ^[0-9]+$ && $c =~ ^[0-9]+$ ]] || { echo "wakeups.sh: $mode printed '$out'" >&2; exit 1; }
  awk -v m="$mode" -v v="$v" -v i="$i" -v c="$c" -v s="$seconds" \
    'BEGIN { printf "%-9s %10d %12d %14.1f %8.1f\n", m, v, i, v / s, c / 1000 }'
}
row native env
row arbrun "$build/bin/arbrun" --standalone --
if [[ -n $baseline ]]; then row baseline "$baseline/bin/arbrun" --standalone --; fi
