"""LKP-style comparison of result sets (several runs, or the variants of one run).

For every figure (bench, metric, cpus, variant): median and %stddev per side, %change of
each side against the first, and whether the change is larger than the noise:
  * Welch's two-sided t-test (alpha 0.05) when both sides carry raw samples
    (BAREMM-SAMPLES, or the cost model's BAREMM-MODEL-RUN lines), or
  * otherwise: |change of the medians| > 2 x sqrt(stddev_a^2 + stddev_b^2).
Both sides with zero spread (deterministic icount runs): any change is significant.
"""
import csv
import io

from . import stats, table
from .figure import Figure

MARK_SIG = "*"
MARK_NOISE = "~"


def fmt_num(v):
    if v is None:
        return "-"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return "%d" % v
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 10:
        s = "%.2f" % v
    else:
        s = "%.4g" % v
    return s


def significance(a, b):
    """Decide whether b differs from a. Returns dict(pct, significant, test, p)."""
    pct = stats.pct_change(a["median"], b["median"])
    sa, sb = a.get("samples"), b.get("samples")
    if sa and sb and len(sa) >= 2 and len(sb) >= 2:
        w = stats.welch(sa, sb)
        if w["t"] is None:
            return {"pct": pct, "significant": w["p"] < stats.ALPHA, "test": "exact",
                    "p": w["p"], "t": None, "df": None}
        return {"pct": pct, "significant": w["p"] < stats.ALPHA, "test": "welch",
                "p": w["p"], "t": w["t"], "df": w["df"]}
    if a["stddev"] == 0 and b["stddev"] == 0:
        return {"pct": pct, "significant": a["median"] != b["median"], "test": "exact",
                "p": None, "t": None, "df": None}
    sig = stats.noise_test(a["median"], a["stddev"], b["median"], b["stddev"])
    return {"pct": pct, "significant": sig, "test": "noise", "p": None, "t": None, "df": None}


class Comparison:
    """rows: list of dict(figure, bench, metric, cpus, unit, variants, cells, changes)."""

    def __init__(self, labels, rows, mode, machines=None):
        self.labels = labels
        self.rows = rows
        self.mode = mode            # "sides" or "variants"
        self.machines = machines or []

    def tests_used(self):
        used = {}
        for r in self.rows:
            for c in r["changes"][1:]:
                if c:
                    used[c["test"]] = used.get(c["test"], 0) + 1
        return used


def _group(r):
    return Figure.of(r).group()


def compare_sides(sides):
    """sides: list of (label, results, machine). Compare every side with the first."""
    labels = [s[0] for s in sides]
    per_side = []
    order = []
    for _, results, _ in sides:
        groups = {}
        for r in results:
            g = _group(r)
            groups.setdefault(g, []).append(r)
            if g not in order:
                order.append(g)
        per_side.append(groups)
    rows = []
    for g in order:
        lists = [ps.get(g, []) for ps in per_side]
        if all(len(lst) <= 1 for lst in lists):
            # one figure per side: match even if the variant strings differ (a boot each)
            cells = [lst[0] if lst else None for lst in lists]
            rows.append(_row(g, cells))
        else:
            vorder = []
            for lst in lists:
                for r in lst:
                    if r["variant"] not in vorder:
                        vorder.append(r["variant"])
            for v in vorder:
                cells = [next((r for r in lst if r["variant"] == v), None) for lst in lists]
                rows.append(_row(g, cells))
    return Comparison(labels, rows, "sides", [s[2] for s in sides])


def compare_variants(label, results, machine=None):
    """In-boot A/B: within each (bench, metric, cpus), each variant against the first."""
    groups = {}
    order = []
    for r in results:
        g = _group(r)
        if g not in groups:
            order.append(g)
        groups.setdefault(g, []).append(r)
    rows = []
    for g in order:
        lst = groups[g]
        base = lst[0]
        if len(lst) == 1:
            rows.append(_row(g, [base, None]))
            continue
        for other in lst[1:]:
            rows.append(_row(g, [base, other]))
    return Comparison(["base variant", "variant"], rows, "variants", [machine])


