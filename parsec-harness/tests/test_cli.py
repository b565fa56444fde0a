import contextlib
import io
import os
import unittest

from arbparsec_lib import cli


def run_cli(argv):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = cli.main(argv)
        except SystemExit as e:  # --help
            code = e.code
    return code, out.getvalue(), err.getvalue()


class CliTest(unittest.TestCase):
    def assert_usage_error(self, argv, needle):
        code, _, err = run_cli(argv)
        self.assertEqual(code, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn(needle, err)
        self.assertIn("--help", err)

    def test_bad_options(self):
        self.assert_usage_error(["run"], "--out")
        self.assert_usage_error(["run", "--out", "x", "--repeat", "0"], "--repeat")
        self.assert_usage_error(["run", "--out", "x", "--threads", "two"], "not a whole number")
        self.assert_usage_error(["run", "--out", "x", "--mode", "native,fast"], "unknown mode")
        self.assert_usage_error(["run", "--out", "x", "--mode", "native,native"], "twice")
        self.assert_usage_error(["run", "--out", "x", "--size", "huge"], "--size")
        self.assert_usage_error(["run", "--out", "x", "--suite", "spec"], "--suite")
        self.assert_usage_error(["run", "--out", "x", "--bogus"], "unrecognized")
        self.assert_usage_error(["frobnicate"], "invalid choice")
        base = ["colocate", "--batch", "montecarlo", "--out", "x"]
        self.assert_usage_error(base, "--load")
        self.assert_usage_error(base + ["--load", "abc"], "not a rate")
        self.assert_usage_error(base + ["--load", "5000:"], "RATE[:RATE...]")
        self.assert_usage_error(base + ["--load", "0"], "not in 1..")
        self.assert_usage_error(base + ["--load", "100", "--duration", "-1"], "positive")
        self.assert_usage_error(base + ["--load", "100", "--server-cores", "a:b"], "MIN:MAX")
        self.assert_usage_error(base + ["--load", "100", "--cpus", "0-"], "CPU list")
        self.assert_usage_error(base + ["--load", "100", "--native-batch-nice", "20"], "0..19")
        self.assert_usage_error(base + ["--load", "100", "--backend", "magic"], "--backend")
        self.assert_usage_error(base + ["--load", "100", "--server", "nginx"], "invalid choice")
        self.assert_usage_error(base + ["--load", "100", "--batch-size", "huge"], "--batch-size")
        self.assert_usage_error(base + ["--load", "100", "--server-threads", "0"], "at least 1")
        self.assert_usage_error(["run", "--out", "x", "--calibration-runs", "0"], "not in 1..20")
        self.assert_usage_error(["run", "--out", "x", "--calibration-runs", "two"], "not a whole number")
        self.assert_usage_error(["run", "--out", "x", "--size", "simhuge"], "--size")

    def colocate(self, *extra, home=None):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            return run_cli(["colocate", "--load", "100", "--arbrun", "/bin/true", "--build-dir", d,
                            "--out", os.path.join(d, "out")] + list(extra))

    def test_colocate_batch_and_server_errors(self):
        cases = [
            (["--batch", "parsec:swaptions"], 2, "--parsec-home"),
            (["--batch", "parsec:"], 2, "names no PARSEC program"),
            (["--batch", ","], 2, "at least one batch tenant"),
            (["--batch", "parsec:nosuch", "--parsec-home", "/"], 2, "no benchmark matches"),
            (["--batch", "montecarlo", "--batch-size", "simdev"], 2, "has no size 'simdev'"),
            (["--batch", "montecarlo", "--server", "redis", "--server-bin", "/nonexistent/redis"],
             77, "install Debian's redis-server"),
            (["--batch", "montecarlo", "--memcached", "/nonexistent/memcached"], 77,
             "/nonexistent/memcached not found"),
            (["--batch", "montecarlo", "--server", "redis", "--memcached", "/usr/bin/memcached"], 2,
             "--memcached with --server redis"),
            (["--batch", "montecarlo", "--memcached", "/a", "--server-bin", "/b"], 2, "disagree"),
            (["--batch", "montecarlo", "--configs", "arbrun-mix,bogus"], 2, "unknown configuration"),
            (["--batch", "montecarlo", "--server-estimator", "slow"], 2, "invalid choice: 'slow'"),
        ]
        for argv, want, needle in cases:
            with self.subTest(argv=argv):
                code, _, err = self.colocate(*argv)
                self.assertEqual(code, want, err)
                self.assertIn(needle, err)

    def test_builtin_suite_refuses_parsec_sizes(self):
        code, _, err = run_cli(["list", "--suite", "builtin", "--size", "simdev"])
        self.assertEqual(code, 2)
        self.assertIn("PARSEC input set only", err)

    def test_arbrun_args_checked(self):
        code, _, err = run_cli(["run", "--out", "/nonexistent/x", "--arbrun", "/bin/true",
                                "--arbrun-args", "--standalone --"])
        self.assertEqual(code, 2)
        self.assertIn("must not contain", err)
        code, _, err = run_cli(["run", "--out", "/nonexistent/x", "--arbrun", "/nonexistent/arbrun"])
        self.assertEqual(code, 2)
        self.assertIn("arbrun not found", err)

    def test_help(self):
        for sub in (["--help"], ["run", "--help"], ["colocate", "--help"], ["list", "--help"]):
            code, out, _ = run_cli(sub)
            self.assertEqual(code, 0)
            self.assertIn("usage", out.lower())
        _, out, _ = run_cli(["run", "--help"])
        for word in ("--suite", "--parsec-home", "--size", "--threads", "--repeat", "--mode",
                     "--out", "results.csv", "parsecmgmt", "--calibration-runs", "simdev",
                     "varies natively"):
            self.assertIn(word, out)
        _, out, _ = run_cli(["colocate", "--help"])
        for word in ("--server", "--batch", "--load", "--duration", "--out", "nice -n 19",
                     "fake", "p99", "redis", "parsec:APP", "--parsec-home", "--server-bin", "RESP",
                     "--loadgen-cpus"):
            self.assertIn(word, out)

    def test_no_subcommand(self):
        code, out, _ = run_cli([])
        self.assertEqual(code, 2)
        self.assertIn("run, colocate, list", out)

    def test_parsers(self):
        self.assertEqual(cli.parse_rates("5000:20000:5e3"), [5000, 20000, 5000])
        self.assertEqual(cli.parse_modes("arbrun,native"), ["arbrun", "native"])
        self.assertEqual(cli.parse_cores("1:"), "1:")
        self.assertEqual(cli.parse_cpu_list("0,2-5"), "0,2-5")
        self.assertEqual(cli.non_negative_float("0"), 0.0)

    def test_paths_made_absolute(self):
        # Runs happen in scratch directories: a relative --build-dir once named nothing there.
        args = cli.build_parser().parse_args(
            ["run", "--suite", "builtin", "--build-dir", "build", "--out", "out/x",
             "--arbrun", "~/arbrun"])
        self.assertEqual(args.build_dir, os.path.join(os.getcwd(), "build"))
        self.assertEqual(args.out, os.path.join(os.getcwd(), "out", "x"))
        self.assertEqual(args.arbrun, os.path.join(os.path.expanduser("~"), "arbrun"))
        self.assert_usage_error(["run", "--suite", "builtin", "--out", ""], "empty path")

    def test_layout_of_a_build_tree(self):
        from arbparsec_lib import layout
        lay = layout.resolve("/b")
        self.assertEqual(lay.program("arbrun"), "/b/bin/arbrun")
        self.assertEqual(lay.helper("arbloadgen"), "/b/bin/arbloadgen")
        self.assertEqual(lay.workload("montecarlo"), "/b/bin/parsec-workloads/montecarlo")
        self.assertIn("ninja -C /b", lay.fix)
        if layout.install_layout is None:  # run from the source tree: its build/ by default
            self.assertEqual(layout.resolve(None).bin_dir, os.path.join(layout.REPO, "build", "bin"))

    def test_layout_of_an_installation(self):
        # What `cmake --install` writes beside the package (paths relative to arbparsec_lib/).
        import types
        from arbparsec_lib import layout
        written = types.SimpleNamespace(BIN_DIR="../../../../bin", HELPER_DIR="../../../../lib/arbrun")
        lay = layout.installed(written)
        prefix = os.path.normpath(os.path.join(layout.HERE, "..", "..", "..", ".."))
        self.assertEqual(lay.program("core-arbiter"), os.path.join(prefix, "bin", "core-arbiter"))
        self.assertEqual(lay.helper("arbparsec-spawn"),
                         os.path.join(prefix, "lib", "arbrun", "arbparsec-spawn"))
        self.assertEqual(lay.workload("pipeline"),
                         os.path.join(prefix, "lib", "arbrun", "parsec-workloads", "pipeline"))


if __name__ == "__main__":
    unittest.main()
