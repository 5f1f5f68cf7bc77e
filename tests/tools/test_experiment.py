"""tools/baremm experiment: definitions, reports and verdicts on recorded seed logs."""
import io
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, data  # noqa: E402
from baremm_lib import cfg as cfgmod, cli, experiment as ex, perfcheck, runner  # noqa: E402


def rec(name):
    r, _ = runner.record_from_log(data(name))
    return r


def run_report(ident, log, icount):
    r = rec(log)
    e = ex.EXPERIMENTS[ident]
    return ex.report(e, r["results"], r["machine"], icount,
                     [c for _, c in e.cmdlines(icount=icount)])


class DefinitionTest(unittest.TestCase):
    def test_five_experiments(self):
        self.assertEqual(sorted(ex.EXPERIMENTS), ["000", "001", "002", "003", "004"])
        for e in ex.EXPERIMENTS.values():
            # 002's deferred frees would leak into the other variant's rounds
            self.assertTrue(e.switchable, e.id)
            self.assertTrue(e.question and e.thread and e.verdict, e.id)
            self.assertGreaterEqual(len(e.values), 2)

    def test_interleaved_cmdline(self):
        e = ex.EXPERIMENTS["001"]
        self.assertEqual(e.cmdlines(), [(None, "bench=tlb.page_fault3_threads "
                                         "ab=rmapbatch:local,multi")])
        self.assertEqual(e.cmdlines(runs=3)[0][1], "bench=tlb.page_fault3_threads runs=3 "
                         "ab=rmapbatch:local,multi")
        e4 = ex.EXPERIMENTS["004"]
        self.assertIn("ab=refpage_init:zeropage,memset,refpage", e4.cmdlines()[0][1])

    def test_icount_extra(self):
        e = ex.EXPERIMENTS["003"]
        self.assertNotIn("bench_cpus", e.cmdlines()[0][1])
        self.assertIn("bench_cpus=1", e.cmdlines(icount=True)[0][1])

    def test_boot_per_value_when_not_switchable(self):
        e = ex.Experiment("999", "t", "q", bench="b.x", variant="opt", values=("a", "b"),
                          switchable=False)
        self.assertEqual(e.cmdlines(runs=2), [("a", "bench=b.x runs=2 opt=a"),
                                              ("b", "bench=b.x runs=2 opt=b")])

    def test_alternative(self):
        alt = ex.EXPERIMENTS["001"].alternative()
        self.assertEqual(alt.bench, "vm.page_fault3")
        self.assertEqual(alt.cmdlines()[0][1],
                         "bench=vm.page_fault3 vm_mode=threads ab=rmapbatch:local,multi")
        self.assertIsNone(ex.EXPERIMENTS["004"].alternative())

    def test_default_suite_ends_with_seed001(self):
        entries = cfgmod.select(cfgmod.load(os.path.join(ROOT, "tests", "qemu",
                                                         "suites.cfg")), groups=["default"])
        self.assertGreaterEqual(len(entries), 2)
        last = entries[-1]
        self.assertEqual(last["cmdline"], ex.EXPERIMENTS["001"].cmdlines()[0][1])
        self.assertEqual(last["smp"], ex.EXPERIMENTS["001"].smp)


