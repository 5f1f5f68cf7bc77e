"""`tools/baremm perf-check [--update]`: regression check in deterministic mode.

Boots the entries of tests/perf/perf.cfg under `-icount shift=0` (1 TSC tick = 1 guest
instruction), and compares every figure's median (instructions per operation) with
tests/perf/baseline.json. A figure fails when it got slower by more than its tolerance
(percent; default from perf.cfg); it is reported "faster" (and passes) when it got
cheaper by more than the tolerance, which is a hint to refresh the baseline with
`make perf-baseline` (`tools/baremm perf-check --update`). docs/EXPERIMENTS.md,
section "Regression check", documents the figures and the policy.

perf.cfg format (kvm-unit-tests style, like tests/qemu/matrix.cfg):

    tolerance=3                 # before the first section: the default, in percent
    [alloc-1cpu]
    cmdline=bench=alloc.order0_pair ab=pcp:on,off runs=3 warmup=1
    smp=1
    mem=512M
    timeout=600
    figures=alloc.order0_pair.*           # only figures whose name matches (default *)
    tolerance=3                           # this entry's default
    tolerance.alloc.order0_pair.pair*=5   # per-figure override (glob over the name)
    repeat=2                              # boot twice: every figure must be identical

A figure's name is `<entry>: <bench>.<metric> cpus=N [variant]` (figure.Figure, whose
format() gives the baseline's keys and parse() reads them back). An entry with repeat=N
boots N times and fails (verdict DIFFERS) unless every figure's median, samples and
event counts are identical in all boots: the check that deterministic mode stays
deterministic (docs/OUTPUT.md section 7).
"""
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys

from . import cfg as cfgmod, runner, table
from .figure import Figure

PERF_CFG = os.path.join("tests", "perf", "perf.cfg")
BASELINE = os.path.join("tests", "perf", "baseline.json")
SCHEMA = "baremm-perf-baseline/1"
PRIVATE_ISO = "baremm-private.iso"
ENTRY_KEYS = ("cmdline", "smp", "mem", "timeout", "figures", "tolerance", "repeat")


class PerfError(Exception):
    pass


def private_iso(workdir):
    """A copy of the QEMU ISO (build/baremm-qemu.iso, whose GRUB menu does not wait) and of
    the flat kernel image (build/baremm.bin, boot=direct) in workdir, so that a concurrent
    rebuild cannot change them under these boots. Returns the ISO's path; the image is
    beside it (runner.direct_image)."""
    src = os.path.join(runner.ROOT, runner.ISO)
    if not os.path.exists(src):
        raise runner.ToolError("%s does not exist (run make, or drop --no-build)" % src)
    dst = os.path.join(workdir, PRIVATE_ISO)
    pairs = [(src, dst), (runner.direct_image(src), os.path.splitext(dst)[0] + ".bin")]
    for a, b in pairs:
        if not os.path.exists(a):
            raise runner.ToolError("%s does not exist (run make, or drop --no-build)" % a)
    # the image first: direct_image() looks for it once the ISO is there
    for a, b in reversed(pairs):
        shutil.copyfile(a, b + ".tmp")
        os.replace(b + ".tmp", b)
    return dst


