#!/usr/bin/env bash
# Release latency of a compute-bound batch tenant: a core-arbiter (fake backend: nothing on the host
# is pinned or moved) serves a batch tenant (compute_tenant under arbrun at priority 7, its threads
# never call anything) and, ROUNDS times, a short high-priority tenant that takes cores from it.
# The arbiter measures each cooperative release (asked -> RELEASE_DONE) and counts forced reclaims.
# Run twice: with preemption (arbrun's default time slice: fast release) and without
# (--time-slice 0: the tenant's threads hold their cores until the forced reclaim).
#
# Usage: bench/release-latency/run.sh [--build-dir DIR] [--rounds N] [--threads N]
#            [--backend fake|cgroup-v1|cgroup-v2] [--cpus LIST] [--release-poll US[,US...]]
#            [--nice N[,N...]] [--trace]
#   --build-dir  CMake build tree with bin/{arbrun,core-arbiter,arbctl,compute_tenant}
#   --rounds     high-priority tenants started one after another (default 100)
#   --threads    compute threads of the batch tenant (default: one per managed core)
#   --backend    fake (default: pins nothing, so on a small host every thread competes for the
#                same CPUs) or cgroup-v1 (root; real cpusets in a scratch directory under the
#                cpuset mount, removed afterwards: the tenants' carriers run on managed CPUs, the
#                arbiter and the tenants' other threads on the unmanaged one), or cgroup-v2 (the
#                same under the cgroup2 mount; its root must already offer the cpuset controller
#                to children: cpuset in /sys/fs/cgroup/cgroup.subtree_control)
#   --cpus       CPUs the arbiter uses, the lowest one unmanaged (default 0-3 fake, 0-1 cgroup-v*)
#   --release-poll  the arbiter's --release-poll (how long it looks for the acknowledgement
#                without sleeping); with several values (0,200) the preemption run is repeated
#                once per value, so they compare in one run (default: the arbiter's own default)
#   --nice       the arbiter's --nice (its own niceness, -20..19); with several values the
#                preemption run is repeated once per value (with several --release-poll values,
#                once per pair); a value may repeat, e.g. 0,-10,0,-10 alternates them
#   --trace      (root, tracefs) also trace the preemption run's arbiter and batch tenant in a
#                tracefs instance of their own (removed afterwards) and print where each release's
#                time goes: the release watcher running, its signal, the carrier taking it,
#                RELEASE_DONE sent and read (steps.py)
# Columns: releases and forced reclaims, release latency p50/p99 (asked -> RELEASE_DONE read), the
# arbiter's CPU time, and the median time of one thread move on the arbiter's loop
# (arbiter_thread_move_recent_seconds: a cgroup migration on the cpuset backends).
# Goal (issue): median release latency <= 100 us with no forced reclaim.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/server.sh
source "$root/bench/lib/server.sh"  # bench_tmp, bench_cpuset_mount, bench_wait_arbiter
build=$root/build
rounds=100
threads=
backend=fake
cpus=
trace=0
polls=
nices=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    --rounds) rounds=${2:?--rounds needs a count}; shift ;;
    --threads) threads=${2:?--threads needs a count}; shift ;;
    --backend) backend=${2:?--backend needs fake, cgroup-v1 or cgroup-v2}; shift ;;
    --cpus) cpus=${2:?--cpus needs a list}; shift ;;
    --release-poll) polls=${2:?--release-poll needs microseconds}; shift ;;
    --nice) nices=${2:?--nice needs a niceness}; shift ;;
    --trace) trace=1 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case $backend in
  fake) cpus=${cpus:-0-3} ;;
  cgroup-v1)
    cpus=${cpus:-0-1}
    [[ $(id -u) -eq 0 ]] || { echo "run.sh: --backend cgroup-v1 needs root" >&2; exit 2; }
    cpuset_mount=$(bench_cpuset_mount cgroup-v1)
    [[ -n $cpuset_mount ]] || { echo "run.sh: no cgroup v1 cpuset hierarchy is mounted" >&2; exit 2; } ;;
  cgroup-v2)
    cpus=${cpus:-0-1}
    [[ $(id -u) -eq 0 ]] || { echo "run.sh: --backend cgroup-v2 needs root" >&2; exit 2; }
    cpuset_mount=$(bench_cpuset_mount cgroup-v2)
    [[ -n $cpuset_mount ]] || { echo "run.sh: no cgroup2 hierarchy is mounted" >&2; exit 2; }
    grep -qw cpuset "$cpuset_mount/cgroup.subtree_control" || {
      echo "run.sh: $cpuset_mount does not give the cpuset controller to its children" \
           "(echo +cpuset > $cpuset_mount/cgroup.subtree_control)" >&2; exit 2; } ;;
  *) echo "run.sh: --backend must be fake, cgroup-v1 or cgroup-v2" >&2; exit 2 ;;
