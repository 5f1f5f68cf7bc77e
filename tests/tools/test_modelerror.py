"""Verdicts under --model carry the model's measured error (tools/baremm_lib/modelerror.py):
a deterministic figure just outside the band can no longer claim `disagree`."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401
from baremm_lib import experiment as ex, modelerror as ME, verdict as V  # noqa: E402
from test_verdict import fig  # noqa: E402

NO_CHANGE = V.Claim("time", 100.0, 100.2, "ms", ("a", "b"))    # thread: +0.2 % -> "none"


def experiment(exp_id):
    return ex.Experiment(exp_id, "t", "q", bench="b.x", variant="o", values=("a", "b"),
                         thread=V.MailThread("a test", (NO_CHANGE,)), op="one op",
                         linux_none="none measured")


def panel(model_effect, native_effect, lo, hi, rows=()):
    return {"rows": [dict(name=n, ratio=r, native_trusted=True) for n, r in rows],
            "pairs": [{"a": "alloc_cached", "b": "alloc_lookup", "effect": native_effect,
                       "lo": lo, "hi": hi, "model_effect": model_effect}]}


class ErrorTest(unittest.TestCase):
    def test_pair_error(self):
        e = ME.error_for("003", "p", panel(0.006, 0.040, 0.030, 0.050))
        # |0.6 - 4.0| + half of [3, 5] = 3.4 + 1.0 pp
        self.assertAlmostEqual(e["pp"], 4.4, places=6)
        self.assertIn("alloc_lookup", e["how"])

    def test_each_core_reads_its_own_panel(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            for name, b in (("zen3", 0.040), ("zen3-ooo", 0.006)):
                with open(os.path.join(d, "native-panel-%s.json" % name), "w") as f:
                    json.dump(panel(0.006, b, b - 0.01, b + 0.01), f)
            ino = ME.error_for("003", "zen3", data_dir=d, model_args="")
            ooo = ME.error_for("003", "zen3", data_dir=d, model_args="causal=off,core=ooo")
        self.assertAlmostEqual(ino["pp"], 100 * (0.034 + 0.01), places=6)
        self.assertAlmostEqual(ooo["pp"], 100 * 0.01, places=6)
        self.assertTrue(ME.panel_path("host", "/x", "").startswith("/x/native-panel-host-"))

    def test_row_spread(self):
        p = panel(0, 0, 0, 0, rows=[("pt_copy", 3.0), ("pt_zap", 4.5), ("free_loop", 3.3)])
        e = ME.error_for("002", "p", p)
        self.assertAlmostEqual(e["pp"], 50.0, places=6)

    def test_untrusted_rows_do_not_count(self):
        p = panel(0, 0, 0, 0, rows=[("pt_copy", 3.0)])
        p["rows"].append(dict(name="pt_zap", ratio=9.0, native_trusted=False))
        self.assertIsNone(ME.error_for("002", "p", p)["pp"])

    def test_missing_panel(self):
        with tempfile.TemporaryDirectory() as d:
            e = ME.error_for("003", "nosuch", data_dir=d)
        self.assertIsNone(e["pp"])
        self.assertIn("no native panel", e["how"])


class VerdictTest(unittest.TestCase):
    """An exact +1.08 % against a thread's "no change" with a 1 % band: without the
    model's error it disagrees; with 2 pp of measured error it is inconclusive."""

    def run_verdict(self, exp_id, model, data_dir):
        old = ME.DATA_DIR
        ME.DATA_DIR = data_dir
        try:
            a = fig([1000.0] * 5, "a", unit="model_cycles")
            b = fig([1010.8] * 5, "b", unit="model_cycles")
            return ex.Analysis(experiment(exp_id), [a, b], False, model=model).verdict()
        finally:
            ME.DATA_DIR = old

    def test_point_figure_disagrees_without_model(self):
        exp = experiment("003")
        a = fig([1000.0] * 5, "a")
        b = fig([1010.8] * 5, "b")
        self.assertEqual(ex.Analysis(exp, [a, b], False).verdict()["agree"], V.DISAGREE)

    def test_widened_by_panel(self):
        import json
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "native-panel-prof.json"), "w") as f:
                json.dump(panel(0.01, 0.0, -0.01, 0.01), f)   # 1 + 1 = 2 pp
            v = self.run_verdict("003", "prof", d)
        c = v["claims"][0]
        self.assertAlmostEqual(c["model_error_pp"], 2.0, places=6)
        self.assertAlmostEqual(c["pct_lo"], 1.08 - 2.0, places=6)
        self.assertEqual(v["agree"], V.INCONCLUSIVE)
        self.assertIn("measured error of ±2.0 pp", v["text"])

    def test_small_error_still_disagrees(self):
        import json
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "native-panel-prof.json"), "w") as f:
                json.dump(panel(0.0, 0.0, -0.0005, 0.0005), f)   # 0.05 pp
            v = self.run_verdict("003", "prof", d)
        self.assertEqual(v["agree"], V.DISAGREE)

    def test_unknown_error_is_inconclusive(self):
        with tempfile.TemporaryDirectory() as d:
            v = self.run_verdict("003", "prof", d)
        self.assertEqual(v["agree"], V.INCONCLUSIVE)
        self.assertIn("unknown", v["text"])


if __name__ == "__main__":
    unittest.main()
