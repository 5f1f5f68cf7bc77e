"""`tools/baremm docs [--check]`: the figures in docs/ are generated, not typed.

Blocks between marker comments

    <!-- BEGIN generated NAME: tools/baremm docs writes this block; do not edit -->
    ...
    <!-- END generated NAME -->

are rewritten from data files:

- docs/RESULTS.md `perf-baseline`: tests/perf/baseline.json (`make perf-baseline`);
- docs/RESULTS.md `linux-vs-baremm`: tools/linux-ref/reference.json against the baseline;
- docs/EXPERIMENTS.md `seed-NNN`: docs/data/seed-NNN-{tcg,icount}.json, the saved
  experiment runs (`make seeds`), with the verdict recomputed from the saved figures.
- docs/TLB.md `shootdown-model`: docs/data/shootdown-model-skylake-sp.json, the saved
  shootdown sweep under the cost model (`tools/baremm shootdown-sweep --save docs/data`);
  `shootdown-model-causal-off`: the same with `BAREMM_MODEL_ARGS=causal=off` (-causal_off.json);
  `shootdown-model-zen3`: the sweep under profile zen3 (shootdown-model-zen3.json);
  `shootdown-model-ooo`: skylake-sp under the out-of-order core (-core_ooo.json).
- docs/EXPERIMENTS.md also shows each seed's model run under the out-of-order core
  (seed-NNN-model-PROFILE-ooo.json, pending until recorded) and what that core changed.
- docs/COSTMODEL.md `native-panel`: docs/data/native-panel-<name>.json, the native
  panels (`tools/baremm native-panel --model PROFILE --save docs/data`; the host
  profile's per CPU, each profile under both cores); `model-speed`:
  docs/data/model-speed-<N>cpu.json (`tools/baremm model-speed --smp N --save docs/data`).

Each block names the build its figures came from; a build of a dirty tree is a problem.
`--check` regenerates in memory and fails (exit 1) when a file differs or a stamp is
dirty: tests/tools/test_docs.py runs the same check, so `make test` fails on drift.
"""
import glob
import json
import os
import re
import sys

from . import compare, experiment as ex, panel, perfcheck, runner, speed, sweep, table, verdict
from .figure import Figure

DATA_DIR = os.path.join("docs", "data")
BEGIN = "<!-- BEGIN generated %s: tools/baremm docs writes this block; do not edit -->"
END = "<!-- END generated %s -->"
BLOCK_RE = re.compile(r"<!-- BEGIN generated (\S+): [^>]*-->\n.*?<!-- END generated \1 -->",
                      re.S)
MODES = (("tcg", False), ("icount", True))


class DocsError(Exception):
    pass


def _load(path):
    with open(path) as f:
        return json.load(f)


def _stamp(build, problems, what):
    if not build:
        problems.append("%s: no build id" % what)
        return "build unknown"
    if build.endswith("-dirty"):
        problems.append("%s: figures from a dirty tree (build %s); commit, then rerun" %
                        (what, build))
        return "build `%s` (**dirty tree**)" % build
    return "build `%s` (clean tree)" % build


def _num(v):
    return compare.fmt_num(v)


# ---------------------------------------------------------------- RESULTS.md

def gen_baseline(root, problems):
    path = os.path.join(root, perfcheck.BASELINE)
    b = _load(path)
    g = b.get("git", {})
    build = (g.get("rev") or "")[:12] + ("-dirty" if g.get("dirty") else "")
    rows = []
    for fig, f in perfcheck.by_name(perfcheck.baseline_figures(b)):
        unit = "instructions" if f["unit"] == "cycles" else f["unit"]
        rows.append(["`%s`" % fig.entry, "`%s`" % fig.name(), _num(f["median"]), unit,
                     f["runs"]])
    head = "Source: `%s`, %s; %s; %s. %d figures, each the median of its runs." % (
        perfcheck.BASELINE, _stamp(build, problems, perfcheck.BASELINE),
        b.get("qemu_version", "QEMU ?"), b.get("compiler", "compiler ?"), len(rows))
    return head + "\n\n" + table.markdown(table.columns(
        ["perf.cfg entry", "figure", "median / op", "unit", "runs"], left=(0, 1)), rows)


