import os
import signal
import tempfile
import time
import unittest

from arbparsec_lib import runner


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is not alive for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class RunnerTest(unittest.TestCase):
    def setUp(self):
        self.reg = runner.Registry()
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.reg.kill_all(grace_s=0.5)
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_exit_status_and_output(self):
        r = runner.run(["/bin/sh", "-c", "echo hi; echo err >&2; exit 3"], registry=self.reg,
                       stdout_path=self.path("o"), stderr_path=self.path("e"))
        self.assertEqual(r.returncode, 3)
        self.assertFalse(r.ok)
        self.assertEqual(r.describe(), "exit status 3")
        with open(self.path("o")) as f:
            self.assertEqual(f.read(), "hi\n")
        with open(self.path("e")) as f:
            self.assertEqual(f.read(), "err\n")

    def test_rusage(self):
        r = runner.run(["/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"],
                       registry=self.reg)
        self.assertTrue(r.ok)
        self.assertGreater(r.cpu_s, 0)
        self.assertGreater(r.max_rss_kb, 0)
        self.assertGreaterEqual(r.wall_s, r.cpu_s * 0.5)

    def test_signal(self):
        r = runner.run(["/bin/sh", "-c", "kill -TERM $$"], registry=self.reg)
        self.assertEqual(r.returncode, -signal.SIGTERM)
        self.assertEqual(r.describe(), "killed by SIGTERM")

    def test_timeout_kills_the_group(self):
        pidfile = self.path("pid")
        start = time.monotonic()
        r = runner.run(["/bin/sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"],
                       registry=self.reg, timeout_s=0.5)
        self.assertTrue(r.timed_out)
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(r.describe(), "timed out")
        with open(pidfile) as f:
            child = int(f.read())
        for _ in range(100):
            if not alive(child):
                break
            time.sleep(0.02)
        self.assertFalse(alive(child), "the background sleep survived")

    def test_leftovers_of_a_finished_program_are_killed(self):
        pidfile = self.path("pid")
        r = runner.run(["/bin/sh", "-c", f"sleep 30 & echo $! > {pidfile}"], registry=self.reg)
        self.assertTrue(r.ok)
        with open(pidfile) as f:
            child = int(f.read())
        for _ in range(100):
            if not alive(child):
                break
            time.sleep(0.02)
        self.assertFalse(alive(child))

    def test_background_stop_and_registry(self):
        p = runner.Process(["/bin/sh", "-c", "trap 'exit 7' TERM; while :; do sleep 0.05; done"],
                           registry=self.reg)
        time.sleep(0.2)
        self.assertFalse(p.poll_exit())
        r = p.stop(grace_s=5)
        self.assertIn(r.returncode, (7, -signal.SIGTERM))
        q = runner.Process(["/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"],
                           registry=self.reg)
        time.sleep(0.1)
        start = time.monotonic()
        self.reg.kill_all(grace_s=0.3)  # ignores SIGTERM: SIGKILL after the grace
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(q.reap().returncode, -signal.SIGKILL)
        self.assertTrue(q.poll_exit())
        q.signal_group(signal.SIGKILL)  # reaped: a no-op, never an error

    def test_spawn_result(self):
        r = runner.parse_spawn_result("status 256\nwall_s 1.5\ncpu_s 0.25\nmax_rss_kb 2048\n")
        self.assertEqual(r, {"status": 256, "wall_s": 1.5, "cpu_s": 0.25, "max_rss_kb": 2048})
        self.assertEqual(runner.decode_status(256), 1)
        with self.assertRaises(ValueError):
            runner.parse_spawn_result("status x\n")
        with self.assertRaises(ValueError):
            runner.parse_spawn_result("wall_s 1\n")

    def test_spawn_helper(self):
        helper = os.path.join(os.environ.get("ARBPARSEC_BUILD_DIR", ""), "bin", "arbparsec-spawn")
        if not os.access(helper, os.X_OK):
            self.skipTest("arbparsec-spawn not built (ARBPARSEC_BUILD_DIR)")
        res = self.path("res")
        r = runner.run(["/bin/sh", "-c", "exit 5"], registry=self.reg, spawn_helper=helper,
                       result_path=res)
        self.assertEqual(r.returncode, 5)
        self.assertTrue(os.path.exists(res))
        # The program's own peak RSS, well under the Python interpreter's.
        r = runner.run(["/bin/true"], registry=self.reg, spawn_helper=helper, result_path=res)
        self.assertTrue(r.ok)
        self.assertLess(r.max_rss_kb, 8000)


if __name__ == "__main__":
    unittest.main()
