#!/usr/bin/env bash
# The arbiter's cgroup tests (arbiter_cgroup_tests) against a real kernel's cgroup v2, then v1, in a
# throwaway qemu guest (KVM where possible): Debian's kernel (linux-image-amd64) and busybox
# (busybox-static, unless a static busybox is installed), both fetched with apt-get download into a
# cache and never installed; 4 vCPUs; a busybox init (guest-init.sh); the build tree's binaries
# with their shared libraries packed into an initramfs at their build-tree paths. This machine
# binds cpuset to cgroup v1, so the v2 backend meets a real kernel only here.
#
# Usage: run-cgroup-vm.sh BUILD_DIR
# Exit: 0 passed, 1 failed or timed out, 77 skipped with the reason (no qemu, packages not
# downloadable, KVM asked for but unusable); ARBRUN_VM_REQUIRE=1 turns a skip into a failure.
# Environment: ARBRUN_VM_ACCEL (auto, kvm or tcg), ARBRUN_VM_CACHE (kernel cache, default
# ~/.cache/arbrun-vm), ARBRUN_VM_TIMEOUT (seconds the guest may run, default 360),
# ARBRUN_VM_KERNEL (a bzImage to boot instead), ARBRUN_VM_FILTER (a gtest filter, e.g. '*Arbrun*';
# each phase runs the tests of its cgroup version, the others skip), ARBRUN_VM_KEEP_LOG (copy the
# console log there).
# Leaves no VM, temporary directory or image behind on success, failure, timeout or a signal (the
# guest dies with this script: parent-death signals; a directory a SIGKILL left is removed by the
# next run). Only the cached kernel stays.
set -euo pipefail

readonly SKIP=77
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run-cgroup-vm.sh BUILD_DIR}" && pwd)
timeout_s=${ARBRUN_VM_TIMEOUT:-360}
cache=${ARBRUN_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/arbrun-vm}
tmpbase=${TMPDIR:-/tmp}

skip() {
  echo "**********************************************************************"
  echo "SKIPPED: cgroup VM test: $*"
  echo "**********************************************************************"
  [[ ${ARBRUN_VM_REQUIRE:-0} == 1 ]] && { echo "ARBRUN_VM_REQUIRE=1: failing instead" >&2; exit 1; }
  exit $SKIP
}
fail() { echo "FAIL: cgroup VM test: $*" >&2; exit 1; }

qemu=$(command -v qemu-system-x86_64) ||
  skip "qemu-system-x86_64 is missing (scripts/setup.sh installs qemu-system-x86)"
# KVM where the CPU has hardware virtualisation (vmx/svm; nested inside a VM too). A /dev/kvm
# without it (PVM, a paravirtual hypervisor: kvm_pvm) runs only guests built for it and hangs a
# stock kernel in its real-mode setup, so there, and without /dev/kvm, qemu emulates (TCG: slower).
accel=${ARBRUN_VM_ACCEL:-auto}
if [[ $accel == auto ]]; then
  accel=tcg
  if [[ -r /dev/kvm && -w /dev/kvm ]] && grep -qw -e vmx -e svm /proc/cpuinfo; then accel=kvm; fi
fi
# shellcheck disable=SC2054 # commas inside qemu arguments
case $accel in
  kvm) accel_args=(-accel kvm -cpu host,-arch-capabilities) ;;
  tcg) accel_args=(-accel tcg,thread=multi -cpu max) ;;
  *) fail "ARBRUN_VM_ACCEL must be auto, kvm or tcg (is $accel)" ;;
esac
[[ $accel == tcg || (-r /dev/kvm && -w /dev/kvm) ]] ||
  skip "KVM asked for, but /dev/kvm is missing or not usable by $(id -un)"
for f in bin/arbiter_cgroup_tests bin/arbiter_spin_threads bin/core-arbiter bin/arbctl bin/arbrun lib/libarbrun.so; do
  [[ -e $build/$f ]] || fail "$build/$f is not built"
done

# A directory a killed run left behind (its owner is gone) is removed first.
for d in "$tmpbase"/arbrun-vm.*; do
  [[ -d $d && -f $d/owner ]] || continue
  kill -0 "$(cat "$d/owner")" 2>/dev/null || rm -rf "$d"
