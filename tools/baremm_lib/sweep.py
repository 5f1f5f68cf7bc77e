"""`tools/baremm shootdown-sweep`: TLB shootdown scaling under the cost model,
one command from the boots to docs/TLB.md's table and plot.

Three boots at -smp = the largest CPU count, each sweeping every CPU count in one boot
(the harness's bench_cpus=A-B) and keeping only the cases the table shows (cases=):

  protocol   tlb.shootdown, 1 page and full flush, ab=tlb_protocol:sequential,concurrent
  early-ack  tlb.shootdown, 1 page, ab=tlb_early_ack:off,on (concurrent protocol)
  call       ipi.call_all, the empty cross-CPU call to the same CPUs

Idle CPUs sit in hlt and move no figure (docs/COSTMODEL.md, "Determinism"), and each
count's warm-up round absorbs the lines the previous count left in other CPUs' caches, so
a point of the sweep equals the same point booted alone (docs/TLB.md says where this was
checked). `--save DIR` writes DIR/shootdown-model-<profile>.json, from which
`tools/baremm docs` renders docs/TLB.md's generated block `shootdown-model`; `--plot PNG`
draws the 1-page figures and the empty call against the CPUs taking part. `--from JSON`
prints the table and draws the plot from saved data without booting.
"""
import argparse
import json
import os
import sys
import time

from . import plot as plotmod, runner, status as st, table as tab

CASES_PROTOCOL = "1,0"
BOOTS = (
    ("protocol", "bench=tlb.shootdown bench_cpus={cpus} cases=" + CASES_PROTOCOL +
     " ab=tlb_protocol:sequential,concurrent runs={runs} warmup=1 iters={iters}"),
    ("early-ack", "bench=tlb.shootdown bench_cpus={cpus} cases=1 ab=tlb_early_ack:off,on "
     "runs={runs} warmup=1 iters={iters}"),
    ("call", "bench=ipi.call_all bench_cpus={cpus}"),
)
# what a result keeps in the saved data: the figure, the model's events and the kernel's
# shootdown and call counts
KEEP = ("bench", "cpus", "case", "variants", "metric", "unit", "runs", "median", "mean",
        "stddev", "pstddev", "min", "max", "instructions")
KEEP_EVENTS = ("flush_ipi", "remote_flush", "early_ack", "ipi_sent", "call_queued", "call_run")


def trim(r):
    t = {k: r[k] for k in KEEP if k in r}
    t["events"] = {k: v for k, v in (r.get("events") or {}).items()
                   if k.startswith("model_") or k in KEEP_EVENTS}
    return t


class SweepError(Exception):
    pass


def data_name(profile, model_args=None):
    """docs/data file of a sweep; plugin arguments (BAREMM_MODEL_ARGS) make another file."""
    return "shootdown-model-%s%s.json" % (profile, "-" + runner.safe_name(model_args)
                                          if model_args else "")


def cmdlines(lo, hi, runs, iters):
    cpus = "%d-%d" % (lo, hi) if hi > lo else "%d" % lo
    return [(n, c.format(cpus=cpus, runs=runs, iters=iters)) for n, c in BOOTS]


def find(data, boot, bench, cpus, case=None, variant=None):
    """The model figure of one point of a saved sweep, or None."""
    for b in data["boots"]:
        if b["name"] != boot:
            continue
        for r in b["results"]:
            if r["bench"] != bench or r["cpus"] != cpus or r["unit"] != "model_cycles":
                continue
            if case is not None and r.get("case") != case:
                continue
            if variant is not None and r.get("variants", {}) != variant:
                continue
            return r
    return None


def _f(r, key="median"):
    return "%.0f" % r[key] if r else "-"


def _ev(r, name):
    x = r.get("events", {}).get(name) if r else None
    return "%.0f" % x if x is not None else "-"


