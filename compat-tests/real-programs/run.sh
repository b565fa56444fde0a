#!/usr/bin/env bash
# run.sh NAME — runs one real Debian program natively and, when ARBRUN names the arbrun binary,
# also under `$ARBRUN $ARBRUN_ARGS -- program`, and compares the two runs.
#
#   NAME: pigz | xz | zstd | x264 | sysbench-threads | sysbench-mutex | python3 | memcached |
#         java | node | go-cgo | go-static | setpriv | su | memcached-user | fio-psync |
#         fio-io_uring | stress-ng-pthread | stress-ng-mutex | stress-ng-sem | stress-ng-futex |
#         stress-ng-sigsegv | stress-ng-signest | stress-ng-schedpolicy | stress-ng-sigfd
#
# Environment:
#   ARBRUN          path to build/bin/arbrun; empty or unset: native runs only
#   ARBRUN_ARGS     options given to arbrun before `--` (default: --standalone)
#   COMPAT_PYTHON3  the Python interpreter (default: /usr/bin/python3, else python3 in PATH)
#   TMPDIR          where the scratch directory is made (default: /tmp)
#
# Exit status: 0 pass, 1 fail, 77 skipped (the program is not installed: see packages.txt, or the
# test needs root: setpriv, su, memcached-user), 2 usage.
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

# Runs "$@" natively (mode native), under arbrun (mode arbrun) or under arbrun on one core (mode
# arbrun1).
run_in() {
    local mode=$1
    shift
    if [[ $mode == arbrun ]]; then
        # shellcheck disable=SC2086  # ARBRUN_ARGS is a list of options
        "$ARBRUN" $ARBRUN_ARGS -- "$@"
    elif [[ $mode == arbrun1 ]]; then
        # shellcheck disable=SC2086
        "$ARBRUN" $ARBRUN_ARGS --cores 1 -- "$@"
    else
        "$@"
    fi
}

# threads_of_tree PID: every thread of PID and its descendants, one line each: pid/tid, name,
# state, the kernel function it waits in and its system call (number and first arguments), so a
# hung run says where each thread was.
threads_of_tree() {
    local pid=$1 child task
    for task in /proc/"$pid"/task/*; do
        [[ -d $task ]] || continue
        echo "  $pid/${task##*/} $(cat "$task/comm" 2>/dev/null) state=$(awk '{ print $3 }' "$task/stat" 2>/dev/null)" \
             "wchan=$(cat "$task/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1-4 "$task/syscall" 2>/dev/null)"
    done
    for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do threads_of_tree "$child"; done
}

# run_watched SECONDS COMMAND...: runs COMMAND (a function too); if it has not ended after SECONDS,
# prints threads_of_tree on stderr (where it hangs), then kills the tree. COMMAND's own status, 137
# after a kill. COMMAND should still carry its own timeout(1), which outlives this script.
run_watched() {
    local seconds=$1
    shift
    "$@" &
    local pid=$!
    if ! timeout "$seconds" tail --pid="$pid" -f /dev/null; then
        local tree victims
        tree=$(threads_of_tree "$pid")
        echo "[$name] still running after ${seconds} s; its threads:" >&2
        echo "$tree" >&2
        victims=$(awk '{ split($1, a, "/"); print a[1] }' <<<"$tree" | sort -u)
        # shellcheck disable=SC2086  # a list of pids
        kill -KILL $victims 2>/dev/null || true
    fi
    wait "$pid"
}

# The modes to run: native always, arbrun when ARBRUN is set.
modes() {
    echo native
    if [[ -n $ARBRUN ]]; then
        [[ -x $ARBRUN ]] || fail "ARBRUN=$ARBRUN is not an executable"
        echo arbrun
    fi
}

