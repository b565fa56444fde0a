#!/usr/bin/env bash
# tools/plot-trace.py: a trace with grants, a release, requests and utilisation becomes a PNG; a
# file that is not a trace, and a malformed row, are refused with exit status 2 and a message.
set -euo pipefail
script=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/plot-trace-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/t.csv" <<'CSV'
time_s,event,core,cpu,value
0.000010,start,-1,-1,4
0.000020,request,-1,-1,4
0.000100,grant,0,3,1
0.000200,grant,1,4,1
0.010000,util,0,-1,0.95
0.010000,util,1,-1,0.4
0.015000,release,1,4,0
0.020000,util,0,-1,1
0.030000,stop,-1,-1,0
CSV
python3 "$script" "$work/t.csv" "$work/t.png" --title test
[[ $(head -c 8 "$work/t.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || {
  echo "FAIL: no PNG written"; exit 1; }
printf 'a,b\n1,2\n' >"$work/bad.csv"
if python3 "$script" "$work/bad.csv" "$work/bad.png" 2>"$work/err"; then echo "FAIL: accepted a non-trace"; exit 1; fi
grep -q "not an arbrun trace" "$work/err" || { echo "FAIL: message: $(cat "$work/err")"; exit 1; }
printf 'time_s,event,core,cpu,value\n0.1,bogus,0,0,1\n' >"$work/bad2.csv"
status=0; python3 "$script" "$work/bad2.csv" "$work/bad2.png" 2>"$work/err" || status=$?
[[ $status -eq 2 ]] && grep -q "bad2.csv:2: malformed row" "$work/err" || {
  echo "FAIL: malformed row: status $status, $(cat "$work/err")"; exit 1; }
echo "ok plot-trace"
