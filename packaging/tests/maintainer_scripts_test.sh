#!/usr/bin/env bash
# packaging.maintainer_scripts: runs debian/postinst, prerm and postrm as dpkg would, with
# deb-systemd-helper, deb-systemd-invoke and systemctl replaced by stubs on PATH that log their
# arguments, and checks what the scripts decide: a fresh install enables and starts nothing, an
# upgrade only try-restarts (and re-enables only a unit that was enabled), removal stops the
# arbiter, purge forgets the unit. Whether systemd runs here only changes the systemctl lines.
set -euo pipefail
scripts=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/arbrun-maint-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for s in postinst prerm postrm; do sh -n "$scripts/$s" || fail "$s: syntax"; done
mkdir "$work/bin"
for tool in deb-systemd-helper deb-systemd-invoke systemctl; do
  cat >"$work/bin/$tool" <<STUB
#!/bin/sh
echo "$tool \$*" >>"$work/log"
# was-enabled and debian-installed answer from the environment (default: no).
case "\$*" in
  *was-enabled*) [ "\${STUB_WAS_ENABLED:-0}" = 1 ] ;;
  *debian-installed*) [ "\${STUB_INSTALLED:-0}" = 1 ] ;;
  *) exit 0 ;;
esac
STUB
  chmod +x "$work/bin/$tool"
done
# run SCRIPT ARGS...: the script's calls, one per line, in $work/log (emptied first).
run() { : >"$work/log"; PATH=$work/bin:/usr/bin:/bin sh "$scripts/$1" "${@:2}" || fail "$* exited $?"; }

run postinst configure
grep -q "deb-systemd-helper update-state core-arbiter.service" "$work/log" || fail "fresh install: $(cat "$work/log")"
grep -Eq " (enable|start|restart|try-restart) " "$work/log" && fail "fresh install starts or enables: $(cat "$work/log")"

STUB_INSTALLED=1 run postinst configure 0.0.9
grep -Eq "deb-systemd-helper enable|invoke (start|restart) " "$work/log" && fail "upgrade (not enabled): $(cat "$work/log")"
if [[ -d /run/systemd/system ]]; then
  grep -q "deb-systemd-invoke try-restart core-arbiter.service" "$work/log" || fail "upgrade: no try-restart"
fi

STUB_INSTALLED=1 STUB_WAS_ENABLED=1 run postinst configure 0.0.9
grep -q "deb-systemd-helper enable core-arbiter.service" "$work/log" || fail "upgrade (enabled): $(cat "$work/log")"

run prerm remove
if [[ -d /run/systemd/system ]]; then
  grep -q "deb-systemd-invoke stop core-arbiter.service" "$work/log" || fail "remove: no stop: $(cat "$work/log")"
fi
run prerm upgrade 0.1.1
grep -q "stop" "$work/log" && fail "prerm upgrade stops: $(cat "$work/log")"

run postrm remove
grep -q "deb-systemd-helper mask core-arbiter.service" "$work/log" || fail "postrm remove: $(cat "$work/log")"
run postrm purge
grep -q "deb-systemd-helper purge core-arbiter.service" "$work/log" || fail "postrm purge: $(cat "$work/log")"
grep -q "deb-systemd-helper unmask core-arbiter.service" "$work/log" || fail "postrm purge: no unmask"
echo "ok packaging.maintainer_scripts"
