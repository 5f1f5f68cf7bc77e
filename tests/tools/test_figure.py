"""tools/baremm_lib/figure.py: a figure's identity, its one text form and the inverse."""
import glob
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, read  # noqa: E402
from baremm_lib import logparse  # noqa: E402
from baremm_lib.figure import (Figure, format_variant, parse_variant,  # noqa: E402
                               split_metric)

SAMPLES = (
    Figure("alloc.order0_pair", "pair", 1),
    Figure("alloc.order0_pair", "pair", 1, variant="pcp:on", entry="alloc-pcp-1cpu"),
    Figure("vm.sparse_tables", "table", 1, case="gib:16", entry="vm-1cpu"),
    Figure("tlb.shootdown", "flush", 16, case="pages:1",
           variant="tlb_protocol:concurrent,tlb_early_ack:on"),
    Figure("panel.alloc_cached", "op", 1, case="-"),
    Figure("b", "x", 0, variant="a]", entry="my entry"),
)


class RoundTripTest(unittest.TestCase):
    def test_format_parse(self):
        for f in SAMPLES:
            self.assertEqual(Figure.parse(f.format()), f, f)
            self.assertEqual(str(f), f.format())

    def test_text_form(self):
        self.assertEqual(SAMPLES[1].format(), "alloc-pcp-1cpu: alloc.order0_pair.pair cpus=1 "
                                              "[pcp:on]")
        self.assertEqual(SAMPLES[2].format(), "vm-1cpu: vm.sparse_tables.table[gib:16] cpus=1")
        self.assertEqual(SAMPLES[1].name(), "alloc.order0_pair.pair cpus=1 [pcp:on]")
        self.assertEqual(SAMPLES[1].name(with_variant=False), "alloc.order0_pair.pair cpus=1")
        self.assertEqual(SAMPLES[3].full_metric, "flush[pages:1]")
        self.assertEqual(SAMPLES[3].param, ("pages", "1"))
        self.assertEqual(SAMPLES[0].param, (None, None))
        self.assertEqual(SAMPLES[3].options, {"tlb_protocol": "concurrent",
                                              "tlb_early_ack": "on"})

    def test_checked_in_baselines(self):
        """Every key of every baseline parses and formats back to itself."""
        n = 0
        for path in glob.glob(os.path.join(ROOT, "tests", "perf", "baseline*.json")):
            with open(path) as f:
                for k in json.load(f)["figures"]:
                    fig = Figure.parse(k)
                    self.assertTrue(fig.entry, k)
                    self.assertEqual(fig.format(), k)
                    n += 1
        self.assertGreater(n, 30)

    def test_results_of_logs_and_saved_runs(self):
        """Figure.of on real results: the metric and the variant come back unchanged."""
        results = logparse.parse_log(read("seed004_icount.log"))["results"]
        for path in glob.glob(os.path.join(ROOT, "docs", "data", "seed-*.json")):
            with open(path) as f:
                results += json.load(f)["results"]
        self.assertGreater(len(results), 50)
        for r in results:
            fig = Figure.of(r, entry="e")
            self.assertEqual(Figure.parse(fig.format()), fig)
            self.assertEqual(fig.full_metric, r["metric"])
            self.assertEqual(fig.options, r["variants"])
            self.assertEqual(format_variant(r["variants"]), r["variant"])
            self.assertEqual(fig.group(), Figure.of(dict(r, variant="default")))

    def test_not_figures(self):
        for s in ("", "vm.x", "vm.x cpus=", "vm.x cpus=01", "vmx cpus=1", "vm.x cpus=1 [default]",
                  "vm.x[] cpus=1", "e:: vm.x cpus=1", "vm.x cpus=1 [a b]", "vm.x cpus=1 []",
                  " vm.x cpus=1", "vm.x  cpus=1", "vm.x cpus=1 ", "vm.x.y[a] cpus=1 junk"):
            with self.assertRaises(ValueError, msg=s):
                Figure.parse(s)

    def test_fields_that_would_not_round_trip(self):
        for kw in (dict(bench="a b"), dict(bench=""), dict(metric="m.x"), dict(metric="m[c]"),
                   dict(case="a b"), dict(case="a]"), dict(cpus=-1), dict(cpus="1"),
                   dict(cpus=True), dict(variant=""), dict(variant="a b"),
                   dict(entry="a:b"), dict(entry=" a")):
            args = dict(bench="b.x", metric="m", cpus=1)
            args.update(kw)
            with self.assertRaises(ValueError, msg=kw):
                Figure(**args)


class VariantTest(unittest.TestCase):
    def test_round_trip(self):
        for s in ("default", "pcp:on", "a:1,b:,c:x:y"):
            self.assertEqual(format_variant(parse_variant(s)), s)
        self.assertEqual(parse_variant("a:1,b:2"), {"a": "1", "b": "2"})

    def test_errors(self):
        for s in ("a", ":1", "a:1,a:2", "a:1,"):
            with self.assertRaises(ValueError, msg=s):
                parse_variant(s)
        with self.assertRaises(logparse.ParseError):
            logparse.parse_variant("a:1,a:2")

    def test_split_metric(self):
        self.assertEqual(split_metric("batch[pages:10000]"), ("batch", "pages:10000"))
        self.assertEqual(split_metric("fault"), ("fault", ""))
        with self.assertRaises(ValueError):
            split_metric("a.b")


class LogTest(unittest.TestCase):
    def test_result_with_an_unnameable_figure_is_a_log_error(self):
        text = read("bench_base.log").decode().replace("metric=roundtrip", "metric=round.trip", 1)
        p = logparse.parse_log(text)
        self.assertTrue(any("round.trip" in e["message"] for e in p["errors"]), p["errors"])


if __name__ == "__main__":
    unittest.main()
