#!/usr/bin/env bash
# Runs arbrt-bench (arbrt and std::thread), the Boost.Fiber peer (fiber-bench) and the Go peer,
# and prints one side-by-side table: ns per operation, medians over repetitions, with the issue's
# goals beside the arbrt numbers.
#
# Usage: bench/compare.sh [--quick] [--build-dir DIR]
#   --quick        3 short repetitions (seconds) instead of 10 longer ones (a minute or two)
#   --build-dir    the CMake build tree holding bin/arbrt-bench (default: <repo>/build); when
#                  arbrt-bench is not there yet, it is configured (Release) and built first
#
# Everything it writes (JSON results, the Go binary, Go's caches) stays under
# <build-dir>/bench-compare/.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    --build-dir=*) build=${1#--build-dir=} ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$build"
build=$(cd "$build" && pwd)

if [[ $quick == 1 ]]; then
  reps=3 min_time=0.05 go_time=50ms
else
  reps=10 min_time=0.2 go_time=200ms
fi

bench_bin=$build/bin/arbrt-bench
if [[ ! -x $bench_bin ]]; then
  # Not built yet: configure like scripts/build.sh (Release) and build only the benchmark targets.
  echo "== building arbrt-bench and fiber-bench in $build" >&2
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target arbrt-bench
  cmake --build "$build" --target fiber-bench 2>/dev/null ||
    echo "compare.sh: no fiber-bench target (Boost.Fiber not installed)" >&2
fi
command -v python3 >/dev/null || { echo "compare.sh: python3 is needed for the table" >&2; exit 1; }

out=$build/bench-compare
mkdir -p "$out"
gb_flags=(--benchmark_repetitions="$reps" --benchmark_min_time="$min_time"
          --benchmark_format=json)

echo "== arbrt-bench: $reps repetitions, min time ${min_time}s each (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
"$bench_bin" "${gb_flags[@]}" >"$out/arbrt.json"
table_args=(--arbrt "$out/arbrt.json")

if [[ -x $build/bin/fiber-bench ]]; then
  echo "== fiber-bench (Boost.Fiber)" >&2
  "$build/bin/fiber-bench" "${gb_flags[@]}" >"$out/fiber.json"
  table_args+=(--fiber "$out/fiber.json")
else
  echo "== Boost.Fiber: $build/bin/fiber-bench not built (libboost-fiber-dev missing?);" \
       "column left empty" >&2
fi

if command -v go >/dev/null; then
  echo "== Go peer ($(go version | cut -d' ' -f3)): building" >&2
  # Offline build with every cache under the build tree: nothing lands in $HOME.
  mkdir -p "$out/go/cache" "$out/go/path" "$out/go/tmp"
  (cd "$root/bench/peers/go" &&
     env GOCACHE="$out/go/cache" GOPATH="$out/go/path" GOTMPDIR="$out/go/tmp" GOENV=off \
         GOPROXY=off GOFLAGS= GO111MODULE=on \
         go build -o "$out/go/go-peer-bench" .)
  echo "== Go peer: $reps repetitions, ${go_time} each" >&2
  "$out/go/go-peer-bench" -reps "$reps" -benchtime "$go_time" >"$out/go.json" 2>/dev/null
  table_args+=(--go "$out/go.json")
else
  echo "== Go: 'go' not found (install golang-go); column left empty" >&2
fi

echo >&2
python3 "$root/bench/compare_table.py" "${table_args[@]}"
