import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import data  # noqa: E402  (also puts tools/ on sys.path)
from baremm_lib import modelcheck, runner


def load():
    """The recorded figures, which were saved without their CPU count: model-check's first
    boot runs on one CPU."""
    with open(data("model_kat_skylake.json")) as f:
        return [dict(r, cpus=r.get("cpus", 1)) for r in json.load(f)]


PROFILE = modelcheck.load_profile(os.path.join(runner.ROOT, "model", "profiles",
                                               "skylake-sp.cfg"))


def find(results, bench, case):
    return next(r for r in results if r["bench"] == bench and r["metric"].endswith(":%d]" % case))


def load_nested():
    """The pointer chase of skylake-sp with nested_page_kib = 4 (model-check's nested boot);
    events that were zero are left out of the fixture."""
    with open(data("model_kat_skylake_nested.json")) as f:
        res = [dict(r, cpus=1) for r in json.load(f)]
    for r in res:
        for k in ("model_dtlb_miss", "model_stlb_miss", "model_walk", "model_walk_cycles"):
            r["events"].setdefault(k, 0.0)
    return res


NESTED = dict(PROFILE, nested_page_kib=4.0)


class NestedCheckTest(unittest.TestCase):
    """Nested paging: huge pages held as 4 KiB entries, walks with the nested leaf load."""

    def test_recorded_run_passes(self):
        self.assertEqual(modelcheck.check_nested(load_nested(), load(), NESTED), [])

    def test_caches_indexed_by_guest_frames_fail(self):
        # what the model gave before it placed guest frames on host frames: the 32 MiB
        # chase fits the LLC's colours and never misses it
        res = load_nested()
        for r in res:
            r["events"]["model_llc_miss"] = 0.0
        fails = modelcheck.check_nested(res, load(), NESTED)
        self.assertTrue(any("misses the llc on 0.000" in f for f in fails), fails)
        # the expectation itself: frames at random over a cache's colours
        self.assertAlmostEqual(modelcheck.colour_overflow(8192, 39424, 11), 0.311, places=3)
        self.assertLess(modelcheck.colour_overflow(128, 1024, 16), 0.01)
        self.assertAlmostEqual(modelcheck.colour_overflow(512, 2048, 16), 0.53, places=2)
        # a cache of one colour: every frame on it
        self.assertEqual(modelcheck.colour_overflow(10, 4, 4), 1.0)
        self.assertEqual(modelcheck.colour_overflow(3, 4, 4), 0.0)

    def test_huge_entries_under_nested_paging_fail(self):
        # what the model gave before it had nested paging: the plain chase's events
        res = load_nested()
        for r in res:
            r["events"].update(model_dtlb_miss=0.0, model_walk=0.0, model_walk_cycles=0.0)
        fails = modelcheck.check_nested(res, load(), NESTED)
        self.assertTrue(any("misses the L1 dTLB on 0.000" in f for f in fails), fails)
        self.assertTrue(any("walks on 0.000" in f for f in fails), fails)

    def test_walks_without_their_nested_leaf_load_fail(self):
        res = load_nested()
        r = find(res, "model.pointer_chase", 32 << 20)
        r["events"]["model_walk_cycles"] = r["events"]["model_walk"] * (
            PROFILE["walk_overhead"] + 3 * PROFILE["l1d_lat"])
        fails = modelcheck.check_nested(res, load(), NESTED)
        self.assertTrue(any("less than walk_overhead" in f for f in fails), fails)
        # and the clock must hold what the events say
        fails = [f for f in fails if "33554432-byte chase (llc)" in f]
        self.assertTrue(fails)

    def test_the_plain_chase_missing_the_dtlb_fails(self):
        plain = load()
        find(plain, "model.pointer_chase", 512 << 10)["events"]["model_dtlb_miss"] = 0.5
        fails = modelcheck.check_nested(load_nested(), plain, NESTED)
        self.assertTrue(any("without nested paging" in f for f in fails), fails)

    def test_the_profile_text_gets_the_nested_page_size(self):
        with open(os.path.join(runner.ROOT, "model", "profiles", "skylake-sp.cfg")) as f:
            text = modelcheck.nested_profile_text(f.read())
        self.assertRegex(text, r"(?m)^nested_page_kib = 4 ")
        with self.assertRaises(modelcheck.ProfileError):
            modelcheck.nested_profile_text("name = x\n")


