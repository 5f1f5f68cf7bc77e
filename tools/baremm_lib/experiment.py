"""`tools/baremm experiment NNN|all`: the five seed experiments (docs/EXPERIMENTS.md).

Each experiment is a declarative definition (EXPERIMENTS below): the benchmark, the variant
option and its values, CPUs, memory, extra options, the events that explain the result and
the thread's own figures. One boot runs every value interleaved (`ab=<opt>:<v1>,<v2>`) when
the variant can be switched at run time (all five can); otherwise one boot per value. The
output is the comparison table (tools/baremm compare), the event counts per operation side
by side per value, and a verdict paragraph against the thread's figures.
docs/EXPERIMENTS.md has the question, workload and our figures for each.
"""
import json
import os
import sys
import textwrap
from dataclasses import dataclass, replace
from typing import Callable, Optional, Tuple

from . import compare, modelerror, perfcheck, plot as plotmod, runner, status as st, table, verdict
from .figure import Figure, format_variant


@dataclass(frozen=True)
class Experiment:
    """One seed experiment: what to boot, and the thread it answers (verdict.MailThread)."""
    id: str
    title: str
    question: str
    bench: str                      # bench= glob
    variant: str                    # the variant option
    values: Tuple[str, ...]         # its values; the first is the base
    thread: Optional[verdict.MailThread] = None
    op: str = "one operation"       # what one of our operations is, for the verdict
    explain: Tuple[str, ...] = ()   # events quoted in the verdict
    linux: Optional[verdict.LinuxCost] = None   # Linux's cost of one operation
    linux_none: str = ""            # why there is no Linux projection
    cost: Tuple[str, ...] = ()      # the two values whose figures are projected (default:
                                    # the first two)
    icount_note: str = ""           # what an instruction count cannot show here
    model_note: str = ""            # what the cost model leaves out that matters here
    model_note_ooo: str = ""        # the same under core=ooo, where it differs (verdict.
                                    # model_note picks by the figures' core)
    smp: int = 2
    mem: str = "512M"
    extra: str = ""                 # more command-line words (TCG and icount)
    icount_extra: Optional[str] = None      # None: the same as extra
    runs: Optional[int] = None      # None: the benchmark's default
    switchable: bool = True         # ab= in one boot, else a boot per value
    metric: Optional[str] = None    # only figures with this metric (None: all)
    key_events: Tuple[str, ...] = ()
    timeout: int = 600
    icount_timeout: int = 900
    alt: Optional[dict] = None      # overrides for the second-opinion benchmark
    # under the cost model CPUs interact in modelled time, so the seeds run
    # at their threads' scale there: model_smp CPUs (None: smp), every one taking part
    # (model_extra; None: extra), with model_mem (None: mem)
    model_smp: Optional[int] = None
    model_extra: Optional[str] = None
    model_mem: Optional[str] = None
    model_timeout: Optional[int] = None     # None: icount_timeout
    # what the workload did, for the verdict: {value: {event: count per op}} -> sentence
    exercised: Optional[Callable[[dict], str]] = None

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(self.values))
        object.__setattr__(self, "key_events", tuple(self.key_events))
        if not self.cost:
            object.__setattr__(self, "cost", self.values[:2])

    def thread_line(self):
        return self.thread.line() if self.thread else ""

    def alternative(self):
        """The same experiment on the other benchmark that covers this seed (--alt)."""
        if not self.alt:
            return None
        kw = dict(extra="", icount_extra=None, alt=None, metric=None)
        kw.update(self.alt)
        kw["title"] = "%s (second opinion: %s)" % (self.title, kw["bench"])
        return replace(self, **kw)

    def cmdlines(self, runs=None, icount=False, model=False):
        """[(value or None, cmdline)]: one entry per boot."""
        if model:
            extra = self.model_extra if self.model_extra is not None else self.extra
        else:
            extra = self.icount_extra if icount and self.icount_extra is not None \
                else self.extra
        words = ["bench=" + self.bench]
        if extra:
            words.append(extra)
        runs = runs or self.runs
        if runs:
            words.append("runs=%d" % runs)
        base = " ".join(words)
        if self.switchable:
            return [(None, "%s ab=%s:%s" % (base, self.variant, ",".join(self.values)))]
        return [(v, "%s %s=%s" % (base, self.variant, v)) for v in self.values]


