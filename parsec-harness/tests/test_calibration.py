"""`arbparsec run --suite parsec` end to end on a fake PARSEC tree whose programs are shell
scripts, with a stand-in for arbrun that runs the program directly: the determinism calibration
(two native runs before comparing), the verdicts and the report."""
import contextlib
import csv
import io
import json
import os
import tempfile
import unittest

from arbparsec_lib import cli
from tests import parsec_fixture as fx

FAKE_ARBRUN = """#!/bin/sh
# Stands in for arbrun: skips its options up to '--' and runs the program, marked.
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
ARBPARSEC_FAKE_ARBRUN=1 exec "$@"
"""

# swaptions: refuses fewer swaptions than threads like the real one; its output differs under
# the stand-in arbrun (a program arbrun would break).
SWAPTIONS = """#!/bin/sh
ns=0; nt=0
while [ $# -gt 0 ]; do case $1 in -ns) ns=$2; shift 2;; -nt) nt=$2; shift 2;; *) shift;; esac; done
if [ "$ns" -lt "$nt" ]; then echo "usage: -ns [number of swaptions (should be > number of threads]" >&2; exit 1; fi
echo "Number of Simulations: 5,  Number of threads: $nt Number of swaptions: $ns"
if [ -n "$ARBPARSEC_FAKE_ARBRUN" ]; then echo "Swaption 0: [SwaptionPrice: 0.99 StdError: 0.1]"
else echo "Swaption 0: [SwaptionPrice: 0.01 StdError: 0.1]"; fi
"""

# fluidanimate: only power-of-two thread counts; its output file varies natively.
FLUIDANIMATE = """#!/bin/sh
case $1 in 1|2|4|8|16) ;; *) echo "number of threads must be a power of 2" >&2; exit 1;; esac
echo "$$ $1" > "$4"
"""

# canneal: exit status only; fails under the stand-in arbrun.
CANNEAL = """#!/bin/sh
[ -n "$ARBPARSEC_FAKE_ARBRUN" ] && exit 3
echo "Final routing is: $$"
"""


def run_cli(argv):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


class CalibrationTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.home = os.path.join(self.tmp.name, "parsec-3.0")
        os.makedirs(os.path.join(self.home, "pkgs", "apps"))
        os.makedirs(os.path.join(self.home, "pkgs", "kernels"))
        self.arbrun = os.path.join(self.tmp.name, "arbrun")
        fx.make_exe(self.arbrun, FAKE_ARBRUN)
        self.out = os.path.join(self.tmp.name, "out")
        fx.install(self.home, "blackscholes", "test", fx.BLACKSCHOLES, inputs={"in_4.txt": b"1\n2\n"})
        fx.install(self.home, "raytrace", "test", fx.RTVIEW, inputs={"octahedron.obj": b"v\n"})
        fx.install(self.home, "swaptions", "test", SWAPTIONS)
        fx.install(self.home, "fluidanimate", "test", FLUIDANIMATE, inputs={"in_5K.fluid": b"x"})
        fx.install(self.home, "canneal", "test", CANNEAL, inputs={"10.nets": b"x"})

    def tearDown(self):
        self.tmp.cleanup()

    def run_suite(self, benchmarks, *extra):
        return run_cli(["run", "--suite", "parsec", "--parsec-home", self.home, "--size", "test",
                        "--threads", "3", "--repeat", "2", "--benchmarks", benchmarks,
                        "--arbrun", self.arbrun, "--build-dir", self.tmp.name, "--out", self.out,
                        "--tmpdir", self.tmp.name] + list(extra))

    def results(self):
        with open(os.path.join(self.out, "results.csv")) as f:
            return list(csv.DictReader(f))

    def test_deterministic_and_natively_varying_programs_pass(self):
        code, out, err = self.run_suite("blackscholes,raytrace,fluidanimate")
        self.assertEqual(code, 0, err)
        rows = self.results()
        self.assertEqual(len(rows), 3 * 2 * 2)  # calibration runs are not in results.csv
        self.assertTrue(all(r["output_ok"] == "yes" for r in rows))
        with open(os.path.join(self.out, "runs.json")) as f:
            runs = json.load(f)
        det = runs["determinism"]
        self.assertEqual(det["blackscholes"], "same output in all 4 native runs")
        self.assertEqual(det["raytrace"], "varies natively, exit status compared")
        self.assertEqual(det["fluidanimate"], "varies natively, exit status compared")
        cal = [r for r in runs["runs"] if str(r["run"]).startswith("calibration")]
        self.assertEqual(len(cal), 3 * 2)
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertIn("varies natively, exit status compared", report)
        self.assertIn("RSS ratio", report)
        self.assertIn("Geometric means of the ratios: wall", report)
        self.assertIn("power-of-two", report)  # fluidanimate ran with 2 threads, not 3
        self.assertIn("[cal] raytrace native calibration run 2/2", err)

    def test_swaptions_runs_and_a_real_difference_fails(self):
        code, _, err = self.run_suite("swaptions")
        self.assertEqual(code, 1, err)
        rows = self.results()
        self.assertEqual([r["output_ok"] for r in rows], ["yes", "no", "yes", "no"])
        with open(os.path.join(self.out, "report.md")) as f:
            report = f.read()
        self.assertIn("swaptions arbrun run 1: output differs from the native run's", report)
        self.assertIn("-ns 1 raised to 3", report)

    def test_exit_status_check(self):
        code, _, _ = self.run_suite("canneal")
        self.assertEqual(code, 1)
        rows = self.results()
        self.assertEqual([r["output_ok"] for r in rows], ["yes", "no", "yes", "no"])
        with open(os.path.join(self.out, "report.md")) as f:
            self.assertIn("exit status 3", f.read())

    def test_single_reference_without_calibration(self):
        code, _, err = self.run_suite("blackscholes", "--calibration-runs", "1", "--mode", "arbrun")
        self.assertEqual(code, 0, err)
        self.assertEqual(len(self.results()), 2)
        self.assertIn("calibration run 1/1", err)


if __name__ == "__main__":
    unittest.main()
