"""Seed verdicts: one rule for every thread, effects with confidence intervals, and what
an effect would mean on Linux.

A thread's figures are stored once, as Claims (what the thread measured, base -> new, and
which of our figures answers it); every sentence of a verdict is built from them and from
the run it describes. docs/EXPERIMENTS.md, "How a verdict is decided", states the rule:

  * our effect is the change of the mean of the new value against the base value, with a
    95 % confidence interval (Welch: t quantile with Welch-Satterthwaite degrees of
    freedom; zero spread on both sides gives a point interval);
  * both the thread's figure and our interval are classified against a minimum effect
    size m (MIN_EFFECT_PCT, per claim): "up" (interval above +m), "down" (below -m),
    "none" (inside [-m, +m]) or, for ours only, "unresolved" (it crosses +m or -m);
  * agree when both classes are the same, inconclusive when ours is unresolved,
    disagree otherwise. An experiment with several claims (or cases) disagrees when one
    of them does, else is inconclusive when one of them is, else agrees.

So an exact difference of one instruction in a million is "none", not an effect.

The Linux projection: the absolute change per operation, in the figure's unit, divided by
Linux's cost of the same operation (tools/linux-ref/reference.json, measured by
tools/linux-ref in the same QEMU). It exists only when the units match.
"""
import json
import math
import os
import statistics
from dataclasses import dataclass, field
from typing import Optional, Tuple

from . import modelerror, runner, stats

CONFIDENCE = 0.95
MIN_EFFECT_PCT = 1.0
LINUX_REF = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "linux-ref", "reference.json")
AGREE, DISAGREE, INCONCLUSIVE = "agree", "disagree", "inconclusive"


# ---------------------------------------------------------------- the thread's figures

@dataclass(frozen=True)
class Claim:
    """One figure of a thread: base -> new of one quantity, and our figure that answers it.

    ours = "time" compares the figure's per-operation median (cycles, instructions or the
    run's unit); any other word is an event counted per operation. A throughput claim
    (operations per second) is compared as time per operation, its inverse."""
    label: str                      # what is compared, e.g. "time per run"
    base: float
    new: float
    unit: str                       # the thread's unit
    values: Tuple[str, str]         # our variant values: base, new
    ours: str = "time"
    throughput: bool = False
    modes: Tuple[str, ...] = ("tcg", "icount")
    cases: Optional[Tuple[str, ...]] = None     # only figures with these cases
    min_effect_pct: float = MIN_EFFECT_PCT

    def pct(self):
        """The thread's change in the direction of our figure (time or count per op)."""
        if self.throughput:
            return 100.0 * (self.base / self.new - 1.0)
        return 100.0 * (self.new - self.base) / self.base

    def cls(self):
        p = self.pct()
        return classify(p, p, self.min_effect_pct)

    def describe(self):
        s = "%s %s -> %s %s (%s" % (self.label, num(self.base), num(self.new), self.unit,
                                     pct_s(100.0 * (self.new - self.base) / self.base))
        if self.throughput:
            s += ", %s time per operation" % pct_s(self.pct())
        return s + ")"

    def applies(self, icount, model=None):
        """Under the cost model a claim about time is judged (the model prices cycles);
        a claim meant for instruction counts only is not."""
        if model:
            return "model" in self.modes or "tcg" in self.modes
        return ("icount" if icount else "tcg") in self.modes


@dataclass(frozen=True)
class MailThread:
    """A mailing-list thread: its test and its figures (each stored once, here)."""
    workload: str
    claims: Tuple[Claim, ...]
    threads: Optional[int] = None   # CPUs or threads of the thread's test
    more: str = ""                  # other figures of the thread, quoted as they are

    def line(self):
        s = "%s: %s" % (self.workload, "; ".join(c.describe() for c in self.claims))
        return s + ("; " + self.more if self.more else "")


@dataclass(frozen=True)
class LinuxCost:
    """Linux's cost of one of our operations: sum of reference figures times a count per
    operation (a number, or an event name read from the run's base value)."""
    terms: Tuple[Tuple[str, object], ...]
    what: str = ""                  # how the operation maps onto the Linux figures


