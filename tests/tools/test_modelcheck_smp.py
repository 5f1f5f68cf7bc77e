import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401  (puts tools/ on sys.path)
from baremm_lib import logparse, modelcheck_smp as mc  # noqa: E402


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# CPU 0's per-op events of modelsmp.ipi_roundtrip under skylake-sp, x2APIC
IPI_EV = dict(ipi_sent=1.0, iret=1.0, c2c_transfer=4.0, rfo_inval=3.0, mem_access=159.005,
              atomic=2.0, io=0.0)


def fig(bench, median, insns, **ev):
    return {"bench": bench, "metric": "roundtrip", "variant": "default", "cpus": 2,
            "unit": "model_cycles",
            "median": median, "instructions": insns,
            "events": {"model_" + k: v for k, v in ev.items()}}


PART_NAMES = ("insns", "penalties", "cache", "tlb", "rep", "io", "wait", "ipi")


def with_parts(results):
    """Synthetic figures with a breakdown that adds up (all in one part), for the checks
    that are not about the breakdown."""
    for r in results:
        if "extra" not in r:
            r["extra"] = {"part." + n: "0.0000" for n in PART_NAMES}
            r["extra"]["part.wait"] = "%.4f" % r["median"]
    return results


def check(results, profile, apic="x2apic"):
    return mc.check(with_parts(results), profile, apic)


def xadd(median):
    """modelsmp.xadd_pingpong as skylake-sp gives it: per CPU and op 10.125 instructions,
    36.33 cycles of penalties (two atomics), 6 accesses."""
    r = fig("modelsmp.xadd_pingpong", median, 40.0, c2c_transfer=1.0, mem_access=6.0)
    r["extra"] = {"part." + n: "0.0000" for n in PART_NAMES}
    r["extra"].update({"part.insns": "10.1250", "part.penalties": "36.3300",
                       "part.wait": "%.4f" % (median - 46.455)})
    return r


def llc(median, cpus, remote, insns=4.5):
    """modelsmp.llc_remote at `cpus` CPUs: per load `insns` instructions, remote LLC hits."""
    r = fig("modelsmp.llc_remote", median, 9.0, llc_remote=remote)
    r["metric"], r["cpus"] = "load", cpus
    r["extra"] = {"part." + n: "0.0000" for n in PART_NAMES}
    r["extra"].update({"part.insns": "%.4f" % insns, "part.cache": "%.4f" % (median - insns)})
    return r


