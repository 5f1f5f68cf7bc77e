"""CI formats of `tools/baremm test` (one KTAP document, JUnit XML) and `make host-test`
(tests/host/ktap_all.py): one document each, counts that add up, failures visible."""
import os
import stat
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, read  # noqa: E402
from baremm_lib import ciformats, ktap, logparse  # noqa: E402


def steps():
    boot = logparse.parse_log(read("lava_tests.log"))
    bad = {"documents": [{"tests": [{"name": "smp", "status": "fail", "tests": [
        {"name": "a", "status": "pass"},
        {"name": "b", "status": "fail", "diagnostics": ["x.c:1: expected 1 == 2"]},
        {"name": "c", "status": "skip", "reason": "needs 2 CPUs"}]}]}]}
    return [
        {"name": "tool-unittests", "ok": True, "problems": ["12 passed"], "ktap": None},
        {"name": "clang-build", "ok": True, "problems": [], "ktap": None,
         "skipped": "clang not installed"},
        {"name": "smp2-bios-max", "ok": True, "problems": [], "ktap": boot["ktap"]},
        {"name": "smp4-uefi", "ok": False, "problems": ["expected status pass, got test_failed"],
         "ktap": bad, "log": "results/x/serial.log"},
        {"name": "bad-option", "ok": True, "problems": [], "ktap": None},
    ], boot


class CombinedKtapTest(unittest.TestCase):
    def test_one_document_suite_per_step(self):
        st, boot = steps()
        text = ciformats.combined_ktap(st)
        k = ktap.parse_text(text)
        self.assertEqual(k.all_errors(), [])
        self.assertEqual(len(k.documents), 1)
        self.assertEqual([c.name for c in k.documents[0].root.children],
                         [s["name"] for s in st])
        c = k.counts()
        b = boot["ktap"]["counted"]
        # the boot's leaves + a check per step; failing: b and smp4-uefi's check
        self.assertEqual(c["fail"], 2)
        self.assertEqual(c["skip"], b["skip"] + 2)
        self.assertEqual(c["pass"], b["pass"] + 1 + 3)   # a; checks of 3 passing steps
        self.assertIn("not ok 4 smp4-uefi", text)
        self.assertIn("    # expected status pass, got test_failed", text)
        self.assertIn("ok 2 clang-build # SKIP clang not installed", text)
        self.assertTrue(text.rstrip().split("\n")[-1].startswith("# Totals: pass:"))

    def test_cut_suite_counts_as_a_failure(self):
        """A boot cut inside a suite (watchdog) leaves a suite with no tests: the document's
        totals count its failure, as KUnit's parser does (it read 1..0 + not ok as one
        failed test while # Totals said fail:1 of 2)."""
        log = ("KTAP version 1\n1..2\n    KTAP version 1\n    # Subtest: boot\n    1..1\n"
               "    ok 1 memory_map_sane\nok 1 boot\n    KTAP version 1\n"
               "    # Subtest: rcu\n    1..1\nWATCHDOG: CPU 0 waited\n"
               "BAREMM-END status=watchdog results=0\n")
        boot = ktap.parse_text(log).to_dict()
        st = [{"name": "smp4", "ok": False, "problems": ["got watchdog"], "ktap": boot}]
        text = ciformats.combined_ktap(st)
        self.assertIn("    # suite planned 1 tests, reported none (output cut)\n"
                      "    not ok 2 rcu\n", text)
        self.assertNotIn("1..0", text)
        self.assertTrue(text.endswith("# Totals: pass:1 fail:2 skip:0 total:3\n"))
        k = ktap.parse_text(text)
        self.assertEqual(k.all_errors(), [])
        self.assertEqual((k.counts()["pass"], k.counts()["fail"]), (1, 2))
        root = ET.fromstring(ciformats.junit_xml(st))
        self.assertEqual([tc.get("classname") + "." + tc.get("name")
                          for tc in root.iter("testcase") if tc.find("failure") is not None],
                         ["smp4.rcu", "smp4.check"])

    def test_junit(self):
        st, boot = steps()
        root = ET.fromstring(ciformats.junit_xml(st))
        self.assertEqual(root.tag, "testsuites")
        self.assertEqual([s.get("name") for s in root], [s["name"] for s in st])
        self.assertEqual(root.get("failures"), "2")
        fails = root.findall(".//failure")
        self.assertEqual(len(fails), 2)
        self.assertIn("expected 1 == 2", fails[0].text)
        self.assertEqual(int(root.get("tests")), sum(1 for _ in root.iter("testcase")))
        self.assertEqual(int(root.get("skipped")), boot["ktap"]["counted"]["skip"] + 2)


class HostKtapTest(unittest.TestCase):
    def script(self, d, name, body):
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)
        return p

    DOC = ("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n    1..2\n"
           "    ok 1 one\n%s    %s 2 two\n%s 1 %s\n# Totals: pass:1 fail:0 skip:0 total:2\n")

    def run_all(self, bins):
        return subprocess.run([sys.executable, os.path.join(ROOT, "tests", "host", "ktap_all.py")]
                              + bins, capture_output=True, text=True)

    def test_one_document(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.script(d, "a", "cat <<'E'\n%sE\n" % (self.DOC % ("a", "", "ok", "ok", "a")))
            b = self.script(d, "b", "echo 'meminfo: stray line'\ncat <<'E'\n%sE\n"
                            % (self.DOC % ("b", "    # x.c:3: expected\n", "not ok", "not ok",
                                           "b")))
            r = self.run_all([a, b])
        self.assertEqual(r.returncode, 1)
        k = ktap.parse_text(r.stdout)
        self.assertEqual(k.all_errors(), [])
        self.assertEqual(len(k.documents), 1)
        self.assertEqual(k.counts()["pass"], 3)
        self.assertEqual(k.counts()["fail"], 1)
        self.assertIn("    # meminfo: stray line", r.stdout)
        self.assertEqual(r.stdout.count("KTAP version 1\n1.."), 1)

    def test_crash_and_bad_exit_are_failures(self):
        with tempfile.TemporaryDirectory() as d:
            ok = self.script(d, "ok", "cat <<'E'\n%sE\n" % (self.DOC % ("ok", "", "ok", "ok", "ok")))
            # says ok but exits 1 (a sanitizer report at exit)
            lie = self.script(d, "lie", "cat <<'E'\n%sE\nexit 1\n"
                              % (self.DOC % ("lie", "", "ok", "ok", "lie")))
            crash = self.script(d, "crash", "printf 'KTAP version 1\\n1..1\\n    KTAP version 1\\n"
                                "    # Subtest: crash\\n    1..2\\n    ok 1 one\\n'\nkill -SEGV $$\n")
            r = self.run_all([ok, lie, crash])
        self.assertEqual(r.returncode, 1)
        self.assertIn("not ok 2 lie", r.stdout)
        self.assertIn("not ok 3 crash", r.stdout)
        self.assertIn("exited with status 1", r.stdout)
        k = ktap.parse_text(r.stdout)
        self.assertEqual(len(k.documents), 1)
        self.assertTrue(k.all_errors())     # the crashed suite's short plan
        self.assertEqual(set(k.failures()) >= {"lie", "crash"}, True, k.failures())
