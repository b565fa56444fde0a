#!/usr/bin/env bash
# Cohort dispatch on a staged thread-per-request server (staged_server.c: three stages, each with
# its own ~20 KiB of code and 16 KiB table, each ending in a blocking call), driven by a closed-loop
# client (client.c, CONNECTIONS connections, one request outstanding each). One run measures, in
# alternation: natively, under `arbrun --standalone --dispatch fifo` and under `--dispatch cohort`
# (plus ARBRUN_ARGS), REPEAT times each; it prints the medians of throughput and p50/p99 latency,
# the cohorts formed (arbrun --stats), and with --cachegrind the simulated I1/D1/LL misses per
# request (valgrind --tool=cachegrind; whole process, and the three stage functions alone).
#
# Usage: bench/cohort/run.sh [--build DIR] [--connections N] [--duration S] [--repeat N]
#            [--io-us US] [--arbrun-args "ARGS"] [--cachegrind REQUESTS]
#   --build        CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build)
#   --connections  client connections = server threads (default 32)
#   --duration     measured seconds per run, after a 1 s warm-up (default 4)
#   --repeat       runs per mode (default 3; 0: only the cachegrind runs)
#   --io-us        each stage's blocking wait, microseconds (default 20)
#   --arbrun-args  extra arbrun options for both arbrun modes, e.g. "--cohort-max 16"
#   --cachegrind   also run each mode under cachegrind for REQUESTS requests (e.g. 3000; slow)
# Goal (issue 18): choose the default dispatch from these numbers. Timings need a quiet machine:
# compare only numbers from one run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
connections=32
duration=4
repeat=3
io_us=20
arbrun_args=
cg_requests=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    --connections) connections=${2:?}; shift ;;
    --duration) duration=${2:?}; shift ;;
    --repeat) repeat=${2:?}; shift ;;
    --io-us) io_us=${2:?}; shift ;;
    --arbrun-args) arbrun_args=${2?}; shift ;;
    --cachegrind) cg_requests=${2:?}; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$connections" "$duration" "$io_us"; do
  [[ $n =~ ^[0-9]+$ && $n -gt 0 ]] || { echo "run.sh: '$n' is not a positive integer" >&2; exit 2; }
done
[[ $repeat =~ ^[0-9]+$ ]] || { echo "run.sh: --repeat '$repeat' is not a count" >&2; exit 2; }
[[ -x $build/bin/arbrun ]] || { echo "run.sh: $build/bin/arbrun not found: build first" >&2; exit 2; }
if (( cg_requests > 0 )) && ! command -v valgrind >/dev/null; then
  echo "run.sh: --cachegrind needs valgrind (apt-get install valgrind)" >&2; exit 2
fi

# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
bench_scratch cohort

cc -O2 -pthread -o "$work/staged_server" "$here/staged_server.c"
cc -O2 -o "$work/client" "$here/client.c"

# server_cmd MODE: the command line that starts the server in MODE (native, fifo, cohort).
# cg_arbrun_args: extra arbrun options for the cachegrind runs.
cg_arbrun_args=
server_cmd() {
  local mode=$1
  if [[ $mode == native ]]; then
    echo "$work/staged_server --io-us $io_us"
  else
    echo "$build/bin/arbrun --standalone --stats --dispatch $mode $arbrun_args $cg_arbrun_args -- $work/staged_server --io-us $io_us"
  fi
}

# start_server PREFIX MODE: starts it (PREFIX: e.g. valgrind's command), waits for its port.
start_server() {
  local prefix=$1 mode=$2
  : >"$work/port"
  # shellcheck disable=SC2086  # the command lines are meant to split
  $prefix $(server_cmd "$mode") >"$work/port" 2>"$work/server.err" &
  server=$!
  for _ in $(seq 600); do
    grep -q '^port ' "$work/port" && return 0
    kill -0 "$server" 2>/dev/null || break
    sleep 0.05
  done
  echo "run.sh: the $mode server did not start: $(tail -2 "$work/server.err")" >&2
  exit 1
}

stop_server() {
  kill -TERM "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=
}

# run_once MODE: prints "RPS P50 P99 COHORTS MEAN" for one run.
run_once() {
  local mode=$1 port out
  start_server "" "$mode"
  port=$(awk '/^port /{print $2}' "$work/port")
  out=$("$work/client" --port "$port" --connections "$connections" --duration "$duration" \
        --warmup 1) || { echo "run.sh: client failed" >&2; exit 1; }
  stop_server
  local cohorts="- -"
  if [[ $mode != native ]]; then
    cohorts=$(sed -n 's/.*cohorts formed \([0-9]*\) (mean size \([0-9.]*\)).*/\1 \2/p' "$work/server.err")
    [[ -n $cohorts ]] || cohorts="? ?"
  fi
  awk -v c="$cohorts" '{ for (i = 1; i < NF; i++) { if ($i == "rps") r = $(i+1);
      if ($i == "p50_us") p = $(i+1); if ($i == "p99_us") q = $(i+1) } print r, p, q, c }' <<<"$out"
}

