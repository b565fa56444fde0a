#!/usr/bin/env bash
# End to end under arbrun --standalone with class_threads (see class_threads.c):
#   class_rules_e2e.sh classes ARBRUN PROGRAM  --class rules of each kind matched at pthread_create,
#                                              checked through the --verbose lines
#   class_rules_e2e.sh cpp ARBRUN PROGRAM      with class_threads_cpp: demangled C++ names
#   class_rules_e2e.sh stats ARBRUN PROGRAM    --stats prints threads created, peak live threads,
#                                              context switches and parks resumed in place with
#                                              plausible values
#   class_rules_e2e.sh exclusive ARBRUN PROGRAM  with class_exclusive (see class_exclusive.c): an
#                                              exclusive thread's carrier runs nothing else, by
#                                              sym: rule at creation and by name: rule after it;
#                                              --explain-classes lines; the fallback on one core
set -euo pipefail
check=${1:?classes, cpp, stats or exclusive}
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
  "$arbrun" --standalone "$@" -- "$program" ${program_args:-} >"$work/out" 2>"$work/err" ||
    fail "arbrun $* exited with $?"
  grep -qx "$expected_ok" "$work/out" || fail "no '$expected_ok' line"
}

expect_out() {
  grep -qxF "$1" "$work/out" || fail "missing output line: $1 (got: $(head -1 "$work/out"))"
}

expect_count() {  # expect_count N PATTERN: N stderr lines match the extended regex
  local got
  got=$(grep -cE "$2" "$work/err" || true)
  [[ $got == "$1" ]] || fail "expected $1 stderr lines matching '$2', got $got"
}

expect_line() {
  grep -qxF "$1" "$work/err" || fail "missing line: $1"
}

