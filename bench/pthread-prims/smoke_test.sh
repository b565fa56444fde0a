#!/usr/bin/env bash
# ctest smoke test for compare.sh: tiny counts, both modes, every benchmark; checks the table's
# shape and that both modes produced numbers. No timing assertions (CI machines are noisy).
set -euo pipefail
compare=${1:?path of compare.sh}
build=${2:?build directory}
out=$(bash "$compare" --build-dir "$build" --repeat 1 --iterations 20 2>&1) || {
  echo "FAIL: compare.sh exited non-zero:" >&2
  echo "$out" >&2
  exit 1
}
echo "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -qE '^op +native +arbrun +unit +speedup +goal' <<<"$out" || fail "no table header"
for name in spawn_join condvar_pingpong mutex_uncontended mutex_contended_4t sched_yield detached_create; do
  row=$(grep -E "^$name " <<<"$out") || fail "no row for $name"
  # op, two numbers, a unit, a speedup "N.NNx", then the goal text and verdict.
  grep -qE "^$name +[0-9.e+-]+ +[0-9.e+-]+ +(ns/op|ops/s) +[0-9.]+x " <<<"$row" ||
    fail "malformed row: $row"
done
grep -q "missing a mode" <<<"$out" && fail "a mode is missing"
for name in spawn_join condvar_pingpong mutex_uncontended mutex_contended_4t; do
  grep -E "^$name " <<<"$out" | grep -qE "(met|NOT met)$" || fail "no verdict for $name"
done
echo "ok pthread_prims_smoke"
