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

echo "== two programs sharing cores through the core arbiter (fake backend: a simulated 8-cpu machine,"
echo "   grants are recorded, nothing on this host is pinned)"
"$bin/core-arbiter" --socket "$work/arbiter.sock" --backend fake --cgroup-root "$work/cgroup" \
  --cpus 0-7 --reserve 1 --log-level warn &
arbiter=$!
trap 'kill $arbiter 2>/dev/null; wait $arbiter 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 500); do [[ -S $work/arbiter.sock ]] && break; sleep 0.01; done
"$bin/arbrun" --arbiter "$work/arbiter.sock" --priority 1 --cores 1:4 -- \
  pigz -p 4 -c "$work/input.txt" > "$work/high.gz" &
high=$!
"$bin/arbrun" --arbiter "$work/arbiter.sock" --priority 6 --cores 1:6 -- \
  xz -T4 -1 -c "$work/input.txt" > "$work/low.xz" &
low=$!
# Show the grants once both programs are registered (bounded wait), then let them finish.
for _ in $(seq 300); do
  n=$("$bin/arbctl" --socket "$work/arbiter.sock" status --json |
      python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin)["processes"] if p["granted"]))')
  [[ $n -ge 2 ]] && break
  sleep 0.01
done
"$bin/arbctl" --socket "$work/arbiter.sock" status | sed 's/^/  /'
wait "$high" "$low"
cmp -s "$work/high.gz" "$work/native.gz" && echo "  pigz under the arbiter: output byte-identical"
xz -dc "$work/low.xz" | cmp -s - "$work/input.txt" && echo "  xz under the arbiter: decompresses to the input"

echo "== the user-thread runtime (libarbrt) on its own"
"$bin/arbrt-demo"

echo "== colocation: memcached (priority 0) beside batch tenants (priority 7), under arbrun and natively"
echo "   (parsec-harness/arbparsec colocate, about a minute; report and plots in build/demo-colocate/)"
"$root/parsec-harness/arbparsec" colocate --server memcached --batch dataparallel,montecarlo \
  --load 5000:15000:5000 --duration 8 --build-dir "$root/build" --out "$root/build/demo-colocate"