case $check in
  classes)
    run --verbose --class 'sym:encoder_*=batch' --class 'caller:spawn_from_pool=exclusive' \
        --class 'index:3=exclusive' --class 'name:never*=batch' --class 'index:5-6=batch'
    expect_line "arbrun: thread 0 (encoder_worker) -> class batch (rule 1: sym:encoder_*=batch)"
    expect_line "arbrun: thread 1 (io_loop) -> class normal (default)"
    expect_line "arbrun: thread 2 (pooled_task) -> class exclusive (rule 2: caller:spawn_from_pool=exclusive)"
    expect_line "arbrun: thread 3 (plain_worker) -> class exclusive (rule 3: index:3=exclusive)"
    expect_line "arbrun: thread 4 (plain_worker) -> class normal (default)"
    expect_line "arbrun: thread 5 (plain_worker) -> class batch (rule 5: index:5-6=batch)"
    expect_line "arbrun: thread 6 (plain_worker) -> class batch (rule 5: index:5-6=batch)"
    lines=$(grep -c "^arbrun: thread [0-9]* (" "$work/err" || true)
    [[ $lines == 7 ]] || fail "expected 7 thread lines, got $lines"
    # --default-class applies where no rule matches.
    run --verbose --default-class batch --class 'sym:io_*=exclusive'
    expect_line "arbrun: thread 0 (encoder_worker) -> class batch (default)"
    expect_line "arbrun: thread 1 (io_loop) -> class exclusive (rule 1: sym:io_*=exclusive)"
    # Without rules and --verbose nothing is said about threads.
    run
    if grep -q "^arbrun: thread" "$work/err"; then fail "thread lines without --verbose"; fi
    ;;
  cpp)
    run --verbose --class 'sym:pool::worker(*)=batch' --class 'caller:pool::Launcher::start()=exclusive'
    expect_line "arbrun: thread 0 (pool::worker(void*)) -> class batch (rule 1: sym:pool::worker(*)=batch)"
    # std::thread's start routine is local to the stripped libstdc++: no symbol, shown as '?'.
    grep -qE "^arbrun: thread 1 \(.*\) -> class exclusive \(rule 2: caller:pool::Launcher::start\(\)=exclusive\)$" \
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
    in_place=$(field "parks resumed in place")
    [[ -n $created && -n $peak && -n $switches && -n $in_place ]] ||
      fail "stats line lacks a field: $line"
    # 7 pthreads plus main (a user thread too); 3 at once plus main; every thread ran at least once.
    ((created >= 7)) || fail "threads created $created < 7: $line"
    ((peak >= 2 && peak <= created)) || fail "peak live threads $peak out of range: $line"
    ((switches >= 7)) || fail "context switches $switches < 7: $line"
    # A park resumed in place is counted among the switches too (it began as one).
    ((in_place <= switches)) || fail "parks resumed in place $in_place > switches: $line"
    run
    if grep -q "^arbrun: stats" "$work/err"; then fail "stats printed without --stats"; fi
    ;;
  exclusive)
    # Three cores: one reserved for dispatch_loop, two shared by main and six workers.
    run --cores 3 --stats --explain-classes --class 'sym:dispatch_loop=exclusive'
    expect_out "exclusive thread ran on 1 carrier(s), 0 of them also ran other threads"
    expect_line "arbrun: thread 0 (dispatch_loop) -> class exclusive (rule 1: sym:dispatch_loop=exclusive)"
    for i in 1 2 3 4 5 6; do expect_line "arbrun: thread $i (crunch) -> class normal (default)"; done
    expect_count 7 "^arbrun: thread [0-9]+ \("
    expect_count 1 "[:,] cores reserved 1, exclusive fallbacks 0, releases awaiting a park 0 \(then preempted 0\), cohorts formed 0 \(mean size 0.00\), cores 3$"
    # The same by name: the thread names itself and yields; its class applies at that switch.
    program_args=named run --cores 3 --stats --explain-classes --class 'name:dispatch=exclusive'
    expect_out "exclusive thread ran on 1 carrier(s), 0 of them also ran other threads"
    expect_line "arbrun: thread 0 (dispatch_loop) -> class normal (default)"
    expect_line "arbrun: thread 0 named 'dispatch' -> class exclusive (rule 1: name:dispatch=exclusive)"
    expect_count 1 "[:,] cores reserved 1, exclusive fallbacks 0, releases awaiting a park 0 \(then preempted 0\), cohorts formed 0 \(mean size 0.00\), cores 3$"
    # One core: nothing can be reserved (one core always stays shared). Said once; the program
    # still runs, on the shared core.
    # It shares its carrier with the others. It may run on more than one carrier: a blocking
    # call that outlasts the monitor's patience is handed to a spare carrier (lending), and then
    # the calling thread goes on there; a loaded machine makes that likely.
    run --cores 1 --stats --class 'sym:dispatch_loop=exclusive' --class 'sym:crunch=exclusive'
    line=$(grep -m1 "^exclusive thread ran on " "$work/out") || fail "no carrier count in the output"
    [[ $line =~ ^exclusive\ thread\ ran\ on\ ([0-9]+)\ carrier\(s\),\ ([0-9]+)\ of\ them ]] ||
      fail "unreadable carrier count: $line"
    carriers=${BASH_REMATCH[1]} shared=${BASH_REMATCH[2]}
    ((shared >= 1 && shared <= carriers)) || fail "the exclusive thread had a carrier to itself: $line"
    if ((carriers > 1)) && ! grep -qE "blocking calls handed off [1-9]" "$work/err"; then
      fail "the exclusive thread changed carriers without a blocking call handed off: $line"
    fi
    expect_count 1 "^arbrun: no core can be reserved for exclusive thread 0 \(dispatch_loop\): "
    expect_count 1 "[:,] cores reserved 0, exclusive fallbacks 7, releases awaiting a park 0 \(then preempted 0\), cohorts formed 0 \(mean size 0.00\), cores 1$"
    # Without --explain-classes (or --verbose) nothing is said about threads.
    run --cores 3 --class 'sym:dispatch_loop=exclusive'
    expect_count 0 "^arbrun: thread"
    ;;
  *) echo "class_rules_e2e.sh: unknown check '$check'" >&2; exit 2 ;;
esac
echo "ok $check"
