#!/usr/bin/env bash
# Start-up cost, natively and under `arbrun --standalone`: the wall time from fork to exit of
#   true       /bin/true
#   threads4   threads4.c: 4 threads that each lock a mutex once, joined
#   fork50     fork_loop.c: 50 fork()s, each child exiting at once and waited for; a line at the end
#              gives one fork+exit+wait natively and under arbrun ((fork50 - true) / 50), where
#              the child of a process under arbrun starts a runtime of its own
#   shell20    fork_loop.c in "shell" mode: a SIGCHLD handler, then 20 times fork, exec /bin/true,
#              wait, as a shell runs a command; a line gives one such command
#              ((shell20 - true) / 20), the exec'd /bin/true's own start included
# each run ROUNDS times (default 200), every command once per round (interleaved, so a change of
# load hits all alike); per row the median, 10th and 90th percentile in microseconds, then the
# median added by arbrun. Prints the load average before and after: on a shared machine compare
# only numbers taken together.
#
# With --breakdown, three more rows say where arbrun's added time goes:
#   floor-exec    a static program without libc that exits at once: the kernel's fork/exec/exit
#   floor-glibc   a static glibc program whose main returns: adds glibc's own start-up
#   preload-true  /bin/true exec'd directly with arbrun's environment (LD_PRELOAD and ARBRUN_*):
#                 the preload library and runtime without arbrun's own process
# then "arbrun's own process" (arbrun-true - preload-true) and "preload library" (preload-true -
# native-true). How many CPUID instructions a start executes, and what one costs here (each traps
# to the hypervisor in a VM): bench/startup/cpuid_count.c (built as bin/startup_cpuid_count).
#
# Usage: bench/startup/compare.sh [--build DIR] [--baseline DIR] [-n ROUNDS] [--breakdown]
#                                 [-- EXTRA_ARBRUN_OPTIONS...]
#   --build DIR     the CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build;
#                   build them: cmake --build DIR --target arbrun arbrun_preload)
#   --baseline DIR  another such tree (say, main's): its arbrun runs in the same rounds, so a change
#                   is measured against it on the same machine at the same time
# The C programs are built with cc into a temporary directory, removed on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
rounds=200
baseline=
extra=()
breakdown=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    --baseline) baseline=${2:?--baseline needs a directory}; shift ;;
    -n) rounds=${2:?-n needs a number}; shift ;;
    --breakdown) breakdown=1 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
arbrun=$build/bin/arbrun
[[ -x $arbrun ]] || {
  echo "compare.sh: $arbrun is missing; build it: cmake --build $build --target arbrun arbrun_preload" >&2
  exit 1
}
if [[ -n $baseline && ! -x $baseline/bin/arbrun ]]; then
  echo "compare.sh: $baseline/bin/arbrun is missing" >&2
  exit 1
