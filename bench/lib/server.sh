# Shared by the benchmark scripts that run a server or a core-arbiter (source it; bash only): a
# scratch directory removed on exit together with the server, starting a server on a random free
# port, finding a cpuset hierarchy, starting a core-arbiter and waiting for it to listen.

# bench_tmp: where scratch directories go: $TMPDIR when set, else /dev/shm, else /tmp. Memory first:
# a fake-backend arbiter journals every cpuset operation in its tree, and on the disk filesystem of
# a 16-CPU VM that added about 170 us to each release it measured (median 98 us with the tree in
# memory against 267 us on disk), which a real cgroup filesystem does not cost.
bench_tmp() {
  if [[ -n ${TMPDIR:-} ]]; then echo "$TMPDIR"
  elif [[ -d /dev/shm && -w /dev/shm ]]; then echo /dev/shm
  else echo /tmp; fi
}

# bench_scratch NAME: makes $work (a fresh directory under bench_tmp) and sets traps that, on any
# exit, stop the server whose pid the caller keeps in $server and remove $work.
bench_scratch() {
  work=$(mktemp -d "$(bench_tmp)/arbrun-$1.XXXXXX")
  server=
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

bench_cleanup() {
  if [[ -n ${server:-} ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}

# bench_cpuset_mount cgroup-v1|cgroup-v2: where that hierarchy is mounted (v1: the one with the
# cpuset controller; v2: the cgroup2 mount); prints nothing when there is none.
bench_cpuset_mount() {
  awk -v v="$1" '(v == "cgroup-v1" && $3 == "cgroup" && $4 ~ /(^|,)cpuset(,|$)/) ||
                 (v == "cgroup-v2" && $3 == "cgroup2") { print $2; exit }' /proc/mounts
}

# bench_wait_arbiter SCRIPT SOCKET LOG: waits up to 5 s for a core-arbiter started in the
# background to listen on SOCKET; if it does not, exits 1 with SCRIPT's name and LOG's last lines.
bench_wait_arbiter() {
  for _ in $(seq 100); do [[ -S $2 ]] && return 0; sleep 0.05; done
  echo "$1: core-arbiter did not start: $(tail -2 "$3")" >&2
  exit 1
}

# bench_check_backend SCRIPT BACKEND: returns when BACKEND is standalone or fake, or cgroup-v1 or
# cgroup-v2 as root; otherwise exits 2 with one line naming SCRIPT.
bench_check_backend() {
  case $2 in
    standalone|fake) ;;
    cgroup-v1|cgroup-v2) [[ $(id -u) -eq 0 ]] || { echo "$1: --backend $2 needs root" >&2; exit 2; } ;;
    *) echo "$1: --backend must be standalone, fake, cgroup-v1 or cgroup-v2" >&2; exit 2 ;;
  esac
}

# bench_start_arbiter SCRIPT BACKEND BUILD: starts BUILD's core-arbiter in the background for
# BACKEND (fake: CPUs 0-3 in a tree under $work, which pins nothing; cgroup-v1 or cgroup-v2: CPUs 0
# and 1 in a cpuset group of its own, root only), CPU 0 unmanaged, and waits for it. Sets $arbiter
# (its pid), $cgroot and $arbiter_args (arbrun's options to use it: --arbiter SOCKET --cores
# 1:MANAGED). Call after bench_scratch: it replaces the EXIT trap with bench_stop_arbiter.
bench_start_arbiter() {
  local script=$1 backend=$2 build=$3 cpus=0-3 managed=3 mount
  [[ -x $build/bin/core-arbiter ]] || { echo "$script: $build/bin/core-arbiter not found: build first" >&2; exit 2; }
  cgroot=$work/cg
  if [[ $backend == cgroup-v* ]]; then
    cpus=0-1 managed=1
    mount=$(bench_cpuset_mount "$backend")
    [[ -n $mount ]] || { echo "$script: no $backend cpuset hierarchy is mounted" >&2; exit 2; }
    cgroot=$mount/${work##*/}
  else
    mkdir -p "$cgroot"
  fi
  trap bench_stop_arbiter EXIT
  "$build/bin/core-arbiter" --backend "$backend" --cgroup-root "$cgroot" --cpus "$cpus" --reserve 1 \
      --socket "$work/arb.sock" --log-level warn 2>"$work/arbiter.log" &
  arbiter=$!
  bench_wait_arbiter "$script" "$work/arb.sock" "$work/arbiter.log"
  arbiter_args=(--arbiter "$work/arb.sock" --cores "1:$managed")
}

# bench_stop_arbiter: the server first (it may sit in a cpuset), then the arbiter, then its
# cpusets and $work.
bench_stop_arbiter() {
  if [[ -n ${server:-} ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  server=
  if [[ -n ${arbiter:-} ]]; then kill "$arbiter" 2>/dev/null || true; wait "$arbiter" 2>/dev/null || true; fi
  [[ -n ${cgroot:-} && -d $cgroot ]] && find "$cgroot" -depth -type d -exec rmdir {} \; 2>/dev/null
  bench_cleanup
}

# start_on_free_port CMD...: runs `CMD... -p PORT` in the background on a random port, stderr to
# $work/server.err, until it accepts TCP connections on 127.0.0.1 (up to 5 ports: a server such as
# memcached exits at once when its port is taken). Sets $server and $port; returns 1 if none came up.
start_on_free_port() {
  local started=0
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    "$@" -p "$port" 2>"$work/server.err" &
    server=$!
    for _ in $(seq 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && { started=1; break; }
      kill -0 "$server" 2>/dev/null || break
      sleep 0.02
    done
    (( started )) && return 0
    wait "$server" 2>/dev/null || true
    server=
  done
  return 1
}
