"""Known-answer checks of the cost model across CPUs.

Boots bench=modelsmp.* (bench/model.c) at -smp 2 under a profile and compares the model
figures with what the profile says they must be:

  modelsmp.line_pingpong   one round trip of a cache line between two CPUs = two
                           core-to-core transfers: 2 x c2c_lat + the round trip's own
                           instructions x base_cpi (the guest's instruction count per op),
                           within PINGPONG_TOL; and 1.0 transfer per op on each CPU
                           (ev.model_c2c_transfer, summed over both CPUs / both CPUs' ops).
  modelsmp.xadd_pingpong   the same round trip by lock xadd alone (spin on xadd 0, then
                           add 1): each hand-off is an atomic on a line the other CPU
                           holds modified, one transfer (a read for ownership, no RFO
                           after it). Expected 2 x c2c_lat + the round trip's own work,
                           twice one CPU's per op: its instructions and fixed penalties
                           (part.insns, part.penalties: the two atomics) and its accesses
                           (ev.model_mem_access) as L1 hits; within PINGPONG_TOL, and 1.0
                           transfer per op on each CPU. A model that charges the atomic
                           a transfer and then an RFO is ~2 x llc_lat over (+35 %).
  modelsmp.llc_remote      CPU 0 loads lines the last CPU wrote and pushed out of its
                           private caches: clean in that CPU's LLC only. Expected per
                           load llc_lat when the two CPUs share a socket (CCD), else
                           c2c_remote_lat (the cross-socket/CCD figure), + the load's own
                           instructions and penalties (part.*), within LLC_TOL, and
                           ev.model_llc_remote 1.0 / 0.0 per load. At 2 CPUs (same
                           socket under both profiles) in the bench=modelsmp.* boot, and
                           booted once more with cores_per_socket + 1 CPUs for a profile
                           with more than one socket of at most 15 cores (zen3: 9 CPUs,
                           the last on the second CCD; skylake-sp would need 29).
  modelsmp.ipi_roundtrip   CPU 0 -> CPU 1 -> CPU 0 by two asynchronous calls, booted
                           twice: x2APIC (-cpu max, ICR = wrmsr) and xAPIC (-cpu qemu64,
                           ICR = MMIO stores, the plugin's other IPI path). Expected, the
                           round trip's critical path priced from the profile (a per-access
                           trace of the model gave its parts, docs/COSTMODEL.md):
                             2 x ipi_latency                 the two IPIs
                           + irq_roundtrip                   CPU 0's entry and exit (CPU 1
                                                             sends before its IRET)
                           + (c2c0 + 3) x c2c_lat            line transfers: CPU 0's (from
                                                             the figure) + CPU 1's three (its
                                                             queue head, the request's slot,
                                                             the reply's slot)
                           + (rfo0 + 3) x llc_lat            the RFOs of the same lines
                           + APIC writes                     x2APIC 3 x wrmsr (two ICRs, CPU
                                                             0's EOI); xAPIC (io0 + 3) x
                                                             mem_lat (CPU 0's MMIO accesses
                                                             + CPU 1's ICR read, high, low)
                           + atomic0 x atomic + (acc0 - c2c0 - rfo0) x l1d_lat   CPU 0's
                                                             atomics and L1 hits
                           + instructions x base_cpi         the guest's count per op
                           (x0 = CPU 0's ev.model_x per op: only CPU 0 has the timed
                           region). Measured within IPI_TOL_LO below / IPI_TOL_HI above:
                           what is not priced is CPU 1's own L1 hits (~+3 %) less the
                           instructions off the path (CPU 1 after its ICR write, CPU 0
                           before its hlt, ~-2 %). One IPI and one IRET per op on CPU 0.
  ipi.call_single and      a synchronous call to the one other CPU, and the call to all
  ipi.call_all at 2 CPUs   (= that CPU), booted once more (bench=ipi.*). Both wait for the
                           same remote handler's "done" store; the caller's own path
                           (call_all runs ~190 more instructions) overlaps that wait, so
                           the two figures agree within CALLS_TOL. A model whose reader may
                           see a store from its future (causal=off) shows the difference
                           of the callers' own paths instead (3814 vs 3999: 4.8 %).

Use:
    from tools.baremm_lib import modelcheck_smp
    failures = modelcheck_smp.check(parsed["results"], modelcheck_smp.load_profile("skylake-sp"))
    # or boot and check in one go (one QEMU, ~20-40 s):
    passed, failed, failures = modelcheck_smp.run("skylake-sp", outdir)
"""
import os

