"""Known-answer checks of the cycle-cost model (docs/COSTMODEL.md, "Validation").

`tools/baremm model-check` boots the known-answer benchmarks (bench/model.c) under the
model once per profile and checks what the profile file says they must show:

- pointer chase: every working set that lies inside one level (not exactly a cache's
  size, where true LRU sits between two plateaus) costs base_cpi x its instructions per
  load + that level's latency, within TOLERANCE; each of L1, L2, LLC and memory has at
  least one such point (the plateaus exist);
- TLB reach: while the pages fit the L1 dTLB, no TLB cost; up to the STLB size, one
  stlb_lat more; beyond it, one page walk per load;
- INVLPG then a load costs exactly one walk, a load alone none;
- a CR3 reload keeps a global entry (no walk) and drops a non-global one (one walk);
- across two CPUs (modelcheck_smp): a cache-line ping-pong, by stores or by lock xadd,
  costs two core-to-core transfers per round trip, an empty IPI round trip about twice
  the profile's IPI latency plus interrupt entry and exit (x2APIC and xAPIC), a
  synchronous call to the other CPU costs the same as the call to all (reads are causal
  in modelled time), and a clean line from another CPU's LLC costs llc_lat, or the
  cross-socket latency from another socket's (CCD's) LLC;
- every figure's parts (where its cycles went) add up to its median;
- nested paging (the first profile again with nested_page_kib = 4, the pointer chase
  alone): the direct map's huge pages are held as 4 KiB entries, so a working set beyond
  the L1 dTLB's 4 KiB reach misses it on most loads and pays stlb_lat, one beyond twice
  the STLB's walks on most loads, each walk at least walk_overhead + its three upper
  table loads + the nested leaf load (an L1 hit each at best), and the chase's cycles are
  the level's latency plus those; the same chase without nested paging misses no TLB.

Under the out-of-order core (`--core ooo`, plugin argument core=ooo) what changes is what an
out-of-order core must change: a dependent chase costs the level's latency alone (the
loop's other instructions run in the shadow of the chain); the TLB-reach loads do not
depend on each other, so they overlap and only the event counts (one walk per load beyond
the STLB) and an ordering (beyond the STLB costs more than inside the L1 dTLB) are known
answers; the walk cases and the parts are checked as for the in-order core. The two-CPU
known answers price one CPU's own path serially (the in-order core's rule); under core=ooo
only their parts and their repeatability (two boots, identical figures) are checked.

The expectations come from the profile file alone, so a profile or model change that
moves a plateau fails here. The check functions read parsed results only, so they are
unit-tested on synthetic figures (tests/tools/test_modelcheck.py).
"""
import math
import os
import sys

from . import modelcheck_smp, runner, status as st
from .figure import split_metric

TOLERANCE = 0.05            # relative
CMDLINE = "bench=model.*"
MEM = "1G"


class ProfileError(Exception):
    pass


def load_profile(path):
    """`key = value  # source` lines -> {key: float or str}."""
    prof = {}
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "=" not in line:
                raise ProfileError("%s:%d: expected key = value" % (path, n))
            k, v = (x.strip() for x in line.split("=", 1))
            try:
                prof[k] = float(v)
            except ValueError:
                prof[k] = v
    for k in ("base_cpi", "l1d_kib", "l1d_lat", "l2_kib", "l2_lat", "llc_kib", "llc_lat",
              "mem_lat", "dtlb4k_entries", "stlb_entries", "stlb_lat"):
        if not isinstance(prof.get(k), float):
            raise ProfileError("%s: no numeric %s" % (path, k))
    return prof


def _case_value(r):
    """`metric[name:value]` -> int(value)."""
    return int(split_metric(r["metric"])[1].partition(":")[2])


def _figures(results, bench):
    return sorted(((_case_value(r), r) for r in results if r["bench"] == bench),
                  key=lambda x: x[0])


def _insns(r):
    if r.get("instructions") is None:
        raise ProfileError("%s has no instruction count (not a model run?)" % r["metric"])
    return r["instructions"]


def chase_level(nbytes, prof):
    """The level that holds a working set, or None at a cache's exact size."""
    sizes = [("l1", prof["l1d_kib"] * 1024), ("l2", prof["l2_kib"] * 1024),
             ("llc", prof["llc_kib"] * 1024)]
    for name, size in sizes:
        if nbytes == size and name != "l1":
            return None
        if nbytes <= size:
            return name
    return "mem"