# ---------------------------------------------------------------- effects

@dataclass
class Effect:
    base: float                     # mean per op of the base value
    new: float
    delta: float                    # new - base, per op, in `unit`
    lo: float                       # confidence interval of delta
    hi: float
    unit: str
    exact: bool                     # zero spread on both sides (or an event count)

    def _rel(self, x):
        if self.base == 0:
            return 0.0 if x == 0 else math.copysign(math.inf, x)
        return 100.0 * x / abs(self.base)

    @property
    def pct(self):
        return self._rel(self.delta)

    @property
    def pct_lo(self):
        return self._rel(self.lo)

    @property
    def pct_hi(self):
        return self._rel(self.hi)

    def interval(self):
        if self.exact:
            return "exact"
        return "%d%% CI %s..%s" % (round(100 * CONFIDENCE), pct_s(self.pct_lo),
                                   pct_s(self.pct_hi))


def _summary(r):
    """(mean, variance, n) of a result's per-op figure: raw samples when present."""
    xs = r.get("samples") or []
    if len(xs) >= 2:
        return statistics.fmean(xs), statistics.variance(xs), len(xs)
    n = int(r.get("runs") or len(xs) or 1)
    return float(r.get("mean", r["median"])), float(r.get("stddev") or 0.0) ** 2, n


def effect_of(ra, rb, source="time", unit=""):
    """Effect of rb against ra: 'time' (the figure) or an event name (exact count)."""
    if source != "time":
        a, b = ev(ra, source), ev(rb, source)
        return Effect(a, b, b - a, b - a, b - a, unit or "per op", True)
    ma, va, na = _summary(ra)
    mb, vb, nb = _summary(rb)
    d = mb - ma
    se2 = va / na + vb / nb
    if se2 == 0.0:
        return Effect(ma, mb, d, d, d, unit, True)
    if na < 2 or nb < 2:
        return Effect(ma, mb, d, -math.inf, math.inf, unit, False)
    df = se2 * se2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    half = stats.t_ppf(0.5 + CONFIDENCE / 2.0, df) * math.sqrt(se2)
    return Effect(ma, mb, d, d - half, d + half, unit, False)


def widen(e, pp):
    """The interval of @e widened by the model's measured error, @pp percentage points of
    the base figure on each side (modelerror.py); an unknown error (None) leaves nothing
    known: the interval becomes unbounded."""
    if pp is None:
        return Effect(e.base, e.new, e.delta, -math.inf, math.inf, e.unit, False)
    w = abs(e.base) * pp / 100.0
    return Effect(e.base, e.new, e.delta, e.lo - w, e.hi + w, e.unit, False)


def classify(lo, hi, m):
    """up / down / none / unresolved for an interval of %changes, minimum effect m."""
    if lo > m:
        return "up"
    if hi < -m:
        return "down"
    if lo >= -m and hi <= m:
        return "none"
    return "unresolved"


def judge(claim, eff):
    """The rule: (verdict, our class)."""
    ours = classify(eff.pct_lo, eff.pct_hi, claim.min_effect_pct)
    if ours == "unresolved":
        return INCONCLUSIVE, ours
    return (AGREE if ours == claim.cls() else DISAGREE), ours


def combine(verdicts):
    verdicts = list(verdicts)
    if not verdicts:
        return INCONCLUSIVE
    if DISAGREE in verdicts:
        return DISAGREE
    if INCONCLUSIVE in verdicts:
        return INCONCLUSIVE
    return AGREE


# ---------------------------------------------------------------- Linux

_linux_cache = {}


def load_linux_ref(path=LINUX_REF):
    if path not in _linux_cache:
        with open(path) as f:
            _linux_cache[path] = json.load(f)
    return _linux_cache[path]


def linux_cost(lc, r_base, ref=None, s=None):
    """(cost per op, formula text) of LinuxCost lc with counts from the base result, from
    reference set s (default: the instruction-count set)."""
    ref = ref or load_linux_ref()
    figs = (s or ref["sets"][ref["reference_set"]])["figures"]
    total, parts = 0.0, []
    for key, count in lc.terms:
        n = ev(r_base, count) if isinstance(count, str) else float(count)
        total += n * figs[key]
        parts.append("`%s` %s" % (key, num(figs[key])) if n == 1 else
                     "%s x `%s` %s" % (fmt_count(n), key, num(figs[key])))
    return total, " + ".join(parts)