class ModelCheckTest(unittest.TestCase):
    """The known-answer checks on figures of a real skylake-sp model run."""

    def test_recorded_run_passes(self):
        self.assertEqual(modelcheck.check(load(), PROFILE), [])

    def test_moved_l2_plateau_fails(self):
        res = load()
        for case in (65536, 262144, 524288):
            find(res, "model.pointer_chase", case)["median"] *= 1.10
        fails = modelcheck.check(res, PROFILE)
        self.assertTrue(any("no l2 plateau" in f for f in fails), fails)

    def test_other_profile_latency_fails(self):
        prof = dict(PROFILE, llc_lat=PROFILE["llc_lat"] * 1.2)
        fails = modelcheck.check(load(), prof)
        self.assertTrue(any("(llc)" in f for f in fails), fails)

    def test_boundary_sizes_are_not_plateaus(self):
        self.assertIsNone(modelcheck.chase_level(1 << 20, PROFILE))     # = L2 size
        self.assertEqual(modelcheck.chase_level(32 << 10, PROFILE), "l1")
        self.assertEqual(modelcheck.chase_level(4 << 20, PROFILE), "llc")
        self.assertEqual(modelcheck.chase_level(256 << 20, PROFILE), "mem")

    def test_invlpg_without_walk_fails(self):
        res = load()
        find(res, "model.invlpg_walk", 1)["events"]["model_walk"] = 0.0
        fails = modelcheck.check(res, PROFILE)
        self.assertTrue(any("INVLPG then a load" in f for f in fails), fails)

    def test_cr3_reload_dropping_global_fails(self):
        res = load()
        find(res, "model.cr3_global", 1)["events"]["model_walk"] = 1.0
        self.assertTrue(any("global page" in f for f in modelcheck.check(res, PROFILE)))

    def test_tlb_step_missing_fails(self):
        res = load()
        for r in res:
            if r["bench"] == "model.tlb_reach":
                r["events"]["model_walk"] = 0.0
        fails = modelcheck.check(res, PROFILE)
        self.assertTrue(any("walks per load" in f for f in fails), fails)

    def test_missing_benchmarks_fail(self):
        fails = modelcheck.check([], PROFILE)
        self.assertEqual(len([f for f in fails if "no figure" in f]), 6)

    def test_profile_without_latency_is_refused(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
            f.write("name = x\nbase_cpi = 1\n")
        try:
            with self.assertRaises(modelcheck.ProfileError):
                modelcheck.load_profile(f.name)
        finally:
            os.unlink(f.name)


def load_ooo():
    """Figures of a skylake-sp model run under the out-of-order core (core=ooo)."""
    with open(data("model_kat_skylake_ooo.json")) as f:
        return [dict(r, cpus=r.get("cpus", 1)) for r in json.load(f)]


class ModelCheckOooTest(unittest.TestCase):
    """The answers the out-of-order core must give, on figures of a real core=ooo run."""

    def test_recorded_run_passes(self):
        self.assertEqual(modelcheck.check(load_ooo(), PROFILE, "ooo"), [])

    def test_ooo_figures_fail_the_inorder_answers(self):
        # a dependent chase hides the loop's own instructions: not base_cpi x insns + lat
        fails = modelcheck.check(load_ooo(), PROFILE, "inorder")
        self.assertTrue(any("pointer_chase" in f for f in fails), fails)

    def test_chase_paying_its_instructions_fails(self):
        res = load_ooo()
        for case in (4096, 16384):
            r = find(res, "model.pointer_chase", case)
            r["median"] += PROFILE["base_cpi"] * r["instructions"]
        fails = modelcheck.check(res, PROFILE, "ooo")
        self.assertTrue(any("(l1)" in f for f in fails), fails)

    def test_walks_cheaper_than_tlb_hits_fail(self):
        res = load_ooo()
        for r in res:
            if r["bench"] == "model.tlb_reach" and r["metric"].endswith(":8192]"):
                r["median"] = 0.5
        fails = modelcheck.check(res, PROFILE, "ooo")
        self.assertTrue(any("cost no more than L1 dTLB hits" in f for f in fails), fails)

    def test_missing_walks_fail(self):
        res = load_ooo()
        find(res, "model.tlb_reach", 8192)["events"]["model_walk"] = 0.2
        fails = modelcheck.check(res, PROFILE, "ooo")
        self.assertTrue(any("walks per load, expected 1" in f for f in fails), fails)

    def test_branch_part_counts_in_the_sum(self):
        res = load_ooo()
        self.assertTrue(any("part.branch" in r["extra"] for r in res))
        for r in res:
            r["extra"].pop("part.branch", None)
        fails = modelcheck.check(res, PROFILE, "ooo")
        self.assertTrue(any(f.startswith("parts:") for f in fails), fails)
