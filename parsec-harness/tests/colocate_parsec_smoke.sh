#!/usr/bin/env bash
# CI smoke run of `arbparsec colocate --server redis --batch parsec:APP,...` on a fake PARSEC tree
# (tests/parsec_fixture.py: the builtin montecarlo dressed as swaptions, shell-script stand-ins for
# blackscholes and raytrace): the two mixes for 2 s of load each. Checks that the PARSEC tenants
# were run again and again, their outputs compared with the native runs' (raytrace's varies
# natively), and the report written; not the numbers (CI machines are noisy). Exit 77 (skip)
# when redis-server is not installed.
# Usage: colocate_parsec_smoke.sh PYTHON ARBPARSEC BUILD_DIR OUT_DIR
set -euo pipefail
py=$1 arbparsec=$2 build=$3 out=$4
command -v redis-server >/dev/null || { echo "SKIP: redis-server not installed (scripts/setup.sh)"; exit 77; }
rm -rf "$out"
mkdir -p "$out"
home=$(cd "$(dirname "$arbparsec")" && "$py" -m tests.parsec_fixture "$out/parsec-3.0" "$build")
rc=0
"$py" "$arbparsec" colocate --server redis --batch parsec:swaptions,parsec:blackscholes,parsec:raytrace \
    --parsec-home "$home" --batch-size test --batch-threads 2 --configs arbrun-mix,native-mix \
    --load 2000 --duration 3 --warmup 0.5 --build-dir "$build" --out "$out/result" || rc=$?
[[ $rc -eq 77 ]] && exit 77
[[ -f $out/result/report.md && -f $out/result/summary.json ]] || { echo "FAIL: report files missing"; exit 1; }
"$py" - "$out/result/summary.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
a = d["analysis"]
want = {"parsec:swaptions": True, "parsec:blackscholes": True, "parsec:raytrace": True}
assert a["batch_outputs_match"] == want, a
assert a["batch_outputs_compared"]["parsec:raytrace"] == "varies natively, exit status compared", a
assert a["batch_outputs_compared"]["parsec:blackscholes"] == "outputs", a
for r in d["results"]:
    assert r["loadgen"]["lost"] == 0, r["config"]
    for b in r["batch"]:
        assert b["kind"] == "parsec" and b["runs"] >= 2 and b["failed_runs"] == 0, (r["config"], b)
print("colocate parsec smoke: PARSEC tenants re-run, outputs equal to native")
PY
[[ $rc -eq 0 ]] || { echo "FAIL: arbparsec colocate exited $rc"; exit 1; }
echo "ok colocate parsec smoke"
