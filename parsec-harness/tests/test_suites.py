import io
import os
import stat
import tarfile
import tempfile
import unittest

from arbparsec_lib import layout, suites


def make_exe(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def make_tar(path, members):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


class RunconfTest(unittest.TestCase):
    def test_parse(self):
        text = '''#!/bin/bash
# simsmall.runconf
run_exec="bin/blackscholes"   # the binary
run_args="${NTHREADS} in_4K.txt prices.txt"
other="x"
'''
        rc = suites.parse_runconf(text)
        self.assertEqual((rc.run_exec, rc.run_args), ("bin/blackscholes", "${NTHREADS} in_4K.txt prices.txt"))
        self.assertEqual(rc.assigned["other"], "x")
        self.assertEqual(rc.exports, {})
        self.assertEqual(suites.parse_runconf("run_args='-ns 16 -nt ${NTHREADS}'").run_args,
                         "-ns 16 -nt ${NTHREADS}")
        self.assertEqual(suites.parse_runconf("run_args=plain").run_args, "plain")
        self.assertIsNone(suites.parse_runconf("# nothing\n").run_args)
        with self.assertRaises(suites.RunconfError):
            suites.parse_runconf('run_args="unbalanced\n')

    def test_exports_and_variables(self):
        rc = suites.parse_runconf('export OMP_NUM_THREADS=${NTHREADS}\nINPUT="a b"\n'
                                  'run_args="${INPUT} -t $NTHREADS"\n')
        self.assertEqual(rc.exports, {"OMP_NUM_THREADS": "${NTHREADS}"})
        args, env, unknown = suites.resolve_runconf(rc, 6)
        self.assertEqual(args, ["a", "b", "-t", "6"])
        self.assertEqual(env, {"OMP_NUM_THREADS": "6"})
        self.assertEqual(unknown, [])
        rc = suites.parse_runconf('run_args="-i ${PARSECDIR}/x ${NTHREADS}"\n')
        self.assertEqual(suites.resolve_runconf(rc, 2)[2], ["PARSECDIR"])

    def test_continuation_lines(self):
        rc = suites.parse_runconf('run_args="-a 1 \\\n-b 2"\n')
        self.assertEqual(rc.run_args, "-a 1 -b 2")

    def test_expand(self):
        self.assertEqual(suites.expand("-t ${NTHREADS} -n $NTHREADS", 4), "-t 4 -n 4")


class DiscoveryTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.home = self.tmp.name
        os.makedirs(os.path.join(self.home, "pkgs", "apps"))
        os.makedirs(os.path.join(self.home, "pkgs", "kernels"))

    def tearDown(self):
        self.tmp.cleanup()

    def pkg(self, name):
        return os.path.join(self.home, "pkgs", suites.PARSEC[name].group, name)

    def test_errors(self):
        with self.assertRaises(suites.SuiteError) as cm:
            suites.discover_parsec(None, "simsmall", 2)
        self.assertIn("--parsec-home", str(cm.exception))
        with self.assertRaises(suites.SuiteError) as cm:
            suites.discover_parsec(os.path.join(self.home, "pkgs"), "simsmall", 2)
        self.assertIn("does not look like PARSEC", str(cm.exception))
        with self.assertRaises(suites.SuiteError):
            suites.discover_parsec(self.home, "simsmall", 2, ["nosuch"])

    def test_ready_and_missing(self):
        bs = self.pkg("blackscholes")
        make_exe(os.path.join(bs, "inst", "amd64-linux.gcc-pthreads", "bin", "blackscholes"))
        make_tar(os.path.join(bs, "inputs", "input_simsmall.tar"), {"in_4K.txt": b"4\n"})
        # streamcluster needs no input archive
        sc = self.pkg("streamcluster")
        make_exe(os.path.join(sc, "inst", "amd64-linux.gcc-pthreads", "bin", "streamcluster"))
        # ferret: built, no input of this size
        fe = self.pkg("ferret")
        make_exe(os.path.join(fe, "inst", "amd64-linux.gcc-pthreads", "bin", "ferret"))
        make_tar(os.path.join(fe, "inputs", "input_test.tar"), {"x": b""})
        # canneal: a package directory without a build
        os.makedirs(self.pkg("canneal"))
        # freqmine: only PARSEC's OpenMP build
        fm = self.pkg("freqmine")
        make_exe(os.path.join(fm, "inst", "amd64-linux.gcc-openmp", "bin", "freqmine"))
        make_tar(os.path.join(fm, "inputs", "input_simsmall.tar"), {"kosarak_250k.dat": b""})

        d = suites.discover_parsec(self.home, "simsmall", 3)
        ready = {b.name: b for b in d.ready}
        self.assertEqual(sorted(ready), ["blackscholes", "freqmine", "streamcluster"])
        b = ready["blackscholes"]
        self.assertTrue(b.argv[0].endswith("amd64-linux.gcc-pthreads/bin/blackscholes"))
        self.assertEqual(b.argv[1:], ["3", "in_4K.txt", "prices.txt"])
        self.assertEqual(b.check, "files")
        self.assertTrue(b.inputs.endswith("input_simsmall.tar"))
        self.assertIsNone(ready["streamcluster"].inputs)
        self.assertEqual(ready["streamcluster"].argv[-1], "3")
        self.assertEqual(ready["freqmine"].env, {"OMP_NUM_THREADS": "3"})
        self.assertIn("gcc-openmp", ready["freqmine"].note)
        missing = {m[0]: m for m in d.missing}
        self.assertIn("parsecmgmt -a build -p canneal -c gcc-pthreads", missing["canneal"][2])
        self.assertIn("no simsmall input", missing["ferret"][1])
        self.assertIn("parsec-3.0-input-sim.tar.gz", missing["ferret"][2])
        self.assertIn("no package directory", missing["x264"][1])
        text = suites.format_missing(self.home, d.missing)
        self.assertIn("canneal", text)
        self.assertIn("fix:", text)
        # native inputs come from another archive
        d = suites.discover_parsec(self.home, "native", 2, ["blackscholes"])
        self.assertIn("parsec-3.0-input-native.tar.gz", d.missing[0][2])

    def test_runconf_overrides_table(self):
        sw = self.pkg("swaptions")
        make_exe(os.path.join(sw, "inst", "amd64-linux.gcc-pthreads", "bin", "swaptions"))
        os.makedirs(os.path.join(sw, "parsec"))
        with open(os.path.join(sw, "parsec", "test.runconf"), "w") as f:
            f.write('run_exec="bin/swaptions"\nrun_args="-ns 2 -sm 7 -nt ${NTHREADS}"\n')
        d = suites.discover_parsec(self.home, "test", 1, ["swaptions"])
        self.assertEqual(d.ready[0].argv[1:], ["-ns", "2", "-sm", "7", "-nt", "1"])
        # a runconf with variables the harness cannot expand is ignored, and the report says so
        with open(os.path.join(sw, "parsec", "test.runconf"), "w") as f:
            f.write('run_args="-ns ${SWAPTIONS} -nt ${NTHREADS}"\n')
        d = suites.discover_parsec(self.home, "test", 1, ["swaptions"])
        self.assertEqual(d.ready[0].argv[1:], ["-ns", "1", "-sm", "5", "-nt", "1"])
        self.assertIn("${SWAPTIONS}", d.ready[0].note)
        self.assertIn("PARSEC 3.0's test arguments used", d.ready[0].note)

    def test_forced_config(self):
        bs = self.pkg("blackscholes")
        make_exe(os.path.join(bs, "inst", "amd64-linux.gcc-serial", "bin", "blackscholes"))
        make_tar(os.path.join(bs, "inputs", "input_test.tar"), {"in_4.txt": b""})
        self.assertEqual(suites.discover_parsec(self.home, "test", 1, ["blackscholes"]).ready, [])
        d = suites.discover_parsec(self.home, "test", 1, ["blackscholes"], config="gcc-serial")
        self.assertEqual(len(d.ready), 1)
        self.assertIn("gcc-serial", d.ready[0].note)

    def test_every_benchmark_has_every_size(self):
        self.assertEqual(len(suites.PARSEC), 13)
        self.assertEqual(suites.PARSEC_SIZES,
                         ("test", "simdev", "simsmall", "simmedium", "simlarge", "native"))
        for name, spec in suites.PARSEC.items():
            self.assertEqual(set(spec.args), set(suites.PARSEC_SIZES), name)
            for args in spec.args.values():
                self.assertNotIn("$", suites.expand(args, 2), name)


class BuiltinTest(unittest.TestCase):
    def test_parsec_only_sizes_refused(self):
        with tempfile.TemporaryDirectory() as d:
            for size in ("simdev", "simlarge"):
                with self.assertRaises(suites.SuiteError) as cm:
                    suites.builtin_suite(d, size, 2)
                self.assertIn("PARSEC input set only", str(cm.exception))

    def test_missing_build(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(suites.SuiteError) as cm:
                suites.builtin_suite(layout.from_build_dir(d), "test", 2)
            self.assertIn("missing", str(cm.exception))
            with self.assertRaises(suites.SuiteError):
                suites.builtin_suite(layout.from_build_dir(d), "test", 2, ["nosuch"])

    def test_argv(self):
        with tempfile.TemporaryDirectory() as d:
            for n in suites.BUILTIN:
                make_exe(layout.from_build_dir(d).workload(n))
            b = suites.builtin_suite(layout.from_build_dir(d), "simmedium", 3, ["montecarlo"], seconds=2.5)
            self.assertEqual(b[0].argv[1:], ["--threads", "3", "--size", "simmedium", "--seconds", "2.5"])
            self.assertEqual(b[0].check, "checksum")

    def test_optional_workload_not_built(self):
        with tempfile.TemporaryDirectory() as d:
            for n in suites.BUILTIN:
                if n not in suites.OPTIONAL_BUILTIN:
                    make_exe(layout.from_build_dir(d).workload(n))
            names = [b.name for b in suites.builtin_suite(layout.from_build_dir(d), "test", 2)]
            self.assertEqual(names, [n for n in suites.BUILTIN if n not in suites.OPTIONAL_BUILTIN])
            for n in suites.OPTIONAL_BUILTIN:
                with self.assertRaises(suites.SuiteError) as cm:
                    suites.builtin_suite(layout.from_build_dir(d), "test", 2, [n])
                self.assertIn("missing", str(cm.exception))

    def test_openmpmine_is_builtin(self):
        self.assertIn("openmpmine", suites.BUILTIN)
        self.assertIn("freqmine", suites.BUILTIN["openmpmine"][0])

    def test_select(self):
        known = ["a1", "a2", "b"]
        self.assertIsNone(suites.select(None, known))
        self.assertEqual(suites.select("b,a*", known), ["b", "a1", "a2"])
        self.assertEqual(suites.select("a1, a1", known), ["a1"])
        with self.assertRaises(suites.SuiteError):
            suites.select("c", known)


class FingerprintTest(unittest.TestCase):
    def test_checksum(self):
        b = suites.Benchmark("w", ["w"], check="checksum")
        self.assertEqual(suites.fingerprint(b, ".", "checksum 00ff\nunits 1\nok w\n"), "00ff")
        self.assertIsNone(suites.fingerprint(b, ".", "checksum 00ff\nunits 1\n"))  # no ok line
        self.assertIsNone(suites.fingerprint(b, ".", "ok w\n"))

    def test_files_and_sorted_lines(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            with open(os.path.join(a, "out.txt"), "w") as f:
                f.write("x\ny\n")
            with open(os.path.join(b, "out.txt"), "w") as f:
                f.write("y\nx\n")
            files = suites.Benchmark("p", ["p"], check="files", outputs=["out.txt"])
            lines = suites.Benchmark("p", ["p"], check="sorted-lines", outputs=["out.txt"])
            self.assertNotEqual(suites.fingerprint(files, a, ""), suites.fingerprint(files, b, ""))
            self.assertEqual(suites.fingerprint(lines, a, ""), suites.fingerprint(lines, b, ""))
            missing = suites.Benchmark("p", ["p"], check="files", outputs=["nope.txt"])
            self.assertIsNone(suites.fingerprint(missing, a, ""))
            os.makedirs(os.path.join(a, "sequenceB_1"))
            with open(os.path.join(a, "sequenceB_1", "poses.txt"), "w") as f:
                f.write("1\n")
            glob_b = suites.Benchmark("p", ["p"], check="files", outputs=["sequenceB_*/poses.txt"])
            self.assertIsNotNone(suites.fingerprint(glob_b, a, ""))

    def test_stdout_drops_timings(self):
        b = suites.Benchmark("s", ["s"], check="stdout")
        one = "[PARSEC] Benchmarks started\nSwaption 0: 0.0123\nTotal time: 1.2 s\n"
        two = "[PARSEC] Benchmarks started\nSwaption 0: 0.0123\nTotal time: 9.9 s\n"
        self.assertEqual(suites.fingerprint(b, ".", one), suites.fingerprint(b, ".", two))
        self.assertNotEqual(suites.fingerprint(b, ".", one),
                            suites.fingerprint(b, ".", one.replace("0.0123", "0.0124")))

    def test_exit_only(self):
        b = suites.Benchmark("c", ["c"], check="exit", note="races")
        self.assertEqual(suites.fingerprint(b, ".", "anything"), "")
        self.assertIn("races", b.describe_check())

    def test_unit_lines(self):
        text = "checksum 1\nunit 1 10.5\nunit 2 11.0\nunit 3 12.0\nunits 3\nok w\n"
        self.assertEqual(suites.unit_times(text), [10.5, 11.0, 12.0])
        self.assertEqual(suites.unit_times("unit 1 1.0\nunit 3 2.0\n"), [1.0])  # gap ends it
        self.assertEqual(suites.unit_times("unit 1 1.0\nunit 2 2.\nunit 3 x"), [1.0, 2.0])
        self.assertEqual(suites.count_in_window([1, 2, 3, 4], 2, 3), 2)
        self.assertEqual(suites.units_line(text), 3)
        self.assertEqual(suites.checksum_line(text), "1")


if __name__ == "__main__":
    unittest.main()
