#!/usr/bin/env bash
# End to end: a core-arbiter on the fake backend (pins nothing) grants cores to programs started by
# `arbrun --arbiter`; arbctl shows the grant while the program runs; the programs' results are the
# same as natively. Usage: arbiter_e2e.sh BIN_DIR. Leaves no process, socket or directory behind.
set -euo pipefail
bin=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-e2e.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# Bounded polling for a condition (not a sleep standing in for synchronisation).
wait_for() {  # wait_for SECONDS COMMAND...
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.02
  done
}

"$bin/core-arbiter" --socket "$dir/sock" --backend fake --cgroup-root "$dir/fake" --cpus 0-7 \
  --reserve 1 --log-level info 2>"$dir/arbiter.log" &
pids+=($!)
wait_for 10 test -S "$dir/sock"

# A program that runs until the test lets it go (it reads a byte from a fifo; a fixed lifetime
# ended before a loaded host's arbctl saw it): its main thread (a user thread) needs a granted
# core, and waits in the kernel while the others run.
mkfifo "$dir/go"
"$bin/arbrun" --arbiter "$dir/sock" --cores 1:2 --priority 1 -- head -c 1 "$dir/go" >/dev/null &
app=$!
pids+=($app)
granted() {
  "$bin/arbctl" --socket "$dir/sock" status --json | python3 -c '
import json, sys
status = json.load(sys.stdin)
pid = int(sys.argv[1])
procs = [p for p in status["processes"] if p["pid"] == pid]
sys.exit(0 if procs and 1 <= len(procs[0]["granted"]) <= 2 and procs[0]["priority"] == 1 else 1)' "$app"
}
wait_for 10 granted
echo "arbctl shows pid $app with granted cores at priority 1"

# Programs that check their own results, under the arbiter, while the first one holds cores.
for prog in cond_pingpong mutex_contention pipeline many_threads; do
  out=$("$bin/arbrun" --arbiter "$dir/sock" --cores 1:3 --priority 4 -- "$bin/compat/$prog")
  [[ $out == *"ok $prog"* ]] || { echo "FAIL $prog under the arbiter: $out" >&2; exit 1; }
  echo "ok $prog under the arbiter"
done
# Let it go (bounded: a writer's open waits for the reader, which may have died).
timeout 10 bash -c 'echo x >"$1"' _ "$dir/go"
wait "$app"
grep -q "registered" "$dir/arbiter.log"
