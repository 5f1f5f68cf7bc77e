"""tools/baremm calibrate: derivation of a profile from recorded raw figures
(tests/tools/data/calibrate_raw.json, one real run of tools/native/calibrate on the
development host), the profile writer, the plugin's parser on the written file, and
--model host resolution."""
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, data  # noqa: E402
from baremm_lib import calibrate, cli, runner, status  # noqa: E402


def recorded():
    with open(data("calibrate_raw.json")) as f:
        return json.load(f)


def col(raw, series, key, idx):
    """Per-round cycles of one column, computed here independently of calibrate.py."""
    return [row[idx] * c for row, c in zip(raw[series][key], raw["core_per_tsc"])]


def per_round(raw, key):
    return [t * c for t, c in zip(raw[key], raw["core_per_tsc"])]


def per_round_core(raw, key):
    return [t * c for t, c in zip(raw["core"]["lat"][key], raw["core_per_tsc"])]


# The core keys every profile gains, as the shared contract lists them (not read from
# calibrate.py, so that a key dropped or renamed there fails here).
CORE_KEYS = ("core_width", "rob_size", "load_buffer", "store_buffer", "fill_buffers",
             "mispredict", "lat_imul", "lat_div", "lat_vec", "lat_fp", "lat_fpdiv",
             "prefetch_lines", "prefetch_streams", "page_walkers", "stores_per_cycle",
             "taken_per_cycle", "rep_fill_line", "loop_branches", "loop_taken_per_cycle",
             "btb_l0_entries", "btb_bubble")


_BIN = []


def native():
    """The measurer, built once (it carries the plugin's profile parser for --check)."""
    if not _BIN:
        _BIN.append(calibrate.build_native())
    return _BIN[0]


