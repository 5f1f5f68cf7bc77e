"""Parse a baremm serial log (see docs/OUTPUT.md for every line type).

Firmware and GRUB output (ANSI escapes, CRs) before the kernel's first line is skipped.
The parser never guesses: a malformed or incomplete line is an error with its line number
and contributes no number; a log without BAREMM-END is reported as truncated.
"""
import re

from . import figure as figmod, ktap as ktapmod, stats
from .figure import Figure
from .status import KERNEL_CODES

ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"          # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL / ST
    r"|\x1b[()*+][0-9A-Za-z]"           # charset selection
    r"|\x1b[0-~]")                      # two-character sequences (ESC c, ESC M, ESC 7, ...)
CTRL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# The kernel's first line: the first line starting with one of these.
KERNEL_START_RE = re.compile(r"^(?:BAREMM-[A-Z]+(?:\s|$)|KTAP version \d|PANIC|EXCEPTION)")
# Kernel output glued to firmware noise on the same line (no newline in between).
GLUED_RE = re.compile(r"(BAREMM-[A-Z]+\s|KTAP version \d)")

TAG_RE = re.compile(r"^BAREMM-([A-Z]+(?:-[A-Z]+)*)(?:\s+(.*))?$")
KV_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_.\-]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)(?=\s|$)')
NUM_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
INT_RE = re.compile(r"^[-+]?\d+$")
MIDLINE_TAG_RE = re.compile(r"BAREMM-(?:RESULT|END|SAMPLES|MACHINE|INFO|MODEL-RUN|MODEL-FIGURE)\b")
FRAME_RE = re.compile(r"^\s*\[<([0-9a-fA-F]{8,16})>\]")

RESULT_REQUIRED = ("bench", "variant", "cpus", "metric", "unit", "runs", "median", "mean",
                   "stddev", "pstddev", "min", "max")
RESULT_INT = ("cpus", "runs")
RESULT_FLOAT = ("median", "mean", "stddev", "pstddev", "min", "max", "median_ns")
MACHINE_INT = ("tsc_khz", "mem_mib", "cpus")
# Figures the cycle-cost plugin prints (docs/COSTMODEL.md) carry this unit.
MODEL_UNIT = "model_cycles"
# The plugin prints a figure's raw runs (BAREMM-MODEL-RUN) and then its totals
# (BAREMM-MODEL-FIGURE); the fields of each that are not the figure's key:
MODEL_RUN_FIELDS = ("run", "ops", "cycles")
MODEL_FIGURE_FIELDS = ("unit", "runs", "ops")


class ParseError(Exception):
    pass


def clean_line(raw):
    """Strip ANSI escapes, carriage-return overwrites and control characters."""
    s = raw.rstrip("\r")
    s = ANSI_RE.sub("", s)
    if "\r" in s:
        parts = [p for p in s.split("\r") if p.strip()]
        s = parts[-1] if parts else ""
    return CTRL_RE.sub("", s)


CONT_PREFIX = "BAREMM-CONT "


def logical_lines(raw_lines, complete_end=True):
    """Yield (line number of the first part, cleaned text, partial) with the kernel's long
    lines joined: a physical line ending in '\\' followed by one starting with
    "BAREMM-CONT " continues on it (docs/OUTPUT.md, "Long lines"). partial: the log ends
    inside this line (no newline after its last part)."""
    n = len(raw_lines)
    i = 0
    while i < n:
        ln = i + 1
        line = clean_line(raw_lines[i])
        partial = i == n - 1 and not complete_end
        while line.endswith("\\") and not partial and i + 1 < n:
            nxt = clean_line(raw_lines[i + 1])
            if not nxt.startswith(CONT_PREFIX):
                break
            i += 1
            line = line[:-1] + nxt[len(CONT_PREFIX):]
            partial = i == n - 1 and not complete_end
        yield ln, line, partial
        i += 1


def join_continued(text):
    """The text of a log with long lines joined (one logical line per line)."""
    raw = text.split("\n")
    complete = text.endswith("\n")
    if complete:
        raw.pop()
    return "\n".join(line for _, line, _ in logical_lines(raw, complete)) + ("\n" if complete else "")


def parse_kv(text):
    """Parse `key=value key2="quoted value" ...`; raise ParseError on anything else."""
    out = {}
    pos = 0
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos >= n:
            break
        m = KV_RE.match(text, pos)
        if not m:
            frag = text[pos:pos + 30]
            raise ParseError("malformed key=value at column %d: %r" % (pos + 1, frag))
        key, val = m.group(1), m.group(2)
        if val.startswith('"'):
            val = re.sub(r'\\(.)', r'\1', val[1:-1])
        if key in out:
            raise ParseError("duplicate key %r" % key)
        out[key] = val
        pos = m.end()
    return out


