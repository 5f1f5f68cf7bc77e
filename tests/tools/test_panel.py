"""tools/baremm_lib/panel.py: parsing both sides, core-cycle conversion, A/B effects and
their intervals, the bands' summary."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401
from baremm_lib import panel as P  # noqa: E402

NATIVE = """PANEL-INFO binary=./panel rows=3 rounds=6 mode=native cpus=2
PANEL-CLOCK when=before core_per_tsc=1.25000 tsc_ghz=2.30000
PANEL-CLOCK when=after core_per_tsc=1.30000 tsc_ghz=2.30000
PANEL name=alloc_cached group=mm cpus=1 ops=1 unit=tsc values=100,101,100,150,100.5,100 desc="a"
PANEL name=alloc_lookup group=mm cpus=1 ops=1 unit=tsc values=104,105,104,160,104.5,104 desc="b"
PANEL name=noisy group=micro cpus=1 ops=64 unit=tsc values=10,20,30,40,50,60 desc="c"
PANEL-END
"""


def model_lines(bench, cycles, events="", ghz=None):
    """The plugin's lines of one figure: a run line per value, then the totals."""
    key = "bench=%s variant=default cpus=1 case=- metric=op" % bench
    runs = "".join("BAREMM-MODEL-RUN %s run=%d ops=1 cycles=%s part.insns=%s\n" % (key, i, c, c)
                   for i, c in enumerate(cycles))
    return runs + "BAREMM-MODEL-FIGURE %s unit=model_cycles runs=%d ops=%d%s\n" % (
        key, len(cycles), len(cycles), events)


MODEL = ("BAREMM-MODEL profile=test ghz=2.50\n"
         + model_lines("panel.alloc_cached", ["1300.00", "1290.00", "1300.00", "1310.00", "1300.00"],
                       " ev.model_l1_hit=10")
         + model_lines("panel.alloc_lookup", ["1313.00"] * 5)
         + model_lines("other.x", ["1.00"]))


