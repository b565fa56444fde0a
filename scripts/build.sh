#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh [release|sanitize]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-release}
case "$kind" in
  release)  dir=$root/build;          flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  sanitize) dir=$root/build-sanitize; flags=(-DCMAKE_BUILD_TYPE=Debug -DARBRUN_SANITIZE=ON -DARBRUN_BUILD_BENCH=OFF) ;;
  *) echo "build.sh: unknown build kind '$kind' (release|sanitize)" >&2; exit 2 ;;
esac
cmake -S "$root" -B "$dir" -G Ninja "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