def table(data, problems=None):
    """docs/TLB.md's table (markdown) from a saved sweep."""
    problems = problems if problems is not None else []
    seq, conc = {"tlb_protocol": "sequential"}, {"tlb_protocol": "concurrent"}
    off, on = {"tlb_early_ack": "off"}, {"tlb_early_ack": "on"}
    rows, psd = [], 0.0
    for c in data["cpus"]:
        call = find(data, "call", "ipi.call_all", c)
        s1 = find(data, "protocol", "tlb.shootdown", c, "pages:1", seq)
        c1 = find(data, "protocol", "tlb.shootdown", c, "pages:1", conc)
        s0 = find(data, "protocol", "tlb.shootdown", c, "pages:0", seq)
        c0 = find(data, "protocol", "tlb.shootdown", c, "pages:0", conc)
        e0 = find(data, "early-ack", "tlb.shootdown", c, "pages:1", off)
        e1 = find(data, "early-ack", "tlb.shootdown", c, "pages:1", on)
        for name, r in (("ipi.call_all", call), ("1 page sequential", s1),
                        ("1 page concurrent", c1), ("full flush sequential", s0),
                        ("full flush concurrent", c0), ("early ack off", e0),
                        ("early ack on", e1)):
            if r is None:
                problems.append("shootdown sweep: no %s figure at %d CPUs" % (name, c))
        for r in (s1, c1, e0, e1):
            if r:
                psd = max(psd, r["pstddev"])
        # the same code (concurrent, early ack off) in two boots: must agree
        if c1 and e0 and abs(c1["median"] - e0["median"]) > 0.005 * c1["median"]:
            problems.append("shootdown sweep: 1 page concurrent %.2f (protocol boot) vs "
                            "%.2f (early-ack boot, off) at %d CPUs differ by more than 0.5 %%"
                            % (c1["median"], e0["median"], c))
        rows.append([c - 1, _f(call), _f(s1), _f(c1),
                     "%.2f" % (c1["median"] / s1["median"]) if s1 and c1 else "-",
                     _f(e1), "%.2f" % (e1["median"] / c1["median"]) if e1 and c1 else "-",
                     "%.2f" % (c1["median"] / call["median"]) if c1 and call else "-",
                     _f(s0), _f(c0),
                     "%s / %s / %s" % (_ev(s1, "model_wait_cycles"), _ev(c1, "model_wait_cycles"),
                                       _ev(e1, "model_wait_cycles")),
                     "%s / %s" % (_ev(c1, "model_wait"), _ev(e1, "model_wait"))])
    head = ["remote CPUs", "empty call to all (`ipi.call_all`)", "1 page sequential",
            "1 page concurrent", "concurrent / sequential", "1 page concurrent, early ack",
            "early ack / concurrent", "1 page concurrent / empty call",
            "full flush sequential", "full flush concurrent",
            "initiator's wait cycles per flush (`ev.model_wait_cycles`), seq / conc / early ack",
            "waits per flush (`ev.model_wait`), conc / early ack"]
    return tab.markdown(tab.columns(head, left=(0,)), rows), psd


def render(data, problems):
    """The generated block of docs/TLB.md."""
    from .docs import _stamp
    tab, psd = table(data, problems)
    m = data.get("machine") or {}
    boots = "; ".join("`%s` (%s s)" % (b["cmdline"], b.get("wall_s", "?")) for b in data["boots"])
    if data.get("model_args"):
        boots += "; plugin arguments `%s` (BAREMM_MODEL_ARGS)" % data["model_args"]
    return ("Profile `%s`, `-smp %d`, %s; command `%s`; boots (wall time on the shared "
            "host): %s. Model cycles per op, median of the runs; the 1-page flush figures' "
            "largest pstddev is %.2f %%.\n\n%s"
            % (data["profile"], data["smp"], _stamp(m.get("build"), problems,
                                                    "shootdown-model"),
               data["command"], boots, psd, tab))


def gen_doc_block(root, problems, profile="skylake-sp", model_args=None):
    path = os.path.join(root, "docs", "data", data_name(profile, model_args))
    how = "%stools/baremm shootdown-sweep --model %s --save docs/data" % (
        "BAREMM_MODEL_ARGS=%s " % model_args if model_args else "", profile)
    if not os.path.exists(path):
        problems.append("%s: missing (run `%s`)" % (os.path.relpath(path, root), how))
        return "(no saved sweep: `%s` writes it)" % how
    with open(path) as f:
        return render(json.load(f), problems)


def gen_doc_block_causal_off(root, problems):
    return gen_doc_block(root, problems, model_args="causal=off")


def gen_doc_block_zen3(root, problems):
    return gen_doc_block(root, problems, profile="zen3")


def gen_doc_block_ooo(root, problems):
    return gen_doc_block(root, problems, model_args=runner.OOO_ARGS)


def plot_records(data):
    """The sweep's figures for plot.plot(): 1-page flush per protocol, and the empty call."""
    keep = []
    for b in data["boots"]:
        rs = []
        for r in b["results"]:
            if r["unit"] != "model_cycles":
                continue
            if r["bench"] == "tlb.shootdown" and r.get("case") != "pages:1":
                continue
            if b["name"] == "early-ack" and r.get("variants") != {"tlb_early_ack": "on"}:
                continue    # early ack off = the protocol boot's concurrent line
            rs.append(r)
        keep.append({"results": rs, "machine": data.get("machine"),
                     "model": {"profile": data["profile"]}})
    return keep


