import os
import subprocess
import tempfile
import time
import unittest

from arbparsec_lib import colocate, machine, servers, suites, traces
from tests import parsec_fixture as fx


def result(cfg, p99, batch=None, mode=None):
    mode = mode or cfg.split("-")[0]
    return {"config": cfg, "mode": mode, "mix": cfg.endswith("mix"),
            "overall": {"count": 100, "p50": p99 / 4, "p99": p99, "p999": p99 * 2},
            "loadgen": {"answered": 100, "sent": 100, "lost": 0, "errors": 0},
            "batch": batch or [], "server": {"cpu_s": 1.0, "trace": None, "start_s": 0},
            "load_before": "1.00 1.00 1.00", "per_second": []}


def tenant(name, tput, checksum="ab"):
    return {"name": name, "throughput": tput, "cpu_s": 2.0, "checksum": checksum, "units": 10}


class ColocateLogicTest(unittest.TestCase):
    def test_loadgen_summary(self):
        s = colocate.parse_loadgen_summary(
            "noise\narbloadgen: sent 10 answered 9 errors 0 lost 1 p50_us 12.5 p99_us 30.0 "
            "p999_us 44.0 start_s 1234.5\n")
        self.assertEqual(s["sent"], 10)
        self.assertEqual(s["lost"], 1)
        self.assertEqual(s["start_s"], 1234.5)
        for bad in ["", "arbloadgen: sent x answered", "arbloadgen: sent 1 answered"]:
            with self.assertRaises(ValueError):
                colocate.parse_loadgen_summary(bad)

    def test_configs(self):
        self.assertEqual(colocate.parse_configs("native-mix, arbrun-mix"), ["native-mix", "arbrun-mix"])
        for bad in ["", "arbrun", "native-mix,native-mix"]:
            with self.assertRaises(ValueError):
                colocate.parse_configs(bad)

    def test_cpu_lists(self):
        self.assertEqual(colocate.cpu_list([0, 1, 2, 5, 7, 8]), "0-2,5,7-8")
        self.assertEqual(colocate.cpu_list({3}), "3")
        self.assertEqual(colocate.count_cpus("0-2,5,7-8"), 6)
        self.assertEqual(colocate.count_cpus("0"), 1)

    def test_pinned(self):
        self.assertEqual(colocate.pinned(["arbloadgen", "--port", "1"], "9-15"),
                         ["taskset", "--cpu-list", "9-15", "arbloadgen", "--port", "1"])
        self.assertEqual(colocate.pinned(("arbloadgen",), None), ["arbloadgen"])

    def test_native_runs_on_the_arbiters_cpus_only_with_cpusets(self):
        import types
        e = colocate.Experiment.__new__(colocate.Experiment)
        e.o = types.SimpleNamespace(native_batch_nice=19, batch_arbrun_args="")
        e.life_s, e.arbrun, e.arbrun_batch_nice, e.cpus = 130, "arbrun", 0, "0-11"
        taskset = ["taskset", "--cpu-list", "0-11"]
        for backend, pin in (("cgroup-v2", taskset), ("cgroup-v1", taskset), ("fake", [])):
            e.backend = backend
            self.assertEqual(e.wrap_batch(["w"], "native", None, None),
                             ["timeout", "-k", "5", "130", "nice", "-n", "19"] + pin + ["w"], backend)
            arb = e.wrap_batch(["w"], "arbrun", "s", None)
            self.assertNotIn("taskset", arb, backend)
            self.assertEqual(arb[4:], ["arbrun", "--arbiter", "s", "--priority", "7", "--", "w"])
            self.assertEqual(any("taskset" in line for line in e.native_lines()), bool(pin))

    def test_backend_choice(self):
        cb = colocate.choose_backend
        self.assertEqual(cb("auto", True, "cgroup-v1", 16, 4)[0], "cgroup-v1")
        self.assertEqual(cb("auto", True, "cgroup-v2", 4, 4)[0], "cgroup-v2")
        b, why = cb("auto", True, "cgroup-v1", 2, 4)
        self.assertEqual(b, "fake")
        self.assertIn("only 2 CPUs", why)
        self.assertIn("not root", cb("auto", False, "cgroup-v1", 16, 4)[1])
        self.assertIn("no cpuset", cb("auto", True, None, 16, 4)[1])
        self.assertEqual(cb("affinity", False, None, 2, 4)[0], "affinity")

    def test_cpuset_hierarchy(self):
        v1 = "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n"
        self.assertEqual(machine.cpuset_hierarchy(v1), "cgroup-v1")
        self.assertIsNone(machine.cpuset_hierarchy("proc /proc proc rw 0 0\n"))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cgroup.controllers"), "w") as f:
                f.write("cpu io memory\n")
            mounts = f"cgroup2 {d} cgroup2 rw 0 0\n"
            self.assertIsNone(machine.cpuset_hierarchy(mounts))
            with open(os.path.join(d, "cgroup.controllers"), "w") as f:
                f.write("cpuset cpu io memory\n")
            self.assertEqual(machine.cpuset_hierarchy(mounts), "cgroup-v2")

    def test_schedstat_parsing_and_wait_per_slice(self):
        self.assertEqual(machine.parse_schedstat("2000 500 7\n"), (2000, 500, 7))
        for bad in ["", "1 2", "1 2 3 4", "a b c"]:
            self.assertIsNone(machine.parse_schedstat(bad))
        self.assertAlmostEqual(machine.wait_per_slice_us((0, 1000, 10), (0, 61000, 40)), 2.0)
        self.assertIsNone(machine.wait_per_slice_us(None, (0, 1, 1)))
        self.assertIsNone(machine.wait_per_slice_us((0, 5, 3), None))
        self.assertIsNone(machine.wait_per_slice_us((0, 5, 3), (0, 9, 3)))  # no slice between

    def test_scheduling_of_a_live_process_and_its_only_child(self):
        if machine.scheduling(os.getpid()) is None:
            self.skipTest("this kernel keeps no /proc/PID/task/TID/schedstat")
        run, _, slices = machine.scheduling(os.getpid())
        self.assertGreater(run, 0)
        self.assertGreater(slices, 0)
        self.assertIsNone(machine.scheduling(-1))
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
            if f.read().split():  # the runner may have children of its own
                self.skipTest("the test process already has children")
        first = subprocess.Popen(["sleep", "30"])
        try:
            self.assertEqual(machine.only_child(os.getpid()), first.pid)
            second = subprocess.Popen(["sleep", "30"])
            try:
                self.assertIsNone(machine.only_child(os.getpid()))  # two children: not "only"
            finally:
                second.kill()
                second.wait()
        finally:
            first.kill()
            first.wait()

    def test_analyse_and_report(self):
        results = [
            result("arbrun-alone", 100.0),
            result("arbrun-mix", 120.0, [tenant("a", 8.0), tenant("b", 4.0)]),
            result("native-alone", 100.0),
            result("native-mix", 300.0, [tenant("a", 10.0), tenant("b", 4.0, checksum="cd")]),
        ]
        a = colocate.analyse(results)
        self.assertAlmostEqual(a["p99_ratio_arbrun"], 1.2)
        self.assertAlmostEqual(a["p99_ratio_native"], 3.0)
        self.assertTrue(a["p99_goal_met"])
        self.assertAlmostEqual(a["throughput_per_tenant"]["a"], 0.8)
        self.assertAlmostEqual(a["throughput_ratio"], (0.8 * 1.0) ** 0.5)
        self.assertTrue(a["throughput_goal_met"])
        self.assertEqual(a["batch_outputs_match"], {"a": True, "b": False})
        self.assertEqual(a["batch_outputs_compared"], {"a": "checksum", "b": "checksum"})
        self.assertAlmostEqual(a["p99_mix_arbrun_vs_native"], 0.4)
        text = colocate.render_report(results, a, ["machine: x"], ["native-mix: oops"],
                                      [("lat", "latency.png")], "redis")
        self.assertIn("# arbparsec colocate: redis beside batch tenants", text)
        self.assertIn("- redis p99 with the batch / alone", text)
        self.assertIn("| arbrun-mix | 100 |", text)
        self.assertIn("| 1.0 | — |", text)  # no run-queue wait measured in these results
        self.assertIn("under arbrun 1.20 (goal <= 1.5: met); natively, batch niced: 3.00", text)
        self.assertIn("b NO", text)
        self.assertIn("## Problems", text)
        self.assertIn("## Against native", text)
        self.assertIn("- arbrun-mix / native-mix (today's practice): p50 0.40, p99 0.40 "
                      "(goal p50 and p99 <= 1: met)", text)
        self.assertIn("- arbrun-mix / native-alone (the ideal): p50 1.20, p99 1.20\n", text)
        summary = colocate.summary_text(results, a)
        self.assertIn("arbrun 1.20", summary)
        self.assertIn("against native (p50, p99): arbrun-mix / native-alone 1.20, 1.20", summary)
        self.assertEqual(len(summary.splitlines()), 7)

    def test_report_gives_the_servers_run_queue_wait(self):
        results = [result("arbrun-alone", 100.0), result("native-alone", 100.0)]
        results[0]["server"]["wait_us_per_slice"] = 123.4
        text = colocate.render_report(results, colocate.analyse(results), [], [], [])
        self.assertIn("| server run-queue wait (µs per time slice) |", text)
        self.assertIn("| 1.0 | 123 |", text)
        self.assertIn("| 1.0 | — |", text)

    def test_against_native(self):
        results = [result("arbrun-alone", 110.0), result("arbrun-mix", 140.0),
                   result("native-alone", 100.0), result("native-mix", 300.0)]
        by = {(c["config"], c["versus"]): c for c in colocate.analyse(results)["against_native"]}
        ideal = by[("arbrun-mix", "native-alone")]
        self.assertAlmostEqual(ideal["p99"], 1.4)
        self.assertIsNone(ideal["met"])  # no goal without isolated cores
        alone = by[("arbrun-alone", "native-alone")]
        self.assertAlmostEqual(alone["p50"], 1.1)
        self.assertFalse(alone["met"])  # slower than native alone
        self.assertTrue(by[("arbrun-mix", "native-mix")]["met"])
        isolated = {(c["config"], c["versus"]): c
                    for c in colocate.analyse(results, isolated=True)["against_native"]}
        self.assertTrue(isolated[("arbrun-mix", "native-alone")]["met"])  # 1.4 <= 1.5
        slow = [result("arbrun-mix", 160.0), result("native-alone", 100.0)]
        c = colocate.analyse(slow, isolated=True)["against_native"][0]
        self.assertFalse(c["met"])  # 1.6 > 1.5
        partial = colocate.analyse([result("arbrun-mix", 1.0)], isolated=True)["against_native"]
        self.assertTrue(all(c["met"] is None and c["p99"] is None for c in partial))

    def test_analyse_partial(self):
        a = colocate.analyse([result("arbrun-alone", 100.0)])
        self.assertIsNone(a["p99_ratio_arbrun"])
        self.assertIsNone(a["p99_goal_met"])
        self.assertIsNone(a["throughput_ratio"])
        a = colocate.analyse([result("arbrun-mix", 1.0, [tenant("a", None)]),
                              result("native-mix", 1.0, [tenant("a", 2.0)])])
        self.assertIsNone(a["throughput_ratio"])  # a tenant without throughput: no headline

    def test_fmt(self):
        self.assertEqual(colocate.fmt_us(None), "—")
        self.assertEqual(colocate.fmt_us(150.4), "150 µs")
        self.assertEqual(colocate.fmt_us(2500), "2.50 ms")


class ParsecTenantTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.home = self.tmp.name
        fx.install(self.home, "swaptions", "test")
        fx.install(self.home, "blackscholes", "test", fx.BLACKSCHOLES, inputs={"in_4.txt": b"1\n2\n"})

    def tearDown(self):
        self.tmp.cleanup()

    def test_parse_batch(self):
        ts = colocate.parse_batch("montecarlo, parsec:swaptions,parsec:black*,montecarlo", "test", 4,
                                  self.home)
        self.assertEqual([(t.label, t.kind) for t in ts],
                         [("montecarlo", "builtin"), ("parsec:swaptions", "parsec"),
                          ("parsec:blackscholes", "parsec")])
        self.assertEqual(ts[1].bench.argv[1:], ["-ns", "4", "-sm", "5", "-nt", "4"])
        self.assertEqual(ts[0].bench, "montecarlo")

    def test_parse_batch_errors(self):
        cases = [
            ("", "test", self.home, "at least one batch tenant"),
            ("parsec:", "test", self.home, "names no PARSEC program"),
            ("parsec:nosuch", "test", self.home, "no benchmark matches 'nosuch'"),
            ("parsec:swaptions", "test", None, "--parsec-home"),
            ("parsec:swaptions", "test", os.path.join(self.home, "pkgs"), "does not look like PARSEC"),
            ("parsec:x264", "test", self.home, "parsec:x264 cannot run here: no package directory"),
            ("parsec:blackscholes", "simlarge", self.home, "no simlarge input"),
            ("montecarlo", "simdev", self.home, "has no size 'simdev'"),
            ("nosuch", "test", self.home, "no benchmark matches 'nosuch'"),
        ]
        for text, size, home, needle in cases:
            with self.subTest(text=text, size=size):
                with self.assertRaises(suites.SuiteError) as cm:
                    colocate.parse_batch(text, size, 2, home)
                self.assertIn(needle, str(cm.exception))

    def test_tenant_result(self):
        b = suites.Benchmark("p", ["p"], check="stdout")
        run = lambda end, rc=0, fp="a", killed=False, cpu=1.0: {  # noqa: E731
            "start": end - 1, "end": end, "returncode": rc, "cpu_s": cpu, "fingerprint": fp,
            "killed": killed, "cores": [], "problem": "exit status 1: boom" if rc else ""}
        runs = [run(99.5), run(100.5), run(101), run(102, rc=1), run(109.9), run(110.5),
                run(111, killed=True)]
        e = colocate.parsec_tenant_result(b, runs, 100.0, 10.0)
        self.assertEqual(e["units"], 3)  # 100.5, 101, 109.9 (the failed one does not count)
        self.assertEqual(e["runs"], 6)
        self.assertAlmostEqual(e["throughput"], 0.3)
        self.assertEqual(e["failed_runs"], 1)
        self.assertEqual(e["fingerprints"], ["a"])
        self.assertAlmostEqual(e["cpu_s"], 7.0)
        self.assertIn("1 of 6 runs failed (first: exit status 1: boom)", e["problem"])
        e = colocate.parsec_tenant_result(b, [run(1.0)], 100.0, 10.0)
        self.assertIsNone(e["throughput"])
        self.assertIn("no run finished in the load window", e["note"])
        self.assertNotIn("problem", e)  # a measurement, not a failure

    def test_compare_outputs(self):
        cmp = colocate.compare_outputs
        self.assertEqual(cmp({"checksum": "a"}, {"checksum": "a"}), (True, "checksum"))
        self.assertEqual(cmp({"kind": "builtin", "checksum": None}, {"checksum": None})[0], False)
        nat = {"kind": "parsec", "check": "files", "runs": 3, "fingerprints": ["x"], "failed_runs": 0}
        arb = dict(nat)
        self.assertEqual(cmp(arb, nat), (True, "outputs"))
        self.assertEqual(cmp(dict(arb, fingerprints=["x", "y"]), nat), (False, "outputs"))
        self.assertEqual(cmp(dict(arb, failed_runs=1), nat), (False, "outputs"))
        self.assertEqual(cmp(dict(arb, missing_output=1), nat), (False, "outputs"))
        varies = dict(nat, fingerprints=["x", "y"])
        self.assertEqual(cmp(dict(arb, fingerprints=["z"]), varies),
                         (True, "varies natively, exit status compared"))
        self.assertEqual(cmp(dict(arb, failed_runs=2), varies)[0], False)
        self.assertEqual(cmp(dict(arb, check="exit", fingerprints=[]), nat),
                         (True, "exit status compared"))
        self.assertEqual(cmp(arb, dict(nat, runs=0)), (None, "no completed runs to compare"))

    def test_loop_runs_until_stopped(self):
        bench = suites.parsec_benchmark(self.home, "blackscholes", "test", 2)
        root = os.path.join(self.tmp.name, "loop")
        os.makedirs(root)
        inputs = os.path.join(self.tmp.name, "inputs")
        from arbparsec_lib import runsuite
        runsuite._extract(bench.inputs, inputs)
        loop = colocate.ParsecLoop(bench, lambda argv, trace: list(argv), root, inputs, None)
        loop.start()
        deadline = time.monotonic() + 30
        while len(loop.runs) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        loop.stop()
        self.assertFalse(loop.is_alive())
        self.assertIsNone(loop.error)
        done = [r for r in loop.runs if not r["killed"]]
        self.assertGreaterEqual(len(done), 3)
        self.assertEqual({r["returncode"] for r in done}, {0})
        self.assertEqual(len({r["fingerprint"] for r in done}), 1)
        self.assertTrue(all(r["start"] < r["end"] for r in done))
        self.assertEqual(os.listdir(root), [])  # run directories and outputs removed

    def test_loop_stop_kills_a_long_run(self):
        bench = suites.Benchmark("sleepy", ["/bin/sleep", "60"], check="exit")
        root = os.path.join(self.tmp.name, "loop")
        os.makedirs(root)
        loop = colocate.ParsecLoop(bench, lambda argv, trace: list(argv), root, None, None)
        loop.start()
        deadline = time.monotonic() + 10
        while loop._current is None and time.monotonic() < deadline:
            time.sleep(0.01)
        t = time.monotonic()
        loop.stop()
        self.assertLess(time.monotonic() - t, 5)
        self.assertEqual(len(loop.runs), 1)
        self.assertTrue(loop.runs[0]["killed"])


