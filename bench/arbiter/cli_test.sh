#!/usr/bin/env bash
# arbiter-bench's command line and clean-up: --help, each bad option (exit 2, one line), an arbiter
# that cannot start (exit 1), and a short fake-backend run (three rows); none of them may leave its
# scratch directory behind. Usage: cli_test.sh ARBITER_BENCH
set -euo pipefail
bench=${1:?path of arbiter-bench}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/arbiter-bench-cli.XXXXXX")
alone=$scratch.alone  # a copy of arbiter-bench with no core-arbiter beside it
trap 'rm -rf "$scratch" "$scratch.out" "$scratch.err" "$alone"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS LINES ARGS...: runs arbiter-bench with TMPDIR=$scratch; checks the exit status, the
# number of stderr lines and that nothing was left in $scratch.
expect() {
  local status=$1 lines=$2 rc=0
  shift 2
  TMPDIR=$scratch "$bench" "$@" >"$scratch.out" 2>"$scratch.err" || rc=$?
  [[ $rc == "$status" ]] || fail "'$*': exit $rc, expected $status: $(cat "$scratch.err")"
  [[ $(wc -l <"$scratch.err") == "$lines" ]] || fail "'$*': stderr was: $(cat "$scratch.err")"
  [[ -z $(ls -A "$scratch") ]] || fail "'$*' left $(ls -A "$scratch") behind"
}
expect 0 0 --help
grep -q '^usage: arbiter-bench' "$scratch.out" || fail "--help printed no usage"
expect 2 1 --bogus
expect 2 1 --iterations
expect 2 1 --iterations 9
expect 2 1 --iterations 12x
expect 2 1 --gap-us -5
expect 1 2 --backend bogus --iterations 10  # the arbiter's line, then ours
expect 1 2 --arbiter /nonexistent/core-arbiter --iterations 10
# By default the core-arbiter beside arbiter-bench: a copy alone in a directory names that one.
mkdir "$alone"
cp "$bench" "$alone/arbiter-bench"
rc=0
TMPDIR=$scratch "$alone/arbiter-bench" --iterations 10 >"$scratch.out" 2>"$scratch.err" || rc=$?
[[ $rc == 1 ]] || fail "a copy without core-arbiter beside it: exit $rc, expected 1"
grep -q "cannot run $alone/core-arbiter" "$scratch.err" || fail "a copy alone did not look beside itself: $(cat "$scratch.err")"
[[ -z $(ls -A "$scratch") ]] || fail "a copy alone left $(ls -A "$scratch") behind"
expect 0 0 --iterations 10 --gap-us 100
for row in "grant, idle core:" "grant, cooperative reclaim:" "two idle socket hops"; do
  grep -q "^$row" "$scratch.out" || fail "no '$row' row in: $(cat "$scratch.out")"
done
echo "arbiter-bench command line: ok"