# The one-core mode too, where ARBRUN_ARGS does not choose the cores: a thread that blocks a
# carrier it should have lent then stalls everything behind it, whatever the machine's size.
modes_and_one_core() {
    modes
    if [[ -n $ARBRUN && " $ARBRUN_ARGS " != *" --cores "* ]]; then echo arbrun1; fi
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

# Starts memcached (natively or under arbrun, as user $2 if given) on a free port; sets server_pid
# and port.
start_memcached() {
    local mode=$1 as=${2:-} try
    local -a user=()
    [[ $(id -u) -eq 0 ]] && user=(-u root)  # memcached refuses to run as root without -u
    [[ -n $as ]] && user=(-u "$as")
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

# Runtimes with threads of their own. java and node run as user threads: their self-checking
# programs must print the same line natively, under arbrun and under arbrun --cores 1, with
# nothing from arbrun on stderr (a runtime that could not start would say so there).
run_runtime() {
    local label=$1
    shift
    local ref="" mode out
    for mode in $(modes) ${ARBRUN:+arbrun1}; do
        say "$mode: $*"
        if [[ $mode == arbrun1 ]]; then
            # shellcheck disable=SC2086
            out=$("$ARBRUN" $ARBRUN_ARGS --cores 1 -- "$@" 2>"$work/err") || fail "$mode: exited with $?: $out $(cat "$work/err")"
        else
            out=$(run_in "$mode" "$@" 2>"$work/err") || fail "$mode: exited with $?: $out $(cat "$work/err")"
        fi
        [[ $out == "ok $label "* && $out != *$'\n'* ]] || fail "$mode: unexpected output: $out"
        if grep -q '^arbrun:' "$work/err"; then fail "$mode: arbrun said: $(grep '^arbrun:' "$work/err")"; fi
        if [[ -z $ref ]]; then ref=$out; else [[ $out == "$ref" ]] || fail "$mode: '$out' differs from '$ref'"; fi
        say "$mode: $out"
    done
}

run_java() {
    need java javac
    javac -d "$work" "$here/../java/JavaThreads.java" 2>"$work/javac.err" || fail "javac: $(cat "$work/javac.err")"
    run_runtime JavaThreads java -cp "$work" JavaThreads
}

run_node() {
    need node
    TMPDIR=$work run_runtime threads.js node "$here/../node/threads.js"
}

# Builds compat-tests/go into $1 (cgo when $2 is 1: dynamically linked; else statically linked),
# with every cache in the scratch directory and no network.
build_go() {
    need go
    [[ $2 != 1 ]] || need cc
    (cd "$here/../go" && env GOCACHE="$work/go-cache" GOPATH="$work/go-path" HOME="$work" GOPROXY=off \
        GOFLAGS=-mod=mod CGO_ENABLED="$2" go build -buildvcs=false -o "$1" .) >"$work/go.log" 2>&1 ||
        fail "go build: $(tail -5 "$work/go.log")"
}

# A Go program runs natively under arbrun: stdout and exit status as natively, and exactly one
# line from arbrun on stderr, also when a shell started under arbrun runs it (the preload library
# says it in the Go process). A statically linked one loads no library: only the launcher can
# say it, when it starts the program itself; through a shell it runs natively without a word.
run_go() {
    local cgo=$1 expected_how=$2
    local prog=$work/gothreads
    build_go "$prog" "$cgo"
    local line="arbrun: $prog is a Go program (its runtime schedules its own threads); running it natively"
    [[ $cgo == 1 ]] || line="arbrun: $prog is a Go program (its runtime schedules its own threads), statically linked (the preload library cannot load into it); running it natively"
    local ref rc
    ref=$("$prog" 7 2>"$work/err") && rc=0 || rc=$?
    [[ $rc == 7 ]] || fail "native: exit status $rc, expected 7: $ref $(cat "$work/err")"
    [[ $ref == "ok gothreads "*" via $expected_how" ]] || fail "native: unexpected output: $ref"
    [[ ! -s $work/err ]] || fail "native: stderr: $(cat "$work/err")"
    say "native: $ref, exit status 7"
    [[ -n $ARBRUN ]] || return 0
    local how
    for how in direct shell cores1; do
        local out
        # shellcheck disable=SC2086  # ARBRUN_ARGS is a list of options
        case $how in
        direct) out=$("$ARBRUN" $ARBRUN_ARGS -- "$prog" 7 2>"$work/err") && rc=0 || rc=$? ;;
        shell) out=$("$ARBRUN" $ARBRUN_ARGS -- sh -c "$prog 7" 2>"$work/err") && rc=0 || rc=$? ;;
        cores1) out=$("$ARBRUN" $ARBRUN_ARGS --cores 1 -- "$prog" 7 2>"$work/err") && rc=0 || rc=$? ;;
        esac
        [[ $rc == 7 ]] || fail "arbrun ($how): exit status $rc, expected 7: $out $(cat "$work/err")"
        [[ $out == "$ref" ]] || fail "arbrun ($how): output '$out' differs from the native '$ref'"
        local want=$line
        [[ $cgo == 1 || $how != shell ]] || want=""
        [[ $(cat "$work/err") == "$want" ]] || fail "arbrun ($how): stderr is not '$want': $(cat "$work/err")"
        say "arbrun ($how): identical output and exit status; $(cat "$work/err")"
    done
    if [[ $cgo != 1 ]]; then return 0; fi
    # sh itself is no Go program: it must run under the runtime, and say nothing.
    local shell_err
    # shellcheck disable=SC2086
    shell_err=$("$ARBRUN" $ARBRUN_ARGS --verbose -- sh -c true 2>&1 >/dev/null) || fail "arbrun --verbose sh: $shell_err"
    [[ $shell_err == *"arbrun: runtime started"* && $shell_err != *"Go program"* ]] ||
        fail "a shell under arbrun --verbose did not start the runtime: $shell_err"
}