def to_number(val, key, integer=False):
    if integer:
        if not INT_RE.match(val):
            raise ParseError("%s=%r is not an integer" % (key, val))
        return int(val)
    if not NUM_RE.match(val):
        raise ParseError("%s=%r is not a number" % (key, val))
    f = float(val)
    return int(f) if INT_RE.match(val) else f


def parse_variant(s):
    """`default` -> {}; `opt:val,opt2:val2` -> dict (insertion ordered)."""
    try:
        return figmod.parse_variant(s)
    except ValueError as e:
        raise ParseError(str(e))


def metric_with_case(kv):
    """A benchmark with parameters prints case=<name>:<value>; each case is its own figure,
    so the case is folded into the metric name (metric[name:value]) for grouping."""
    return figmod.fold_metric(kv["metric"], kv.get("case", ""))


def parse_result(kv):
    missing = [k for k in RESULT_REQUIRED if k not in kv]
    if missing:
        raise ParseError("BAREMM-RESULT is missing %s" % ", ".join(missing))
    r = {"bench": kv["bench"], "variant": kv["variant"], "variants": parse_variant(kv["variant"]),
         "metric": metric_with_case(kv), "unit": kv["unit"]}
    if "case" in kv:
        r["case"] = kv["case"]
    for k in RESULT_INT:
        r[k] = to_number(kv[k], k, integer=True)
    for k in RESULT_FLOAT:
        if k in kv:
            r[k] = to_number(kv[k], k)
    events, extra = {}, {}
    for k, v in kv.items():
        if k.startswith("ev."):
            if len(k) == 3:
                raise ParseError("empty event name in %r" % k)
            events[k[3:]] = to_number(v, k)
        elif k not in r:
            extra[k] = v
    r["events"] = events
    r["extra"] = extra
    r["samples"] = None
    if r["runs"] < 1:
        raise ParseError("runs=%d: must be at least 1" % r["runs"])
    if r["stddev"] < 0 or r["pstddev"] < 0:
        raise ParseError("negative stddev")
    try:
        Figure.of(r)        # its name must parse back (tools print and key figures by it)
    except ValueError as e:
        raise ParseError(str(e))
    return r


def _check_result_consistency(r):
    """Warnings (not errors): values out of order may come from printed rounding."""
    w = []
    if not (r["min"] <= r["median"] <= r["max"]):
        w.append("median %s outside [min %s, max %s]" % (r["median"], r["min"], r["max"]))
    if not (r["min"] <= r["mean"] <= r["max"]):
        w.append("mean %s outside [min %s, max %s]" % (r["mean"], r["min"], r["max"]))
    return w


def _model_key(kv, fields):
    """The figure key of a plugin line: its fields other than the run's or the totals'."""
    return tuple(sorted((k, v) for k, v in kv.items()
                        if k not in fields and not k.startswith("part.") and not k.startswith("ev.")))


def parse_model_run(kv):
    for k in ("bench", "variant", "cpus", "metric") + MODEL_RUN_FIELDS:
        if k not in kv:
            raise ParseError("missing %s" % k)
    run = {"run": to_number(kv["run"], "run", integer=True),
           "ops": to_number(kv["ops"], "ops", integer=True),
           "cycles": float(to_number(kv["cycles"], "cycles")),
           "parts": {k[len("part."):]: float(to_number(v, k)) for k, v in kv.items()
                     if k.startswith("part.")}}
    return _model_key(kv, MODEL_RUN_FIELDS), run


