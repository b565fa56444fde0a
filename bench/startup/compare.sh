#!/usr/bin/env bash
# Start-up cost, natively and under `arbrun --standalone`: the wall time from fork to exit of
#   true       /bin/true
#   threads4   threads4.c: 4 threads that each lock a mutex once, joined
# each run ROUNDS times (default 200), every command once per round (interleaved, so a change of
# load hits all alike); per row the median, 10th and 90th percentile in microseconds, then the
# median added by arbrun. Prints the load average before and after: on a shared machine compare
# only numbers taken together.
#
# Usage: bench/startup/compare.sh [--build DIR] [-n ROUNDS] [-- EXTRA_ARBRUN_OPTIONS...]
#   --build DIR   the CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build;
#                 build them: cmake --build DIR --target arbrun arbrun_preload)
# The C programs are built with cc into a temporary directory, removed on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
rounds=200
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    -n) rounds=${2:?-n needs a number}; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
arbrun=$build/bin/arbrun
[[ -x $arbrun ]] || {
  echo "compare.sh: $arbrun is missing; build it: cmake --build $build --target arbrun arbrun_preload" >&2
  exit 1
}
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 10 ]] || { echo "compare.sh: -n needs a number >= 10" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-startup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/spawn_time" "$here/spawn_time.c"
cc -O2 -pthread -o "$tmp/threads4" "$here/threads4.c"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$("$tmp/spawn_time" "$rounds" \
  native-true /bin/true ::: \
  arbrun-true "$arbrun" --standalone "${extra[@]}" -- /bin/true ::: \
  native-threads4 "$tmp/threads4" ::: \
  arbrun-threads4 "$arbrun" --standalone "${extra[@]}" -- "$tmp/threads4")
echo "$out"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
median() { awk -v l="$1" '$1 == l { print $3 }' <<<"$out"; }
for prog in true threads4; do
  awk -v p="$prog" -v n="$(median native-$prog)" -v a="$(median arbrun-$prog)" \
    'BEGIN { printf "added by arbrun, %-9s %6.0f us (median %.0f -> %.0f)\n", p ":", a - n, n, a }'
done
