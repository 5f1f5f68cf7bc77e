"""PNG plots of sweeps through gnuplot (Debian package gnuplot-nox)."""
import fnmatch
import os
import shutil
import subprocess
import tempfile
import textwrap

from .compare import fmt_num
from .figure import Figure


class PlotError(Exception):
    pass


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def case_param(r):
    """(name, value) of a benchmark case (case=<name>:<value>), or (None, None)."""
    return Figure.of(r).param


def x_value(rec, r, key):
    if key in ("cpus", "runs"):
        return r[key]
    if case_param(r)[0] == key:
        return case_param(r)[1]
    if key in r.get("variants", {}):
        return r["variants"][key]
    if key in r.get("extra", {}):
        return r["extra"][key]
    if key in (rec.get("machine") or {}):
        return rec["machine"][key]
    if key in (rec.get("config") or {}):
        return rec["config"][key]
    return None


def _gp_str(s):
    return '"%s"' % str(s).replace("\\", "\\\\").replace('"', '\\"')


def caption(machine):
    if not machine:
        return "machine: unknown (no BAREMM-MACHINE line)"
    keys = ("cpu_model", "accel", "apic", "cpus", "mem_mib", "tsc_khz", "pmu", "firmware",
            "build", "cmdline")
    return ", ".join("%s=%s" % (k, machine[k]) for k in keys if k in machine)


CAPTION_WIDTH = 150
CAPTION_LINES = 3


def caption_lines(text, width=CAPTION_WIDTH, most=CAPTION_LINES):
    """The caption wrapped at word boundaries (a word longer than a line is split), at
    most @most lines, the last ending in '...' when text was left out."""
    lines = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False)
    if len(lines) > most:
        lines = lines[:most]
        lines[-1] = lines[-1][:width - 3].rstrip() + "..."
    return lines


def x_axis(xs, scale="auto"):
    """Positions and gnuplot settings of a numeric x axis.

    Returns (position of each distinct x, settings, scale used). A linear axis starts at 0
    when no x is negative (no axis running into negative page counts); a log axis (auto:
    when the positive values span a factor of 64 or more) draws a zero x value one step
    left of the smallest positive one, at a tick labelled 0. Every x value gets its own
    tick on a log axis."""
    vals = sorted({float(x) for x in xs})
    pos = [v for v in vals if v > 0]
    if scale == "auto":
        scale = "log" if len(pos) >= 2 and pos[-1] / pos[0] >= 64 and vals[0] >= 0 else "linear"
    if scale == "log":
        if not pos:
            raise PlotError("a log x axis needs positive x values")
        if vals[0] < 0:
            raise PlotError("a log x axis cannot show negative x values (%g); use --xscale "
                            "linear" % vals[0])
        step = (pos[-1] / pos[0]) ** (1.0 / max(1, len(pos) - 1)) if len(pos) > 1 else 4.0
        zero_at = pos[0] / max(2.0, min(step, 10.0))
        where = {v: (v if v > 0 else zero_at) for v in vals}
        lo, hi = min(where.values()), max(where.values())
        tics = ", ".join('"%s" %r' % (fmt_num(v), where[v]) for v in vals)
        return where, ["set logscale x", "set xrange [%r:%r]" % (lo / 1.5, hi * 1.5),
                       "set xtics (%s)" % tics], scale
    where = {v: v for v in vals}
    lo, hi = vals[0], vals[-1]
    pad = (hi - lo) * 0.05 or max(abs(hi), 1.0) * 0.05
    left = lo - pad if lo < 0 or lo - pad >= 0 else 0.0
    return where, ["set xrange [%r:%r]" % (left, hi + pad)], scale


def collect(records, xkey, bench=None, metric=None):
    """Series {label: [(x, median, lo, hi, stddev, min, max)]} and the unit."""
    series = {}
    units = set()
    for rec in records:
        for r in rec.get("results", []):
            if bench and not fnmatch.fnmatchcase(r["bench"], bench):
                continue
            if metric and r["metric"] != metric:
                continue
            x = x_value(rec, r, xkey)
            if x is None:
                continue
            rest = ",".join("%s:%s" % kv for kv in r.get("variants", {}).items() if kv[0] != xkey)
            name = r["metric"]
            if case_param(r)[0] == xkey:	# the case is the x axis: one series for all cases
                name = Figure.of(r).metric
            label = "%s.%s%s" % (r["bench"], name, (" [%s]" % rest) if rest else "")
            if xkey != "cpus":
                label += " cpus=%d" % r["cpus"]
            profile = (rec.get("model") or {}).get("profile")
            if profile:         # cost-model runs: one series per CPU profile
                label += " model=%s" % profile
            series.setdefault(label, []).append((x, r))
            units.add(r["unit"])
    if not series:
        raise PlotError("no result has a value for --x %s (a result field such as cpus, a "
                        "benchmark case such as pages, a variant option, or a machine/config "
                        "key)" % xkey)
    if len(units) > 1:
        raise PlotError("results with different units (%s): choose with --bench/--metric"
                        % ", ".join(sorted(units)))
    return series, units.pop()