# baremm figure of the baseline for each Linux reference row
LINUX_ROWS = tuple((what, key, Figure.parse(ours) if ours else None) for what, key, ours in (
    ("page fault, 8 MiB anonymous, map/unmap amortised (per fault)", "pf1 8MiB",
     "vm-1cpu: vm.page_fault1.fault cpus=1"),
    ("fork + exit of a 1 GiB sparse space (per table)", "sparse_fork gib=1,slot=0",
     "vm-1cpu: vm.sparse_tables.table[gib:1] cpus=1"),
    ("the same without fork/exit's fixed cost (per table)", "sparse_fork_marginal gib=1,slot=0",
     "vm-1cpu: vm.sparse_tables.table[gib:1] cpus=1"),
    ("fork + exit, 16 GiB (per table)", "sparse_fork gib=16,slot=0",
     "vm-1cpu: vm.sparse_tables.table[gib:16] cpus=1"),
    ("map + 1 read per 2 MiB + munmap, 1 GiB (per table)", "sparse_munmap gib=1,slot=0",
     "vm-1cpu: vm.sparse_tables_munmap.table[gib:1] cpus=1"),
    ("the same, 16 GiB (per table)", "sparse_munmap gib=16,slot=0",
     "vm-1cpu: vm.sparse_tables_munmap.table[gib:16] cpus=1"),
    ("fork + exit + wait of a tiny process (per fork)", "fork_empty -", None),
))


def gen_linux(root, problems):
    ref = _load(os.path.join(root, "tools", "linux-ref", "reference.json"))
    b = _load(os.path.join(root, perfcheck.BASELINE))
    figs = perfcheck.baseline_figures(b)
    mx, er = ref["sets"]["max"], ref["sets"]["erms-off"]
    rows = []
    for what, key, ours in LINUX_ROWS:
        lm, le = mx["figures"][key], er["figures"][key]
        o = figs.get(ours) if ours else None
        if ours and o is None:
            problems.append("linux-vs-baremm: %s is not in the baseline" % ours)
        om = o["median"] if o else None
        rows.append([what, "`%s`" % key, _num(lm), _num(le),
                     "`%s` %s" % (ours.name(), _num(om)) if o else "-",
                     "%.2f" % (om / lm) if o else "-", "**%.2f**" % (om / le) if o else "-"])
    g = b.get("git", {})
    build = (g.get("rev") or "")[:12] + ("-dirty" if g.get("dirty") else "")
    head = ("Linux: %s, %s, %s, from `tools/linux-ref/reference.json` (commands: `%s`; "
            "`%s`). baremm: `%s`, %s. Unit: %s per operation." % (
                ref["kernel"], ref["qemu"], ref["mode"], mx["command"], er["command"],
                perfcheck.BASELINE, _stamp(build, problems, "linux-vs-baremm"),
                ref["unit"]))
    return head + "\n\n" + table.markdown(table.columns(
        ["work (op)", "Linux figure", "Linux, -cpu max", "Linux -erms (rep stosq)",
         "baremm", "baremm / Linux", "baremm / Linux -erms"], left=(0, 1)), rows)


def gen_linux_model(root, problems):
    """The same rows in model cycles: Linux and baremm booted under the cost model with
    the same profile and core (reference.json sets model:<profile>[,core=ooo],
    baseline-model-<profile>[-ooo].json). The out-of-order core's are pending until
    recorded; the in-order core's must be there."""
    ref = _load(os.path.join(root, "tools", "linux-ref", "reference.json"))
    out = []
    for prof in runner.model_profiles(root):
        for args in ("", runner.OOO_ARGS):
            out += _linux_model_core(root, ref, prof, args, problems)
    return "\n\n".join(out)


