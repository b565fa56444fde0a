#!/usr/bin/env bash
# A thread-per-connection server, natively and under `arbrun --standalone`: conn_rr.c's server
# (one thread per connection, blocking read() of each request, write() of the answer) against its
# client (native, CONNS connections in a closed loop) on 127.0.0.1 for SECONDS per run. Per mode,
# the medians over RUNS runs of the time per round trip as the client sees it and of the server's
# CPU (user + system) per round trip; then arbrun's ratios to native. Modes alternate within each
# run, so all see the same machine; compare only figures from one invocation.
#
# Usage: bench/conn-threads/compare.sh [--build DIR] [--baseline DIR] [-c CONNS] [-d SECONDS]
#                                      [-s SIZE] [-r RUNS] [--placement free|split]
#   --build DIR     the CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build)
#   --baseline DIR  another such tree (say, main's): its arbrun runs too, as mode "baseline"
#   -c CONNS        connections, one server thread each (default 4; 1-64)
#   -d SECONDS      measured seconds per run (default 3)
#   -s SIZE         bytes per request and per answer (default 64; 1-65536)
#   -r RUNS         runs per mode (default 3)
#   --placement     free (default): the kernel places server and client; split: the server on the
#                   first CPU this script may use (so arbrun runs it on one core), the client on the
#                   second, as a server with its clients elsewhere (needs two CPUs). On a small
#                   host, free placement measures how the server's threads share CPUs with the
#                   client's as much as the server itself.
# Every server the script starts exits when its client closes (or is stopped at exit, on error or
# interrupt); the temporary directory is removed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
baseline=
conns=4
seconds=3
size=64
runs=3
placement=free
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    --baseline) baseline=${2:?--baseline needs a directory}; shift ;;
    -c) conns=${2:?-c needs a number}; shift ;;
    -d) seconds=${2:?-d needs seconds}; shift ;;
    -s) size=${2:?-s needs a number of bytes}; shift ;;
    -r) runs=${2:?-r needs a number}; shift ;;
    --placement) placement=${2:?--placement needs free or split}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $conns =~ ^[1-9][0-9]*$ && $conns -le 64 ]] || { echo "compare.sh: -c must be 1 to 64 connections" >&2; exit 2; }