def plot(records, xkey, out, bench=None, metric=None, error="stddev", title=None,
         gnuplot=None, xscale="auto"):
    gnuplot = gnuplot or shutil.which("gnuplot")
    if not gnuplot:
        raise PlotError("gnuplot is not installed: apt-get install -y gnuplot-nox")
    series, unit = collect(records, xkey, bench, metric)
    xs_all = [x for pts in series.values() for x, _ in pts]
    numeric = all(_num(x) is not None for x in xs_all)
    cats = []
    where, axis, used_scale = ({}, [], None)
    if numeric:
        where, axis, used_scale = x_axis(xs_all, xscale)
    elif xscale == "log":
        raise PlotError("--xscale log needs numeric x values (--x %s has %r)"
                        % (xkey, next(x for x in xs_all if _num(x) is None)))
    if not numeric:
        for x in xs_all:
            if x not in cats:
                cats.append(x)
    tmp = tempfile.mkdtemp(prefix="baremm-plot-")
    try:
        data = os.path.join(tmp, "data.dat")
        with open(data, "w") as f:
            for pts in series.values():
                pts = sorted(pts, key=lambda p: _num(p[0]) if numeric else cats.index(p[0]))
                for x, r in pts:
                    xv = where[_num(x)] if numeric else cats.index(x)
                    if error == "minmax":
                        lo, hi = r["min"], r["max"]
                    else:
                        lo, hi = r["median"] - r["stddev"], r["median"] + r["stddev"]
                    f.write("%s %r %r %r\n" % (xv, float(r["median"]), float(lo), float(hi)))
                f.write("\n\n")
        machine = next((rec.get("machine") for rec in records if rec.get("machine")), None)
        cap = caption(machine)
        caps = caption_lines(cap)
        errname = "min/max" if error == "minmax" else "+-1 stddev"
        script = [
            "set terminal pngcairo size 1000,650 noenhanced font ',10'",
            "set output %s" % _gp_str(os.path.abspath(out)),
            "set title %s" % _gp_str(title or "%s: median vs %s (error bars: %s)"
                                     % (", ".join(sorted({k.split(" ")[0] for k in series})),
                                        xkey, errname)),
            "set xlabel %s" % _gp_str(xkey),
            "set ylabel %s" % _gp_str("median (%s)" % unit),
            "set grid",
            "set key outside right top",
            "set bmargin %d" % (5 + 2 * len(caps)),
            "set yrange [0:*]",
        ] + axis
        for i, c in enumerate(caps):
            script.append("set label %d %s at screen 0.01,%.3f left font ',8'"
                          % (i + 1, _gp_str(c), 0.015 + 0.025 * (len(caps) - 1 - i)))
        if not numeric:
            script.append("set offsets graph 0.05, graph 0.05, 0, 0")
            script.append("set xtics (%s)" % ", ".join(
                "%s %d" % (_gp_str(c), i) for i, c in enumerate(cats)))
            script.append("set xrange [-0.5:%f]" % (len(cats) - 0.5))
        plots = []
        for i, label in enumerate(series):
            plots.append("%s index %d using 1:2:3:4 with yerrorlines title %s"
                         % (_gp_str(data), i, _gp_str(label)))
        script.append("plot " + ", \\\n     ".join(plots))
        gp = os.path.join(tmp, "plot.gp")
        with open(gp, "w") as f:
            f.write("\n".join(script) + "\n")
        r = subprocess.run([gnuplot, gp], capture_output=True, text=True)
        if r.returncode != 0 and "pngcairo" in r.stderr:
            script[0] = "set terminal png size 1000,650 noenhanced"
            with open(gp, "w") as f:
                f.write("\n".join(script) + "\n")
            r = subprocess.run([gnuplot, gp], capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(out):
            raise PlotError("gnuplot failed:\n%s" % r.stderr)
        return {"series": {k: [(x, fmt_num(r["median"])) for x, r in v]
                           for k, v in series.items()}, "unit": unit, "xscale": used_scale,
                "caption": caps}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
