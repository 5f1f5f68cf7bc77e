"""tools/baremm_lib/verdict.py: the one rule on synthetic figures; it can disagree."""
import dataclasses
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401
from baremm_lib import experiment as ex, stats, verdict as V  # noqa: E402


def fig(samples, variant, opt="o", cpus=2, events=None, unit="cycles", case=""):
    return {"bench": "b.x", "metric": "op" + ("[%s]" % case if case else ""), "cpus": cpus,
            "unit": unit, "samples": list(samples), "median": stats.median(samples),
            "mean": stats.mean(samples), "stddev": stats.stddev(samples),
            "pstddev": stats.pstddev(samples), "runs": len(samples),
            "events": dict(events or {}), "variant": "%s:%s" % (opt, variant),
            "variants": {opt: variant}}


def experiment(claims, linux=None, threads=None):
    return ex.Experiment("999", "t", "q", bench="b.x", variant="o", values=("a", "b"),
                         thread=V.MailThread("a test", tuple(claims), threads=threads),
                         op="one op", explain=("flush",), linux=linux,
                         linux_none="" if linux else "none measured")


def decide(exp, fa, fb, icount=False):
    return ex.Analysis(exp, [fa, fb], icount).verdict()


FASTER = V.Claim("time", 100.0, 90.0, "ms", ("a", "b"))        # thread: -10 %
NO_CHANGE = V.Claim("time", 100.0, 100.2, "ms", ("a", "b"))    # thread: +0.2 %


class RuleTest(unittest.TestCase):
    def test_classify(self):
        self.assertEqual(V.classify(2.0, 5.0, 1.0), "up")
        self.assertEqual(V.classify(-5.0, -2.0, 1.0), "down")
        self.assertEqual(V.classify(-0.5, 0.9, 1.0), "none")
        self.assertEqual(V.classify(-0.5, 1.5, 1.0), "unresolved")
        self.assertEqual(V.classify(-3.0, 3.0, 1.0), "unresolved")

    def test_thread_classes(self):
        self.assertEqual(FASTER.cls(), "down")
        self.assertEqual(NO_CHANGE.cls(), "none")
        ops = V.Claim("ops", 100.0, 200.0, "ops", ("a", "b"), throughput=True)
        self.assertAlmostEqual(ops.pct(), -50.0)     # twice the ops = half the time per op
        self.assertEqual(ops.cls(), "down")

    def test_agree(self):
        v = decide(experiment([FASTER]), fig([100, 101, 99, 100], "a"),
                   fig([80, 81, 79, 80], "b"))
        self.assertEqual(v["agree"], "agree")
        c = v["claims"][0]
        self.assertAlmostEqual(c["pct"], -20.0)
        self.assertLess(c["pct_lo"], -20.0)
        self.assertGreater(c["pct_hi"], -20.0)

    def test_disagree_opposite_direction(self):
        v = decide(experiment([FASTER]), fig([100, 101, 99, 100], "a"),
                   fig([120, 121, 119, 120], "b"))
        self.assertEqual(v["agree"], "disagree")
        self.assertEqual(v["claims"][0]["class"], "up")

    def test_disagree_no_effect_where_the_thread_saw_one(self):
        v = decide(experiment([FASTER]), fig([1000, 1000, 1000], "a"),
                   fig([1001, 1001, 1001], "b"), icount=True)
        self.assertEqual(v["agree"], "disagree")
        self.assertEqual(v["claims"][0]["class"], "none")

    def test_disagree_effect_where_the_thread_saw_none(self):
        v = decide(experiment([NO_CHANGE]), fig([1000, 1000], "a"), fig([1050, 1050], "b"),
                   icount=True)
        self.assertEqual(v["agree"], "disagree")

    def test_one_instruction_is_not_an_effect(self):
        # exact and "significant" (zero spread), but 0.01 % is below the minimum effect
        v = decide(experiment([NO_CHANGE]), fig([10000] * 5, "a"), fig([10001] * 5, "b"),
                   icount=True)
        self.assertEqual(v["agree"], "agree")
        c = v["claims"][0]
        self.assertTrue(c["exact"])
        self.assertEqual(c["class"], "none")
        self.assertIn("+0.01%", v["text"])

    def test_inconclusive_when_the_interval_crosses_the_minimum(self):
        v = decide(experiment([FASTER]), fig([100, 140, 70, 110], "a"),
                   fig([90, 130, 60, 100], "b"))
        self.assertEqual(v["agree"], "inconclusive")
        self.assertEqual(v["claims"][0]["class"], "unresolved")

    def test_combine(self):
        self.assertEqual(V.combine(["agree", "inconclusive"]), "inconclusive")
        self.assertEqual(V.combine(["agree", "disagree", "inconclusive"]), "disagree")
        self.assertEqual(V.combine(["agree", "agree"]), "agree")
        self.assertEqual(V.combine([]), "inconclusive")

    def test_event_claim_is_exact(self):
        c = V.Claim("flushes", 8.0, 0.0, "%", ("a", "b"), ours="flush")
        v = decide(experiment([c]), fig([100, 100], "a", events={"flush": 0.5}),
                   fig([100, 100], "b", events={"flush": 0.5}))
        self.assertEqual(v["agree"], "disagree")
        v = decide(experiment([c]), fig([100, 100], "a", events={"flush": 0.5}),
                   fig([100, 100], "b", events={"flush": 0.0}))
        self.assertEqual(v["agree"], "agree")

    def test_t_quantile(self):
        self.assertAlmostEqual(stats.t_ppf(0.975, 10), 2.228139, places=5)
        self.assertAlmostEqual(stats.t_ppf(0.975, 1), 12.7062, places=3)
        self.assertAlmostEqual(stats.t_ppf(0.025, 5), -2.570582, places=5)

    def test_interval_covers_known_case(self):
        # two samples of 4 with equal variance: Welch df = 6, half width t(0.975,6)*se
        e = V.effect_of(fig([1, 2, 3, 4], "a"), fig([3, 4, 5, 6], "b"))
        se = math.sqrt(2 * stats.variance([1, 2, 3, 4]) / 4)
        self.assertAlmostEqual(e.delta, 2.0)
        self.assertAlmostEqual(e.hi - e.delta, stats.t_ppf(0.975, 6) * se, places=9)


