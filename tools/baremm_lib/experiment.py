"""`tools/baremm experiment NNN|all`: the five seed experiments (../shared/seeds/).

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

from . import compare, perfcheck, plot as plotmod, runner


class Experiment:
    def __init__(self, id, title, question, bench, variant, values, smp=2, mem="512M",
                 extra="", icount_extra=None, runs=None, switchable=True, metric=None,
                 key_events=(), thread="", verdict=None, timeout=600, icount_timeout=900,
                 alt=None, model_smp=None, model_extra=None, model_mem=None):
        self.id = id
        self.title = title
        self.question = question
        self.bench = bench              # bench= glob
        self.variant = variant          # variant option name
        self.values = list(values)      # its values; the first is the base
        self.smp = smp
        self.mem = mem
        self.extra = extra              # more command-line words (TCG and icount)
        self.icount_extra = extra if icount_extra is None else icount_extra
        # under the cost model CPUs interact in modelled time (issue 11), so the seeds
        # run at their threads' scale there: model_smp CPUs, every one taking part
        self.model_smp = model_smp
        self.model_extra = extra if model_extra is None else model_extra
        self.model_mem = model_mem
        self.runs = runs                # None: the benchmark's default
        self.switchable = switchable    # ab= in one boot, else a boot per value
        self.metric = metric            # only figures with this metric (None: all)
        self.key_events = list(key_events)
        self.thread = thread            # the thread's workload and figures, one line
        self.verdict = verdict          # fn(analysis) -> dict(agree, ours, text)
        self.timeout = timeout
        self.icount_timeout = icount_timeout
        self.alt = alt                  # dict: overrides for the second-opinion benchmark

    def alternative(self):
        """The same experiment on the other benchmark that covers this seed (--alt)."""
        if not self.alt:
            return None
        kw = dict(title=self.title, question=self.question, bench=self.bench,
                  variant=self.variant, values=self.values, smp=self.smp, mem=self.mem,
                  extra="", runs=self.runs, switchable=self.switchable,
                  key_events=self.key_events, thread=self.thread, verdict=self.verdict,
                  timeout=self.timeout, icount_timeout=self.icount_timeout)
        kw.update(self.alt)
        kw["title"] = "%s (second opinion: %s)" % (self.title, kw["bench"])
        return Experiment(self.id, **kw)

    def cmdlines(self, runs=None, icount=False, model=False):
        """[(value or None, cmdline)]: one entry per boot."""
        extra = self.model_extra if model else self.icount_extra if icount else self.extra
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
    """[(group, {value: result})] in first-seen order; group = (bench, metric, cpus)."""
    order, groups = [], {}
    for r in results:
        if metric and r["metric"].split("[")[0] != metric:
            continue
        v = value_of(r, opt)
        if v is None:
            continue
        g = (r["bench"], r["metric"], r["cpus"])
        if g not in groups:
            groups[g] = {}
            order.append(g)
        groups[g].setdefault(v, r)
    return [(g, groups[g]) for g in order]


def change(a, b):
    """%change of b's median against a's and whether it is significant (compare's rules)."""
    s = compare.significance(a, b)
    return s


def ev(r, name):
    return (r or {}).get("events", {}).get(name, 0.0)


def ops_per_s(r):
    v = (r or {}).get("extra", {}).get("ops_per_s")
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


class Analysis:
    """What a verdict function reads: the groups, the mode, the experiment."""

    def __init__(self, exp, results, icount, machine=None, model=None):
        self.exp = exp
        self.results = results
        self.icount = icount
        self.model = model              # cost-model profile name, or None
        self.machine = machine
        self.groups = group_by_value(results, exp.variant, exp.metric)

    def unit_word(self):
        if self.model:
            return "model cycles"
        return "instructions" if self.icount else "cycles"

    def mode(self):
        if self.model:
            return "cost model, profile %s (deterministic)" % self.model
        return "deterministic mode (icount: 1 cycle = 1 instruction)" if self.icount \
            else "TCG wall time"

    def pair(self, a, b, group_index=0):
        if len(self.groups) <= group_index:
            return None, None, None
        _, byv = self.groups[group_index]
        ra, rb = byv.get(a), byv.get(b)
        if ra is None or rb is None:
            return ra, rb, None
        return ra, rb, change(ra, rb)


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


def sig_str(ch):
    if ch is None:
        return "n/a"
    mark = "significant" if ch["significant"] else "not significant"
    if ch["test"] == "welch":
        how = "Welch p=%.2g" % ch["p"]
    elif ch["test"] == "exact":
        how = "exact, zero spread"
    else:
        how = "2-stddev rule"
    return "%s (%s)" % (mark, how)


def events_table(exp, results, all_events=False):
    """Event counts per operation, one column per variant value, per figure."""
    out = []
    for (bench, metric, cpus), byv in group_by_value(results, exp.variant, exp.metric):
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
        head = ["%s.%s cpus=%d" % (bench, metric, cpus)] + \
            ["%s:%s" % (exp.variant, v) for v in vals]
        widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
        out.append("  ".join(h.ljust(widths[0]) if i == 0 else h.rjust(widths[i])
                             for i, h in enumerate(head)).rstrip())
        for r in rows:
            out.append("  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i])
                                 for i, c in enumerate(r)).rstrip())
        out.append("")
    if not out:
        return "(no figures with the variant %s)\n" % exp.variant
    return "\n".join(out)