# ---------------------------------------------------------------- analysis

def value_of(r, opt):
    return r.get("variants", {}).get(opt)


def group_by_value(results, opt, metric=None):
    """[(group, {value: result})] in first-seen order; group: the results' Figure without
    its variant (Figure.group)."""
    order, groups = [], {}
    for r in results:
        fig = Figure.of(r)
        if metric and fig.metric != metric:
            continue
        v = value_of(r, opt)
        if v is None:
            continue
        g = fig.group()
        if g not in groups:
            groups[g] = {}
            order.append(g)
        groups[g].setdefault(v, r)
    return [(g, groups[g]) for g in order]


def ev(r, name):
    return (r or {}).get("events", {}).get(name, 0.0)


def ops_per_s(r):
    v = (r or {}).get("extra", {}).get("ops_per_s")
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


class Analysis:
    """What a verdict reads: the experiment, its figures grouped by value, the mode."""

    def __init__(self, exp, results, icount, machine=None, model=None, model_args=None,
                 cpu_id=None):
        self.exp = exp
        self.cpu_id = cpu_id            # the host profile's CPU (None: this machine's)
        self.results = results
        self.icount = icount
        self.model = model              # cost-model profile name, or None
        # the plugin arguments the figures came from (core=ooo picks the panel the model
        # error is read from); None: BAREMM_MODEL_ARGS
        self.model_args = os.environ.get("BAREMM_MODEL_ARGS", "") if model_args is None \
            else model_args
        self.machine = machine
        self.groups = group_by_value(results, exp.variant, exp.metric)

    def mode(self):
        if self.model:
            return "cost model, profile %s, %s core (deterministic)" % (
                self.model, "out-of-order" if runner.core_ooo(self.model_args) else "in-order")
        return "deterministic mode (icount: 1 cycle = 1 instruction)" if self.icount \
            else "TCG wall time"

    def verdict(self):
        """dict(agree, ours, text, claims, linux): verdict.decide on this run."""
        if self.exp.thread is None:
            return {"agree": verdict.INCONCLUSIVE, "ours": "", "text": "", "claims": [],
                    "linux": []}
        return verdict.decide(self.exp, self.groups, self.icount, self.model, self.model_args,
                              cpu_id=self.cpu_id)


def fmt_ev(v):
    if v is None:
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return "%.0f" % v if float(v).is_integer() else "%.1f" % v
    if float(v).is_integer():
        return "%d" % v
    return "%.4f" % v


def event_tables(exp, results, all_events=False):
    """[(head, rows)] per figure: event counts per operation, one column per value. The
    experiment's key events come first, then every other event that differs by more than
    5 % between values (all of them with all_events)."""
    tables = []
    for g, byv in group_by_value(results, exp.variant, exp.metric):
        vals = [v for v in exp.values if v in byv] + [v for v in byv if v not in exp.values]
        names = [e for e in exp.key_events if any(e in byv[v]["events"] for v in vals)]
        others = set()
        for v in vals:
            others.update(byv[v]["events"])
        for e in sorted(others - set(names)):
            xs = [ev(byv[v], e) for v in vals]
            hi, lo = max(xs), min(xs)
            if all_events or (hi > 0 and (hi - lo) / hi > 0.05 and hi >= 0.001):
                names.append(e)
        rows = []
        if any(ops_per_s(byv[v]) is not None for v in vals):
            rows.append(["ops/s per CPU"] + [fmt_ev(ops_per_s(byv[v])) for v in vals])
        for e in names:
            rows.append([e] + [fmt_ev(byv[v]["events"].get(e, 0.0)) for v in vals])
        head = [g.name()] + [format_variant({exp.variant: v}) for v in vals]
        tables.append((head, rows))
    return tables


def events_table(exp, results, all_events=False):
    """event_tables() as aligned text."""
    out = []
    for head, rows in event_tables(exp, results, all_events):
        out += table.text_lines(table.columns(head, left=(0,)), rows)
        out.append("")
    if not out:
        return "(no figures with the variant %s)\n" % exp.variant
    return "\n".join(out)


