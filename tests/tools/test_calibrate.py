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
        # the key table of model/profile.c, read from the source, not from calibrate.py
        with open(os.path.join(ROOT, "model", "profile.c")) as f:
            src = f.read()
        import re
        table = src[src.index("static const struct pkey keys[]"):src.index("#define NKEYS")]
        keys = re.findall(r'\{ "(\w+)", offsetof', table) + re.findall(r"K\((\w+),", table)
        self.assertEqual(sorted(keys), sorted(k for k, _, _ in self.entries))
        self.assertEqual(len(self.entries), len(set(k for k, _, _ in self.entries)))

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
        self.assertEqual(self.v["llc_kib"], str(leaf4[3]["kib"]))
        self.assertEqual(self.v["llc_ways"], str(leaf4[3]["ways"]))

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
        llc = min(col(self.raw, "chase", "ticks_4k", ws.index(6144))) - stlb
        self.assertEqual(self.v["llc_lat"], str(round(llc)))
        # the comment carries the spread of the same (4 KiB-page) series
        for key, w in (("l1d_lat", 24), ("l2_lat", 384), ("llc_lat", 6144)):
            v = col(self.raw, "chase", "ticks_4k", ws.index(w))
            self.assertIn("min %.1f median %.1f max %.1f cycles" % (
                min(v), statistics.median(v), max(v)), self.c[key], key)
        self.assertIn("24 KiB", self.c["l1d_lat"])
        self.assertIn("384 KiB", self.c["l2_lat"])
        self.assertIn("6144 KiB", self.c["llc_lat"])
        # the recorded host: L1 < L2 < LLC < memory
        self.assertLess(int(self.v["l1d_lat"]), int(self.v["l2_lat"]))
        self.assertLess(int(self.v["l2_lat"]), int(self.v["llc_lat"]))
        self.assertLess(int(self.v["llc_lat"]), int(self.v["mem_lat"]))

    def test_walk_and_memory(self):
        pages = self.raw["tlb"]["pages"]
        t = min(col(self.raw, "tlb", "ticks_4k", pages.index(8192)))
        stlb = self.d["stlb_lat_exact"]
        walk = t - int(self.v["l2_lat"]) - stlb
        loads = 3 * int(self.v["l1d_lat"]) + int(self.v["l2_lat"])
        self.assertEqual(self.v["walk_overhead"], str(max(0, round(walk - loads))))
        self.assertIn("8192 4 KiB pages", self.c["walk_overhead"])
        self.assertIn("VM", self.c["walk_overhead"])
        mem = min(x * c for x, c in zip(self.raw["mem"]["ticks"], self.raw["core_per_tsc"]))
        self.assertEqual(self.v["mem_lat"], str(round(mem - stlb - walk)))

    def test_instruction_prices(self):
        xadd = min(per_round(self.raw, "lock_xadd"))
        self.assertEqual(self.v["atomic"], str(round(xadd - int(self.v["l1d_lat"]))))
        self.assertEqual(self.v["fence"], str(round(min(per_round(self.raw, "mfence")))))
        self.assertEqual(self.v["pause"], str(round(min(per_round(self.raw, "pause_burst8")))))
        self.assertEqual(self.v["cpuid"], str(round(min(per_round(self.raw, "cpuid_leaf0")))))
        rt = min(x * c for x, c in zip(self.raw["c2c"]["roundtrip"], self.raw["core_per_tsc"]))
        self.assertEqual(self.v["c2c_lat"], str(round(rt / 2)))
        movs = min(x * c for x, c in zip(self.raw["rep"]["movsb_4k_l1"], self.raw["core_per_tsc"]))
        self.assertEqual(self.v["rep_line"], str(max(1, round(movs / 128))))
        mm = min(x * c for x, c in zip(self.raw["rep"]["movsb_64k_from_mem"],
                                       self.raw["core_per_tsc"]))
        self.assertEqual(self.v["rep_mem_line"], str(round((mm - 2048 * movs / 128) / 1024)))
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

    def test_unknown_cpu_falls_back_and_says_so(self):
        raw = copy.deepcopy(self.raw)
        raw["cpuid"]["model"] = 0x01
        entries, header, d = calibrate.derive(raw, raw["_topology"])
        v = {k: val for k, val, _ in entries}
        self.assertIn("NOT in the table", d["published"])
        self.assertTrue(any("NOT in the table" in h for h in header))
        sky = calibrate.read_profile(os.path.join(ROOT, "model", "profiles", "skylake-sp.cfg"))
        self.assertEqual(v["dtlb4k_entries"], sky["dtlb4k_entries"][0])
        raw["cpuid"]["vendor"] = "AuthenticAMD"
        _, _, d = calibrate.derive(raw, raw["_topology"])
        self.assertIn("zen3", d["published"])

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
