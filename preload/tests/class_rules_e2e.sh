#!/usr/bin/env bash
# End to end under arbrun --standalone with class_threads (see class_threads.c):
#   class_rules_e2e.sh classes ARBRUN PROGRAM  --class rules of each kind matched at pthread_create,
#                                              checked through the --verbose lines
#   class_rules_e2e.sh cpp ARBRUN PROGRAM      with class_threads_cpp: demangled C++ names
#   class_rules_e2e.sh stats ARBRUN PROGRAM    --stats prints threads created, peak live threads and
#                                              context switches with plausible values
set -euo pipefail
check=${1:?classes or stats}
arbrun=${2:?path of arbrun}
program=${3:?path of class_threads or class_threads_cpp}
expected_ok="ok $(basename "$program" | sed 's/^preload_//')"
work=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-class-e2e.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "--- stderr:" >&2
  cat "$work/err" >&2
  exit 1
}

run() {
  "$arbrun" --standalone "$@" -- "$program" >"$work/out" 2>"$work/err" ||
    fail "arbrun $* exited with $?"
  grep -qx "$expected_ok" "$work/out" || fail "no '$expected_ok' line"
}

expect_line() {
  grep -qxF "$1" "$work/err" || fail "missing line: $1"
}

case $check in
  classes)
    run --verbose --class 'sym:encoder_*=batch' --class 'caller:spawn_from_pool=exclusive' \
        --class 'index:3=exclusive' --class 'name:never*=batch' --class 'index:5-6=batch'
    expect_line "arbrun: thread 0 (encoder_worker) -> class batch (rule sym:encoder_*=batch)"
    expect_line "arbrun: thread 1 (io_loop) -> class normal (default)"
    expect_line "arbrun: thread 2 (pooled_task) -> class exclusive (rule caller:spawn_from_pool=exclusive)"
    expect_line "arbrun: thread 3 (plain_worker) -> class exclusive (rule index:3=exclusive)"
    expect_line "arbrun: thread 4 (plain_worker) -> class normal (default)"
    expect_line "arbrun: thread 5 (plain_worker) -> class batch (rule index:5-6=batch)"
    expect_line "arbrun: thread 6 (plain_worker) -> class batch (rule index:5-6=batch)"
    lines=$(grep -c "^arbrun: thread [0-9]* (" "$work/err" || true)
    [[ $lines == 7 ]] || fail "expected 7 thread lines, got $lines"
    # --default-class applies where no rule matches.
    run --verbose --default-class batch --class 'sym:io_*=exclusive'
    expect_line "arbrun: thread 0 (encoder_worker) -> class batch (default)"
    expect_line "arbrun: thread 1 (io_loop) -> class exclusive (rule sym:io_*=exclusive)"
    # Without rules and --verbose nothing is said about threads.
    run
    if grep -q "^arbrun: thread" "$work/err"; then fail "thread lines without --verbose"; fi
    ;;
  cpp)
    run --verbose --class 'sym:pool::worker(*)=batch' --class 'caller:pool::Launcher::start()=exclusive'
    expect_line "arbrun: thread 0 (pool::worker(void*)) -> class batch (rule sym:pool::worker(*)=batch)"
    # std::thread's start routine is local to the stripped libstdc++: no symbol, shown as '?'.
    grep -qE "^arbrun: thread 1 \(.*\) -> class exclusive \(rule caller:pool::Launcher::start\(\)=exclusive\)$" \
      "$work/err" || fail "thread 1 (std::thread) not classified by its caller"
    ;;
  stats)
    run --stats --cores 2
    line=$(grep "^arbrun: stats: " "$work/err") || fail "no 'arbrun: stats:' line"
    field() {  # the number after "$1 " in the stats line
      sed -n "s/.*[:,] $1 \([0-9][0-9]*\).*/\1/p" <<<"$line"
    }
    created=$(field "threads created")
    peak=$(field "peak live threads")
    switches=$(field "context switches")
    [[ -n $created && -n $peak && -n $switches ]] || fail "stats line lacks a field: $line"
    # 7 pthreads plus main (a user thread too); 3 at once plus main; every thread ran at least once.
    ((created >= 7)) || fail "threads created $created < 7: $line"
    ((peak >= 2 && peak <= created)) || fail "peak live threads $peak out of range: $line"
    ((switches >= 7)) || fail "context switches $switches < 7: $line"
    run
    if grep -q "^arbrun: stats" "$work/err"; then fail "stats printed without --stats"; fi
    ;;
  *) echo "class_rules_e2e.sh: unknown check '$check'" >&2; exit 2 ;;
esac
echo "ok $check"