class ModelCheckSmpTest(unittest.TestCase):
    def setUp(self):
        self.p = mc.load_profile("skylake-sp")   # c2c 125, ipi 2000, irq 1000, cpi 1.00

    def good(self):
        return [fig("modelsmp.line_pingpong", 277.05, 34.4, c2c_transfer=1.0),
                fig("modelsmp.ipi_roundtrip", 8327.4, 564.05, **IPI_EV), xadd(381.50),
                llc(81.5, 2, 0.0)]

    def test_profile_keys(self):
        for k in ("c2c_lat", "c2c_remote_lat", "sockets", "cores_per_socket", "ipi_latency"):
            self.assertIn(k, self.p)

    def test_pass(self):
        self.assertEqual(check(self.good(), self.p), [])

    def test_pingpong_without_transfers_fails(self):
        r = self.good()
        r[0]["median"] = 40.0     # only the instructions: no transfer priced
        r[0]["events"]["model_c2c_transfer"] = 0.0
        f = check(r, self.p)
        self.assertEqual(len(f), 2)
        self.assertTrue(all(x.startswith("modelsmp.line_pingpong") for x in f))

    def test_ipi_latency_not_charged_fails(self):
        r = self.good()
        r[1]["median"] = 4327.4   # 2 x ipi_latency less
        f = check(r, self.p)
        self.assertEqual(len(f), 1)
        self.assertIn("modelsmp.ipi_roundtrip", f[0])

    def test_ipi_charged_twice_fails(self):
        r = self.good()
        r[1]["median"] = 12327.4
        self.assertEqual(len(check(r, self.p)), 1)

    def test_expected_is_the_priced_path(self):
        # 2 x 2000 + 1000 + 7 x 125 + 6 x 77 + 3 x 150 + 2 x 18 + 152.005 x 4 + 564.05
        self.assertAlmostEqual(mc.ipi_expected(self.good()[1], self.p), 7995.07, places=2)
        x = fig("modelsmp.ipi_roundtrip", 9432.36, 546.05, **dict(IPI_EV, io=4.0))
        # xAPIC: (4 + 3) x mem_lat 240 instead of 3 x wrmsr
        self.assertAlmostEqual(mc.ipi_expected(x, self.p, "xapic"), 7995.07 - 450 + 1680 - 18,
                               places=2)

    def test_tolerance_is_tight(self):
        """One transfer or one IRET's worth off the path is caught on either side."""
        r = self.good()
        exp = mc.ipi_expected(r[1], self.p)
        for median in (exp * (1 - mc.IPI_TOL_LO) - 1, exp * (1 + mc.IPI_TOL_HI) + 1,
                       8327.4 - self.p["irq_roundtrip"], 8327.4 + self.p["irq_roundtrip"]):
            r[1]["median"] = median
            r[1].pop("extra", None)     # parts that add up to the new median
            self.assertEqual(len(check(r, self.p)), 1, median)

    def test_xadd_expected(self):
        # 2 x 125 + 2 x (10.125 + 36.33 + 6 x 4)
        self.assertAlmostEqual(mc.xadd_expected(xadd(381.50), self.p), 390.91, places=2)

    def test_xadd_transfer_then_rfo_fails(self):
        # the model before the read for ownership: each hand-off a transfer and an RFO
        r = self.good()
        r[2] = xadd(527.13)
        f = check(r, self.p)
        self.assertEqual(len(f), 1, f)
        self.assertTrue(f[0].startswith("modelsmp.xadd_pingpong:"), f)
        r[2] = xadd(381.50)
        r[2]["events"]["model_c2c_transfer"] = 0.5
        self.assertEqual(len(check(r, self.p)), 1)

    def test_llc_same_socket_and_across(self):
        zen3 = mc.load_profile("zen3")      # llc 46, c2c_remote 270, 2 x 8 cores
        self.assertEqual(mc.llc_smp(zen3), 9)
        self.assertIsNone(mc.llc_smp(self.p))   # skylake-sp: 29 CPUs, too many
        self.assertEqual(mc.check_llc(llc(50.5, 2, 0.0), zen3), [])
        self.assertEqual(mc.check_llc(llc(274.5, 9, 1.0), zen3), [])
        # one LLC for both CCDs: the line from the other CCD's L3 at llc_lat
        f = mc.check_llc(llc(50.5, 9, 0.0), zen3)
        self.assertEqual(len(f), 2, f)
        self.assertTrue(all("different sockets" in x for x in f), f)
        # and the cross-CCD price where both CPUs share the CCD
        self.assertEqual(len(mc.check_llc(llc(274.5, 2, 1.0), zen3)), 2)
        self.assertEqual(len(mc.check_llc(llc(81.5, 2, 0.0), self.p)), 0)

    def test_parts_must_add_up(self):
        r = self.good()
        self.assertEqual(mc.check_parts(with_parts(r)), [])
        r[0]["extra"]["part.wait"] = "%.4f" % (277.05 * 0.996)        # -0.4 %: rounding
        self.assertEqual(mc.check_parts(r), [])
        r[0]["extra"]["part.wait"] = "%.4f" % (277.05 * 0.99)         # -1 %: a part left out
        f = mc.check_parts(r)
        self.assertEqual(len(f), 1)
        self.assertTrue(f[0].startswith("parts: modelsmp.line_pingpong"), f)
        del r[1]["extra"]
        self.assertEqual(len(mc.check_parts(r)), 2)

    def test_xapic_needs_mmio(self):
        x = fig("modelsmp.ipi_roundtrip", 9432.36, 546.05, **IPI_EV)   # io 0: an x2APIC boot
        f = check([x], self.p, "xapic")
        self.assertTrue(any("not an xAPIC boot" in m for m in f), f)