def selected(exp, results):
    """The results that carry the experiment's variant (and metric)."""
    return [r for r in results if value_of(r, exp.variant) is not None
            and (not exp.metric or Figure.of(r).metric == exp.metric)]


# ---------------------------------------------------------------- the five
#
# Each thread's figures are stored once, in its verdict.MailThread; the header line, the
# summary table and the verdict prose are built from them (tools/baremm_lib/verdict.py
# has the rule). Linux costs: tools/linux-ref/reference.json.

V = verdict

# The page tables of the parent's region in seed 002's boot (tlb_rcu_mb=16384): a PT per
# 2 MiB, a PMD per GiB.
SEED002_TABLES = 16384 // 2 + 16384 // 1024
# A fork that copies no table of the region allocates at most the child's own top
# levels (one table per level).
FORK_OWN_TABLES = 4


def exercised_002(evs):
    """Seed 002: did the timed fork+exit copy and free the region's tables at all?"""
    off, on = evs.get("off", {}), evs.get("on", {})
    alloc, freed = off.get("pt_alloc", 0.0), off.get("pt_free", 0.0)
    deferred = on.get("rcu_deferred", 0.0)
    if alloc <= FORK_OWN_TABLES:
        what = ("the fork copied none of the region's %d page tables (as on Linux: the "
                "region is only read, zero-page entries, so it has no private pages): per "
                "fork+exit the copy allocated %s table page(s), the child's own top level, "
                "and the exit freed %s (%s of them after a grace period under "
                "ptfree_rcu=on). The region's tables are freed once, by the parent's exit "
                "after the timed forks, so what the thread timed hardly exercised the RCU "
                "path it asked about; tools/linux-ref's sparse_fork_reads counts the same "
                "on Linux 6.1 (the child of the 16 GiB reads-only process has 28 kB of "
                "page tables, as the child of an empty process). The second opinion "
                "(--alt, vm.sparse_tables) writes one byte, so there every table is copied "
                "and freed" % (SEED002_TABLES, verdict.fmt_count(round(alloc, 4)),
                               verdict.fmt_count(round(freed, 4)),
                               verdict.fmt_count(round(deferred, 4))))
    else:
        what = ("the fork copied the region's page tables: %s table pages allocated per "
                "fork+exit and %s freed (%s after a grace period under ptfree_rcu=on), "
                "which Linux's fork does not do for a region that is only read"
                % (verdict.fmt_count(round(alloc, 4)), verdict.fmt_count(round(freed, 4)),
                   verdict.fmt_count(round(deferred, 4))))
    return "What the timed fork+exit exercised: %s." % what


# Shared by the seeds' model notes (Experiment.model_note, model_note_ooo).
_CONTAINERS = ("contention between the 30 containers' CPUs (zone-lock and struct page cache "
               "lines bouncing between cores) exists only in the cross-CPU model; one CPU "
               "shows the per-page work alone")
_OOO_FRONT_END = ("its front end is only the dispatch width and the taken-branch rates "
                  "(taken_per_cycle; loop_taken_per_cycle in loops of at most loop_branches "
                  "taken branches) and one BTB level (btb_bubble cycles for a taken branch "
                  "beyond its btb_l0_entries), with no micro-op cache or decoders")

