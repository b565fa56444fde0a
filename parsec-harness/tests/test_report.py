import os
import tempfile
import unittest

from arbparsec_lib import report


def row(bench, mode, run, wall, ok=True, cpu=None, rss=1000):
    return {"benchmark": bench, "mode": mode, "run": run, "wall_s": wall,
            "cpu_s": wall if cpu is None else cpu, "max_rss_kb": rss, "output_ok": ok}


class ResultsCsvTest(unittest.TestCase):
    def test_round_trip(self):
        rows = [row("a", "native", 1, 1.0), row("a", "arbrun", 1, 0.9, ok=False)]
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "results.csv")
            report.write_results(p, rows)
            with open(p) as f:
                self.assertEqual(f.readline().strip(),
                                 "benchmark,mode,run,wall_s,cpu_s,max_rss_kb,output_ok")
            back = report.read_results(p)
        self.assertEqual(back, rows)

    def test_malformed(self):
        head = "benchmark,mode,run,wall_s,cpu_s,max_rss_kb,output_ok\n"
        with self.assertRaises(ValueError):
            report.parse_results("bench,mode\n")
        for bad in ["a,native,x,1,1,1,yes", "a,native,1,1,1,1,maybe", "a,native,1,1,1",
                    ",native,1,1,1,1,yes"]:
            with self.assertRaises(ValueError) as cm:
                report.parse_results(head + bad + "\n")
            self.assertIn(":2:", str(cm.exception))


class SummaryTest(unittest.TestCase):
    def rows(self):
        return [row("a", "native", 1, 1.0), row("a", "arbrun", 1, 0.5),
                row("a", "native", 2, 3.0), row("a", "arbrun", 2, 0.7),
                row("a", "native", 3, 2.0), row("a", "arbrun", 3, 0.6),
                row("b", "native", 1, 1.0), row("b", "arbrun", 1, 1.04),
                row("c", "native", 1, 1.0), row("c", "arbrun", 1, 1.2),
                row("d", "native", 1, 1.0), row("d", "arbrun", 1, 0.8, ok=False)]

    def test_medians_and_ratios(self):
        s = report.summarize(self.rows())
        self.assertEqual([x["benchmark"] for x in s], ["a", "b", "c", "d"])
        a = s[0]
        self.assertEqual(a["modes"]["native"]["wall"], 2.0)
        self.assertEqual(a["modes"]["arbrun"]["wall"], 0.6)
        self.assertAlmostEqual(a["wall_ratio"], 0.3)
        self.assertEqual(a["modes"]["native"]["wall_min"], 1.0)
        self.assertEqual(a["modes"]["native"]["wall_max"], 3.0)
        self.assertEqual([report.verdict(x) for x in s],
                         ["faster", "within 5%", "slower", "output mismatch"])

    def test_only_one_mode(self):
        s = report.summarize([row("a", "arbrun", 1, 1.0)])
        self.assertIsNone(s[0]["wall_ratio"])
        self.assertEqual(report.verdict(s[0]), "—")

    def test_render(self):
        s = report.summarize(self.rows())
        text = report.render_run_report(s, {
            "title": "T", "lines": ["machine: x"], "checks": {"a": "checksum line"},
            "cores": {"a": (1.5, 2)}, "plots": [("wall", "wall.png")], "failures": ["d arbrun run 1: x"]})
        self.assertTrue(text.startswith("# T\n"))
        self.assertIn("| a | 2.000 | 0.600 | 0.30 |", text)
        self.assertIn("1.50/2", text)
        self.assertIn("2 of 4 benchmarks", text)
        self.assertIn("![wall](wall.png)", text)
        self.assertIn("## Failures", text)
        table = report.summary_table(s)
        self.assertIn("faster", table)
        self.assertEqual(len(table.splitlines()), 5)


if __name__ == "__main__":
    unittest.main()
