"""The builtin workloads' contract: deterministic checksums that do not depend on the number of
threads, batch mode output, option errors. Needs the build tree (ARBPARSEC_BUILD_DIR)."""
import os
import subprocess
import unittest

from arbparsec_lib import layout, suites

BUILD = os.environ.get("ARBPARSEC_BUILD_DIR", "")


def run(args, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


@unittest.skipUnless(os.access(layout.from_build_dir(BUILD).workload("montecarlo"), os.X_OK),
                     "builtin workloads not built (ARBPARSEC_BUILD_DIR)")
class WorkloadsTest(unittest.TestCase):
    def exe(self, name):
        return layout.from_build_dir(BUILD).workload(name)

    def test_checksums_do_not_depend_on_threads(self):
        for name in suites.BUILTIN:
            if name in suites.OPTIONAL_BUILTIN and not os.access(self.exe(name), os.X_OK):
                continue  # not buildable here (e.g. no OpenMP)
            sums = set()
            for threads in (1, 2, 3):
                p = run([self.exe(name), "--threads", str(threads), "--size", "test"])
                self.assertEqual(p.returncode, 0, f"{name}: {p.stderr}")
                self.assertIn(f"ok {name}", p.stdout.splitlines())
                sums.add(suites.checksum_line(p.stdout))
            self.assertEqual(len(sums), 1, f"{name}: {sums}")

    def test_batch_mode(self):
        p = run([self.exe("montecarlo"), "--size", "test", "--seconds", "0.2", "--threads", "1"])
        self.assertEqual(p.returncode, 0, p.stderr)
        times = suites.unit_times(p.stdout)
        self.assertGreaterEqual(len(times), 1)
        self.assertEqual(suites.units_line(p.stdout), len(times))
        self.assertEqual(times, sorted(times))

    def test_bad_options(self):
        for args in (["--threads", "0"], ["--size", "huge"], ["--bogus", "1"], ["--threads"]):
            p = run([self.exe("dataparallel")] + args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("usage", p.stderr)


if __name__ == "__main__":
    unittest.main()
