import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, data, read  # noqa: E402
from baremm_lib import compare, logparse  # noqa: E402


def sides():
    a = logparse.parse_log(read("bench_base.log"))
    b = logparse.parse_log(read("bench_new.log"))
    return compare.compare_sides([("base", a["results"], a["machine"]),
                                  ("new", b["results"], b["machine"])])


class CompareTest(unittest.TestCase):
    def test_sides_rows(self):
        c = sides()
        self.assertEqual(len(c.rows), 3)
        r = c.rows[0]
        self.assertEqual(r["figure"], "smp.call_all.roundtrip cpus=4")
        ch = r["changes"][1]
        self.assertAlmostEqual(ch["pct"], -8.0)
        self.assertEqual(ch["test"], "welch")
        self.assertTrue(ch["significant"])
        # tlb.invlpg: +2.5%, combined stddev sqrt(8^2+9^2)=12.04, 5 < 24.1: noise
        ch = c.rows[1]["changes"][1]
        self.assertEqual(ch["test"], "noise")
        self.assertFalse(ch["significant"])
        # pcp.alloc: +10%, 100000 > 2 * sqrt(2) * 20000: significant
        ch = c.rows[2]["changes"][1]
        self.assertTrue(ch["significant"])

    def test_text(self):
        t = compare.format_text(sides())
        self.assertIn("%change", t)
        self.assertIn("-8.0%", t)
        self.assertIn("* p=", t)
        self.assertIn("~ <2sd", t)
        self.assertIn("Welch's two-sided t-test", t)
        self.assertIn("2 x combined stddev", t)

    def test_markdown(self):
        md = compare.format_markdown(sides())
        lines = [line for line in md.splitlines() if line.startswith("|")]
        self.assertEqual(len(lines), 2 + 3)
        self.assertTrue(lines[1].startswith("|---:"))
        self.assertEqual(len({line.count("|") for line in lines}), 1)

    def test_csv(self):
        rows = list(csv.DictReader(io.StringIO(compare.format_csv(sides()))))
        self.assertEqual(len(rows), 6)
        new = [r for r in rows if r["label"] == "new" and r["bench"] == "smp.call_all"][0]
        self.assertEqual(new["significant"], "yes")
        self.assertEqual(new["test"], "welch")
        self.assertAlmostEqual(float(new["change_pct"]), -8.0)
        self.assertEqual(float(new["median"]), 4600)

    def test_variants_in_one_boot(self):
        p = logparse.parse_log(read("bench_ab.log"))
        self.assertTrue(compare.has_variants(p["results"]))
        c = compare.compare_variants("ab", p["results"], p["machine"])
        self.assertEqual(len(c.rows), 2)
        r = c.rows[0]
        self.assertEqual(r["variants"], ["tlb_ceiling:33", "tlb_ceiling:1"])
        self.assertAlmostEqual(r["changes"][1]["pct"], 100 * 190 / 1020)
        self.assertTrue(r["changes"][1]["significant"])
        self.assertFalse(c.rows[1]["changes"][1]["significant"])
        self.assertIn("tlb_ceiling:33 -> tlb_ceiling:1", compare.format_text(c))

    def test_deterministic_zero_spread(self):
        base = {"bench": "x.y", "metric": "m", "cpus": 1, "variant": "default", "unit": "cycles",
                "median": 100, "mean": 100, "stddev": 0, "pstddev": 0, "min": 100, "max": 100,
                "runs": 3, "samples": None}
        same = dict(base)
        moved = dict(base, median=101, mean=101, min=101, max=101)
        self.assertFalse(compare.significance(base, same)["significant"])
        self.assertTrue(compare.significance(base, moved)["significant"])
        self.assertEqual(compare.significance(base, moved)["test"], "exact")

    def test_cli_formats(self):
        tool = os.path.join(ROOT, "tools", "baremm")
        for fmt in ("text", "markdown", "csv"):
            r = subprocess.run([sys.executable, tool, "compare", data("bench_base.log"),
                                data("bench_new.log"), "--format", fmt],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("smp.call_all", r.stdout)

    def test_cli_compare_run_json(self):
        tool = os.path.join(ROOT, "tools", "baremm")
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name in ("bench_base.log", "bench_new.log"):
                r = subprocess.run([sys.executable, tool, "parse", "--json", data(name)],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                rec = json.loads(r.stdout)
                self.assertEqual(rec["schema"], "baremm-run/1")
                p = os.path.join(d, name + ".json")
                with open(p, "w") as f:
                    f.write(r.stdout)
                paths.append(p)
            r = subprocess.run([sys.executable, tool, "compare"] + paths + ["--format", "csv"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("welch", r.stdout)


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(__import__("shutil").which("gnuplot"), "gnuplot not installed")
class PlotTest(unittest.TestCase):
    def test_plot_png(self):
        tool = os.path.join(ROOT, "tools", "baremm")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.png")
            for x in ("cpus", "pages"):
                r = subprocess.run([sys.executable, tool, "plot", data("sweep.log"), "--x", x,
                                    "-o", out], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(out, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
                self.assertIn("3 series", r.stdout)
            r = subprocess.run([sys.executable, tool, "plot", data("sweep.log"), "--x", "nokey",
                                "-o", out], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("no result has a value", r.stderr)


class ComparableRunsTest(unittest.TestCase):
    """compare warns when two runs differ in mode, accelerator or TSC frequency."""

    def rec(self, tsc=2100000, accel="tcg", icount=False, used="tcg,thread=multi"):
        p = logparse.parse_log(read("bench_base.log"))
        m = dict(p["machine"], tsc_khz=tsc, accel=accel)
        return {"schema": "baremm-run/1", "name": "x", "machine": m, "results": p["results"],
                "config": {"icount": icount, "accel_used": used},
                "log": {"truncated": False, "errors": []}}

    def test_run_differences(self):
        a = self.rec()
        self.assertEqual(compare.run_differences([a, self.rec(tsc=2101000)], ["A", "B"]), [])
        w = compare.run_differences([a, self.rec(tsc=1350000)], ["A", "B"])
        self.assertEqual(len(w), 1)
        self.assertIn("tsc_khz differs by 56 %", w[0])
        w = compare.run_differences([a, self.rec(accel="kvm", icount=True,
                                                 used="tcg,thread=single")], ["A", "B"])
        self.assertEqual(len(w), 3, w)
        self.assertTrue(any("mode differs" in x and "deterministic" in x for x in w))
        self.assertTrue(any("accel differs: A has tcg, B has kvm" in x for x in w))

    def test_cli_warns(self):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for n, r in (("a", self.rec()), ("b", self.rec(tsc=1350000))):
                paths.append(os.path.join(d, n + ".json"))
                with open(paths[-1], "w") as f:
                    json.dump(r, f)
            out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "baremm"),
                                  "compare"] + paths, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("warning: tsc_khz differs", out.stderr)