def sweep(profile, lo, hi, runs, iters, outdir, timeout, log=sys.stdout):
    """Boots the three sweeps; returns the data (what --save writes)."""
    data = {"profile": profile, "smp": hi, "cpus": list(range(lo, hi + 1)), "boots": [],
            "model_args": os.environ.get("BAREMM_MODEL_ARGS") or None}
    for name, cmd in cmdlines(lo, hi, runs, iters):
        cfg = {"cmdline": cmd, "smp": hi, "mem": "512M", "cpu": "max", "firmware": "bios",
               "accel": "tcg", "icount": True, "model": profile, "timeout": timeout}
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        log.write("shootdown-sweep: booting %s (-smp %d): %s\n" % (name, hi, cmd))
        log.flush()
        t0 = time.time()
        rec, _ = runner.boot(cfg, d, name=name)
        wall = round(time.time() - t0)
        if rec["status"] != "pass" or rec["log"]["errors"] or rec.get("mode") != "model":
            raise SweepError("%s: status %s, %d log errors, mode %s (%s)" % (
                name, rec["status"], len(rec["log"]["errors"]), rec.get("mode"),
                os.path.join(d, "serial.log")))
        log.write("shootdown-sweep: %s done in %d s\n" % (name, wall))
        data.setdefault("machine", rec.get("machine"))
        data["boots"].append({"name": name, "cmdline": cmd, "wall_s": wall,
                              "results": [trim(r) for r in rec["results"]
                                          if r.get("unit") == "model_cycles"]})
    return data


def main(a, out=sys.stdout):
    lo, _, hi = a.cpus.partition("-")
    try:
        lo, hi = int(lo), int(hi or lo)
    except ValueError:
        sys.stderr.write("shootdown-sweep: --cpus expects A-B (got %r)\n" % a.cpus)
        return st.EXIT_USAGE
    if not 2 <= lo <= hi:
        sys.stderr.write("shootdown-sweep: --cpus needs 2 <= A <= B (a shootdown needs a "
                         "remote CPU)\n")
        return st.EXIT_USAGE
    cmd = "tools/baremm shootdown-sweep --model %s" % a.model
    if os.environ.get("BAREMM_MODEL_ARGS"):
        cmd = "BAREMM_MODEL_ARGS=%s %s" % (os.environ["BAREMM_MODEL_ARGS"], cmd)
    if a.cpus != "2-16":
        cmd += " --cpus %s" % a.cpus
    if a.save:
        cmd += " --save %s" % a.save
    if a.plot:
        cmd += " --plot %s" % a.plot
    try:
        if a.from_json:
            with open(a.from_json) as f:
                data = json.load(f)
        else:
            if not a.no_build:
                runner.build(model=True)
            top = a.out or runner.new_dir(os.path.join(runner.ROOT, "results"),
                                          "shootdown-sweep-" + runner.timestamp())
            data = sweep(a.model, lo, hi, a.runs, a.iters, top, a.timeout, out)
            data["command"] = cmd
            runner.write_json(os.path.join(top, data_name(a.model, data.get("model_args"))), data)
        problems = []
        tab, _ = table(data, problems)
        out.write(tab + "\n")
        if a.save and not a.from_json:
            os.makedirs(a.save, exist_ok=True)
            path = os.path.join(a.save, data_name(a.model, data.get("model_args")))
            runner.write_json(path, data)
            out.write("shootdown-sweep: wrote %s\n" % path)
        if a.plot:
            plotmod.plot(plot_records(data), "cpus", a.plot,
                         title="1-page shootdown vs empty call, %s model%s" % (
                             data["profile"], (", " + data["model_args"])
                             if data.get("model_args") else ""))
            out.write("shootdown-sweep: wrote %s\n" % a.plot)
        for p in problems:
            out.write("shootdown-sweep: problem: %s\n" % p)
        return 1 if problems else 0
    except (ValueError, KeyError) as e:
        raise SweepError("bad data: %s" % e)


def add_parser(sub):
    p = sub.add_parser("shootdown-sweep", help="TLB shootdown scaling under the cost model: "
                       "three boots sweeping the CPU count, table, saved data, plot "
                       "(docs/TLB.md)")
    p.add_argument("--model", default="skylake-sp", metavar="PROFILE",
                   help="cost-model profile (default skylake-sp)")
    p.add_argument("--cpus", default="2-16", metavar="A-B",
                   help="CPUs taking part, remotes + 1 (default 2-16; -smp is B)")
    p.add_argument("--runs", type=int, default=3, help="measured runs per figure (default 3)")
    p.add_argument("--iters", type=int, default=30, help="flushes per run (default 30)")
    p.add_argument("--save", default=None, metavar="DIR",
                   help="also write the data here (docs/data for the docs)")
    p.add_argument("--plot", default=None, metavar="PNG", help="draw the plot here")
    p.add_argument("--out", default=None, help="directory for the boots' logs (default "
                   "results/shootdown-sweep-<timestamp>)")
    p.add_argument("--timeout", type=float, default=3600, help="host timeout per boot, s")
    p.add_argument("--no-build", action="store_true", help="do not run make first")
    p.add_argument("--from", dest="from_json", default=None, metavar="JSON",
                   help="no boots: table and --plot from a saved sweep")
    p.set_defaults(func=main)
    return p


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    add_parser(ap.add_subparsers(dest="cmd"))
    args = ap.parse_args()
    raise SystemExit(args.func(args))
