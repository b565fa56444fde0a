#!/usr/bin/env bash
# packaging.deb: `cpack -G DEB` from the build tree, then check the packages without installing
# them on this machine:
#   - arbrun_VERSION_ARCH.deb and arbrun-dev_VERSION_ARCH.deb exist;
#   - arbrun's Depends come from dpkg-shlibdeps (libc6, libstdc++6, Boost.Context) plus libunwind
#     and python3; the limits file is a conffile; the maintainer scripts are packaging/debian's
#     (what they decide: packaging.maintainer_scripts);
#   - the file list: everything a user runs, only under /usr and /etc/arbrun, stripped ELF files,
#     no build-tree paths in text files;
#   - unpacked with dpkg-deb -x into a temporary root, its arbrun runs a threaded program with its
#     own libarbrun.so and an empty environment;
#   - arbrun-dev has libarbrt, the headers and arbrt.pc (relocatable: prefix from its own path).
# Usage: deb_test.sh CPACK BUILD_DIR THREADED_CHECK KEY=VALUE... (keys as in install_test.sh)
set -euo pipefail
cpack=$1 build=$2 check_prog=$3
shift 3
declare -A d
for kv in "$@"; do d[${kv%%=*}]=${kv#*=}; done

work=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-deb-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack -G DEB"; }
arch=$(dpkg --print-architecture)
deb=$work/out/arbrun_${d[VERSION]}_$arch.deb
dev=$work/out/arbrun-dev_${d[VERSION]}_$arch.deb
[[ -f $deb && -f $dev ]] || fail "packages: $(ls "$work/out")"

# Control fields.
field() { dpkg-deb -f "$1" "$2"; }
[[ $(field "$deb" Package) == arbrun && $(field "$deb" Version) == "${d[VERSION]}" ]] ||
  fail "control: $(dpkg-deb -f "$deb")"
depends=$(field "$deb" Depends)
# (Boost.Context is linked into libarbrun.so statically: no package of it at run time.)
for want in 'libc6 (>= ' 'libstdc++6 (>= ' 'libunwind' 'python3'; do
  [[ $depends == *"$want"* ]] || fail "Depends lacks '$want': $depends"
done
[[ $(field "$deb" Recommends) == *python3-matplotlib* ]] || fail "Recommends: $(field "$deb" Recommends)"
[[ $(field "$dev" Depends) == *libboost-context-dev* ]] || fail "arbrun-dev Depends: $(field "$dev" Depends)"
dpkg-deb -e "$deb" "$work/control"
[[ $(cat "$work/control/conffiles") == /etc/arbrun/limits.conf ]] ||
  fail "conffiles: $(cat "$work/control/conffiles")"
for s in postinst prerm postrm; do
  [[ -x $work/control/$s ]] || fail "maintainer script $s missing or not executable"
  cmp -s "$work/control/$s" "$(dirname "$0")/../debian/$s" || fail "$s differs from packaging/debian/$s"
done

# The file list.
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | sort >"$work/files"
pkglib=/usr/${d[PKGLIBDIR]}
for f in /usr/bin/{arbrun,core-arbiter,arbctl,arbparsec,arbrun-plot-trace} \
         "$pkglib"/{libarbrun.so,arbloadgen,arbparsec-spawn} \
         "$pkglib"/parsec-workloads/{dataparallel,montecarlo,pipeline,framethreads,trylockspin,yieldspin} \
         /usr/share/arbrun/parsec-harness/arbparsec \
         /usr/share/arbrun/parsec-harness/arbparsec_lib/{cli.py,layout.py,install_layout.py} \
         /usr/share/arbrun/tools/plot-trace.py /usr/lib/systemd/system/core-arbiter.service \
         /etc/arbrun/limits.conf /usr/share/doc/arbrun/{README.md,limits.conf.example}; do
  grep -qx -- "$f" "$work/files" || fail "not in the package: $f"
done
for page in ${d[MAN_PAGES]:-}; do
  grep -qx -- "/usr/${d[MANDIR]}/man${page##*.}/$page.gz" "$work/files" || fail "man page $page not in the package"
done
grep -Ev '^/(usr/(bin|lib|share)|etc/arbrun)(/|$)|^/(etc|usr)?/?$' "$work/files" >"$work/stray" &&
  fail "files outside /usr and /etc/arbrun: $(cat "$work/stray")"
grep -Eq '/(tests|compat)/|\.a$|/include/' "$work/files" && fail "test or development files in arbrun"

# Unpacked into a temporary root: text files name /usr, never the build tree; ELF files stripped;
# the unit starts /usr/bin/core-arbiter with /etc/arbrun/limits.conf.
root=$work/root
dpkg-deb -x "$deb" "$root"
if grep -rIl -- "$build" "$root" >"$work/leaks"; then fail "build paths in: $(cat "$work/leaks")"; fi
for f in "$root/usr/bin/arbrun" "$root$pkglib/libarbrun.so"; do
  file -b "$f" | grep -q ", stripped" || fail "not stripped: $f ($(file -b "$f"))"
done
grep -q '^ExecStart=/usr/bin/core-arbiter .* --config /etc/arbrun/limits.conf$' \
  "$root/usr/lib/systemd/system/core-arbiter.service" || fail "unit ExecStart"

# Its arbrun, with no environment variable, preloads its own library.
lib=$(realpath "$root$pkglib/libarbrun.so")
env -i PATH=/usr/bin:/bin "$root/usr/bin/arbrun" --standalone --stats -- "$check_prog" \
  >"$work/out.txt" 2>"$work/err.txt" || fail "unpacked arbrun: exit $? ($(cat "$work/err.txt"))"
grep -qx "ok threaded_check" "$work/out.txt" || fail "unpacked arbrun: $(cat "$work/out.txt")"
grep -qx "preload: $lib" "$work/out.txt" || fail "unpacked arbrun used $(cat "$work/out.txt")"
grep -q "threads created 9," "$work/err.txt" || fail "no runtime stats: $(cat "$work/err.txt")"
env -i PATH=/usr/bin:/bin "$root/usr/bin/arbparsec" list >"$work/list.txt" 2>&1 ||
  fail "unpacked arbparsec list: $(cat "$work/list.txt")"
grep -q "ready   montecarlo .*$root$pkglib/parsec-workloads/montecarlo" "$work/list.txt" ||
  fail "arbparsec list: $(cat "$work/list.txt")"

# The -dev package.
dpkg-deb -c "$dev" | awk '{print $6}' | sed 's|^\./|/|' >"$work/devfiles"
for f in /usr/include/arbrt/arbrt.h /usr/include/arbrt/policy/estimator.h \
         /usr/include/arbclient/client.h "/usr/${d[LIBDIR]}/libarbrt.a" \
         "/usr/${d[LIBDIR]}/pkgconfig/arbrt.pc"; do
  grep -qx -- "$f" "$work/devfiles" || fail "not in arbrun-dev: $f"
done
dpkg-deb -x "$dev" "$work/devroot"
PKG_CONFIG_SYSROOT_DIR='' PKG_CONFIG_PATH=$work/devroot/usr/${d[LIBDIR]}/pkgconfig \
  pkg-config --variable=includedir arbrt | grep -q "/usr/${d[LIBDIR]}/pkgconfig/.*/include$" ||
  fail "arbrt.pc includedir"
echo "ok packaging.deb ($(basename "$deb"): Depends: $depends)"