class DeriveTest(unittest.TestCase):
    def setUp(self):
        self.raw = recorded()
        self.entries, self.header, self.d = calibrate.derive(self.raw, self.raw["_topology"])
        self.v = {k: val for k, val, _ in self.entries}
        self.c = {k: com for k, _, com in self.entries}

    def test_every_key_of_the_parser_exactly_once(self):
        # the key table of model/profile.c, read from the source, not from calibrate.py,
        # plus the core keys (the parser gains them in a separate change)
        with open(os.path.join(ROOT, "model", "profile.c")) as f:
            src = f.read()
        import re
        table = src[src.index("static const struct pkey keys[]"):src.index("#define NKEYS")]
        keys = re.findall(r'\{ "(\w+)", offsetof', table) + re.findall(r"K\((\w+),", table)
        self.assertEqual(sorted(set(keys) | set(CORE_KEYS)), sorted(k for k, _, _ in self.entries))
        self.assertEqual(len(self.entries), len(set(k for k, _, _ in self.entries)))

    def test_core_keys_say_how_they_were_obtained(self):
        for k in CORE_KEYS:
            self.assertRegex(self.c[k], r"^(MEASURED: |LOOKED UP \()", k)
            # loop_branches 0 is "no loop rule"
            self.assertGreaterEqual(int(float(self.v[k])), 0 if k == "loop_branches" else 1, k)
        # the recorded host: the latencies are clean dependent chains, measured
        for k in ("core_width", "mispredict", "lat_imul", "lat_div", "lat_vec", "lat_fp",
                  "lat_fpdiv"):
            self.assertTrue(self.c[k].startswith("MEASURED: "), k)
        for k in ("prefetch_lines", "prefetch_streams", "page_walkers", "stores_per_cycle"):
            self.assertTrue(self.c[k].startswith("LOOKED UP (Emerald Rapids"), k)
        # the mispredict loop's whole cost minus its branch's resolution (the load and
        # the test), which the core model adds from the branch's inputs
        br = self.raw["branch"]
        cyc = lambda ticks: [t * c for t, c in zip(ticks, self.raw["core_per_tsc"])]
        total = (min(cyc(br["random"])) - min(cyc(br["predictable"]))) / 0.5
        self.assertEqual(self.v["mispredict"], str(round(total - int(self.v["l1d_lat"]) - 2)))
        self.assertIn("minus that loop's branch resolution", self.c["mispredict"])
        lat = self.raw["core"]["lat"]
        self.assertEqual(self.v["lat_imul"], str(round(min(lat["imul"]) / min(lat["add"]))))
        self.assertEqual(self.v["lat_fp"], str(round(min(per_round_core(self.raw, "addsd")))))
        self.assertEqual(self.v["lat_div"],
                         str(round(min(per_round_core(self.raw, "div_small")) - 1)))

    def test_every_value_has_a_comment(self):
        for k, val, com in self.entries:
            self.assertTrue(val, k)
            self.assertGreater(len(com), 10, k)

    def test_cache_geometry_from_cpuid_leaf4(self):
        leaf4 = {c["level"]: c for c in self.raw["cpuid"]["leaf4"] if c["type"] != "instruction"}
        self.assertEqual(self.v["l1d_kib"], str(leaf4[1]["kib"]))
        self.assertEqual(self.v["l1d_ways"], str(leaf4[1]["ways"]))
        self.assertEqual(self.v["l2_kib"], str(leaf4[2]["kib"]))
        self.assertEqual(self.v["l2_ways"], str(leaf4[2]["ways"]))
        self.assertEqual(self.v["llc_ways"], str(leaf4[3]["ways"]))
        # the recorded VM's L3 holds far less than CPUID's 260 MiB: the THP chase is 114
        # cycles at 3 MiB (1.5x the L2) and 335 at 4 MiB; 3070 KiB = whole sets of 20 ways
        ws = self.raw["chase"]["ws_kib"]
        at = {w: min(col(self.raw, "chase", "ticks_2m", ws.index(w))) for w in (3072, 4096)}
        self.assertGreater(at[4096], calibrate.LLC_RISE * at[3072])
        self.assertEqual(self.v["llc_kib"], "3070")
        self.assertIn("266240 KiB", self.c["llc_kib"])
        self.assertEqual(3070 * 16 % leaf4[3]["ways"], 0)

    def test_effective_llc(self):
        ws = [512, 768, 1024, 2048, 4096, 8192, 16384]
        # a shared L3: flat to 4 MiB, then DRAM
        lat = dict(zip(ws, [14, 40, 44, 46, 60, 200, 400]))
        e = calibrate.effective_llc(ws, lat, 512, 32768, 16)
        self.assertEqual((e["kib"], e["first_ws_kib"], e["last_ws_kib"], e["next_ws_kib"]),
                         (4096, 768, 4096, 8192))
        self.assertEqual(e["latency_ws_kib"], 2048)      # sqrt(768 x 4096) = 1774
        # bare metal: the chase never leaves the L3 in the series: CPUID's size
        e = calibrate.effective_llc(ws, dict(zip(ws, [14, 40, 41, 42, 43, 44, 45])), 512, 16384, 16)
        self.assertEqual(e["kib"], 16384)
        # capped at CPUID's size, rounded down to whole sets
        e = calibrate.effective_llc(ws, dict(zip(ws, [14, 40, 41, 42, 43, 44, 45])), 512, 8192, 16)
        self.assertEqual(e["kib"], 8192)
        e = calibrate.effective_llc(ws, lat, 512, 32768, 11)
        self.assertEqual((e["kib"], e["kib"] * 16 % 11), (4092, 0))

    def test_llc_is_read_from_whole_laps_when_the_measurer_has_them(self):
        # the short runs say the L3 holds 3 MiB (the recorded VM, L2 2 MiB); whole laps that
        # stay at 40 cycles to 4 MiB make it 4 MiB, and the latency is the laps' at the
        # middle of that range
        raw = recorded()
        ws = raw["chase"]["ws_kib"]
        laps = {w: (4 if w <= 32 else 14 if w <= 2048 else 40 if w <= 4096 else 500) for w in ws}
        for k in ("lap_ticks_2m", "lap_ticks_4k"):
            raw["chase"][k] = [[laps[w] / c for w in ws] for c in raw["core_per_tsc"]]
        entries, _, _ = calibrate.derive(raw, raw["_topology"])
        v = {k: val for k, val, _ in entries}
        c = {k: com for k, _, com in entries}
        self.assertEqual(v["llc_kib"], "4095")              # whole sets of 20 ways
        self.assertIn("whole laps of the cycle", c["llc_kib"])
        self.assertEqual(v["llc_lat"], str(40 - int(v["stlb_lat"])))
        self.assertIn("whole laps of the cycle", c["llc_lat"])
        # without them (raw/2, /3): the short runs, as before
        self.assertEqual(self.v["llc_kib"], "3070")
        self.assertIn("best of 16 x 4096 loads (raw figures from before", self.c["llc_lat"])

    def test_amd_cache_leaf_is_named(self):
        # AMD reserves leaf 4: the measurer reads 0x8000001D (same layout) and says so
        raw = recorded()
        raw["cpuid"].update(vendor="AuthenticAMD", family=0x19, model=0x11, cache_leaf=0x8000001D)
        entries, _, _ = calibrate.derive(raw, raw["_topology"])
        com = {k: c for k, _, c in entries}
        self.assertTrue(com["l2_kib"].startswith("CPUID leaf 0x8000001D, level 2"), com["l2_kib"])
        raw["cpuid"]["leaf4"] = []
        with self.assertRaisesRegex(calibrate.CalibrateError, "0x8000001D on AMD"):
            calibrate.derive(raw, raw["_topology"])

    def test_latencies_come_from_their_working_sets(self):
        ws = self.raw["chase"]["ws_kib"]
        l1 = min(col(self.raw, "chase", "ticks_4k", ws.index(24)))
        l2 = min(col(self.raw, "chase", "ticks_4k", ws.index(384)))
        self.assertEqual(self.v["l1d_lat"], str(round(l1)))
        self.assertEqual(self.v["l2_lat"], str(round(l2)))
        pages = self.raw["tlb"]["pages"]
        base = min(col(self.raw, "tlb", "ticks_4k", pages.index(16)))
        stlb = statistics.median(min(col(self.raw, "tlb", "ticks_4k", pages.index(n))) - base
                                 for n in (128, 160, 192, 256))
        self.assertEqual(self.v["stlb_lat"], str(round(stlb)))
        llc = min(col(self.raw, "chase", "ticks_4k", ws.index(3072))) - stlb
        self.assertEqual(self.v["llc_lat"], str(round(llc)))
        # the comment carries the spread of the same (4 KiB-page) series
        for key, w in (("l1d_lat", 24), ("l2_lat", 384), ("llc_lat", 3072)):
            v = col(self.raw, "chase", "ticks_4k", ws.index(w))
            self.assertIn("min %.1f median %.1f max %.1f cycles" % (
                min(v), statistics.median(v), max(v)), self.c[key], key)
        self.assertIn("24 KiB", self.c["l1d_lat"])
        self.assertIn("384 KiB", self.c["l2_lat"])
        self.assertIn("3072 KiB", self.c["llc_lat"])
        # the recorded host: L1 < L2 < LLC < memory
        self.assertLess(int(self.v["l1d_lat"]), int(self.v["l2_lat"]))
        self.assertLess(int(self.v["l2_lat"]), int(self.v["llc_lat"]))
        self.assertLess(int(self.v["llc_lat"]), int(self.v["mem_lat"]))

    def test_walk_and_memory(self):
        pages = self.raw["tlb"]["pages"]
        t = min(col(self.raw, "tlb", "ticks_4k", pages.index(8192)))
        stlb = self.d["stlb_lat_exact"]
        walk = t - int(self.v["l2_lat"]) - stlb
        # this recording's probe finds 4 KiB host pages: the model's walk loads the nested
        # leaf entry too (from the L2 at this size), so the overhead is what is left
        self.assertEqual(self.v["nested_page_kib"], "4")
        loads = 3 * int(self.v["l1d_lat"]) + 2 * int(self.v["l2_lat"])
        self.assertEqual(self.v["walk_overhead"], str(max(0, round(walk - loads))))
        self.assertIn("nested leaf entry", self.c["walk_overhead"])
        self.assertIn("8192 4 KiB pages", self.c["walk_overhead"])
        self.assertIn("VM", self.c["walk_overhead"])
        mem = min(x * c for x, c in zip(self.raw["mem"]["ticks"], self.raw["core_per_tsc"]))
        self.assertEqual(self.v["mem_lat"], str(round(mem - stlb - walk)))

    def test_nested_page_size_from_the_page_size_probe(self):
        self.assertIn("4 KiB pages", self.c["nested_page_kib"])
        self.assertIn("KVMKVMKVM", self.c["nested_page_kib"])
        f = calibrate.nested_page_from_probe
        self.assertEqual(f((9.3, 3.9), "KVMKVMKVM")[0], 4)
        self.assertEqual(f((3.9, 3.9), "KVMKVMKVM")[0], 2048)
        self.assertEqual(f((5.0, 3.9), "KVMKVMKVM")[0], 2048)   # within the probe's 2 cycles
        self.assertEqual(f((3.9, 3.9), "")[0], 0)               # bare metal: no nested tables
        v, c = f(None, "KVMKVMKVM")
        self.assertEqual(v, 0)
        self.assertIn("not probed", c)
        # no probe: no nested leaf in the walk's subtraction either
        raw = copy.deepcopy(self.raw)
        del raw["page_probe"]
        entries, _, d2 = calibrate.derive(raw, raw["_topology"])
        v2 = {k: val for k, val, _ in entries}
        self.assertEqual(v2["nested_page_kib"], "0")
        pages = raw["tlb"]["pages"]
        t = min(col(raw, "tlb", "ticks_4k", pages.index(8192)))
        walk = t - int(v2["l2_lat"]) - d2["stlb_lat_exact"]
        loads = 3 * int(v2["l1d_lat"]) + int(v2["l2_lat"])
        self.assertEqual(v2["walk_overhead"], str(max(0, round(walk - loads))))

    def test_instruction_prices(self):
        xadd = min(per_round(self.raw, "lock_xadd"))
        self.assertEqual(self.v["atomic"], str(round(xadd - int(self.v["l1d_lat"]))))
        self.assertEqual(self.v["fence"], str(round(min(per_round(self.raw, "mfence")))))
        self.assertEqual(self.v["pause"], str(round(min(per_round(self.raw, "pause_burst8")))))
        self.assertEqual(self.v["cpuid"], str(round(min(per_round(self.raw, "cpuid_leaf0")))))
        rt = min(x * c for x, c in zip(self.raw["c2c"]["roundtrip"], self.raw["core_per_tsc"]))
        self.assertEqual(self.v["c2c_lat"], str(round(rt / 2)))
        # a recording of the b forms (no "form"): the same arithmetic, named as such
        cyc = lambda k: min(x * c for x, c in zip(self.raw["rep"][k], self.raw["core_per_tsc"]))
        store = (cyc("movsb_4k_l1") + cyc("stosb_4k_l1")) / 128
        self.assertEqual(self.v["rep_store_line"], "%.2f" % store)
        self.assertIn("rep movsb and rep stosb of 4 KiB", self.c["rep_store_line"])
        # raw figures from before the copies from the L2: the fill price is the table's
        self.assertEqual(self.v["rep_fill_line"], "1")
        self.assertTrue(self.c["rep_fill_line"].startswith("LOOKED UP (Emerald Rapids"))
        mm = cyc("movsb_64k_from_mem")
        self.assertEqual(self.v["rep_mem_line"], str(round((mm - 1024 * max(store, 1)) / 1024)))

    def test_rep_series_in_one_window_give_fill_prices_by_level_and_kind(self):
        # raw/6: a clear of 256 cycles a page from the L2 (64 dirty lines) and a copy of
        # 352 -> rep_fill_line 4.00, rep_read_line (352 - 256) / 64 = 1.50; from the LLC a
        # clear of 512 and a copy of 960 -> 8.00 and 7.00; rep_mem_line against max(store, 4)
        raw = recorded()
        cpt = raw["core_per_tsc"]
        raw["schema"] = calibrate.RAW_SCHEMA
        t = lambda cyc: [cyc / c for c in cpt]
        raw["rep"] = {"form": "q", "timing": "window", "l1_repeats": 64,
                      "movs_4k_l1": t(72), "stos_4k_l1": t(70),
                      "movs_64k_from_mem": t(1024 * 4 + 1024 * 15), "stos_64k_to_mem": t(1024 * 20),
                      "l2_pages": 32, "movs_4k_l2": t(352), "stos_4k_l2": t(256),
                      "llc_pages": 256, "l2_kib_cpuid": 1024,
                      "movs_4k_llc": t(960), "stos_4k_llc": t(512)}

        def derived(r):
            entries, _, _ = calibrate.derive(r, r["_topology"])
            return {k: val for k, val, _ in entries}, {k: com for k, _, com in entries}

        # the recorded VM's chase finds an LLC of 3070 KiB and its L2 is 2 MiB: a 2 MiB
        # footprint is not beyond it, so the LLC prices are rep_fill_line's
        v, c = derived(raw)
        self.assertEqual(v["rep_store_line"], "%.2f" % ((72 + 70) / 128))
        self.assertIn("64 of them in one window", c["rep_store_line"])
        self.assertEqual(v["rep_fill_line"], "4.00")
        self.assertTrue(c["rep_fill_line"].startswith("MEASURED: rep stosq of the destination"))
        self.assertEqual(v["rep_read_line"], "1.50")
        self.assertEqual(v["rep_mem_line"], "15")
        for k in ("rep_llc_line", "rep_llc_read_line"):
            self.assertEqual(v[k], "4.00", k)
            self.assertIn("not measured: the LLC series' 2048 KiB", c[k])
        # a footprint of 2x the L2 within the LLC (a 512 KiB L2): measured
        for cache in raw["cpuid"]["leaf4"]:
            if cache["level"] == 2:
                cache["kib"] = 512
        raw["rep"]["llc_pages"] = 128
        v, c = derived(raw)
        self.assertEqual((v["rep_llc_line"], v["rep_llc_read_line"]), ("8.00", "7.00"), c["rep_llc_line"])
        self.assertIn("1024 KiB: 2.0x the L2, within llc_kib", c["rep_llc_line"])
        # beyond the LLC the chase found: refused again
        raw["rep"]["llc_pages"] = 4096
        v, c = derived(raw)
        self.assertEqual(v["rep_llc_line"], "4.00")
        # older raw figures (each page timed alone): all three are rep_fill_line's
        raw["rep"].pop("timing")
        v, c = derived(raw)
        for k in calibrate.REP_FILL_KEYS:
            self.assertEqual(v[k], v["rep_fill_line"], k)
            self.assertIn("before the rep series timed in one window", c[k])

    def test_rep_q_forms(self):
        # the measurer's q forms (as kernel/string.c runs them): a copy of 128 and a clear
        # of 96 cycles a page within L1 store 64 lines each -> (128 + 96) / 128 = 1.75
        raw = recorded()
        n = len(raw["core_per_tsc"])
        cpt = raw["core_per_tsc"]
        raw["schema"] = calibrate.RAW_SCHEMA
        raw["rep"] = {"form": "q", "movs_4k_l1": [128 / c for c in cpt],
                      "stos_4k_l1": [96 / c for c in cpt],
                      "movs_64k_from_mem": [(1024 * 2.5 + 1024 * 10) / c for c in cpt],
                      "stos_64k_to_mem": [1024 * 5 / c for c in cpt],
                      "l2_pages": 32, "movs_4k_l2": [320 / c for c in cpt],
                      "stos_4k_l2": [150 / c for c in cpt]}
        self.assertEqual(n, len(raw["rep"]["movs_4k_l1"]))
        entries, _, _ = calibrate.derive(raw, raw["_topology"])
        v = {k: val for k, val, _ in entries}
        c = {k: com for k, _, com in entries}
        self.assertEqual(v["rep_store_line"], "1.75")
        self.assertIn("rep movsq and rep stosq", c["rep_store_line"])
        self.assertIn("2.00 and 1.50 per line stored", c["rep_store_line"])
        # the copy through the L2: 320 cycles over 128 lines filled, measured
        self.assertEqual(v["rep_fill_line"], "2.50")
        self.assertTrue(c["rep_fill_line"].startswith("MEASURED: rep movsq of 4 KiB pages "
                                                      "through a 128 KiB source"))
        # from memory: minus 1024 x max(1.75, 2.50) over 1024 lines
        self.assertEqual(v["rep_mem_line"], "10")
        # a different copy through the L2 gives a different price (it reads the figure)
        raw["rep"]["movs_4k_l2"] = [200 / c for c in cpt]
        v = {k: val for k, val, _ in calibrate.derive(raw, raw["_topology"])[0]}
        self.assertEqual(v["rep_fill_line"], "1.56")
        ghz = statistics.median(g * c for g, c in zip(self.raw["tsc_ghz"], self.raw["core_per_tsc"]))
        self.assertEqual(self.v["ghz"], "%.2f" % ghz)

    def test_published_values_for_a_known_cpu(self):
        self.assertEqual((self.raw["cpuid"]["family"], self.raw["cpuid"]["model"]), (6, 0xCF))
        self.assertIn("Emerald Rapids", self.d["published"])
        self.assertEqual(self.v["dtlb4k_entries"], "96")
        self.assertEqual(self.v["stlb_entries"], "2048")
        self.assertTrue(self.c["dtlb4k_entries"].startswith("published:"))
        sky = calibrate.read_profile(os.path.join(ROOT, "model", "profiles", "skylake-sp.cfg"))
        for k in ("invlpg", "wrmsr", "mov_cr", "serialise", "irq_roundtrip", "ipi_latency"):
            self.assertEqual(self.v[k], sky[k][0], k)
            self.assertIn("skylake-sp profile", self.c[k], k)

    def test_unknown_cpu_published_keys_fall_back_and_say_so(self):
        cpuid = dict(self.raw["cpuid"], model=0x01)
        vals, statement = calibrate.published(cpuid)
        self.assertIn("NOT in the table", statement)
        sky = calibrate.read_profile(os.path.join(ROOT, "model", "profiles", "skylake-sp.cfg"))
        self.assertEqual(vals["dtlb4k_entries"][0], sky["dtlb4k_entries"][0])
        _, statement = calibrate.published(dict(cpuid, vendor="AuthenticAMD"))
        self.assertIn("zen3", statement)

    def test_unknown_cpu_is_an_error_for_the_core_keys(self):
        raw = copy.deepcopy(self.raw)
        raw["cpuid"]["model"] = 0x01
        with self.assertRaises(calibrate.UnknownCpu) as e:
            calibrate.derive(raw, raw["_topology"])
        msg = str(e.exception)
        self.assertIn("model 0x1", msg)
        self.assertIn("prefetch_lines (not measurable from user space)", msg)
        self.assertIn("CORE_CPUS", msg)
        # an unclean window measurement is named too
        raw["core"]["wong"]["rob_size"]["ticks"] = [
            [700.0] * len(raw["core"]["wong"]["rob_size"]["fillers"])] * raw["rounds"]
        with self.assertRaises(calibrate.UnknownCpu) as e:
            calibrate.derive(raw, raw["_topology"])
        self.assertIn("rob_size (measurement not clean", str(e.exception))
        # the same raw figures on a CPU of the table derive
        raw["cpuid"]["model"] = 0x8F
        entries, _, _ = calibrate.derive(raw, raw["_topology"])
        v = {k: (val, com) for k, val, com in entries}
        self.assertEqual(v["rob_size"][0], "512")
        self.assertIn("LOOKED UP (Sapphire Rapids", v["rob_size"][1])
        self.assertIn("measurement is not clean", v["rob_size"][1])

    def test_cpuid_as_names_the_silicon_behind_a_masked_signature(self):
        raw = copy.deepcopy(self.raw)
        raw["core"]["wong"]["rob_size"]["ticks"] = [
            [700.0] * len(raw["core"]["wong"]["rob_size"]["fillers"])] * raw["rounds"]
        raw["cpuid"]["family"], raw["cpuid"]["model"] = 6, 0xA7   # what a hypervisor said
        with self.assertRaises(calibrate.UnknownCpu) as e:
            calibrate.derive(raw, raw["_topology"])
        self.assertIn("--cpuid-as", str(e.exception))
        raw["cpuid_as"] = {"family": 6, "model": 0xAD}
        entries, header, d = calibrate.derive(raw, raw["_topology"])
        v = {k: (val, com) for k, val, com in entries}
        self.assertIn("LOOKED UP (Granite Rapids", v["rob_size"][1])
        self.assertIn("Redwood Cove", v["rob_size"][1])
        # the published keys follow the named CPU too, and both signatures are kept
        self.assertIn("Redwood Cove", v["dtlb4k_entries"][1])
        pub = [h for h in header if h.startswith("Published values")][0]
        self.assertIn("CPUID reports family 0x6 model 0xa7; identified by --cpuid-as as "
                      "family 0x6 model 0xad", pub)
        # what remodel reads back from a recorded profile (panel.complete_host_profile)
        self.assertEqual(calibrate.cpuid_as_in_profile(pub), (6, 0xAD))
        self.assertIsNone(calibrate.cpuid_as_in_profile("# Published values: CPUID names"))
        self.assertEqual(d["core"]["core_table"], "Granite Rapids (Redwood Cove cores)")
        # the raw figures themselves are not rewritten
        self.assertEqual(raw["cpuid"]["model"], 0xA7)

    def test_cpuid_as_parsing(self):
        self.assertEqual(calibrate.parse_cpuid_as("6:0xad"), (6, 0xAD))
        self.assertEqual(calibrate.parse_cpuid_as("0x1a:2"), (0x1A, 2))
        for bad in ("6", "6:0xzz", "6:ad", "6:0x1ff", "0:1", ""):
            with self.assertRaises(calibrate.CalibrateError, msg=bad):
                calibrate.parse_cpuid_as(bad)

    def test_page_probe_is_reported(self):
        self.assertTrue(any(h.startswith("Page-size probe:") for h in self.header))
        self.assertIn("tlb_holds_4k_entries", self.d["page_probe"])

    def test_bad_raw_is_refused(self):
        raw = copy.deepcopy(self.raw)
        raw["schema"] = "something/9"
        with self.assertRaises(calibrate.CalibrateError):
            calibrate.derive(raw)
        raw = copy.deepcopy(self.raw)
        raw["lock_xadd"] = raw["lock_xadd"][:-1]
        with self.assertRaises(calibrate.CalibrateError):
            calibrate.derive(raw)


