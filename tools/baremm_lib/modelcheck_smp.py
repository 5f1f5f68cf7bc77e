"""Known-answer checks of the cost model across CPUs (issue 11 item 6).

Boots bench=modelsmp.* (bench/model.c) at -smp 2 under a profile and compares the model
figures with what the profile says they must be:

  modelsmp.line_pingpong   one round trip of a cache line between two CPUs = two
                           core-to-core transfers: 2 x c2c_lat + the round trip's own
                           instructions x base_cpi (the guest's instruction count per op),
                           within PINGPONG_TOL; and 1.0 transfer per op on each CPU
                           (ev.model_c2c_transfer, summed over both CPUs / both CPUs' ops).
  modelsmp.ipi_roundtrip   two IPIs with an interrupt entry and exit each:
                           2 x ipi_latency + 2 x irq_roundtrip, from one entry+exit less
                           (only CPU 0's is on the measured path: CPU 1 sends before its
                           IRET) up to IPI_TOL above; one IPI sent and one IRET per op on
                           CPU 0.

Use:
    from tools.baremm_lib import modelcheck_smp
    failures = modelcheck_smp.check(parsed["results"], modelcheck_smp.load_profile("skylake-sp"))
    # or boot and check in one go (one QEMU, ~20-40 s):
    passed, failed, failures = modelcheck_smp.run("skylake-sp", outdir)
"""
import os

from . import runner

PINGPONG_TOL = 0.15     # |measured - expected| / expected
IPI_TOL = 0.50          # measured <= expected x (1 + IPI_TOL)
EVENT_TOL = 0.05        # per-op event counts: |measured - expected| <= this
CMDLINE = "bench=modelsmp.*"


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


def check(results, profile):
    """results: parse_log(...)["results"] of a model boot of bench=modelsmp.* at -smp 2;
    profile: load_profile(). Returns a list of failure messages (empty = all passed)."""
    fails = []
    cpi = float(profile["base_cpi"])

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

    r = _find(results, "modelsmp.ipi_roundtrip")
    if r is None:
        fails.append("modelsmp.ipi_roundtrip: no model figure")
    else:
        ipi, irq = profile["ipi_latency"], profile["irq_roundtrip"]
        exp = 2 * ipi + 2 * irq
        lo, hi = 2 * ipi + irq, exp * (1 + IPI_TOL)
        if not lo <= r["median"] <= hi:
            fails.append("modelsmp.ipi_roundtrip: %.2f model cycles per round trip, expected about "
                         "2 x ipi_latency + 2 x irq_roundtrip = %d: at least %d, at most %.0f"
                         % (r["median"], exp, lo, hi))
        for ev in ("model_ipi_sent", "model_iret"):
            x = _ev(r, ev)
            if x is None or abs(x - 1.0) > EVENT_TOL:
                fails.append("modelsmp.ipi_roundtrip: ev.%s=%s per op, expected 1.0" % (ev, x))
    return fails


def run(profile, outdir, timeout=900):
    """Boots bench=modelsmp.* at -smp 2 under the profile (one QEMU, ~30-60 s) and checks
    it. Returns (passed, failed, failure messages); passed/failed count the two figures
    (a failed boot fails both)."""
    os.makedirs(outdir, exist_ok=True)
    cfg = {"cmdline": CMDLINE, "smp": 2, "mem": "512M", "cpu": "max", "firmware": "bios",
           "accel": "tcg", "icount": True, "model": profile, "timeout": timeout}
    rec, _ = runner.boot(cfg, outdir, name="modelcheck-smp")
    benches = ("modelsmp.line_pingpong", "modelsmp.ipi_roundtrip")
    if rec["status"] != "pass" or rec["log"]["errors"] or rec.get("mode") != "model":
        return 0, len(benches), ["boot: status %s, %d log errors, mode %s (%s)" % (
            rec["status"], len(rec["log"]["errors"]), rec.get("mode"),
            os.path.join(outdir, "serial.log"))]
    fails = check(rec["results"], load_profile(profile))
    failed = sum(1 for b in benches if any(f.startswith(b) for f in fails))
    return len(benches) - failed, failed, fails


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