class ServersTest(unittest.TestCase):
    def test_argv(self):
        m = servers.SERVERS["memcached"]
        self.assertEqual(m.argv("memcached", 1234, 3, False, "/w"),
                         ["memcached", "-l", "127.0.0.1", "-p", "1234", "-U", "0", "-t", "3", "-c", "4096"])
        self.assertEqual(m.argv("memcached", 1, 1, True, "/w")[1:3], ["-u", "root"])
        r = servers.SERVERS["redis"]
        argv = r.argv("/usr/bin/redis-server", 99, 2, True, "/w")
        self.assertEqual(argv[:3], ["/usr/bin/redis-server", "--port", "99"])
        for pair in (["--save", ""], ["--appendonly", "no"], ["--io-threads", "2"], ["--dir", "/w"],
                     ["--bind", "127.0.0.1"], ["--daemonize", "no"]):
            i = argv.index(pair[0])
            self.assertEqual(argv[i:i + 2], pair)
        self.assertEqual((m.protocol, r.protocol), ("memcached", "redis"))
        self.assertEqual((m.default_threads(4), r.default_threads(4)), (4, 1))

    def test_ready_is_false_without_a_server(self):
        port = machine.free_port()
        for s in servers.SERVERS.values():
            self.assertFalse(s.ready(port))