class CoreTableTest(unittest.TestCase):
    def test_every_entry_has_every_key_and_a_source(self):
        self.assertEqual(set(calibrate.CORE_KEYS), set(CORE_KEYS))
        self.assertEqual(len(calibrate.CORE_KEYS), len(CORE_KEYS))
        for vendor, fam, lo, hi, name, values in calibrate.CORE_CPUS:
            self.assertEqual(set(values), set(CORE_KEYS), name)
            self.assertLessEqual(lo, hi, name)
            for k, (val, source) in values.items():
                self.assertIsInstance(val, int, (name, k))
                self.assertGreaterEqual(val, 0 if k.startswith("prefetch") or k == "loop_branches"
                                        else 1, (name, k))
                self.assertRegex(source, r"\[(checked|not re-checked)\]$", (name, k))
                self.assertRegex(source, r"Intel|Agner|WikiChip|Chips and Cheese|AMD|AnandTech|"
                                 r"cpunews|InstLatX64|LLVM", (name, k))

    def test_ranges_do_not_overlap(self):
        rows = calibrate.CORE_CPUS
        for i, a in enumerate(rows):
            for b in rows[i + 1:]:
                if a[:2] == b[:2]:
                    self.assertTrue(a[3] < b[2] or b[3] < a[2], (a[4], b[4]))

    def test_the_cpus_of_the_brief(self):
        def name(vendor, fam, model):
            e = calibrate.core_cpu({"vendor": vendor, "family": fam, "model": model})
            return e and e[0]
        self.assertIn("Skylake", name("GenuineIntel", 6, 0x55))
        self.assertIn("Ice Lake", name("GenuineIntel", 6, 0x6A))
        self.assertIn("Sapphire", name("GenuineIntel", 6, 0x8F))
        self.assertIn("Emerald", name("GenuineIntel", 6, 0xCF))
        self.assertIn("Zen 2", name("AuthenticAMD", 0x17, 0x31))
        self.assertIn("Zen 2", name("AuthenticAMD", 0x17, 0x71))
        self.assertIn("Zen 3", name("AuthenticAMD", 0x19, 0x01))
        self.assertIn("Zen 3", name("AuthenticAMD", 0x19, 0x21))
        self.assertIn("Zen 4", name("AuthenticAMD", 0x19, 0x11))
        self.assertIn("Zen 4", name("AuthenticAMD", 0x19, 0x61))
        self.assertIsNone(name("GenuineIntel", 6, 0x01))
        self.assertIsNone(name("AuthenticAMD", 0x17, 0x01))      # Zen 1: not in the table
        self.assertIsNone(name("AuthenticAMD", 6, 0xCF))         # vendor is part of the key
        # the published figures the brief names
        gc = calibrate.core_cpu({"vendor": "GenuineIntel", "family": 6, "model": 0xCF})[1]
        self.assertEqual((gc["core_width"][0], gc["rob_size"][0], gc["store_buffer"][0]),
                         (6, 512, 114))
        sk = calibrate.core_cpu({"vendor": "GenuineIntel", "family": 6, "model": 0x55})[1]
        self.assertEqual((sk["core_width"][0], sk["rob_size"][0], sk["store_buffer"][0]),
                         (4, 224, 56))