from . import runner, verdict
from .figure import Figure

PINGPONG_TOL = 0.15     # |measured - expected| / expected
IPI_TOL_LO = 0.03       # expected x (1 - IPI_TOL_LO) <= measured <= expected x (1 + IPI_TOL_HI)
IPI_TOL_HI = 0.08
EVENT_TOL = 0.05        # per-op event counts: |measured - expected| <= this
CMDLINE = "bench=modelsmp.*"
CMDLINE_XAPIC = "bench=modelsmp.ipi_roundtrip"
CPU1_LINES = 3          # lines CPU 1 takes from CPU 0 on the path (see above)
CMDLINE_CALLS = "bench=ipi.*"
CALLS_TOL = 0.01        # |call_single - call_all| / call_single at 2 CPUs
CMDLINE_LLC = "bench=modelsmp.llc_remote"
LLC_TOL = 0.05          # |measured - expected| / expected
LLC_MAX_SMP = 16        # the cross-socket boot only up to this many CPUs


def load_profile(name_or_path):
    """A profile (model/profiles/NAME.cfg or a path) as {key: number or name}: the one
    parser of modelcheck."""
    from . import modelcheck    # modelcheck imports this module
    return modelcheck.load_profile(runner.resolve_profile(name_or_path))


def _find(results, bench):
    for r in results:
        if r.get("bench") == bench and r.get("unit") == "model_cycles":
            return r
    return None


def _ev(r, name):
    return r.get("events", {}).get(name)


def ipi_expected(r, profile, apic="x2apic"):
    """The priced critical path of one modelsmp.ipi_roundtrip (module docstring), from the
    profile, the figure's CPU-0 event counts and its instruction count; None when the
    figure lacks a count it needs."""
    ev = lambda n: (r.get("events") or {}).get("model_" + n)   # noqa: E731
    c2c, rfo, acc, atom, io = ev("c2c_transfer"), ev("rfo_inval"), ev("mem_access"), \
        ev("atomic"), ev("io")
    insns = r.get("instructions")
    if None in (c2c, rfo, acc, atom, io, insns):
        return None
    P = profile
    apic_writes = 3 * P["wrmsr"] if apic == "x2apic" else (io + CPU1_LINES) * P["mem_lat"]
    return (2 * P["ipi_latency"] + P["irq_roundtrip"] + (c2c + CPU1_LINES) * P["c2c_lat"]
            + (rfo + CPU1_LINES) * P["llc_lat"] + apic_writes + atom * P["atomic"]
            + (acc - c2c - rfo) * P["l1d_lat"] + insns * P["base_cpi"])


def check_ipi(r, profile, apic="x2apic"):
    """Failures of one modelsmp.ipi_roundtrip figure (None: missing)."""
    name = "modelsmp.ipi_roundtrip%s" % ("" if apic == "x2apic" else " (xAPIC)")
    if r is None:
        return ["%s: no model figure" % name]
    fails = []
    exp = ipi_expected(r, profile, apic)
    if exp is None:
        fails.append("%s: the figure lacks an event count or the guest's instruction count"
                     % name)
    else:
        lo, hi = exp * (1 - IPI_TOL_LO), exp * (1 + IPI_TOL_HI)
        if not lo <= r["median"] <= hi:
            fails.append("%s: %.2f model cycles per round trip, expected the priced path "
                         "(2 x ipi_latency + irq_roundtrip + transfers + RFOs + APIC writes "
                         "+ CPU 0's atomics and L1 hits + instructions) %.0f: %.0f..%.0f "
                         "(%+.1f%%)" % (name, r["median"], exp, lo, hi,
                                        (r["median"] - exp) / exp * 100))
    for e in ("model_ipi_sent", "model_iret"):
        x = _ev(r, e)
        if x is None or abs(x - 1.0) > EVENT_TOL:
            fails.append("%s: ev.%s=%s per op, expected 1.0" % (name, e, x))
    if apic == "xapic" and not (_ev(r, "model_io") or 0) > 0:
        fails.append("%s: no MMIO access on CPU 0 (ev.model_io): not an xAPIC boot" % name)
    return fails


