"""Every aligned-text printer of the tools, byte for byte, against outputs recorded in
tests/tools/data/printers/ (real inputs: the recorded logs and docs/data). A printer whose
layout changes fails here; when the change is intended, rewrite the recordings with
`python3 tests/tools/test_printers.py --record` and review the diff."""
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DATA, ROOT, read  # noqa: E402
from baremm_lib import cli, compare, experiment as ex, logparse, modelerror, panel  # noqa: E402
from baremm_lib import perfcheck as pc, runner  # noqa: E402

RECORDED = os.path.join(DATA, "printers")
DOC_DATA = os.path.join(ROOT, "docs", "data")

PERF_CFG = """
tolerance=3
[vm]
cmdline=x
smp=1
tolerance.vm.refpage.cycle[[]touch_permille:0]*=50
[seed001]
cmdline=y
smp=2
tolerance=10%
[tlb]
cmdline=z
"""


def _load(name):
    with open(os.path.join(DOC_DATA, name)) as f:
        return json.load(f)


def _rec(name):
    r, _ = runner.record_from_log(os.path.join(DATA, name))
    return r


def compare_outputs():
    out = {}
    a = logparse.parse_log(read("bench_base.log"))
    b = logparse.parse_log(read("bench_new.log"))
    sides = compare.compare_sides([("base", a["results"], a["machine"]),
                                   ("new", b["results"], b["machine"])])
    ab = logparse.parse_log(read("bench_ab.log"))
    variants = compare.compare_variants("ab", ab["results"], ab["machine"])
    for name, c in (("sides", sides), ("variants", variants)):
        out["compare-%s.txt" % name] = compare.format_text(c)
        out["compare-%s.md" % name] = compare.format_markdown(c)
    out["results-table.txt"] = compare.results_table(a["results"])
    out["results-table-empty.txt"] = compare.results_table([])
    for log in ("bench_base.log", "bench_ab.log"):
        s = io.StringIO()
        cli.print_record(_rec(log), s)
        out["record-%s.txt" % log[:-4]] = s.getvalue()
    return out


def experiment_outputs():
    out, summaries = {}, []
    for ident in ex.ORDER:
        for mode in ("tcg", "icount", "model-skylake-sp"):
            name = "seed-%s-%s.json" % (ident, mode)
            s = _load(name)
            e = ex.EXPERIMENTS[ident]
            text, _ = ex.report(e, s["results"], s.get("machine"), s["icount"],
                                s["cmdlines"], model=s.get("model"))
            out["report-%s-%s.txt" % (ident, mode)] = text
            summaries.append(s)
    e = ex.EXPERIMENTS["001"]
    s = _load("seed-001-icount.json")
    out["events-001-all.txt"] = ex.events_table(e, ex.selected(e, s["results"]),
                                                all_events=True)
    out["events-none.txt"] = ex.events_table(e, [])
    out["summary-table.txt"] = ex.summary_table(summaries)
    return out


def perf_outputs():
    c = pc.parse_cfg(PERF_CFG)
    vm, s1, tlb = c["entries"]
    cur = pc.figures_of(vm, _rec("seed004_icount.log"))
    cur.update(pc.figures_of(s1, _rec("seed001_icount.log")))
    cur.update(pc.figures_of(tlb, _rec("seed000_icount.log")))
    key = {str(k): k for k in cur}
    vm = "vm: vm.refpage.cycle[touch_permille:%s] cpus=1 [refpage_init:%s]"
    slow, tol = key[vm % (500, "refpage")], key[vm % (0, "refpage")]
    fast = key["seed001: tlb.page_fault3_threads.fault cpus=2 [rmapbatch:multi]"]
    base = {k: dict(v, events=dict(v["events"])) for k, v in cur.items()}
    base[slow]["median"] = cur[slow]["median"] / 1.04              # SLOWER, 4 % > 3 %
    for e in sorted(base[slow]["events"])[:2]:
        base[slow]["events"][e] = base[slow]["events"][e] * 2 + 1
    base[fast]["median"] = cur[fast]["median"] * 1.2               # faster
    base[tol]["median"] = cur[tol]["median"] / 1.4                 # within its 50 %
    del base[key[vm % (1000, "zeropage")]]                          # new
    del cur[key[vm % (0, "memset")]]                                # MISSING
    cur = {k: v for k, v in cur.items() if not str(k).startswith("tlb: ")}
    rows, counts = pc.compare_figures(base, cur, [("tlb", "boot ended with status panic"),
                                                  ("gone", "watchdog")])
    return {"perf-rows.txt": pc.format_rows(rows) + "%(passed)d passed, %(failed)d failed\n"
            % counts}


# the panels the recordings were made from, frozen (docs/data's are re-recorded with the model)
PANEL_INPUTS = os.path.join(DATA, "panel-inputs")


def panel_outputs():
    out = {}
    for prof in ("host", "skylake-sp", "zen3"):
        s = io.StringIO()
        with open(os.path.join(PANEL_INPUTS, "native-panel-%s.json" % prof)) as f:
            panel.table(json.load(f), s)
        out["panel-%s.txt" % prof] = s.getvalue()
    return out


def render_all():
    out = {}
    # the verdicts' model error comes from the panels too: the frozen ones
    saved, modelerror.DATA_DIR = modelerror.DATA_DIR, PANEL_INPUTS
    try:
        for f in (compare_outputs, experiment_outputs, perf_outputs, panel_outputs):
            out.update(f())
    finally:
        modelerror.DATA_DIR = saved
    return out


class PrintersTest(unittest.TestCase):
    def test_outputs_unchanged(self):
        got = render_all()
        self.assertEqual(sorted(got), sorted(os.listdir(RECORDED)))
        for name, text in sorted(got.items()):
            with open(os.path.join(RECORDED, name)) as f:
                self.assertEqual(text, f.read(), name)

    def test_recordings_are_tables(self):
        """The recordings hold real tables (a printer that printed nothing cannot pass)."""
        with open(os.path.join(RECORDED, "perf-rows.txt")) as f:
            perf = f.read()
        for verdict in ("SLOWER", "faster", "pass", "new", "MISSING", "BOOT"):
            self.assertIn(verdict, perf)
        with open(os.path.join(RECORDED, "panel-skylake-sp.txt")) as f:
            self.assertGreater(len(f.read().splitlines()), 20)


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        os.makedirs(RECORDED, exist_ok=True)
        for n, t in render_all().items():
            with open(os.path.join(RECORDED, n), "w") as f:
                f.write(t)
    else:
        unittest.main()