def parse_cfg(text, path="<perf.cfg>"):
    """-> dict(tolerance, entries=[dict(name, cmdline, smp, mem, timeout, figures,
    tolerance, overrides=[(glob, pct)])])."""
    g = {"tolerance": 3.0, "entries": []}
    cur = None

    def err(ln, msg):
        raise PerfError("%s:%d: %s" % (path, ln, msg))

    def pct(ln, v):
        try:
            x = float(v.rstrip("%"))
        except ValueError:
            err(ln, "tolerance %r is not a number (percent)" % v)
        if x < 0:
            err(ln, "tolerance must be >= 0")
        return x

    for ln, name, key, val in cfgmod.read_sections(text, path, PerfError):
        if name is not None:
            cur = {"name": name, "cmdline": None, "smp": 1, "mem": "512M", "timeout": 600,
                   "figures": "*", "tolerance": None, "overrides": [], "repeat": 1,
                   "line": ln}
            g["entries"].append(cur)
            continue
        if cur is None:
            if key != "tolerance":
                err(ln, "only tolerance= may come before the first [entry]")
            g["tolerance"] = pct(ln, val)
            continue
        if key.startswith("tolerance."):
            cur["overrides"].append((key[len("tolerance."):], pct(ln, val)))
        elif key == "tolerance":
            cur["tolerance"] = pct(ln, val)
        elif key in ("smp", "timeout", "repeat"):
            try:
                cur[key] = int(val)
                if cur[key] <= 0:
                    raise ValueError
            except ValueError:
                err(ln, "%s=%s: expected a positive integer" % (key, val))
        elif key in ENTRY_KEYS:
            cur[key] = val
        else:
            err(ln, "unknown key %r (known: %s, tolerance.<figure glob>)"
                % (key, ", ".join(ENTRY_KEYS)))
    for e in g["entries"]:
        if not e["cmdline"]:
            raise PerfError("%s:%d: [%s] has no cmdline" % (path, e["line"], e["name"]))
        if e["tolerance"] is None:
            e["tolerance"] = g["tolerance"]
    return g


def load_cfg(path):
    with open(path) as f:
        return parse_cfg(f.read(), path)


def remove_copy(iso):
    """Delete an ISO made by private_iso and its kernel image (never the build's own)."""
    if iso and os.path.basename(iso) == PRIVATE_ISO:
        for p in (iso, os.path.splitext(iso)[0] + ".bin"):
            if os.path.exists(p):
                os.unlink(p)


def tolerance_for(entry, fig_name):
    """The entry's tolerance, or the last override whose glob matches the figure name
    (without the `<entry>: ` prefix)."""
    t = entry["tolerance"]
    for pat, v in entry["overrides"]:
        if fnmatch.fnmatchcase(fig_name, pat):
            t = v
    return t


def figures_of(entry, rec):
    """{Figure (with the entry): dict(median, unit, runs, pstddev, events)} for the
    entry's figures."""
    out = {}
    for r in rec.get("results", []):
        fig = Figure.of(r, entry=entry["name"])
        if not fnmatch.fnmatchcase(fig.name(), entry["figures"]):
            continue
        out[fig] = {
            "median": r["median"], "unit": r["unit"], "runs": r["runs"],
            "pstddev": r["pstddev"], "events": dict(r.get("events", {})),
            "samples": r.get("samples"), "tolerance": tolerance_for(entry, fig.name())}
    return out


def baseline_figures(baseline):
    """{Figure: figure} of a loaded baseline (its keys are Figure.format() texts)."""
    try:
        return {Figure.parse(k): v for k, v in baseline.get("figures", {}).items()}
    except ValueError as e:
        raise PerfError("baseline: %s" % e)


def by_name(figures):
    """figures' items in the order of their names (the baseline's order)."""
    return sorted(figures.items(), key=lambda kv: kv[0].format())


def boots_differ(passes):
    """[(Figure, what, first boot's value, other boot's value)] for every figure whose
    median, samples or events are not identical in all boots (passes: figures_of dicts)."""
    out = []
    first = passes[0]
    for p in passes[1:]:
        for fid in sorted(set(first) | set(p), key=Figure.format):
            a, b = first.get(fid), p.get(fid)
            if a is None or b is None:
                out.append((fid, "figure", "present" if a else "missing",
                            "present" if b else "missing"))
                continue
            for what in ("median", "samples", "events"):
                if a.get(what) != b.get(what):
                    out.append((fid, what, a.get(what), b.get(what)))
                    break
    return out


def _val(v):
    if isinstance(v, list):
        return ",".join(_num(x) for x in v)
    if isinstance(v, dict):
        return " ".join("%s=%s" % (k, _num(x)) for k, x in sorted(v.items()))
    return v if isinstance(v, str) else _num(v)


