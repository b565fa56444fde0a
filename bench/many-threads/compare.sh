#!/usr/bin/env bash
# Threads that stay alive, natively and under `arbrun --standalone`: many_threads.c creates N
# threads (default 10,000) that all block until every one has started, then lets them exit and
# joins them. Per mode, the median over RUNS processes (default 5) of
#   create_us       wall time per pthread_create over the loop of N creates
#   create_cpu_us   process CPU time per create over that loop (the children's start-up included)
#   rss_kib/thread  (VmRSS with N idle threads - VmRSS before) / N
# for the first round (every thread beyond any pool: stacks and TLS made) and for a second round
# in the same process (the first round's threads gone: stacks and TLS reused). Then the kernel's
# floor under a fresh create, from page_floor.c (median over RUNS): the first touch of a stack's top
# page (with its page-table page) and of a contiguous page (TCB, heap). Prints the load average: on
# a shared machine compare only numbers taken together.
#
# Usage: bench/many-threads/compare.sh [--build DIR] [-n THREADS] [-r RUNS]
#   --build DIR   the CMake build tree with bin/arbrun and lib/libarbrun.so (default <repo>/build)
# A run that fails or passes 120 s counts as failed (reported, not in the medians).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
threads=10000
runs=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift ;;
    -n) threads=${2:?-n needs a number}; shift ;;
    -r) runs=${2:?-r needs a number}; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: -n must be a positive number of threads" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: -r must be a positive number of runs" >&2; exit 2; }
arbrun=$build/bin/arbrun
[[ -x $arbrun ]] || { echo "compare.sh: $arbrun is missing (cmake --build $build --target arbrun arbrun_preload)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-many-threads.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread -o "$tmp/many_threads" "$here/many_threads.c"
cc -O2 -o "$tmp/page_floor" "$here/page_floor.c"

# One process: round 1 alone, then rounds 1+2 (the printed figures are the last round's).
run_mode() {  # mode rounds -> appends "key=value ..." lines to $tmp/<mode>-<rounds>
  local mode=$1 rounds=$2
  local cmd=("$tmp/many_threads" "$threads" "$rounds")
  [[ $mode == arbrun ]] && cmd=("$arbrun" --standalone -- "${cmd[@]}")
  if ! timeout 120 "${cmd[@]}" >>"$tmp/$mode-$rounds" 2>/dev/null; then
    echo "  $mode, $rounds round(s): a run failed or timed out" >&2
  fi
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < runs; ++i)); do
  for mode in native arbrun; do
    run_mode "$mode" 1
    run_mode "$mode" 2
  done
  "$tmp/page_floor" $((threads < 10000 ? threads : 10000)) >>"$tmp/floor"
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
median() {  # file key
  [[ -s $1 ]] || { echo n/a; return; }
  sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
printf '%-8s %-16s %12s %14s %15s\n' mode round create_us create_cpu_us rss_kib/thread
for mode in native arbrun; do
  for rounds in 1 2; do
    f=$tmp/$mode-$rounds
    label=$([[ $rounds == 1 ]] && echo "1 (fresh)" || echo "2 (reuse)")
    printf '%-8s %-16s %12s %14s %15s\n' "$mode" "$label" "$(median "$f" create_us)" \
      "$(median "$f" create_cpu_us)" "$(median "$f" rss_kib_per_thread)"
  done
done
stack_top=$(median "$tmp/floor" stack_top_page_ns)
page=$(median "$tmp/floor" page_ns)
echo "kernel floor: a fresh stack-top page $stack_top ns, a fresh contiguous page $page ns" \
  "(a fresh thread touches one of each: $(awk -v a="$stack_top" -v b="$page" 'BEGIN { printf "%.2f", (a + b) / 1000 }') us)"
