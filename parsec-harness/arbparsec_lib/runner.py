"""Starting, timing and stopping processes the harness owns.

Every child starts in a new session (its own process group, pgid == pid), so it and whatever it
forks can be signalled together without touching anything else. A child is reaped with
os.wait4() for its CPU time and peak RSS; before reaping, the harness waits for it without
reaping (waitid WNOWAIT) and kills what is left of its group, so the group id can never belong to
a process the harness did not start. A Registry remembers every live group; Registry.kill_all()
(run on success, failure, timeout, Ctrl-C and SIGTERM) stops them.
"""
import errno
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass


@dataclass
class RunResult:
    """What a finished process did. returncode: exit status, or -N when killed by signal N."""

    returncode: int
    wall_s: float
    cpu_s: float
    max_rss_kb: int
    timed_out: bool = False

    @property
    def ok(self):
        return self.returncode == 0 and not self.timed_out

    def describe(self):
        if self.timed_out:
            return "timed out"
        if self.returncode < 0:
            try:
                return f"killed by {signal.Signals(-self.returncode).name}"
            except ValueError:
                return f"killed by signal {-self.returncode}"
        return f"exit status {self.returncode}"


def decode_status(status):
    """A wait status as a RunResult-style return code (exit status, or -signal)."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return -1


class Registry:
    """The process groups this harness started and has not reaped yet."""

    def __init__(self):
        self._lock = threading.Lock()
        self._live = {}  # pid -> Process

    def add(self, proc):
        with self._lock:
            self._live[proc.pid] = proc

    def remove(self, proc):
        with self._lock:
            self._live.pop(proc.pid, None)

    def kill_all(self, grace_s=2.0):
        """Stops every live group (SIGTERM, then SIGKILL after grace_s) and reaps the leaders."""
        with self._lock:
            procs = list(self._live.values())
        for p in procs:
            p.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in procs:
            p.wait_exit(max(0.0, deadline - time.monotonic()))
        for p in procs:
            p.reap(kill_first=True)


REGISTRY = Registry()


class Process:
    """A child in its own process group: start, wait (bounded), stop, reap with rusage."""

    def __init__(self, argv, cwd=None, env=None, stdout=None, stderr=None, stdin=None,
                 registry=REGISTRY):
        self.argv = list(argv)
        self.registry = registry
        self._lock = threading.Lock()
        self._reaped = None  # RunResult once reaped
        self._exited = False
        self._exit_time = None
        self.timed_out = False
        self.start_time = time.monotonic()
        self._popen = subprocess.Popen(
            self.argv, cwd=cwd, env=env, stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=stdout, stderr=stderr, start_new_session=True, close_fds=True)
        self.pid = self._popen.pid
        registry.add(self)

    def signal_group(self, sig):
        """Signals the child's whole group, unless the leader has been reaped (then the group
        id may no longer be ours)."""
        with self._lock:
            if self._reaped is not None:
                return
            try:
                os.killpg(self.pid, sig)
            except OSError as e:
                if e.errno not in (errno.ESRCH, errno.EPERM):
                    raise

    def poll_exit(self):
        """True when the leader has exited (it is not reaped: it still holds the group id)."""
        if self._exited or self._reaped is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if info is not None and info.si_pid == self.pid:
            self._exited = True
            self._exit_time = time.monotonic()
        return self._exited

    def wait_exit(self, timeout_s=None):
        """Waits (polling every 5-50 ms) until the leader exits; False on timeout."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        delay = 0.005
        while not self.poll_exit():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.05)
        return True

    def _block_until_exit(self):
        """Blocks until the leader exits, without reaping it (the group id stays ours)."""
        while not self._exited:
            try:
                os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            except InterruptedError:
                continue
            except ChildProcessError:
                pass
            self._exited = True
            self._exit_time = time.monotonic()

    def reap(self, kill_first=False):
        """Kills what is left of the group (all of it if kill_first) and reaps the leader."""
        with self._lock:
            if self._reaped is not None:
                return self._reaped
        if kill_first:
            self.signal_group(signal.SIGKILL)
        self._block_until_exit()
        # Leftovers of the group (daemonised helpers, orphaned children): not wanted.
        self.signal_group(signal.SIGKILL)
        end = self._exit_time or time.monotonic()
        with self._lock:  # signal_group() never races with the reaping below
            try:
                _, status, ru = os.wait4(self.pid, 0)
                code, cpu, rss = decode_status(status), ru.ru_utime + ru.ru_stime, ru.ru_maxrss
            except ChildProcessError:
                code, cpu, rss = -1, 0.0, 0
            self._reaped = RunResult(code, end - self.start_time, cpu, rss, self.timed_out)
            self._popen.returncode = code  # reaped here, not by Popen
        self.registry.remove(self)
        return self._reaped

    def stop(self, grace_s=3.0, sig=signal.SIGTERM):
        """SIGTERM to the group, SIGKILL after grace_s; returns the RunResult."""
        if not self.poll_exit():
            self.signal_group(sig)
            if not self.wait_exit(grace_s):
                self.signal_group(signal.SIGKILL)
        return self.reap()

    def wait(self, timeout_s=None):
        """Waits for the child to exit (blocking, so the wall time is exact); on timeout a timer
        kills its group (timed_out=True)."""
        timer = None
        if timeout_s is not None:
            def expire():
                self.timed_out = True
                self.signal_group(signal.SIGKILL)

            timer = threading.Timer(timeout_s, expire)
            timer.daemon = True
            timer.start()
        try:
            self._block_until_exit()
        finally:
            if timer is not None:
                timer.cancel()
        return self.reap()


