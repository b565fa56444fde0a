#!/bin/sh
# run-one.sh NAME COMMAND [ARGS...] — runs one compatibility program (natively, or with an
# `arbrun --standalone --` prefix) and applies the pass condition shared by every variant:
# exit status 0, a stdout line exactly `ok NAME`, and no stdout line starting with `FAIL`. Exit
# status 77 (a program that cannot run here, e.g. needs root) is passed through: ctest's
# SKIP_RETURN_CODE then reports it as skipped.
# Everything the program printed is shown again so that ctest's log keeps it. The program gets a
# scratch TMPDIR of its own, removed when it ends (also after a crash or a failed check).
set -u
name=$1
shift
out=$(mktemp "${TMPDIR:-/tmp}/compat-out.XXXXXX") || exit 1
scratch=$(mktemp -d "${TMPDIR:-/tmp}/compat-tmp.XXXXXX") || { rm -f "$out"; exit 1; }
trap 'rm -f "$out"; rm -rf "$scratch"' EXIT
TMPDIR=$scratch "$@" >"$out"
rc=$?
cat "$out"
if [ "$rc" -eq 77 ]; then
    echo "run-one: $name skipped" >&2
    exit 77
fi
if [ "$rc" -ne 0 ]; then
    echo "run-one: $name exited with status $rc" >&2
    exit 1
fi
if grep -q '^FAIL' "$out"; then
    echo "run-one: $name printed a FAIL line" >&2
    exit 1
fi
if ! grep -qx "ok $name" "$out"; then
    echo "run-one: $name did not print 'ok $name'" >&2
    exit 1
fi
exit 0
