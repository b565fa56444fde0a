#!/usr/bin/env bash
# run.sh NAME — runs one real Debian program natively and, when ARBRUN names the arbrun binary,
# also under `$ARBRUN $ARBRUN_ARGS -- program`, and compares the two runs.
#
#   NAME: pigz | xz | zstd | x264 | sysbench-threads | sysbench-mutex | python3 | memcached |
#         stress-ng-pthread | stress-ng-mutex | stress-ng-sem | stress-ng-futex
#
# Environment:
#   ARBRUN          path to build/bin/arbrun; empty or unset: native runs only
#   ARBRUN_ARGS     options given to arbrun before `--` (default: --standalone)
#   COMPAT_PYTHON3  the Python interpreter (default: /usr/bin/python3, else python3 in PATH)
#   TMPDIR          where the scratch directory is made (default: /tmp)
#
# Exit status: 0 pass, 1 fail, 77 skipped (the program is not installed: see packages.txt), 2 usage.
# Everything lives in one scratch directory removed on exit; memcached is started by this script,
# bound to 127.0.0.1 only, limited by `timeout`, and killed by PID on EXIT/INT/TERM.
set -euo pipefail

name=${1:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ARBRUN=${ARBRUN:-}
ARBRUN_ARGS=${ARBRUN_ARGS:---standalone}
PY=${COMPAT_PYTHON3:-}
if [[ -z $PY ]]; then
    if [[ -x /usr/bin/python3 ]]; then PY=/usr/bin/python3; else PY=$(command -v python3 || true); fi
fi

work=""
server_pid=""

# Stops the server this script started (if any) and removes the scratch directory.
cleanup() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
    if [[ -n $work && -d $work ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { echo "[$name] $*"; }
fail() {
    echo "FAIL real $name: $*"
    exit 1
}
skip() {
    echo "SKIP real $name: $* (install the packages in $here/packages.txt)"
    exit 77
}
need() { for p in "$@"; do command -v "$p" >/dev/null 2>&1 || skip "$p not found"; done; }

# Runs "$@" natively (mode native) or under arbrun (mode arbrun).
run_in() {
    local mode=$1
    shift
    if [[ $mode == arbrun ]]; then
        # shellcheck disable=SC2086  # ARBRUN_ARGS is a list of options
        "$ARBRUN" $ARBRUN_ARGS -- "$@"
    else
        "$@"
    fi
}

# The modes to run: native always, arbrun when ARBRUN is set.
modes() {
    echo native
    if [[ -n $ARBRUN ]]; then
        [[ -x $ARBRUN ]] || fail "ARBRUN=$ARBRUN is not an executable"
        echo arbrun
    fi
}

# Deterministic inputs (make_text, make_y4m), shared with bench/real-programs/compare.sh.
# shellcheck source=inputs.sh
source "$here/inputs.sh"

# Compressors: output must decompress to the input and be byte-identical between modes.
compressor() {
    local tool=$1 ext=$2
    shift 2
    local -a comp=("$@")
    make_text "$work/in"
    local first=""
    for mode in $(modes); do
        say "$mode: ${comp[*]}"
        run_in "$mode" "${comp[@]}" <"$work/in" >"$work/out.$mode.$ext" || fail "$mode compression exited with $?"
        case $tool in
        pigz) run_in "$mode" pigz -p 4 -d -c <"$work/out.$mode.$ext" >"$work/back.$mode" ;;
        xz) run_in "$mode" xz -T4 -d -c <"$work/out.$mode.$ext" >"$work/back.$mode" ;;
        zstd) run_in "$mode" zstd -T4 -q -d -c <"$work/out.$mode.$ext" >"$work/back.$mode" ;;
        esac || fail "$mode decompression exited with $?"
        cmp -s "$work/in" "$work/back.$mode" || fail "$mode: decompressed data differs from the input"
        if [[ -z $first ]]; then
            first=$mode
        else
            cmp -s "$work/out.$first.$ext" "$work/out.$mode.$ext" || fail "compressed output differs: $first vs $mode"
        fi
        say "$mode: $(stat -c %s "$work/out.$mode.$ext") bytes, round trip ok"
    done
}