esac
poll_values=()
if [[ -n $polls ]]; then
  IFS=, read -r -a poll_values <<<"$polls"
  for v in "${poll_values[@]}"; do
    [[ $v =~ ^[0-9]+$ ]] || { echo "run.sh: --release-poll takes microseconds, e.g. 0,200 (got '$polls')" >&2; exit 2; }
  done
fi
nice_values=()
if [[ -n $nices ]]; then
  IFS=, read -r -a nice_values <<<"$nices"
  for v in "${nice_values[@]}"; do
    [[ $v =~ ^-?[0-9]+$ ]] && (( v >= -20 && v <= 19 )) ||
      { echo "run.sh: --nice takes nicenesses from -20 to 19, e.g. 0,-10 (got '$nices')" >&2; exit 2; }
  done
fi
tracefs=
if (( trace )); then
  [[ $(id -u) -eq 0 ]] || { echo "run.sh: --trace needs root" >&2; exit 2; }
  tracefs=$(awk '$3 == "tracefs" { print $2; exit }' /proc/mounts)
  [[ -n $tracefs && -d $tracefs/instances && -e $tracefs/events/syscalls/sys_enter_tgkill ]] || {
    echo "run.sh: --trace needs tracefs with system-call events (none mounted here)" >&2; exit 2; }
  command -v python3 >/dev/null || { echo "run.sh: --trace needs python3" >&2; exit 2; }
fi
# Managed cores: every CPU of the list but the lowest (the arbiter's --reserve 1).
managed=$(( $(awk -F, '{ n = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n }' <<<"$cpus") - 1 ))
(( managed >= 1 )) || { echo "run.sh: --cpus must hold at least two CPUs" >&2; exit 2; }
threads=${threads:-$managed}
take=$(( managed > 1 ? managed - 1 : 1 ))  # cores each high-priority tenant takes
bin=$build/bin
for b in arbrun core-arbiter arbctl compute_tenant; do
  [[ -x $bin/$b ]] || { echo "run.sh: $bin/$b not found: build first (scripts/build.sh release)" >&2; exit 2; }
done

