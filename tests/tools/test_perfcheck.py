"""tools/baremm perf-check: perf.cfg, baseline comparison, the command on recorded logs."""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, data  # noqa: E402
from baremm_lib import cli, perfcheck as pc, runner, status  # noqa: E402
from baremm_lib.figure import Figure  # noqa: E402

CFG = """
# comment
tolerance=3
[vm]
cmdline=bench=vm.refpage ab=refpage_init:zeropage,memset,refpage
smp=1
tolerance.vm.refpage.cycle[[]touch_permille:0]*=50

[seed001]
cmdline=bench=tlb.page_fault3_threads ab=rmapbatch:local,multi
smp=2
tolerance=10%
figures=*rmapbatch:multi*
"""


def rec(name):
    r, _ = runner.record_from_log(data(name))
    r["qemu"] = {"duration_s": 1.0}
    return r


class CfgTest(unittest.TestCase):
    def test_parse(self):
        c = pc.parse_cfg(CFG)
        self.assertEqual(c["tolerance"], 3.0)
        vm, s1 = c["entries"]
        self.assertEqual((vm["name"], vm["smp"], vm["tolerance"], vm["figures"]),
                         ("vm", 1, 3.0, "*"))
        self.assertEqual(vm["overrides"], [("vm.refpage.cycle[[]touch_permille:0]*", 50.0)])
        self.assertEqual((s1["tolerance"], s1["smp"]), (10.0, 2))

    def test_repeat(self):
        c = pc.parse_cfg("[a]\ncmdline=x\nrepeat=2\n[b]\ncmdline=y\n")
        self.assertEqual([e["repeat"] for e in c["entries"]], [2, 1])

    def test_errors(self):
        for text, msg in (("[a]\nsmp=1\n", "no cmdline"),
                          ("[a]\ncmdline=x\nbogus=1\n", "unknown key"),
                          ("[a]\ncmdline=x\ntolerance=lots\n", "not a number"),
                          ("[a]\ncmdline=x\n[a]\ncmdline=y\n", "duplicate"),
                          ("smp=2\n", "only tolerance="),
                          ("[a]\ncmdline=x\nsmp=0\n", "positive integer"),
                          ("[a]\ncmdline=x\nrepeat=0\n", "positive integer")):
            with self.assertRaises(pc.PerfError) as cm:
                pc.parse_cfg(text, "t.cfg")
            self.assertIn(msg, str(cm.exception))

    def test_checked_in_files_agree(self):
        c = pc.load_cfg(os.path.join(ROOT, pc.PERF_CFG))
        names = {e["name"] for e in c["entries"]}
        self.assertTrue(names)
        for e in c["entries"]:
            self.assertLessEqual(e["smp"], 2)
        b = pc.load_baseline(os.path.join(ROOT, pc.BASELINE))
        self.assertTrue(b["figures"])
        for fid, f in pc.baseline_figures(b).items():
            self.assertIn(fid.entry, names, fid)
            self.assertGreater(f["median"], 0)


class ModelBaselineTest(unittest.TestCase):
    def test_each_core_has_its_own_baseline(self):
        self.assertEqual(pc.model_baseline("zen3", ""),
                         os.path.join("tests", "perf", "baseline-model-zen3.json"))
        self.assertEqual(pc.model_baseline("zen3", "causal=off,core=ooo"),
                         os.path.join("tests", "perf", "baseline-model-zen3-ooo.json"))
        old = os.environ.get("BAREMM_MODEL_ARGS")
        os.environ["BAREMM_MODEL_ARGS"] = "core=ooo"
        try:
            self.assertTrue(pc.model_baseline("skylake-sp").endswith("skylake-sp-ooo.json"))
        finally:
            if old is None:
                del os.environ["BAREMM_MODEL_ARGS"]
            else:
                os.environ["BAREMM_MODEL_ARGS"] = old