def check_calls(results):
    """Failures of the ipi.call_single / ipi.call_all pair of a bench=ipi.* boot at 2 CPUs
    (module docstring)."""
    one, alls = _find(results, "ipi.call_single"), _find(results, "ipi.call_all")
    if one is None or alls is None:
        return ["ipi.calls: no model figure for ipi.call_single or ipi.call_all"]
    dev = (alls["median"] - one["median"]) / one["median"]
    if abs(dev) > CALLS_TOL:
        return ["ipi.calls: ipi.call_single %.2f vs ipi.call_all %.2f model cycles at 2 CPUs "
                "(%+.1f%%, tolerance %.0f%%): both wait for the same remote's store, so the "
                "caller's own path should hide in the wait (a load that saw a store from "
                "its future?)" % (one["median"], alls["median"], dev * 100, CALLS_TOL * 100)]
    return []


def check_parts(results):
    """Failures of the breakdown: every model figure carries its parts (part.*, the
    median run's cycles per op) and they add up to its median within verdict.PARTS_TOL."""
    fails = []
    for r in results:
        if r.get("unit") != "model_cycles":
            continue
        m = verdict.parts_mismatch(r)
        name = Figure.of(r).name()
        if m is None:
            fails.append("parts: %s carries no part.* fields" % name)
        elif abs(m) > verdict.PARTS_TOL and abs(m * r["median"]) > verdict.PARTS_ABS:
            fails.append("parts: %s: the parts add up to %.2f, the median is %.2f (%+.2f%%, "
                         "tolerance %.1f%%)" % (name, r["median"] * (1 + m), r["median"],
                                                m * 100, verdict.PARTS_TOL * 100))
    return fails


def xadd_expected(r, profile):
    """The expected round trip of modelsmp.xadd_pingpong (module docstring); None when the
    figure lacks its parts or access count."""
    extra = r.get("extra") or {}
    try:
        own = float(extra["part.insns"]) + float(extra["part.penalties"])
    except (KeyError, ValueError):
        return None
    acc = _ev(r, "model_mem_access")
    if acc is None:
        return None
    return 2 * profile["c2c_lat"] + 2 * (own + acc * profile["l1d_lat"])


def check_xadd(r, profile):
    """Failures of one modelsmp.xadd_pingpong figure (None: missing)."""
    if r is None:
        return ["modelsmp.xadd_pingpong: no model figure"]
    fails = []
    exp = xadd_expected(r, profile)
    if exp is None:
        fails.append("modelsmp.xadd_pingpong: the figure lacks its parts or its access count")
    else:
        dev = (r["median"] - exp) / exp
        if abs(dev) > PINGPONG_TOL:
            fails.append("modelsmp.xadd_pingpong: %.2f model cycles per round trip, expected "
                         "2 x c2c_lat (%d) + twice one CPU's instructions, penalties and L1 "
                         "hits = %.2f (%+.1f%%, tolerance %.0f%%): an atomic on a line "
                         "another CPU holds modified is one transfer"
                         % (r["median"], profile["c2c_lat"], exp, dev * 100,
                            PINGPONG_TOL * 100))
    x = _ev(r, "model_c2c_transfer")
    if x is None or abs(x - 1.0) > EVENT_TOL:
        fails.append("modelsmp.xadd_pingpong: ev.model_c2c_transfer=%s per op on each CPU, "
                     "expected 1.0 (two per round trip)" % x)
    return fails


