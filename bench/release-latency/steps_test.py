#!/usr/bin/env python3
"""steps.py on a hand-written trace: one release through every step (with the monitor's own
time-slice signal and another thread's send as noise), one whose carrier was idle (the watcher
sleeps again without a signal), and the counts. Usage: steps_test.py (exit 0 when all hold)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# Arbiter 100; tenant 200 with watcher 203, monitor 202, carrier 205.
TRACE = """# tracer: nop
    core-arbiter-100     (    100) [000] ..... 10.000000: sys_futex(uaddr: 0x7f00, op: 1, val: 0x7fffffff, utime: 0, uaddr2: 0, val3: 0)
  compute_tenant-202     (    200) [000] ..... 10.000005: sys_tgkill(tgid: 0xc8, pid: 0xcd, sig: 0x20)
  compute_tenant-203     (    200) [000] ..... 10.000010: sys_futex_waitv -> 0x0
  compute_tenant-203     (    200) [000] ..... 10.000020: sys_tgkill(tgid: 0xc8, pid: 0xcd, sig: 0x20)
  compute_tenant-204     (    200) [001] ..... 10.000025: sys_sendto(fd: 7, buff: 0x1, len: 0x8, flags: 0x4000, addr: 0, addr_len: 0)
  compute_tenant-205     (    200) [001] d..1. 10.000040: signal_deliver: sig=32 errno=0 code=-6 sa_handler=7f sa_flags=14000004
  compute_tenant-205     (    200) [001] ..... 10.000050: sys_sendto(fd: 7, buff: 0x2, len: 0x18, flags: 0x4000, addr: 0, addr_len: 0)
    core-arbiter-100     (    100) [000] ..... 10.000060: sys_epoll_wait -> 0x1
    core-arbiter-100     (    100) [000] ..... 11.000000: sys_futex(uaddr: 0x7f00, op: 1, val: 0x7fffffff, utime: 0, uaddr2: 0, val3: 0)
  compute_tenant-203     (    200) [000] ..... 11.000008: sys_futex_waitv -> 0x0
  compute_tenant-203     (    200) [000] ..... 11.000012: sys_futex_waitv(waiters: 0x1, nr_futexes: 3, flags: 0, timeout: 0, clockid: 1)
    core-arbiter-100     (    100) [000] ..... 11.000030: sys_futex(uaddr: 0x55, op: 0x81, val: 1, utime: 0, uaddr2: 0, val3: 0)
"""
EXPECTED = [
    ("watcher runs", "10.0"),
    ("watcher signals", "20.0"),
    ("signal taken", "40.0"),
    ("release sent", "50.0"),
    ("arbiter reads", "60.0"),
]


def run_steps(trace):
    """steps.py on `trace` (text) for arbiter 100 and tenant 200."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(trace)
        path = f.name
    try:
        return subprocess.run([sys.executable, os.path.join(HERE, "steps.py"), path, "100", "200"],
                              capture_output=True, text=True, check=False)
    finally:
        os.unlink(path)


def main():
    run = run_steps(TRACE)
    out = run.stdout
    print(out, end="")
    failures = []
    if run.returncode != 0:
        failures.append(f"exit status {run.returncode}: {run.stderr}")
    for step, median in EXPECTED:
        row = next((line for line in out.splitlines() if line.startswith(step)), "")
        if row.split()[-3:-2] != [median]:
            failures.append(f"{step}: expected median {median}, row was '{row}'")
    if "releases asked 2, traced through every step 1, carrier idle (woken, no signal) 1" not in out:
        failures.append("wrong counts")
    none = run_steps("# tracer: nop\n")  # no ask at all: exit 1
    if none.returncode != 1:
        failures.append(f"an empty trace exited {none.returncode}, expected 1")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
