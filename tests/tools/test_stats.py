import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401  (puts tools/ on sys.path)
from baremm_lib import stats  # noqa: E402


class SummaryTest(unittest.TestCase):
    def test_summary(self):
        s = stats.summarize([2, 4, 4, 4, 5, 5, 7, 9])
        self.assertEqual(s["median"], 4.5)
        self.assertEqual(s["mean"], 5.0)
        # sample stddev: sqrt(32/7)
        self.assertAlmostEqual(s["stddev"], math.sqrt(32 / 7), places=12)
        self.assertAlmostEqual(s["pstddev"], 100 * math.sqrt(32 / 7) / 5, places=10)
        self.assertEqual((s["min"], s["max"], s["runs"]), (2, 9, 8))

    def test_median_odd_and_single(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)
        self.assertEqual(stats.stddev([5]), 0.0)

    def test_pct_change(self):
        self.assertEqual(stats.pct_change(200, 210), 5.0)
        self.assertEqual(stats.pct_change(200, 190), -5.0)
        self.assertIsNone(stats.pct_change(0, 1))


class BetaAndTTest(unittest.TestCase):
    def test_betainc_closed_forms(self):
        # I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b
        for x in (0.0, 0.1, 0.5, 0.93, 1.0):
            self.assertAlmostEqual(stats.betainc(1, 1, x), x, places=12)
            self.assertAlmostEqual(stats.betainc(3, 1, x), x ** 3, places=12)
            self.assertAlmostEqual(stats.betainc(1, 4, x), 1 - (1 - x) ** 4, places=12)
        # symmetry I_x(a, b) = 1 - I_{1-x}(b, a)
        self.assertAlmostEqual(stats.betainc(2.5, 0.5, 0.3),
                               1 - stats.betainc(0.5, 2.5, 0.7), places=12)

    def test_t_distribution_exact(self):
        # df = 1 is the Cauchy distribution: P(|T| > t) = 1 - 2 atan(t) / pi
        for t in (0.5, 1.0, 3.0, 12.706):
            self.assertAlmostEqual(stats.t_sf2(t, 1), 1 - 2 * math.atan(t) / math.pi,
                                   places=12)
        # df = 2: P(|T| > t) = 1 - t / sqrt(2 + t^2)
        for t in (0.5, 2.0, 4.303):
            self.assertAlmostEqual(stats.t_sf2(t, 2), 1 - t / math.sqrt(2 + t * t), places=12)

    def test_t_table_critical_values(self):
        # two-sided 5% critical values from a textbook t table
        for df, tcrit in ((1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042)):
            self.assertAlmostEqual(stats.t_sf2(tcrit, df), 0.05, places=3)
        self.assertAlmostEqual(stats.t_cdf(0.0, 7), 0.5, places=12)
        self.assertAlmostEqual(stats.t_cdf(-2.228, 10), 0.025, places=3)

    def test_welch_textbook_example_1(self):
        # Welch's t-test, worked example 1 (Wikipedia): t = -2.46, df = 25.0, p = 0.021
        a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0,
              21.7, 21.4]
        a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9,
              20.5, 24.4]
        w = stats.welch(a1, a2)
        self.assertAlmostEqual(w["t"], -2.46, places=2)
        self.assertAlmostEqual(w["df"], 25.0, places=1)
        self.assertAlmostEqual(w["p"], 0.021, places=3)

    def test_welch_textbook_example_2(self):
        # example 2 (unequal sizes and variances): t = -1.57, df = 9.9, p = 0.149
        a1 = [17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8]
        a2 = [21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5,
              22.5, 23.6, 21.5, 22.5, 23.5, 21.5, 21.8]
        w = stats.welch(a1, a2)
        self.assertAlmostEqual(w["t"], -1.57, places=2)
        self.assertAlmostEqual(w["df"], 9.9, places=1)
        self.assertAlmostEqual(w["p"], 0.149, places=3)

    def test_welch_by_hand(self):
        # a = 1,2,3 (mean 2, var 1); b = 4,5,6 (mean 5, var 1):
        # t = -3 / sqrt(1/3 + 1/3) = -3.674; df = (2/3)^2 / (2 * (1/3)^2 / 2) = 4
        w = stats.welch([1, 2, 3], [4, 5, 6])
        self.assertAlmostEqual(w["t"], -3 / math.sqrt(2 / 3), places=12)
        self.assertAlmostEqual(w["df"], 4.0, places=12)
        # df = 4: P(|T| > t) = 1 - t (6 + t^2) / (t^2 + 4)^(3/2)
        t = abs(w["t"])
        self.assertAlmostEqual(w["p"], 1 - t * (6 + t * t) / (t * t + 4) ** 1.5, places=12)

    def test_welch_zero_variance(self):
        self.assertEqual(stats.welch([5, 5, 5], [5, 5]), {"t": None, "df": None, "p": 1.0})
        self.assertEqual(stats.welch([5, 5, 5], [6, 6])["p"], 0.0)
        with self.assertRaises(ValueError):
            stats.welch([1], [2, 3])

    def test_noise_test(self):
        # combined stddev sqrt(3^2 + 4^2) = 5: a change of 10 is not > 10, 10.1 is
        self.assertFalse(stats.noise_test(100, 3, 110, 4))
        self.assertTrue(stats.noise_test(100, 3, 110.1, 4))


if __name__ == "__main__":
    unittest.main()