def compare_figures(baseline, current, boot_failures=()):
    """Rows (dict figure: its name, id: its Figure, entry, base, new, pct, tol, verdict)
    and counts; baseline and current: {Figure: figure}.

    verdict: pass (within tolerance), faster (cheaper by more than the tolerance; passes),
    SLOWER (fails), MISSING (in the baseline, not measured: fails), new (not in the
    baseline; passes), BOOT (its boot failed: fails)."""
    rows = []
    failed_entries = {e for e, _ in boot_failures}
    for fid in sorted(set(baseline) | set(current), key=Figure.format):
        b, c = baseline.get(fid), current.get(fid)
        row = {"figure": fid.format(), "id": fid, "entry": fid.entry}
        if c is None:
            verdict = "BOOT" if fid.entry in failed_entries else "MISSING"
            rows.append(dict(row, base=b["median"], new=None, pct=None, tol=b.get("tolerance"),
                             verdict=verdict, unit=b["unit"], events={}))
            continue
        if b is None:
            rows.append(dict(row, base=None, new=c["median"], pct=None, tol=c["tolerance"],
                             verdict="new", unit=c["unit"], events={}))
            continue
        tol = c["tolerance"]
        pct = 100.0 * (c["median"] - b["median"]) / abs(b["median"]) if b["median"] else \
            (0.0 if c["median"] == b["median"] else float("inf"))
        if pct > tol:
            verdict = "SLOWER"
        elif pct < -tol:
            verdict = "faster"
        else:
            verdict = "pass"
        rows.append(dict(row, base=b["median"], new=c["median"], pct=pct, tol=tol,
                         verdict=verdict, unit=c["unit"],
                         events=event_changes(b.get("events", {}), c.get("events", {}))))
    for entry, why in boot_failures:
        if not any(r["entry"] == entry for r in rows):
            # no figure of the entry to show: a row for the boot itself
            rows.append({"figure": "%s: (boot)" % entry, "id": None, "entry": entry,
                         "base": None, "new": None, "pct": None, "tol": None,
                         "verdict": "BOOT", "unit": "", "events": {}, "why": why})
    failed = sum(1 for r in rows if r["verdict"] in ("SLOWER", "MISSING", "BOOT"))
    return rows, {"passed": len(rows) - failed, "failed": failed}


def event_changes(a, b, rel=0.01):
    """Events whose per-op count moved by more than rel: {name: (old, new)}."""
    out = {}
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k, 0.0), b.get(k, 0.0)
        if x == y:
            continue
        if max(abs(x), abs(y)) and abs(y - x) / max(abs(x), abs(y)) > rel:
            out[k] = (x, y)
    return out


def _num(v):
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer():
        return "%.2f" % v
    return "%d" % v


def format_rows(rows):
    head = ["verdict", "baseline", "now", "change", "tol.", "figure (unit)"]
    body = []
    for r in rows:
        body.append([r["verdict"], _num(r["base"]), _num(r["new"]),
                     "" if r["pct"] is None else "%+.2f%%" % r["pct"],
                     "" if r["tol"] is None else "%g%%" % r["tol"],
                     "%s (%s)" % (r["figure"], r["unit"] or "-")])
    lines = table.text_lines(table.columns(head, left=(0, 5)), body, rule=True)
    for r in rows:
        if r["verdict"] == "SLOWER" and r["events"]:
            lines.append("  %s: events per op that moved: %s" % (r["figure"], ", ".join(
                "%s %s -> %s" % (k, _num(x), _num(y)) for k, (x, y) in r["events"].items())))
        if r.get("why"):
            lines.append("  %s: %s" % (r["figure"], r["why"]))
    return "\n".join(lines) + "\n"


def compiler_version():
    try:
        out = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout
        return out.splitlines()[0] if out else "unknown"
    except OSError:
        return "unknown"


def load_baseline(path):
    with open(path) as f:
        b = json.load(f)
    if b.get("schema") != SCHEMA:
        raise PerfError("%s: not a perf baseline (schema %r)" % (path, b.get("schema")))
    return b