class ParseTest(unittest.TestCase):
    def setUp(self):
        rows, clocks = P.parse_panel(NATIVE)
        self.rows, self.clocks = rows, clocks
        self.native = P.native_figures(rows, clocks)

    def test_rows_and_clock(self):
        self.assertEqual(list(self.rows), ["alloc_cached", "alloc_lookup", "noisy"])
        self.assertEqual(self.rows["alloc_lookup"]["values"][3], 160.0)
        # the faster clock reading wins (a neighbour only slows the imul chain)
        self.assertAlmostEqual(self.native["alloc_cached"]["min"], 130.0)

    def test_a_lone_fast_clock_reading_is_not_the_conversion(self):
        cl = lambda *v: [{"core_per_tsc": x} for x in v]
        self.assertEqual(P.core_per_tsc(cl(1.33, 1.341, 1.496, 1.337)), 1.341)
        self.assertEqual(P.core_per_tsc(cl(1.30, 1.40)), 1.40)      # two: the faster
        self.assertEqual(P.core_per_tsc(cl(1.4)), 1.4)
        self.assertEqual(P.core_per_tsc(cl(1.0, 1.2, 1.4)), 1.2)    # none agree: the middle

    def test_saved_name_keeps_the_cores_apart(self):
        emr, genoa = "GenuineIntel 6 207 2", "AuthenticAMD 25 17 1"
        self.assertEqual(P.saved_name("host", "", emr), "host-intel-6-cf")
        self.assertEqual(P.saved_name("host", "causal=off", genoa), "host-amd-19-11")
        self.assertEqual(P.saved_name("host", "core=ooo", genoa), "host-amd-19-11-ooo")
        self.assertEqual(P.saved_name("zen3", "causal=off,core=ooo", genoa), "zen3-ooo")
        self.assertEqual(P.saved_name("zen3", "core=inorder", emr), "zen3")
        self.assertEqual(P.saved_name("host", "", "garbage"), "host-unknown")

    def test_panel_names_list_each_host_cpu_under_both_cores(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "docs", "data"))
            for n in ("host-intel-6-cf", "host-intel-6-cf-ooo", "host-amd-19-11-ooo", "zen3"):
                open(os.path.join(d, "docs", "data", "native-panel-%s.json" % n), "w").close()
            names = P.panel_names(d)
        self.assertEqual([n for n, _, _ in names], [
            "host-amd-19-11", "host-amd-19-11-ooo", "host-intel-6-cf", "host-intel-6-cf-ooo",
            "skylake-sp", "skylake-sp-ooo", "zen3", "zen3-ooo"])
        self.assertEqual({p for _, p, _ in names}, {"host", "skylake-sp", "zen3"})
        self.assertEqual([o for _, _, o in names], [False, True] * 4)

    def test_trust(self):
        self.assertTrue(self.native["alloc_cached"]["trusted"])
        self.assertFalse(self.native["noisy"]["trusted"])

    def test_model(self):
        m = P.parse_model(MODEL)
        self.assertEqual(set(m), {"alloc_cached", "alloc_lookup"})
        self.assertEqual(m["alloc_cached"]["median"], 1300.0)
        self.assertEqual((m["alloc_cached"]["min"], m["alloc_cached"]["max"]), (1290.0, 1310.0))
        self.assertEqual(m["alloc_cached"]["runs"], 5)
        # 10 events over the 5 runs' 5 ops
        self.assertEqual(m["alloc_cached"]["events"]["model_l1_hit"], 2.0)
        # the median run's parts, per op (the fixture's runs are all instructions)
        self.assertEqual(m["alloc_cached"]["parts"], {"insns": 1300.0})
        self.assertEqual(m["alloc_lookup"]["parts"], {"insns": 1313.0})

    def test_parts_summary_names_the_largest_parts(self):
        self.assertEqual(P.parts_summary({"model_parts": {"insns": 58.0, "cache": 31.0, "tlb": 11.0,
                                                          "wait": 0.0}}),
                         "insns 58 %, cache 31 %")
        self.assertEqual(P.parts_summary({"model_parts": {"branch": 1.0}}), "branch 100 %")
        self.assertEqual(P.parts_summary({"model_parts": {"cache": 999.0, "penalties": 1.0}}),
                         "cache 100 %")
        self.assertEqual(P.parts_summary({"model_parts": {}}), "-")
        self.assertEqual(P.parts_summary({}), "-")

    def test_model_runs_must_be_complete(self):
        with self.assertRaises(P.PanelError):       # a run line lost
            P.parse_model(MODEL.replace("run=3 ", "run=4 ", 1))
        with self.assertRaises(P.PanelError):       # a figure's runs without their totals
            P.parse_model(MODEL.rsplit("BAREMM-MODEL-FIGURE", 1)[0])

    def test_join_pairs_summary(self):
        m = P.parse_model(MODEL)
        rows = P.join(self.native, {}, m)
        by = {r["name"]: r for r in rows}
        self.assertAlmostEqual(by["alloc_cached"]["ratio"], 10.0)
        self.assertIsNone(by["noisy"]["ratio"])
        self.assertEqual(by["alloc_cached"]["model_parts"], {"insns": 1300.0})
        self.assertEqual(by["noisy"]["model_parts"], {})
        pr = P.pairs(self.native, rows)
        self.assertEqual(len(pr), 1)
        e = pr[0]
        self.assertAlmostEqual(e["effect"], 0.04, places=2)
        self.assertAlmostEqual(e["model_effect"], 0.01)
        self.assertTrue(e["excludes_zero"])
        self.assertTrue(e["sign_ok"])
        self.assertAlmostEqual(e["diff_pp"], -3.0, places=1)
        s = P.summary(rows)
        self.assertEqual(s["rows"], 2)
        self.assertEqual(s["in_tight"], 0)

    def test_wrong_sign(self):
        m = P.parse_model(MODEL.replace("cycles=1313.00", "cycles=1200.00"))
        rows = P.join(self.native, {}, m)
        e = P.pairs(self.native, rows)[0]
        self.assertFalse(e["sign_ok"])


