#!/usr/bin/env bash
# Installs the Debian packages arbrun needs to build and test (idempotent; needs root for apt-get).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libboost-context-dev libboost-fiber-dev
      libunwind-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev golang-go python3
      python3-matplotlib redis-server redis-tools   # tools/plot-trace.py; redis: bench/waiting/compare.sh
      dpkg-dev file groff-base   # packaging/: cpack -G DEB (dpkg-shlibdeps, file), man page checks
      qemu-system-x86)  # arbiter/tests/vm: the cgroup tests in a VM (kernel and busybox fetched there)
# Real programs the compatibility suite runs natively and under arbrun.
root=$(cd "$(dirname "$0")/.." && pwd)
while read -r line; do
  line=${line%%#*}
  for p in $line; do pkgs+=("$p"); done
done < "$root/compat-tests/real-programs/packages.txt"
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages: ${missing[*]}; run this script as root (it uses apt-get)" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