# ---------------------------------------------------------------- verdicts
#
# Each returns dict(agree = "yes" | "no" | "partly" | "inconclusive", ours = short figure,
# text = one paragraph). They read only the parsed figures, so they are unit-tested on
# recorded logs (tests/tools/test_experiment.py).

def _pct(ch):
    return "n/a" if ch is None or ch["pct"] is None else "%+.1f%%" % ch["pct"]


def cpus_str(r):
    n = r.get("cpus", 1)
    return "one CPU" if n == 1 else "each of %d CPUs" % n


def _noise(r):
    return r["pstddev"] if r else 0.0


def verdict_000(an):
    a, b, ch = an.pair("loop", "bulk")
    if ch is None:
        return {"agree": "inconclusive", "ours": "no figures",
                "text": "No figures for ptfree:loop and ptfree:bulk were found."}
    thread = 100.0 * (15170 - 15360) / 15360
    fb_a, fb_b = ev(a, "ptfree_bulk"), ev(b, "ptfree_bulk")
    pf_a, pf_b = ev(a, "pt_free"), ev(b, "pt_free")
    ours = "%s per address space" % _pct(ch)
    noise = max(_noise(a), _noise(b))
    if ch["significant"] and ch["pct"] < 0:
        agree = "yes"
        how = "agrees in direction with the thread"
    elif ch["significant"] and ch["pct"] > 0:
        agree = "no"
        how = "goes the other way from the thread"
    elif noise > 3 * abs(thread):
        agree = "inconclusive"
        how = ("cannot resolve the thread's effect: a %.1f%% change is well inside our "
               "spread of ±%.1f%%" % (abs(thread), noise))
    else:
        agree = "no"
        how = "finds no difference where the thread saw one"
    text = ("The thread (30 containers running a short shell script in parallel) measured "
            "15360 -> 15170 ms per run (%+.1f%%) when page-table pages are released in one "
            "bulk pass instead of one put_page() each. Here an address space's whole life "
            "(create, one page table per 2 MiB read, destroy) on %s at once costs "
            "%s -> %s %s with ptfree:bulk, %s, %s: this %s. Both variants free the same "
            "table pages (pt_free %s -> %s per op); what changes is the path: %s -> %s bulk "
            "passes per op (ptfree_bulk) instead of one free per table."
            % (thread, cpus_str(a), compare.fmt_num(a["median"]),
               compare.fmt_num(b["median"]), an.unit_word(), _pct(ch), sig_str(ch), how,
               fmt_ev(pf_a), fmt_ev(pf_b), fmt_ev(fb_a), fmt_ev(fb_b)))
    return {"agree": agree, "ours": ours, "text": text}


