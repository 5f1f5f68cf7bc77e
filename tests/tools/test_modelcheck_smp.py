import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401  (puts tools/ on sys.path)
from baremm_lib import modelcheck_smp as mc  # noqa: E402


def fig(bench, median, insns, **ev):
    return {"bench": bench, "unit": "model_cycles", "median": median, "instructions": insns,
            "events": {"model_" + k: v for k, v in ev.items()}}


class ModelCheckSmpTest(unittest.TestCase):
    def setUp(self):
        self.p = mc.load_profile("skylake-sp")   # c2c 125, ipi 2000, irq 1000, cpi 1.00

    def good(self):
        return [fig("modelsmp.line_pingpong", 277.05, 34.4, c2c_transfer=1.0),
                fig("modelsmp.ipi_roundtrip", 8327.4, 564.05, ipi_sent=1.0, iret=1.0)]

    def test_profile_keys(self):
        for k in ("c2c_lat", "c2c_remote_lat", "sockets", "cores_per_socket", "ipi_latency"):
            self.assertIn(k, self.p)

    def test_pass(self):
        self.assertEqual(mc.check(self.good(), self.p), [])

    def test_pingpong_without_transfers_fails(self):
        r = self.good()
        r[0]["median"] = 40.0     # only the instructions: no transfer priced
        r[0]["events"]["model_c2c_transfer"] = 0.0
        f = mc.check(r, self.p)
        self.assertEqual(len(f), 2)
        self.assertTrue(all(x.startswith("modelsmp.line_pingpong") for x in f))

    def test_ipi_latency_not_charged_fails(self):
        r = self.good()
        r[1]["median"] = 4327.4   # 2 x ipi_latency less
        f = mc.check(r, self.p)
        self.assertEqual(len(f), 1)
        self.assertIn("modelsmp.ipi_roundtrip", f[0])

    def test_ipi_charged_twice_fails(self):
        r = self.good()
        r[1]["median"] = 12327.4
        self.assertEqual(len(mc.check(r, self.p)), 1)

    def test_missing_figures(self):
        f = mc.check([], self.p)
        self.assertEqual(len(f), 2)


if __name__ == "__main__":
    unittest.main()