def reference_set_name(ref, model=None, model_args=""):
    """The name of the Linux set in a run's unit: the instruction counts, or under the
    cost model the set measured with the same profile and core (model:<profile>, and
    model:<profile>,core=ooo under the out-of-order core)."""
    if not model:
        return ref["reference_set"]
    return "model:%s%s" % (model, "," + runner.OOO_ARGS if runner.core_ooo(model_args) else "")


def reference_set(ref, model=None, model_args=""):
    """(name, set) of the Linux figures in the same unit as a run (reference_set_name)."""
    name = reference_set_name(ref, model, model_args)
    return name, ref["sets"].get(name)


def projection(eff, lc, r_base, ref=None, model=None, model_args=""):
    """dict for the Linux projection of an effect on the figure, or dict(reason)."""
    ref = ref or load_linux_ref()
    if lc is None:
        return None
    name, s = reference_set(ref, model, model_args)
    unit = (s or {}).get("unit", ref["unit"])
    if s is None:
        return {"reason": "tools/linux-ref/reference.json has no %s set" % name}
    if eff.unit != unit:
        return {"reason": "the Linux reference figures are %s (%s) and this run measured %s"
                % (unit, ref["mode"], eff.unit)}
    missing = [k for k, _ in lc.terms if k not in s["figures"]]
    if missing:
        return {"reason": "the %s set of tools/linux-ref/reference.json has no `%s`"
                % (name, "`, `".join(missing))}
    cost, formula = linux_cost(lc, r_base, ref, s)
    # a figure measured by a boot of its own names that boot's command
    fc = s.get("figure_commands", {})
    cmds = []
    for k, _ in lc.terms:
        c = fc.get(k, s["command"])
        if c not in cmds:
            cmds.append(c)
    return {"linux_cost": cost, "formula": formula, "ratio": eff.base / cost,
            "pct": 100.0 * eff.delta / cost, "pct_lo": 100.0 * eff.lo / cost,
            "pct_hi": 100.0 * eff.hi / cost, "command": "; ".join(cmds), "cpu": s["cpu"],
            "what": lc.what}


# ---------------------------------------------------------------- one experiment

def ev(r, name):
    return float((r or {}).get("events", {}).get(name, 0.0))


def num(v):
    """A figure as quoted: integers and values >= 100 whole, others to 6 digits."""
    if v is None:
        return "-"
    if abs(v) >= 100 or float(v).is_integer():
        return "%.0f" % v
    return "%.6g" % v


def fmt_count(v):
    return "%d" % v if float(v).is_integer() else "%.4g" % v


def pct_s(p):
    if math.isinf(p):
        return "+inf%" if p > 0 else "-inf%"
    return "%+.2f%%" % p if abs(p) < 10 else "%+.1f%%" % p


def unit_of(r, icount):
    """The figure's unit: instructions under icount (the TSC counts them), else the unit
    of its RESULT line (cycles, model_cycles ...)."""
    u = r.get("unit", "cycles")
    return "instructions" if icount and u == "cycles" else u


def cpus_str(n):
    return "1 CPU" if n == 1 else "%d CPUs" % n