class TextTest(unittest.TestCase):
    def test_text_comes_from_the_run(self):
        exp = experiment([FASTER], threads=16)
        v = decide(exp, fig([100, 100], "a", cpus=16), fig([80, 80], "b", cpus=16))
        self.assertIn("on 16 CPUs", v["text"])
        self.assertNotIn("2 CPUs", v["text"])
        self.assertNotIn("the thread ran 16", v["text"])
        v = decide(exp, fig([100, 100], "a", cpus=4), fig([80, 80], "b", cpus=4))
        self.assertIn("on 4 CPUs", v["text"])
        self.assertIn("the thread ran 16 threads", v["text"])

    def test_thread_figures_stored_once(self):
        # the header line and the prose quote the same Claim
        for e in ex.EXPERIMENTS.values():
            for c in e.thread.claims:
                self.assertIn(V.num(c.base), e.thread_line())
                self.assertIn(V.num(c.new), e.thread_line())


class LinuxTest(unittest.TestCase):
    REF = {"unit": "instructions", "mode": "icount", "reference_set": "s",
           "sets": {"s": {"command": "run.sh", "cpu": "max",
                          "figures": {"pf1 8MiB": 4000.0, "fork_empty -": 100000.0}}}}

    def test_projection(self):
        lc = V.LinuxCost((("fork_empty -", 1), ("pf1 8MiB", "fault")))
        fa, fb = fig([2000] * 3, "a", events={"fault": 10}), fig([1900] * 3, "b")
        e = V.effect_of(fa, fb, unit="instructions")
        p = V.projection(e, lc, fa, self.REF)
        self.assertEqual(p["linux_cost"], 100000 + 10 * 4000)
        self.assertAlmostEqual(p["pct"], -100 * 100 / 140000)
        self.assertAlmostEqual(p["ratio"], 2000 / 140000)
        self.assertIn("10 x `pf1 8MiB` 4000", p["formula"])

    def test_no_projection_across_units(self):
        lc = V.LinuxCost((("pf1 8MiB", 1),))
        fa = fig([2000] * 3, "a")
        e = V.effect_of(fa, fig([1900] * 3, "b"), unit="model_cycles")
        self.assertIn("model_cycles", V.projection(e, lc, fa, self.REF)["reason"])

    def test_model_projection_uses_its_own_core(self):
        # Linux measured under the in-order core is no reference for an out-of-order run
        ref = {"unit": "instructions", "mode": "icount", "reference_set": "s", "sets": {
            "s": self.REF["sets"]["s"],
            "model:p": {"command": "run.sh", "unit": "model_cycles", "cpu": "max",
                        "figures": {"pf1 8MiB": 900.0}}}}
        lc = V.LinuxCost((("pf1 8MiB", 1),))
        fa = fig([2000] * 3, "a")
        e = V.effect_of(fa, fig([1900] * 3, "b"), unit="model_cycles")
        self.assertEqual(V.projection(e, lc, fa, ref, model="p")["linux_cost"], 900.0)
        p = V.projection(e, lc, fa, ref, model="p", model_args="core=ooo")
        self.assertIn("no model:p,core=ooo set", p["reason"])
        ref["sets"]["model:p,core=ooo"] = {"command": "run.sh", "unit": "model_cycles", "cpu": "max",
                                           "figures": {"pf1 8MiB": 300.0}}
        self.assertEqual(V.projection(e, lc, fa, ref, model="p", model_args="causal=off,core=ooo")
                         ["linux_cost"], 300.0)
        self.assertEqual(V.reference_set_name(ref, "p", "core=inorder"), "model:p")

    def test_model_note_follows_the_core(self):
        exp = ex.Experiment("999", "t", "q", bench="b.x", variant="o", values=("a", "b"),
                            thread=V.MailThread("x", (FASTER,)), op="one op",
                            linux_none="none", model_note="IN-ORDER NOTE",
                            model_note_ooo="OUT-OF-ORDER NOTE")
        fa = fig([1000] * 3, "a", unit="model_cycles")
        fb = fig([900] * 3, "b", unit="model_cycles")

        def text(args):
            return " ".join(ex.Analysis(exp, [fa, fb], True, model="p", model_args=args)
                            .verdict()["text"].split())
        t = text("")
        self.assertIn("Not modelled, and relevant here: IN-ORDER NOTE", t)
        self.assertNotIn("OUT-OF-ORDER NOTE", t)
        self.assertIn("(profile p, deterministic)", t)
        t = text("core=ooo")
        self.assertIn("Not modelled, and relevant here: OUT-OF-ORDER NOTE", t)
        self.assertNotIn("IN-ORDER NOTE", t)
        self.assertIn("(profile p, out-of-order core, deterministic)", t)
        # without an out-of-order note the one note stands for both cores
        exp = dataclasses.replace(exp, model_note_ooo="")
        self.assertIn("IN-ORDER NOTE", text("core=ooo"))

    def test_seed_notes_name_no_in_order_limit_under_the_ooo_core(self):
        for e in ex.EXPERIMENTS.values():
            note = V.model_note(e, "core=ooo")
            self.assertNotIn("in-order", note, e.id)

    def test_reference_file_covers_every_experiment(self):
        ref = V.load_linux_ref()
        figs = ref["sets"][ref["reference_set"]]["figures"]
        self.assertEqual(ref["unit"], "instructions")
        for s in ref["sets"].values():
            self.assertTrue(s["command"].startswith(("tools/linux-ref/run.sh",
                                                     "LREF_CPU=", "BAREMM_MODEL_ARGS=")))
        for e in ex.EXPERIMENTS.values():
            for key, _ in (e.linux.terms if e.linux else ()):
                self.assertIn(key, figs, e.id)

    def test_cheaper_path_is_said_with_the_number(self):
        lc = V.LinuxCost((("pf1 8MiB", 1),))
        exp = ex.Experiment("999", "t", "q", bench="b.x", variant="o", values=("a", "b"),
                            thread=V.MailThread("x", (FASTER,)), op="one op", linux=lc)
        v = decide(exp, fig([1000] * 3, "a"), fig([900] * 3, "b"), icount=True)
        # pf1 in the reference file: 4795 instructions
        self.assertIn("ours costs 0.21x that", v["text"])
        self.assertIn("our path is cheaper than Linux's, so our relative effect is 4.8x",
                      " ".join(v["text"].split()))


