#!/usr/bin/env bash
# Sets up, builds and runs every test: the Release tree (all tests, then a benchmark smoke run) and the
# ASan/UBSan tree (the tests labelled as able to run under sanitizers).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
ARBRUN_CHECK_INVARIANTS=1 "$root/scripts/build.sh" release  # tests run with ARB_ASSERT checks on
"$root/scripts/build.sh" sanitize
echo "== Release tests"
ctest --test-dir "$root/build" --output-on-failure -j2 --timeout 300
echo "== ASan/UBSan tests"
ctest --test-dir "$root/build-sanitize" --output-on-failure -j2 --timeout 600 -L sanitize
echo "== Benchmark smoke run"
"$root/build/bin/arbrt-bench" --benchmark_min_time=0.01 >/dev/null
echo "benchmarks: smoke run ok"