def model_baseline(profile, model_args=None):
    """The baseline of a cost-model profile and core: model cycles per operation of the
    same entries (make perf-baseline MODEL=PROFILE; docs/RESULTS.md compares them with
    Linux); -ooo under the out-of-order core (plugin arguments @model_args, default
    BAREMM_MODEL_ARGS), whose cycles are not the in-order core's."""
    if model_args is None:
        model_args = os.environ.get("BAREMM_MODEL_ARGS", "")
    return os.path.join("tests", "perf", "baseline-model-%s%s.json" % (
        runner.safe_name(profile), "-ooo" if runner.core_ooo(model_args) else ""))


def run_entries(cfg, top, out, icount=True, repeat=1, iso=None, model=None):
    """Boot every entry (repeat times). Returns (figures of the first pass, boot failures,
    determinism: list of (figure, values) that differed between passes)."""
    figures, failures, differ = {}, [], []
    made = iso is None
    if made:
        iso = private_iso(top)
    try:
        _run_entries(cfg, top, out, icount, repeat, iso, figures, failures, differ, model)
    finally:
        if made:
            remove_copy(iso)
    return figures, failures, differ


def _run_entries(cfg, top, out, icount, repeat, iso, figures, failures, differ, model=None):
    for e in cfg["entries"]:
        passes = []
        n = max(repeat, e.get("repeat", 1))
        for k in range(n):
            d = runner.new_dir(top, e["name"] + ("-%d" % (k + 1) if n > 1 else ""))
            c = {"cmdline": e["cmdline"], "smp": e["smp"], "mem": e["mem"], "cpu": "max",
                 "firmware": "bios", "accel": "tcg", "icount": icount, "model": model,
                 "timeout": e["timeout"] * (3 if model else 1)}
            out.write("baremm: perf-check: booting [%s] smp=%d%s: %s\n"
                      % (e["name"], e["smp"], " model=%s" % model if model else
                         " icount" if icount else "", e["cmdline"]))
            out.flush()
            rec, _ = runner.boot(c, d, name=e["name"], iso=iso)
            out.write("baremm: perf-check: [%s] status=%s in %.1f s, %d results\n"
                      % (e["name"], rec["status"], rec["qemu"]["duration_s"],
                         len(rec["results"])))
            if rec["tool_exit"]:
                failures.append((e["name"], "boot ended with status %s (tool exit %d): %s"
                                 % (rec["status"], rec["tool_exit"],
                                    os.path.join(d, "serial.log"))))
                break
            passes.append(figures_of(e, rec))
        if passes:
            figures.update(passes[0])
            differ.extend(boots_differ(passes))