# same_output_natively_and_under_arbrun PREFIX WHAT: PREFIX.native and PREFIX.arbrun (the outputs
# of one command run in both modes) must be identical; nothing to compare without arbrun.
same_output_natively_and_under_arbrun() {
    [[ -n $ARBRUN ]] || return 0
    cmp -s "$1.native" "$1.arbrun" || fail "$2: native '$(cat "$1.native")' vs arbrun '$(cat "$1.arbrun")'"
}

need_root() { [[ $(id -u) -eq 0 ]] || skip "needs root (it drops privileges)"; }

# The credential lines of every thread of process $1 (Uid, Gid, Groups, capability sets,
# NoNewPrivs, Seccomp), one line per distinct thread state: a process whose threads differ prints
# several lines.
task_credentials() {
    local f
    for f in /proc/"$1"/task/*/status; do
        grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "$f" 2>/dev/null |
            tr -s '\t ' '  ' | tr '\n' ';'
        echo
    done | sort -u | grep -v '^$'
}

# setpriv (util-linux, libcap-ng) drops to nobody with several option sets and execs a shell that
# prints the credentials of all its threads: exit 0 and the same lines natively and under arbrun.
run_setpriv() {
    need setpriv
    need_root
    local -a sets=(
        "--reuid=65534 --regid=65534 --clear-groups"
        "--reuid=65534 --regid=65534 --groups=5,6 --no-new-privs"
        "--bounding-set=-all --inh-caps=-all"
        "--reuid=65534 --regid=65534 --clear-groups --inh-caps=+net_bind_service --ambient-caps=+net_bind_service"
        "--securebits=+noroot,+noroot_locked --reuid=65534 --regid=65534 --clear-groups"
    )
    local opts i=0
    for opts in "${sets[@]}"; do
        for mode in $(modes); do
            say "$mode: setpriv $opts"
            # shellcheck disable=SC2086  # the option set is a list of words
            run_in "$mode" setpriv $opts /bin/sh -c "$(declare -f task_credentials); task_credentials \$\$" \
                >"$work/setpriv.$i.$mode" 2>&1 || fail "$mode: setpriv $opts exited non-zero: $(tail -3 "$work/setpriv.$i.$mode")"
            [[ $(wc -l <"$work/setpriv.$i.$mode") -eq 1 ]] || fail "$mode: threads differ after setpriv $opts: $(cat "$work/setpriv.$i.$mode")"
        done
        same_output_natively_and_under_arbrun "$work/setpriv.$i" "setpriv $opts"
        say "$(cut -c1-100 "$work/setpriv.$i.native")..."
        i=$((i + 1))
    done
}

# su and runuser (PAM, initgroups, setgid/setuid in a forked child): same id output and exit 0.
run_su() {
    need su runuser id
    need_root
    local -a cmds=(
        "su nobody -s /bin/sh -c id"
        "su -s /bin/sh -g nogroup -c id nobody"
        "runuser -u nobody -- id"
        "runuser -u nobody -g nogroup -G daemon -- id"
    )
    local cmd i=0
    for cmd in "${cmds[@]}"; do
        for mode in $(modes); do
            # shellcheck disable=SC2086
            run_in "$mode" $cmd >"$work/su.$i.$mode" 2>&1 || fail "$mode: $cmd exited non-zero: $(tail -3 "$work/su.$i.$mode")"
            grep -q '^uid=65534' "$work/su.$i.$mode" || fail "$mode: $cmd: $(cat "$work/su.$i.$mode")"
        done
        same_output_natively_and_under_arbrun "$work/su.$i" "$cmd"
        say "$cmd: $(cat "$work/su.$i.native")"
        i=$((i + 1))
    done
}

# The daemon pattern: memcached started as root drops to nobody (-u) before starting its worker
# threads; every kernel thread of the process must then be nobody's, and it serves requests.
run_memcached_user() {
    need memcached memcslap memcstat
    need_root
    [[ -n $PY && -x $PY ]] || skip "python3 not found"
    local summary=""
    for mode in $(modes); do
        say "$mode: memcached -u nobody -t 4"
        start_memcached "$mode" nobody
        memcslap --servers="127.0.0.1:$port" --concurrency=4 --execute-number=500 --test=set \
            >"$work/slap.set" 2>&1 || fail "$mode: memcslap set failed: $(tail -3 "$work/slap.set")"
        local pid
        pid=$(pgrep -P "$server_pid" -x memcached || true)
        [[ -n $pid ]] || fail "$mode: cannot find the memcached process under timeout $server_pid"
        task_credentials "$pid" | cut -d';' -f1-3 >"$work/creds.$mode"
        local threads
        threads=$(find /proc/"$pid"/task -mindepth 1 -maxdepth 1 | wc -l)
        stop_memcached
        [[ $(wc -l <"$work/creds.$mode") -eq 1 ]] || fail "$mode: threads differ: $(cat "$work/creds.$mode")"
        grep -q '^Uid: 65534 65534 65534 65534;Gid: 65534 65534 65534 65534;' "$work/creds.$mode" ||
            fail "$mode: not nobody: $(cat "$work/creds.$mode")"
        if [[ -z $summary ]]; then summary=$(cat "$work/creds.$mode"); else [[ $summary == "$(cat "$work/creds.$mode")" ]] || fail "credentials differ: $summary vs $(cat "$work/creds.$mode")"; fi
        say "$mode: $threads threads, all $(cat "$work/creds.$mode")"
    done
}

# fio with four job threads: every job starts (fio's startup semaphore is a process-shared
# mutex/condvar pair waited on with a deadline), reads its 8 MiB and reports no error. Terse
# output, one line per job: field 5 the error, field 6 the KiB read.
run_fio() {
    need fio
    local engine=$1
    local depth=1
    [[ $engine == io_uring ]] && depth=4
    local -a job=(fio --thread --numjobs=4 --ioengine="$engine" --iodepth="$depth" --size=8M --rw=randread
        --bs=4k --runtime=60 --name=t --filename="$work/fio.dat" --minimal)
    if ! "${job[@]}" >"$work/fio.probe" 2>&1; then
        [[ $engine == io_uring ]] && skip "io_uring unavailable here: $(tail -1 "$work/fio.probe")"
        fail "native fio failed: $(tail -3 "$work/fio.probe")"
    fi
    for mode in $(modes_and_one_core); do
        say "$mode: fio --thread --numjobs=4 --ioengine=$engine"
        run_watched 120 run_in "$mode" timeout -k 5 150 "${job[@]}" >"$work/fio.$mode" 2>"$work/fio.$mode.err" ||
            fail "$mode fio exited non-zero: $(tail -40 "$work/fio.$mode.err")"
        ! grep -q . "$work/fio.$mode.err" || fail "$mode: fio said: $(head -3 "$work/fio.$mode.err")"
        local summary
        summary=$(awk -F';' '{print "job error=" $5 " KiB=" $6}' "$work/fio.$mode" | sort | uniq -c | tr -s ' ')
        [[ $summary == " 4 job error=0 KiB=8192" ]] || fail "$mode: expected 4 jobs with no error reading 8192 KiB each, got: $summary"
        say "$mode:$summary"
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
java | node | go-cgo | go-static) ;;
setpriv | su | memcached-user | fio-psync | fio-io_uring) ;;
stress-ng-pthread | stress-ng-mutex | stress-ng-sem | stress-ng-futex) ;;
stress-ng-sigsegv | stress-ng-signest | stress-ng-schedpolicy | stress-ng-sigfd) ;;
*)
    echo "usage: $0 pigz|xz|zstd|x264|sysbench-threads|sysbench-mutex|python3|memcached|java|node|go-cgo|go-static|setpriv|su|memcached-user|fio-psync|fio-io_uring|stress-ng-{pthread,mutex,sem,futex,sigsegv,signest,schedpolicy,sigfd}" >&2
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
java) run_java ;;
node) run_node ;;
go-cgo) run_go 1 cgo ;;
go-static) run_go 0 go ;;
setpriv) run_setpriv ;;
su) run_su ;;
memcached-user) run_memcached_user ;;
fio-psync) run_fio psync ;;
fio-io_uring) run_fio io_uring ;;
stress-ng-pthread) run_stressng pthread 4 ;;
stress-ng-mutex) run_stressng mutex 4 ;;
stress-ng-sem) run_stressng sem 2 ;;
stress-ng-futex) run_stressng futex 2 ;;
stress-ng-sigsegv) run_stressng sigsegv 2 ;;       # fault, handler, siglongjmp, sigaction in a loop
stress-ng-signest) run_stressng signest 2 ;;       # nested handlers on an alternate stack, FORTIFY
stress-ng-schedpolicy) run_stressng schedpolicy 2 ;; # every policy, sched_setattr included
# A child sigqueue()s as fast as it can to a parent that reads a signalfd. RLIMIT_SIGPENDING counts
# every signal pending for the user, so the flood is kept to 1,024 of them: tests of the same user
# run beside this one must not be turned away.
stress-ng-sigfd) ulimit -i 1024 && run_stressng sigfd 2 ;;
esac
echo "ok real $name"
