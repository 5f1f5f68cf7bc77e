"""The LAVA test-monitor patterns of docs/OUTPUT.md section 8, read from the document and
applied as LAVA applies them (a search over the stream from `start` to `end`), on recorded
real logs: they must yield exactly the KTAP results and one case per figure."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, read  # noqa: E402
from baremm_lib import logparse  # noqa: E402


def monitors():
    with open(os.path.join(ROOT, "docs", "OUTPUT.md")) as f:
        text = f.read()
    sec = text[text.index("## 8. Line-matching CI"):]
    out = {}
    for m in re.finditer(r"- name: (\S+)\n  start: '([^']*)'\n  end: '([^']*)'\n"
                         r"  pattern: '([^']*)'\n  fixupdict: (\{[^}]*\})", sec):
        out[m.group(1)] = {"start": m.group(2), "end": m.group(3),
                           "pattern": re.compile(m.group(4), re.DOTALL),   # as pexpect
                           "fixup": eval(m.group(5), {})}   # a literal dict from our doc
    return out


def lava(mon, text):
    """[(test_case_id, result, groupdict)] as a LAVA monitor would record them."""
    start = text.index(mon["start"]) + len(mon["start"])
    end = text.index(mon["end"], start)
    return [(m.group("test_case_id"), mon["fixup"][m.group("result")], m.groupdict())
            for m in mon["pattern"].finditer(text, start, end)]


def ktap_results(parsed):
    out = []

    def walk(tests):
        for t in tests:
            if "tests" in t:
                walk(t["tests"])
            out.append((t["line"], t["name"], t["status"]))
    for d in parsed["ktap"]["documents"]:
        walk(d["tests"])
    return [(n, s) for _, n, s in sorted(out)]


class LavaPatternTest(unittest.TestCase):
    def setUp(self):
        self.mon = monitors()
        self.assertEqual(sorted(self.mon), ["baremm-figures", "baremm-ktap"])

    def test_ktap_monitor_yields_exactly_the_ktap_results(self):
        raw = read("lava_tests.log").decode("utf-8", "replace")
        parsed = logparse.parse_log(raw)
        want = ktap_results(parsed)
        self.assertGreater(len(want), 40)
        self.assertIn("skip", {s for _, s in want})
        got = [(i, r) for i, r, _ in lava(self.mon["baremm-ktap"], raw)]
        self.assertEqual(got, want)
        self.assertEqual(lava(self.mon["baremm-figures"], raw), [])

    def test_naive_pattern_finds_no_fake_passes(self):
        """`ok N name` anywhere in a line: only the KTAP result lines match."""
        raw = read("lava_tests.log").decode("utf-8", "replace")
        naive = re.findall(r"(ok|not ok) (\d+) (\S+)", raw)
        self.assertIn("duration", raw)
        self.assertEqual(len(naive), len(ktap_results(logparse.parse_log(raw))))

    def test_figures_monitor_one_unique_case_per_figure(self):
        raw = read("lava_bench.log").decode("utf-8", "replace")
        parsed = logparse.parse_log(raw)
        self.assertEqual(parsed["errors"], [])
        got = lava(self.mon["baremm-figures"], raw)
        self.assertEqual(len(got), len(parsed["results"]))
        self.assertGreaterEqual(len(got), 4)
        ids = [i for i, _, _ in got]
        self.assertEqual(len(set(ids)), len(ids))
        for (i, res, g), r in zip(got, parsed["results"]):
            self.assertEqual(res, "pass")
            self.assertEqual(i, r["extra"]["id"])
            self.assertEqual(float(g["measurement"]), r["median"])
            self.assertEqual(g["units"], r["unit"])
            self.assertIn(r["bench"], i)
            self.assertIn("cpus%d" % r["cpus"], i)
        self.assertEqual(lava(self.mon["baremm-ktap"], raw.replace("BAREMM-MACHINE", "KTAP version 1")), [])