class ReportTest(unittest.TestCase):
    def test_001_tcg(self):
        text, v = run_report("001", "seed001_tcg.log", False)
        self.assertEqual(v["agree"], "yes")
        self.assertIn("%change", text)
        self.assertIn("rmapbatch:local -> rmapbatch:multi", text)
        self.assertIn("Events per operation", text)
        self.assertIn("Verdict (TCG wall time): yes", text)
        self.assertIn("flush IPIs 0.0976 -> 0.0068 per op (14x fewer)", v["text"])
        self.assertIn("+114%", v["text"])
        # key events come first, in the definition's order
        lines = text.splitlines()
        i = next(n for n, l in enumerate(lines) if l.startswith("tlb.page_fault3_threads."))
        self.assertTrue(lines[i + 1].startswith("ops/s per CPU"))
        self.assertTrue(lines[i + 2].startswith("fault_shared"))

    def test_001_icount(self):
        text, v = run_report("001", "seed001_icount.log", True)
        self.assertEqual(v["agree"], "yes")
        self.assertIn("instructions", v["text"])
        self.assertIn("deterministic mode", text)

    def test_004_pages_equal(self):
        for log, icount in (("seed004_tcg.log", False), ("seed004_icount.log", True)):
            text, v = run_report("004", log, icount)
            self.assertEqual(v["agree"], "yes", log)
            self.assertIn("touch_permille:0: 5 / 1031 / 5 pages", v["text"])
            self.assertIn("touch_permille:500: 517 / 1031 / 517 pages", v["text"])
            self.assertIn("refpage_init:memset", text)

    def test_002_no_significant_change(self):
        _, v = run_report("002", "seed002_tcg.log", False)
        self.assertEqual(v["agree"], "yes")
        self.assertIn("not significant", v["ours"])
        _, v = run_report("002", "seed002_icount.log", True)
        self.assertEqual(v["agree"], "yes")      # -0.5 %: small, as in the thread

    def test_003_and_000_noise(self):
        _, v = run_report("003", "seed003_tcg.log", False)
        self.assertEqual(v["agree"], "inconclusive")
        self.assertIn("pb_lookup 10000 -> 19579", v["text"])
        _, v = run_report("000", "seed000_tcg.log", False)
        self.assertEqual(v["agree"], "inconclusive")
        self.assertIn("0 -> 1 bulk passes per op", v["text"])

    def test_003_icount_is_an_instruction_count(self):
        _, v = run_report("003", "seed003_icount_1cpu.log", True)
        self.assertEqual(v["agree"], "no")        # exact: +2.6 % instructions vs +0.14 %
        self.assertIn("more instructions without the cache", v["text"])
        self.assertIn("significant (Welch", v["text"])
        _, v = run_report("003", "seed003_icount.log", True)
        self.assertEqual(v["agree"], "inconclusive")   # 2 CPUs taking turns: spread

    def test_001_disagrees_without_fewer_flushes(self):
        r = rec("seed001_tcg.log")
        res = [dict(x, events=dict(x["events"])) for x in r["results"]]
        multi = next(x for x in res if x["variant"] == "rmapbatch:multi")
        local = next(x for x in res if x["variant"] == "rmapbatch:local")
        multi["events"]["flush_ipi"] = local["events"]["flush_ipi"]
        multi["median"], multi["samples"] = local["median"], local["samples"]
        an = ex.Analysis(ex.EXPERIMENTS["001"], res, False)
        self.assertEqual(ex.verdict_001(an)["agree"], "no")

    def test_missing_figures(self):
        e = ex.EXPERIMENTS["002"]
        text, v = ex.report(e, [], None, False, ["bench=x"])
        self.assertEqual(v["agree"], "inconclusive")
        self.assertIn("no figures", text)

    def test_per_value_boots_line_up(self):
        e = ex.Experiment("001", "t", "q", bench="tlb.page_fault3_threads",
                          variant="rmapbatch", values=("local", "multi"), switchable=False,
                          key_events=ex.EXPERIMENTS["001"].key_events,
                          verdict=ex.verdict_001)
        boots = [("local", rec("seed_pervalue_local.log")),
                 ("multi", rec("seed_pervalue_multi.log"))]
        res = ex.merge_boot_results(e, boots)
        self.assertEqual([r["variant"] for r in res], ["rmapbatch:local", "rmapbatch:multi"])
        text, v = ex.report(e, res, boots[0][1]["machine"], False, ["a", "b"])
        self.assertEqual(v["agree"], "yes")
        self.assertIn("-38.8%", text)
        self.assertIn("flush_ipi", text)

    def test_summary_table(self):
        rows = []
        for i, log in (("001", "seed001_tcg.log"), ("004", "seed004_icount.log")):
            _, v = run_report(i, log, i == "004")
            rows.append({"id": i, "icount": i == "004", "verdict": v})
        t = ex.summary_table(rows)
        self.assertIn("seed", t.splitlines()[0])
        self.assertIn("001   tcg", t)
        self.assertIn("004   icount", t)


class CommandTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="baremm-exp-test-")
        self.saved = (runner.ROOT, runner.boot, runner.build, perfcheck.no_menu_iso)
        runner.ROOT = self.tmp
        runner.build = lambda *a, **k: None
        perfcheck.no_menu_iso = lambda src, top, always_copy=True: os.path.join(top, "x.iso")
        self.cmdlines = []

        def fake_boot(cfg, outdir, echo=None, iso=None, name="run"):
            self.cmdlines.append((cfg["cmdline"], cfg["smp"], cfg["icount"], iso))
            log = "seed001_icount.log" if cfg["icount"] else "seed001_tcg.log"
            r = rec(log)
            r["qemu"] = {"duration_s": 1.0}
            return r, None
        runner.boot = fake_boot

    def tearDown(self):
        runner.ROOT, runner.boot, runner.build, perfcheck.no_menu_iso = self.saved
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_cli(self, argv):
        a = cli.build_parser().parse_args(argv)
        out = io.StringIO()
        return a.func(a, out=out), out.getvalue()

    def test_experiment_001(self):
        rc, out = self.run_cli(["experiment", "001", "--runs", "3", "--icount"])
        self.assertEqual(rc, 0)
        self.assertEqual(self.cmdlines[0][:3], ("bench=tlb.page_fault3_threads runs=3 "
                                                "ab=rmapbatch:local,multi", 2, True))
        self.assertTrue(self.cmdlines[0][3].endswith("x.iso"))
        self.assertIn("Verdict (deterministic mode", out)
        self.assertTrue(any(f.startswith("experiment-001") for f in
                            os.listdir(os.path.join(self.tmp, "results"))))

    def test_unknown_id(self):
        rc, _ = self.run_cli(["experiment", "009"])
        self.assertEqual(rc, 2)
        self.assertEqual(self.cmdlines, [])

    def test_all_prints_summary(self):
        rc, out = self.run_cli(["experiment", "all", "--no-build"])
        self.assertEqual(rc, 0)
        self.assertEqual(len(self.cmdlines), 5)       # one interleaved boot each
        self.assertTrue(self.cmdlines[2][0].startswith("bench=tlb.ptfree_rcu "), self.cmdlines[2])
        self.assertIn("ab=ptfree_rcu:off,on", self.cmdlines[2][0])
        self.assertIn("== summary ==", out)
        self.assertEqual(self.cmdlines[4][1], 1)      # 004 runs on one CPU

    @unittest.skipUnless(shutil.which("gnuplot"), "gnuplot not installed")
    def test_plot(self):
        png = os.path.join(self.tmp, "p.png")
        rc, out = self.run_cli(["experiment", "001", "--plot", png])
        self.assertEqual(rc, 0, out)
        self.assertTrue(os.path.getsize(png) > 0)


if __name__ == "__main__":
    unittest.main()