def _linux_model_core(root, ref, prof, args, problems):
    """The paragraphs of gen_linux_model for one profile and core."""
    name = verdict.reference_set_name(ref, prof, args)
    lset = ref["sets"].get(name)
    base = perfcheck.model_baseline(prof, args)
    bpath = os.path.join(root, base)
    env = "BAREMM_MODEL_ARGS=%s " % args if args else ""
    core = "out-of-order" if args else "in-order"
    if lset is None or not os.path.exists(bpath):
        if not args:
            problems.append("linux-vs-baremm-model: no %s for profile %s" % (
                "%s set in tools/linux-ref/reference.json" % name if lset is None else base, prof))
        return ["**%s, %s core**: %s (`%stools/linux-ref/run.sh boot 1 model:%s all`, "
                "`%stools/baremm perf-check --update --model %s --only vm-1cpu`)."
                % (prof, core, "pending" if args else "not measured", env, prof, env, prof)]
    b = _load(bpath)
    figs = perfcheck.baseline_figures(b)
    g = b.get("git", {})
    build = (g.get("rev") or "")[:12] + ("-dirty" if g.get("dirty") else "")
    rows = []
    for what, key, ours in LINUX_ROWS:
        lm = lset["figures"].get(key)
        o = figs.get(ours) if ours else None
        if ours and o is None:
            problems.append("linux-vs-baremm-model: %s is not in %s" % (ours, bpath))
        if lm is None:
            continue
        om = o["median"] if o else None
        instr = ref["sets"][ref["reference_set"]]["figures"].get(key)
        rows.append([what, "`%s`" % key, _num(lm), "%.2f" % (lm / instr) if instr else "-",
                     "`%s` %s" % (ours.name(), _num(om)) if o else "-",
                     "**%.2f**" % (om / lm) if o else "-"])
    return ["**Profile %s, %s core.** Linux: `%s`. baremm: `%s`, %s. Unit: model cycles per "
            "operation." % (prof, core, lset["command"], base, _stamp(build, problems, base)),
            table.markdown(table.columns(
                ["work (op)", "Linux figure", "Linux, model cycles",
                 "Linux cycles per -erms instruction", "baremm, model cycles", "baremm / Linux"],
                left=(0, 1)), rows)]


# ---------------------------------------------------------------- EXPERIMENTS.md

def gen_seed(ident):
    def gen(root, problems):
        exp = ex.EXPERIMENTS[ident]
        parts = []
        modes = [(mode, icount, None, "") for mode, icount in MODES] + \
            [("model " + p + suffix, True, p, args) for p in runner.model_profiles(root)
             for suffix, args in (("", ""), (", out-of-order core", runner.OOO_ARGS))]
        runs = {}
        for mode, icount, model, margs in modes:
            path = os.path.join(root, DATA_DIR, ex.data_name(ident, icount, model=model,
                                                              model_args=margs))
            if not os.path.exists(path) and margs:
                # the out-of-order core's runs are recorded as they come: pending, not a
                # failure (the in-order core's are the default and must be there)
                parts.append("**%s**: pending (`BAREMM_MODEL_ARGS=%s tools/baremm experiment "
                             "%s --model %s --save docs/data` writes `%s`)." % (
                                 mode, margs, ident, model, os.path.relpath(path, root)))
                continue
            if not os.path.exists(path):
                how = ("BAREMM_MODEL_ARGS=%s tools/baremm experiment all --model %s --save "
                       "docs/data" % (margs, model) if margs else
                       "make seeds MODEL=%s" % model if model else "make seeds")
                problems.append("%s: missing (run `%s`)" % (os.path.relpath(path, root), how))
                parts.append("**%s**: no saved run (`%s` writes `%s`)." % (
                    mode, how, os.path.relpath(path, root)))
                continue
            data = _load(path)
            if model:
                runs[(model, bool(margs))] = data
            parts.append(seed_block(exp, data, icount, problems,
                                    os.path.relpath(path, root), model=model))
            if margs and (model, False) in runs:
                parts.append(core_comparison(exp, runs[(model, False)], data, model))
        parts += host_blocks(root, exp, problems)
        return "\n\n".join(parts)
    return gen


