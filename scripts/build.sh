#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh [release|sanitize]
# ARBRUN_CHECK_INVARIANTS=1 in the environment turns the runtime's ARB_ASSERT checks on in the
# Release tree too (scripts/test.sh does, so every test runs with them; the sanitizer tree always
# has them). Left unset, a Release build carries none.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-release}
case "$kind" in
  release)  dir=$root/build;          flags=(-DCMAKE_BUILD_TYPE=Release
                                              -DARBRUN_CHECK_INVARIANTS=$([ "${ARBRUN_CHECK_INVARIANTS:-0}" = 1 ] && echo ON || echo OFF)) ;;
  sanitize) dir=$root/build-sanitize; flags=(-DCMAKE_BUILD_TYPE=Debug -DARBRUN_SANITIZE=ON -DARBRUN_BUILD_BENCH=OFF) ;;
  *) echo "build.sh: unknown build kind '$kind' (release|sanitize)" >&2; exit 2 ;;
esac
cmake -S "$root" -B "$dir" -G Ninja "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