done
work=$(mktemp -d "$tmpbase/arbrun-vm.XXXXXX")
echo $$ >"$work/owner"
vm_pid="" tail_pid=""
cleanup() {
  local rc=$?
  set +e  # a killed child's status must not end the cleanup
  if [[ -n $vm_pid ]]; then
    # `timeout` passes SIGTERM to qemu and reaps it; if that takes over 5 s, SIGKILL (qemu then
    # gets SIGKILL as its parent-death signal).
    kill -TERM "$vm_pid" 2>/dev/null
    for _ in {1..50}; do
      kill -0 "$vm_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$vm_pid" 2>/dev/null
    wait "$vm_pid" 2>/dev/null
  fi
  if [[ -n $tail_pid ]]; then
    kill "$tail_pid" 2>/dev/null
    wait "$tail_pid" 2>/dev/null
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Extracts the files matching PATTERN from a Debian package (apt-get download; never installed)
# into OUT, atomically.
deb_extract() {  # deb_extract PACKAGE PATTERN OUT
  local dl=$work/deb
  rm -rf "$dl"
  mkdir -p "$dl" "$(dirname "$3")"
  chmod 755 "$work" "$dl"  # apt's download sandbox user must write there
  echo "fetching $1 (apt-get download, not installed)" >&2
  (cd "$dl" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "$1" >&2) || return 1
  dpkg-deb --fsys-tarfile "$dl"/*.deb | tar -xO --wildcards "$2" >"$dl/out" || return 1
  [[ -s $dl/out ]] || return 1
  mv "$dl/out" "$3"
  rm -rf "$dl"
}

# The kernel: the package linux-image-amd64 depends on, unpacked once into the cache. One fetched
# in the last week is used without asking apt (slow on a busy machine); without a package index,
# any cached one.
kernel_image() {
  local pkg
  if [[ -n ${ARBRUN_VM_KERNEL:-} ]]; then
    echo "$ARBRUN_VM_KERNEL"
    return
  fi
  pkg=$(find "$cache" -maxdepth 1 -name 'vmlinuz-*' -mtime -7 2>/dev/null | sort | tail -1)
  [[ -n $pkg ]] && { echo "$pkg"; return; }
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
  if [[ -z $pkg ]]; then
    pkg=$(find "$cache" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | sort | tail -1)
    [[ -n $pkg ]] && { echo "$pkg"; return; }
    return 1
  fi
  [[ -s $cache/vmlinuz-$pkg ]] || deb_extract "$pkg" './boot/vmlinuz-*' "$cache/vmlinuz-$pkg" ||
    return 1
  echo "$cache/vmlinuz-$pkg"
}

# A static busybox: the installed one if static (busybox-static), else busybox-static's, cached.
static_busybox() {
  local b
  b=$(command -v busybox) && ! ldd "$b" >/dev/null 2>&1 && { echo "$b"; return; }
  b=$cache/busybox-static
  [[ -x $b ]] || { deb_extract busybox-static './bin/busybox' "$b" && chmod 755 "$b"; } || return 1
  echo "$b"
}
t0=$SECONDS
kernel=$(kernel_image) || skip "cannot fetch Debian's linux-image-amd64 (apt-get download failed)"
busybox=$(static_busybox) || skip "no static busybox (apt-get download busybox-static failed)"
t_kernel=$((SECONDS - t0))

# The initramfs: merged-/usr layout, busybox applets, the build tree's binaries at their own paths,
# and every library they load.
root=$work/root
mkdir -p "$root"/{usr/bin,usr/lib,usr/lib64,proc,sys,dev,tmp,run,etc,root}
ln -s usr/bin "$root/bin"
ln -s usr/bin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
cp "$busybox" "$root/usr/bin/busybox"
for applet in $("$busybox" --list); do
  [[ -e $root/usr/bin/$applet ]] || ln -s busybox "$root/usr/bin/$applet"
done
add_with_libraries() {  # copies files to the same path under $root, with their ldd closure
  local f lib
  for f in "$@"; do
    mkdir -p "$root$(dirname "$f")"
    rm -f "$root$f"
    cp -L "$f" "$root$f"
    for lib in $(ldd "$f" | awk '/=> \//{print $3} /^\t\//{print $1}'); do
      [[ -e $root$lib ]] && continue
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
}
add_with_libraries "$build/bin/arbiter_cgroup_tests" "$build/bin/arbiter_spin_threads" \
  "$build/bin/core-arbiter" "$build/bin/arbctl" "$build/bin/arbrun" "$build/lib/libarbrun.so"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"
cp "$here/guest-init.sh" "$root/init"
chmod 755 "$root/init"
printf 'BUILD=%q\nFILTER=%q\nPHASE_LIMIT=%d\n' "$build" "${ARBRUN_VM_FILTER:-}" \
  $(((timeout_s - 60) / 2)) >"$root/vm.env"
(cd "$root" && find . | "$busybox" cpio -o -H newc 2>/dev/null) >"$work/initrd.cpio"
echo "initramfs: $(($(stat -c %s "$work/initrd.cpio") / 1048576)) MiB; kernel: $kernel; accel: $accel"

# The guest: 4 vCPUs, no devices but the serial console, which is its whole output. It powers off
# by itself (reboot -f with -no-reboot, or a kernel panic with panic=-1); `timeout` bounds it, and
# both the timeout and qemu die with their parent.
t1=$SECONDS
: >"$work/console.log"
setpriv --pdeathsig KILL -- timeout -s KILL "$timeout_s" \
  setpriv --pdeathsig KILL -- "$qemu" "${accel_args[@]}" -smp 4 -m 1024 -nodefaults \
  -no-user-config -display none -no-reboot -serial stdio -kernel "$kernel" \
  -initrd "$work/initrd.cpio" \
  -append "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init" \
  </dev/null >"$work/console.log" 2>&1 &
vm_pid=$!
setpriv --pdeathsig KILL -- tail -n +1 -f --pid=$vm_pid "$work/console.log" &
tail_pid=$!
vm_rc=0
wait $vm_pid || vm_rc=$?
vm_pid=""
wait $tail_pid || true
tail_pid=""
t_vm=$((SECONDS - t1))
[[ -n ${ARBRUN_VM_KEEP_LOG:-} ]] && cp "$work/console.log" "$ARBRUN_VM_KEEP_LOG"

echo "cgroup VM test: kernel ${t_kernel}s, VM ${t_vm}s with $accel (boot, tests, power-off)"
result=$(tr -d '\r' <"$work/console.log" | sed -n 's/^ARBRUN-VM-RESULT: //p' | tail -1)
[[ $vm_rc -eq 137 ]] && fail "the VM ran past ${timeout_s}s and was killed"
[[ -n $result ]] || fail "the VM stopped without a result (exit status $vm_rc)"
[[ $result == 0 ]] || fail "tests failed in the VM (see the console above)"
echo "PASSED: cgroup VM test"