GUEST = NATIVE.replace("mode=native", "mode=guest").replace("unit=tsc", "unit=insns")


def host_profile_text(drop=()):
    """A complete host profile (the committed skylake-sp's values), without @drop."""
    with open(os.path.join(P.ROOT, "model", "profiles", "skylake-sp.cfg")) as f:
        lines = f.read().replace("name = skylake-sp", "name = host").splitlines(True)
    return "".join(l for l in lines if l.split("=")[0].strip() not in drop)


class RemodelTest(unittest.TestCase):
    """remodel: the model side booted again, the recorded native side kept, refused when
    the native side's sources changed since the recording."""

    def setUp(self):
        rows, clocks = P.parse_panel(NATIVE)
        native = P.native_figures(rows, clocks)
        recorded = P.join(native, P.parse_panel(GUEST)[0],
                          P.parse_model(MODEL.replace("cycles=1313.00", "cycles=1200.00")
                                        + model_lines("panel.noisy", ["50.00"] * 5)))
        self.old = {"schema": P.SCHEMA, "profile": "host", "rounds": 6, "model_rounds": 5,
                    "host": {"cpu": "x", "core_ghz": 3.0, "tsc_ghz": 2.3, "core_per_tsc": 1.3},
                    "kernel": os.path.basename(P.kernel_image()),
                    "git": {"rev": "a" * 40, "dirty": False}, "rows": recorded,
                    "pairs": P.pairs(native, recorded), "summary": P.summary(recorded),
                    "boot": {"log": "old"}, "profile_text": host_profile_text(), "model_args": "",
                    "inputs_sha": "old", "cpu_id": "GenuineIntel 6 207 2"}
        self.saved = {k: getattr(P, k) for k in ("native_sha_at", "native_sha", "run_model",
                                                 "build", "build_plugin", "inputs_sha")}
        P.native_sha_at = lambda rev: "same"
        P.native_sha = lambda root=P.ROOT: "same"
        P.build = lambda out: ("panel", "panel_vm")
        P.build_plugin = lambda: None
        P.inputs_sha = lambda *a: "new"
        self.booted = []

        def run_model(out, panel, vm, profile, rounds, only=None, model_args=None):
            with open(profile) as f:
                self.booted.append((f.read(), rounds, model_args))
            return GUEST, MODEL + model_lines("panel.noisy", ["50.00"] * 5), {"log": "new"}
        P.run_model = run_model

    def tearDown(self):
        for k, v in self.saved.items():
            setattr(P, k, v)

    def remodel(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "native-panel-host-intel-6-cf.json")
            P.runner.write_json(path, self.old)
            out = os.path.join(d, "out")
            data = P.remodel(path, out, save=os.path.join(d, "saved.json"))
            self.assertTrue(os.path.isfile(os.path.join(d, "saved.json")))
            return data

    def test_model_side_new_native_side_kept(self):
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            data = self.remodel()
        self.assertEqual(self.booted, [(self.old["profile_text"], 5, "")])   # the recorded one
        by = {r["name"]: r for r in data["rows"]}
        old = {r["name"]: r for r in self.old["rows"]}
        self.assertEqual(by["alloc_lookup"]["model"], 1313.0)           # booted again
        self.assertEqual(old["alloc_lookup"]["model"], 1200.0)
        for k in ("native_min", "native_median", "native_trusted"):
            self.assertEqual(by["alloc_lookup"][k], old["alloc_lookup"][k])
        pr, = data["pairs"]
        self.assertEqual(pr["effect"], self.old["pairs"][0]["effect"])   # native, kept
        self.assertAlmostEqual(pr["model_effect"], 0.01)                # model, anew
        self.assertTrue(pr["sign_ok"])
        self.assertFalse(self.old["pairs"][0]["sign_ok"])
        self.assertEqual(data["remodelled"]["native_git"], "a" * 40)
        self.assertEqual((data["inputs_sha"], data["cpu_id"]), ("new", self.old["cpu_id"]))

    def test_changed_native_sources_are_refused(self):
        P.native_sha = lambda root=P.ROOT: "other"
        with self.assertRaises(P.PanelError) as e:
            self.remodel()
        self.assertIn("measure the panel anew on its CPU", str(e.exception))
        self.assertEqual(self.booted, [])

    def test_a_core_key_newer_than_the_recording_comes_from_the_core_table(self):
        import contextlib
        import io
        self.old["profile_text"] = host_profile_text(drop=("taken_per_cycle",))
        with contextlib.redirect_stdout(io.StringIO()):
            data = self.remodel()
        text, = [b[0] for b in self.booted]
        self.assertTrue(text.startswith(self.old["profile_text"].rstrip("\n")))
        last = text.splitlines()[-1]
        self.assertRegex(last, r"^taken_per_cycle\s+= 1\s+# LOOKED UP when the model side was "
                         r"booted again \(Emerald Rapids")
        self.assertEqual(data["profile_text"], text)     # what panel-check digests
        # a CPU the core table lacks, or a missing key that is no core key: refused
        with self.assertRaises(P.PanelError) as e:
            P.complete_host_profile(self.old["profile_text"], "GenuineIntel 6 1 1")
        self.assertIn("calibrate and record the panel anew", str(e.exception))
        with self.assertRaises(P.PanelError):
            P.complete_host_profile(host_profile_text(drop=("mem_lat", "taken_per_cycle")),
                                    "GenuineIntel 6 207 2")
        # a masked CPUID (6 / 0xA7) is completed as the CPU its calibration named
        masked = ("# Published values: CPUID reports family 0x6 model 0xa7; identified by "
                  "--cpuid-as as family 0x6 model 0xad; CPUID names ...\n"
                  + host_profile_text(drop=("taken_per_cycle",)))
        with self.assertRaises(P.PanelError):
            P.complete_host_profile(host_profile_text(drop=("taken_per_cycle",)),
                                    "GenuineIntel 6 167 1")
        self.assertRegex(P.complete_host_profile(masked, "GenuineIntel 6 167 1").splitlines()[-1],
                         r"^taken_per_cycle\s+= 1\s+# LOOKED UP .*\(Granite Rapids")
        # a complete profile is left as it is
        full = host_profile_text()
        self.assertEqual(P.complete_host_profile(full, "GenuineIntel 6 1 1"), full)

    def test_fill_prices_newer_than_the_recording_are_its_rep_fill_line(self):
        # a calibration from before the prices by level and kind: every fill at its
        # rep_fill_line, so the remodelled figures stay what that calibration gave
        old = host_profile_text(drop=P.calibrate.REP_FILL_KEYS)
        fill = P.calibrate.read_profile_text(old)["rep_fill_line"][0]
        text = P.complete_host_profile(old, "GenuineIntel 6 1 1")     # no table lookup needed
        prof = P.calibrate.read_profile_text(text)
        for k in P.calibrate.REP_FILL_KEYS:
            self.assertEqual(prof[k][0], fill, k)
            self.assertIn("DERIVED when the model side was booted again: rep_fill_line's",
                          prof[k][1])
        self.assertEqual(set(prof), set(P.calibrate.KEYS))
        # with rep_fill_line itself newer, the fills follow the table's value
        older = host_profile_text(drop=("rep_fill_line",) + P.calibrate.REP_FILL_KEYS)
        prof = P.calibrate.read_profile_text(P.complete_host_profile(older, "GenuineIntel 6 207 2"))
        self.assertTrue(prof["rep_fill_line"][1].startswith("LOOKED UP"))
        for k in P.calibrate.REP_FILL_KEYS:
            self.assertEqual(prof[k][0], prof["rep_fill_line"][0], k)

    def test_nested_paging_newer_than_the_recording_comes_from_its_page_size_probe(self):
        header = ("# Page-size probe: 16 L1-resident lines one per 2 MiB of the THP arena cost "
                  "%s cycles, one per 4 KiB 5.7: ...\n")
        walk = ("walk_overhead = 6 # measured: ... = a walk of 37.4 cycles; minus the model's "
                "four table loads at that size (3 x l1d_lat + l2_lat = 31). THIS HOST IS A VM\n")
        cpuid = "cpuid = 22770 # measured: ... under hypervisor 'KVMKVMKVM' every cpuid exits\n"
        base = host_profile_text(drop=("nested_page_kib", "walk_overhead", "cpuid"))
        prof = P.calibrate.read_profile_text(P.complete_host_profile(
            header % "13.7" + base + walk + cpuid, "GenuineIntel 6 1 1"))
        self.assertEqual(prof["nested_page_kib"][0], "4")
        self.assertIn("DERIVED", prof["nested_page_kib"][1])
        # the walk less the table loads and the nested leaf from the L2 (skylake-sp's 13)
        self.assertEqual(prof["walk_overhead"][0], "0")
        self.assertIn("nested leaf entry's (13)", prof["walk_overhead"][1])
        self.assertIn("clamped", prof["walk_overhead"][1])
        self.assertEqual(set(prof), set(P.calibrate.KEYS))
        # huge pages keep 2 MiB entries under a hypervisor: 2 MiB, the leaf an L1 hit (4)
        prof = P.calibrate.read_profile_text(P.complete_host_profile(
            header % "5.8" + base + walk + cpuid, "GenuineIntel 6 1 1"))
        self.assertEqual(prof["nested_page_kib"][0], "2048")
        self.assertEqual(prof["walk_overhead"][0], "2")     # 37.4 - 31 - 4
        # no probe quoted: nothing nested, the walk as recorded
        prof = P.calibrate.read_profile_text(P.complete_host_profile(
            base + walk + cpuid, "GenuineIntel 6 1 1"))
        self.assertEqual(prof["nested_page_kib"][0], "0")
        self.assertEqual(prof["walk_overhead"][0], "6")
        # a probe but no walk figure to take the leaf from: an error, not a guess
        with self.assertRaises(P.PanelError):
            P.complete_host_profile(header % "13.7" + host_profile_text(drop=("nested_page_kib",)),
                                    "GenuineIntel 6 1 1")

    def test_a_recording_with_the_per_line_touched_rep_price_is_rewritten_from_its_figures(self):
        legacy = (
            "rep_line = 1   # measured: rep movsq and rep stosq of 4 KiB within L1, best of 20 "
            "per round: min 109.3 median 111.7 max 181.3 cycles and min 110.0 median 113.7 max "
            "186.0 cycles = 0.85 and 1.72 per line touched (64 source + 64 destination lines "
            "for the copy, 64 for the clear, as the model counts); the model has one price for "
            "both: their sum over the 192 lines, 1.14\n"
            "rep_mem_line = 5   # measured: rep movsq of 64 KiB from clflushed source lines, "
            "best of 8 per round: min 7178.5 median 7994.7 max 10406.5 cycles; minus 2048 x the "
            "L1 per-line price, over 1024 source lines = 4.7\n")
        text = host_profile_text(drop=("rep_store_line", "rep_fill_line", "rep_mem_line")) + legacy
        out = P.complete_host_profile(text, "GenuineIntel 6 207 2")
        prof = P.calibrate.read_profile_text(out)
        self.assertNotIn("rep_line", prof)
        self.assertEqual(set(prof), set(P.calibrate.KEYS))
        # (128 x 0.85 + 64 x 1.72) / 128 stored lines
        self.assertEqual(prof["rep_store_line"][0], "1.71")
        self.assertIn("DERIVED when the model side was booted again", prof["rep_store_line"][1])
        self.assertEqual(prof["rep_fill_line"][0], "1")          # the core table's
        self.assertIn("LOOKED UP when the model side", prof["rep_fill_line"][1])
        # (7178.5 - 1024 x max(1.71, 1)) / 1024
        self.assertEqual(prof["rep_mem_line"][0], "5")
        self.assertIn("recorded: measured: rep movsq of 64 KiB", prof["rep_mem_line"][1])
        # the older wording (a copy's figure, then the clear's) reads the same way
        older = legacy.replace("= 0.85 and 1.72 per line touched (64 source + 64 destination "
                               "lines for the copy, 64 for the clear, as the model counts)",
                               "= 0.85 per line touched (64 source + 64 destination lines, as "
                               "the model counts); rep stosb 4 KiB: 1.72 per line")
        self.assertNotEqual(older, legacy)
        prof = P.calibrate.read_profile_text(P.complete_host_profile(
            host_profile_text(drop=("rep_store_line", "rep_fill_line", "rep_mem_line")) + older,
            "GenuineIntel 6 207 2"))
        self.assertEqual(prof["rep_store_line"][0], "1.71")
        # a rep_line comment that quotes no figure cannot be rewritten
        with self.assertRaises(P.PanelError):
            P.complete_host_profile(
                host_profile_text(drop=("rep_store_line", "rep_fill_line", "rep_mem_line"))
                + "rep_line = 2  # a guess\nrep_mem_line = 5  # a guess\n", "GenuineIntel 6 207 2")

    def test_dirty_recording_is_refused(self):
        self.old["git"]["dirty"] = True
        with self.assertRaises(P.PanelError):
            self.remodel()