EXPERIMENTS = {
    "000": Experiment(
        "000", "page-table pages freed one by one vs in one bulk pass",
        "Is releasing an mmu_gather's page-table pages in one bulk pass measurably faster "
        "than a put_page() per page, under a load of many short-lived processes?",
        bench="tlb.ptfree_loop_vs_bulk", variant="ptfree", values=("loop", "bulk"),
        thread=V.MailThread("30 containers running a short fork-heavy script in parallel",
                        (V.Claim("time per run", 15360, 15170, "ms", ("loop", "bulk")),)),
        op="an address space's whole life (created, one page table built per 2 MiB read, "
           "destroyed)",
        explain=("pt_free", "ptfree_bulk", "free_pcp"),
        # An mm's birth and death is Linux's fork+exit of a tiny process; each table
        # built by a read fault and freed by the teardown is one sparse_munmap table.
        linux=V.LinuxCost((("fork_empty -", 1),
                           ("sparse_munmap gib=1,slot=0", "pt_alloc")),
                          "Linux: one fork+exit of a tiny process plus, per table page of "
                          "ours, one table built by a read fault and freed by munmap"),
        model_note=_CONTAINERS + ", and the in-order model gives the loop's independent "
                   "frees no overlap.",
        model_note_ooo=_CONTAINERS + ". The out-of-order core overlaps the loop's "
                       "independent frees only within its reorder window (the profile's "
                       "rob_size), and " + _OOO_FRONT_END + ".",
        key_events=("pt_alloc", "pt_free", "ptfree_bulk", "free_pcp", "free_bulk",
                    "zone_lock", "flush_req", "full_flush"),
        icount_extra="bench_cpus=1",
        alt={"bench": "alloc.free_bulk_vs_loop", "variant": "free_mode", "smp": 1}),
    "001": Experiment(
        "001", "page_fault3 threads: delayed rmap in the on-stack bundle only vs extra batches",
        "Does letting delayed-rmap pages use an extra batch (about 512 pages per flush "
        "instead of 8) fix the will-it-scale page_fault3 threads regression?",
        bench="tlb.page_fault3_threads", variant="rmapbatch", values=("local", "multi"),
        thread=V.MailThread(
            "will-it-scale page_fault3, 16 threads, dirty shared pages",
            (V.Claim("operations", 2256919, 4833919, "ops", ("local", "multi"),
                     throughput=True),
             V.Claim("remote-flush share of cycles", 8.17, 0.0, "%", ("local", "multi"),
                     ours="flush_ipi")),
            threads=16),
        op="one page fault on a dirty shared page plus its share of the unmap, every CPU "
           "a thread of one address space",
        explain=("force_flush", "flush_ipi", "invlpg"),
        linux=V.LinuxCost((("pf1 8MiB", 1),),
                          "Linux's figure is an anonymous fault with its share of mmap and "
                          "munmap (`pf1`); ours is a shared-file fault"),
        model_note="the in-order model gives the remote flush no overlap with other work; "
                   "IPI and cache-line transfer costs across CPUs come from the cross-CPU "
                   "model (docs/COSTMODEL.md), which prices them from the profile.",
        model_note_ooo="the out-of-order core cannot hide the remote flush behind other "
                       "work: the IPI's interrupt, the handler's IRET and each invlpg drain "
                       "its window, as serialising events do on hardware; IPI and cache-line "
                       "transfer costs across CPUs come from the cross-CPU model "
                       "(docs/COSTMODEL.md), which prices them from the profile.",
        key_events=("fault_shared", "rmap_remove", "force_flush", "gather_flush",
                    "flush_req", "flush_ipi", "ipi_sent", "invlpg", "full_flush"),
        model_smp=16,   # the thread's 16 threads
        alt={"bench": "vm.page_fault3", "extra": "vm_mode=threads"}),
    "002": Experiment(
        "002", "sparse page tables, fork+exit: tables freed after the flush vs after RCU",
        "Does freeing page tables after an RCU grace period (instead of right after the "
        "TLB flush) slow down a fork+exit that frees a great many page tables?",
        bench="tlb.ptfree_rcu", variant="ptfree_rcu", values=("off", "on"),
        thread=V.MailThread(
            "fork()+exit() of a process with 4096 x 1 GiB sparse mappings, one byte read "
            "per 2 MiB",
            (V.Claim("time per fork+exit", 4.8322, 4.8362, "s", ("off", "on")),),
            more="stddev 0.114 / 0.111 s: no significant change"),
        op="one fork (dup_mm) plus exit (mm_put) of a parent whose sparse region is only "
           "read, as in the thread's test",
        explain=("pt_alloc", "pt_free", "rcu_deferred", "ipi_sent", "free_bulk"),
        linux=V.LinuxCost((("sparse_fork_reads gib=16,slot=0", 1),),
                          "Linux: one fork + exit + wait of the thread's test at 16 GiB "
                          "(tools/linux-ref `sparse_fork_reads`), whose fork copies none "
                          "of the region's tables either"),
        # As Linux's fork (vma_needs_copy), dup_mm copies no table of a region without
        # private pages, and a read fault maps the zero page without making one: the
        # fork+exit of the thread's test builds and frees only the child's top levels.
        # tools/linux-ref counts the same on Linux 6.1: the child's VmPTE is 28 kB after
        # the fork of this 16 GiB process as after the fork of an empty one. 16 GiB =
        # 8208 tables in the parent; the alternative (vm.sparse_tables, one write) copies
        # and frees them all per fork+exit.
        exercised=exercised_002,
        mem="1G", extra="tlb_rcu_mb=16384", runs=4,
        # Interleaved in one boot: each tlb.ptfree_rcu round ends with rcu_barrier()
        # inside its timed region, so an `on` round pays for its own deferred frees and
        # never leaves them to the next (`off`) round.
        model_note="the grace period's wait is not a cost of the fork+exit itself; the "
                   "model prices where the deferred frees put the memory (cache and pcp "
                   "hotness), not the RCU machinery of a loaded system.",
        key_events=("pt_alloc", "pt_free", "flush_req", "ipi_sent", "free_pcp", "free_bulk"),
        alt={"bench": "vm.sparse_tables", "smp": 2, "exercised": None,
             "op": "one table page that the fork copies and the exit frees (the region "
                   "is read once per 2 MiB and written once, so it has private pages)",
             "linux": V.LinuxCost((("sparse_fork gib=16,slot=0", 1),),
                                  "Linux: one sparse_fork table (16 GiB region with its one "
                                  "write, fork+exit amortised) per table of ours")}),
    "003": Experiment(
        "003", "pcp bulk free: cached vs looked-up migratetype",
        "Does caching each pcp page's migratetype save time at bulk-free, or is looking "
        "it up from the pageblock as fast or faster?",
        bench="alloc.bulk10k", variant="pcp_mt", values=("cached", "lookup"),
        thread=V.MailThread(
            "every CPU allocates and frees batches of 10,000 pages, about 3x the pcp high "
            "mark",
            (V.Claim("time", 0.0869148, 0.0846799, "s", ("cached", "lookup"),
                     modes=("tcg",)),
             V.Claim("instructions", 126201294231, 126383351792, "instructions",
                     ("cached", "lookup"), modes=("icount",))),
            more="cycles -2.7%"),
        op="one batch of 10,000 alloc_page + free_page",
        explain=("pb_lookup", "free_bulk"),
        linux_none="tools/linux-ref measures no page-allocator-only operation (user space "
                   "cannot call alloc_page)",
        icount_note="An instruction count cannot show the thread's gain in cycles (fewer "
                    "stores and branch misses); judge the time claim under TCG on a quiet "
                    "host, KVM or hardware.",
        model_note="branch mispredictions and store-buffer effects, which the thread "
                   "names for its fewer cycles at more instructions: the model is in-order "
                   "and blocking, every branch predicted and every store priced like a load.",
        model_note_ooo="the out-of-order core predicts branches (a TAGE predictor, the "
                       "profile's mispredict penalty) and buffers stores, the two effects the "
                       "thread names for its fewer cycles at more instructions; "
                       + _OOO_FRONT_END + ", and across CPUs the zone lock's cache line "
                       "moves as the cross-CPU model prices it.",
        key_events=("alloc_pcp", "free_pcp", "pcp_refill", "free_bulk", "pb_lookup",
                    "zone_lock", "zone_contended"),
        icount_extra="bench_cpus=1",
        # every CPU on the zone lock (the thread: about 100 CPUs): 16, the most the 2-core
        # host runs in minutes, with the benchmark's 10 runs + 2 warm-ups per value (the
        # verdict's Welch interval needs them: 3 runs left it at about +-3 %). About 6 s
        # of host CPU per round + 60 s of boot; the timeout allows a host shared with
        # three other QEMUs (docs/COSTMODEL.md, "Scale").
        model_smp=16, model_timeout=2400,
        model_mem="1G",  # 16 CPUs x 10000 pages in flight = 625 MiB, with room
        alt={"bench": "alloc.bulk_resident"}),
    "004": Experiment(
        "004", "anonymous memory initialised by zero page / memset / reference page",
        "Do reference pages keep RSS equal to plain anonymous memory while giving "
        "non-zero initial contents, and what do they cost against memset?",
        bench="vm.refpage", variant="refpage_init", values=("zeropage", "memset", "refpage"),
        thread=V.MailThread(
            "pdfium, a real program",
            (V.Claim("max RSS", 107088, 107128, "KiB", ("zeropage", "refpage"),
                     ours="alloc_pcp"),
             V.Claim("max RSS", 107088, 112180, "KiB", ("zeropage", "memset"),
                     ours="alloc_pcp", cases=("touch_permille:0", "touch_permille:500"))),
            more="time 2.2371 / 2.2522 / 2.2438 s (anonymous / memset / refpage)"),
        op="a cycle that maps 4 MiB, gives it its initial contents, writes one page, half "
           "or all of it (touch_permille 0 / 500 / 1000) and unmaps; RSS is pages "
           "allocated (alloc_pcp)",
        explain=("alloc_pcp", "fault"),
        cost=("zeropage", "refpage"),
        linux=V.LinuxCost((("pf1 8MiB", "fault"),),
                          "Linux: one anonymous fault (`pf1`, map and unmap amortised) per "
                          "fault of ours"),
        icount_note="Under icount a rep stosq/movsq counts one instruction per 8 bytes, so "
                    "whole-page zeroing and copying weigh more than on hardware with fast "
                    "strings (docs/RESULTS.md).",
        smp=1,
        model_note="memory bandwidth of a whole program (pdfium) and page-cache "
                   "prefetch; rep stos/movs are priced per cache line from the profile's "
                   "rep_store_line, rep_fill_line and rep_mem_line, not per byte.",
        key_events=("fault", "fault_anon", "fault_ref", "alloc_pcp", "pt_alloc",
                    "flush_req")),
}