def decide(exp, groups, icount, model=None, model_args=None, cpu_id=None):
    """The verdict of one experiment run. exp has .thread (MailThread), .variant, .op (what
    one of our operations is), .explain (events quoted), .linux (LinuxCost or None),
    .linux_none (why there is none), .cost (the two values whose time difference is
    projected onto Linux), .icount_note. groups: [(Figure without its variant,
    {value: r})] (experiment.group_by_value)."""
    th = exp.thread
    judged, claims_out = [], []
    for c in th.claims:
        if not c.applies(icount, model):
            continue
        for g, byv in groups:
            case = g.case
            if c.cases is not None and case not in c.cases:
                continue
            ra, rb = byv.get(c.values[0]), byv.get(c.values[1])
            if ra is None or rb is None:
                continue
            unit = unit_of(ra, icount) if c.ours == "time" else c.ours + " per op"
            e = effect_of(ra, rb, c.ours, unit)
            err = None
            if model and c.ours == "time":
                err = modelerror.error_for(exp.id, model, model_args=model_args, cpu_id=cpu_id)
                e = widen(e, err["pp"])
            v, ours = judge(c, e)
            judged.append(v)
            claims_out.append({
                "claim": c.label, "case": case, "values": list(c.values), "ours_figure":
                c.ours, "thread_pct": c.pct(), "thread_class": c.cls(), "base": e.base,
                "new": e.new, "delta": e.delta, "delta_lo": e.lo, "delta_hi": e.hi,
                "unit": e.unit, "pct": e.pct, "pct_lo": e.pct_lo, "pct_hi": e.pct_hi,
                "exact": e.exact, "class": ours, "min_effect_pct": c.min_effect_pct,
                "verdict": v, "model_error_pp": err and err["pp"],
                "model_error_how": err and err["how"]})
    if not claims_out:
        return {"agree": INCONCLUSIVE, "ours": "no figures", "claims": [], "linux": [],
                "text": "No figures for %s:%s were found, so no claim of the thread could "
                        "be checked." % (exp.variant, " and ".join(exp.values[:2]))}
    agree = combine(judged)
    linux_out = []
    for g, byv in groups:
        ra, rb = byv.get(exp.cost[0]), byv.get(exp.cost[1])
        if ra is None or rb is None:
            continue
        e = effect_of(ra, rb, "time", unit_of(ra, icount))
        p = projection(e, exp.linux, ra, model=model, model_args=model_args or "")
        linux_out.append({"case": g.case, "cpus": g.cpus, "base": e.base,
                          "new": e.new, "delta": e.delta, "delta_lo": e.lo,
                          "delta_hi": e.hi, "unit": e.unit, "exact": e.exact,
                          "projection": p})
    first = claims_out[0]
    ours = "%s %s (%s)" % (first["claim"], pct_s(first["pct"]),
                           "exact" if first["exact"] else
                           "CI %s..%s" % (pct_s(first["pct_lo"]), pct_s(first["pct_hi"])))
    return {"agree": agree, "ours": ours, "claims": claims_out, "linux": linux_out,
            "text": prose(exp, groups, icount, agree, claims_out, linux_out, model,
                          model_args or "")}


def model_note(exp, model_args=""):
    """What the cost model leaves out that matters to exp, for the core that priced the
    figures: exp.model_note_ooo under core=ooo when the experiment has one (the in-order
    note would name mechanisms that core does model), else exp.model_note."""
    if exp.model_note_ooo and runner.core_ooo(model_args):
        return exp.model_note_ooo
    return exp.model_note