def _within(got, want):
    return abs(got - want) <= TOLERANCE * want


def check_pointer_chase(results, prof, core="inorder"):
    fails, seen = [], set()
    lat = {"l1": prof["l1d_lat"], "l2": prof["l2_lat"], "llc": prof["llc_lat"],
           "mem": prof["mem_lat"]}
    figs = _figures(results, "model.pointer_chase")
    if not figs:
        return ["model.pointer_chase: no figures"]
    for nbytes, r in figs:
        level = chase_level(nbytes, prof)
        if level is None:
            continue
        want = lat[level] + (prof["base_cpi"] * _insns(r) if core == "inorder" else 0)
        if _within(r["median"], want):
            seen.add(level)
        else:
            fails.append("pointer_chase %d bytes (%s): %.2f cycles/load, expected %.2f +-%d%%"
                         % (nbytes, level, r["median"], want, TOLERANCE * 100))
    for level in ("l1", "l2", "llc", "mem"):
        if level not in seen:
            fails.append("pointer_chase: no %s plateau within %d%% of the profile"
                         % (level, TOLERANCE * 100))
    return fails


def check_tlb_reach(results, prof, core="inorder"):
    fails = []
    figs = _figures(results, "model.tlb_reach")
    if not figs:
        return ["model.tlb_reach: no figures"]
    if core != "inorder":
        return check_tlb_reach_ooo(figs, prof)
    hit = prof["l1d_lat"]
    walked = False
    for pages, r in figs:
        base = prof["base_cpi"] * _insns(r) + hit
        walks = r["events"].get("model_walk", 0)
        if pages <= prof["dtlb4k_entries"]:
            want, what = base, "no TLB cost"
        elif pages < prof["stlb_entries"]:
            want, what = base + prof["stlb_lat"], "one STLB hit"
        elif pages >= 2 * prof["stlb_entries"]:
            walked = True
            if not 0.95 <= walks <= 1.05:
                fails.append("tlb_reach %d pages: %.4f walks per load, expected 1"
                             % (pages, walks))
            if r["median"] <= base + prof["stlb_lat"]:
                fails.append("tlb_reach %d pages: %.2f cycles/load, no more than an STLB hit"
                             % (pages, r["median"]))
            continue
        else:
            continue        # around the STLB's size: between two steps
        if not _within(r["median"], want):
            fails.append("tlb_reach %d pages: %.2f cycles/load, expected %.2f (%s) +-%d%%"
                         % (pages, r["median"], want, what, TOLERANCE * 100))
    if not walked:
        fails.append("tlb_reach: no case beyond twice the STLB size")
    return fails


def check_tlb_reach_ooo(figs, prof):
    """The out-of-order core's TLB-reach answers: one walk per load beyond twice the STLB,
    none inside the L1 dTLB, and the walked loads cost more than the L1 dTLB hits."""
    fails, inside, beyond = [], [], []
    for pages, r in figs:
        walks = r["events"].get("model_walk", 0)
        if pages <= prof["dtlb4k_entries"]:
            inside.append(r["median"])
            if walks > 0.01:
                fails.append("tlb_reach %d pages: %.4f walks per load, expected 0" % (pages, walks))
        elif pages >= 2 * prof["stlb_entries"]:
            beyond.append(r["median"])
            if not 0.95 <= walks <= 1.05:
                fails.append("tlb_reach %d pages: %.4f walks per load, expected 1" % (pages, walks))
    if not inside or not beyond:
        fails.append("tlb_reach: no case inside the L1 dTLB or beyond twice the STLB size")
    elif min(beyond) <= max(inside):
        fails.append("tlb_reach: walked loads (%.2f cycles/load at least) cost no more than "
                     "L1 dTLB hits (%.2f at most)" % (min(beyond), max(inside)))
    return fails


def _walks_by_case(results, bench):
    return {v: r["events"].get("model_walk", 0) for v, r in _figures(results, bench)}


