#!/usr/bin/env bash
# The two core estimators on the same bursty open-loop workload: a private core-arbiter (fake
# backend: nothing on the host is pinned or moved) grants cores to `bursty` (a server-like program:
# Poisson arrivals alternating between a low and a high rate, a pool of workers computing each
# request) under arbrun with --estimator arachne, then fast. Reports the request latency (p50,
# p99, p99.9 from bursty itself, open loop) and the cores the process held on average (from
# arbrun --trace), for each estimator.
#
# Usage: bench/estimators/compare.sh [--build-dir DIR] [--seconds S] [--low R] [--high R]
#            [--period-ms MS] [--service-us US] [--workers N] [--cpus LIST]
# Defaults: 4 s, 1000 and 12000 requests/s alternating every 200 ms, 100 us of work each, 8
# workers, CPUs 0-2 (two managed cores: the high rate needs ~1.2 cores). --cpus 0-4 gives four.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
seconds=4 low=1000 high=12000 period=200 service=100 workers=8 cpus=0-2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    --seconds) seconds=${2:?--seconds needs a value}; shift ;;
    --low) low=${2:?--low needs a rate}; shift ;;
    --high) high=${2:?--high needs a rate}; shift ;;
    --period-ms) period=${2:?--period-ms needs a value}; shift ;;
    --service-us) service=${2:?--service-us needs a value}; shift ;;
    --workers) workers=${2:?--workers needs a count}; shift ;;
    --cpus) cpus=${2:?--cpus needs a list}; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
bin=$build/bin
for b in arbrun core-arbiter bursty; do
  [[ -x $bin/$b ]] || { echo "compare.sh: $bin/$b not found: build first (scripts/build.sh release)" >&2; exit 2; }
done
# shellcheck source=../lib/server.sh
source "$root/bench/lib/server.sh"  # bench_tmp, bench_wait_arbiter
work=$(mktemp -d "$(bench_tmp)/arbrun-estimators.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Average cores held over the run, from the trace's grant/release rows.
cores_held() {
  awk -F, 'NR > 1 {
      t = $1 + 0
      if (started) area += held * (t - last)
      last = t; started = 1
      if ($2 == "grant") held++
      else if ($2 == "release") held--
    }
    END { printf "%.2f", (last > 0 ? area / last : 0) }' "$1"
}

# run ESTIMATOR: one arbiter, one bursty tenant; prints a table row.
run() {
  local estimator=$1 dir=$work/$1
  mkdir -p "$dir/cg"
  "$bin/core-arbiter" --backend fake --cgroup-root "$dir/cg" --cpus "$cpus" --reserve 1 \
      --socket "$dir/arb.sock" --log-level warn 2>"$dir/arbiter.log" &
  local arbiter=$!
  pids+=("$arbiter")
  bench_wait_arbiter compare.sh "$dir/arb.sock" "$dir/arbiter.log"
  local out
  out=$("$bin/arbrun" --arbiter "$dir/arb.sock" --priority 0 --estimator "$estimator" \
        --trace "$dir/trace.csv" -- "$bin/bursty" "$low" "$high" "$period" "$service" "$workers" \
        "$seconds" 2>"$dir/err") || { echo "compare.sh: bursty failed ($estimator): $(tail -3 "$dir/err")" >&2; exit 1; }
  read -r _ _ n _ dropped _ p50 _ p99 _ p999 <<<"$out"
  local requests
  requests=$(grep -c ',request,' "$dir/trace.csv" || true)
  printf '%-9s %9s %9s %9s %9s %11s %9s\n' "$estimator" "$n" "$p50" "$p99" "$p999" \
      "$(cores_held "$dir/trace.csv")" "$requests"
  kill "$arbiter" 2>/dev/null || true
  wait "$arbiter" 2>/dev/null || true
}

echo "== estimators: bursty $low/$high req/s every $period ms, $service us each, $workers workers," \
     "$seconds s; CPUs $cpus (fake backend); load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %9s %9s %9s %9s %11s %9s\n' estimator requests "p50 us" "p99 us" "p99.9 us" \
    "avg cores" "changes"
run arachne
run fast
