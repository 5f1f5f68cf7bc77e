"""Plot series over a benchmark case parameter (case=<name>:<value>)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
from baremm_lib import plot  # noqa: E402


def result(case, median, metric="flush"):
    return {"bench": "tlb.shootdown", "metric": "%s[%s]" % (metric, case), "case": case,
            "variants": {}, "cpus": 2, "unit": "cycles", "median": median, "stddev": 1.0,
            "min": median - 1, "max": median + 1, "runs": 3}


class CaseAxisTest(unittest.TestCase):
    def test_every_case_is_a_point_of_one_series(self):
        rec = {"results": [result("pages:1", 10.0), result("pages:8", 20.0),
                           result("pages:512", 30.0)]}
        series, unit = plot.collect([rec], "pages")
        self.assertEqual(list(series), ["tlb.shootdown.flush cpus=2"])
        self.assertEqual(sorted(x for x, _ in series["tlb.shootdown.flush cpus=2"]),
                         sorted(["1", "8", "512"]))
        self.assertEqual(unit, "cycles")

    def test_metric_filter_still_applies(self):
        rec = {"results": [result("pages:1", 10.0), result("pages:8", 20.0, metric="other")]}
        series, _ = plot.collect([rec], "pages", metric="flush[pages:1]")
        self.assertEqual(len(next(iter(series.values()))), 1)

    def test_unknown_axis_is_a_clear_error(self):
        rec = {"results": [result("pages:1", 10.0)]}
        with self.assertRaises(plot.PlotError):
            plot.collect([rec], "gib")


if __name__ == "__main__":
    unittest.main()


class ModelSeriesTest(unittest.TestCase):
    def test_one_series_per_profile(self):
        def rec(profile, med):
            r = {"bench": "model.pointer_chase", "metric": "load[bytes:4096]",
                 "case": "bytes:4096", "cpus": 1, "unit": "model_cycles", "median": med,
                 "variants": {}}
            return {"model": {"profile": profile}, "results": [r]}
        series, unit = plot.collect([rec("a", 5), rec("b", 6)], "bytes")
        self.assertEqual(unit, "model_cycles")
        self.assertEqual(sorted(series), ["model.pointer_chase.load cpus=1 model=a",
                                          "model.pointer_chase.load cpus=1 model=b"])
class AxisAndCaptionTest(unittest.TestCase):
    def test_zero_on_log_axis(self):
        where, settings, scale = plot.x_axis(["0", "1", "8", "512"])
        self.assertEqual(scale, "log")
        self.assertGreater(where[0.0], 0)            # drawable on a log axis
        self.assertLess(where[0.0], 1)               # left of the smallest positive x
        self.assertIn("set logscale x", settings)
        tics = [s for s in settings if s.startswith("set xtics")][0]
        self.assertIn('"0" %r' % where[0.0], tics)
        self.assertIn('"512" 512.0', tics)

    def test_zero_on_linear_axis_starts_at_zero(self):
        where, settings, scale = plot.x_axis(["0", "1", "8"], "linear")
        self.assertEqual((scale, where[0.0]), ("linear", 0.0))
        self.assertEqual(settings, ["set xrange [0.0:8.4]"])
        _, settings, _ = plot.x_axis(["2", "4"], "auto")
        self.assertEqual(settings, ["set xrange [1.9:4.1]"])

    def test_log_axis_refuses_negative(self):
        with self.assertRaises(plot.PlotError):
            plot.x_axis(["-1", "4", "512"], "log")

    def test_caption_wraps_at_word_boundaries(self):
        text = "cpu_model=QEMU TCG CPU, cmdline=" + " ".join("opt%d=value%d" % (i, i)
                                                             for i in range(20))
        lines = plot.caption_lines(text, width=60)
        self.assertTrue(all(len(x) <= 60 for x in lines))
        words = set(text.split())
        for x in lines:
            for w in x.split():
                self.assertIn(w.rstrip("."), words | {w[:-3]})
        self.assertEqual(len(plot.caption_lines(text * 10, width=60)), 3)
        self.assertTrue(plot.caption_lines(text * 10, width=60)[-1].endswith("..."))

    @unittest.skipUnless(__import__("shutil").which("gnuplot"), "gnuplot not installed")
    def test_plot_with_zero_x(self):
        import tempfile
        rec = {"results": [result("pages:0", 5.0), result("pages:1", 10.0),
                           result("pages:512", 30.0)], "machine": {"cpu_model": "x"}}
        with tempfile.TemporaryDirectory() as d:
            for scale in ("log", "linear"):
                out = os.path.join(d, scale + ".png")
                info = plot.plot([rec], "pages", out, xscale=scale)
                self.assertEqual(info["xscale"], scale)
                self.assertGreater(os.path.getsize(out), 1000)