def check_walk_cases(results):
    fails = []
    inv = _walks_by_case(results, "model.invlpg_walk")
    cr3 = _walks_by_case(results, "model.cr3_global")
    expect = [("invlpg_walk invlpg:1 (INVLPG then a load)", inv.get(1), 1.0),
              ("invlpg_walk invlpg:0 (a load alone)", inv.get(0), 0.0),
              ("cr3_global global:1 (global page after a CR3 reload)", cr3.get(1), 0.0),
              ("cr3_global global:0 (non-global page after a CR3 reload)", cr3.get(0), 1.0)]
    for what, got, want in expect:
        if got is None:
            fails.append("%s: no figure" % what)
        elif abs(got - want) > 0.01:
            fails.append("%s: %.4f walks per op, expected %g" % (what, got, want))
    return fails


NESTED_CMDLINE = "bench=model.pointer_chase"
NESTED_KIB = 4


def nested_profile_text(text):
    """@text (a profile file) with nested_page_kib = NESTED_KIB."""
    out, done = [], False
    for line in text.splitlines():
        if line.partition("#")[0].partition("=")[0].strip() == "nested_page_kib":
            line = "nested_page_kib = %d   # model-check: nested paging over 4 KiB host pages" % NESTED_KIB
            done = True
        out.append(line)
    if not done:
        raise ProfileError("the profile has no nested_page_kib line to change")
    return "\n".join(out) + "\n"