def step_curve(fillers, at, lo=700.0, hi=1400.0, wrong=()):
    """Cycles per iteration: lo up to filler count `at`, hi after; `wrong` indices swapped."""
    t = [lo if n <= at else hi for n in fillers]
    for i in wrong:
        t[i] = hi + lo - t[i]
    return t


class CoreDerivationTest(unittest.TestCase):
    FILLERS = list(range(0, 481, 32)) + list(range(482, 512, 2)) + list(range(512, 1025, 32))

    def test_confirmed_best_ignores_a_lone_fast_round(self):
        cb = calibrate.confirmed_best
        # a round whose clock reading missed the core's speed: alone, 12 % below the rest
        self.assertEqual(cb([0.84, 0.95, 0.96, 0.97]), 0.95)
        self.assertEqual(cb([6.2, 6.15, 7.1], largest=True), 6.2)
        # two rounds that agree confirm each other, however far from the rest
        self.assertEqual(cb([0.84, 0.85, 0.97]), 0.84)
        # nothing to confirm with: the best, as before
        self.assertEqual(cb([1.3]), 1.3)
        self.assertEqual(cb([1.0, 2.0, 4.0]), 1.0)
        self.assertEqual(cb([-1, 2.0, 2.05]), 2.0)  # a round not measured is dropped
        with self.assertRaises(calibrate.CalibrateError):
            cb([-1])
        # the width: one round of 7.1 among 6.1-6.3 is not a 7-wide core
        self.assertEqual(calibrate.width_from_ipc({"add_imm": [6.2, 6.15, 7.1],
                                                   "nop4": [5.9, 5.88]})[:2], (6, "add_imm"))

    def test_width_rounds_the_best_ipc(self):
        self.assertEqual(calibrate.width_from_ipc({"nop4": [3.1, 5.6], "add_imm": [4.9]}),
                         (6, "nop4", 5.6))
        self.assertEqual(calibrate.width_from_ipc({"nop4": [3.9], "xor_zero": [4.4]})[0], 4)
        with self.assertRaises(calibrate.CalibrateError):
            calibrate.width_from_ipc({"nop4": []})

    def test_step_is_found(self):
        s = calibrate.wong_step(self.FILLERS, step_curve(self.FILLERS, 508))
        self.assertEqual((s["n_lo"], s["n_hi"], s["bad"]), (508, 510, 0))
        self.assertAlmostEqual(s["ratio"], 2.0)
        # one stray point on the wrong side moves nothing
        s = calibrate.wong_step(self.FILLERS, step_curve(self.FILLERS, 508, wrong=(3,)))
        self.assertEqual((s["n_lo"], s["bad"]), (508, 1))
        # no step: a flat curve, or one rising by less than 1.5x
        self.assertIsNone(calibrate.wong_step(self.FILLERS, [700.0] * len(self.FILLERS)))
        self.assertIsNone(calibrate.wong_step(self.FILLERS,
                                              step_curve(self.FILLERS, 508, hi=1000.0)))

    def test_size_from_agreeing_rounds(self):
        st = lambda n: {"n_lo": n, "n_hi": n + 2, "bad": 0, "ratio": 2.0}
        self.assertEqual(calibrate.wong_size([st(508), st(510), st(508), None, st(256)], 2)[0],
                         510)
        self.assertEqual(calibrate.wong_size([st(56)] * 5, 0)[0], 56)
        size, why = calibrate.wong_size([st(256), st(960), st(640), None, st(500)], 2)
        self.assertIsNone(size)
        self.assertIn("disagree", why)
        self.assertIsNone(calibrate.wong_size([None] * 5, 2)[0])
        # a round with many points on the wrong side is not clean
        bad = dict(st(508), bad=10)
        self.assertIsNone(calibrate.wong_size([bad] * 5, 2, npoints=40)[0])

    def test_mlp_plateau(self):
        ks = [1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32]
        t = [max(640.0 / k, 40.0) for k in ks]
        m = calibrate.mlp_plateau(ks, t)
        self.assertTrue(m["clean"])
        self.assertAlmostEqual(m["mlp"], 16.0)
        self.assertEqual(m["knee"], 16)
        # still falling at the largest k: the plateau was not reached
        m = calibrate.mlp_plateau(ks, [640.0 / k for k in ks])
        self.assertFalse(m["clean"])
        # no overlap at all (t(1) = t(2)): not a parallelism measurement
        self.assertFalse(calibrate.mlp_plateau(ks, [600.0] * len(ks))["clean"])

    def synthetic(self, rob_at=510, sb_at=112, lb_at=190, fb=16):
        """The recorded raw figures with synthetic window and parallelism curves (cycles
        converted back to ticks with each round's clock)."""
        raw = recorded()
        cpt = raw["core_per_tsc"]
        w = raw["core"]["wong"]
        for key, at in (("rob_size", rob_at), ("store_buffer", sb_at), ("load_buffer", lb_at)):
            fillers = sorted(set(range(0, 4 * at, max(2, at // 16))) | {at, at + 2})
            w[key]["fillers"] = fillers
            w[key]["ticks"] = [[x / c for x in step_curve(fillers, at)] for c in cpt]
        m = raw["core"]["mlp"]
        m["ticks"] = [[max(640.0 / k, 640.0 / fb) / c for k in m["k"]] for c in cpt]
        return raw

    def test_derived_from_synthetic_curves(self):
        raw = self.synthetic()
        v, c, d = calibrate.derive_core(raw, raw["cpuid"])
        self.assertEqual(v["rob_size"], str(510 + 2))
        self.assertEqual(v["store_buffer"], "112")
        self.assertEqual(v["load_buffer"], str(190 + 2))
        self.assertEqual(v["fill_buffers"], "16")
        for k in ("rob_size", "store_buffer", "load_buffer", "fill_buffers"):
            self.assertTrue(c[k].startswith("MEASURED: "), k)
        self.assertIn("5 of 5 rounds agree", c["rob_size"])
        self.assertEqual(d["looked_up"], ["rep_fill_line", "prefetch_lines", "prefetch_streams",
                                           "page_walkers", "stores_per_cycle",
                                           "taken_per_cycle", "loop_branches",
                                           "loop_taken_per_cycle", "btb_l0_entries",
                                           "btb_bubble"])
        # a different step gives a different value (the derivation reads the curve)
        raw = self.synthetic(rob_at=300, fb=10)
        v, _, _ = calibrate.derive_core(raw, raw["cpuid"])
        self.assertEqual((v["rob_size"], v["fill_buffers"]), ("302", "10"))

    def test_fused_nops_count_one_slot_and_entry_per_pair(self):
        self.assertEqual(calibrate.nop_fusion({"nop4": [11.9, 12.1], "add_imm": [4.0],
                                               "xor_zero": [6.1]}), 2)
        self.assertEqual(calibrate.nop_fusion({"nop4": [7.0], "add_imm": [5.3],
                                               "xor_zero": [8.0]}), 1)
        self.assertEqual(calibrate.nop_fusion({"nop4": [7.85], "xor_zero": [5.67]}), 1)
        # one fast nop round alone does not make a fusing core
        self.assertEqual(calibrate.nop_fusion({"nop4": [6.0, 5.9, 11.9], "add_imm": [5.8, 5.9],
                                               "xor_zero": [6.0, 5.95]}), 1)
        # a core that runs nops twice as fast as zero idioms: the width is the zero idioms',
        # and the nop window step counts two nops per entry
        raw = self.synthetic(rob_at=634)
        w, cpt = raw["core"]["width"], raw["core_per_tsc"]
        w["nop4"] = [1.0 / (12.08 * c) for c in cpt]
        w["xor_zero"] = [1.0 / (6.12 * c) for c in cpt]
        w["add_imm"] = [1.0 / (4.0 * c) for c in cpt]
        v, c, d = calibrate.derive_core(raw, raw["cpuid"])
        self.assertEqual(d["nop_fusion"], 2)
        self.assertEqual(v["core_width"], "6")
        self.assertIn("fuses 2 nops", c["core_width"])
        self.assertEqual(v["rob_size"], str(634 // 2 + 2))
        self.assertIn("/ 2 (fused nops per entry", c["rob_size"])
        # the other windows are not nop-filled: unchanged
        self.assertEqual(v["store_buffer"], "112")
        # without fusion the nops' own rate is the width and the step is not divided
        w["nop4"] = [1.0 / (6.9 * c) for c in cpt]
        v, _, d = calibrate.derive_core(raw, raw["cpuid"])
        self.assertEqual((d["nop_fusion"], v["core_width"], v["rob_size"]), (1, "7", "636"))

    def test_taken_branches_per_cycle(self):
        raw = self.synthetic()
        cpt = raw["core_per_tsc"]
        # raw/2 figures have no taken-branch loop: the key is looked up and says why
        v, c, _ = calibrate.derive_core(raw, raw["cpuid"])
        self.assertEqual(v["taken_per_cycle"], "1")
        self.assertIn("not measured (raw figures of baremm-calibrate-raw/2", c["taken_per_cycle"])
        # measured: cycles per taken branch 0.52 -> 2 per cycle; 1.05 -> 1
        for per, want in ((0.52, "2"), (1.05, "1"), (0.34, "3")):
            raw["core"]["taken"] = {"branches_per_iter": 33, "ticks": [per / x for x in cpt]}
            v, c, d = calibrate.derive_core(raw, raw["cpuid"])
            self.assertEqual(v["taken_per_cycle"], want, per)
            self.assertTrue(c["taken_per_cycle"].startswith("MEASURED: "), per)
            self.assertNotIn("taken_per_cycle", d["looked_up"])
        # between two whole numbers (1.5 per cycle): not clean, the table's value
        raw["core"]["taken"]["ticks"] = [(1 / 1.5) / x for x in cpt]
        v, c, d = calibrate.derive_core(raw, raw["cpuid"])
        self.assertIn("taken_per_cycle", d["looked_up"])
        self.assertIn("not clean (1.50 per cycle", c["taken_per_cycle"])

    def test_small_loops_taken_branches(self):
        raw = self.synthetic()
        cpt = raw["core_per_tsc"]
        # no small loops in the raw figures: both keys looked up (none assumed in the table)
        v, c, d = calibrate.derive_core(raw, raw["cpuid"])
        self.assertEqual((v["loop_branches"], v["loop_taken_per_cycle"]), ("0", "1"))
        self.assertIn("before the small taken-branch loops", c["loop_branches"])
        self.assertIn("loop_branches", d["looked_up"])
        raw["core"]["taken"] = {"branches_per_iter": 33, "ticks": [(1 / 1.27) / x for x in cpt]}
        sizes = [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24, 28]

        def loops(rate_of):
            raw["core"]["taken_loops"] = {"branches_per_iter": sizes, "ticks": [
                [(1 / rate_of(n)) / x for n in sizes] for x in cpt]}
            return calibrate.derive_core(raw, raw["cpuid"])
        # Redwood Cove's shape: 2 a cycle up to 16 taken branches a loop, then 1.27
        v, c, d = loops(lambda n: 1.97 if n <= 16 else 1.27)
        self.assertEqual((v["loop_branches"], v["loop_taken_per_cycle"]), ("16", "2"))
        self.assertTrue(c["loop_branches"].startswith("MEASURED: "))
        self.assertNotIn("loop_branches", d["looked_up"])
        # a capacity of 8 moves the key with it
        v, _, _ = loops(lambda n: 2.02 if n <= 8 else 1.27)
        self.assertEqual(v["loop_branches"], "8")
        # no loop faster than LOOP_RATE_MIN x the general rate: measured, no loop rule
        v, c, d = loops(lambda n: 1.4)
        self.assertEqual(v["loop_branches"], "0")
        self.assertIn("no loop rule", c["loop_branches"])
        self.assertNotIn("loop_branches", d["looked_up"])
        # fast all the way to the largest loop: the capacity is not found, looked up
        v, c, d = loops(lambda n: 2.0)
        self.assertIn("loop_branches", d["looked_up"])
        self.assertIn("does not fall", c["loop_branches"])
        # a fastest rate between two whole numbers: not clean
        v, c, d = loops(lambda n: 2.5 if n <= 16 else 1.27)
        self.assertIn("loop_taken_per_cycle", d["looked_up"])

    def test_btb_levels(self):
        raw = self.synthetic()
        cpt = raw["core_per_tsc"]
        # no chains in the raw figures: both keys looked up, saying why
        v, c, d = calibrate.derive_core(raw, raw["cpuid"])
        self.assertIn("btb_l0_entries", d["looked_up"])
        self.assertIn("before the chains of taken branches", c["btb_l0_entries"])
        ks = [32, 64, 128, 256, 384, 512, 1024, 2048]

        def chains(cyc_of):
            raw["core"]["btb"] = {"spacing": 16, "branches_per_lap": [k + 1 for k in ks],
                                  "ticks": [[cyc_of(k) / x for k in ks] for x in cpt]}
            return calibrate.derive_core(raw, raw["cpuid"])
        # this Granite Rapids' shape: one cycle up to 256 distinct taken branches, then a
        # gradual rise to one bubble more
        shape = {32: 0.93, 64: 0.94, 128: 0.96, 256: 1.09, 384: 1.56, 512: 1.79, 1024: 1.95,
                 2048: 2.10}
        v, c, d = chains(lambda k: shape[k])
        self.assertEqual((v["btb_l0_entries"], v["btb_bubble"]), ("256", "1"))
        self.assertTrue(c["btb_l0_entries"].startswith("MEASURED: "))
        self.assertNotIn("btb_bubble", d["looked_up"])
        # a level of 1024 with a 3-cycle step (Zen 3's shape): both keys follow the curve
        v, c, d = chains(lambda k: 1.0 if k <= 1024 else 4.05)
        self.assertEqual((v["btb_l0_entries"], v["btb_bubble"]), ("1024", "3"))
        # a level between the chains tested (384): down to the power of two below
        v, c, d = chains(lambda k: 1.0 if k <= 384 else 2.0)
        self.assertEqual(v["btb_l0_entries"], "256")
        self.assertIn("384, down to a power of two", c["btb_l0_entries"])
        # flat: no BTB rule, measured
        v, c, d = chains(lambda k: 1.0 + k / 10000.0)
        self.assertEqual((v["btb_l0_entries"], v["btb_bubble"]), ("0", "0"))
        self.assertIn("no BTB rule", c["btb_l0_entries"])
        self.assertNotIn("btb_l0_entries", d["looked_up"])
        # 2.5 cycles a taken branch beyond the level is not a whole number of bubbles
        # after the branch's own cycle: the table's values
        v, c, d = chains(lambda k: 1.0 if k <= 256 else 2.5)
        self.assertIn("btb_bubble", d["looked_up"])
        self.assertIn("not clean (the longest chain's 2.50", c["btb_bubble"])
        # a core that follows two taken branches a cycle (Zen 5's shape): half a cycle
        # each inside the level, 2 beyond it, is one bubble after the branch's own cycle
        # (the model charges a missing branch its cycle whatever taken_per_cycle is)
        v, c, d = chains(lambda k: 0.5 if k <= 1024 else 2.0)
        self.assertEqual((v["btb_l0_entries"], v["btb_bubble"]), ("1024", "1"))
        # a failed measurement is looked up with its error
        raw["core"]["btb"] = {"error": "cannot map generated code executable"}
        v, c, d = calibrate.derive_core(raw, raw["cpuid"])
        self.assertIn("cannot map generated code", c["btb_l0_entries"])

    def test_zen5_is_in_the_tables(self):
        cpuid = {"vendor": "AuthenticAMD", "family": 0x1A, "model": 0x02, "stepping": 1,
                 "brand": "AMD EPYC"}
        name, vals = calibrate.core_cpu(cpuid)
        self.assertIn("Zen 5", name)
        self.assertEqual((vals["core_width"][0], vals["rob_size"][0], vals["fill_buffers"][0],
                          vals["taken_per_cycle"][0]), (8, 448, 124, 2))
        pub, statement = calibrate.published(cpuid)
        self.assertIn("Zen 5 (Turin", statement)
        self.assertEqual((pub["dtlb4k_entries"][0], pub["stlb_entries"][0]), ("96", "4096"))
        # the fill buffers fit the core's ring (profile.c bounds it to CORE_FB_MAX)
        self.assertLessEqual(vals["fill_buffers"][0], 128)

    def test_unclean_falls_back_to_the_table(self):
        raw = self.synthetic()
        w = raw["core"]["wong"]["store_buffer"]
        w["ticks"] = [[700.0] * len(w["fillers"]) for _ in w["ticks"]]
        m = raw["core"]["mlp"]
        m["ticks"] = [[600.0 / k for k in m["k"]] for _ in m["ticks"]]
        v, c, d = calibrate.derive_core(raw, raw["cpuid"])
        self.assertEqual(v["store_buffer"], "114")
        self.assertTrue(c["store_buffer"].startswith("LOOKED UP (Emerald Rapids"))
        self.assertIn("not clean", c["store_buffer"])
        self.assertEqual(v["fill_buffers"], "16")
        self.assertIn("not clean", c["fill_buffers"])
        self.assertIn("store_buffer", d["looked_up"])
        # an error from the measurer (generated code refused) is a lookup too
        raw["core"]["wong"]["rob_size"] = {"filler": "nop", "error": "refused", "fillers": [],
                                           "ticks": [[] for _ in raw["core_per_tsc"]]}
        v, c, _ = calibrate.derive_core(raw, raw["cpuid"])
        self.assertEqual(v["rob_size"], "512")
        self.assertIn("refused", c["rob_size"])

    def test_host_cfg_from_a_synthetic_run_parses(self):
        tmp = tempfile.mkdtemp(prefix="calib-syn-")
        try:
            raw = self.synthetic()
            cfg, _, entries, _ = calibrate.write(raw, tmp, raw["_topology"])
            back = calibrate.read_profile(cfg)
            self.assertEqual(set(back), set(calibrate.KEYS))
            self.assertEqual(back["rob_size"][0], "512")
            self.assertTrue(back["rob_size"][1].startswith("MEASURED: "))
            for k in CORE_KEYS:
                int(back[k][0])
            ok, msg = calibrate.check_profile(native(), cfg)
            self.assertTrue(ok, msg)
        finally:
            shutil.rmtree(tmp)

    def main_args(self, tmp):
        """calibrate.main's arguments for --raw of the recorded figures with a CPUID model
        (0x01) the core table lacks, written into @tmp."""
        raw = recorded()
        raw["cpuid"]["model"] = 0x01
        path = os.path.join(tmp, "raw.json")
        with open(path, "w") as f:
            json.dump(raw, f)

        class A:
            pass
        a = A()
        a.out, a.raw, a.rounds, a.quick = os.path.join(tmp, "out"), path, 1, False
        return a

    def test_cpuid_as_on_the_command(self):
        tmp = tempfile.mkdtemp(prefix="calib-as-")
        try:
            a = self.main_args(tmp)
            import io
            import contextlib
            a.cpuid_as = "6:zz"
            with contextlib.redirect_stderr(io.StringIO()) as e:
                self.assertEqual(calibrate.main(a), status.EXIT_USAGE)
            self.assertIn("expected FAMILY:MODEL", e.getvalue())
            a.cpuid_as = "6:0x8f"
            with contextlib.redirect_stdout(io.StringIO()) as o:
                self.assertEqual(calibrate.main(a), 0)
            self.assertIn("identified by --cpuid-as as family 0x6 model 0x8f", o.getvalue())
            with open(os.path.join(tmp, "out", "host.json")) as f:
                js = json.load(f)
            self.assertEqual(js["raw"]["cpuid_as"], {"family": 6, "model": 0x8F})
            self.assertEqual(js["raw"]["cpuid"]["model"], 0x01)
            self.assertIn("# Published values: CPUID reports family 0x6 model 0x1",
                          open(os.path.join(tmp, "out", "host.cfg")).read())
        finally:
            shutil.rmtree(tmp)

    def test_unknown_cpu_exit_status(self):
        tmp = tempfile.mkdtemp(prefix="calib-unk-")
        try:
            a = self.main_args(tmp)
            import io
            import contextlib
            with contextlib.redirect_stderr(io.StringIO()) as e:
                self.assertEqual(calibrate.main(a), status.EXIT_UNKNOWN_CPU)
            self.assertIn("not in the core table", e.getvalue())
            self.assertFalse(os.path.exists(os.path.join(tmp, "out", "host.cfg")))
            self.assertNotIn(status.EXIT_UNKNOWN_CPU, (status.EXIT_TOOL_ERROR,
                                                       status.EXIT_NOT_CALIBRATED,
                                                       status.EXIT_LOG_ERROR, status.EXIT_USAGE))
        finally:
            shutil.rmtree(tmp)


class WriteTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="calib-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_written_profile_is_accepted_by_the_plugin_parser(self):
        raw = recorded()
        cfg, js, entries, _ = calibrate.write(raw, self.tmp, raw["_topology"])
        ok, msg = calibrate.check_profile(native(), cfg)
        self.assertTrue(ok, msg)
        self.assertIn("profile=host ", msg)
        # the parser's view agrees with what was written (l1d=kib/ways/lat)
        v = {k: val for k, val, _ in entries}
        self.assertIn("l1d=%s/%s/%s" % (v["l1d_kib"], v["l1d_ways"], v["l1d_lat"]), msg)
        self.assertIn("c2c=%s " % v["c2c_lat"], msg)
        with open(js) as f:
            j = json.load(f)
        self.assertEqual(j["raw"], raw)
        self.assertEqual(j["profile"], v)
        # read back by the tools' own reader: every key, the values written
        back = calibrate.read_profile(cfg)
        self.assertEqual({k: val for k, (val, _) in back.items()}, v)

    def test_the_check_rejects_a_broken_profile(self):
        raw = recorded()
        cfg, _, _, _ = calibrate.write(raw, self.tmp, raw["_topology"])
        with open(cfg) as f:
            text = f.read()
        bad = os.path.join(self.tmp, "bad.cfg")
        with open(bad, "w") as f:
            f.write("\n".join(l for l in text.split("\n") if not l.startswith("stlb_lat ")))
        ok, msg = calibrate.check_profile(native(), bad)
        self.assertFalse(ok)
        self.assertIn("missing key 'stlb_lat'", msg)
        # an unknown key that is not a core key stays an error
        with open(bad, "w") as f:
            f.write(text + "no_such_key = 1\n")
        ok, msg = calibrate.check_profile(native(), bad)
        self.assertFalse(ok)
        self.assertIn("no_such_key", msg)

    def test_raw_from_a_written_json(self):
        raw = recorded()
        _, js, entries, _ = calibrate.write(raw, self.tmp, raw["_topology"])
        out = os.path.join(self.tmp, "again")

        class A:
            pass
        a = A()
        a.out, a.raw, a.rounds, a.quick = out, js, 1, False
        import io
        import contextlib
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(calibrate.main(a), 0)
        with open(os.path.join(out, "host.cfg")) as f, \
                open(os.path.join(self.tmp, "host.cfg")) as g:
            self.assertEqual(f.read(), g.read())


class NativeSmokeTest(unittest.TestCase):
    def test_quick_run_derives(self):
        """The measurer's JSON is what derive() reads (one quick round, a few seconds)."""
        r = subprocess.run([native(), "--quick", "--rounds", "1"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        raw = json.loads(r.stdout)
        self.assertEqual(raw["rounds"], 1)
        try:
            entries, _, _ = calibrate.derive(raw, calibrate.topology())
        except calibrate.UnknownCpu:
            # a CPU (or a masked signature) the core table lacks: what is tested here is the
            # JSON's shape, so derive as a table CPU of the same vendor
            fam, lo = next((f, m) for v, f, m, _, _, _ in calibrate.CORE_CPUS
                           if v == raw["cpuid"]["vendor"])
            raw["cpuid_as"] = {"family": fam, "model": lo}
            entries, _, _ = calibrate.derive(raw, calibrate.topology())
        self.assertEqual([k for k, _, _ in entries], list(calibrate.KEYS))


class HostModelTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="calib-root-")
        os.makedirs(os.path.join(self.tmp, runner.PROFILE_DIR))
        self.saved = runner.ROOT
        runner.ROOT = self.tmp

    def tearDown(self):
        runner.ROOT = self.saved
        shutil.rmtree(self.tmp)

    def test_not_calibrated(self):
        with self.assertRaises(runner.NotCalibrated):
            runner.resolve_profile("host")
        import io
        import contextlib
        with contextlib.redirect_stderr(io.StringIO()) as e:
            rc = cli.main(["run", "--model", "host", "--no-build"])
        self.assertEqual(rc, status.EXIT_NOT_CALIBRATED)
        self.assertIn("tools/baremm calibrate", e.getvalue())
        self.assertNotEqual(status.EXIT_NOT_CALIBRATED, status.EXIT_TOOL_ERROR)

    def test_calibrated(self):
        path = os.path.join(self.tmp, runner.HOST_PROFILE_PATH)
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write("name = host\n")
        self.assertEqual(runner.resolve_profile("host"), path)
        # other names are unchanged
        with self.assertRaises(runner.ToolError):
            runner.resolve_profile("no-such-profile")


if __name__ == "__main__":
    unittest.main()
