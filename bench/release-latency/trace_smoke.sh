#!/usr/bin/env bash
# Smoke test of run.sh --trace (root and tracefs; exit 77, skipped, without them): a few fake-backend
# rounds; the step table and the count of traced asks must come out, and the tracefs instance must
# be gone afterwards. Usage: trace_smoke.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tracefs=$(awk '$3 == "tracefs" { print $2; exit }' /proc/mounts)
if [[ $(id -u) -ne 0 || -z $tracefs || ! -e $tracefs/events/syscalls/sys_enter_tgkill ]]; then
  echo "SKIP: run.sh --trace needs root and tracefs with system-call events"
  exit 77
fi
probe=$tracefs/instances/arbrun-probe-$$
if ! mkdir "$probe" 2>/dev/null; then
  echo "SKIP: tracefs does not let this host make instances ($tracefs/instances)"
  exit 77
fi
rmdir "$probe"
out=$(bash "$here/run.sh" --build-dir "${1:?build directory}" --rounds 3 --trace)
echo "$out"
grep -q '^step (us after the arbiter asked)' <<<"$out" || { echo "FAIL: no step table" >&2; exit 1; }
grep -Eq '^releases asked [1-9]' <<<"$out" || { echo "FAIL: no ask traced" >&2; exit 1; }
if ls "$tracefs/instances" | grep -q '^arbrun-release-'; then
  echo "FAIL: the tracefs instance was left behind" >&2
  exit 1
fi
