#!/usr/bin/env bash
# Cohort dispatch on programs not written for it, natively, under `arbrun --standalone --dispatch
# fifo` and under `--dispatch cohort`, modes alternating, REPEAT runs each, medians printed:
#   pipeline   the builtin dedup/ferret pattern (parsec-harness/workloads/pipeline.c: reader ->
#              hashing pool -> compressing pool -> writer over bounded condvar queues), --threads
#              THREADS --size SIZE; wall seconds (lower is better)
#   memcached  Debian's memcached -t 4 under arbloadgen's open-loop load (RATE req/s, 8
#              connections, DURATION s after a 1 s warm-up, as bench/idle-cpu/run.sh drives it);
#              p50/p99 latency in us (skipped when memcached is missing)
# Usage: bench/cohort/patterns.sh [--build DIR] [--repeat N] [--threads N] [--size SIZE]
#            [--rate R] [--duration S]
#   --build DIR  CMake build tree with bin/arbrun, lib/libarbrun.so, bin/arbloadgen and
#                bin/parsec-workloads/pipeline (default <repo>/build)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
repeat=5
threads=4
size=simsmall
rate=20000
duration=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?}; shift ;;
    --repeat) repeat=${2:?}; shift ;;
    --threads) threads=${2:?}; shift ;;
    --size) size=${2:?}; shift ;;
    --rate) rate=${2:?}; shift ;;
    --duration) duration=${2:?}; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "patterns.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for b in arbrun arbloadgen parsec-workloads/pipeline; do
  [[ -x $build/bin/$b ]] || { echo "patterns.sh: $build/bin/$b not found: build first" >&2; exit 2; }
done
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
bench_scratch cohort-patterns

modes=(native fifo cohort)
prefix() {  # prefix MODE: the words that run a program in MODE
  [[ $1 == native ]] || echo "$build/bin/arbrun --standalone --stats --dispatch $1 --"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cohorts() {  # cohorts FILE: "FORMED MEAN" from arbrun's --stats line, or "- -"
  sed -n 's/.*cohorts formed \([0-9]*\) (mean size \([0-9.]*\)).*/\1 \2/p' "$1" | tail -1 | grep . || echo "- -"
}

echo "== pipeline --threads $threads --size $size, $repeat runs per mode; load $(cut -d' ' -f1-3 /proc/loadavg)"
for m in "${modes[@]}"; do : >"$work/pipe.$m"; done
for ((i = 1; i <= repeat; i++)); do
  for m in "${modes[@]}"; do
    start=$(date +%s.%N)
    # shellcheck disable=SC2046  # the prefix is meant to split
    $(prefix "$m") "$build/bin/parsec-workloads/pipeline" --threads "$threads" --size "$size" \
        >"$work/out" 2>"$work/err" || { echo "patterns.sh: pipeline failed ($m)" >&2; exit 1; }
    end=$(date +%s.%N)
    echo "$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }') $(cohorts "$work/err")" \
        >>"$work/pipe.$m"
  done
done
printf '%-8s %10s %12s %10s\n' mode "wall (s)" cohorts "mean size"
for m in "${modes[@]}"; do
  printf '%-8s %10s %12s %10s\n' "$m" "$(cut -d' ' -f1 "$work/pipe.$m" | median)" \
      "$(cut -d' ' -f2 "$work/pipe.$m" | median)" "$(cut -d' ' -f3 "$work/pipe.$m" | median)"
done

command -v memcached >/dev/null || { echo "(memcached missing: skipped)"; exit 0; }
echo "== memcached -t 4, $rate req/s open loop (arbloadgen), 8 connections, ${duration} s x $repeat per mode"
mc_once() {  # mc_once MODE: "P50 P99 FORMED MEAN"
  local m=$1 port started=0
  local -a cmd=(memcached -t 4 -l 127.0.0.1 -U 0 -c 1024)
  [[ $(id -u) -eq 0 ]] && cmd+=(-u root)
  # shellcheck disable=SC2046  # the prefix is meant to split
  start_on_free_port $(prefix "$m") "${cmd[@]}" || { echo "patterns.sh: memcached did not start" >&2; exit 1; }
  "$build/bin/arbloadgen" --port "$port" --rate "$rate" --duration 1 --connections 8 >/dev/null 2>&1 || true
  "$build/bin/arbloadgen" --port "$port" --rate "$rate" --duration "$duration" --connections 8 \
      --drain 0.5 >"$work/load.out" 2>&1 || { echo "patterns.sh: arbloadgen failed" >&2; exit 1; }
  kill -TERM "$server"; wait "$server" 2>/dev/null || true
  server=
  echo "$(awk '/^arbloadgen: sent/ { for (i = 1; i < NF; i++) { if ($i == "p50_us") p = $(i+1);
      if ($i == "p99_us") q = $(i+1) } print p, q }' "$work/load.out") $(cohorts "$work/server.err")"
}
for m in "${modes[@]}"; do : >"$work/mc.$m"; done
for ((i = 1; i <= repeat; i++)); do
  for m in "${modes[@]}"; do mc_once "$m" >>"$work/mc.$m"; done
done
printf '%-8s %10s %10s %12s %10s\n' mode "p50 (us)" "p99 (us)" cohorts "mean size"
for m in "${modes[@]}"; do
  printf '%-8s %10s %10s %12s %10s\n' "$m" "$(cut -d' ' -f1 "$work/mc.$m" | median)" \
      "$(cut -d' ' -f2 "$work/mc.$m" | median)" "$(cut -d' ' -f3 "$work/mc.$m" | median)" \
      "$(cut -d' ' -f4 "$work/mc.$m" | median)"
done