class GuestDeterminismTest(unittest.TestCase):
    """The model side's guest takes neither the host's randomness nor its clock: the
    boot has norandmaps, a seeded RDRAND and a virtual RTC, and they are inputs of the
    recorded panel (changing them makes it stale)."""

    def test_guest_boot_is_seeded_and_in_the_digest(self):
        saved = (P.make_initrd, P.kernel_image, P.runner.run_qemu, P.runner.model_plugin_args)
        seen = {}

        def run_qemu(argv, log, timeout):
            seen["argv"] = argv
            with open(log, "w") as f:
                f.write("PANEL-END\n")
            with open(log + ".model", "w") as f:
                f.write("")
            return {"duration_s": 0}
        try:
            P.make_initrd = lambda out, panel, vm: os.path.join(out, "initrd")
            P.kernel_image = lambda: "/boot/vmlinuz-x"
            P.runner.run_qemu = run_qemu
            P.runner.model_plugin_args = lambda profile, args=None: ["-plugin", "p.so"]
            with tempfile.TemporaryDirectory() as d:
                P.run_model(d, "panel", "panel_vm", "host.cfg", 3)
        finally:
            P.make_initrd, P.kernel_image, P.runner.run_qemu, P.runner.model_plugin_args = saved
        argv = " ".join(seen["argv"])
        self.assertIn("-seed 1", argv)
        self.assertIn("clock=vm", argv)
        self.assertIn("norandmaps", seen["argv"][seen["argv"].index("-append") + 1])
        a = P.inputs_sha("x = 1\n", "vmlinuz-x")
        saved_q = list(P.GUEST_QEMU)
        try:
            P.GUEST_QEMU[:] = [x for x in P.GUEST_QEMU if x not in ("-seed", "1")]
            self.assertNotEqual(P.inputs_sha("x = 1\n", "vmlinuz-x"), a)
        finally:
            P.GUEST_QEMU[:] = saved_q
        self.assertEqual(P.inputs_sha("x = 1\n", "vmlinuz-x"), a)


