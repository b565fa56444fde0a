"""Command lines of every PARSEC 3.0 package at every size, built from run configurations in
PARSEC's own file format (tests/parsec_fixture.py; written from PARSEC 3.0's layout, not checked
against a real installation)."""
import os
import shlex
import tempfile
import unittest

from arbparsec_lib import suites
from tests import parsec_fixture as fx


class RunconfFixtureTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.home = self.tmp.name
        os.makedirs(os.path.join(self.home, "pkgs", "apps"))
        os.makedirs(os.path.join(self.home, "pkgs", "kernels"))
        for app in fx.RUNCONFS:
            for size in fx.SIZES:
                fx.install(self.home, app, size)

    def tearDown(self):
        self.tmp.cleanup()

    def found(self, size, threads, names=None):
        d = suites.discover_parsec(self.home, size, threads, names)
        self.assertEqual(d.missing, [])
        return {b.name: b for b in d.ready}

    def test_every_package_and_size(self):
        for size in fx.SIZES:
            ready = self.found(size, 4)
            self.assertEqual(sorted(ready), sorted(fx.RUNCONFS), size)
            for app, (group, run_exec, args, exports) in fx.RUNCONFS.items():
                b = ready[app]
                with self.subTest(app=app, size=size):
                    self.assertEqual(b.argv[0], os.path.join(
                        self.home, "pkgs", group, app, "inst", "amd64-linux.gcc-pthreads", run_exec))
                    want = shlex.split(args[size].replace("${NTHREADS}", "4"))
                    if app == "swaptions" and int(want[1]) < 4:
                        want[1] = "4"  # the -ns fix: see test_swaptions_*
                    self.assertEqual(b.argv[1:], want)
                    for k, v in exports.items():
                        self.assertEqual(b.env[k], v.replace("${NTHREADS}", "4"))
                    if size in fx.NO_INPUTS.get(app, ()):
                        self.assertIsNone(b.inputs)
                    else:
                        self.assertTrue(b.inputs.endswith(f"inputs/input_{size}.tar"))
                    self.assertNotIn("arguments used", b.note)  # the runconf was used

    def test_builtin_table_agrees_with_the_fixtures(self):
        # With no runconf files at all, PARSEC 3.0's arguments built into the harness give the
        # same command lines (and the note says where they came from).
        for app in fx.RUNCONFS:
            for size in fx.SIZES:
                os.unlink(os.path.join(fx.pkg_dir(self.home, app), "parsec", f"{size}.runconf"))
        for size in fx.SIZES:
            ready = self.found(size, 4)
            for app, (_group, run_exec, args, exports) in fx.RUNCONFS.items():
                with self.subTest(app=app, size=size):
                    b = ready[app]
                    self.assertTrue(b.argv[0].endswith(run_exec))
                    want = shlex.split(args[size].replace("${NTHREADS}", "4"))
                    if app == "swaptions" and int(want[1]) < 4:
                        want[1] = "4"
                    self.assertEqual(b.argv[1:], want)
                    for k, v in exports.items():
                        self.assertEqual(b.env[k], v.replace("${NTHREADS}", "4"))
                    self.assertIn(f"PARSEC 3.0's {size} arguments used", b.note)

    def test_known_command_lines(self):
        t = self.found("test", 4)
        self.assertEqual(t["raytrace"].argv[0].rsplit("/", 2)[1:], ["bin", "rtview"])
        self.assertEqual(t["raytrace"].argv[1:], shlex.split(
            "octahedron.obj -automove -nthreads 4 -frames 1 -res 1 1"))
        self.assertEqual(t["dedup"].argv[1:], shlex.split("-c -p -v -t 4 -i test.dat -o output.dat.ddp"))
        self.assertEqual(t["facesim"].argv[1:], ["-h"])
        self.assertEqual(t["freqmine"].env, {"OMP_NUM_THREADS": "4"})
        self.assertEqual(t["freqmine"].argv[1:], ["T10I4D100K_3.dat", "1"])
        n = self.found("native", 8)
        self.assertEqual(n["dedup"].argv[-3:], ["FC-6-x86_64-disc1.iso", "-o", "output.dat.ddp"])
        self.assertEqual(n["vips"].env, {"IM_CONCURRENCY": "8"})
        self.assertEqual(n["facesim"].argv[1:], shlex.split("-timing -threads 8 -lastframe 100"))
        self.assertEqual(n["swaptions"].argv[1:], shlex.split("-ns 128 -sm 1000000 -nt 8"))
        self.assertEqual(n["x264"].argv[-1], "eledream_1920x1080_512.y4m")
        self.assertIn("--threads", n["x264"].argv)
        self.assertEqual(n["x264"].argv[n["x264"].argv.index("--threads") + 1], "8")
        d = self.found("simdev", 2)
        self.assertEqual(d["raytrace"].argv[1], "bunny.obj")
        self.assertEqual(d["streamcluster"].argv[1:], shlex.split("3 10 3 16 16 10 none output.txt 2"))
        self.assertEqual(self.found("simlarge", 2)["canneal"].argv[1:],
                         shlex.split("2 15000 2000 400000.nets 128"))

    def test_swaptions_gets_as_many_swaptions_as_threads(self):
        # swaptions refuses -ns below -nt and prints its usage (the exit status 1 at size
        # test with --threads 4, where PARSEC's runconf says -ns 1).
        b = self.found("test", 4, ["swaptions"])["swaptions"]
        self.assertEqual(b.argv[1:], ["-ns", "4", "-sm", "5", "-nt", "4"])
        self.assertIn("-ns 1 raised to 4", b.note)
        b = self.found("test", 1, ["swaptions"])["swaptions"]
        self.assertEqual(b.argv[1:], ["-ns", "1", "-sm", "5", "-nt", "1"])
        self.assertNotIn("raised", b.note)
        b = self.found("simsmall", 8, ["swaptions"])["swaptions"]
        self.assertEqual(b.argv[1:3], ["-ns", "16"])
        self.assertEqual(suites.fix_argv("swaptions", ["-ns", "x"], 4), (["-ns", "x"], ""))

    def test_fluidanimate_power_of_two_threads(self):
        b = self.found("simsmall", 6, ["fluidanimate"])["fluidanimate"]
        self.assertEqual(b.argv[1:], ["4", "5", "in_35K.fluid", "out.fluid"])
        self.assertIn("power-of-two", b.note)
        b = self.found("simsmall", 8, ["fluidanimate"])["fluidanimate"]
        self.assertEqual(b.argv[1], "8")
        self.assertEqual(suites.threads_for("fluidanimate", 1), (1, ""))
        self.assertEqual(suites.threads_for("blackscholes", 3), (3, ""))

    def test_missing_inputs_name_the_archive(self):
        for size, archive in (("test", "core"), ("simdev", "core"), ("simlarge", "input-sim"),
                              ("native", "input-native")):
            os.unlink(os.path.join(fx.pkg_dir(self.home, "ferret"), "inputs", f"input_{size}.tar"))
            d = suites.discover_parsec(self.home, size, 2, ["ferret"])
            self.assertEqual(d.ready, [])
            self.assertIn(f"parsec-3.0-{archive}.tar.gz", d.missing[0][2])

    def test_run_exec_and_config_from_the_tree(self):
        # run_exec comes from the runconf; a gcc build is not taken for gcc-pthreads.
        fx.write_runconf(self.home, "blackscholes", "test", run_exec="bin/blackscholes-v2")
        d = suites.discover_parsec(self.home, "test", 2, ["blackscholes"])
        self.assertIn("inst/*.gcc-pthreads/bin/blackscholes-v2", d.missing[0][1])
        fx.make_exe(os.path.join(fx.pkg_dir(self.home, "blackscholes"), "inst", "amd64-linux.gcc",
                                 "bin", "blackscholes-v2"))
        b = suites.discover_parsec(self.home, "test", 2, ["blackscholes"]).ready[0]
        self.assertTrue(b.argv[0].endswith("amd64-linux.gcc/bin/blackscholes-v2"))
        self.assertIn("built as gcc", b.note)

    def test_unreadable_runconf_falls_back(self):
        path = os.path.join(fx.pkg_dir(self.home, "canneal"), "parsec", "test.runconf")
        with open(path, "w") as f:
            f.write('run_args="${NTHREADS} 5 100 10.nets 1\n')  # unbalanced quote
        b = suites.discover_parsec(self.home, "test", 2, ["canneal"]).ready[0]
        self.assertEqual(b.argv[1:], ["2", "5", "100", "10.nets", "1"])
        self.assertIn("unreadable", b.note)


if __name__ == "__main__":
    unittest.main()