class RecordedLogTest(unittest.TestCase):
    """Logs of real boots (tools/baremm model-check, skylake-sp): they pass; the same log
    with one figure perturbed fails. A perturbation is (regex, replacement) on the
    plugin's raw lines, every match replaced (every run of the figure)."""

    def load(self, name, perturb=None):
        with open(os.path.join(DATA, name)) as f:
            text = f.read()
        if perturb:
            old, new = perturb
            text, n = re.subn(old, new, text)
            self.assertGreater(n, 0, old)
        return logparse.parse_log(text)["results"]

    def setUp(self):
        self.p = mc.load_profile("skylake-sp")

    def test_recorded_logs_pass(self):
        self.assertEqual(mc.check(self.load("modelsmp_skylake_x2apic.log"), self.p), [])
        self.assertEqual(mc.check(self.load("modelsmp_skylake_xapic.log"), self.p, "xapic"), [])

    def test_perturbed_x2apic_log_fails(self):
        # the model's round trip without one IPI latency (2000 cycles less)
        r = self.load("modelsmp_skylake_x2apic.log", (r"cycles=8327\.\d\d", "cycles=6327.36"))
        f = mc.check(r, self.p)
        self.assertEqual(len(f), 2)     # its known answer, and its parts no longer add up
        self.assertTrue(f[0].startswith("parts: modelsmp.ipi_roundtrip"), f)
        self.assertTrue(f[1].startswith("modelsmp.ipi_roundtrip:"), f)

    def test_perturbed_xapic_log_fails(self):
        # xAPIC IPIs not delivered at send + ipi_latency: both latencies missing, no IPI seen
        r = self.load("modelsmp_skylake_xapic.log", (r"cycles=9432\.\d\d", "cycles=5432.36"))
        self.assertEqual(len(mc.check(r, self.p, "xapic")), 2)      # + its parts
        r = self.load("modelsmp_skylake_xapic.log",
                      (r"ev.model_ipi_sent=1000\b", "ev.model_ipi_sent=0"))
        self.assertEqual(len(mc.check(r, self.p, "xapic")), 1)

    def test_recorded_llc_across_ccds(self):
        # zen3 at 9 CPUs: CPU 8 on the second CCD; 275.00 = c2c_remote_lat 270 + 5 insns
        zen3 = mc.load_profile("zen3")
        self.assertEqual(mc.check(self.load("modelsmp_zen3_llc.log"), zen3, "llc"), [])
        # what one LLC for both CCDs gave (an L3 hit, llc_lat 46, and no llc_remote)
        r = self.load("modelsmp_zen3_llc.log", (r"cycles=275\.00", "cycles=51.00"))
        f = mc.check_llc(mc._find(r, "modelsmp.llc_remote"), zen3)
        self.assertEqual(len(f), 1, f)
        r = self.load("modelsmp_zen3_llc.log", (r"ev.model_llc_remote=12288\b",
                                                "ev.model_llc_remote=0"))
        self.assertEqual(len(mc.check(r, zen3, "llc")), 1)

    def test_missing_figures(self):
        f = mc.check([], self.p)
        self.assertEqual(len(f), 4)
        self.assertEqual(len(mc.check([], self.p, "calls")), 1)

    def test_recorded_calls_pass(self):
        # bench=ipi.* at -smp 2 under skylake-sp (causal reads): 4500.76 / 4500.73
        self.assertEqual(mc.check(self.load("ipi_calls_skylake.log"), self.p, "calls"), [])

    def test_calls_apart_fail(self):
        # (check_calls alone: the perturbed medians also break their parts)
        # the figures causal=off gave (3814.10 / 3999.22): the caller read the remote's
        # store early, and the two callers' own paths showed
        r = self.load("ipi_calls_skylake.log", (r"cycles=4500\.76", "cycles=3814.10"))
        r = [x for x in r]
        for x in r:
            if x["bench"] == "ipi.call_all" and x["unit"] == "model_cycles":
                x["median"] = 3999.22
        f = mc.check_calls(r)
        self.assertEqual(len(f), 1)
        self.assertTrue(f[0].startswith("ipi.calls:"), f)
        # within 1 %: passes
        r = self.load("ipi_calls_skylake.log", (r"cycles=4500\.76", "cycles=4460.00"))
        self.assertEqual(mc.check_calls(r), [])


if __name__ == "__main__":
    unittest.main()
