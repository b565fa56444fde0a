#!/usr/bin/env bash
# The main job: sets up, builds, and shows arbrun on unmodified programs: pigz compressing a file
# with 4 threads, natively and under arbrun (byte-identical output, wall times, arbrun's --stats),
# then the runtime's own demo (10,000 user threads, spawn/join against kernel threads).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" release
bin=$root/build/bin
work=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== pigz -p 4 on 48 MiB of text, natively and under arbrun --standalone"
head -c 36000000 /dev/urandom | base64 > "$work/input.txt"
now() { date +%s.%N; }
t0=$(now); pigz -p 4 -c "$work/input.txt" > "$work/native.gz"; t1=$(now)
"$bin/arbrun" --standalone --stats -- pigz -p 4 -c "$work/input.txt" > "$work/arbrun.gz"; t2=$(now)
if cmp -s "$work/native.gz" "$work/arbrun.gz"; then same="byte-identical"; else same="DIFFERENT"; fi
python3 - "$t0" "$t1" "$t2" "$same" <<'PY'
import sys
t0, t1, t2 = map(float, sys.argv[1:4])
native, arbrun = t1 - t0, t2 - t1
print(f"  native {native:.2f} s, arbrun {arbrun:.2f} s (ratio {arbrun / native:.2f}); outputs {sys.argv[4]}")
PY
[[ $same == byte-identical ]]

echo "== the user-thread runtime (libarbrt) on its own"
"$bin/arbrt-demo"