def prose(exp, groups, icount, agree, claims_out, linux_out, model=None, model_args=""):
    th = exp.thread
    cpus = sorted({g.cpus for g, _ in groups})
    out = ["The thread (%s) measured %s." % (
        th.workload, "; ".join(c.describe() for c in th.claims))]
    here = "Here one operation is %s, on %s, in %s" % (
        exp.op, " and ".join(cpus_str(n) for n in cpus),
        "the cost model (profile %s%s, deterministic)" % (
            model, ", out-of-order core" if runner.core_ooo(model_args) else "") if model else
        "deterministic mode (icount: one cycle is one instruction)" if icount
        else "TCG wall time")
    if th.threads and cpus and max(cpus) != th.threads:
        here += " (the thread ran %d threads: %s)" % (
            th.threads, "fewer CPUs here, so fewer remote CPUs per flush"
            if max(cpus) < th.threads else "more CPUs here")
    out.append(here + ".")
    for c in claims_out:
        where = " [%s]" % c["case"] if c["case"] else ""
        ci = "exact" if c["exact"] else "%d%% CI %s..%s" % (
            round(100 * CONFIDENCE), pct_s(c["pct_lo"]), pct_s(c["pct_hi"]))
        if c.get("model_error_how"):
            ci = ("interval %s..%s with the model's measured error" % (
                pct_s(c["pct_lo"]), pct_s(c["pct_hi"])) +
                  (" of ±%.1f pp" % c["model_error_pp"] if c["model_error_pp"] is not None
                   else ", which is unknown") + " (%s)" % c["model_error_how"])
        label = c["claim"][:1].upper() + c["claim"][1:]
        out.append("%s%s, %s -> %s: the thread %s (%s), ours (means) %s -> %s %s = %s "
                   "(%s; %s): %s." % (label, where, c["values"][0], c["values"][1],
                                      pct_s(c["thread_pct"]), c["thread_class"],
                                      num(c["base"]), num(c["new"]), c["unit"],
                                      pct_s(c["pct"]), ci, c["class"], c["verdict"]))
    out.append("Rule: effects beyond ±%g%% count as up or down, inside as none; agree when "
               "ours is in the thread's class (docs/EXPERIMENTS.md)."
               % claims_out[0]["min_effect_pct"])
    evs = []
    for _, byv in groups[:1]:
        vals = [v for v in exp.values if v in byv]
        for e in exp.explain:
            xs = [ev(byv[v], e) for v in vals]
            if any(xs):
                evs.append("%s %s" % (e, " -> ".join(fmt_count(x) for x in xs)))
        if evs:
            out.append("Events per operation (%s): %s." % (" -> ".join(vals), ", ".join(evs)))
        if getattr(exp, "exercised", None):
            out.append(exp.exercised({v: (byv[v] or {}).get("events", {}) for v in vals}))
    if model:
        out.extend(model_sentences(exp, groups, model, model_args))
    out.extend(linux_sentences(exp, linux_out))
    if icount and not model and exp.icount_note:
        out.append(exp.icount_note)
    return " ".join(out)


# The parts of a model-cycle figure (docs/COSTMODEL.md, "Where the cycles went"), as the
# plugin prints them beside each figure (part.NAME, the median run's cycles per operation):
# per vCPU the clock is exactly their sum, so they add up to the median.
MODEL_PARTS = (("instructions", "insns"), ("fixed penalties", "penalties"),
               ("cache and transfer latency", "cache"), ("TLB misses and walks", "tlb"),
               ("rep-string lines", "rep"), ("MMIO", "io"),
               ("waits for other CPUs' stores", "wait"), ("IPI waits", "ipi"))
# The out-of-order core (core=ooo) adds one: mispredicted branches. A figure carries it only
# from that core, so it is optional.
OPTIONAL_PARTS = (("mispredicted branches", "branch"),)
PARTS_TOL = 0.005       # |sum of the parts - median| / median
# ... or, for figures of a few cycles, the median's own resolution (two decimals)
PARTS_ABS = 0.01
# The counts quoted beside them, when they move.
MODEL_COUNTS = ("model_l1d_miss", "model_l2_miss", "model_llc_miss", "model_c2c_transfer",
                "model_dtlb_miss", "model_walk", "model_atomic", "model_serialise",
                "model_fence", "model_iret")


def model_parts(r):
    """[(part, cycles per operation)] of a model figure, or None when its plugin printed
    no parts (figures saved before the plugin did)."""
    extra = (r or {}).get("extra") or {}
    try:
        return [(what, float(extra["part." + name])) for what, name in MODEL_PARTS] + [
            (what, float(extra["part." + name])) for what, name in OPTIONAL_PARTS
            if "part." + name in extra]
    except (KeyError, ValueError):
        return None


def parts_mismatch(r, parts=None):
    """(sum of the parts - median) / median of a model figure; None without parts."""
    parts = model_parts(r) if parts is None else parts
    if parts is None:
        return None
    total = sum(x for _, x in parts)
    return (total - r["median"]) / r["median"] if r["median"] else total


def model_breakdown(ra, rb):
    """[(part, cycles a, cycles b)] of the two figures' model cycles per operation, or None
    when either figure has no parts."""
    pa, pb = model_parts(ra), model_parts(rb)
    if pa is None or pb is None:
        return None
    return [(w, a, b) for (w, a), (_, b) in zip(pa, pb)]


