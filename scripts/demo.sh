#!/usr/bin/env bash
# The main job: sets up, builds, and runs the demo of what arbrun does today (the user-thread runtime
# on a real workload: 10,000 threads with per-thread TLS, spawn/join against kernel threads, per-core
# statistics). Later milestones replace it with `arbrun -- <unmodified program>`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" release
exec "$root/build/bin/arbrt-demo" "$@"