def host_runs(root, ident):
    """The seed's runs under the host profile, per CPU they were recorded on:
    [(cpu tag, in-order data or None, its path, out-of-order data or None, its path)]."""
    tags = set()
    for path in glob.glob(os.path.join(root, DATA_DIR, "seed-%s-model-host-*.json" % ident)):
        tag = os.path.basename(path)[len("seed-%s-model-" % ident):-len(".json")]
        tags.add(tag[:-len("-ooo")] if tag.endswith("-ooo") else tag)
    out = []
    for tag in sorted(tags):
        got = []
        for suffix in ("", "-ooo"):
            path = os.path.join(root, DATA_DIR, "seed-%s-model-%s%s.json" % (ident, tag, suffix))
            got += [_load(path) if os.path.exists(path) else None, os.path.relpath(path, root)]
        out.append((tag,) + tuple(got))
    return out


def host_blocks(root, exp, problems):
    """The host profile's runs, one CPU after the other: each core's block and what the
    out-of-order core changed. A CPU's profile is its own calibration (kept in the data),
    so these stand beside the published profiles' runs, never in their place."""
    parts = []
    for tag, s_in, p_in, s_ooo, p_ooo in host_runs(root, exp.id):
        parts.append("**Profile host on %s** (this CPU's own calibration, `tools/baremm "
                     "calibrate`; the data keep the profile it gave):" % tag[len("host-"):])
        for s, path in ((s_in, p_in), (s_ooo, p_ooo)):
            if s is None:
                parts.append("%s core: not recorded on this CPU (`%stools/baremm experiment "
                             "%s --model host --save docs/data` there writes `%s`)." % (
                                 "Out-of-order" if path.endswith("-ooo.json") else "In-order",
                                 "BAREMM_MODEL_ARGS=core=ooo " if path.endswith("-ooo.json")
                                 else "", exp.id, path))
                continue
            parts.append(seed_block(exp, s, True, problems, path, model="host"))
        if s_in is not None and s_ooo is not None:
            parts.append(core_comparison(exp, s_in, s_ooo, "host"))
    return parts


# where a model cycle went: (label, the plugin's part.NAME, the in-order core's charge
# events for runs recorded before the plugin printed parts: the same accesses, walks and
# waits, each paid in series)
WHY_PARTS = (("instructions", "insns", ("model_insns",)), ("cache", "cache", ("model_cyc_cache",)),
             ("TLB", "tlb", ("model_cyc_tlb",)), ("rep", "rep", ("model_cyc_rep",)),
             ("penalties", "penalties", ("model_cyc_pen",)), ("branch", "branch", ()),
             ("wait", "wait", ("model_wait_cycles",)), ("IPI", "ipi", ("model_ipi_wait_cycles",)))


def _part(r, name, charges):
    """(cycles per op, from the breakdown?) of one part of a figure, or (None, False)."""
    x = (r.get("extra") or {}).get("part." + name)
    if x is not None:
        return float(x), True
    evs = r.get("events") or {}
    if charges and any(c in evs for c in charges):
        return sum(float(evs.get(c, 0.0)) for c in charges), False
    return None, False


def why_cell(ra, rb):
    """The parts of two runs of one figure, in-order -> out-of-order; a value marked *
    is the in-order core's charge event (no breakdown in that run)."""
    out = []
    for label, name, charges in WHY_PARTS:
        a, pa = _part(ra, name, charges)
        b, _ = _part(rb, name, charges)
        if not a and not b:
            continue
        out.append("%s %s%s -> %s" % (label, "-" if a is None else ex.fmt_ev(a),
                                      "" if a is None or pa else "*",
                                      "-" if b is None else ex.fmt_ev(b)))
    return "; ".join(out) or "-"