def _row(g, cells):
    unit = next(c["unit"] for c in cells if c)
    variants = [c["variant"] if c else None for c in cells]
    changes = [None]
    base = cells[0]
    for c in cells[1:]:
        changes.append(significance(base, c) if base and c else None)
    distinct = [v for v in dict.fromkeys(v for v in variants if v)]
    if len(distinct) == 1:
        name = g.with_variant(distinct[0]).name()
    elif distinct:      # a change from one variant to another is named by both
        name = g.name() + " [%s]" % " -> ".join(v or "?" for v in variants)
    else:
        name = g.name()
    return {"figure": name, "bench": g.bench, "metric": g.full_metric, "cpus": g.cpus,
            "unit": unit, "variants": variants, "cells": cells, "changes": changes}


def _change_str(ch):
    if ch is None:
        return "", ""
    pct = "%+.1f%%" % ch["pct"] if ch["pct"] is not None else "n/a"
    mark = MARK_SIG if ch["significant"] else MARK_NOISE
    if ch["test"] == "welch":
        how = "p=%.2g" % ch["p"]
    elif ch["test"] == "exact":
        how = "exact"
    else:
        how = ">2sd" if ch["significant"] else "<2sd"
    return pct, "%s %s" % (mark, how)


def _cell_strs(c):
    if c is None:
        return "-", ""
    return fmt_num(c["median"]), "±%s%%" % fmt_num(round(c["pstddev"], 2))


def table_rows(cmp):
    header = []
    for i, lab in enumerate(cmp.labels):
        if i:
            header += ["%change", "signif."]
        header += [lab if len(lab) < 40 else lab[:37] + "...", "%stddev"]
    header += ["figure (unit)"]
    body = []
    for r in cmp.rows:
        row = []
        for i, c in enumerate(r["cells"]):
            if i:
                row += list(_change_str(r["changes"][i]))
            row += list(_cell_strs(c))
        row.append("%s (%s)" % (r["figure"], r["unit"]))
        body.append(row)
    return header, body


def footer(cmp):
    used = cmp.tests_used()
    parts = []
    if used.get("welch"):
        parts.append("%d by Welch's two-sided t-test on the raw samples (the runs), "
                     "significant when p < %.2g" % (used["welch"], stats.ALPHA))
    if used.get("noise"):
        parts.append("%d without raw samples: significant when |change| > %g x combined stddev "
                     "sqrt(sd_a^2 + sd_b^2)" % (used["noise"], stats.NOISE_FACTOR))
    if used.get("exact"):
        parts.append("%d with zero spread on both sides (deterministic): any change is "
                     "significant" % used["exact"])
    if not parts:
        return "No pairs to test (each figure has a single side)."
    return ("Significance (%s = significant, %s = within noise): " % (MARK_SIG, MARK_NOISE)
            + "; ".join(parts) + ".")


def _columns(header):
    """Numbers right-aligned; the figure's name, last, left-aligned."""
    return table.columns(header, left=(len(header) - 1,))


def format_text(cmp):
    header, body = table_rows(cmp)
    out = io.StringIO()
    for i, lab in enumerate(cmp.labels):
        m = cmp.machines[i] if i < len(cmp.machines) else None
        if cmp.mode == "sides":
            out.write("side %d: %s%s\n" % (i, lab, _machine_str(m)))
        elif m and i == 0:
            out.write("machine:%s\n" % _machine_str(m))
    if cmp.mode == "variants":
        out.write("in-boot variants: each variant against the first variant of its figure\n")
    out.write("\n")
    out.write(table.text(_columns(header), body, rule=True))
    out.write("\n" + footer(cmp) + "\n")
    return out.getvalue()


def format_markdown(cmp):
    header, body = table_rows(cmp)
    out = io.StringIO()
    if cmp.mode == "sides":
        for i, lab in enumerate(cmp.labels):
            m = cmp.machines[i] if i < len(cmp.machines) else None
            out.write("- side %d: `%s`%s\n" % (i, lab, _machine_str(m)))
        out.write("\n")
    else:
        out.write("In-boot variants: each variant against the first variant of its figure.\n\n")
    out.write(table.markdown(_columns(header), body) + "\n")
    out.write("\n" + footer(cmp) + "\n")
    return out.getvalue()


