#!/usr/bin/env bash
# Waiting outside libc, natively and under `arbrun --standalone`: programs whose threads wait in
# their own `syscall` instructions or in user-space spin loops, which arbrun cannot see through
# its interposed libc symbols. One run prints, per row, the native value, the arbrun value, the
# ratio and the goal:
#   openmp      omp_regions.c: 4 libgomp threads, `parallel for reduction` over 20,000 iterations
#               per region; us per region; goal: ratio <= 1.2
#   raw-futex   raw_futex_rtt.c: FUTEX_WAIT/WAKE round trips between two threads by inline
#               `syscall`; us per round trip; goal: <= 2 us under arbrun (absolute)
#   spin        spin_pass.c: 4 threads pass a token, waiting in pause loops; us per handoff;
#               goal: ratio <= 1.5
#   redis-set   redis-server --io-threads 4 (Debian's; the row is skipped when it is missing),
#   redis-get   driven by redis-benchmark -n 100000 -q -t set,get on 127.0.0.1; requests/s;
#               goal: ratio <= 1.2
# ratio = arbrun cost / native cost: time per operation under arbrun / natively, or native req/s
# / arbrun req/s (above 1: slower under arbrun). A run that fails or passes its time limit shows
# n/a. Timings need a quiet machine: compare only numbers taken together.
#
# Usage: bench/waiting/compare.sh [--build DIR]
#   --build DIR   the CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build;
#                 build them: cmake --build DIR --target arbrun arbrun_preload)
# The C programs are built with cc into a temporary directory; every process the script starts
# is stopped on exit or interrupt, and the temporary directory is removed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
arbrun=$build/bin/arbrun
[[ -x $arbrun ]] || {
  echo "compare.sh: $arbrun is missing; build it: cmake --build $build --target arbrun arbrun_preload" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/waiting-bench.XXXXXX")
server_pid=  # the redis server while one runs (our child: arbrun execs the program)
child_pid=   # the `timeout` process of the measurement running now (its own process group)

# Stops what is still running (timeout passes the signal on to its program) and removes the
# temporary directory.
cleanup() {
  local pid
  for pid in $child_pid $server_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  child_pid=
  server_pid=
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for prog in omp_regions raw_futex_rtt spin_pass; do
  flags=(-O2 -pthread -I "$root/compat-tests/common")  # raw_syscall.h
  [[ $prog == omp_regions ]] && flags+=(-fopenmp)
  cc "${flags[@]}" -o "$work/$prog" "$here/$prog.c"
done

# limited LIMIT OUT ERR CMD...: runs CMD under `timeout` with stdout to OUT and stderr to ERR, in
# the background so that an interrupt reaches cleanup at once (timeout sits in its own process
# group, out of reach of the terminal's signals); returns the command's status.
limited() {
  local limit=$1 out=$2 err=$3
  shift 3
  timeout -k 5 "$limit" "$@" >"$out" 2>"$err" &
  child_pid=$!
  local rc=0
  wait "$child_pid" || rc=$?
  child_pid=
  return "$rc"
}

# run_metric MODE PROG: runs a benchmark program natively or under arbrun (60 s limit) and sets
# METRIC to the number on its result line, or n/a when it failed or timed out.
run_metric() {
  local mode=$1 prog=$2 cmd=("$work/$2")
  [[ $mode == arbrun ]] && cmd=("$arbrun" --standalone -- "$work/$prog")
  METRIC=n/a
  if limited 60 "$work/$prog.$mode.out" "$work/$prog.$mode.err" "${cmd[@]}"; then
    METRIC=$(awk -v p="$prog" '$1 == p { v = $3 } END { print v == "" ? "n/a" : v }' \
             "$work/$prog.$mode.out")
  fi
}

# free_port: a TCP port on 127.0.0.1 nobody listens on now (the kernel's choice for port 0).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# redis_rate TEST FILE: the requests per second of one redis-benchmark -q test: its final line,
# else the last "overall" progress figure (-q rewrites progress lines with carriage returns).
redis_rate() {
  tr '\r' '\n' <"$2" | awk -v t="$1:" '
    $1 == t && $3 == "requests" { final = $2 }
    $1 == t && /overall:/ { s = $0; sub(/.*\(overall: /, "", s); sub(/\).*/, "", s); partial = s }
    END { print final != "" ? final : (partial != "" ? partial : "n/a") }'
}

# redis_run MODE: starts redis-server (natively or under arbrun), waits up to 20 s for it to
# answer, runs redis-benchmark against it (120 s limit), stops it, and sets REDIS_SET and
# REDIS_GET to the requests per second (n/a for what did not come). A test cut off by the limit
# gets its last progress figure ("overall: N"), and REDIS_NOTE says so.
redis_run() {
  local mode=$1 port
  port=$(free_port)
  local cmd=(redis-server --io-threads 4 --save '' --appendonly no --port "$port" --bind 127.0.0.1
             --dir "$work" --logfile "$work/redis.$mode.log" --daemonize no)
  [[ $mode == arbrun ]] && cmd=("$arbrun" --standalone -- "${cmd[@]}")
  "${cmd[@]}" >/dev/null 2>&1 &
  server_pid=$!
  local up=0
  for _ in $(seq 200); do
    if [[ $(timeout 2 redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then up=1; break; fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  REDIS_SET=n/a
  REDIS_GET=n/a
  REDIS_NOTE=
  if ((up)); then
    local out=$work/redis-benchmark.$mode.out
    if ! limited 120 "$out" /dev/null redis-benchmark -h 127.0.0.1 -p "$port" -n 100000 -q -t set,get; then
      REDIS_NOTE="redis ($mode): redis-benchmark did not finish within 120 s; figures from its last progress line"
    fi
    REDIS_SET=$(redis_rate SET "$out")
    REDIS_GET=$(redis_rate GET "$out")
  else
    REDIS_NOTE="redis ($mode): the server did not answer within 20 s"
  fi
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

# row NAME UNIT NATIVE ARBRUN KIND GOAL: prints one table row. KIND "time" (lower is better),
# "rate" (higher is better) or "abs" (the goal bounds the arbrun value itself, in UNIT).
row() {
  local name=$1 unit=$2 native=$3 arb=$4 kind=$5 goal=$6
  awk -v n="$name" -v u="$unit" -v a="$native" -v b="$arb" -v k="$kind" -v g="$goal" 'BEGIN {
    ratio = "n/a"; met = "n/a"
    if (a != "n/a" && b != "n/a" && a + 0 > 0 && b + 0 > 0) {
      r = (k == "rate") ? a / b : b / a
      ratio = sprintf("%.2fx", r)
      if (k == "abs") met = (b + 0 <= g + 0) ? "met" : "NOT met"
      else met = (r <= g + 0) ? "met" : "NOT met"
    }
    if (k == "abs") goal = sprintf("<= %s %s", g, u); else goal = sprintf("ratio <= %s", g)
    printf "%-10s %-12s %12s %12s %8s  %-14s %s\n", n, u, a, b, ratio, goal, met
  }'
}

echo "waiting outside libc: native vs arbrun --standalone ($(nproc) CPUs, arbrun: $arbrun)"
printf "%-10s %-12s %12s %12s %8s  %-14s %s\n" row unit native arbrun ratio goal status
# metric_row NAME UNIT PROG KIND GOAL: one program natively, then under arbrun, as one row.
metric_row() {
  local native
  run_metric native "$3"
  native=$METRIC
  run_metric arbrun "$3"
  row "$1" "$2" "$native" "$METRIC" "$4" "$5"
}

metric_row openmp "us/region" omp_regions time 1.2
metric_row raw-futex "us/trip" raw_futex_rtt abs 2
metric_row spin "us/handoff" spin_pass time 1.5
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null &&
   command -v redis-cli >/dev/null; then
  redis_run native
  nset=$REDIS_SET
  nget=$REDIS_GET
  notes=$REDIS_NOTE
  redis_run arbrun
  row redis-set "req/s" "$nset" "$REDIS_SET" rate 1.2
  row redis-get "req/s" "$nget" "$REDIS_GET" rate 1.2
  for note in "$notes" "$REDIS_NOTE"; do [[ -z $note ]] || echo "$note"; done
else
  echo "redis: redis-server/redis-benchmark/redis-cli not installed (apt-get install -y redis-server redis-tools); row skipped"
fi