def core_comparison(exp, s_in, s_ooo, model):
    """What the out-of-order core changed in one seed's model run: each figure's median
    per value under both cores, each claim's effect and verdict under both, and the
    events that explain the move (the in-order core's cache, TLB and wait cycles are
    paid in series; the out-of-order core overlaps the independent part)."""
    a = dict(ex.group_by_value(ex.selected(exp, s_in.get("results", [])), exp.variant, exp.metric))
    b = dict(ex.group_by_value(ex.selected(exp, s_ooo.get("results", [])), exp.variant, exp.metric))
    rows = []
    for g, byv in a.items():
        for v in [x for x in exp.values if x in byv] + [x for x in byv if x not in exp.values]:
            ra, rb = byv.get(v), b.get(g, {}).get(v)
            if rb is None:
                continue
            rows.append(["`%s`" % g.name(), "`%s`" % v, "%.2f" % ra["median"], "%.2f" % rb["median"],
                         "%.2f" % (rb["median"] / ra["median"]) if ra["median"] else "-",
                         why_cell(ra, rb)])
    out = ["**What the out-of-order core changed, profile %s** (the two runs above; model "
           "cycles per op, medians):" % model]
    if not rows:
        out.append("(no figure in both runs)")
        return "\n\n".join(out)
    out.append(table.markdown(table.columns(
        ["figure", exp.variant, "in-order", "out-of-order", "ratio",
         "where the cycles per op went, in-order -> out-of-order (* = the in-order run "
         "has no breakdown: its charge event, paid in series)"], left=(0, 1, 5)), rows))
    va = ex.Analysis(exp, s_in.get("results", []), True, s_in.get("machine") or {}, model=model,
                     model_args=s_in.get("model_args", ""), cpu_id=s_in.get("cpu_id")).verdict()
    vb = ex.Analysis(exp, s_ooo.get("results", []), True, s_ooo.get("machine") or {},
                     model=model, model_args=s_ooo.get("model_args", ""),
                     cpu_id=s_ooo.get("cpu_id")).verdict()
    cl = []
    for ca, cb in zip(va.get("claims", []), vb.get("claims", [])):
        if ca["claim"] != cb["claim"] or ca["case"] != cb["case"]:
            continue
        cl.append("- %s%s: %s -> %s, verdict %s -> %s" % (
            ca["claim"], " (%s)" % ca["case"] if ca["case"] else "",
            _pct(ca["pct"]), _pct(cb["pct"]), ca["verdict"], cb["verdict"]))
    if cl:
        out.append("Claims, in-order -> out-of-order:\n\n" + "\n".join(cl))
    out.append("Overall verdict: %s -> %s. Why the figures move: the in-order core pays "
               "every instruction at `base_cpi` and every access, walk and wait in series; "
               "the out-of-order core issues up to `core_width` per cycle and overlaps what "
               "does not depend on an outstanding miss, so a figure falls most where its "
               "work is independent and least where it is a chain of misses or a wait for "
               "another CPU. The out-of-order parts are the cycles left on the critical "
               "path after that overlap; they add up to the figure." % (va["agree"], vb["agree"]))
    return "\n\n".join(out)


def _pct(x):
    return "-" if x is None else "%+.1f %%" % x


def seed_block(exp, s, icount, problems, path, model=None):
    m = s.get("machine") or {}
    results = ex.selected(exp, s.get("results", []))
    margs = s.get("model_args", "") if model else ""
    ooo = runner.core_ooo(margs)
    cmd = "%stools/baremm experiment %s%s" % (
        "BAREMM_MODEL_ARGS=%s " % margs if margs else "", exp.id,
        " --model " + model if model else " --icount" if icount else "")
    out = ["**%s** (`%s`; %s; boot `%s`, %d CPU%s; data `%s`):" % (
        "Cost model, profile %s, %s core (model cycles)" % (
            model, "out-of-order" if ooo else "in-order") if model else
        "Deterministic mode (icount)" if icount else "TCG", cmd,
        _stamp(m.get("build"), problems, path), "`, `".join(s.get("cmdlines", [])),
        s.get("smp", 0), "" if s.get("smp") == 1 else "s", path)]
    if results:
        c = compare.compare_variants("experiment %s" % exp.id, results, m)
        out.append(compare.format_markdown(c).rstrip("\n"))
    else:
        out.append("(no figures in the saved run)")
    for head, rows in ex.event_tables(exp, results):
        out.append("Events per operation, `%s`:\n\n%s" % (head[0], table.markdown(
            table.columns(["event"] + ["`%s`" % h for h in head[1:]], left=(0,)), rows)))
    v = ex.Analysis(exp, results, icount, m, model=model, model_args=margs,
                    cpu_id=s.get("cpu_id")).verdict()
    out.append("Verdict: **%s**. %s" % (v["agree"], v["text"]))
    return "\n\n".join(out)


