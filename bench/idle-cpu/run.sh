#!/usr/bin/env bash
# CPU a lightly loaded server burns, natively and under arbrun: Debian's memcached -t THREADS under
# an open-loop load of RATE requests/s (arbloadgen, CONNECTIONS connections) for DURATION seconds.
# The server's CPU time (user + system, from /proc/PID/stat) is read at the start and at the end of
# the measured window; the load generator reports latency from each request's scheduled send.
# Modes alternate (native, arbrun, native, ...) so that both see the same machine; medians of
# REPEAT runs are printed, with the arbrun/native ratios, and every run's own figures.
#
# Where the kernel puts the server and the load generator decides much of the result on a small
# host. On a 2-vCPU VM at 5,000 requests/s, memcached pinned to one vCPU and arbloadgen to the other
# used about 5x the CPU of both on one vCPU, with 1.8x the p50 (natively and under arbrun alike):
# every request and every answer is then a wake-up across vCPUs. Left to the kernel (the default),
# a run can land in either placement and keep it, so single runs differ by that much; --placement
# fixes it for comparisons.
#
# Usage: bench/idle-cpu/run.sh [--build-dir DIR] [--baseline DIR] [--rate R] [--duration S]
#            [--threads N] [--connections N] [--repeat N] [--arbrun-args "ARGS"]
#            [--backend standalone|fake|cgroup-v1|cgroup-v2] [--placement free|same|split]
#   --build-dir   CMake build tree with bin/arbrun and bin/arbloadgen (default <repo>/build)
#   --baseline    another tree with bin/arbrun and lib/libarbrun.so (e.g. main's build): run too,
#                 as mode "baseline", in the same alternation, so before/after share the machine
#   --rate        requests per second (default 5000)
#   --duration    measured seconds per run (default 5)
#   --threads     memcached worker threads (default 4)
#   --connections load-generator connections (default 4)
#   --repeat      runs per mode (default 3)
#   --arbrun-args extra arbrun options, e.g. "--idle-spin 0"
#   --backend     standalone (default: arbrun --standalone) or a core-arbiter backend: the script
#                 starts core-arbiter (CPUs 0-3 with fake, which pins nothing; 0 and 1 with the
#                 cgroup backends, root only, CPU 0 unmanaged) and runs memcached under
#                 `arbrun --arbiter SOCKET --cores 1:MANAGED`; the arbiter and its cpusets are
#                 removed on exit
#   --placement   free (default): the kernel places both; same: every thread of the server and the
#                 load generator on the first CPU this script may use; split: the server on the
#                 first, the load generator on the second (needs two CPUs). The server's threads are
#                 pinned once it has started (so arbrun keeps its usual number of cores), each run
#                 again; standalone and fake backends only (the cgroup backends place the server)
# Goal: server CPU under arbrun <= 1.2x native, p50 and p99 no worse than native.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
rate=5000
duration=5
threads=4
connections=4
repeat=3
arbrun_args=
baseline=
backend=standalone
placement=free
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    --baseline) baseline=${2:?--baseline needs a directory}; shift ;;
    --rate) rate=${2:?--rate needs a number}; shift ;;
    --duration) duration=${2:?--duration needs seconds}; shift ;;
    --threads) threads=${2:?--threads needs a count}; shift ;;
    --connections) connections=${2:?--connections needs a count}; shift ;;
    --repeat) repeat=${2:?--repeat needs a count}; shift ;;
    --arbrun-args) arbrun_args=${2?--arbrun-args needs a string}; shift ;;
    --backend) backend=${2:?--backend needs standalone, fake, cgroup-v1 or cgroup-v2}; shift ;;
    --placement) placement=${2:?--placement needs free, same or split}; shift ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$rate" "$duration" "$threads" "$connections" "$repeat"; do
  [[ $n =~ ^[0-9]+$ && $n -gt 0 ]] || { echo "run.sh: '$n' is not a positive integer" >&2; exit 2; }
done
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/host.sh
source "$(dirname "$0")/../lib/host.sh"
bench_check_backend run.sh "$backend"
# The CPUs for --placement: the first two this script may run on.
server_cpu= loadgen_cpu=
case $placement in
  free) ;;
  same|split)
    [[ $backend == standalone || $backend == fake ]] ||
      { echo "run.sh: --placement $placement needs --backend standalone or fake (the $backend backend places the server itself)" >&2; exit 2; }
    mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
    server_cpu=${cpus[0]}
    loadgen_cpu=$server_cpu
    if [[ $placement == split ]]; then
      (( ${#cpus[@]} >= 2 )) || { echo "run.sh: --placement split needs two CPUs; this script may use only CPU $server_cpu" >&2; exit 2; }
      loadgen_cpu=${cpus[1]}
    fi ;;
  *) echo "run.sh: --placement must be free, same or split" >&2; exit 2 ;;
esac
loadgen=("$build/bin/arbloadgen")
[[ -n $loadgen_cpu ]] && loadgen=(taskset -c "$loadgen_cpu" "$build/bin/arbloadgen")
command -v memcached >/dev/null || { echo "run.sh: memcached not installed (apt-get install memcached)" >&2; exit 2; }
for b in arbrun arbloadgen; do
  [[ -x $build/bin/$b ]] || { echo "run.sh: $build/bin/$b not found: build first" >&2; exit 2; }
done
modes=(native arbrun)
if [[ -n $baseline ]]; then
  [[ -x $baseline/bin/arbrun ]] || { echo "run.sh: $baseline/bin/arbrun not found" >&2; exit 2; }
  modes=(native baseline arbrun)
fi

bench_scratch idlecpu

# Arbiter backends: one core-arbiter for the whole run, stopped (and its cpusets removed) on exit.
mode_args=(--standalone)
if [[ $backend != standalone ]]; then
  bench_start_arbiter run.sh "$backend" "$build"
  mode_args=("${arbiter_args[@]}")
fi

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }  # utime + stime of the whole process

# pin_server CPU: every thread of the server started by this script ($server) on CPU. Threads it
# creates later inherit the mask of their creator; two passes catch one created during the first.
pin_server() {
  local pass task
  for pass in 1 2; do
    for task in /proc/"$server"/task/*; do
      taskset -pc "$1" "${task##*/}" >/dev/null 2>&1 || true  # a thread that just exited
    done
  done
  [[ $(taskset -pc "$server" 2>/dev/null) == *": $1" ]] ||
    { echo "run.sh: could not pin the server (pid $server) to CPU $1" >&2; exit 1; }
}

