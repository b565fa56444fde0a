#!/usr/bin/env bash
# Start-up cost, natively and under `arbrun --standalone`: the wall time from fork to exit of
#   true       /bin/true
#   threads4   threads4.c: 4 threads that each lock a mutex once, joined
# each run ROUNDS times (default 200), every command once per round (interleaved, so a change of
# load hits all alike); per row the median, 10th and 90th percentile in microseconds, then the
# median added by arbrun. Prints the load average before and after: on a shared machine compare
# only numbers taken together.
#
# Usage: bench/startup/compare.sh [--build DIR] [--baseline DIR] [-n ROUNDS] [-- EXTRA_ARBRUN_OPTIONS...]
#   --build DIR     the CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build;
#                   build them: cmake --build DIR --target arbrun arbrun_preload)
#   --baseline DIR  another such tree (say, main's): its arbrun runs in the same rounds, so a change
#                   is measured against it on the same machine at the same time
# The C programs are built with cc into a temporary directory, removed on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
rounds=200
baseline=
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    --baseline) baseline=${2:?--baseline needs a directory}; shift ;;
    -n) rounds=${2:?-n needs a number}; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
arbrun=$build/bin/arbrun
[[ -x $arbrun ]] || {
  echo "compare.sh: $arbrun is missing; build it: cmake --build $build --target arbrun arbrun_preload" >&2
  exit 1
}
if [[ -n $baseline && ! -x $baseline/bin/arbrun ]]; then
  echo "compare.sh: $baseline/bin/arbrun is missing" >&2
  exit 1
fi
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 10 ]] || { echo "compare.sh: -n needs a number >= 10" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-startup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/spawn_time" "$here/spawn_time.c"
cc -O2 -pthread -o "$tmp/threads4" "$here/threads4.c"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
commands=(native-true /bin/true ::: arbrun-true "$arbrun" --standalone "${extra[@]}" -- /bin/true :::
  native-threads4 "$tmp/threads4" ::: arbrun-threads4 "$arbrun" --standalone "${extra[@]}" -- "$tmp/threads4")
if [[ -n $baseline ]]; then
  commands+=(::: baseline-true "$baseline/bin/arbrun" --standalone "${extra[@]}" -- /bin/true :::
    baseline-threads4 "$baseline/bin/arbrun" --standalone "${extra[@]}" -- "$tmp/threads4")
fi
out=$("$tmp/spawn_time" "$rounds" "${commands[@]}")
echo "$out"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
median() { awk -v l="$1" '$1 == l { print $3 }' <<<"$out"; }
cpu() { awk -v l="$1" '$1 == l { for (i = 1; i < NF; i++) if ($i == "cpu-median") print $(i + 1) }' <<<"$out"; }
for prog in true threads4; do
  for who in arbrun ${baseline:+baseline}; do
    awk -v p="$prog" -v w="$who" -v n="$(median native-$prog)" -v a="$(median $who-$prog)" \
        -v cn="$(cpu native-$prog)" -v ca="$(cpu $who-$prog)" 'BEGIN {
      printf "added by %-9s %-9s %6.0f us wall (median %.0f -> %.0f), %6.0f us CPU\n",
        w ",", p ":", a - n, n, a, ca - cn }'
  done
done
