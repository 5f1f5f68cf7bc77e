"""tools/baremm docs: marker blocks, and the docs in this tree match their data."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT  # noqa: E402
from baremm_lib import docs  # noqa: E402


class BlocksTest(unittest.TestCase):
    TEXT = ("intro\n" + docs.BEGIN % "a" + "\nold a\n" + docs.END % "a" + "\nmiddle\n"
            + docs.BEGIN % "b" + "\n" + docs.END % "b" + "\nend\n")

    def test_replace(self):
        new = docs.replace_blocks(self.TEXT, {"a": "new a\n", "b": "| t |"})
        self.assertIn(docs.BEGIN % "a" + "\nnew a\n" + docs.END % "a", new)
        self.assertIn(docs.BEGIN % "b" + "\n| t |\n" + docs.END % "b", new)
        self.assertTrue(new.startswith("intro\n") and new.endswith("\nend\n"))
        self.assertNotIn("old a", new)
        # idempotent
        self.assertEqual(docs.replace_blocks(new, {"a": "new a\n", "b": "| t |"}), new)

    def test_missing_and_unknown_markers(self):
        with self.assertRaises(docs.DocsError):
            docs.replace_blocks(self.TEXT, {"a": "x"})           # b is not wanted
        with self.assertRaises(docs.DocsError):
            docs.replace_blocks(self.TEXT, {"a": "x", "b": "y", "c": "z"})

    def test_dirty_stamp_is_a_problem(self):
        problems = []
        self.assertIn("dirty", docs._stamp("abc-dirty", problems, "x"))
        self.assertEqual(len(problems), 1)
        self.assertIn("clean", docs._stamp("abc", problems, "x"))
        self.assertEqual(len(problems), 1)


class TreeTest(unittest.TestCase):
    def test_docs_match_their_data(self):
        """The generated blocks of docs/ equal a fresh render of baseline.json,
        linux-ref/reference.json and docs/data/ (fix: tools/baremm docs, make seeds)."""
        self.assertEqual(docs.check(ROOT), [])

    def test_drift_is_caught(self):
        files, problems = docs.render(ROOT)
        rel = os.path.join("docs", "RESULTS.md")
        old, new = files[rel]
        self.assertIn("| `vm-1cpu` | `vm.page_fault1.fault cpus=1` |", new)
        # a typed figure inside a block differs from the render
        edited = new.replace("| `vm-1cpu` | `vm.page_fault1.fault cpus=1` | ",
                             "| `vm-1cpu` | `vm.page_fault1.fault cpus=1` | 1", 1)
        self.assertNotEqual(docs.replace_blocks(edited, {
            n: g(ROOT, []) for n, g in docs.FILES[rel]}), edited)


if __name__ == "__main__":
    unittest.main()