# ---------------------------------------------------------------- driver

FILES = {
    os.path.join("docs", "RESULTS.md"): (("perf-baseline", gen_baseline),
                                        ("linux-vs-baremm", gen_linux),
                                        ("linux-vs-baremm-model", gen_linux_model)),
    os.path.join("docs", "EXPERIMENTS.md"): tuple(("seed-%s" % i, gen_seed(i))
                                                  for i in ex.ORDER),
    os.path.join("docs", "TLB.md"): (("shootdown-model", sweep.gen_doc_block),
                                     ("shootdown-model-causal-off", sweep.gen_doc_block_causal_off),
                                     ("shootdown-model-zen3", sweep.gen_doc_block_zen3),
                                     ("shootdown-model-ooo", sweep.gen_doc_block_ooo)),
    os.path.join("docs", "COSTMODEL.md"): (("native-panel", panel.gen_doc_block),
                                          ("model-speed", speed.gen_doc_block)),
}


def replace_blocks(text, blocks, path="doc"):
    """text with each named block's body replaced; every name must have its markers."""
    seen = set()

    def sub(mo):
        name = mo.group(1)
        if name not in blocks:
            raise DocsError("%s: unknown generated block %r" % (path, name))
        seen.add(name)
        return "%s\n%s\n%s" % (BEGIN % name, blocks[name].rstrip("\n"), END % name)
    new = BLOCK_RE.sub(sub, text)
    missing = sorted(set(blocks) - seen)
    if missing:
        raise DocsError("%s: no markers for %s (add `%s` ... `%s`)"
                        % (path, ", ".join(missing), BEGIN % missing[0], END % missing[0]))
    return new


def render(root):
    """({path: (old text, new text)}, problems)."""
    out, problems = {}, []
    for rel, gens in FILES.items():
        path = os.path.join(root, rel)
        with open(path) as f:
            old = f.read()
        blocks = {name: gen(root, problems) for name, gen in gens}
        out[rel] = (old, replace_blocks(old, blocks, rel))
    return out, problems


def check(root):
    """Messages: files whose generated blocks differ from a fresh render, and problems."""
    files, problems = render(root)
    msgs = ["%s: generated figures differ from their data (run `tools/baremm docs`)" % rel
            for rel, (old, new) in sorted(files.items()) if old != new]
    return msgs + problems


def main(a, out=sys.stdout):
    root = runner.ROOT
    try:
        if a.check:
            msgs = check(root)
            for m in msgs:
                out.write("baremm docs: %s\n" % m)
            out.write("baremm docs: %s\n" % ("up to date" if not msgs else
                                             "%d problem(s)" % len(msgs)))
            return 1 if msgs else 0
        files, problems = render(root)
        for rel, (old, new) in sorted(files.items()):
            if old != new:
                with open(os.path.join(root, rel), "w") as f:
                    f.write(new)
                out.write("baremm docs: wrote %s\n" % rel)
            else:
                out.write("baremm docs: %s unchanged\n" % rel)
        for p in problems:
            out.write("baremm docs: warning: %s\n" % p)
        return 0
    except (ValueError, KeyError) as e:
        raise DocsError("bad data: %s" % e)


def add_parser(sub):
    p = sub.add_parser("docs", help="regenerate the figure tables of docs/RESULTS.md, "
                       "docs/EXPERIMENTS.md and docs/TLB.md from tests/perf/baseline.json and "
                       "docs/data/")
    p.add_argument("--check", action="store_true", help="regenerate in memory; exit 1 when "
                   "the docs differ or a stamp names a dirty tree")
    p.set_defaults(func=main)
    return p