modes=(native fifo cohort)
if (( repeat > 0 )); then
echo "== staged server: $connections connections, io ${io_us} us, ${duration} s x $repeat per mode;" \
     "arbrun --standalone $arbrun_args; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for m in "${modes[@]}"; do : >"$work/$m"; done
for ((i = 1; i <= repeat; i++)); do
  for m in "${modes[@]}"; do run_once "$m" >>"$work/$m"; done
  echo "   run $i/$repeat done" >&2
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-8s %10s %10s %10s %12s %10s\n' mode "req/s" "p50 (us)" "p99 (us)" "cohorts" "mean size"
for m in "${modes[@]}"; do
  row=()
  for k in 1 2 3 4 5; do
    if [[ $m == native && $k -ge 4 ]]; then row+=(-); else row+=("$(cut -d' ' -f$k "$work/$m" | median)"); fi
  done
  printf '%-8s %10s %10s %10s %12s %10s\n' "$m" "${row[@]}"
done
echo "   (all runs: $(for m in "${modes[@]}"; do printf '%s: %s; ' "$m" "$(cut -d' ' -f1 "$work/$m" | tr '\n' ' ')"; done))"
fi

(( cg_requests > 0 )) || exit 0
# Cachegrind: each mode serves cg_requests requests (after 200 of warm-up) under valgrind, which
# runs one thread at a time and simulates one cache hierarchy (sizes below). Misses per
# request: whole process (start-up included, the same request count for every mode) and in the
# three stage functions alone (what cohorts are meant to keep in cache).
# valgrind runs its own system calls from outside libc, which syscall user dispatch would trap:
# --native-syscalls. Valgrind runs one thread at a time through one simulated cache, so arbrun runs
# on one core (--cores 1): the cache then sees exactly one core's dispatch order. Valgrind slows
# the program some 50-100x while sleeps and the TSC keep real time, so the cohort time bound is
# scaled up as much (--cohort-max-us 10000); the thread bound (--cohort-max) is unchanged.
# Caches as a common x86 core's L1s (32 KiB, 8-way), with a 1 MiB L2 as the last level.
cg_arbrun_args="--native-syscalls --cores 1 --cohort-max-us 10000"
cg_caches="--I1=32768,8,64 --D1=32768,8,64 --LL=1048576,16,64"
echo "== cachegrind: $cg_requests requests per mode, $connections connections, $cg_caches"
printf '%-8s %10s %10s %10s %14s %14s %14s\n' mode "I1 mr/req" "D1 mr/req" "LL mr/req" "stage I1/req" "stage D1/req" "cohorts(mean)"
for m in "${modes[@]}"; do
  cg=$work/cg.$m
  start_server "valgrind --tool=cachegrind --cache-sim=yes $cg_caches --trace-children=yes --cachegrind-out-file=$cg.%p" "$m"
  port=$(awk '/^port /{print $2}' "$work/port")
  "$work/client" --port "$port" --connections "$connections" --warmup 0 --duration 1 \
      --requests 200 >/dev/null
  "$work/client" --port "$port" --connections "$connections" --warmup 0 --duration 1 \
      --requests "$cg_requests" >/dev/null
  stop_server
  # The server's own output file (arbrun's, when traced, is the one without the stage functions).
  file=$(grep -l parseStage "$cg".* | head -1)
  cg_annotate --show=I1mr,D1mr,D1mw,ILmr,DLmr,DLmw "$file" >"$cg.txt" 2>/dev/null ||
    cg_annotate "$file" >"$cg.txt"
  cm=$(sed -n 's/.*cohorts formed \([0-9]*\) (mean size \([0-9.]*\)).*/\1(\2)/p' "$work/server.err" | tail -1)
  awk -v n="$cg_requests" -v mode="$m" -v cm="${cm:--}" '
    function num(s) { gsub(/,/, "", s); return s + 0 }
    /PROGRAM TOTALS/ { i1 = num($1); d1 = num($2) + num($3); ll = num($4) + num($5) + num($6) }
    /parseStage|lookupStage|replyStage/ { si += num($1); sd += num($2) + num($3) }
    END { printf "%-8s %10.1f %10.1f %10.1f %14.1f %14.1f %14s\n", mode, i1 / n, d1 / n, ll / n, si / n, sd / n, cm }
  ' "$cg.txt"
done
