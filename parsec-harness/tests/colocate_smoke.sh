#!/usr/bin/env bash
# CI smoke run of `arbparsec colocate`: the four configurations for 2.5 s of load each (10 s of
# load in all) with one batch tenant; checks that every configuration ran and reported, not the
# numbers (CI machines are noisy). Exit 77 (skip) when memcached is not installed.
# Usage: colocate_smoke.sh PYTHON ARBPARSEC BUILD_DIR OUT_DIR
set -euo pipefail
py=$1 arbparsec=$2 build=$3 out=$4
command -v memcached >/dev/null || { echo "SKIP: memcached not installed (scripts/setup.sh)"; exit 77; }
rm -rf "$out"
rc=0
"$py" "$arbparsec" colocate --server memcached --batch montecarlo --load 2000:4000 --duration 2.5 \
    --warmup 0.5 --build-dir "$build" --out "$out" || rc=$?
[[ $rc -eq 77 ]] && exit 77
[[ -f $out/report.md && -f $out/colocate.csv && -f $out/summary.json ]] ||
    { echo "FAIL: report files missing in $out"; exit 1; }
for cfg in arbrun-alone arbrun-mix native-alone native-mix; do
    grep -q "^| $cfg |" "$out/report.md" || { echo "FAIL: $cfg missing from the report"; exit 1; }
    grep -q "^$cfg,1," "$out/colocate.csv" || { echo "FAIL: no per-second latency for $cfg"; exit 1; }
    # The server's run-queue wait per time slice, the column after its CPU time, was measured.
    grep -Eq "^\| $cfg \|([^|]*\|){8} [0-9]+ \|" "$out/report.md" ||
        { echo "FAIL: no server run-queue wait for $cfg"; exit 1; }
done
grep -q "batch throughput under arbrun / native mix" "$out/report.md" || { echo "FAIL: no goals"; exit 1; }
# The server ran with the harness's default estimator, and the report says so.
grep -q "under arbrun --priority 0 --cores [0-9:]* --estimator arachne" "$out/report.md" ||
    { echo "FAIL: the report does not name the server's estimator"; exit 1; }
"$py" - "$out/summary.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["analysis"]["batch_outputs_match"] == {"montecarlo": True}, d["analysis"]
for r in d["results"]:
    assert r["loadgen"]["lost"] == 0, r["config"]
print("colocate smoke: every configuration ran; batch results equal")
PY
[[ $rc -eq 0 ]] || { echo "FAIL: arbparsec colocate exited $rc"; exit 1; }
echo "ok colocate smoke"
