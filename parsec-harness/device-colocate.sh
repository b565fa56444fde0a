#!/usr/bin/env bash
# The colocation on a lent bigger host (16 CPUs, root, cgroup v2): builtin batch tenants beside
# redis and then memcached, with the cgroup backend where the host allows it. Such hosts have no
# package registry and no redis or memcached, and a device call carries only the session's
# checkout, so the binaries and the servers (with their libraries) travel in an ignored folder.
#
#   here:   parsec-harness/device-colocate.sh prepare BUILD_DIR build-dev
#           (BUILD_DIR: a release tree with arbrun, core-arbiter, arbloadgen, the workloads)
#   device: run with carry ["build-dev"], command
#           DUR=10 LOAD=10000:40000:10000 bash parsec-harness/device-colocate.sh run build-dev
#
# run writes host.txt, doctor.txt, {redis,memcached}-report.md and -colocate.csv into $OUT.
set -euo pipefail
cmd=${1:-} dir=${3:-${2:-}}
case $cmd in
prepare)
  build=$2 dest=$3
  rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib" "$dest/sys"
  cp -a "$build"/bin/{arbrun,core-arbiter,arbloadgen,arbparsec-spawn,parsec-workloads} "$dest/bin/"
  cp "$build/lib/libarbrun.so" "$dest/lib/"
  for s in redis-server memcached; do
    exe=$(command -v $s) || { echo "$s not installed here (scripts/setup.sh)"; exit 1; }
    cp "$exe" "$dest/sys/"
    # Every library but glibc's own, resolved here: the host's may be missing or other versions.
    ldd "$exe" | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt)\.so' |
      while read -r lib; do cp -L "$lib" "$dest/sys/"; done
    printf '#!/bin/sh\nd=$(dirname "$(readlink -f "$0")")\nLD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/%s" "$@"\n' \
      $s > "$dest/sys/$s.sh"
    chmod +x "$dest/sys/$s.sh"
  done
  du -sh "$dest"
  ;;
run)
  set +e
  export PYTHONUNBUFFERED=1
  B=$(cd "$dir" && pwd) O=${OUT:-/tmp/device-colocate} DUR=${DUR:-10} LOAD=${LOAD:-10000:40000:10000}
  mkdir -p "$O"
  {
    echo "== host"; nproc; uname -r; grep PRETTY /etc/os-release; ldd --version | head -1; id -u
    python3 --version; grep cgroup /proc/mounts
    echo "controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"; uptime
  } 2>&1 | tee "$O/host.txt"
  if [ "$(id -u)" = 0 ] && grep -q cgroup2 /proc/mounts &&
     ! grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control && echo "enabled +cpuset for the arbiter"
  fi
  "$B/bin/arbrun" doctor > "$O/doctor.txt" 2>&1; tail -12 "$O/doctor.txt"
  for srv in redis memcached; do
    bin=$B/sys/$([ $srv = redis ] && echo redis-server || echo memcached).sh
    echo "== $srv"; uptime
    timeout $((DUR * 4 + 90)) python3 "$(dirname "$0")/arbparsec" colocate --server $srv \
      --server-bin "$bin" --batch dataparallel,montecarlo --load "$LOAD" --duration "$DUR" \
      --build-dir "$B" --out /tmp/co-$srv 2>&1 | grep -v '^  \[.*\] *[0-9]*/' | tail -16
    cp /tmp/co-$srv/report.md "$O/$srv-report.md"; cp /tmp/co-$srv/colocate.csv "$O/$srv-colocate.csv"
  done
  uptime
  ;;
*) echo "usage: $0 prepare BUILD_DIR DEST | run DEST" >&2; exit 2 ;;
esac