def model_result(kv, runs, ghz=None):
    """A cost-model figure from the plugin's totals line @kv and its raw @runs: the same
    result a kernel BAREMM-RESULT line gives (parse_result), its statistics computed here,
    once (stats.summarize): median, spread, ops per run, events per op and the parts of
    the median run (the mean of the two middle runs' when there is an even number of
    them, so that the parts add up to the median)."""
    for k in ("bench", "variant", "cpus", "metric") + MODEL_FIGURE_FIELDS:
        if k not in kv:
            raise ParseError("missing %s" % k)
    n = to_number(kv["runs"], "runs", integer=True)
    if n < 1:
        raise ParseError("runs=%d: must be at least 1" % n)
    if [r["run"] for r in runs] != list(range(n)):
        raise ParseError("runs=%d but the BAREMM-MODEL-RUN lines before it are runs %s"
                         % (n, [r["run"] for r in runs] or "none"))
    total_ops = to_number(kv["ops"], "ops", integer=True)
    if total_ops != sum(r["ops"] for r in runs):
        raise ParseError("ops=%d is not the sum of its runs' ops (%d)"
                         % (total_ops, sum(r["ops"] for r in runs)))
    values = [r["cycles"] for r in runs]
    summ = stats.summarize(values)
    out = {k: v for k, v in kv.items() if k not in MODEL_FIGURE_FIELDS and not k.startswith("ev.")}
    out.update({"unit": kv["unit"], "runs": str(n), "ops": str(total_ops // n)})
    for k in ("median", "mean", "stddev", "pstddev", "min", "max"):
        out[k] = repr(summ[k])
    if ghz:
        out["median_ns"] = repr(summ["median"] / ghz)
    ops = total_ops or 1
    for k, v in kv.items():
        if k.startswith("ev."):
            out[k] = repr(to_number(v, k, integer=True) / ops)
    order = sorted(range(n), key=lambda i: values[i])      # stable: ties keep run order
    mid = [order[n // 2]] if n % 2 else [order[n // 2 - 1], order[n // 2]]
    for name in runs[0]["parts"]:
        out["part." + name] = "%.4f" % (sum(runs[i]["parts"].get(name, 0.0) for i in mid) / len(mid))
    r = parse_result(out)
    r["samples"] = values
    return r


class _ModelFigures:
    """The runs of the figures being printed, until each one's totals line."""

    def __init__(self):
        self.pending = {}

    def run(self, kv, ln):
        key, run = parse_model_run(kv)
        run["line"] = ln
        self.pending.setdefault(key, []).append(run)

    def figure(self, kv, ghz):
        return model_result(kv, self.pending.pop(_model_key(kv, MODEL_FIGURE_FIELDS), []), ghz)

    def leftover(self):
        """[(line, message)] for runs whose totals line never came."""
        return [(runs[0]["line"], "BAREMM-MODEL-RUN lines (%d) without their BAREMM-MODEL-FIGURE"
                 % len(runs)) for runs in self.pending.values()]


def model_ghz(model_kv):
    """The clock rate named on the BAREMM-MODEL line (median_ns is computed with it)."""
    if not model_kv or "ghz" not in model_kv:
        return None
    return float(to_number(model_kv["ghz"], "ghz")) or None


def parse_model_output(text):
    """The cost-model figures of the plugin's own output (its out= file, or a serial log):
    results as parse_result gives them, read by the serial parser's own handlers
    (_handle_tag). A malformed or incomplete line raises ParseError."""
    out = {"model": None, "results": [], "model_totals": [], "warnings": [],
           "_model_figures": _ModelFigures()}
    for ln, line, _ in logical_lines(text.splitlines()):
        m = TAG_RE.match(line)
        if not m or not m.group(1).startswith("MODEL"):
            continue
        try:
            _handle_tag(out, m.group(1), m.group(2) or "", ln, line)
        except ParseError as e:
            raise ParseError("line %d: BAREMM-%s: %s" % (ln, m.group(1), e))
    left = out["_model_figures"].leftover()
    if left:
        raise ParseError("line %d: %s" % left[0])
    return out["results"]


def parse_log(data, path=None):
    """Parse serial output (bytes or str). Returns a plain dict (see docs/OUTPUT.md)."""
    if isinstance(data, bytes):
        text = data.decode("utf-8", errors="replace")
    else:
        text = data
    raw_lines = text.split("\n")
    complete_end = text.endswith("\n") or text == ""
    if text.endswith("\n"):
        raw_lines.pop()

    out = {
        "path": path,
        "lines": len(raw_lines),
        "kernel_start_line": None,
        "machine": None,
        "machine_line": None,
        "results": [],
        "samples": [],
        "info": [],
        "end": None,
        "mode": None,
        "model": None,
        "model_totals": [],
        "icount_results": [],
        "option_errors": [],
        "kernel_errors": [],
        "panics": [],
        "truncated": False,
        "errors": [],
        "warnings": [],
    }
    errors, warnings = out["errors"], out["warnings"]
    out["_model_figures"] = _ModelFigures()
    kernel_lines = []   # (line number, cleaned text) for the KTAP parser
    started = False
    last_panic = None
    for ln, line, partial in logical_lines(raw_lines, complete_end):
        if not started:
            if KERNEL_START_RE.match(line):
                started = True
            else:
                m = GLUED_RE.search(line)
                if not m:
                    continue
                line = line[m.start():]
                started = True
            out["kernel_start_line"] = ln
        if partial:
            if line.startswith("BAREMM-END "):
                try:
                    kv = parse_kv(line[len("BAREMM-END "):])
                    if "status" in kv and "results" in kv:
                        warnings.append({"line": ln, "message": "last line has no newline"})
                        partial = False
                except ParseError:
                    pass
            if partial:
                if line.strip():
                    errors.append({"line": ln, "message": "line %d is incomplete (log ends in "
                                   "the middle of it): %r" % (ln, line[:80])})
                break
        if out["end"] is not None and line.startswith("BAREMM-MODEL-TOTAL "):
            pass    # the cost model's totals come when QEMU exits, after the kernel's end
        elif out["end"] is not None and line.strip():
            warnings.append({"line": ln, "message": "output after BAREMM-END ignored: %r"
                             % line[:80]})
            continue
        kernel_lines.append((ln, line))
        m = TAG_RE.match(line)
        if m:
            tag, rest = m.group(1), m.group(2) or ""
            try:
                _handle_tag(out, tag, rest, ln, line)
            except ParseError as e:
                errors.append({"line": ln, "message": "BAREMM-%s: %s" % (tag, e)})
            continue
        if line.startswith("BAREMM-"):
            errors.append({"line": ln, "message": "garbled line: %r" % line[:80]})
            continue
        if MIDLINE_TAG_RE.search(line):
            errors.append({"line": ln, "message": "BAREMM- tag in the middle of a line "
                           "(interleaved or cut output): %r" % line[:80]})
            continue
        if line.startswith("PANIC") or line.startswith("EXCEPTION"):
            last_panic = {"line": ln, "text": line, "backtrace": []}
            out["panics"].append(last_panic)
            continue
        fm = FRAME_RE.match(line)
        if fm and last_panic is not None:
            last_panic["backtrace"].append({"line": ln, "addr": fm.group(1).lower(),
                                            "text": line})
    if out["kernel_start_line"] is None:
        errors.append({"line": None, "message": "no kernel output found (no BAREMM-* or KTAP "
                       "line after the firmware output)"})
    if out["end"] is None:
        out["truncated"] = True
        errors.append({"line": len(raw_lines) or None,
                       "message": "log is truncated: no BAREMM-END line (%d lines read)"
                       % len(raw_lines)})
    for ln, msg in out.pop("_model_figures").leftover():
        errors.append({"line": ln, "message": msg})
    _attach_samples(out)
    guest = [r for r in out["results"] if r["unit"] != MODEL_UNIT]
    if out["end"] is not None and out["end"].get("results") is not None \
            and out["end"]["results"] != len(guest):
        errors.append({"line": out["end"]["line"],
                       "message": "BAREMM-END says results=%d but %d BAREMM-RESULT lines were "
                       "parsed" % (out["end"]["results"], len(guest))})
    if out["model"] is not None or len(guest) != len(out["results"]):
        _merge_model(out, guest)
    k = ktapmod.parse(kernel_lines)
    out["ktap"] = k.to_dict()
    out["ktap_obj"] = k
    out["status"] = out["end"]["status"] if out["end"] else "no_status"
    return out


def _handle_tag(out, tag, rest, ln, line):
    if tag == "ERROR":
        # Free text after the tag: `BAREMM-ERROR option: <name> ...`
        entry = {"line": ln, "text": rest}
        if rest.startswith("option:"):
            entry["option"] = option_name(rest[len("option:"):])
            out["option_errors"].append(entry)
        else:
            out["kernel_errors"].append(entry)
        return
    if tag == "MODEL-ERROR":
        raise ParseError("the cost model reports: %s" % rest)
    if tag == "CONT":
        raise ParseError("continuation line without a line ending in '\\' before it (cut or "
                         "interleaved output)")
    kv = parse_kv(rest)
    if tag == "MACHINE":
        for k in MACHINE_INT:
            if k in kv:
                kv[k] = to_number(kv[k], k, integer=True)
        if out["machine"] is not None:
            out["warnings"].append({"line": ln, "message": "second BAREMM-MACHINE line ignored "
                                    "(first at line %d)" % out["machine_line"]})
            return
        out["machine"] = kv
        out["machine_line"] = ln
    elif tag == "RESULT":
        r = parse_result(kv)
        r["line"] = ln
        for w in _check_result_consistency(r):
            out["warnings"].append({"line": ln, "message": w})
        out["results"].append(r)
    elif tag == "SAMPLES":
        for k in ("bench", "variant", "metric", "values"):
            if k not in kv:
                raise ParseError("missing %s" % k)
        vals = [v for v in kv["values"].split(",")]
        if not kv["values"] or any(v == "" for v in vals):
            raise ParseError("values=%r: empty value" % kv["values"])
        s = {"bench": kv["bench"], "variant": kv["variant"], "metric": metric_with_case(kv),
             "values": [to_number(v, "values") for v in vals], "line": ln}
        if "cpus" in kv:
            s["cpus"] = to_number(kv["cpus"], "cpus", integer=True)
        out["samples"].append(s)
    elif tag == "MODEL":
        if out["model"] is not None:
            raise ParseError("second BAREMM-MODEL line")
        kv["line"] = ln
        out["model"] = kv
    elif tag == "MODEL-TOTAL":
        kv["line"] = ln
        out["model_totals"].append(kv)
    elif tag == "MODEL-RUN":
        out["_model_figures"].run(kv, ln)
    elif tag == "MODEL-FIGURE":
        r = out["_model_figures"].figure(kv, model_ghz(out["model"]))
        r["line"] = ln
        for w in _check_result_consistency(r):
            out["warnings"].append({"line": ln, "message": w})
        out["results"].append(r)
    elif tag == "INFO":
        kv["line"] = ln
        out["info"].append(kv)
    elif tag == "END":
        for k in ("status", "results"):
            if k not in kv:
                raise ParseError("missing %s" % k)
        if kv["status"] not in KERNEL_CODES:
            raise ParseError("unknown status %r" % kv["status"])
        out["end"] = {"status": kv["status"], "results": to_number(kv["results"], "results",
                                                                   integer=True), "line": ln}
    else:
        out["warnings"].append({"line": ln, "message": "unknown line type BAREMM-%s" % tag})


def option_name(text):
    """The option named by `BAREMM-ERROR option: ...`: the first word, or the word after
    a leading `option`, without quotes, a trailing ':' or an '=value'."""
    words = text.split()
    if words and words[0] == "option" and len(words) > 1:
        words = words[1:]
    if not words:
        return ""
    w = words[0].rstrip(":").strip("'\"")
    return w.split("=", 1)[0]


def _attach_samples(out):
    """A SAMPLES line belongs to the nearest RESULT line before it with the same key (under
    the cost model each figure has two: the model's, then the guest's own)."""
    for s in out["samples"]:
        matches = [r for r in out["results"]
                   if r["bench"] == s["bench"] and r["variant"] == s["variant"]
                   and r["metric"] == s["metric"] and ("cpus" not in s or r["cpus"] == s["cpus"])]
        if not matches:
            out["warnings"].append({"line": s["line"], "message": "BAREMM-SAMPLES matches no "
                                    "BAREMM-RESULT line"})
            continue
        before = [r for r in matches if r["line"] < s["line"] and r["samples"] is None]
        if not before:
            out["warnings"].append({"line": s["line"], "message": "BAREMM-SAMPLES follows no "
                                    "BAREMM-RESULT line of its figure without samples"})
            continue
        r = before[-1]
        r["samples"] = s["values"]
        if len(s["values"]) != r["runs"]:
            # a test on fewer samples than the figure claims would mislead: an error
            out["errors"].append({"line": s["line"], "message": "BAREMM-SAMPLES has %d values "
                                  "but its BAREMM-RESULT says runs=%d"
                                  % (len(s["values"]), r["runs"])})


def _merge_model(out, guest):
    """Cost-model mode: the model's figures become the run's results; each carries the
    guest's kernel events and its instruction count (the guest's own figure under icount),
    so a model figure comes with every count that explains it. The guest's figures stay
    in icount_results."""
    out["mode"] = "model"
    model = [r for r in out["results"] if r["unit"] == MODEL_UNIT]
    by_key = {}
    for g in guest:
        by_key.setdefault(Figure.of(g), []).append(g)
    for r in model:
        twins = by_key.get(Figure.of(r))
        if not twins:
            out["warnings"].append({"line": r["line"], "message": "model figure %s has no guest "
                                    "figure" % Figure.of(r).name()})
            continue
        g = twins.pop(0)
        for k, v in g["events"].items():
            r["events"].setdefault(k, v)
        r["instructions"] = g["median"]
        r["guest_unit"] = g["unit"]
    for rest in by_key.values():
        for g in rest:
            out["errors"].append({"line": g["line"], "message": "figure %s has no cost-model "
                                  "figure (was the plugin loaded for the whole run?)"
                                  % Figure.of(g).name()})
    out["icount_results"] = guest
    out["results"] = model


def public(parsed):
    """The JSON-serializable part of a parse_log() result."""
    return {k: v for k, v in parsed.items() if not k.endswith("_obj")}


def parse_file(path):
    with open(path, "rb") as f:
        return parse_log(f.read(), path=path)