def verdict_001(an):
    a, b, ch = an.pair("local", "multi")
    if ch is None:
        return {"agree": "inconclusive", "ours": "no figures",
                "text": "No figures for rmapbatch:local and rmapbatch:multi were found."}
    speed = 100.0 * (a["median"] / b["median"] - 1.0) if b["median"] else None
    ipi_a, ipi_b = ev(a, "flush_ipi"), ev(b, "flush_ipi")
    inv_a, inv_b = ev(a, "invlpg"), ev(b, "invlpg")
    ff_a, ff_b = ev(a, "force_flush"), ev(b, "force_flush")
    ratio = (ipi_a / ipi_b) if ipi_b else (float("inf") if ipi_a else 1.0)
    ratio_s = "%.0fx" % ratio if ratio != float("inf") else "to zero"
    faster = ch["significant"] and ch["pct"] < 0
    fewer = ratio >= 5
    if faster and fewer:
        agree = "yes"
    elif fewer:
        agree = "partly"
    else:
        agree = "no"
    ours = "%+.0f%% ops/s; flush IPIs/op %s -> %s" % (speed, fmt_ev(ipi_a), fmt_ev(ipi_b))
    text = ("The thread (will-it-scale page_fault3, 16 threads, dirty shared pages) saw "
            "+114%% operations (2256919 -> 4833919) once the delayed rmap could use an "
            "extra batch, and the remote TLB flush (8.17%% of cycles) vanished from the "
            "profile. Here, with every CPU a thread of one address space, one page fault "
            "plus its share of the unmap costs %s -> %s %s (%s, %s): %+.0f%% operations per "
            "second. The mechanism shows in the events: forced flushes %s -> %s per op "
            "(every 8 pages under local), flush IPIs %s -> %s per op (%s fewer), INVLPG "
            "%s -> %s per op. %s"
            % (compare.fmt_num(a["median"]), compare.fmt_num(b["median"]), an.unit_word(),
               _pct(ch), sig_str(ch), speed, fmt_ev(ff_a), fmt_ev(ff_b), fmt_ev(ipi_a),
               fmt_ev(ipi_b), ratio_s, fmt_ev(inv_a), fmt_ev(inv_b),
               {"yes": "We agree: the flushes all but disappear and throughput rises%s." % (
                    "" if (a.get("cpus") or 0) >= 16 else
                    ", by less than the thread's +114%% with %s CPUs instead of 16 (fewer "
                    "remote CPUs to interrupt per flush)" % (a.get("cpus") or "fewer")),
                "partly": "The flushes disappear as in the thread, but the time change is "
                          "not significant here.",
                "no": "We do not reproduce the thread's result."}[agree]))
    return {"agree": agree, "ours": ours, "text": text}


def verdict_002(an):
    a, b, ch = an.pair("off", "on")
    if ch is None:
        return {"agree": "inconclusive", "ours": "no figures",
                "text": "No figures for ptfree_rcu:off and ptfree_rcu:on were found."}
    thread = 100.0 * (4.8362 - 4.8322) / 4.8322
    small = abs(ch["pct"]) < 5.0
    if not ch["significant"]:
        agree, how = "yes", "no significant change, as in the thread"
    elif small:
        agree, how = "yes", ("a change that is measurable only because the run is "
                             "deterministic, and small (under 5%), as in the thread")
    else:
        agree, how = "no", "a significant change the thread did not see"
    ipi_a, ipi_b = ev(a, "ipi_sent"), ev(b, "ipi_sent")
    text = ("The thread timed fork()+exit() of a process with 4096 x 1 GiB mappings, one "
            "byte read per 2 MiB (a page table per touch), with page tables freed right "
            "after the TLB flush or after an RCU grace period: 4.8322 s vs 4.8362 s "
            "(%+.2f%%, stddev 0.11 s): no significant change. Here one fork+exit of a "
            "parent with a sparse region costs %s -> %s %s (%s, %s): %s. The deferred "
            "free adds grace-period work that shows in the events (IPIs sent %s -> %s per "
            "fork+exit), not in the table count."
            % (thread, compare.fmt_num(a["median"]), compare.fmt_num(b["median"]),
               an.unit_word(), _pct(ch), sig_str(ch), how, fmt_ev(ipi_a), fmt_ev(ipi_b)))
    return {"agree": agree, "ours": ours_pct(ch), "text": text}


def ours_pct(ch):
    return "%s (%s)" % (_pct(ch), "significant" if ch and ch["significant"] else
                        "not significant")