def model_sentences(exp, groups, model, model_args=""):
    """Where the model's cycles per operation went, and the counts that moved."""
    out = []
    for _, byv in groups[:1]:
        ra, rb = byv.get(exp.cost[0]), byv.get(exp.cost[1])
        if ra is None or rb is None:
            continue
        rows = model_breakdown(ra, rb)
        counts = ["%s %s -> %s" % (n.replace("model_", ""), fmt_count(round(ev(ra, n), 4)),
                                   fmt_count(round(ev(rb, n), 4)))
                  for n in MODEL_COUNTS if abs(ev(rb, n) - ev(ra, n)) >= 0.01]
        tail = "; counts per operation: " + ", ".join(counts) if counts else ""
        if rows is None:
            out.append("No breakdown of the model's cycles: the figures carry no part.* "
                       "fields (a plugin older than the breakdown).%s"
                       % (" Counts per operation: %s." % ", ".join(counts) if counts else ""))
            continue
        moved = sorted(rows, key=lambda r: -abs(r[2] - r[1]))
        parts = ["%s %s -> %s (%s)" % (w, num(a), num(b), num_s(b - a))
                 for w, a, b in moved if abs(b - a) >= 0.005 * max(1.0, abs(rb["median"]
                                                                          - ra["median"]))]
        off = [(r, parts_mismatch(r)) for r in (ra, rb)]
        bad = ["%s: parts add up to %s, median %s" % (r["variant"], num(r["median"] * (1 + m)),
                                                      num(r["median"]))
               for r, m in off if abs(m) > PARTS_TOL]
        out.append("Where the model's cycles per operation went, %s -> %s (profile %s): %s%s%s."
                   % (exp.cost[0], exp.cost[1], model, "; ".join(parts) or "nothing moved",
                      tail, " (the parts do not add up: %s)" % "; ".join(bad) if bad else ""))
    note = model_note(exp, model_args)
    if note:
        out.append("Not modelled, and relevant here: %s" % note)
    return out


def linux_sentences(exp, linux_out):
    """The absolute change per operation and its projection onto Linux, per case."""
    out, told = [], False
    for lx in linux_out:
        where = " [%s]" % lx["case"] if lx["case"] else ""
        ci = "exact" if lx["exact"] else "%d%% CI %s..%s" % (
            round(100 * CONFIDENCE), num_s(lx["delta_lo"]), num_s(lx["delta_hi"]))
        s = "Absolute change%s, %s -> %s: %s %s per operation (%s)." % (
            where, exp.cost[0], exp.cost[1], num_s(lx["delta"]), lx["unit"], ci)
        p = lx["projection"]
        if p is None or "reason" in p:
            why = p["reason"] if p else exp.linux_none
            if why:
                s += " No Linux projection: %s." % why
            out.append(s)
            continue
        if not told:
            s += (" Linux's cost of the same operation comes from tools/linux-ref "
                  "(`%s`, -cpu %s)%s." % (p["command"], p["cpu"],
                                           ": " + p["what"] if p["what"] else ""))
            told = True
        here = 100.0 * lx["delta"] / lx["base"] if lx["base"] else 0.0
        s += (" Linux: %s = %s %s per operation; ours costs %.2fx that, so the same "
              "absolute change would be %s on Linux%s against %s here" % (
                  p["formula"], num(p["linux_cost"]), lx["unit"], p["ratio"],
                  pct_s(p["pct"]), "" if lx["exact"] else " (CI %s..%s)" % (
                      pct_s(p["pct_lo"]), pct_s(p["pct_hi"])), pct_s(here)))
        if abs(p["pct"]) > 100.0:
            s += ("; a change larger than Linux's whole cost means the two operations are "
                  "too different for this projection (%s)"
                  % (p["what"] or "Linux's figure is a one-CPU operation"))
        if p["ratio"] < 1.0:
            s += ("; our path is cheaper than Linux's, so our relative effect is %.1fx "
                  "what Linux's would be." % (1.0 / p["ratio"]))
        else:
            s += "; our path costs more than Linux's, so Linux's relative effect would be " \
                 "%.1fx ours." % p["ratio"]
        out.append(s)
    return out


def num_s(v):
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return ("%+.0f" if abs(v) >= 100 else "%+.4g") % v