CSV_FIELDS = ["figure", "bench", "metric", "cpus", "unit", "side", "label", "variant", "runs",
              "median", "mean", "stddev", "pstddev", "min", "max", "change_pct", "significant",
              "test", "p_value"]


def format_csv(cmp):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in cmp.rows:
        for i, c in enumerate(r["cells"]):
            if c is None:
                continue
            ch = r["changes"][i]
            label = cmp.labels[i] if cmp.mode == "sides" else c["variant"]
            w.writerow([r["figure"], r["bench"], r["metric"], r["cpus"], r["unit"], i, label,
                        c["variant"], c["runs"], c["median"], c["mean"], c["stddev"],
                        c["pstddev"], c["min"], c["max"],
                        "" if not ch or ch["pct"] is None else "%.4f" % ch["pct"],
                        "" if not ch else ("yes" if ch["significant"] else "no"),
                        "" if not ch else ch["test"],
                        "" if not ch or ch["p"] is None else "%.6g" % ch["p"]])
    return out.getvalue()


FORMATS = {"text": format_text, "markdown": format_markdown, "csv": format_csv}


def _machine_str(m):
    if not m:
        return ""
    keys = ("cpu_model", "accel", "apic", "cpus", "mem_mib", "tsc_khz", "firmware", "cmdline",
            "build")
    return "  (" + ", ".join("%s=%s" % (k, m[k]) for k in keys if k in m) + ")"


def results_table(results):
    """A plain table of one run's figures (what `run` prints at the end)."""
    if not results:
        return "(no BAREMM-RESULT lines)\n"
    head = ["bench", "variant", "cpus", "metric", "median", "%stddev", "min", "max", "unit",
            "runs"]
    rows = [[r["bench"], r["variant"], str(r["cpus"]), r["metric"], fmt_num(r["median"]),
             fmt_num(round(r["pstddev"], 2)), fmt_num(r["min"]), fmt_num(r["max"]), r["unit"],
             str(r["runs"])] for r in results]
    return table.text(table.columns(head, left=(0, 1, 3, 8)), rows)


def has_variants(results):
    groups = {}
    for r in results:
        groups.setdefault(_group(r), set()).add(r["variant"])
    return any(len(v) > 1 for v in groups.values())




def _mode(rec):
    cfg = rec.get("config") or {}
    if cfg.get("icount") is None:
        return None
    return "deterministic (-icount)" if cfg["icount"] else "real time"


TSC_TOLERANCE = 0.02    # boots on one host calibrate within 0.1 %; 2 % is another clock


def run_differences(recs, labels):
    """Warnings (strings) for runs whose figures are not comparable: a different mode
    (icount or not), accelerator or TCG threading, TSC frequency or CPU model than the
    first run. Unknown facts (a raw log has no config) are not guessed."""
    out = []
    base = recs[0]
    bm = base.get("machine") or {}
    for rec, lab in zip(recs[1:], labels[1:]):
        m = rec.get("machine") or {}
        facts = [("mode", _mode(base), _mode(rec)),
                 ("accel", bm.get("accel"), m.get("accel")),
                 ("QEMU -accel", (base.get("config") or {}).get("accel_used"),
                  (rec.get("config") or {}).get("accel_used")),
                 ("cpu_model", bm.get("cpu_model"), m.get("cpu_model"))]
        for what, a, b in facts:
            if a is not None and b is not None and a != b:
                out.append("%s differs: %s has %s, %s has %s" % (what, labels[0], a, lab, b))
        ta, tb = bm.get("tsc_khz"), m.get("tsc_khz")
        if isinstance(ta, int) and isinstance(tb, int) and ta > 0 and tb > 0 and \
                abs(ta - tb) / min(ta, tb) > TSC_TOLERANCE:
            out.append("tsc_khz differs by %.0f %%: %s has %d, %s has %d (cycle figures are "
                       "in different units)" % (100.0 * abs(ta - tb) / min(ta, tb), labels[0], ta,
                                               lab, tb))
    return out