class StatsTest(unittest.TestCase):
    def test_median_ci_contains_median(self):
        v = list(range(1, 32))
        lo, hi = P.median_ci(v)
        self.assertLess(lo, 16)
        self.assertGreater(hi, 16)
        self.assertGreaterEqual(lo, 1)

    def test_quantile(self):
        self.assertEqual(P.quantile([1, 2, 3, 4, 5], 0.5), 3)
        self.assertEqual(P.quantile([1, 2, 3, 4, 5], 0.75), 4)


if __name__ == "__main__":
    unittest.main()


class CheckTest(unittest.TestCase):
    """panel-check's per-row decisions (tools/baremm_lib/panelcheck.py)."""

    def rec(self, model, ratio):
        from baremm_lib import panelcheck as C
        return {"cpu_id": "X 6 1 1", "rows": [{"name": n, "model": model, "ratio": ratio}
                                              for n in C.ROWS]}

    def native(self, mn, trusted=True):
        from baremm_lib import panelcheck as C
        return {n: {"min": mn, "trusted": trusted, "repeats": 5, "values": [1] * 15}
                for n in C.ROWS}

    def statuses(self, out, suffix):
        return {s for n, s, _ in out if n.endswith(suffix)}

    def test_recorded_ratio_repeats(self):
        from baremm_lib import panelcheck as C
        out = C.checks(self.rec(1000.0, 10.0), self.native(105.0), "X 6 1 1")
        self.assertEqual(self.statuses(out, "ratio_recorded"), {"pass"})
        self.assertEqual(self.statuses(out, "band"), {"todo"})    # 9.5 is far outside

    def test_ratio_moved_fails(self):
        from baremm_lib import panelcheck as C
        out = C.checks(self.rec(1000.0, 10.0), self.native(60.0), "X 6 1 1")
        self.assertEqual(self.statuses(out, "ratio_recorded"), {"fail"})

    def test_untrusted_recording_is_no_reference(self):
        # a recorded minimum that did not repeat: the ratio is not held against today's,
        # the band still is
        from baremm_lib import panelcheck as C
        rec = self.rec(1000.0, 10.0)
        for r in rec["rows"]:
            r.update(native_trusted=False, native_repeats=2)
        rec["rounds"] = 61
        out = C.checks(rec, self.native(60.0), "X 6 1 1")
        self.assertEqual(self.statuses(out, "ratio_recorded"), {"skip"})
        self.assertTrue(all("did not repeat" in why for n, _, why in out
                            if n.endswith("ratio_recorded")))
        self.assertEqual(self.statuses(out, "band"), {"todo"})

    def with_probe(self, rec, native, recorded, now):
        from baremm_lib import panelcheck as C
        rec["rows"].append({"name": C.PROBE, "model": 1.0, "ratio": 1.0, "native_min": recorded})
        native[C.PROBE] = {"min": now, "trusted": False, "repeats": 1, "values": [now]}
        return rec, native

    def test_busy_core_skips_instead_of_failing(self):
        from baremm_lib import panelcheck as C
        rec, nat = self.with_probe(self.rec(1000.0, 10.0), self.native(160.0), 1.0, 1.6)
        out = C.checks(rec, nat, "X 6 1 1")
        self.assertEqual({s for _, s, _ in out}, {"skip"})
        self.assertTrue(all("busier" in why for _, _, why in out))
        # a recording made on a busy core is no reference for an idle one either
        rec, nat = self.with_probe(self.rec(1000.0, 10.0), self.native(60.0), 1.6, 1.0)
        out = C.checks(rec, nat, "X 6 1 1")
        self.assertEqual({s for _, s, _ in out}, {"skip"})
        self.assertTrue(all("idler" in why for _, _, why in out))
        # the same slow rows on a core as fast as at the recording fail
        rec, nat = self.with_probe(self.rec(1000.0, 10.0), self.native(160.0), 1.0, 1.1)
        out = C.checks(rec, nat, "X 6 1 1")
        self.assertEqual(self.statuses(out, "ratio_recorded"), {"fail"})

    def test_ooo_core_checked_under_its_own_names_and_reason(self):
        from baremm_lib import panelcheck as C
        out = C.checks(self.rec(1000.0, 10.0), self.native(105.0), "X 6 1 1", "panel-ooo",
                       C.TODO_REASON_OOO)
        self.assertTrue(all(n.startswith("panel-ooo.") for n, _, _ in out))
        self.assertTrue(all(C.TODO_REASON_OOO in why for _, s, why in out if s == "todo"))
        self.assertEqual([a for a, _, _ in C.CORES], ["", "core=ooo"])

    def test_cpu_without_a_host_panel_skips_both_cores(self):
        import contextlib
        import io
        from baremm_lib import panelcheck as C
        saved = P.ROOT
        with tempfile.TemporaryDirectory() as d:
            P.ROOT = d
            try:
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    rc = C.main(type("A", (), {"model": None, "rounds": 1})())
            finally:
                P.ROOT = saved
        self.assertEqual(rc, 0)
        text = buf.getvalue()
        self.assertIn("ok 1 panel.recorded # SKIP", text)
        self.assertIn("ok 2 panel-ooo.recorded # SKIP", text)
        self.assertIn("not recorded on this CPU", text)
        self.assertIn("0 passed, 0 failed, 2 skipped", text)
        # a published profile with no panel is a failure, not a skip
        with tempfile.TemporaryDirectory() as d:
            P.ROOT = d
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    rc = C.main(type("A", (), {"model": "zen3", "rounds": 1})())
            finally:
                P.ROOT = saved
        self.assertNotEqual(rc, 0)

    def test_stale_panel_fails_unless_its_natives_are_of_older_sources(self):
        """A recorded panel whose inputs changed fails (a remodel refreshes it from any
        CPU) unless its natives were measured from other native sources: only its CPU can
        measure them again, so that is a skip with the command, not a failure."""
        import contextlib
        import io
        import json
        from baremm_lib import panelcheck as C
        saved = (P.ROOT, P.cpu_id, P.native_sha, P.inputs_sha, P.recorded_profile_text)
        out = {}
        try:
            with tempfile.TemporaryDirectory() as d:
                P.ROOT = d
                P.cpu_id = lambda: "GenuineIntel 6 207 2"
                P.native_sha = lambda root=None: "now"
                P.inputs_sha = lambda *a: "fresh"
                P.recorded_profile_text = lambda rec: ""
                os.makedirs(os.path.join(d, "docs", "data"))
                for natives in ("now", "older"):
                    for suffix in ("", "-ooo"):
                        with open(os.path.join(d, "docs", "data",
                                               "native-panel-host-intel-6-cf%s.json" % suffix), "w") as f:
                            json.dump({"inputs_sha": "stale", "native_sha": natives,
                                       "profile_text": "x = 1\n", "rows": []}, f)
                    buf = io.StringIO()
                    with contextlib.redirect_stdout(buf):
                        rc = C.main(type("A", (), {"model": None, "rounds": 1})())
                    out[natives] = (rc, buf.getvalue())
        finally:
            P.ROOT, P.cpu_id, P.native_sha, P.inputs_sha, P.recorded_profile_text = saved
        rc, text = out["now"]
        self.assertNotEqual(rc, 0)
        self.assertIn("not ok 1 panel.recorded", text)
        self.assertIn("--remodel", text)
        rc, text = out["older"]
        self.assertEqual(rc, 0)
        self.assertIn("ok 1 panel.recorded # SKIP", text)
        self.assertIn("older native sources (older, now now)", text)
        self.assertIn("0 passed, 0 failed, 2 skipped", text)

    def test_in_band_passes(self):
        from baremm_lib import panelcheck as C
        out = C.checks(self.rec(100.0, 1.0), self.native(100.0), "X 6 1 1")
        self.assertEqual(self.statuses(out, "band"), {"pass"})

    def test_noisy_and_other_cpu_skip(self):
        from baremm_lib import panelcheck as C
        out = C.checks(self.rec(100.0, 1.0), self.native(100.0, trusted=False), "X 6 1 1")
        self.assertEqual({s for _, s, _ in out}, {"skip"})
        out = C.checks(self.rec(100.0, 1.0), self.native(100.0), "Y 25 1 1")
        self.assertEqual([s for _, s, _ in out], ["skip"])
