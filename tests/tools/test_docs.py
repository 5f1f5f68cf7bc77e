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


class CoreComparisonTest(unittest.TestCase):
    """The in-order vs out-of-order block of a seed (docs.core_comparison)."""

    def test_figures_ratio_and_claims_under_both_cores(self):
        import copy
        import json
        from baremm_lib import experiment as ex
        with open(os.path.join(ROOT, "docs", "data", "seed-003-model-skylake-sp.json")) as f:
            s_in = json.load(f)
        # an in-order run recorded before the plugin printed part.* fields: no breakdown
        s_parts = copy.deepcopy(s_in)
        for r in s_in["results"]:
            r["extra"] = {k: v for k, v in r.get("extra", {}).items() if not k.startswith("part.")}
        s_ooo = copy.deepcopy(s_in)
        s_ooo["model_args"] = "core=ooo"
        for r in s_ooo["results"]:
            r["median"] /= 4
            r["extra"]["part.cache"] = "0.5"
        text = docs.core_comparison(ex.EXPERIMENTS["003"], s_in, s_ooo, "skylake-sp")
        self.assertIn("What the out-of-order core changed, profile skylake-sp", text)
        self.assertIn("| 0.25 |", text)
        self.assertRegex(text, r"cache [0-9.]+\* -> 0\.50")   # in-order: its charge event
        # with the in-order run's own breakdown (the saved run has one), its part is shown
        # without the mark
        self.assertTrue(any(k.startswith("part.cache") for r in s_parts["results"]
                            for k in r.get("extra", {})))
        text2 = docs.core_comparison(ex.EXPERIMENTS["003"], s_parts, s_ooo, "skylake-sp")
        self.assertRegex(text2, r"cache [0-9.]+ -> 0\.50")
        self.assertNotRegex(text2, r"cache [0-9.]+\* -> 0\.50")
        self.assertIn("Claims, in-order -> out-of-order", text)
        # a run with no common figure says so instead of an empty table
        s_ooo["results"] = []
        self.assertIn("no figure in both runs",
                      docs.core_comparison(ex.EXPERIMENTS["003"], s_in, s_ooo, "skylake-sp"))


class HostRunsTest(unittest.TestCase):
    """Seed runs under the host profile are shown per CPU, each core's that was recorded,
    with the core comparison when both are there (docs.host_blocks)."""

    def test_blocks_per_cpu(self):
        import json
        import shutil
        import tempfile
        from baremm_lib import experiment as ex
        with open(os.path.join(ROOT, "docs", "data", "seed-003-model-skylake-sp.json")) as f:
            s = json.load(f)
        d = tempfile.mkdtemp()
        try:
            data = os.path.join(d, "docs", "data")
            os.makedirs(data)
            s.update(model="host", cpu_id="GenuineIntel 6 167 1", profile_text="x = 1\n")
            for name in ("seed-003-model-host-intel-6-a7.json", "seed-003-model-host-intel-6-a7-ooo.json",
                         "seed-003-model-host-amd-19-11-ooo.json"):
                with open(os.path.join(data, name), "w") as f:
                    json.dump(dict(s, model_args="core=ooo" if "ooo" in name else ""), f)
            runs = docs.host_runs(d, "003")
            self.assertEqual([r[0] for r in runs], ["host-amd-19-11", "host-intel-6-a7"])
            self.assertIsNone(runs[0][1])                      # AMD: out-of-order only
            problems = []
            text = "\n\n".join(docs.host_blocks(d, ex.EXPERIMENTS["003"], problems))
            self.assertIn("Profile host on amd-19-11", text)
            self.assertIn("In-order core: not recorded on this CPU", text)
            self.assertIn("Profile host on intel-6-a7", text)
            self.assertEqual(text.count("What the out-of-order core changed, profile host"), 1)
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
