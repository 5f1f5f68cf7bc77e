"""tools/baremm shootdown-sweep: command lines, the table from saved data, its checks."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401  (puts tools/ on sys.path)
from baremm_lib import sweep  # noqa: E402


def res(bench, cpus, median, case=None, variants=None, psd=0.0, **ev):
    r = {"bench": bench, "cpus": cpus, "unit": "model_cycles", "median": median,
         "pstddev": psd, "variants": variants or {},
         "events": {"model_" + k: v for k, v in ev.items()}}
    if case:
        r["case"] = case
    return r


def data(cpus=(2, 3), drop=None, eack_off_delta=0.0):
    proto, eack, call = [], [], []
    for c in cpus:
        call.append(res("ipi.call_all", c, 4000 + 500 * c))
        for case, base in (("pages:1", 5000), ("pages:0", 5100)):
            proto.append(res("tlb.shootdown", c, base + 1000 * c, case,
                             {"tlb_protocol": "sequential"}, wait_cycles=300, wait=1))
            proto.append(res("tlb.shootdown", c, base + 900 * c, case,
                             {"tlb_protocol": "concurrent"}, wait_cycles=200, wait=1))
        eack.append(res("tlb.shootdown", c, 5000 + 900 * c + eack_off_delta, "pages:1",
                        {"tlb_early_ack": "off"}, wait_cycles=200, wait=1))
        eack.append(res("tlb.shootdown", c, 4800 + 900 * c, "pages:1",
                        {"tlb_early_ack": "on"}, psd=0.5, wait_cycles=100, wait=1))
    boots = [{"name": "protocol", "cmdline": "p", "results": proto},
             {"name": "early-ack", "cmdline": "e", "results": eack},
             {"name": "call", "cmdline": "c", "results": call}]
    if drop:
        boots = [b for b in boots if b["name"] != drop]
    return {"profile": "skylake-sp", "smp": max(cpus), "cpus": list(cpus), "boots": boots,
            "command": "tools/baremm shootdown-sweep", "machine": {"build": "abc"}}


class SweepTest(unittest.TestCase):
    def test_cmdlines_cover_every_count_in_one_boot(self):
        cmds = dict(sweep.cmdlines(2, 16, 3, 30))
        self.assertEqual(sorted(cmds), ["call", "early-ack", "protocol"])
        for c in cmds.values():
            self.assertIn("bench_cpus=2-16", c)
        self.assertIn("cases=1,0", cmds["protocol"])
        self.assertIn("ab=tlb_protocol:sequential,concurrent", cmds["protocol"])
        self.assertIn("ab=tlb_early_ack:off,on", cmds["early-ack"])

    def test_table(self):
        problems = []
        tab, psd = sweep.table(data(), problems)
        self.assertEqual(problems, [])
        self.assertEqual(psd, 0.5)
        rows = [r for r in tab.splitlines() if r.startswith("| 1 ") or r.startswith("| 2 ")]
        self.assertEqual(len(rows), 2)   # remotes = CPUs - 1
        cells = [c.strip() for c in rows[0].strip("|").split("|")]
        # remotes, call, seq, conc, conc/seq, eack, eack/conc, conc/call, full seq, full conc
        self.assertEqual(cells[:10], ["1", "5000", "7000", "6800", "0.97", "6600", "0.97",
                                      "1.36", "7100", "6900"])
        self.assertEqual(cells[10:], ["300 / 200 / 100", "1 / 1"])

    def test_missing_boot_is_a_problem(self):
        problems = []
        tab, _ = sweep.table(data(drop="call"), problems)
        self.assertEqual(len(problems), 2)      # one per CPU count
        self.assertIn("ipi.call_all", problems[0])

    def test_boots_that_disagree_are_a_problem(self):
        problems = []
        sweep.table(data(eack_off_delta=100.0), problems)   # same code, 1.5 % apart
        self.assertEqual(len(problems), 2)
        self.assertIn("differ", problems[0])
        problems = []
        sweep.table(data(eack_off_delta=10.0), problems)    # within 0.5 %
        self.assertEqual(problems, [])

    def test_plugin_arguments_go_to_their_own_file_and_header(self):
        self.assertEqual(sweep.data_name("zen3"), "shootdown-model-zen3.json")
        self.assertEqual(sweep.data_name("zen3", "causal=off"),
                         "shootdown-model-zen3-causal_off.json")
        d = data()
        self.assertNotIn("BAREMM_MODEL_ARGS", sweep.render(d, []))
        d["model_args"] = "causal=off"
        self.assertIn("plugin arguments `causal=off`", sweep.render(d, []))

    def test_plot_records_keep_one_line_per_protocol(self):
        recs = sweep.plot_records(data())
        names = set()
        for rec in recs:
            for r in rec["results"]:
                self.assertTrue(r["bench"] == "ipi.call_all" or r["case"] == "pages:1")
                names.add((r["bench"], tuple(sorted(r["variants"].items()))))
        self.assertEqual(names, {("ipi.call_all", ()),
                                 ("tlb.shootdown", (("tlb_protocol", "sequential"),)),
                                 ("tlb.shootdown", (("tlb_protocol", "concurrent"),)),
                                 ("tlb.shootdown", (("tlb_early_ack", "on"),))})


if __name__ == "__main__":
    unittest.main()