ORDER = ("000", "001", "002", "003", "004")


# ---------------------------------------------------------------- running

def merge_boot_results(exp, boots):
    """boots: [(value or None, record)]. Results of a boot per value get the variant
    `opt:value` so they line up like an in-boot A/B."""
    out = []
    for value, rec in boots:
        for r in rec.get("results", []):
            if value is not None and exp.variant not in r.get("variants", {}):
                r = dict(r)
                vs = dict(r.get("variants", {}))
                vs[exp.variant] = value
                r["variants"] = vs
                r["variant"] = format_variant(vs)
            out.append(r)
    return out


def report(exp, results, machine, icount, cmdlines, all_events=False, model=None):
    """The experiment's printed report (str) and its verdict dict."""
    out = []
    sel = selected(exp, results)
    out.append("== experiment %s: %s ==" % (exp.id, exp.title))
    out.append("question: %s" % exp.question)
    out.append("thread:   %s" % exp.thread_line())
    for c in cmdlines:
        out.append("boot:     %s" % c)
    out.append("")
    if sel:
        c = compare.compare_variants("experiment %s" % exp.id, sel, machine)
        t = compare.format_text(c).rstrip("\n")
        if not exp.switchable:
            t = t.replace("in-boot variants: each variant against the first variant of its "
                          "figure", "one boot per value: each value against the first")
        out.append(t)
    else:
        out.append("(no figures: the boot printed no result for %s with variant %s)"
                   % (exp.bench, exp.variant))
    out.append("")
    out.append("Events per operation (summed over CPUs), side by side:")
    out.append("")
    out.append(events_table(exp, sel, all_events).rstrip("\n"))
    out.append("")
    an = Analysis(exp, sel, icount, machine, model=model)
    v = an.verdict()
    out.append("Verdict (%s): %s" % (an.mode(), v["agree"]))
    out.append(textwrap.fill(v["text"], width=92, break_on_hyphens=False))
    return "\n".join(out) + "\n", v