class ModelBreakdownTest(unittest.TestCase):
    """Where the model's cycles went: the plugin's parts of a real figure add up to its
    median; the rule they replace (the guest's instruction count x base_cpi, the memory
    events, the wait cycles, and no IPI waits) does not."""

    def load(self, name):
        from baremm_lib import logparse
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", name)) as f:
            return {r["bench"]: r for r in logparse.parse_log(f.read())["results"]
                    if r["unit"] == "model_cycles"}

    @staticmethod
    def old_rule(r, base_cpi=1.0):
        e = r["events"]
        return [("instructions", r["instructions"] * base_cpi),
                ("fixed penalties", e["model_cyc_pen"]),
                ("cache", e["model_cyc_cache"]), ("tlb", e["model_cyc_tlb"]),
                ("rep", e["model_cyc_rep"]), ("waits", e["model_wait_cycles"])]

    def test_parts_add_up_and_the_old_rule_does_not(self):
        figs = self.load("modelsmp_skylake_x2apic.log")       # skylake-sp: base_cpi 1.00
        for bench in ("modelsmp.line_pingpong", "modelsmp.ipi_roundtrip"):
            r = figs[bench]
            self.assertLessEqual(abs(V.parts_mismatch(r)), V.PARTS_TOL, bench)
            self.assertGreater(abs(V.parts_mismatch(r, self.old_rule(r))), V.PARTS_TOL, bench)
        # the IPI round trip is mostly IPI waits, which the old rule left out
        parts = dict(V.model_parts(figs["modelsmp.ipi_roundtrip"]))
        self.assertGreater(parts["IPI waits"], 2 * 2000 * 0.9)

    def test_sentence(self):
        figs = self.load("modelsmp_skylake_x2apic.log")
        exp = experiment([FASTER])
        ra, rb = dict(figs["modelsmp.line_pingpong"]), dict(figs["modelsmp.ipi_roundtrip"])
        groups = [(("b.x", "op", 2), {exp.cost[0]: ra, exp.cost[1]: rb})]
        text = " ".join(V.model_sentences(exp, groups, "skylake-sp"))
        self.assertIn("IPI waits", text)
        self.assertNotIn("do not add up", text)
        rb["median"] *= 1.02
        self.assertIn("do not add up", " ".join(V.model_sentences(exp, groups, "skylake-sp")))
        for r in (ra, rb):
            r["extra"] = {}
        self.assertIn("No breakdown", " ".join(V.model_sentences(exp, groups, "skylake-sp")))


if __name__ == "__main__":
    unittest.main()