def verdict_003(an):
    a, b, ch = an.pair("cached", "lookup")
    if ch is None:
        return {"agree": "inconclusive", "ours": "no figures",
                "text": "No figures for pcp_mt:cached and pcp_mt:lookup were found."}
    thread = 100.0 * (0.0846799 - 0.0869148) / 0.0869148
    pb_a, pb_b = ev(a, "pb_lookup"), ev(b, "pb_lookup")
    if an.icount:
        # an instruction count: compare with the thread's instructions (+0.14 %)
        if abs(ch["pct"]) < 1.0 or (not ch["significant"]
                                    and max(_noise(a), _noise(b)) < 1.0):
            agree, how = "yes", ("about the same instruction count without the cache, as "
                                 "the thread's instruction count (+0.14%)")
        elif not ch["significant"]:
            agree, how = "inconclusive", ("no significant change, but the counts spread "
                                          "±%.1f%% (several CPUs taking turns)"
                                          % max(_noise(a), _noise(b)))
        else:
            agree, how = "no", ("%s instructions without the cache, where the thread's "
                                "instruction count moved only +0.14%%"
                                % ("more" if ch["pct"] > 0 else "fewer"))
    elif ch["significant"] and ch["pct"] < 0:
        agree, how = "yes", "faster without the cache, as in the thread"
    elif ch["significant"] and ch["pct"] > 0:
        agree, how = "no", "slower without the cache, the opposite of the thread"
    elif max(_noise(a), _noise(b)) > 2 * abs(thread):
        agree, how = "inconclusive", ("no significant change; our spread (±%.1f%%) is "
                                      "larger than the thread's effect"
                                      % max(_noise(a), _noise(b)))
    else:
        agree, how = "no", "no significant change where the thread saw one"
    extra = ""
    if an.icount:
        extra = (" Under icount the figure is an instruction count: the thread's "
                 "instructions barely moved (+0.14%) while its cycles fell 2.6%, a gain "
                 "from fewer cache writes and branch misses that an instruction count "
                 "cannot show; judge the time claim under TCG or on hardware.")
    text = ("The thread had every CPU allocate and free batches of 10,000 pages (about 3x "
            "the pcp high mark, so the lists overflow and bulk-free) and saw 0.0869 -> "
            "0.0847 s (%+.1f%%) when the per-page cached migratetype was dropped and the "
            "pageblock looked up at bulk-free time instead. Here one batch of 10,000 "
            "alloc_page + free_page on %s costs %s -> %s %s (%s, %s): %s. The "
            "lookup variant reads the pageblock bitmap for every page it bulk-frees "
            "(pb_lookup %s -> %s per batch) instead of the cached byte.%s"
            % (thread, cpus_str(a), compare.fmt_num(a["median"]),
               compare.fmt_num(b["median"]), an.unit_word(), _pct(ch), sig_str(ch), how,
               fmt_ev(pb_a), fmt_ev(pb_b), extra))
    return {"agree": agree, "ours": ours_pct(ch), "text": text}


def verdict_004(an):
    rows = []
    equal = True
    found = False
    memset_more = True
    for (bench, metric, cpus), byv in an.groups:
        z, m, r = byv.get("zeropage"), byv.get("memset"), byv.get("refpage")
        if not (z and r):
            continue
        found = True
        az, ar = ev(z, "alloc_pcp"), ev(r, "alloc_pcp")
        am = ev(m, "alloc_pcp") if m else None
        if abs(az - ar) > 0.5:
            equal = False
        if am is not None and am < az:
            memset_more = False
        case = metric.split("[", 1)[1].rstrip("]") if "[" in metric else metric
        rows.append("%s: %s / %s / %s pages" % (case, fmt_ev(az), fmt_ev(am), fmt_ev(ar)))
    if not found:
        return {"agree": "inconclusive", "ours": "no figures",
                "text": "No figures for refpage_init:zeropage and refpage_init:refpage."}
    agree = "yes" if equal else "no"
    ours = "pages allocated refpage %s zeropage" % ("=" if equal else "!=")
    text = ("The thread (pdfium, real program) measured max RSS 107088 KiB for plain "
            "anonymous memory, 112180 KiB (+4.8%%) when the allocator memsets, and 107128 "
            "KiB with reference pages: RSS equal to plain anonymous memory; time 2.2371 / "
            "2.2522 / 2.2438 s. Here a cycle maps 4 MiB, initialises it the three ways and "
            "writes one page, half or all of it. Pages allocated per cycle (data plus "
            "tables; zeropage / memset / refpage): %s. %s %s"
            % ("; ".join(rows),
               "Reference pages allocate exactly what plain anonymous memory allocates for "
               "the same touches, while the eager memset allocates everything up front: we "
               "agree with the thread." if equal else
               "Reference pages do not allocate what plain anonymous memory allocates: we "
               "do not reproduce the thread.",
               "" if memset_more else "(memset allocated fewer pages than zeropage in some "
               "case, which is unexpected.)"))
    if an.icount:
        text += (" Time is not comparable to the thread's: under icount a rep stosb/movsb "
                 "counts one instruction per byte, so zeroing and copying dominate "
                 "(docs/RESULTS.md).")
    return {"agree": agree, "ours": ours, "text": text}