def main(a, out=sys.stdout):
    cfg_path = a.config or os.path.join(runner.ROOT, PERF_CFG)
    model = getattr(a, "model", None)
    base_path = a.baseline or os.path.join(runner.ROOT, model_baseline(model) if model
                                           else BASELINE)
    try:
        cfg = load_cfg(cfg_path)
        if a.only:
            cfg["entries"] = [e for e in cfg["entries"] if e["name"] in a.only]
            if not cfg["entries"]:
                raise PerfError("no entry named %s in %s" % (", ".join(a.only), cfg_path))
        baseline = None
        if not a.update:
            if not os.path.exists(base_path):
                raise PerfError("%s does not exist: create it with `make perf-baseline` "
                                "(tools/baremm perf-check --update)" % base_path)
            baseline = load_baseline(base_path)
        if not a.no_build:
            runner.build(model=bool(model))
        top = runner.new_dir(os.path.join(runner.ROOT, "results"),
                             "perf-check-%s" % runner.timestamp())
        figures, failures, differ = run_entries(cfg, top, out, icount=True,
                                                repeat=2 if a.repeat else 1, model=model)
    except ValueError as e:
        raise PerfError(str(e))
    out.write("\n")
    if differ:
        out.write("NOT DETERMINISTIC: %d figures differ between boots:\n" % len(differ))
        for fid, what, x, y in differ:
            out.write("FAIL %s: %s %s vs %s\n" % (fid.format(), what, _val(x), _val(y)))
    elif a.repeat:
        out.write("deterministic: every figure identical in two boots (%d figures)\n"
                  % len(figures))
    if a.update:
        if failures:
            for name, why in failures:
                out.write("FAIL [%s]: %s\n" % (name, why))
            out.write("baseline NOT written (a boot failed)\n")
            return 1
        data = {"schema": SCHEMA,
                "note": ("model cycles per operation under the cost model, profile %s; "
                         "refresh with `make perf-baseline MODEL=%s`" % (model, model))
                        if model else
                        "instructions per operation under -icount shift=0; refresh with "
                        "`make perf-baseline` (tools/baremm perf-check --update)",
                "model": model,
                "qemu_version": runner.qemu_version(), "compiler": compiler_version(),
                "git": runner.git_info(), "config": os.path.relpath(cfg_path, runner.ROOT),
                "figures": {k.format(): {kk: v[kk] for kk in ("median", "unit", "runs", "events")}
                            for k, v in by_name(figures)}}
        with open(base_path + ".tmp", "w") as f:
            json.dump(data, f, indent=2, sort_keys=False)
            f.write("\n")
        os.replace(base_path + ".tmp", base_path)
        out.write("wrote %s (%d figures)\n" % (os.path.relpath(base_path), len(figures)))
        out.write("baremm: results in %s\n" % os.path.relpath(top))
        return 1 if differ else 0
    for key, now in (("qemu_version", runner.qemu_version()), ("compiler", compiler_version())):
        if baseline.get(key) and baseline[key] != now:
            out.write("warning: baseline %s is %r, this machine has %r; instruction counts "
                      "may differ for that reason alone\n" % (key, baseline[key], now))
    base_figs = baseline_figures(baseline)
    if a.only:
        base_figs = {k: v for k, v in base_figs.items() if k.entry in a.only}
    rows, counts = compare_figures(base_figs, figures, failures)
    counts = mark_differ(rows, counts, differ)
    out.write(format_rows(rows))
    out.write("baremm: results in %s\n" % os.path.relpath(top))
    if any(r["verdict"] == "faster" for r in rows):
        out.write("some figures got cheaper than the baseline: if intended, refresh it with "
                  "`make perf-baseline`\n")
    if any(r["verdict"] in ("SLOWER", "MISSING", "BOOT") for r in rows):
        out.write("a figure got slower than its tolerance allows: if the slowdown is "
                  "intended, refresh the baseline with `make perf-baseline` and commit it\n")
    if differ:
        out.write("figures differ between boots of the same build: something host-timed "
                  "reaches the guest (docs/OUTPUT.md section 7)\n")
    out.write("%d passed, %d failed\n" % (counts["passed"], counts["failed"]))
    if counts["failed"] or differ:
        return 1
    return 0


def mark_differ(rows, counts, differ):
    """Figures that differed between boots of one build fail (verdict DIFFERS), whatever
    their comparison with the baseline said."""
    bad = {fid for fid, _, _, _ in differ}
    for r in rows:
        if r["id"] in bad and r["verdict"] in ("pass", "faster", "new"):
            r["verdict"] = "DIFFERS"
            counts = {"passed": counts["passed"] - 1, "failed": counts["failed"] + 1}
    return counts


def add_parser(sub):
    p = sub.add_parser("perf-check", help="deterministic-mode (icount) regression check "
                       "against tests/perf/baseline.json")
    p.add_argument("--update", action="store_true",
                   help="rewrite the baseline from this run (make perf-baseline)")
    p.add_argument("--config", default=None, help="default tests/perf/perf.cfg")
    p.add_argument("--baseline", default=None, help="default tests/perf/baseline.json")
    p.add_argument("--only", action="append", help="only this perf.cfg entry (repeatable)")
    p.add_argument("--repeat", action="store_true",
                   help="boot every entry twice and check that the figures are identical "
                   "(entries with repeat=N in perf.cfg always boot N times)")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--model", metavar="PROFILE", default=None,
                   help="under the cost model: model cycles against "
                        "tests/perf/baseline-model-PROFILE.json")
    p.set_defaults(func=main)
    return p
