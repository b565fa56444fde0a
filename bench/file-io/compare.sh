#!/usr/bin/env bash
# A regular file read and written in pieces, natively and under `arbrun --standalone`:
# file_pieces.c writes SIZE bytes in PIECE-byte write() calls and reads them back ROUNDS times in
# PIECE-byte read() calls (from the page cache). Per mode, the medians over RUNS runs of the time
# per write and per read call, in nanoseconds, then arbrun's ratios to native. Modes alternate
# within each run; compare only figures from one invocation.
#
# Usage: bench/file-io/compare.sh [--build DIR] [--baseline DIR] [-s SIZE_MIB] [-p PIECE] [-r RUNS]
#   --build DIR     the CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build)
#   --baseline DIR  another such tree (say, main's): its arbrun runs too, as mode "baseline"
#   -s SIZE_MIB     file size in MiB (default 64; 1-4096), made in $TMPDIR (default /tmp)
#   -p PIECE        bytes per call (default 4096; 1-1048576)
#   -r RUNS         runs per mode (default 5)
# The file is removed as soon as it is open; the temporary directory at exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
baseline=
size_mib=64
piece=4096
runs=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    --baseline) baseline=${2:?--baseline needs a directory}; shift ;;
    -s) size_mib=${2:?-s needs MiB}; shift ;;
    -p) piece=${2:?-p needs bytes}; shift ;;
    -r) runs=${2:?-r needs a number}; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $size_mib =~ ^[1-9][0-9]*$ && $size_mib -le 4096 ]] || { echo "compare.sh: -s must be 1 to 4096 MiB" >&2; exit 2; }
[[ $piece =~ ^[1-9][0-9]*$ && $piece -le 1048576 ]] || { echo "compare.sh: -p must be 1 to 1048576 bytes" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ && $runs -le 100 ]] || { echo "compare.sh: -r must be 1 to 100 runs" >&2; exit 2; }
modes=(native arbrun)
[[ -n $baseline ]] && modes=(native baseline arbrun)
for tree in "$build" ${baseline:+"$baseline"}; do
  [[ -x $tree/bin/arbrun ]] || { echo "compare.sh: $tree/bin/arbrun is missing (cmake --build $tree --target arbrun arbrun_preload)" >&2; exit 1; }
done

# shellcheck source=../lib/stats.sh
source "$here/../lib/stats.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-file-io.XXXXXX")  # the file is measured here: not /dev/shm
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/file_pieces" "$here/file_pieces.c"
size=$((size_mib << 20))
((piece <= size)) || { echo "compare.sh: -p must not exceed the file size" >&2; exit 2; }

echo "== file in pieces: ${size_mib} MiB in ${piece}-byte calls, $runs runs per mode; load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in "${modes[@]}"; do : >"$tmp/$mode"; done
for ((i = 1; i <= runs; ++i)); do
  for mode in "${modes[@]}"; do
    cmd=("$tmp/file_pieces" "$tmp" "$size" "$piece" 2)
    [[ $mode == arbrun ]] && cmd=("$build/bin/arbrun" --standalone -- "${cmd[@]}")
    [[ $mode == baseline ]] && cmd=("$baseline/bin/arbrun" --standalone -- "${cmd[@]}")
    if ! timeout 300 "${cmd[@]}" >>"$tmp/$mode" 2>"$tmp/err"; then
      echo "  $mode: a run failed: $(tail -1 "$tmp/err")" >&2
    fi
  done
done

median() {  # FILE COLUMN
  awk -v c="$2" '/^write_ns/ { print $c }' "$1" | bench_median
}
printf '%-9s %12s %12s %6s\n' mode "ns/write" "ns/read" runs
for mode in "${modes[@]}"; do
  printf '%-9s %12s %12s %6s\n' "$mode" "$(median "$tmp/$mode" 2)" "$(median "$tmp/$mode" 4)" \
    "$(grep -c '^write_ns' "$tmp/$mode" || true)"
done
for mode in "${modes[@]:1}"; do
  awk -v m="$mode" -v w="$(median "$tmp/$mode" 2)" -v r="$(median "$tmp/$mode" 4)" \
      -v nw="$(median "$tmp/native" 2)" -v nr="$(median "$tmp/native" 4)" 'BEGIN {
      if (w == "n/a" || nw == "n/a") { print m "/native: n/a"; exit }
      printf "%s/native: write %.2fx, read %.2fx\n", m, w / nw, r / nr }'
done
