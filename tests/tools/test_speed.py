"""model-speed's arithmetic (tools/baremm_lib/speed.py): guest instructions from the
model's totals, minima per mode, ratios to plain -icount, MIPS."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401
from baremm_lib import speed  # noqa: E402


class SpeedTest(unittest.TestCase):
    def test_guest_insns_sums_the_vcpus(self):
        # what the log parser makes of the plugin's lines (a real log, not a hand-made list)
        import tempfile
        from baremm_lib import logparse
        log = ("BAREMM-END status=pass results=0\n"
               "BAREMM-MODEL-TOTAL vcpu=0 insns=1000 cycles=5 ev.model_x=1\n"
               "BAREMM-MODEL-TOTAL vcpu=1 insns=234 cycles=9\n")
        with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
            f.write(log)
            f.flush()
            totals = logparse.parse_file(f.name)["model_totals"]
        self.assertEqual(speed.guest_insns(totals), 1234)
        self.assertIsNone(speed.guest_insns([]))

    def test_summary_minima_ratios_mips(self):
        s = speed.summarise([("icount", 2.0, 5.0, None), ("inorder", 3.0, 6.0, 6_000_000),
                             ("ooo", 5.0, 9.0, 6_000_100), ("icount", 1.0, 4.0, None),
                             ("ooo", 4.0, 11.0, 6_000_100)])
        self.assertEqual(s["icount"]["cpu_s"], 1.0)
        self.assertEqual(s["icount"]["insns"], 6_000_000)      # the in-order boot's count
        self.assertAlmostEqual(s["icount"]["mips"], 6.0)
        self.assertAlmostEqual(s["ooo"]["cpu_ratio"], 4.0)
        self.assertAlmostEqual(s["ooo"]["wall_ratio"], 9.0 / 4.0)
        self.assertAlmostEqual(s["inorder"]["mips"], 2.0)
        self.assertEqual(s["ooo"]["boots"], 2)

    def test_modes_are_the_two_cores_and_plain_icount(self):
        self.assertEqual([c for _, c in speed.MODES], [None, "core=inorder", "core=ooo"])


if __name__ == "__main__":
    unittest.main()
