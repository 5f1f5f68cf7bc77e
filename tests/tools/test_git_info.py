"""runner.git_info: a tree is dirty when its tracked code differs from the revision;
the recorded data the tools save into the tree (RECORDED_DATA) and untracked files are
not code."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401
from baremm_lib import runner  # noqa: E402


class GitInfoTest(unittest.TestCase):
    def test_recorded_data_is_not_a_code_change(self):
        with tempfile.TemporaryDirectory() as d:
            def git(*args):
                subprocess.run(["git", "-C", d, "-c", "user.name=t", "-c", "user.email=t@t"]
                               + list(args), check=True, capture_output=True)

            def write(rel, text):
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w") as f:
                    f.write(text)
            # a scratch repository laid out like ours (paths joined, not ours to resolve)
            code = os.path.join("mm", "a.c")
            data = os.path.join("docs", "data", "p.json")
            base = os.path.join("tests", "perf", "baseline.json")
            prose = os.path.join("docs", "a.md")
            git("init", "-q")
            for rel in (code, data, base, prose):
                write(rel, "1\n")
            git("add", "-A")
            git("commit", "-q", "-m", "x")
            self.assertEqual(runner.git_info(d)["dirty"], False)
            write(data, "2\n")                          # a recording saved
            write(base, "2\n")
            write(os.path.join("results", "x.log"), "new\n")     # untracked
            info = runner.git_info(d)
            self.assertEqual(info["dirty"], False)
            self.assertEqual(len(info["rev"]), 40)
            write(prose, "2\n")                         # prose is tracked work, not data
            self.assertEqual(runner.git_info(d)["dirty"], True)
            git("checkout", prose)
            write(code, "2\n")
            self.assertEqual(runner.git_info(d)["dirty"], True)


if __name__ == "__main__":
    unittest.main()