[[ $seconds =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] && awk -v s="$seconds" 'BEGIN { exit !(s > 0 && s <= 600) }' ||
  { echo "compare.sh: -d must be seconds above 0, at most 600" >&2; exit 2; }
[[ $size =~ ^[1-9][0-9]*$ && $size -le 65536 ]] || { echo "compare.sh: -s must be 1 to 65536 bytes" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ && $runs -le 100 ]] || { echo "compare.sh: -r must be 1 to 100 runs" >&2; exit 2; }
server_pin=() client_pin=()
case $placement in
  free) ;;
  split)
    mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
    (( ${#cpus[@]} >= 2 )) ||
      { echo "compare.sh: --placement split needs two CPUs; this script may use only CPU ${cpus[0]}" >&2; exit 2; }
    server_pin=(taskset -c "${cpus[0]}") client_pin=(taskset -c "${cpus[1]}") ;;
  *) echo "compare.sh: --placement must be free or split" >&2; exit 2 ;;
esac
modes=(native arbrun)
for tree in "$build" ${baseline:+"$baseline"}; do
  [[ -x $tree/bin/arbrun ]] || { echo "compare.sh: $tree/bin/arbrun is missing (cmake --build $tree --target arbrun arbrun_preload)" >&2; exit 1; }
done
[[ -n $baseline ]] && modes=(native baseline arbrun)

# shellcheck source=../lib/server.sh
source "$here/../lib/server.sh"
# shellcheck source=../lib/stats.sh
source "$here/../lib/stats.sh"
# shellcheck source=../lib/host.sh
source "$here/../lib/host.sh"
bench_scratch conn-threads  # $work, removed on exit with the server in $server
cc -O2 -pthread -o "$work/conn_rr" "$here/conn_rr.c"

# run_once MODE: appends "US_PER_RT RT SERVER_CPU_US" to $work/MODE, or reports a failure.
run_once() {
  local mode=$1 port_file=$work/port
  rm -f "$port_file"
  local -a cmd=("$work/conn_rr" server "$port_file" "$conns" "$size")
  [[ $mode == arbrun ]] && cmd=("$build/bin/arbrun" --standalone -- "${cmd[@]}")
  [[ $mode == baseline ]] && cmd=("$baseline/bin/arbrun" --standalone -- "${cmd[@]}")
  cmd=(${server_pin[@]+"${server_pin[@]}"} "${cmd[@]}")
  "${cmd[@]}" >"$work/server.out" 2>"$work/server.err" &
  server=$!
  local waited=0
  until [[ -s $port_file ]]; do  # the server writes it (by rename) once it listens
    if ! kill -0 "$server" 2>/dev/null || ((waited++ > 1000)); then
      echo "  $mode: the server did not start: $(tail -2 "$work/server.err")" >&2
      kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; server=
      return
    fi
    sleep 0.01
  done
  local client_ok=1
  timeout -k 5 "$(awk -v s="$seconds" 'BEGIN { print int(s) + 60 }')" \
      ${client_pin[@]+"${client_pin[@]}"} "$work/conn_rr" client "$(cat "$port_file")" "$conns" "$seconds" "$size" >"$work/client.out" 2>&1 ||
    client_ok=0
  if ! timeout 60 tail --pid="$server" -f /dev/null || ! wait "$server" || ((client_ok == 0)); then
    echo "  $mode: a run failed: $(tail -1 "$work/client.out") $(tail -1 "$work/server.err")" >&2
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; server=
    return
  fi
  server=
  awk 'FNR == NR && /^round_trips/ { rt = $2; us = $4; next }
       /^server_cpu_us/ { print us, rt, $2 }' "$work/client.out" "$work/server.out" >>"$work/$mode"
}

echo "== thread per connection: $conns connections, $size-byte requests and answers, ${seconds} s x $runs per mode, placement $placement${server_pin[1]:+ (server on CPU ${server_pin[2]}, client on CPU ${client_pin[2]})}; load $(cut -d' ' -f1-3 /proc/loadavg)"
bench_host_line "$build/bin/arbrun"
for mode in "${modes[@]}"; do : >"$work/$mode"; done
for ((i = 1; i <= runs; ++i)); do
  for mode in "${modes[@]}"; do run_once "$mode"; done
done

# median FILE COLUMN [per-round-trip]: the median of COLUMN (3: server CPU divided by column 2),
# to two decimals.
median() {
  awk -v c="$2" -v per="${3:-}" '{ print per ? $c / $2 : $c }' "$1" | bench_median |
    awk '$1 == "n/a" { print; next } { printf "%.2f\n", $1 }'
}
printf '%-9s %14s %22s %6s\n' mode "us/round trip" "server CPU us/round trip" runs
for mode in "${modes[@]}"; do
  printf '%-9s %14s %22s %6s\n' "$mode" "$(median "$work/$mode" 1)" "$(median "$work/$mode" 3 per)" \
    "$(wc -l <"$work/$mode")"
done
for mode in "${modes[@]}"; do
  printf '%-9s runs (us/round trip, server CPU us/round trip):' "$mode"
  awk '{ printf " %.2f/%.2f", $1, $3 / $2 }' "$work/$mode"
  echo
done
for mode in "${modes[@]:1}"; do
  awk -v m="$mode" -v a="$(median "$work/$mode" 1)" -v b="$(median "$work/native" 1)" \
      -v ca="$(median "$work/$mode" 3 per)" -v cb="$(median "$work/native" 3 per)" 'BEGIN {
      if (a == "n/a" || b == "n/a") { print m "/native: n/a"; exit }
      printf "%s/native: time per round trip %.2fx, server CPU per round trip %.2fx\n", m, a / b, ca / cb }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
