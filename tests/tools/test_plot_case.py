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