run_x264() {
    need x264
    make_y4m "$work/in.y4m"
    local -a enc=(x264 --threads 4 --preset medium --quiet --no-progress -o)
    # Natively twice: the reference must itself be deterministic.
    run_in native "${enc[@]}" "$work/ref.264" "$work/in.y4m" 2>"$work/x264.err" || fail "native x264: $(cat "$work/x264.err")"
    for mode in $(modes); do
        say "$mode: x264 --threads 4"
        run_in "$mode" "${enc[@]}" "$work/out.$mode.264" "$work/in.y4m" 2>"$work/x264.err" ||
            fail "$mode x264 exited non-zero: $(cat "$work/x264.err")"
        cmp -s "$work/ref.264" "$work/out.$mode.264" || fail "$mode: x264 output differs from the native reference"
        say "$mode: $(stat -c %s "$work/out.$mode.264") bytes, identical to the reference"
    done
}

# sysbench: exit 0, the requested number of events, and a fairness section.
run_sysbench() {
    need sysbench
    local test=$1 want=$2
    shift 2
    for mode in $(modes); do
        say "$mode: sysbench $test $*"
        run_in "$mode" sysbench "$test" "$@" run >"$work/sb.$mode" 2>&1 || fail "$mode sysbench exited non-zero: $(tail -5 "$work/sb.$mode")"
        local events
        events=$(awk -F: '/total number of events/ {gsub(/ /, "", $2); print $2}' "$work/sb.$mode")
        [[ $events == "$want" ]] || fail "$mode: total number of events '$events', expected $want"
        grep -q "events (avg/stddev)" "$work/sb.$mode" || fail "$mode: no fairness statistics"
        say "$mode: $events events, $(awk '/total time:/ {print $3}' "$work/sb.$mode")"
    done
}

run_python() {
    [[ -n $PY && -x $PY ]] || skip "python3 not found"
    for mode in $(modes); do
        say "$mode: $PY threads.py"
        local out
        out=$(run_in "$mode" "$PY" "$here/../python/threads.py") || fail "$mode: threads.py exited non-zero: $out"
        [[ $out == "ok threads.py" ]] || fail "$mode: unexpected output: $out"
    done
}

# A free TCP port on 127.0.0.1 (the kernel's choice; a race with other programs is retried).
free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts memcached (natively or under arbrun) on a free port; sets server_pid and port.
start_memcached() {
    local mode=$1 try
    local -a user=()
    [[ $(id -u) -eq 0 ]] && user=(-u root)  # memcached refuses to run as root without -u
    for try in 1 2 3 4 5; do
        port=$(free_port)
        # timeout bounds its life even if this script is killed with SIGKILL.
        if [[ $mode == arbrun ]]; then
            # shellcheck disable=SC2086
            timeout -k 5 300 "$ARBRUN" $ARBRUN_ARGS -- memcached "${user[@]}" -l 127.0.0.1 -p "$port" -U 0 -t 4 -c 1024 \
                >"$work/memcached.log" 2>&1 &
        else
            timeout -k 5 300 memcached "${user[@]}" -l 127.0.0.1 -p "$port" -U 0 -t 4 -c 1024 >"$work/memcached.log" 2>&1 &
        fi
        server_pid=$!
        local i
        for i in $(seq 1 200); do
            if memcstat --servers="127.0.0.1:$port" >/dev/null 2>&1; then return 0; fi
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.05
        done
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
        say "memcached did not come up on port $port (try $try): $(tail -2 "$work/memcached.log")"
    done
    fail "$mode: memcached would not start"
}

stop_memcached() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