def _profile_text(model):
    with open(runner.resolve_profile(model)) as f:
        return f.read()


def run_one(exp, a, top, out=sys.stdout):
    model = getattr(a, "model", None)
    icount = bool(a.icount or model)
    boots = []
    cls = exp.cmdlines(runs=a.runs, icount=icount, model=bool(model))
    smp = a.smp or (model and exp.model_smp) or exp.smp
    mem = a.mem or (model and exp.model_mem) or exp.mem
    for value, cmdline in cls:
        name = "seed%s%s" % (exp.id, "-" + runner.safe_name(value) if value else "")
        cfg = {"cmdline": cmdline, "smp": smp, "mem": mem, "cpu": "max",
               "firmware": "bios", "accel": a.accel, "icount": icount, "model": model,
               "timeout": a.timeout or (exp.model_timeout or exp.icount_timeout if model else
                                        exp.icount_timeout if icount else exp.timeout)}
        d = runner.new_dir(top, name)
        out.write("baremm: experiment %s: booting smp=%d%s: %s\n"
                  % (exp.id, smp, " model=" + model if model else " icount" if icount else "",
                     cmdline))
        out.flush()
        echo = runner.LineEcho(out, prefix="  | ") if a.verbose else None
        rec, _ = runner.boot(cfg, d, echo=echo, name=name, iso=a._iso)
        out.write("baremm: experiment %s: status=%s in %.1f s, %d results (%s)\n"
                  % (exp.id, rec["status"], rec["qemu"]["duration_s"], len(rec["results"]),
                     disp(os.path.join(d, "run.json"))))
        boots.append((value, rec))
    results = merge_boot_results(exp, boots)
    machine = next((r.get("machine") for _, r in boots if r.get("machine")), None)
    text, v = report(exp, results, machine, icount, [c for _, c in cls],
                     all_events=getattr(a, "all_events", False), model=model)
    out.write("\n" + text)
    status = 0
    for _, rec in boots:
        if rec["tool_exit"]:
            status = status or rec["tool_exit"]
    margs = os.environ.get("BAREMM_MODEL_ARGS", "") if model else ""
    summary = {"id": exp.id, "title": exp.title, "icount": icount, "model": model, "smp": smp,
               "model_args": margs,
               # the host profile is this CPU's: its verdict reads this CPU's panel, and
               # the calibration it came from is kept with the figures
               "cpu_id": runner.host_cpuinfo()["id"] if model == runner.HOST_PROFILE else None,
               "profile_text": _profile_text(model) if model == runner.HOST_PROFILE else None,
               "cmdlines": [c for _, c in cls], "verdict": v,
               "status": [rec["status"] for _, rec in boots],
               "results": results, "machine": machine}
    save_summary(summary, os.path.join(top, "experiment-%s.json" % exp.id))
    if getattr(a, "save", None):
        save_summary(summary, os.path.join(a.save, data_name(exp.id, icount,
                                                              getattr(a, "alt", False), model,
                                                              margs)))
    if a.plot:
        path = a.plot if len(getattr(a, "_ids", [exp.id])) == 1 else \
            _suffixed(a.plot, exp.id)
        recs = [{"results": results, "machine": machine, "config": None}]
        try:
            info = plotmod.plot(recs, exp.variant, path, bench=None,
                                title="seed %s: %s (%s)" % (exp.id, exp.title,
                                                            "icount" if icount else "TCG"))
            out.write("baremm: wrote %s (%d series)\n" % (path, len(info["series"])))
        except plotmod.PlotError as e:
            out.write("baremm: no plot: %s\n" % e)
            status = status or st.EXIT_TOOL_ERROR
    return summary, status