def colour_overflow(frames, kib, ways):
    """The fraction of a random chase's loads that miss a cache of @kib KiB and @ways ways
    when @frames 4 KiB frames land on its page colours (sets / 64) at random, as the host
    frames of a VM do (model.h, host_line()): a colour given k > ways frames holds k lines
    in each of its sets, which a cyclic chase misses every time under LRU. The expected
    value over random placements (binomial frames per colour)."""
    colours = max(1, kib * 1024 // 64 // ways // 64)
    if colours == 1:	# every frame on the one colour
        return 1.0 if frames > ways else 0.0
    p, tot = 1.0 / colours, 0.0
    for k in range(ways + 1, frames + 1):
        lp = (math.lgamma(frames + 1) - math.lgamma(k + 1) - math.lgamma(frames - k + 1)
              + k * math.log(p) + (frames - k) * math.log(1 - p))
        tot += k * math.exp(lp)
    return tot * colours / frames


# The overflow a boot shows is that of its one placement: within this factor of the
# expectation, plus this much (a small working set's expectation is near 0).
OVERFLOW_FACTOR, OVERFLOW_SLACK = 1.5, 0.05


def check_nested(nested, plain, prof, core="inorder"):
    """The pointer chase under nested 4 KiB paging (@nested) against the same profile
    without it (@plain): failures as lines of text."""
    fails = []
    figs, base = dict(_figures(nested, "model.pointer_chase")), dict(_figures(plain, "model.pointer_chase"))
    lat = {"l1": prof["l1d_lat"], "l2": prof["l2_lat"], "llc": prof["llc_lat"], "mem": prof["mem_lat"]}
    reach = prof["dtlb4k_entries"] * 4096
    stlb = prof["stlb_entries"] * 4096
    # the largest L2-resident set beyond the L1 dTLB's reach, the largest LLC-resident
    # one beyond twice the STLB's
    l2_case = max((b for b in figs if b >= 2 * reach and chase_level(b, prof) == "l2"), default=None)
    llc_case = max((b for b in figs if b > 2 * stlb and chase_level(b, prof) == "llc"), default=None)
    if l2_case is None or llc_case is None:
        return ["nested: no chase case beyond the L1 dTLB within the L2 (%s) or beyond twice the "
                "STLB within the LLC (%s)" % (l2_case, llc_case)]
    for b in (l2_case, llc_case):
        if b not in base:
            fails.append("nested: the plain boot has no %d-byte chase" % b)
        elif base[b]["events"]["model_dtlb_miss"] > 0.01:
            fails.append("nested: without nested paging the %d-byte chase misses the L1 dTLB on "
                         "%.3f of its loads, expected none (huge pages)" % (b, base[b]["events"]["model_dtlb_miss"]))
    nxt = {"l2": ("llc", "model_l2_miss", "l2_kib", "l2_ways"),
           "llc": ("mem", "model_llc_miss", "llc_kib", "llc_ways")}
    for b, level, want_walks in ((l2_case, "l2", False), (llc_case, "llc", True)):
        r = figs[b]
        ev = r["events"]
        # the host frames overflow some of the level's colours: those loads go one level on
        below, ev_miss, kib, ways = nxt[level]
        over = ev.get(ev_miss, 0.0)
        expect_over = colour_overflow(int(b // 4096), int(prof[kib]), int(prof[ways]))
        if not (expect_over / OVERFLOW_FACTOR - OVERFLOW_SLACK <= over
                <= expect_over * OVERFLOW_FACTOR + OVERFLOW_SLACK):
            fails.append("nested: %d-byte chase misses the %s on %.3f of its loads, expected "
                         "%.3f (its frames spread at random over the %s's colours) x/ %.1f +- "
                         "%.2f" % (b, level, over, expect_over, level, OVERFLOW_FACTOR,
                                   OVERFLOW_SLACK))
        miss, walks, wcyc = ev["model_dtlb_miss"], ev["model_walk"], ev["model_walk_cycles"]
        floor = 1 - reach / b           # a random chase over b bytes of 4 KiB entries
        if miss < 0.9 * floor:
            fails.append("nested: %d-byte chase misses the L1 dTLB on %.3f of its loads, expected "
                         "at least %.3f (4 KiB entries)" % (b, miss, 0.9 * floor))
        if want_walks:
            if walks < 0.9 * (1 - stlb / b):
                fails.append("nested: %d-byte chase walks on %.3f of its loads, expected at least "
                             "%.3f" % (b, walks, 0.9 * (1 - stlb / b)))
            least = prof["walk_overhead"] + 4 * prof["l1d_lat"]
            if walks and wcyc / walks < least:
                fails.append("nested: a walk costs %.1f cycles, less than walk_overhead + three "
                             "table loads + the nested leaf load (%.0f)" % (wcyc / walks, least))
        elif walks > 0.01:
            fails.append("nested: %d-byte chase walks on %.3f of its loads, expected none (within "
                         "the STLB)" % (b, walks))
        want = (lat[level] + over * (lat[below] - lat[level]) + miss * prof["stlb_lat"] + wcyc
                + (prof["base_cpi"] * _insns(r) if core == "inorder" else 0))
        if not _within(r["median"], want):
            fails.append("nested: %d-byte chase (%s) %.2f cycles/load, expected %.2f (the level, "
                         "%.3f of the loads from the %s, %.3f x stlb_lat, %.1f walk cycles%s) "
                         "+-%d%%" % (b, level, r["median"], want, over, below, miss, wcyc,
                                     ", the instructions" if core == "inorder" else "",
                                     TOLERANCE * 100))
    return fails


def check(results, prof, core="inorder"):
    """Every failure as a line of text (empty: the model shows the profile)."""
    return (check_pointer_chase(results, prof, core) + check_tlb_reach(results, prof, core)
            + check_walk_cases(results) + modelcheck_smp.check_parts(results))


CORE_ARGS = {"inorder": "", "ooo": "core=ooo"}


def run(profiles, out=sys.stdout, no_build=False, keep=None, core="inorder"):
    """Boot the known-answer benchmarks under each profile; returns (passed, failed)."""
    if not no_build:
        runner.build(model=True, quiet=True)
    if core != "inorder":
        old = os.environ.get("BAREMM_MODEL_ARGS")
        os.environ["BAREMM_MODEL_ARGS"] = ",".join(x for x in (old, CORE_ARGS[core]) if x)
        try:
            return _run(profiles, out, keep, core)
        finally:
            if old is None:
                del os.environ["BAREMM_MODEL_ARGS"]
            else:
                os.environ["BAREMM_MODEL_ARGS"] = old
    return _run(profiles, out, keep, core)


def _run(profiles, out, keep, core):
    top = keep or runner.new_dir(os.path.join(runner.ROOT, "results"),
                                 "model-check-%s%s" % (runner.timestamp(),
                                                       "" if core == "inorder" else "-" + core))
    passed = failed = 0
    first = None
    for name in profiles:
        prof = load_profile(runner.resolve_profile(name))
        d = runner.new_dir(top, runner.safe_name(name))
        cfg = {"cmdline": CMDLINE, "smp": 1, "mem": MEM, "cpu": "max", "firmware": "bios",
               "accel": "tcg", "icount": True, "model": name, "timeout": 900}
        rec, _ = runner.boot(cfg, d, name="model-check-" + name)
        fails = []
        if rec["status"] != "pass" or rec["log"]["errors"]:
            fails.append("boot: status %s, %d log errors (%s)" % (
                rec["status"], len(rec["log"]["errors"]), os.path.join(d, "serial.log")))
        if rec.get("mode") != "model":
            fails.append("boot: not a cost-model run (no BAREMM-MODEL line)")
        if not fails and (rec.get("model") or {}).get("core", "inorder") != core:
            fails.append("boot: the plugin did not run the %s core" % core)
        if not fails:
            fails = check(rec["results"], prof, core)
            if first is None:
                first = (name, prof, rec["results"], d)
        for f in fails:
            out.write("model-check %s: FAIL %s\n" % (name, f))
        if fails:
            failed += 1
        else:
            passed += 1
        out.write("model-check %s: %s (one CPU: %d figures, %.0f s)\n"
                  % (name, "FAIL" if fails else "ok", len(rec["results"]),
                     rec["qemu"]["duration_s"]))
        # across CPUs: a line ping-pong is two transfers, an IPI round trip two latencies
        # plus entry and exit (modelcheck_smp, -smp 2)
        if core != "inorder":
            p, f, fails = modelcheck_smp.run_repeat(name, os.path.join(d, "smp2"))
        else:
            p, f, fails = modelcheck_smp.run(name, os.path.join(d, "smp2"))
        for x in fails:
            out.write("model-check %s: FAIL %s\n" % (name, x))
        passed, failed = passed + p, failed + f
        out.write("model-check %s: %s (two CPUs: %d passed, %d failed)\n"
                  % (name, "FAIL" if f else "ok", p, f))
    if first is not None:
        ok = _run_nested(first, out, core)
        passed, failed = passed + ok, failed + (not ok)
    return passed, failed


def _run_nested(first, out, core):
    """The first profile's pointer chase again under nested paging; True if it passed."""
    name, prof, plain, top = first
    d = runner.new_dir(top, "nested")
    with open(runner.resolve_profile(name)) as f:
        text = nested_profile_text(f.read())
    path = os.path.join(d, "nested.cfg")
    with open(path, "w") as f:
        f.write(text)
    cfg = {"cmdline": NESTED_CMDLINE, "smp": 1, "mem": MEM, "cpu": "max", "firmware": "bios",
           "accel": "tcg", "icount": True, "model": path, "timeout": 900}
    rec, _ = runner.boot(cfg, d, name="model-check-%s-nested" % name)
    if rec["status"] != "pass" or rec["log"]["errors"] or rec.get("mode") != "model":
        fails = ["boot: status %s, %d log errors, mode %s (%s)" % (
            rec["status"], len(rec["log"]["errors"]), rec.get("mode"), os.path.join(d, "serial.log"))]
    else:
        fails = check_nested(rec["results"], plain, load_profile(path), core)
    for x in fails:
        out.write("model-check %s: FAIL %s\n" % (name, x))
    out.write("model-check %s: %s (nested paging over %d KiB pages: %.0f s)\n" % (
        name, "FAIL" if fails else "ok", NESTED_KIB, rec["qemu"]["duration_s"]))
    return not fails


def main(a):
    profiles = a.profile or runner.model_profiles()
    if not profiles:
        sys.stderr.write("baremm: no cost-model profiles in %s\n" % runner.PROFILE_DIR)
        return st.EXIT_TOOL_ERROR
    try:
        passed, failed = run(profiles, no_build=a.no_build, core=a.core)
    except (runner.ToolError, ProfileError, OSError) as e:
        sys.stderr.write("baremm: model-check: %s\n" % e)
        return st.EXIT_TOOL_ERROR
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def add_parser(sub):
    p = sub.add_parser("model-check", help="known-answer checks of the cycle-cost model "
                       "under each profile (part of make test)")
    p.add_argument("--profile", action="append", default=None,
                   help="a profile name or file (repeatable; default: every profile)")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--core", choices=sorted(CORE_ARGS), default="inorder",
                   help="the plugin's core (default inorder; ooo: the out-of-order core, "
                   "with the answers it must give instead)")
    p.set_defaults(func=main)
    return p