# memcached -t 4 driven by memcslap: every request served (server counters match what was sent).
run_memcached() {
    need memcached memcslap memcstat
    [[ -n $PY && -x $PY ]] || skip "python3 not found"
    local conc=8 n=4000 summary=""
    for mode in $(modes); do
        say "$mode: memcached -t 4; memcslap --concurrency=$conc --execute-number=$n (set, get)"
        start_memcached "$mode"
        memcslap --servers="127.0.0.1:$port" --concurrency=$conc --execute-number=$n --test=set \
            >"$work/slap.set" 2>&1 || fail "$mode: memcslap set failed: $(tail -3 "$work/slap.set")"
        memcslap --servers="127.0.0.1:$port" --concurrency=$conc --execute-number=$n --test=get \
            >"$work/slap.get" 2>&1 || fail "$mode: memcslap get failed: $(tail -3 "$work/slap.get")"
        memcstat --servers="127.0.0.1:$port" >"$work/stats.$mode" || fail "$mode: memcstat failed"
        stop_memcached
        local cmd_set cmd_get hits
        cmd_set=$(awk '$1 == "cmd_set:" {print $2}' "$work/stats.$mode")
        cmd_get=$(awk '$1 == "cmd_get:" {print $2}' "$work/stats.$mode")
        hits=$(awk '$1 == "get_hits:" {print $2}' "$work/stats.$mode")
        # The set test sends conc*n sets; the get test first loads n keys, then sends conc*n gets.
        [[ $cmd_set == $((conc * n + n)) ]] || fail "$mode: cmd_set $cmd_set, expected $((conc * n + n))"
        [[ $cmd_get == $((conc * n)) ]] || fail "$mode: cmd_get $cmd_get, expected $((conc * n))"
        [[ $hits == "$cmd_get" ]] || fail "$mode: get_hits $hits of $cmd_get"
        local line="sets=$cmd_set gets=$cmd_get hits=$hits"
        if [[ -z $summary ]]; then summary=$line; else [[ $summary == "$line" ]] || fail "counts differ: $summary vs $line"; fi
        say "$mode: $line"
    done
}

# stress-ng STRESSOR N for 2 s: exit 0, "successful run completed" in under 6 s (its stop signal
# reached the stressors: natively 2 to 3 s; signals that never reached a waiting thread made them
# hang), and no failure or corrupted-counter line (a stressor process that died early leaves its
# bogo-ops counter unchecksummed).
run_stressng() {
    need stress-ng
    local stressor=$1 instances=$2
    for mode in $(modes); do
        say "$mode: stress-ng --$stressor $instances -t 2"
        local rc=0
        (cd "$work" && run_in "$mode" timeout -k 5 60 stress-ng --"$stressor" "$instances" -t 2 \
            --temp-path "$work" --metrics-brief) >"$work/sn.$mode" 2>&1 || rc=$?
        [[ $rc -eq 0 ]] || fail "$mode: stress-ng exited with $rc: $(tail -5 "$work/sn.$mode")"
        ! grep -qE "corrupted|fail:" "$work/sn.$mode" || fail "$mode: $(grep -E "corrupted|fail:" "$work/sn.$mode" | head -3)"
        local took
        took=$(sed -n 's/.*successful run completed in \([0-9.]*\)s.*/\1/p' "$work/sn.$mode")
        [[ -n $took ]] || fail "$mode: no 'successful run completed': $(tail -3 "$work/sn.$mode")"
        awk -v t="$took" 'BEGIN { exit !(t < 6.0) }' || fail "$mode: completed in ${took}s, 6 s or more for -t 2"
        say "$mode: completed in ${took}s, $(awk -v s="$stressor" '$4 == s && $6 ~ /^[0-9.]+$/ {print $5 " bogo ops"; exit}' "$work/sn.$mode")"
    done
}

case $name in
pigz | xz | zstd | x264 | sysbench-threads | sysbench-mutex | python3 | memcached) ;;
stress-ng-pthread | stress-ng-mutex | stress-ng-sem | stress-ng-futex) ;;
*)
    echo "usage: $0 pigz|xz|zstd|x264|sysbench-threads|sysbench-mutex|python3|memcached|stress-ng-{pthread,mutex,sem,futex}" >&2
    exit 2
    ;;
esac
[[ -n $PY && -x $PY ]] || skip "python3 not found (needed to generate inputs)"
work=$(mktemp -d "${TMPDIR:-/tmp}/compat-real.XXXXXX")

case $name in
pigz) need pigz && compressor pigz gz pigz -p 4 -n -c ;;
xz) need xz && compressor xz xz xz -T4 --block-size=1MiB -2 -c ;;
zstd) need zstd && compressor zstd zst zstd -T4 -B1MiB -q -c ;;
x264) run_x264 ;;
sysbench-threads) run_sysbench threads 5000 --threads=8 --thread-yields=100 --thread-locks=4 --events=5000 --time=0 ;;
sysbench-mutex) run_sysbench mutex 4 --threads=4 ;;
python3) run_python ;;
memcached) run_memcached ;;
stress-ng-pthread) run_stressng pthread 4 ;;
stress-ng-mutex) run_stressng mutex 4 ;;
stress-ng-sem) run_stressng sem 2 ;;
stress-ng-futex) run_stressng futex 2 ;;
esac
echo "ok real $name"
