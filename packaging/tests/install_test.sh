#!/usr/bin/env bash
# packaging.install: `cmake --install` into a temporary prefix, then use what was installed with
# an empty environment (env -i, PATH only):
#   - arbrun runs a threaded program with the installed libarbrun.so (also through a symlink), and
#     `arbrun doctor` finds that library;
#   - the installed core-arbiter (fake backend: pins nothing) grants cores to it; arbctl reports;
#   - arbparsec runs an installed workload under the installed arbrun; arbrun-plot-trace plots;
#   - a program built against the installed libarbrt with pkg-config runs;
#   - the unit and limits file name this prefix; a second install keeps an edited limits file;
#   - the man pages are there.
# Usage: install_test.sh CMAKE BUILD_DIR THREADED_CHECK API_CHECK_SOURCE CXX KEY=VALUE...
# (KEY: BINDIR LIBDIR PKGLIBDIR DATADIR MANDIR DOCDIR INCLUDEDIR SYSCONFDIR VERSION MAN_PAGES)
set -euo pipefail
cmake=$1 build=$2 check_prog=$3 api_source=$4 cxx=$5
shift 5
declare -A d
for kv in "$@"; do d[${kv%%=*}]=${kv#*=}; done

work=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-install-test.XXXXXX")
arbiter_pid=
cleanup() {
  if [[ -n $arbiter_pid ]]; then kill "$arbiter_pid" 2>/dev/null || true; wait "$arbiter_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$work/prefix
run_clean() { env -i PATH=/usr/bin:/bin "$@"; }  # no ARBRUN_*, no LD_PRELOAD, no HOME

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install"; }

# What a user runs and what it needs, where GNUInstallDirs puts it.
for f in "${d[BINDIR]}"/{arbrun,core-arbiter,arbctl,arbparsec,arbrun-plot-trace} \
         "${d[PKGLIBDIR]}"/{libarbrun.so,arbloadgen,arbparsec-spawn} \
         "${d[PKGLIBDIR]}"/parsec-workloads/{dataparallel,montecarlo,pipeline} \
         "${d[DATADIR]}"/arbrun/parsec-harness/arbparsec_lib/{cli.py,install_layout.py} \
         "${d[DATADIR]}"/arbrun/tools/plot-trace.py \
         lib/systemd/system/core-arbiter.service "${d[SYSCONFDIR]}"/arbrun/limits.conf \
         "${d[DOCDIR]}"/{README.md,ARCHITECTURE.md,PROTOCOL.md,limits.conf.example} \
         "${d[INCLUDEDIR]}"/arbrt/{arbrt.h,policy/estimator.h} "${d[INCLUDEDIR]}"/arbclient/client.h \
         "${d[LIBDIR]}"/{libarbrt.a,libarbrt_platform.a,libarbrt_policy_runtime.a,pkgconfig/arbrt.pc}; do
  [[ -e $prefix/$f ]] || fail "not installed: $f"
done
# The embedding interface (runtime/include/arbrt/embed) is the preload library's, not the API's.
[[ ! -e $prefix/${d[INCLUDEDIR]}/arbrt/embed ]] || fail "arbrt/embed/ installed with the public headers"
for page in ${d[MAN_PAGES]:-}; do
  [[ -s $prefix/${d[MANDIR]}/man${page##*.}/$page.gz ]] || fail "man page $page not installed"
done
[[ -z ${d[MAN_PAGES]:-} ]] && echo "note: man pages not generated in this build (no python3)"
# Nothing of the build tree leaks into installed text files (unit, .pc, layout, scripts).
if grep -rIl -- "$build" "$prefix" >"$work/leaks"; then fail "build paths in: $(cat "$work/leaks")"; fi

bin=$prefix/${d[BINDIR]}
lib=$(realpath "$prefix/${d[PKGLIBDIR]}/libarbrun.so")

# The installed arbrun preloads the installed library, with no environment variable.
check_run() {  # check_run ARBRUN_PATH WHAT [ARBRUN OPTIONS...]
  local arbrun=$1 what=$2
  shift 2
  run_clean "$arbrun" --stats "$@" -- "$check_prog" >"$work/out" 2>"$work/err" ||
    fail "$what: exit $? ($(cat "$work/err"))"
  grep -qx "ok threaded_check" "$work/out" || fail "$what: $(cat "$work/out")"
  grep -qx "preload: $lib" "$work/out" || fail "$what: wrong library: $(cat "$work/out")"
  grep -q "threads created 9," "$work/err" || fail "$what: no runtime stats: $(cat "$work/err")"
}
check_run "$bin/arbrun" "installed arbrun" --standalone
ln -s "$bin/arbrun" "$work/arbrun-link"
check_run "$work/arbrun-link" "arbrun through a symlink" --standalone --cores 1
run_clean "$bin/arbrun" doctor --arbiter "$work/no-arbiter.sock" >"$work/doctor" 2>&1 || true
grep -Eq "^OK +preload +$lib" "$work/doctor" || fail "doctor: $(cat "$work/doctor")"

# The installed core-arbiter on its fake backend, with the installed limits file, grants the
# installed arbrun's process cores.
"$bin/core-arbiter" --socket "$work/arb.sock" --backend fake --cgroup-root "$work/cg" \
  --cpus 0-3 --log-level warn --config "$prefix/${d[SYSCONFDIR]}/arbrun/limits.conf" \
  2>"$work/arbiter.log" &
arbiter_pid=$!
for _ in $(seq 100); do [[ -S $work/arb.sock ]] && break; sleep 0.05; done
[[ -S $work/arb.sock ]] || fail "core-arbiter did not start: $(cat "$work/arbiter.log")"
check_run "$bin/arbrun" "arbrun with the installed arbiter" --arbiter "$work/arb.sock" --cores 1:2
run_clean "$bin/arbctl" --socket "$work/arb.sock" status >"$work/status" 2>&1 ||
  fail "arbctl status: $(cat "$work/status")"
kill "$arbiter_pid"
wait "$arbiter_pid" || true
arbiter_pid=

# arbparsec uses the installed arbrun, helpers and workloads by itself.
run_clean "$bin/arbparsec" run --suite builtin --benchmarks montecarlo --size test --repeat 1 \
  --threads 2 --out "$work/ap" --tmpdir "$work" >"$work/ap.log" 2>&1 ||
  fail "arbparsec run: $(cat "$work/ap.log")"
grep -q "^montecarlo,arbrun,1,.*,yes" "$work/ap/results.csv" || fail "arbparsec: $(cat "$work/ap/results.csv")"
grep -q "arbrun: $bin/arbrun " "$work/ap/report.md" || fail "arbparsec did not use $bin/arbrun"

# arbrun-plot-trace (the symlink) on a trace the installed arbrun wrote.
run_clean "$bin/arbrun" --standalone --trace "$work/t.csv" -- "$check_prog" >/dev/null 2>&1 ||
  fail "arbrun --trace"
if run_clean /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  run_clean "$bin/arbrun-plot-trace" "$work/t.csv" "$work/t.png" || fail "arbrun-plot-trace"
  [[ -s $work/t.png ]] || fail "arbrun-plot-trace wrote no PNG"
else
  run_clean "$bin/arbrun-plot-trace" --help >/dev/null || fail "arbrun-plot-trace --help"
fi

# A program of one's own against the installed runtime API.
flags=$(PKG_CONFIG_PATH=$prefix/${d[LIBDIR]}/pkgconfig pkg-config --cflags --libs arbrt) ||
  fail "pkg-config arbrt"
# shellcheck disable=SC2086
"$cxx" -std=c++20 -O1 "$api_source" $flags -o "$work/api_check" 2>"$work/cxx.log" ||
  fail "building against the installed libarbrt: $(cat "$work/cxx.log")"
run_clean "$work/api_check" | grep -qx "ok arbrt_api_check" || fail "api_check"

# The unit and the limits file name this prefix; an edited limits file survives a reinstall.
unit=$prefix/lib/systemd/system/core-arbiter.service
limits=$prefix/${d[SYSCONFDIR]}/arbrun/limits.conf
grep -q "^ExecStart=$bin/core-arbiter .* --config $limits\$" "$unit" || fail "unit: $(grep Exec "$unit")"
grep -q "^Documentation=file://$prefix/${d[DOCDIR]}/PROTOCOL.md" "$unit" || fail "unit docs"
echo "user root max-cores=3" >>"$limits"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install2.log" 2>&1 || fail "second install"
grep -q "^user root max-cores=3" "$limits" || fail "a reinstall overwrote the edited limits file"
echo "ok packaging.install"