def socket_of(cpu, profile):
    return int(cpu // profile["cores_per_socket"]) % int(profile["sockets"])


def llc_expected(r, profile):
    """(expected cycles per load, remote?) of a modelsmp.llc_remote figure; expected is
    None when the figure lacks its parts."""
    remote = socket_of(0, profile) != socket_of(r["cpus"] - 1, profile)
    extra = r.get("extra") or {}
    try:
        own = float(extra["part.insns"]) + float(extra["part.penalties"])
    except (KeyError, ValueError):
        return None, remote
    return (profile["c2c_remote_lat"] if remote else profile["llc_lat"]) + own, remote


def check_llc(r, profile):
    """Failures of one modelsmp.llc_remote figure (None: missing)."""
    if r is None:
        return ["modelsmp.llc_remote: no model figure"]
    exp, remote = llc_expected(r, profile)
    where = "CPU 0 and CPU %d on %s" % (r["cpus"] - 1, "different sockets (CCDs)" if remote
                                        else "one socket")
    if exp is None:
        return ["modelsmp.llc_remote (%s): the figure lacks its parts" % where]
    fails = []
    dev = (r["median"] - exp) / exp
    if abs(dev) > LLC_TOL:
        fails.append("modelsmp.llc_remote (%s): %.2f model cycles per load, expected %s + "
                     "the load's instructions = %.2f (%+.1f%%, tolerance %.0f%%)"
                     % (where, r["median"], "c2c_remote_lat" if remote else "llc_lat", exp,
                        dev * 100, LLC_TOL * 100))
    x, want = _ev(r, "model_llc_remote"), 1.0 if remote else 0.0
    if x is None or abs(x - want) > EVENT_TOL:
        fails.append("modelsmp.llc_remote (%s): ev.model_llc_remote=%s per load, expected %.1f"
                     % (where, x, want))
    return fails


def llc_smp(profile):
    """The CPU count of the cross-socket modelsmp.llc_remote boot, or None."""
    n = int(profile["cores_per_socket"]) + 1
    return n if profile["sockets"] > 1 and n <= LLC_MAX_SMP else None


def check(results, profile, apic="x2apic"):
    """results: parse_log(...)["results"] of a model boot of bench=modelsmp.* at -smp 2
    (apic: the boot's APIC mode; xapic boots run only modelsmp.ipi_roundtrip; "calls": a
    bench=ipi.* boot, check_calls); profile: load_profile(). Returns a list of failure
    messages (empty = all passed)."""
    fails = check_parts(results)
    cpi = float(profile["base_cpi"])
    if apic == "calls":
        return fails + check_calls(results)
    if apic == "llc":
        return fails + check_llc(_find(results, "modelsmp.llc_remote"), profile)
    if apic != "x2apic":
        return fails + check_ipi(_find(results, "modelsmp.ipi_roundtrip"), profile, apic)

    r = _find(results, "modelsmp.line_pingpong")
    if r is None:
        fails.append("modelsmp.line_pingpong: no model figure")
    else:
        insns = r.get("instructions")
        if insns is None:
            fails.append("modelsmp.line_pingpong: no guest instruction count beside the model figure")
        else:
            exp = 2 * profile["c2c_lat"] + insns * cpi
            dev = (r["median"] - exp) / exp
            if abs(dev) > PINGPONG_TOL:
                fails.append("modelsmp.line_pingpong: %.2f model cycles per round trip, expected "
                             "2 x c2c_lat (%d) + %.2f instructions x %.2f = %.2f (%+.1f%%, tolerance "
                             "%.0f%%)" % (r["median"], profile["c2c_lat"], insns, cpi, exp,
                                          dev * 100, PINGPONG_TOL * 100))
        x = _ev(r, "model_c2c_transfer")
        if x is None or abs(x - 1.0) > EVENT_TOL:
            fails.append("modelsmp.line_pingpong: ev.model_c2c_transfer=%s per op on each CPU, "
                         "expected 1.0 (two per round trip)" % x)

    fails += check_xadd(_find(results, "modelsmp.xadd_pingpong"), profile)
    fails += check_llc(_find(results, "modelsmp.llc_remote"), profile)
    fails += check_ipi(_find(results, "modelsmp.ipi_roundtrip"), profile)
    return fails


def run(profile, outdir, timeout=900):
    """Boots bench=modelsmp.* at -smp 2 under the profile with an x2APIC CPU,
    modelsmp.ipi_roundtrip with an xAPIC one, bench=ipi.* with an x2APIC one, and for a
    profile with small sockets (llc_smp) modelsmp.llc_remote across two of them (three or
    four QEMUs, ~10-60 s each), and checks them. Returns (passed, failed, failure messages);
    passed/failed count the checks (a failed boot fails its checks)."""
    passed = failed = 0
    all_fails = []
    prof = load_profile(profile)
    boots = [("x2apic", "max", CMDLINE, ("modelsmp.line_pingpong", "modelsmp.xadd_pingpong",
                                         "modelsmp.llc_remote", "modelsmp.ipi_roundtrip:",
                                         "parts:"), 2),
             ("xapic", "qemu64", CMDLINE_XAPIC, ("modelsmp.ipi_roundtrip (xAPIC)", "parts:"), 2),
             ("calls", "max", CMDLINE_CALLS, ("ipi.calls", "parts:"), 2)]
    if llc_smp(prof):
        boots.append(("llc", "max", CMDLINE_LLC, ("modelsmp.llc_remote", "parts:"),
                      llc_smp(prof)))
    for apic, cpu, cmdline, benches, smp in boots:
        d = os.path.join(outdir, apic)
        os.makedirs(d, exist_ok=True)
        cfg = {"cmdline": cmdline, "smp": smp, "mem": "512M", "cpu": cpu, "firmware": "bios",
               "accel": "tcg", "icount": True, "model": profile, "timeout": timeout}
        rec, _ = runner.boot(cfg, d, name="modelcheck-smp-" + apic)
        got = (rec.get("machine") or {}).get("apic")
        want = "x2apic" if apic in ("calls", "llc") else apic
        if rec["status"] != "pass" or rec["log"]["errors"] or rec.get("mode") != "model" \
                or got != want:
            failed += len(benches)
            all_fails.append("boot (%s): status %s, %d log errors, mode %s, apic %s (%s)" % (
                apic, rec["status"], len(rec["log"]["errors"]), rec.get("mode"), got,
                os.path.join(d, "serial.log")))
            continue
        fails = check(rec["results"], prof, apic)
        f = sum(1 for b in benches if any(x.startswith(b) for x in fails))
        passed, failed = passed + len(benches) - f, failed + f
        all_fails += fails
    return passed, failed, all_fails


def run_repeat(profile, outdir, timeout=900):
    """The two-CPU check for a core whose serial known answers do not hold (core=ooo):
    bench=modelsmp.* at -smp 2 booted twice; every figure's parts add up, and both boots
    give identical figures (cross-CPU timing stays deterministic). Returns (passed,
    failed, failure messages), two checks."""
    figs, fails = [], []
    for k in (1, 2):
        d = os.path.join(outdir, "repeat%d" % k)
        os.makedirs(d, exist_ok=True)
        cfg = {"cmdline": CMDLINE, "smp": 2, "mem": "512M", "cpu": "max", "firmware": "bios",
               "accel": "tcg", "icount": True, "model": profile, "timeout": timeout}
        rec, _ = runner.boot(cfg, d, name="modelcheck-smp-repeat%d" % k)
        if rec["status"] != "pass" or rec["log"]["errors"] or rec.get("mode") != "model":
            return 0, 2, ["boot (repeat %d): status %s, %d log errors, mode %s (%s)" % (
                k, rec["status"], len(rec["log"]["errors"]), rec.get("mode"),
                os.path.join(d, "serial.log"))]
        figs.append({Figure.of(r).name(): (r["median"], r.get("samples")) for r in rec["results"]
                     if r.get("unit") == "model_cycles"})
        if k == 1:
            fails += check_parts(rec["results"])
    parts_ok = not fails
    if not figs[0]:
        fails.append("repeat: no model figures")
    elif figs[0] != figs[1]:
        diff = sorted(n for n in set(figs[0]) | set(figs[1]) if figs[0].get(n) != figs[1].get(n))
        fails.append("repeat: two boots differ in %s" % ", ".join(diff))
    ok = int(parts_ok) + int(not any(x.startswith("repeat:") for x in fails))
    return ok, 2 - ok, fails


def main(argv=None):
    """(cd tools && python3 -m baremm_lib.modelcheck_smp [PROFILE...]); default: skylake-sp
    and zen3. Needs `make` first."""
    import sys
    profiles = (argv if argv is not None else sys.argv[1:]) or ["skylake-sp", "zen3"]
    top = runner.new_dir(os.path.join(runner.ROOT, "results"), "modelcheck-smp-" + runner.timestamp())
    p = f = 0
    for name in profiles:
        a, b, fails = run(name, os.path.join(top, runner.safe_name(name)))
        p, f = p + a, f + b
        for x in fails:
            print("modelcheck-smp %s: FAIL %s" % (name, x))
    print("%d passed, %d failed" % (p, f))
    return 1 if f else 0


if __name__ == "__main__":
    raise SystemExit(main())