class CompareTest(unittest.TestCase):
    def figs(self):
        c = pc.parse_cfg(CFG)
        vm, s1 = c["entries"]
        f = pc.figures_of(vm, rec("seed004_icount.log"))
        f.update(pc.figures_of(s1, rec("seed001_icount.log")))
        return f

    def test_figures_of(self):
        f = self.figs()
        self.assertEqual(len(f), 9 + 1)    # 3 cases x 3 variants + seed001 multi only
        k = Figure.parse("vm: vm.refpage.cycle[touch_permille:0] cpus=1 [refpage_init:memset]")
        self.assertEqual(f[k]["median"], 3191587)
        self.assertEqual(f[k]["tolerance"], 50.0)
        k2 = Figure.parse("vm: vm.refpage.cycle[touch_permille:500] cpus=1 "
                          "[refpage_init:memset]")
        self.assertEqual(f[k2]["tolerance"], 3.0)
        self.assertIn(Figure.parse("seed001: tlb.page_fault3_threads.fault cpus=2 "
                                   "[rmapbatch:multi]"), f)

    def test_identical_passes(self):
        f = self.figs()
        rows, n = pc.compare_figures(f, f)
        self.assertEqual(n, {"passed": 10, "failed": 0})
        self.assertTrue(all(r["verdict"] == "pass" for r in rows))

    def test_verdicts(self):
        cur = self.figs()
        base = {k: json.loads(json.dumps(v)) for k, v in cur.items()}
        n_slow = "vm: vm.refpage.cycle[touch_permille:500] cpus=1 [refpage_init:refpage]"
        n_fast = "vm: vm.refpage.cycle[touch_permille:1000] cpus=1 [refpage_init:refpage]"
        n_tol = "vm: vm.refpage.cycle[touch_permille:0] cpus=1 [refpage_init:memset]"
        n_new = "seed001: tlb.page_fault3_threads.fault cpus=2 [rmapbatch:multi]"
        k_slow, k_fast, k_tol, k_new = (Figure.parse(n) for n in (n_slow, n_fast, n_tol, n_new))
        base[k_slow]["median"] = cur[k_slow]["median"] / 1.04      # now 4 % slower
        base[k_slow]["events"]["alloc_pcp"] = 500
        base[k_fast]["median"] = cur[k_fast]["median"] * 1.2       # now cheaper
        base[k_tol]["median"] = cur[k_tol]["median"] / 1.4         # 40 % < 50 % override
        base[Figure.parse("vm: vm.gone.x cpus=1")] = {"median": 5, "unit": "cycles",
                                                      "events": {}}
        del base[k_new]
        rows, n = pc.compare_figures(base, cur)
        v = {r["figure"]: r["verdict"] for r in rows}
        self.assertEqual(v[n_slow], "SLOWER")
        self.assertEqual(v[n_fast], "faster")
        self.assertEqual(v[n_tol], "pass")
        self.assertEqual(v["vm: vm.gone.x cpus=1"], "MISSING")
        self.assertEqual(v[n_new], "new")
        self.assertEqual(n["failed"], 2)
        text = pc.format_rows(rows)
        self.assertIn("+4.00%", text)
        self.assertIn("events per op that moved: alloc_pcp 500 -> 517", text)

    def test_boot_failure(self):
        f = self.figs()
        cur = {k: v for k, v in f.items() if k.entry != "seed001"}
        rows, n = pc.compare_figures(f, cur, [("seed001", "panic")])
        self.assertEqual(n["failed"], 1)
        self.assertIn("BOOT", [r["verdict"] for r in rows])
        rows, n = pc.compare_figures({}, {}, [("x", "watchdog")])
        self.assertEqual((rows[0]["verdict"], n["failed"]), ("BOOT", 1))


class BootsDifferTest(unittest.TestCase):
    def test_identical_and_each_kind_of_difference(self):
        k = Figure.parse("e: b.x cpus=2")
        v0 = {"median": 5.0, "samples": [4.0, 5.0, 6.0], "events": {"ev.a": 1.0}}
        f = {k: v0}
        self.assertEqual(pc.boots_differ([f, {k: json.loads(json.dumps(v0))}]), [])
        for what, v in (("median", 5.5), ("samples", [4.0, 5.0, 6.5]),
                        ("events", {"ev.a": 1.5})):
            g = {k: json.loads(json.dumps(v0))}
            g[k][what] = v
            d = pc.boots_differ([f, g])
            self.assertEqual([(x[0], x[1]) for x in d], [(k, what)])
        self.assertEqual(pc.boots_differ([f, {}])[0][1:], ("figure", "present", "missing"))


class IsoTest(unittest.TestCase):
    def test_private_iso(self):
        d = tempfile.mkdtemp()
        saved = runner.ROOT
        try:
            runner.ROOT = d
            with self.assertRaises(runner.ToolError):
                pc.private_iso(d)                                # no ISO built yet
            src = os.path.join(d, runner.ISO)
            os.makedirs(os.path.dirname(src))
            with open(src, "wb") as f:
                f.write(b"iso bytes")
            with self.assertRaises(runner.ToolError):
                pc.private_iso(d)                                # no flat image built yet
            with open(runner.direct_image(src), "wb") as f:
                f.write(b"bin bytes")
            out = pc.private_iso(d)
            self.assertNotEqual(out, src)
            with open(out, "rb") as f:
                self.assertEqual(f.read(), b"iso bytes")
            image = runner.direct_image(out)                     # the copy's own image
            self.assertEqual(os.path.dirname(image), os.path.dirname(out))
            with open(image, "rb") as f:
                self.assertEqual(f.read(), b"bin bytes")
            pc.remove_copy(out)
            self.assertFalse(os.path.exists(out))
            self.assertFalse(os.path.exists(image))
            pc.remove_copy(src)                                  # never the original
            self.assertTrue(os.path.exists(src))
        finally:
            runner.ROOT = saved
            shutil.rmtree(d)


class CommandTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="baremm-perf-test-")
        self.saved = (runner.ROOT, runner.boot, runner.build, pc.private_iso)
        runner.ROOT = self.tmp
        runner.build = lambda *a, **k: None
        pc.private_iso = lambda top: os.path.join(top, "x.iso")
        self.boots = []
        self.logs = {"vm": "seed004_icount.log", "seed001": "seed001_icount.log"}

        def fake_boot(cfg, outdir, echo=None, iso=None, name="run"):
            self.boots.append((name, cfg["icount"], cfg["smp"]))
            return rec(self.logs[name]), None
        runner.boot = fake_boot
        self.cfg = os.path.join(self.tmp, "perf.cfg")
        with open(self.cfg, "w") as f:
            f.write(CFG)
        self.base = os.path.join(self.tmp, "baseline.json")

    def tearDown(self):
        runner.ROOT, runner.boot, runner.build, pc.private_iso = self.saved
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_cli(self, *args):
        a = cli.build_parser().parse_args(["perf-check", "--config", self.cfg,
                                           "--baseline", self.base] + list(args))
        out = io.StringIO()
        return a.func(a, out=out), out.getvalue()

    def test_update_then_check(self):
        rc, out = self.run_cli("--update", "--repeat")
        self.assertEqual(rc, 0, out)
        self.assertIn("deterministic: every figure identical in two boots (10 figures)", out)
        self.assertEqual(self.boots, [("vm", True, 1), ("vm", True, 1),
                                      ("seed001", True, 2), ("seed001", True, 2)])
        with open(self.base) as f:
            b = json.load(f)
        self.assertEqual(b["schema"], pc.SCHEMA)
        self.assertEqual(len(b["figures"]), 10)
        rc, out = self.run_cli()
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.rstrip().endswith("10 passed, 0 failed"), out)
        # a slower build: the baseline says the figure used to be cheaper
        k = "vm: vm.refpage.cycle[touch_permille:500] cpus=1 [refpage_init:zeropage]"
        b["figures"][k]["median"] *= 0.9
        with open(self.base, "w") as f:
            json.dump(b, f)
        rc, out = self.run_cli()
        self.assertEqual(rc, 1)
        self.assertIn("SLOWER", out)
        self.assertTrue(out.rstrip().endswith("9 passed, 1 failed"), out)

    def test_only(self):
        self.run_cli("--update")
        self.boots.clear()
        rc, out = self.run_cli("--only", "seed001")
        self.assertEqual(rc, 0, out)
        self.assertEqual(self.boots, [("seed001", True, 2)])
        self.assertIn("1 passed, 0 failed", out)

    def test_missing_baseline(self):
        with self.assertRaises(pc.PerfError):
            self.run_cli()
        self.assertEqual(self.boots, [])
        # through the command line's one error mapping: the tool-error status
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = cli.main(["perf-check", "--config", self.cfg, "--baseline", self.base])
        self.assertEqual(rc, status.EXIT_TOOL_ERROR)
        self.assertIn("perf-check: ", err.getvalue())
        self.assertEqual(self.boots, [])

    def test_not_deterministic(self):
        seq = iter(["seed001_icount.log", "seed001_tcg.log"])
        self.logs = {"vm": "seed004_icount.log"}
        orig = runner.boot

        def boot(cfg, outdir, echo=None, iso=None, name="run"):
            if name == "seed001":
                return rec(next(seq)), None
            return orig(cfg, outdir, echo, iso, name)
        runner.boot = boot
        rc, out = self.run_cli("--update", "--repeat", "--only", "seed001")
        self.assertEqual(rc, 1)
        self.assertIn("NOT DETERMINISTIC", out)

    def test_entry_repeat_must_be_identical(self):
        """An entry with repeat=2 boots twice in every check and fails (DIFFERS) when the
        two boots disagree, even when both are within the baseline's tolerance."""
        with open(self.cfg, "a") as f:
            f.write("repeat=2\n")              # appended to [seed001]
        rc, out = self.run_cli("--update")
        self.assertEqual(rc, 0, out)
        self.assertEqual(self.boots, [("vm", True, 1), ("seed001", True, 2),
                                      ("seed001", True, 2)])
        seq = iter(["seed001_icount.log", "seed001_icount.log",
                    "seed001_icount.log", "seed001_tcg.log"])
        orig = runner.boot

        def boot(cfg, outdir, echo=None, iso=None, name="run"):
            if name == "seed001":
                return rec(next(seq)), None
            return orig(cfg, outdir, echo, iso, name)
        runner.boot = boot
        rc, out = self.run_cli("--only", "seed001")
        self.assertEqual(rc, 0, out)
        self.assertIn("1 passed, 0 failed", out)
        rc, out = self.run_cli("--only", "seed001")
        self.assertEqual(rc, 1, out)
        self.assertIn("NOT DETERMINISTIC", out)
        self.assertIn("DIFFERS", out)
        self.assertTrue(out.rstrip().endswith("0 passed, 1 failed"), out)


if __name__ == "__main__":
    unittest.main()
