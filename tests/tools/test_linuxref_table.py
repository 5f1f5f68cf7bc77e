"""tools/linux-ref/run.sh table: a model boot's rows come from the plugin's raw runs
(LOG.model, through `tools/baremm parse --model-output`), an icount boot's from its LREF
lines."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "tools", "linux-ref", "run.sh")
KEY = "bench=lref.pf1_touch variant=default cpus=1 case=pages:64 metric=op"
MODEL = ("BAREMM-MODEL profile=p ghz=2.00\n"
         + "".join("BAREMM-MODEL-RUN %s run=%d ops=2 cycles=%s part.insns=1.0000\n" % (KEY, i, c)
                   for i, c in enumerate(("10.00", "14.00", "12.00")))
         + "BAREMM-MODEL-FIGURE %s unit=model_cycles runs=3 ops=6 ev.model_walk=3\n" % KEY)


class TableTest(unittest.TestCase):
    def run_sh(self, *args):
        return subprocess.run(["bash", RUN] + list(args), capture_output=True, text=True,
                              timeout=60)

    def test_model_and_icount_rows(self):
        with tempfile.TemporaryDirectory() as d:
            model, icount = os.path.join(d, "m.log"), os.path.join(d, "i.log")
            with open(model, "w") as f:
                f.write("# qemu-system-x86_64 -smp 1 -icount shift=0 -plugin x\n")
            with open(model + ".model", "w") as f:
                f.write(MODEL)
            with open(icount, "w") as f:
                f.write("# qemu-system-x86_64 -smp 2 -icount shift=0\n"
                        "LREF bench=zap case=pages:8 median=500 min=490 max=510\n")
            r = self.run_sh("table", model, icount)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = [l.split() for l in r.stdout.splitlines()[1:]]
            # the median of the runs 10, 14, 12 and their extremes, computed on the host
            self.assertEqual(rows, [["pf1_touch", "pages:64", "1", "model", "12.00", "10.00", "14.00"],
                                    ["zap", "pages:8", "2", "icount", "500", "490", "510"]])
            r = self.run_sh("figures", model)
            self.assertIn('"pf1_touch pages:64": 12.00', r.stdout)
            # a run lost: the parser refuses the figure, no row is made up
            with open(model + ".model", "w") as f:
                f.write(MODEL.replace(" run=1 ", " run=2 "))
            r = self.run_sh("table", model)
            self.assertEqual(r.stdout.splitlines()[1:], [])
            self.assertIn("runs=3 but", r.stderr)


if __name__ == "__main__":
    unittest.main()