fi
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 10 ]] || { echo "compare.sh: -n needs a number >= 10" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-startup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/spawn_time" "$here/spawn_time.c"
cc -O2 -pthread -o "$tmp/threads4" "$here/threads4.c"
cc -O2 -o "$tmp/fork_loop" "$here/fork_loop.c"
forks=50
shell_forks=20
preload_env=()
if (( breakdown )); then
  # arbrun --verbose prints the exact environment it execs the program with, one line.
  # (--verbose's own setting is put back to what a plain run gets.)
  verbose_run=$("$arbrun" --standalone --verbose "${extra[@]}" -- /bin/true 2>&1)
  line=$(grep -m1 "^arbrun: running" <<<"$verbose_run" || true)
  read -r -a preload_env <<<"${line#*with }"
  preload_env=("${preload_env[@]/#ARBRUN_VERBOSE=1/ARBRUN_VERBOSE=0}")
  [[ ${#preload_env[@]} -gt 0 && ${preload_env[-1]} == LD_PRELOAD=* ]] || {
    echo "compare.sh: cannot read arbrun's environment from: $line" >&2; exit 1; }
  printf 'int main(void) { return 0; }\n' >"$tmp/hello.c"
  cc -O2 -static -o "$tmp/floor_glibc" "$tmp/hello.c"
  printf 'void _start(void) { __asm__ volatile("mov $60, %%eax; xor %%edi, %%edi; syscall"); }\n' \
    >"$tmp/nolibc.c"
  cc -O2 -static -nostdlib -o "$tmp/floor_exec" "$tmp/nolibc.c"
fi

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
commands=(native-true /bin/true ::: arbrun-true "$arbrun" --standalone "${extra[@]}" -- /bin/true :::
  native-threads4 "$tmp/threads4" ::: arbrun-threads4 "$arbrun" --standalone "${extra[@]}" -- "$tmp/threads4" :::
  native-fork50 "$tmp/fork_loop" "$forks" ::: arbrun-fork50 "$arbrun" --standalone "${extra[@]}" -- "$tmp/fork_loop" "$forks")
if (( breakdown )); then
  commands+=(::: floor-exec "$tmp/floor_exec" ::: floor-glibc "$tmp/floor_glibc" :::
    preload-true "${preload_env[@]}" /bin/true)
fi
if [[ -n $baseline ]]; then
  commands+=(::: baseline-true "$baseline/bin/arbrun" --standalone "${extra[@]}" -- /bin/true :::
    baseline-threads4 "$baseline/bin/arbrun" --standalone "${extra[@]}" -- "$tmp/threads4" :::
    baseline-fork50 "$baseline/bin/arbrun" --standalone "${extra[@]}" -- "$tmp/fork_loop" "$forks")
fi
out=$("$tmp/spawn_time" "$rounds" "${commands[@]}")
echo "$out"
# The shell rows in a round of their own, with the true rows they are measured against: in the
# rounds above their twenty children each slowed the rows that followed them (arbrun's /bin/true
# row rose from ~380 to ~640 us added).
shell=(native-true /bin/true ::: native-shell20 "$tmp/fork_loop" "$shell_forks" shell :::
  arbrun-true "$arbrun" --standalone "${extra[@]}" -- /bin/true :::
  arbrun-shell20 "$arbrun" --standalone "${extra[@]}" -- "$tmp/fork_loop" "$shell_forks" shell)
if [[ -n $baseline ]]; then
  shell+=(::: baseline-true "$baseline/bin/arbrun" --standalone "${extra[@]}" -- /bin/true :::
    baseline-shell20 "$baseline/bin/arbrun" --standalone "${extra[@]}" -- "$tmp/fork_loop" "$shell_forks" shell)
fi
shell_out=$("$tmp/spawn_time" "$rounds" "${shell[@]}")
grep shell20 <<<"$shell_out"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
median() { awk -v l="$1" '$1 == l { print $3 }' <<<"${2:-$out}"; }
cpu() { awk -v l="$1" '$1 == l { for (i = 1; i < NF; i++) if ($i == "cpu-median") print $(i + 1) }' <<<"$out"; }
for prog in true threads4; do
  for who in arbrun ${baseline:+baseline}; do
    awk -v p="$prog" -v w="$who" -v n="$(median native-$prog)" -v a="$(median $who-$prog)" \
        -v cn="$(cpu native-$prog)" -v ca="$(cpu $who-$prog)" 'BEGIN {
      printf "added by %-9s %-9s %6.0f us wall (median %.0f -> %.0f), %6.0f us CPU\n",
        w ",", p ":", a - n, n, a, ca - cn }'
  done
done
awk -v n="$forks" -v nf="$(median native-fork50)" -v nt="$(median native-true)" \
    -v af="$(median arbrun-fork50)" -v at="$(median arbrun-true)" \
    -v bf="$(median baseline-fork50)" -v bt="$(median baseline-true)" 'BEGIN {
  printf "one fork+exit+wait: %.0f us natively, %.0f us under arbrun", (nf - nt) / n, (af - at) / n
  if (bf != "") printf ", %.0f us under the baseline", (bf - bt) / n
  printf "\n" }'
if (( breakdown )); then
  awk -v a="$(median arbrun-true)" -v p="$(median preload-true)" -v n="$(median native-true)" \
      -v fe="$(median floor-exec)" -v fg="$(median floor-glibc)" 'BEGIN {
    printf "where arbrun-true goes: arbrun\x27s own process %.0f us, preload library %.0f us\n", a - p, p - n
    printf "a process start here: %.0f us bare (floor-exec), %.0f us with glibc\x27s start-up (floor-glibc)\n", fe, fg }'
fi
awk -v n="$shell_forks" -v ns="$(median native-shell20 "$shell_out")" \
    -v nt="$(median native-true "$shell_out")" -v as="$(median arbrun-shell20 "$shell_out")" \
    -v at="$(median arbrun-true "$shell_out")" -v bs="$(median baseline-shell20 "$shell_out")" \
    -v bt="$(median baseline-true "$shell_out")" 'BEGIN {
  printf "one command run as a shell runs it (SIGCHLD handler, fork, exec /bin/true, wait): %.0f us natively, %.0f us under arbrun", (ns - nt) / n, (as - at) / n
  if (bs != "") printf ", %.0f us under the baseline", (bs - bt) / n
  printf "\n" }'