work=$(mktemp -d "$(bench_tmp)/arbrun-release.XXXXXX")
pids=()
cgroups=()
# Everything this script started is stopped (by PID) and its scratch directory removed.
instance=
cleanup() {
  if [[ -n $instance && -d $instance ]]; then
    echo 0 >"$instance/tracing_on" 2>/dev/null || true
    rmdir "$instance" 2>/dev/null || true
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
  # The arbiter removes its cpusets when it stops; remove what a killed one may have left.
  for g in "${cgroups[@]}"; do
    [[ -d $g ]] && find "$g" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

metric() {  # metric FILE NAME: the value of one metrics line (0 if absent)
  awk -v n="$2" '$1 == n { print $2; found = 1 } END { if (!found) print 0 }' "$1"
}

# The events steps.py reads, traced for the arbiter's and the tenant's threads only.
trace_events=(syscalls/sys_enter_futex syscalls/sys_exit_futex_waitv syscalls/sys_enter_tgkill
              signal/signal_deliver syscalls/sys_enter_sendto syscalls/sys_enter_sendmsg
              syscalls/sys_exit_epoll_wait)
start_trace() {  # start_trace ARBITER_PID TENANT_PID
  instance=$tracefs/instances/arbrun-release-$$
  mkdir "$instance"
  echo 16384 >"$instance/buffer_size_kb"
  echo record-tgid >"$instance/trace_options"
  # Every thread of both (set_event_pid takes thread ids); event-fork adds those made later.
  local tids
  tids=$(ls "/proc/$1/task" "/proc/$2/task" 2>/dev/null | grep -E '^[0-9]+$' | tr '\n' ' ')
  echo "$tids" >"$instance/set_event_pid"
  echo 1 >"$instance/options/event-fork"
  for e in "${trace_events[@]}"; do echo 1 >"$instance/events/$e/enable"; done
  echo 1 >"$instance/tracing_on"
  traced_pids=("$1" "$2")
}
stop_trace() {  # stop_trace FILE: stops, keeps the text trace, removes the instance
  echo 0 >"$instance/tracing_on"
  cat "$instance/trace" >"$1"
  rmdir "$instance"
  instance=
}

# measure MODE TIME_SLICE [POLL_US [NICE]]: one arbiter, one batch tenant, ROUNDS high-priority
# tenants.
runs=0
measure() {
  local mode=$1 slice=$2 poll=${3:-} nice=${4:-} tag
  runs=$((runs + 1))
  tag=$runs-${1//[\/=]/-}
  local dir=$work/$tag
  local arbiter_options=()
  [[ -n $poll ]] && arbiter_options+=(--release-poll "$poll")
  [[ -n $nice ]] && arbiter_options+=(--nice "$nice")
  mkdir -p "$dir"
  local cgroot=$dir/cg
  if [[ $backend == cgroup-v* ]]; then
    cgroot=$cpuset_mount/arbrun-bench-$$-$tag
    cgroups+=("$cgroot")
  else
    mkdir -p "$cgroot"
  fi
  local sock=$dir/arb.sock
  "$bin/core-arbiter" --backend "$backend" --cgroup-root "$cgroot" --cpus "$cpus" --reserve 1 \
      --socket "$sock" --metrics "$dir/metrics.txt" --release-timeout 10 --log-level warn \
      "${arbiter_options[@]}" 2>"$dir/arbiter.log" &
  local arbiter=$!
  pids+=("$arbiter")
  bench_wait_arbiter run.sh "$sock" "$dir/arbiter.log"
  "$bin/arbrun" --arbiter "$sock" --priority 7 --cores "1:$managed" --time-slice "$slice" -- \
      "$bin/compute_tenant" "$threads" 3600 >"$dir/tenant.out" 2>"$dir/tenant.err" &
  local tenant=$!
  pids+=("$tenant")
  # Wait (bounded) until the batch tenant holds all three managed cores.
  for _ in $(seq 200); do
    "$bin/arbctl" --socket "$sock" status 2>/dev/null | grep -q "compute_tenant" && break
    sleep 0.05
  done
  sleep 0.2
  if (( trace )) && [[ $mode == preempt* && -z $instance && ! -e $work/trace.txt ]]; then
    start_trace "$arbiter" "$tenant"
  fi
  for ((i = 1; i <= rounds; i++)); do
    "$bin/arbrun" --arbiter "$sock" --priority 0 --cores "$take" -- sleep 0.02 2>>"$dir/hi.err" ||
      { echo "run.sh: high-priority tenant $i failed: $(tail -2 "$dir/hi.err")" >&2; exit 1; }
    sleep 0.02  # the batch tenant gets its cores back before the next round
    (( i % 20 == 0 )) && echo "  $mode: round $i/$rounds" >&2
  done
  if [[ -n $instance ]]; then stop_trace "$work/trace.txt"; fi
  sleep 1.2  # the arbiter rewrites its metrics file every second
  kill -0 "$tenant" 2>/dev/null || { echo "run.sh: the batch tenant died: $(tail -3 "$dir/tenant.err")" >&2; exit 1; }
  local m=$dir/metrics.txt
  local p50 p99 releases forced cpu_ns move
  # The arbiter's own CPU time over the whole run (schedstat: nanoseconds on a CPU), which its
  # --release-poll spends on top of an arbiter that sleeps at once.
  cpu_ns=$(awk '{ print $1 }' "/proc/$arbiter/schedstat" 2>/dev/null || echo 0)
  p50=$(metric "$m" 'arbiter_release_latency_recent_seconds{quantile="0.5"}')
  p99=$(metric "$m" 'arbiter_release_latency_recent_seconds{quantile="0.99"}')
  releases=$(metric "$m" arbiter_releases_total)
  forced=$(metric "$m" arbiter_forced_reclaims_total)
  # What one thread move (a cgroup migration on the cpuset backends) cost the arbiter's loop: a
  # grant waits for one, and a many-core hand-over's grants wait for theirs one after another.
  move=$(metric "$m" 'arbiter_thread_move_recent_seconds{quantile="0.5"}')
  printf '%-26s %8s %8s %12.1f %12.1f %14.1f %12.1f\n' "$mode" "$releases" "$forced" \
      "$(awk -v s="$p50" 'BEGIN { print s * 1e6 }')" "$(awk -v s="$p99" 'BEGIN { print s * 1e6 }')" \
      "$(awk -v n="$cpu_ns" 'BEGIN { print n / 1e6 }')" "$(awk -v s="$move" 'BEGIN { print s * 1e6 }')"
  kill "$tenant" "$arbiter" 2>/dev/null || true
  wait "$tenant" "$arbiter" 2>/dev/null || true
}

echo "== release latency ($backend backend, CPUs $cpus): batch tenant of $threads compute threads," \
     "$rounds high-priority tenants taking $take of $managed managed cores each;" \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-26s %8s %8s %12s %12s %14s %12s\n' mode releases forced "p50 (us)" "p99 (us)" "arbiter CPU ms" \
    "move p50 us"
# The preemption run once per --release-poll and --nice value (each pair), labelled with them.
(( ${#poll_values[@]} )) || poll_values=("")
(( ${#nice_values[@]} )) || nice_values=("")
for p in "${poll_values[@]}"; do
  for n in "${nice_values[@]}"; do
    label=preempt${p:+/poll=$p}${n:+/nice=$n}
    measure "$label" 10000 "$p" "$n"
  done
done
measure cooperative 0
echo "(p50/p99 over cooperative releases; forced = reclaimed by the arbiter after its 10 ms timeout;" \
     "arbiter CPU: its whole run, start and tenants' arrivals included)"
if (( trace )); then
  echo "== where the (first) preemption run's releases spent their time (ftrace)"
  python3 "$root/bench/release-latency/steps.py" "$work/trace.txt" "${traced_pids[@]}"
fi
