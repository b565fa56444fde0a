#!/usr/bin/env bash
# Wall time of real multithreaded compressors and an encoder natively and under arbrun, with
# `arbrun ab` (alternating runs, medians, byte-identical output checked), against the goal
# "within 5% of native wall time or better".
#
# Usage: bench/real-programs/compare.sh [--build-dir DIR] [-n RUNS] [--text-mib N] [--frames N]
#            [--only NAME[,NAME...]] [--arbrun-args "ARGS"]
#   --build-dir    CMake build tree with bin/arbrun (default <repo>/build)
#   -n             runs per mode (default 5)
#   --text-mib     size of the text input for pigz, xz and zstd (default 32)
#   --frames       frames of the 320x240 video for x264 (default 240)
#   --only         any of pigz,xz,zstd,x264 (default all)
#   --arbrun-args  arbrun options for the arbrun runs (default --standalone)
# Needs the Debian packages pigz, xz-utils, zstd, x264 (compat-tests/real-programs/packages.txt).
# Timings need a quiet machine: compare only ratios from one run. Exit status 1 if any output under
# arbrun differed from the native one.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
runs=5
text_mib=32
frames=240
only=pigz,xz,zstd,x264
arbrun_args=--standalone
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    -n) runs=${2:?-n needs a count}; shift ;;
    --text-mib) text_mib=${2:?--text-mib needs a size}; shift ;;
    --frames) frames=${2:?--frames needs a count}; shift ;;
    --only) only=${2:?--only needs names}; shift ;;
    --arbrun-args) arbrun_args=${2?--arbrun-args needs a value}; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
arbrun=$build/bin/arbrun
[[ -x $arbrun ]] || { echo "compare.sh: $arbrun not found: build first (scripts/build.sh release)" >&2; exit 2; }
PY=$(command -v python3) || { echo "compare.sh: python3 is needed to make the inputs" >&2; exit 2; }
# shellcheck source=../../compat-tests/real-programs/inputs.sh
source "$root/compat-tests/real-programs/inputs.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

summary=()
differ=0
# bench NAME COMMAND...: runs `arbrun ab` and keeps the wall-time ratio and the verdict.
bench() {
  local name=$1
  shift
  command -v "$1" >/dev/null || { summary+=("$(printf '%-6s skipped: %s not installed' "$name" "$1")"); return; }
  echo "== $name: $*"
  local out status=0
  # shellcheck disable=SC2086
  out=$("$arbrun" ab -n "$runs" $arbrun_args -- "$@") || status=$?
  echo "$out"
  local ratio
  ratio=$(awk '/^wall time/ {print $NF}' <<<"$out" | tr -d x)
  local verdict="NOT met"
  if [[ $status -ne 0 ]]; then
    verdict="outputs differ"
    differ=1
  elif awk -v r="$ratio" 'BEGIN { exit !(r <= 1.05) }'; then
    verdict=met
  fi
  summary+=("$(printf '%-6s wall arbrun/native %6sx  goal <= 1.05x: %s' "$name" "$ratio" "$verdict")")
}

IFS=, read -r -a selected <<<"$only"
for name in "${selected[@]}"; do
  case $name in
    pigz|xz|zstd) [[ -f $work/in.txt ]] || make_text "$work/in.txt" "$text_mib" ;;
    x264) [[ -f $work/in.y4m ]] || make_y4m "$work/in.y4m" "$frames" ;;
    *) echo "compare.sh: unknown benchmark '$name' (pigz, xz, zstd, x264)" >&2; exit 2 ;;
  esac
  case $name in
    pigz) bench pigz pigz -p 4 -c "$work/in.txt" ;;
    xz) bench xz xz -T4 -c -3 "$work/in.txt" ;;
    zstd) bench zstd zstd -T4 -c -q -5 "$work/in.txt" ;;
    x264) bench x264 x264 --threads 4 --preset medium --quiet --no-progress -o - "$work/in.y4m" ;;
  esac
done
echo "== summary ($runs runs per mode, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%s\n' "${summary[@]}"
exit "$differ"  # a benchmark: missed goals are reported, differing outputs are an error
