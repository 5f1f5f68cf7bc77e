import unittest

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import read  # noqa: E402  (also puts tools/ on sys.path)
from baremm_lib import ktap, logparse


class KtapTest(unittest.TestCase):
    def test_nested_pass_and_skip(self):
        p = logparse.parse_log(read("tests_pass_bios.log"))
        k = p["ktap"]
        self.assertTrue(k["present"])
        self.assertEqual(k["plan"], 3)
        self.assertEqual(k["counted"]["pass"], 6)
        self.assertEqual(k["counted"]["fail"], 0)
        self.assertEqual(k["counted"]["skip"], 1)
        self.assertEqual(k["counted"]["total"], 7)
        self.assertEqual(k["totals"], {"pass": 6, "fail": 0, "skip": 1, "total": 7})
        self.assertEqual(k["errors"], [])
        suites = k["documents"][0]["tests"]
        self.assertEqual([s["name"] for s in suites], ["options", "smp", "fault"])
        skip = suites[1]["tests"][2]
        self.assertEqual(skip["status"], "skip")
        self.assertEqual(skip["reason"], "PCID not available under TCG")
        # a diagnostic before a result line belongs to that test
        self.assertIn("fault: caught #PF at ffff800000001000 as expected",
                      suites[2]["tests"][0]["diagnostics"])

    def test_not_ok(self):
        p = logparse.parse_log(read("tests_fail_uefi.log"))
        k = p["ktap"]
        self.assertEqual(k["counted"]["fail"], 1)
        self.assertEqual(k["counted"]["pass"], 2)
        self.assertEqual(k["failures"], ["memmap.absurd_range"])
        self.assertEqual(k["errors"], [])
        self.assertEqual(p["status"], "test_failed")
        self.assertEqual(p["machine"]["firmware"], "uefi")

    def test_missing_plan(self):
        p = logparse.parse_log(read("ktap_missing_plan.log"))
        msgs = [e["message"] for e in p["ktap"]["errors"]]
        self.assertTrue(any("no plan" in m for m in msgs), msgs)

    def test_missing_totals(self):
        p = logparse.parse_log(read("ktap_missing_totals.log"))
        msgs = [e["message"] for e in p["ktap"]["errors"]]
        self.assertTrue(any("Totals" in m for m in msgs), msgs)
        self.assertEqual(p["ktap"]["counted"]["pass"], 2)

    def test_totals_mismatch(self):
        k = ktap.parse_text("KTAP version 1\n1..2\nok 1 a\nok 2 b\n"
                            "# Totals: pass:3 fail:0 skip:0 total:3\n")
        msgs = [m for _, m in k.all_errors()]
        self.assertTrue(any("pass:3" in m for m in msgs), msgs)
        self.assertTrue(any("total:3" in m for m in msgs), msgs)

    def test_plan_count_mismatch(self):
        k = ktap.parse_text("KTAP version 1\n1..3\nok 1 a\nok 2 b\n"
                            "# Totals: pass:2 fail:0 skip:0 total:2\n")
        msgs = [m for _, m in k.all_errors()]
        self.assertTrue(any("planned 3" in m for m in msgs), msgs)

    def test_truncated_suite(self):
        k = ktap.parse_text("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n"
                            "    1..2\n    ok 1 a\n")
        msgs = [m for _, m in k.all_errors()]
        self.assertTrue(any("truncated" in m for m in msgs), msgs)
        self.assertGreaterEqual(k.counts()["fail"], 1)

    def test_crashed_suite_without_failed_leaf_counts_as_failure(self):
        k = ktap.parse_text("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n"
                            "    1..1\n    ok 1 a\nnot ok 1 s\n"
                            "# Totals: pass:1 fail:0 skip:0 total:1\n")
        self.assertEqual(k.counts()["fail"], 1)
        self.assertEqual(k.failures(), ["s"])

    def test_not_ok_skip_is_skip(self):
        k = ktap.parse_text("KTAP version 1\n1..1\nnot ok 1 x # SKIP no hw\n"
                            "# Totals: pass:0 fail:0 skip:1 total:1\n")
        self.assertEqual(k.counts()["skip"], 1)
        self.assertEqual(k.counts()["fail"], 0)
        self.assertEqual(k.all_errors(), [])

    def test_several_documents(self):
        k = ktap.parse_text(read("host_tests.txt").decode())
        self.assertEqual(len(k.documents), 2)
        c = k.counts()
        self.assertEqual((c["pass"], c["fail"], c["skip"]), (4, 1, 0))
        self.assertEqual(k.failures(), ["memblock.overlap"])
        self.assertEqual(k.all_errors(), [])

    def test_ignores_non_ktap_lines(self):
        k = ktap.parse_text("KTAP version 1\n1..1\ncpu1: online\n    KTAP version 1\n"
                            "    # Subtest: s\n    1..1\n    random text\n    ok 1 a\nok 1 s\n"
                            "# Totals: pass:1 fail:0 skip:0 total:1\n")
        self.assertEqual(k.all_errors(), [])
        self.assertEqual(k.counts()["pass"], 1)

    def test_wrong_test_number(self):
        k = ktap.parse_text("KTAP version 1\n1..2\nok 1 a\nok 3 b\n"
                            "# Totals: pass:2 fail:0 skip:0 total:2\n")
        self.assertTrue(any("number 3" in m for _, m in k.all_errors()))


if __name__ == "__main__":
    unittest.main()
