#!/usr/bin/env python3
"""threads.py: CPython's threading on top of pthreads, self-checking.

Exercises what CPython leans on: the GIL's timed condvar waits, sem_clockwait-based Lock
acquire with timeouts, threads started and detached at once, Condition.wait(timeout), Event,
queue.Queue, ThreadPoolExecutor and time.sleep. Prints `ok threads.py` and exits 0, or prints
`FAIL threads.py: <what>` and exits 1. A watchdog turns a hang into a failure after 30 s.
"""

import concurrent.futures
import os
import queue
import signal
import sys
import threading
import time

NAME = "threads.py"


def fail(what):
    print(f"FAIL {NAME}: {what}", flush=True)
    os._exit(1)


def check(cond, what):
    if not cond:
        fail(what)


def on_alarm(signum, frame):
    print(f"FAIL {NAME}: timeout: still running after 30 s (hang)", flush=True)
    os._exit(1)


def test_threads_and_lock():
    """Many threads increment a counter under a Lock; joins return."""
    lock = threading.Lock()
    state = {"n": 0}

    def work():
        for _ in range(2000):
            with lock:
                state["n"] += 1

    ts = [threading.Thread(target=work, name=f"w{i}") for i in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=20)
        check(not t.is_alive(), "a worker did not finish")
    check(state["n"] == 32000, f"counter {state['n']}")


def test_lock_timeouts():
    """Lock.acquire(timeout) fails after the timeout, never early; RLock re-enters."""
    lock = threading.Lock()
    lock.acquire()
    t0 = time.monotonic()
    got = lock.acquire(timeout=0.05)
    elapsed = time.monotonic() - t0
    check(not got, "acquired a held lock")
    check(elapsed >= 0.05, f"Lock.acquire timed out early ({elapsed:.4f} s)")
    check(not lock.acquire(blocking=False), "non-blocking acquire of a held lock")

    def release_later():
        time.sleep(0.02)
        lock.release()

    t = threading.Thread(target=release_later)
    t.start()
    check(lock.acquire(timeout=20), "lock not acquired after release by another thread")
    lock.release()
    t.join()

    r = threading.RLock()
    for _ in range(5):
        r.acquire()
    for _ in range(5):
        r.release()


def test_condition_timeout():
    """Condition.wait(timeout) returns False after the timeout and True when notified."""
    cond = threading.Condition()
    with cond:
        t0 = time.monotonic()
        woke = cond.wait(timeout=0.05)
        check(not woke, "Condition.wait returned True without notify")
        check(time.monotonic() - t0 >= 0.05, "Condition.wait timed out early")
    box = []

    def notifier():
        time.sleep(0.02)
        with cond:
            box.append(1)
            cond.notify_all()

    t = threading.Thread(target=notifier)
    t.start()
    with cond:
        check(cond.wait_for(lambda: box, timeout=20), "notify missed")
    t.join()


def test_event():
    """Event.wait times out, then is released by set() from another thread for all waiters."""
    ev = threading.Event()
    t0 = time.monotonic()
    check(not ev.wait(0.03), "Event.wait returned True unset")
    check(time.monotonic() - t0 >= 0.03, "Event.wait timed out early")
    released = []
    lock = threading.Lock()

    def waiter():
        if ev.wait(20):
            with lock:
                released.append(1)

    ts = [threading.Thread(target=waiter, daemon=True) for _ in range(8)]
    for t in ts:
        t.start()
    time.sleep(0.01)
    ev.set()
    for t in ts:
        t.join(20)
    check(len(released) == 8, f"{len(released)} of 8 event waiters released")


def test_queue_pipeline():
    """Producer -> 4 workers -> collector through bounded queue.Queue objects."""
    q_in = queue.Queue(maxsize=8)
    q_out = queue.Queue()
    n = 5000

    def worker():
        while True:
            item = q_in.get()
            if item is None:
                q_in.task_done()
                break
            q_out.put(item * item)
            q_in.task_done()

    ws = [threading.Thread(target=worker) for _ in range(4)]
    for w in ws:
        w.start()
    for i in range(n):
        q_in.put(i)
    for _ in ws:
        q_in.put(None)
    q_in.join()
    for w in ws:
        w.join(20)
    total = 0
    count = 0
    while True:
        try:
            total += q_out.get_nowait()
            count += 1
        except queue.Empty:
            break
    check(count == n, f"{count} of {n} items")
    check(total == sum(i * i for i in range(n)), "wrong sum")
    t0 = time.monotonic()
    try:
        queue.Queue().get(timeout=0.03)
        fail("get on an empty queue returned")
    except queue.Empty:
        pass
    check(time.monotonic() - t0 >= 0.03, "Queue.get timed out early")


def test_executor():
    """ThreadPoolExecutor maps and submits; results and exceptions come back."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as ex:
        results = list(ex.map(lambda x: x * 3, range(1000)))
        check(results == [x * 3 for x in range(1000)], "map results")
        futs = [ex.submit(time.sleep, 0.01) for _ in range(24)]
        for f in concurrent.futures.as_completed(futs, timeout=20):
            f.result()

        def boom():
            raise ValueError("boom")

        try:
            ex.submit(boom).result(timeout=20)
            fail("exception not propagated")
        except ValueError:
            pass


def test_sleep_parallel():
    """32 threads sleeping 0.1 s at once finish together (sleep releases the GIL)."""
    ts = [threading.Thread(target=time.sleep, args=(0.1,)) for _ in range(32)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    took = time.monotonic() - t0
    check(took >= 0.1, "sleep returned early")
    check(took < 2.0, f"32 parallel 0.1 s sleeps took {took:.2f} s")


def test_gil_switching():
    """Two CPU-bound threads both make progress (the GIL's timed waits hand it over)."""
    progress = [0, 0]
    stop = threading.Event()

    def spin(i):
        while not stop.is_set():
            progress[i] += 1

    ts = [threading.Thread(target=spin, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    time.sleep(0.2)
    stop.set()
    for t in ts:
        t.join(20)
    check(progress[0] > 0 and progress[1] > 0, f"GIL starvation: {progress}")


def test_local_and_ident():
    """threading.local is per thread; idents are distinct among live threads."""
    local = threading.local()
    local.v = "main"
    idents = []
    barrier = threading.Barrier(6)
    bad = []

    def body(i):
        check(not hasattr(local, "v"), "thread sees main's local")
        local.v = i
        idents.append(threading.get_ident())
        barrier.wait(20)
        if local.v != i:
            bad.append(i)

    ts = [threading.Thread(target=body, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    check(not bad, "threading.local mixed up")
    check(len(set(idents)) == 6, "thread idents not distinct")
    check(local.v == "main", "main's local changed")


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(30)
    test_threads_and_lock()
    test_lock_timeouts()
    test_condition_timeout()
    test_event()
    test_queue_pipeline()
    test_executor()
    test_sleep_parallel()
    test_gil_switching()
    test_local_and_ident()
    print(f"ok {NAME}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
