#!/bin/sh
# PID 1 of the cgroup test VM (busybox sh; run-cgroup-vm.sh packs it as /init). Mounts the kernel's
# file systems, runs the arbiter's cgroup tests on cgroup v2 (mounted at /sys/fs/cgroup as modern
# distributions do, cpuset not yet enabled in the root: the arbiter enables it), then moves the
# cpuset controller to a v1 hierarchy and runs them again, prints "ARBRUN-VM-RESULT: <0|1>" and
# powers off. The whole VM is the tests' to change (ARBRUN_VM_TEST=1: the AdoptAll tests may move
# every process).
export PATH=/usr/bin HOME=/root TMPDIR=/tmp GTEST_COLOR=no
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run  # not /tmp: the build tree may live there (the rootfs is writable)
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
. /vm.env
rc=0
step() { echo "== arbrun-vm [$(cut -d' ' -f1 /proc/uptime)s] $*"; }
check() {  # check DESCRIPTION COMMAND...: runs a check, records a failure
  d=$1
  shift
  if "$@"; then echo "ok: $d"; else echo "FAILED: $d"; rc=1; fi
}
# The cgroup tests with a watchdog: after $PHASE_LIMIT seconds it shows every task (state, wait
# channel, cpuset, kernel stack) and kills the tests (their children die with them), so a hang
# ends with a diagnosis, not with the host's timeout.
run_tests() {
  ARBRUN_VM_TEST=1 "$BUILD/bin/arbiter_cgroup_tests" --gtest_filter="${FILTER:-*}" &
  t=$!
  (
    sleep "$PHASE_LIMIT"
    echo "WATCHDOG: the $1 tests still run after ${PHASE_LIMIT}s; every task:"
    for d in /proc/[0-9]*/task/[0-9]*; do
      echo "$d $(cat "$d/comm") $(cut -d' ' -f3 "$d/stat") wchan=$(cat "$d/wchan") $(cat "$d/cpuset")"
      sed 's/^/    /' "$d/stack" 2>/dev/null | head -8
    done
    kill -KILL $t
  ) &
  w=$!
  wait $t
  r=$?
  kill $w 2>/dev/null
  return $r
}
step "booted: kernel $(uname -r), $(nproc) cpus"

mount -t cgroup2 cgroup2 /sys/fs/cgroup
step "cgroup v2: controllers $(cat /sys/fs/cgroup/cgroup.controllers)"
run_tests v2 || rc=1

# --backend auto with its default root, as a packaged arbiter starts: picks v2, and a clean stop
# removes <mount>/arbrun, which it made.
auto_smoke() {
  "$BUILD/bin/core-arbiter" --socket /run/arb.sock --backend auto --log-level info &
  pid=$!
  n=0
  until "$BUILD/bin/arbctl" --socket /run/arb.sock status >/run/status 2>&1; do
    n=$((n + 1))
    [ $n -lt 100 ] || break
    sleep 0.1
  done
  cat /run/status
  kill -TERM $pid
  wait $pid
  arc=$?
  [ $n -lt 100 ] && [ $arc -eq 0 ] && [ ! -e /sys/fs/cgroup/arbrun ]
}
check "core-arbiter --backend auto starts on cgroup v2 and stops leaving nothing" auto_smoke

step "cgroup v1: moving the cpuset controller to a v1 hierarchy"
echo -cpuset >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p /run/cpuset
n=0
until mount -t cgroup -o cpuset cpuset /run/cpuset 2>/dev/null; do
  n=$((n + 1))
  [ $n -lt 50 ] || break
  sleep 0.1  # the v2 cpuset states go away asynchronously
done
if grep -q ' /run/cpuset cgroup ' /proc/mounts; then
  run_tests v1 || rc=1
else
  echo "FAILED: could not mount a cgroup v1 cpuset hierarchy"
  rc=1
fi

step "done"
echo "ARBRUN-VM-RESULT: $rc"
sync
reboot -f
sleep 10  # PID 1 must not exit before the reset
