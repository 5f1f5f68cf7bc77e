"""tools/baremm_lib/table.py: aligned text and Markdown from one column description."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401
from baremm_lib import table as T  # noqa: E402


class TextTest(unittest.TestCase):
    def test_widths_alignment_rule(self):
        cols = T.columns(["name", "n", "note"], left=(0, 2))
        got = T.text(cols, [["a", 1, "x"], ["bbbbbb", 22, ""]], rule=True)
        self.assertEqual(got, "name     n  note\n"
                              "------  --  ----\n"
                              "a        1  x\n"
                              "bbbbbb  22\n")

    def test_trailing_blanks_dropped_and_separator(self):
        cols = [T.Column("a", T.LEFT), T.Column("b", T.LEFT)]
        self.assertEqual(T.text_lines(cols, [["xyz", ""]], sep=" | "), ["a   | b", "xyz |"])

    def test_fixed_width_overflows_like_printf(self):
        cols = [T.Column("k", T.LEFT, 4), T.Column("v", width=3)]
        lines = T.text_lines(cols, [["ab", 7], ["abcdef", 12345]], sep=" ")
        self.assertEqual(lines, ["%-4s %3s" % ("k", "v"), "%-4s %3d" % ("ab", 7),
                                 "%-4s %3d" % ("abcdef", 12345)])

    def test_no_head(self):
        self.assertEqual(T.text(T.columns(["h"]), [["1"], ["22"]], head=False), " 1\n22\n")

    def test_bad_tables(self):
        with self.assertRaises(ValueError):
            T.text(T.columns(["a", "b"]), [["1"]])
        with self.assertRaises(ValueError):
            T.markdown(T.columns(["a"]), [["1", "2"]])
        with self.assertRaises(ValueError):
            T.Column("a", "centre")


class MarkdownTest(unittest.TestCase):
    def test_alignment_and_escape(self):
        cols = T.columns(["what", "a|b", "n"], left=(0, 1))
        self.assertEqual(T.markdown(cols, [["x|y", "`z`", 3]]),
                         "| what | a\\|b | n |\n"
                         "|---|---|---:|\n"
                         "| x\\|y | `z` | 3 |")

    def test_empty_body(self):
        self.assertEqual(T.markdown(T.columns(["a"]), []), "| a |\n|---:|")


if __name__ == "__main__":
    unittest.main()
