"""Facts about this machine that the reports state and the colocation setup depends on."""
import os
import platform
import socket


def cpus():
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def parse_schedstat(text):
    """(ns run, ns waited on a run queue, time slices) from one /proc/PID/task/TID/schedstat line,
    or None when it is not three integers."""
    fields = text.split()
    if len(fields) != 3:
        return None
    try:
        run, wait, slices = (int(f) for f in fields)
    except ValueError:
        return None
    return run, wait, slices


def only_child(pid):
    """The pid of `pid`'s only child (a timeout(1) wrapper's program), or None (none, several, or
    gone)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
    except OSError:
        return None
    return int(kids[0]) if len(kids) == 1 else None


def scheduling(pid):
    """The process's threads summed: (ns run, ns waited on a run queue, time slices), from their
    schedstat files; None when the process is gone or the kernel keeps no schedstat. Threads that
    exit between two samples take their share with them, so a difference undercounts them."""
    total = [0, 0, 0]
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    seen = False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                one = parse_schedstat(f.read())
        except OSError:
            continue
        if one is not None:
            seen = True
            total = [a + b for a, b in zip(total, one)]
    return tuple(total) if seen else None


def wait_per_slice_us(before, after):
    """Microseconds waited on a run queue per time slice between two scheduling() samples, or None
    when either is missing or no slice ran."""
    if before is None or after is None or after[2] <= before[2]:
        return None
    return max(0, after[1] - before[1]) / (after[2] - before[2]) / 1000.0


def describe():
    return f"{cpus()} CPUs ({cpu_model()}), Linux {platform.release()}"


def cpuset_hierarchy(mounts_text=None):
    """'cgroup-v1' or 'cgroup-v2' when a cpuset controller is mounted (v2: listed in the root's
    cgroup.controllers), else None."""
    if mounts_text is None:
        try:
            with open("/proc/mounts") as f:
                mounts_text = f.read()
        except OSError:
            return None
    v2_root = None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        mnt, fstype, opts = parts[1], parts[2], parts[3].split(",")
        if fstype == "cgroup" and "cpuset" in opts:
            return "cgroup-v1"
        if fstype == "cgroup2" and v2_root is None:
            v2_root = mnt
    if v2_root:
        try:
            with open(os.path.join(v2_root, "cgroup.controllers")) as f:
                if "cpuset" in f.read().split():
                    return "cgroup-v2"
        except OSError:
            pass
    return None


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (callers retry on a clash)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