# ---------------------------------------------------------------- the five

EXPERIMENTS = {
    "000": Experiment(
        "000", "page-table pages freed one by one vs in one bulk pass",
        "Is releasing an mmu_gather's page-table pages in one bulk pass measurably faster "
        "than a put_page() per page, under a load of many short-lived processes?",
        bench="tlb.ptfree_loop_vs_bulk", variant="ptfree", values=("loop", "bulk"),
        key_events=("pt_alloc", "pt_free", "ptfree_bulk", "free_pcp", "free_bulk",
                    "zone_lock", "flush_req", "full_flush"),
        icount_extra="bench_cpus=1",
        thread="30 containers running a short script in parallel: 15360 -> 15170 ms per run",
        verdict=verdict_000,
        alt={"bench": "alloc.free_bulk_vs_loop", "variant": "free_mode", "smp": 1}),
    "001": Experiment(
        "001", "page_fault3 threads: delayed rmap in the on-stack bundle only vs extra batches",
        "Does letting delayed-rmap pages use an extra batch (about 512 pages per flush "
        "instead of 8) fix the will-it-scale page_fault3 threads regression?",
        bench="tlb.page_fault3_threads", variant="rmapbatch", values=("local", "multi"),
        key_events=("fault_shared", "rmap_remove", "force_flush", "gather_flush",
                    "flush_req", "flush_ipi", "ipi_sent", "invlpg", "full_flush"),
        thread="will-it-scale page_fault3, 16 threads: 2256919 -> 4833919 ops (+114%); "
               "TLB-flush cycles 8.17% -> 0",
        verdict=verdict_001,
        model_smp=16,   # the thread's 16 threads
        alt={"bench": "vm.page_fault3", "extra": "vm_mode=threads"}),
    "002": Experiment(
        "002", "sparse page tables, fork+exit: tables freed after the flush vs after RCU",
        "Does freeing page tables after an RCU grace period (instead of right after the "
        "TLB flush) slow down a fork+exit that frees a great many page tables?",
        bench="tlb.ptfree_rcu", variant="ptfree_rcu", values=("off", "on"),
        # 16 GiB sparse = 8192 page tables per fork+exit: at this size both variants
        # overflow the pcp lists alike, as the thread's 4 TiB did (at 1 GiB, 512 tables,
        # `off` recycles pcp-hot pages and `on` does not: +19% under icount).
        mem="1G", extra="tlb_rcu_mb=16384", runs=4,
        # Interleaved in one boot: each tlb.ptfree_rcu round ends with rcu_barrier()
        # inside its timed region, so an `on` round pays for its own deferred frees and
        # never leaves them to the next (`off`) round.
        key_events=("pt_alloc", "pt_free", "flush_req", "ipi_sent", "free_pcp", "free_bulk"),
        thread="fork()+exit() with 4096 x 1 GiB sparse mappings: 4.8322 s vs 4.8362 s "
               "(no significant change)",
        verdict=verdict_002,
        alt={"bench": "vm.sparse_tables", "smp": 2}),
    "003": Experiment(
        "003", "pcp bulk free: cached vs looked-up migratetype",
        "Does caching each pcp page's migratetype save time at bulk-free, or is looking "
        "it up from the pageblock as fast or faster?",
        bench="alloc.bulk10k", variant="pcp_mt", values=("cached", "lookup"),
        key_events=("alloc_pcp", "free_pcp", "pcp_refill", "free_bulk", "pb_lookup",
                    "zone_lock", "zone_contended"),
        icount_extra="bench_cpus=1",
        thread="every CPU allocs and frees batches of 10,000 pages: 0.0869 -> 0.0847 s "
               "(-2.6%)",
        verdict=verdict_003,
        model_smp=16,   # every CPU on the zone lock (the thread: about 100 CPUs)
        model_mem="1G",  # 16 CPUs x 10000 pages in flight = 625 MiB
        alt={"bench": "alloc.bulk_resident"}),
    "004": Experiment(
        "004", "anonymous memory initialised by zero page / memset / reference page",
        "Do reference pages keep RSS equal to plain anonymous memory while giving "
        "non-zero initial contents, and what do they cost against memset?",
        bench="vm.refpage", variant="refpage_init", values=("zeropage", "memset", "refpage"),
        smp=1,
        key_events=("fault", "fault_anon", "fault_ref", "alloc_pcp", "pt_alloc",
                    "flush_req"),
        thread="pdfium: max RSS 107088 / 112180 / 107128 KiB (anon / memset / refpage); "
               "time 2.2371 / 2.2522 / 2.2438 s",
        verdict=verdict_004),
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
                r["variant"] = ",".join("%s:%s" % kv for kv in vs.items())
            out.append(r)
    return out


def report(exp, results, machine, icount, cmdlines, all_events=False, model=None):
    """The experiment's printed report (str) and its verdict dict."""
    out = []
    sel = [r for r in results if value_of(r, exp.variant) is not None
           and (not exp.metric or r["metric"].split("[")[0] == exp.metric)]
    out.append("== experiment %s: %s ==" % (exp.id, exp.title))
    out.append("question: %s" % exp.question)
    out.append("thread:   %s" % exp.thread)
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
    v = exp.verdict(an) if exp.verdict else {"agree": "inconclusive", "ours": "",
                                              "text": ""}
    out.append("Verdict (%s): %s" % (an.mode(), v["agree"]))
    out.append(wrap(v["text"]))
    return "\n".join(out) + "\n", v


def wrap(text, width=92):
    words, lines, cur = text.split(), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + " " + w) if cur else w
    if cur:
        lines.append(cur)
    return "\n".join(lines)


