import unittest

from arbparsec_lib import stats


class StatsTest(unittest.TestCase):
    def test_median(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)
        self.assertEqual(stats.median([7]), 7)
        with self.assertRaises(ValueError):
            stats.median([])

    def test_quantile_nearest_rank(self):
        v = list(range(1, 101))  # 1..100
        self.assertEqual(stats.quantile(v, 0.5), 50)
        self.assertEqual(stats.quantile(v, 0.99), 99)
        self.assertEqual(stats.quantile(v, 0.999), 100)
        self.assertEqual(stats.quantile(v, 0), 1)
        self.assertEqual(stats.quantile(v, 1), 100)
        self.assertEqual(stats.quantile([5], 0.99), 5)
        self.assertIsNone(stats.quantile([], 0.5))
        with self.assertRaises(ValueError):
            stats.quantile(v, 1.5)

    def test_ratio_and_geomean(self):
        self.assertEqual(stats.ratio(3, 2), 1.5)
        self.assertIsNone(stats.ratio(3, 0))
        self.assertIsNone(stats.ratio(None, 2))
        self.assertAlmostEqual(stats.geomean([1, 4]), 2.0)
        self.assertAlmostEqual(stats.geomean([2, None, 8]), 4.0)
        self.assertIsNone(stats.geomean([]))

    def test_parse_latency_log(self):
        s = stats.parse_latency_log(["0.0 10.5\n", "1500000.0 20\n", "\n"])
        self.assertEqual(s, [(0.0, 10.5), (1.5, 20.0)])
        for bad in ["1 2 3", "x 1", "1", "-1 5", "nan 3"]:
            with self.assertRaises(ValueError) as cm:
                stats.parse_latency_log(["0 1", bad])
            self.assertIn("line 2", str(cm.exception))

    def test_per_second(self):
        samples = [(0.1, 10), (0.2, 20), (0.9, 30), (2.5, 100)]
        rows = stats.per_second(samples, duration_s=3)
        self.assertEqual([r["second"] for r in rows], [0, 1, 2])
        self.assertEqual(rows[0]["count"], 3)
        self.assertEqual(rows[0]["p50"], 20)
        self.assertEqual(rows[0]["p99"], 30)
        self.assertEqual(rows[1]["count"], 0)
        self.assertIsNone(rows[1]["p99"])
        self.assertEqual(rows[2]["p999"], 100)
        # Without a duration: up to the last sample's second.
        self.assertEqual(len(stats.per_second(samples)), 3)

    def test_overall_skips_warmup(self):
        samples = [(0.5, 1000), (1.5, 10), (2.5, 20)]
        o = stats.overall(samples, skip_s=1.0)
        self.assertEqual(o["count"], 2)
        self.assertEqual(o["p999"], 20)
        self.assertEqual(stats.overall(samples)["p999"], 1000)

    def test_step_average(self):
        pts = [(0, 1), (1, 3), (3, 0)]
        self.assertAlmostEqual(stats.step_average(pts, 0, 4), (1 * 1 + 3 * 2 + 0 * 1) / 4)
        self.assertAlmostEqual(stats.step_average(pts, 2, 3), 3)
        self.assertAlmostEqual(stats.step_average([(5, 2)], 0, 10), 1.0)  # 0 before the first point
        self.assertEqual(stats.step_average(pts, 3, 3), 0.0)


if __name__ == "__main__":
    unittest.main()