def parse_spawn_result(text):
    """arbparsec-spawn's result file as a dict (status, wall_s, cpu_s, max_rss_kb); ValueError
    when a field is missing or malformed."""
    fields = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            fields[parts[0]] = parts[1]
    try:
        return {"status": int(fields["status"]), "wall_s": float(fields["wall_s"]),
                "cpu_s": float(fields["cpu_s"]), "max_rss_kb": int(fields["max_rss_kb"])}
    except (KeyError, ValueError):
        raise ValueError(f"malformed spawn result: {text!r}") from None


def run(argv, cwd=None, env=None, stdout_path=None, stderr_path=None, timeout_s=None,
        registry=REGISTRY, spawn_helper=None, result_path=None):
    """Runs a command to completion (or timeout) with stdout/stderr to files; returns RunResult.

    With spawn_helper (BUILD/bin/arbparsec-spawn) and result_path, the program runs as the
    helper's child and the helper's exact numbers replace the harness's own: the program's
    peak RSS is then its own rather than at least the Python interpreter's (Linux carries the
    forking process's high-water mark across execve). Wall time runs from fork to exit."""
    if spawn_helper:
        if os.path.exists(result_path):
            os.unlink(result_path)
        argv = [spawn_helper, result_path] + list(argv)
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    err = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
    try:
        proc = Process(argv, cwd=cwd, env=env, stdout=out, stderr=err, registry=registry)
    finally:
        for f in (out, err):
            if f is not subprocess.DEVNULL:
                f.close()
    res = proc.wait(timeout_s)
    if spawn_helper:
        try:
            with open(result_path) as f:
                r = parse_spawn_result(f.read())
            res = RunResult(decode_status(r["status"]), r["wall_s"], r["cpu_s"], r["max_rss_kb"],
                            res.timed_out)
        except (OSError, ValueError):
            pass  # killed before it could write: keep the harness's own numbers
    return res


class Terminated(Exception):
    """Raised in the main thread when the harness gets SIGTERM or SIGHUP."""


def install_signal_handlers():
    """SIGTERM/SIGHUP raise Terminated (SIGINT raises KeyboardInterrupt as usual), so the
    callers' finally blocks stop everything that was started."""

    def handler(signum, _frame):
        raise Terminated(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)