def data_name(ident, icount, alt=False, model=None, model_args="", cpu_id=None):
    """File name of an experiment's saved summary (docs/data/, `make seeds`): -ooo after
    the profile under the out-of-order core, so that both cores' runs sit side by side;
    the host profile's per CPU (its panel's name, modelerror.panel_name: host-<cpu>),
    since it describes the machine it ran on (@cpu_id: that machine's, default this one's)."""
    if model:
        mode = "model-" + runner.safe_name(modelerror.panel_name(model, model_args, cpu_id))
    else:
        mode = "icount" if icount else "tcg"
    return "seed-%s%s-%s.json" % (ident, "-alt" if alt else "", mode)


def save_summary(summary, path):
    with open(path + ".tmp", "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)


def _suffixed(path, ident):
    root, ext = os.path.splitext(path)
    return "%s-%s%s" % (root, ident, ext or ".png")


def disp(p):
    r = os.path.relpath(p)
    return p if r.startswith("..") else r


def summary_table(summaries):
    head = ["seed", "mode", "ours", "thread", "agree"]
    rows = []
    for s in summaries:
        exp = EXPERIMENTS[s["id"]]
        rows.append([s["id"], ("model:" + s["model"]) if s.get("model") else
                     "icount" if s["icount"] else "tcg", s["verdict"]["ours"],
                     exp.thread_line(), s["verdict"]["agree"]])
    return table.text(table.columns(head, left=range(len(head))), rows, rule=True)


def main(a, out=sys.stdout):
    ids = list(ORDER) if a.id == "all" else [a.id]
    for i in ids:
        if i not in EXPERIMENTS:
            sys.stderr.write("baremm: no experiment %r (000-004 or all)\n" % i)
            return st.EXIT_USAGE
    a._ids = ids
    try:
        if not a.no_build:
            runner.build(model=bool(getattr(a, "model", None)))
        top = runner.new_dir(os.path.join(runner.ROOT, "results"), "experiment-%s-%s%s"
                             % (a.id, runner.timestamp(),
                                "-model-" + runner.safe_name(a.model) if getattr(a, "model", None)
                                else "-icount" if a.icount else ""))
        # A private copy of the ISO keeps a concurrent rebuild away from these boots.
        a._iso = perfcheck.private_iso(top)
        if getattr(a, "save", None):
            os.makedirs(a.save, exist_ok=True)
        summaries, status = [], 0
        for i in ids:
            exp = EXPERIMENTS[i]
            if getattr(a, "alt", False):
                if not exp.alternative():
                    out.write("baremm: experiment %s has no second-opinion benchmark\n" % i)
                    continue
                exp = exp.alternative()
            s, rc = run_one(exp, a, top, out)
            summaries.append(s)
            status = status or rc
            out.write("\n")
    finally:
        perfcheck.remove_copy(getattr(a, "_iso", None))
    if len(summaries) > 1:
        out.write("== summary ==\n")
        out.write(summary_table(summaries))
    out.write("baremm: results in %s\n" % disp(top))
    return status


def add_parser(sub):
    p = sub.add_parser("experiment", help="re-run a seed experiment (000-004) or all of "
                       "them: A/B table, events, verdict against the thread")
    p.add_argument("id", metavar="NNN", help="000, 001, 002, 003, 004 or all")
    p.add_argument("--runs", type=int, default=None, help="measured runs per figure "
                   "(default: the benchmark's)")
    p.add_argument("--icount", action="store_true", help="deterministic mode (-icount "
                   + runner.ICOUNT + ")")
    p.add_argument("--model", metavar="PROFILE", default=None,
                   help="under the cycle-cost model with this CPU profile (implies icount; "
                        "docs/COSTMODEL.md)")
    p.add_argument("--plot", default=None, metavar="OUT.png",
                   help="write a PNG (with all: OUT-NNN.png per experiment)")
    p.add_argument("--no-build", action="store_true", help="do not run make first")
    p.add_argument("--smp", type=int, default=None, help="override the experiment's CPUs")
    p.add_argument("--mem", default=None, help="override the experiment's memory")
    p.add_argument("--accel", choices=("tcg", "tcg-single", "tcg-multi", "kvm", "auto"),
                   default="tcg")
    p.add_argument("--timeout", type=float, default=None, help="host timeout per boot")
    p.add_argument("--alt", action="store_true", help="run the alternative benchmark of "
                   "the same seed (vm.* / alloc.* second opinion) instead")
    p.add_argument("--all-events", action="store_true",
                   help="list every event, not only the key ones and those that differ")
    p.add_argument("--save", default=None, metavar="DIR", help="also write each experiment's "
                   "figures and verdict to DIR/seed-NNN-MODE.json (make seeds: docs/data, "
                   "read by tools/baremm docs)")
    p.add_argument("-v", "--verbose", action="store_true", help="echo the serial output")
    p.set_defaults(func=main)
    return p