def run_one(exp, a, top, out=sys.stdout):
    model = getattr(a, "model", None)
    icount = bool(a.icount or model)
    boots = []
    cls = exp.cmdlines(runs=a.runs, icount=icount, model=bool(model))
    smp = a.smp or (model and exp.model_smp) or exp.smp
    for value, cmdline in cls:
        name = "seed%s%s" % (exp.id, "-" + runner.safe_name(value) if value else "")
        mem = a.mem or (model and exp.model_mem) or exp.mem
        cfg = {"cmdline": cmdline, "smp": smp, "mem": mem, "cpu": "max",
               "firmware": "bios", "accel": a.accel, "icount": icount, "model": model,
               "timeout": a.timeout or (exp.icount_timeout if icount else exp.timeout)}
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
    summary = {"id": exp.id, "title": exp.title, "icount": icount, "model": model, "smp": smp,
               "cmdlines": [c for _, c in cls], "verdict": v,
               "status": [rec["status"] for _, rec in boots],
               "results": results, "machine": machine}
    with open(os.path.join(top, "experiment-%s.json" % exp.id), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
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
            status = status or 20
    return summary, status


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
        rows.append([s["id"], ("model:" + s["model"]) if s.get("model") else "icount" if s["icount"] else "tcg", s["verdict"]["ours"],
                     exp.thread, s["verdict"]["agree"]])
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()
             for r in [head] + [["-" * w for w in widths]] + rows]
    return "\n".join(lines) + "\n"


def main(a, out=sys.stdout):
    ids = list(ORDER) if a.id == "all" else [a.id]
    for i in ids:
        if i not in EXPERIMENTS:
            sys.stderr.write("baremm: no experiment %r (000-004 or all)\n" % i)
            return 2
    a._ids = ids
    try:
        if not a.no_build:
            runner.build(model=bool(getattr(a, "model", None)))
        top = runner.new_dir(os.path.join(runner.ROOT, "results"), "experiment-%s-%s%s"
                             % (a.id, runner.timestamp(),
                                "-model-" + runner.safe_name(a.model) if getattr(a, "model", None)
                                else "-icount" if a.icount else ""))
        # A private copy of the ISO without GRUB's 1 s menu wait (about 55 s of host time
        # under icount); a copy also keeps a concurrent rebuild away from these boots.
        a._iso = perfcheck.no_menu_iso(os.path.join(runner.ROOT, runner.ISO), top,
                                       always_copy=True)
        summaries, status = [], 0
        for i in ids:
            exp = EXPERIMENTS[i]
            if getattr(a, "alt", False):
                if not exp.alternative():
                    out.write("baremm: experiment %s has no second-opinion benchmark\n" % i)
                    continue
                exp = exp.alternative()
            s, st = run_one(exp, a, top, out)
            summaries.append(s)
            status = status or st
            out.write("\n")
    except runner.ToolError as e:
        sys.stderr.write("baremm: %s\n" % e)
        return 20
    except KeyboardInterrupt:
        runner.kill_all()
        sys.stderr.write("baremm: interrupted\n")
        return 130
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
    p.add_argument("-v", "--verbose", action="store_true", help="echo the serial output")
    p.set_defaults(func=main)
    return p