# run_once MODE: prints "CPU_S P50_US P99_US" for one server run.
run_once() {
  local mode=$1 port started=0
  local -a cmd=(memcached -t "$threads" -l 127.0.0.1 -U 0 -c 1024)
  [[ $(id -u) -eq 0 ]] && cmd+=(-u root)
  if [[ $mode != native ]]; then
    local tree=$build
    [[ $mode == baseline ]] && tree=$baseline
    # shellcheck disable=SC2206  # the extra options are meant to split
    cmd=("$tree/bin/arbrun" "${mode_args[@]}" $arbrun_args -- "${cmd[@]}")
  fi
  start_on_free_port "${cmd[@]}" || { echo "run.sh: memcached did not start: $(tail -2 "$work/server.err")" >&2; exit 1; }
  [[ -n $server_cpu ]] && pin_server "$server_cpu"
  # arbloadgen sets its keys first, then measures: sample the CPU clock when the measurement starts
  # (its first second excluded from both) by running a 1 s warm-up load first.
  "${loadgen[@]}" --port "$port" --rate "$rate" --duration 1 --connections "$connections" \
      >/dev/null 2>&1 || true
  local before after
  before=$(cpu_ticks "$server")
  "${loadgen[@]}" --port "$port" --rate "$rate" --duration "$duration" \
      --connections "$connections" --drain 0.5 >"$work/load.out" 2>&1 ||
    { echo "run.sh: arbloadgen failed: $(tail -2 "$work/load.out")" >&2; exit 1; }
  after=$(cpu_ticks "$server")
  kill "$server"; wait "$server" 2>/dev/null || true
  server=
  awk -v b="$before" -v a="$after" -v t="$ticks" '/^arbloadgen: sent/ {
      for (i = 1; i < NF; i++) { if ($i == "p50_us") p50 = $(i + 1); if ($i == "p99_us") p99 = $(i + 1) }
      printf "%.3f %s %s\n", (a - b) / t, p50, p99 }' "$work/load.out"
}

echo "== idle CPU: memcached -t $threads, $rate req/s open loop, $connections connections," \
     "${duration} s x $repeat per mode; arbrun ${mode_args[*]} $arbrun_args ($backend);" \
     "placement $placement${server_cpu:+ (server on CPU $server_cpu, load generator on CPU $loadgen_cpu)};" \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"
bench_host_line "$build/bin/arbrun"
: >"$work/native"; : >"$work/arbrun"; : >"$work/baseline"
for ((i = 1; i <= repeat; i++)); do
  for mode in "${modes[@]}"; do run_once "$mode" >>"$work/$mode"; done
  echo "   run $i/$repeat done" >&2
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-8s %12s %10s %10s\n' mode "server CPU s" "p50 (us)" "p99 (us)"
declare -A med
for mode in "${modes[@]}"; do
  for k in 1 2 3; do med[$mode$k]=$(cut -d' ' -f$k "$work/$mode" | median); done
  printf '%-8s %12s %10s %10s\n' "$mode" "${med[${mode}1]}" "${med[${mode}2]}" "${med[${mode}3]}"
done
# Every run, in order (CPU s/p50/p99): a placement that changed between runs shows here.
for mode in "${modes[@]}"; do
  printf '%-8s runs: %s\n' "$mode" "$(tr ' ' / <"$work/$mode" | paste -sd' ')"
done
awk -v c="${med[arbrun1]}" -v cn="${med[native1]}" -v p="${med[arbrun2]}" -v pn="${med[native2]}" \
    -v q="${med[arbrun3]}" -v qn="${med[native3]}" 'BEGIN {
  r = c / cn; printf "arbrun/native: CPU %.2fx (goal <= 1.2: %s), p50 %.2fx, p99 %.2fx (goal <= 1: %s)\n",
    r, r <= 1.2 ? "met" : "NOT met", p / pn, q / qn, (p <= pn && q <= qn) ? "met" : "NOT met" }'
if [[ -n $baseline ]]; then
  awk -v c="${med[baseline1]}" -v cn="${med[native1]}" -v p="${med[baseline2]}" -v pn="${med[native2]}" \
      -v q="${med[baseline3]}" -v qn="${med[native3]}" 'BEGIN {
    printf "baseline/native: CPU %.2fx, p50 %.2fx, p99 %.2fx\n", c / cn, p / pn, q / qn }'
fi