class TracesTest(unittest.TestCase):
    def test_cores_held(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.csv")
            with open(p, "w") as f:
                f.write("time_s,event,core,cpu,value\n0.0,start,-1,-1,2\n0.1,grant,0,1,1\n"
                        "0.2,request,-1,-1,2\n0.3,grant,1,2,1\n0.5,util,0,-1,0.5\n"
                        "0.7,release,1,2,0\n1.0,stop,-1,-1,0\n")
            pts = traces.cores_held(p, offset_s=10)
            self.assertEqual(pts[0], (10.0, 0))
            self.assertIn((10.3, 2), [(round(t, 6), v) for t, v in pts])
            self.assertEqual(pts[-1], (11.0, 0))
            avg, peak = traces.summary(pts)
            self.assertEqual(peak, 2)
            self.assertAlmostEqual(avg, (0.2 * 1 + 0.4 * 2 + 0.3 * 1) / 1.0)
            with open(p, "w") as f:
                f.write("time_s,event,core,cpu,value\n0.0,bogus,0,0,0\n")
            with self.assertRaises(ValueError):
                traces.cores_held(p)
            self.assertEqual(traces.cores_held(os.path.join(d, "none.csv")), [])
            self.assertEqual(traces.summary([]), (None, None))

    def test_uses_plot_trace_tool(self):
        mod = traces.plot_trace_module()
        self.assertTrue(hasattr(mod, "read_trace") and hasattr(mod, "series"))


if __name__ == "__main__":
    unittest.main()
