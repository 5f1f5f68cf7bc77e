"""`tools/baremm native-panel`: the same small workloads natively on this host and under
the cost model, side by side (docs/COSTMODEL.md, "The native panel").

One static program (tools/native/panel_*.c, baremm's mm/ code built for user space) is
run twice:

  native  on this host, pinned to CPU 0 (two-CPU rows: CPU 0 and 1), R interleaved
          rounds; per row the minimum and median TSC ticks per op, converted to core
          cycles with the core clock measured in the same process (a dependent imul
          chain, tools/native/native.h);
  model   as /init of Debian's Linux kernel booted by QEMU under -icount with the cost
          model plugin (the guest that tools/linux-ref boots); the plugin prices the
          timed regions the program marks and prints model cycles per op. The guest's
          own TSC under `-icount shift=0` counts instructions, which gives instructions
          per op for both sides (the same binary runs the same instructions; spin loops
          excepted).

Why this way: the same binary on both sides means the same instructions, data layout
and shapes; Linux under the model is already how baremm prices Linux (tools/linux-ref).
The guest keeps transparent huge pages on madvise so the large working sets sit on 2 MiB
pages on both sides (the host is itself a VM: its TLB misses pay a nested walk the guest
model never sees; the DRAM rows say so).

Output: a table (stdout), DIR/native-panel-<profile>.json (--save DIR), a PNG of the
ratios (--plot PNG, gnuplot). `--from JSON` re-prints a saved panel.
"""
import argparse
import glob
import hashlib
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from . import calibrate, logparse, modelerror, runner, status as st, table as tab

ROOT = runner.ROOT
NATIVE_DIR = os.path.join(ROOT, "tools", "native")
SCHEMA = "baremm-native-panel/1"

# The bands a model with an out-of-order core is to meet: model/native within 0.85-1.15
# on 80 % of the rows and within 0.67-1.5 on all. The in-order model need not.
BAND_TIGHT = (0.85, 1.15)
BAND_WIDE = (0.67, 1.5)

# A/B pairs: (name, A row, B row); the effect is B/A - 1.
PAIRS = (
    ("pcp_mt lookup vs cached (seed 003)", "alloc_cached", "alloc_lookup"),
    ("free_pages_bulk vs free_page loop (seed 000)", "free_loop", "free_bulk"),
    ("random vs predictable branch", "branch_pred", "branch_rand"),
)
# Ratios of two rows that a core model must get right (numerator / denominator, per op).
MLP = ("chase_1g", "chase8_1g")

# A row's native minimum is trusted when enough rounds repeat it.
REPEAT_WITHIN = 0.05
REPEAT_MIN = 3

MM_SRCS = ["mm/page_alloc.c", "mm/pcp.c", "mm/page_debug.c", "mm/memblock.c",
           "kernel/events.c", "tests/host/host_shim.c", "tests/host/host_call.c"]
VM_SRCS = ["mm/pgtable.c", "mm/rmap.c", "mm/mmu_gather.c", "tests/host/vm_fake_alloc.c",
           "mm/mm.c", "mm/fault.c", "mm/filemap.c", "mm/refpage.c", "kernel/rcu.c",
           "kernel/events.c", "tests/host/host_shim.c"]
PANEL_SRCS = ["panel_main.c", "panel_micro.c", "panel_mm.c", "panel_smp.c"]
VM_PANEL_SRCS = ["panel_vm.c"]
# mm/ objects get the kernel's code generation (no vector registers, frame pointers);
# kernel/string.c gives them the kernel's rep-string memset/memcpy, not libc's (whose
# choice depends on the CPU and would differ between host and guest).
MM_CFLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-DBAREMM_HOST", "-I.",
             "-Itests/host", "-fno-omit-frame-pointer", "-fno-strict-aliasing", "-mno-sse",
             "-mno-sse2", "-mno-mmx", "-mno-avx", "-fno-tree-vectorize"]
PANEL_CFLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE",
                "-DBAREMM_HOST", "-I.", "-Itests/host", "-fno-tree-vectorize"]
STRING_CFLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-I.", "-fno-tree-vectorize"]

# norandmaps, -seed and a virtual RTC take the host's randomness and clock out of the
# guest: user-space addresses, RDRAND (QEMU seeds its generator) and the wall-clock time
# Linux mixes into its entropy pool are then the same in every boot.
GUEST_APPEND = "console=ttyS0 quiet panic=-1 transparent_hugepage=madvise nokaslr no5lvl norandmaps"
GUEST_MEM = "3G"
GUEST_QEMU = ["-seed", "1", "-rtc", "base=2025-01-01T00:00:00,clock=vm"]


class PanelError(Exception):
    pass


# What a model figure of the panel depends on besides the compiled sources: the plugin.
PLUGIN_GLOBS = ("model/*.c", "model/*.h")
# a C comment, or a string or character literal (kept: a comment marker inside it is text)
_COMMENT_RE = re.compile(r'//[^\n]*|/\*.*?\*/|("(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\')', re.S)


def _code_only(text, path):
    """Source text without comments and with whitespace collapsed: a comment or a blank
    line changes no instruction the model prices."""
    if path.endswith(".cfg"):
        return "\n".join(l.split("#", 1)[0].strip() for l in text.splitlines() if l.split("#", 1)[0].strip())
    text = _COMMENT_RE.sub(lambda m: m.group(1) or " ", text)
    return " ".join(text.split())


def compiled_files(root=ROOT, plugin=True):
    """Every source and header the panel binaries are compiled from (gcc -MM), and (with
    @plugin) the plugin's sources, in the tree at @root."""
    files = set()
    srcs = [(s, MM_CFLAGS) for s in set(MM_SRCS + VM_SRCS)] + [("kernel/string.c", STRING_CFLAGS)]
    srcs += [("tools/native/" + s, PANEL_CFLAGS) for s in PANEL_SRCS + VM_PANEL_SRCS]
    for src, flags in srcs:
        r = subprocess.run(["gcc"] + [f for f in flags if f != "-Werror"] + ["-MM", src],
                           cwd=root, capture_output=True, text=True)
        if r.returncode:
            raise PanelError("gcc -MM %s failed:\n%s" % (src, r.stderr))
        deps = r.stdout.replace("\\\n", " ").split(":", 1)[1].split()
        files.update(d for d in deps if not os.path.isabs(d))
    for g in PLUGIN_GLOBS if plugin else ():
        files.update(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, g))
                     if not os.path.basename(p).startswith("test_"))
    return sorted(files)


def _digest_files(h, root, files):
    for rel in files:
        with open(os.path.join(root, rel), errors="replace") as f:
            h.update(rel.encode() + b"\0" + _code_only(f.read(), rel).encode() + b"\0")


def native_sha(root=ROOT):
    """A digest of the native side's inputs: the code the panel binaries are compiled
    from (comments stripped), in the tree at @root. While it is unchanged a recorded
    native side stands, and a change of the plugin alone needs only the model side
    booted again (remodel)."""
    h = hashlib.sha256()
    _digest_files(h, root, compiled_files(root, plugin=False))
    return h.hexdigest()[:16]


def recorded_native_sha(rec):
    """The native side's digest a recorded panel was measured with: kept in the panel
    (newer recordings, remodels), else that of its git revision."""
    got = rec.get("native_sha") or (rec.get("remodelled") or {}).get("native_sha")
    if got:
        return got
    rev = (rec.get("git") or {}).get("rev")
    if not rev or (rec.get("git") or {}).get("dirty"):
        raise PanelError("the panel names no clean git revision")
    return native_sha_at(rev)


def native_sha_at(rev):
    """native_sha of the committed tree at git revision @rev."""
    d = tempfile.mkdtemp(prefix="panel-rev-")
    try:
        arch = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True)
        if arch.returncode:
            raise PanelError("git archive %s failed: %s" % (rev, arch.stderr.decode(errors="replace")))
        x = subprocess.run(["tar", "-x", "-C", d], input=arch.stdout, capture_output=True)
        if x.returncode:
            raise PanelError("tar -x failed: %s" % x.stderr.decode(errors="replace"))
        return native_sha(d)
    finally:
        shutil.rmtree(d)


def inputs_sha(profile_text, kernel, model_args=""):
    """A digest of the panel's inputs: the code of every file compiled into the panel and
    the plugin (comments stripped), the profile's values, the guest's kernel image name,
    memory, command line and QEMU flags, extra plugin arguments. A recorded panel is current while
    this digest is unchanged."""
    h = hashlib.sha256()
    _digest_files(h, ROOT, compiled_files())
    for x in (_code_only(profile_text, "p.cfg"), kernel, model_args or "", GUEST_APPEND, GUEST_MEM,
              " ".join(GUEST_QEMU)):
        h.update(b"\0" + x.encode())
    return h.hexdigest()[:16]


# ---- build ----

def _cc(args, cwd=ROOT):
    r = subprocess.run(["gcc"] + args, cwd=cwd, capture_output=True, text=True)
    if r.returncode:
        raise PanelError("gcc failed: %s\n%s" % (" ".join(args), r.stderr))


def build_plugin():
    """make the plugin: the guest runs under the one these sources build."""
    r = subprocess.run(["make", "-s", runner.MODEL_SO], cwd=ROOT, capture_output=True, text=True)
    if r.returncode:
        raise PanelError("make %s failed:\n%s" % (runner.MODEL_SO, r.stderr))


def build(out):
    """Build build/native/panel and panel_vm (static); returns their paths."""
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/libc.a"):
        raise PanelError("static libc missing: apt-get install libc6-dev")
    obj = os.path.join(out, "obj")
    os.makedirs(obj, exist_ok=True)

    def o(src, flags, tag=""):
        path = os.path.join(obj, src.replace("/", "_") + tag + ".o")
        _cc(flags + ["-c", src, "-o", path])
        return path

    common = {s: o(s, MM_CFLAGS) for s in sorted(set(MM_SRCS + VM_SRCS))}
    string = o("kernel/string.c", STRING_CFLAGS)
    panel = os.path.join(out, "panel")
    objs = [o("tools/native/" + s, PANEL_CFLAGS) for s in PANEL_SRCS]
    _cc(["-static", "-pthread", "-o", panel] + objs + [common[s] for s in MM_SRCS] + [string])
    vm = os.path.join(out, "panel_vm")
    objs = [o("tools/native/panel_main.c", PANEL_CFLAGS + ["-DPANEL_VM"], "_vm")]
    objs += [o("tools/native/" + s, PANEL_CFLAGS) for s in VM_PANEL_SRCS]
    _cc(["-static", "-pthread", "-o", vm] + objs + [common[s] for s in VM_SRCS] + [string])
    return panel, vm


# ---- parsing ----

ROW_RE = re.compile(r"^PANEL name=(\S+) group=(\S+) cpus=(\d+) ops=(\d+) unit=tsc values=(\S+)"
                    r"(?: desc=\"(.*)\")?")
CLOCK_RE = re.compile(r"^PANEL-CLOCK when=(\S+) core_per_tsc=([\d.]+) tsc_ghz=([\d.]+)")


def parse_panel(text):
    """PANEL lines -> (rows {name: dict}, clocks [dict]); rows keep their order."""
    rows, clocks = {}, []
    for line in text.splitlines():
        line = line.strip().replace("\r", "")
        m = ROW_RE.match(line)
        if m:
            rows[m.group(1)] = {"name": m.group(1), "group": m.group(2), "cpus": int(m.group(3)),
                                "ops": int(m.group(4)),
                                "values": [float(v) for v in m.group(5).split(",")],
                                "desc": m.group(6) or ""}
            continue
        m = CLOCK_RE.match(line)
        if m:
            clocks.append({"when": m.group(1), "core_per_tsc": float(m.group(2)),
                           "tsc_ghz": float(m.group(3))})
    return rows, clocks


def parse_model(text):
    """The plugin's figures of bench=panel.* -> {name: {median, min, max, runs, events}}
    (logparse computes them from the plugin's raw runs)."""
    out = {}
    try:
        figures = logparse.parse_model_output(text)
    except logparse.ParseError as e:
        raise PanelError("the cost model's output: %s" % e)
    for r in figures:
        if not r["bench"].startswith("panel."):
            continue
        out[r["bench"][len("panel."):]] = {
            "median": r["median"], "min": r["min"], "max": r["max"], "runs": r["runs"],
            "events": dict(r["events"]),
            # where the median run's cycles per op went (part.* of the plugin's runs)
            "parts": {k[len("part."):]: float(v) for k, v in r["extra"].items()
                      if k.startswith("part.")}}
    return out


def quantile(v, q):
    s = sorted(v)
    pos = q * (len(s) - 1)
    i = int(pos)
    return s[i] + (pos - i) * (s[i + 1] - s[i]) if i + 1 < len(s) else s[i]


def median_ci(v, z=1.96):
    """Distribution-free ~95 % interval of the median: order statistics (binomial)."""
    s = sorted(v)
    n = len(s)
    k = int(math.floor((n - z * math.sqrt(n)) / 2))
    if k < 0 or n < 6:
        return s[0], s[-1]
    return s[k], s[n - 1 - k]


# ---- native side ----

def run_native(binary, rounds, only=None):
    args = [binary, "--rounds", str(rounds)]
    if only:
        args += ["--only", only]
    r = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if r.returncode:
        raise PanelError("%s exited %d:\n%s%s" % (binary, r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    return r.stdout


# Clock readings within this fraction of each other confirm one another.
CLOCK_AGREE = 0.02


def core_per_tsc(clocks):
    """The core cycles per TSC tick the native rows are converted with: the fastest
    reading that another reading confirms within CLOCK_AGREE (a neighbour only slows the
    imul chain, so slow readings are discarded), never a lone fast one. A VM's clock moves:
    one Granite Rapids run read 1.33-1.34 three times and 1.50 once, and converting with
    that one put every native figure 12 % high. With one or two readings nothing can
    confirm anything: the faster."""
    v = sorted((c["core_per_tsc"] for c in clocks), reverse=True)
    if len(v) <= 2:
        return v[0]
    x = calibrate.confirmed(v, largest=True, tol=CLOCK_AGREE)
    return x if x is not None else v[len(v) // 2]


def native_figures(rows, clocks):
    """Per row: core cycles per op (min, median), spread, whether the minimum repeats."""
    cpt = core_per_tsc(clocks)
    out = {}
    for name, r in rows.items():
        v = r["values"]
        mn = min(v)
        near = sum(1 for x in v if x <= mn * (1 + REPEAT_WITHIN))
        out[name] = dict(r, core_per_tsc=cpt, min=mn * cpt, median=statistics.median(v) * cpt,
                         p75=quantile(v, 0.75) * cpt, repeats=near,
                         trusted=near >= REPEAT_MIN,
                         spread=(quantile(v, 0.75) - mn) / mn if mn else 0.0)
    return out


LOW_Q = 0.1          # the A/B estimator: the fast tenth of the rounds
BOOTSTRAP = 2000


def pair_effect(a, b):
    """Native effect of B against A from interleaved rounds. On a shared host the rounds
    are bimodal (a neighbour on the sibling hyperthread halves a high-IPC row), so the
    estimator is the ratio of the rows' 10th percentiles (the fast mode), with a 95 %
    bootstrap interval over paired rounds (fixed generator seed: the same data give the
    same interval); the ratio of the minima beside it."""
    n = min(len(a["values"]), len(b["values"]))
    va, vb = a["values"][:n], b["values"][:n]
    eff = quantile(vb, LOW_Q) / quantile(va, LOW_Q) - 1
    rng = random.Random(1)
    boots = []
    for _ in range(BOOTSTRAP):
        idx = [rng.randrange(n) for _ in range(n)]
        boots.append(quantile([vb[i] for i in idx], LOW_Q) / quantile([va[i] for i in idx], LOW_Q) - 1)
    return {"effect": eff, "lo": quantile(boots, 0.025), "hi": quantile(boots, 0.975),
            "effect_min": min(vb) / min(va) - 1, "rounds": n}


# ---- model side ----

def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def kernel_image():
    env = os.environ.get("LREF_KERNEL")
    if env:
        return env
    ks = sorted(glob.glob("/boot/vmlinuz-*"))
    if not ks:
        raise PanelError("no Linux kernel in /boot: apt-get install linux-image-amd64 "
                         "(tools/linux-ref/run.sh installs it)")
    return ks[-1]


def make_initrd(out, panel, vm):
    if not shutil.which("cpio"):
        raise PanelError("cpio missing: apt-get install cpio")
    d = tempfile.mkdtemp(prefix="panel-initrd-")
    try:
        shutil.copy(panel, os.path.join(d, "init"))
        shutil.copy(vm, os.path.join(d, "panel_vm"))
        path = os.path.join(out, "initrd.gz")
        with open(path, "wb") as f:
            cp = subprocess.Popen(["cpio", "-o", "-H", "newc", "--quiet"], cwd=d,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            gz = subprocess.Popen(["gzip", "-1"], stdin=cp.stdout, stdout=f)
            cp.stdin.write(b"init\npanel_vm\n")
            cp.stdin.close()
            cp.wait()
            gz.wait()
        return path
    finally:
        shutil.rmtree(d)


def reuse_model(d, profile):
    """The guest side of an earlier panel run in directory @d: it stands while its
    inputs are unchanged (the digest in its panel.json), up to the guest's own randomness
    (docs/COSTMODEL.md, "The native panel")."""
    old = load_json(os.path.join(d, "panel.json"))
    if old is None or old.get("boot") is None:
        raise PanelError("%s holds no panel.json with a guest boot" % d)
    with open(profile) as f:
        ptext = f.read()
    sha = inputs_sha(ptext, os.path.basename(kernel_image()), os.environ.get("BAREMM_MODEL_ARGS", ""))
    if old.get("inputs_sha") != sha:
        now = os.environ.get("BAREMM_MODEL_ARGS", "")
        hint = ("; its plugin arguments were %r, BAREMM_MODEL_ARGS is %r now"
                % (old.get("model_args", ""), now) if old.get("model_args", "") != now else "")
        raise PanelError("the guest run in %s had other inputs (%s, now %s%s): boot again" % (
            d, old.get("inputs_sha"), sha, hint))
    log = old["boot"]["log"]
    with open(log, errors="replace") as f:
        serial = f.read()
    with open(log + ".model", errors="replace") as f:
        model = f.read()
    return serial, model, old["boot"]


def run_model(out, panel, vm, profile, rounds, only=None, timeout=3600, model_args=None):
    """Boot Linux under the cost model with the panel as /init (plugin arguments
    @model_args, default BAREMM_MODEL_ARGS); returns (serial, model, boot)."""
    initrd = make_initrd(out, panel, vm)
    log = os.path.join(out, "guest-%s.log" % runner.safe_name(os.path.basename(profile)))
    mlog = log + ".model"
    if os.path.exists(mlog):
        os.remove(mlog)
    plug = runner.model_plugin_args(profile, model_args)
    plug[1] += ",out=" + runner.qemu_arg_path(mlog)
    append = GUEST_APPEND + " panel_rounds=%d" % rounds + (" panel_only=" + only if only else "")
    argv = [runner.QEMU, "-machine", "q35", "-cpu", "max", "-m", GUEST_MEM, "-smp", "2",
            "-kernel", kernel_image(), "-initrd", initrd, "-append", append, "-nographic",
            "-no-reboot", "-icount", runner.ICOUNT] + GUEST_QEMU + plug
    q = runner.run_qemu(argv, log, timeout)
    with open(log, errors="replace") as f:
        serial = f.read()
    if "PANEL-END" not in serial:
        raise PanelError("the guest did not finish the panel (see %s)%s" %
                         (log, " (timed out)" if q.get("timed_out") else ""))
    with open(mlog, errors="replace") as f:
        model = f.read()
    return serial, model, {"argv": argv, "duration_s": q.get("duration_s"), "log": log}


# ---- joining and printing ----

def join(native, guest_rows, model):
    rows = []
    for name, n in native.items():
        m = model.get(name)
        g = guest_rows.get(name)
        insns = statistics.median(g["values"]) if g else None
        r = {"name": name, "group": n["group"], "cpus": n["cpus"], "desc": n["desc"],
             "ops": n["ops"], "native_min": n["min"], "native_median": n["median"],
             "native_spread": n["spread"], "native_repeats": n["repeats"],
             "native_trusted": n["trusted"], "insns_per_op": insns,
             "model": m["median"] if m else None,
             "model_events": m["events"] if m else {},
             "model_parts": m["parts"] if m else {}}
        r["ratio"] = r["model"] / r["native_min"] if m and n["min"] else None
        r["native_ipc"] = insns / n["min"] if insns and n["min"] else None
        r["model_ipc"] = insns / r["model"] if insns and r["model"] else None
        rows.append(r)
    return rows


def pairs(native, rows):
    by = {r["name"]: r for r in rows}
    out = []
    for title, a, b in PAIRS:
        if a not in native or b not in native:
            continue
        e = pair_effect(native[a], native[b])
        e.update(title=title, a=a, b=b, excludes_zero=e["lo"] > 0 or e["hi"] < 0)
        out.append(pair_model(e, by))
    return out


def pair_model(e, by):
    """Pair @e (its native effect) with the model's, from the joined rows @by."""
    for k in ("model_effect", "sign_ok", "diff_pp"):
        e.pop(k, None)
    ma, mb = by[e["a"]].get("model"), by[e["b"]].get("model")
    e["model_effect"] = (mb / ma - 1) if ma and mb else None
    if ma and mb:
        e["sign_ok"] = (not e["excludes_zero"]) or (e["model_effect"] > 0) == (e["effect"] > 0)
        e["diff_pp"] = 100 * (e["model_effect"] - e["effect"])
    return e


def summary(rows):
    rs = [r["ratio"] for r in rows if r["ratio"] and r["native_trusted"]]
    tight = sum(1 for x in rs if BAND_TIGHT[0] <= x <= BAND_TIGHT[1])
    wide = sum(1 for x in rs if BAND_WIDE[0] <= x <= BAND_WIDE[1])
    s = {"rows": len(rs), "in_tight": tight, "in_wide": wide}
    if rs:
        s["geomean_ratio"] = math.exp(sum(math.log(x) for x in rs) / len(rs))
        s["mean_abs_log_error"] = sum(abs(math.log(x)) for x in rs) / len(rs)
    by = {r["name"]: r for r in rows}
    if all(k in by and by[k].get("native_min") for k in MLP):
        s["mlp_native"] = by[MLP[0]]["native_min"] / by[MLP[1]]["native_min"]
        if by[MLP[0]].get("model") and by[MLP[1]].get("model"):
            s["mlp_model"] = by[MLP[0]]["model"] / by[MLP[1]]["model"]
    return s


def _f(x, fmt="%.1f"):
    return "-" if x is None else fmt % x


# fixed widths: the rows of panels with other hosts and profiles line up with each other
TABLE_COLUMNS = [tab.Column("row", tab.LEFT, 15), tab.Column("group", tab.LEFT, 5),
                 tab.Column("cpus", width=4), tab.Column("insns/op", width=10),
                 tab.Column("native min", width=12), tab.Column("native med", width=12),
                 tab.Column("spread", width=7), tab.Column("model", width=12),
                 tab.Column("model/nat", width=8), tab.Column("IPCnat", width=6),
                 tab.Column("IPCmod", width=6)]


def table(data, out=sys.stdout):
    p = out.write
    p("native panel: host %s, core %.3f GHz (TSC %.3f GHz x %.4f), model profile %s\n" % (
        data["host"].get("cpu", "?"), data["host"]["core_ghz"], data["host"]["tsc_ghz"],
        data["host"]["core_per_tsc"], data["profile"]))
    cells, flags = [], []
    for r in data["rows"]:
        flags.append("" if r["native_trusted"] else "  SKIP: native minimum not repeated (%d of %d rounds within %d %%)" % (
            r["native_repeats"], data["rounds"], REPEAT_WITHIN * 100))
        cells.append([r["name"], r["group"], r["cpus"], _f(r["insns_per_op"]), _f(r["native_min"]),
                      _f(r["native_median"]), "%.1f%%" % (100 * r["native_spread"]), _f(r["model"]),
                      _f(r["ratio"], "%.2f"), _f(r["native_ipc"], "%.2f"), _f(r["model_ipc"], "%.2f")])
    lines = tab.text_lines(TABLE_COLUMNS, cells, sep=" ")
    p(lines[0] + "\n")
    for line, flag in zip(lines[1:], flags):
        p(line + flag + "\n")
    p("cycles per op (native: core cycles, minimum of %d interleaved rounds; model: model cycles, "
      "median of the guest's runs)\n" % data["rounds"])
    s = data["summary"]
    if s.get("rows"):
        p("model/native: geometric mean %.2f, mean |log error| %.2f; within %.2f-%.2f: %d of %d rows, "
          "within %.2f-%.2f: %d of %d\n" % (s["geomean_ratio"], s["mean_abs_log_error"], BAND_TIGHT[0],
                                           BAND_TIGHT[1], s["in_tight"], s["rows"], BAND_WIDE[0],
                                           BAND_WIDE[1], s["in_wide"], s["rows"]))
    if "mlp_native" in s:
        p("memory-level parallelism (%s / %s per load): native %.2fx, model %s\n" % (
            MLP[0], MLP[1], s["mlp_native"], _f(s.get("mlp_model"), "%.2fx")))
    for e in data["pairs"]:
        p("A/B %s: native %+.1f %% [%+.1f, %+.1f] (minima %+.1f %%), model %s%s\n" % (
            e["title"], 100 * e["effect"], 100 * e["lo"], 100 * e["hi"], 100 * e["effect_min"],
            _f(None if e["model_effect"] is None else 100 * e["model_effect"], "%+.1f %%"),
            "" if e["model_effect"] is None else "  (%s, %+.1f pp)" % (
                "sign ok" if e["sign_ok"] else "WRONG SIGN", e["diff_pp"])))


def plot(data, png):
    gp = shutil.which("gnuplot")
    if not gp:
        raise PanelError("gnuplot is not installed: apt-get install -y gnuplot-nox")
    rows = [r for r in data["rows"] if r["ratio"]]
    d = tempfile.mkdtemp(prefix="panel-plot-")
    try:
        dat = os.path.join(d, "r.dat")
        with open(dat, "w") as f:
            for i, r in enumerate(rows):
                f.write("%d %s %.4f\n" % (i, r["name"], r["ratio"]))
        script = os.path.join(d, "p.gp")
        with open(script, "w") as f:
            f.write("set terminal pngcairo size 1100,520 noenhanced\nset output '%s'\n" % png)
            f.write("set title 'native panel: model cycles / native core cycles (profile %s, host %s)'\n"
                    % (data["profile"], data["host"].get("cpu", "?")))
            f.write("set logscale y\nset ylabel 'model / native'\nset grid ytics\n")
            f.write("set xtics rotate by -45 scale 0\nset boxwidth 0.7\nset style fill solid 0.6\n")
            f.write("set xrange [-0.7:%f]\n" % (len(rows) - 0.3))
            f.write("set yrange [0.25:%f]\n" % max(2.0, 1.3 * max(r["ratio"] for r in rows)))
            for y in (BAND_WIDE + BAND_TIGHT):
                f.write("set arrow from graph 0, first %g to graph 1, first %g nohead dt 2\n" % (y, y))
            f.write("plot '%s' using 1:3:xtic(2) with boxes notitle, 1 with lines lw 2 notitle\n" % dat)
        r = subprocess.run([gp, script], capture_output=True, text=True)
        if r.returncode:
            raise PanelError("gnuplot failed:\n" + r.stderr)
    finally:
        shutil.rmtree(d)


def cpu_id():
    """vendor family model stepping of CPU 0, from /proc/cpuinfo."""
    return runner.host_cpuinfo()["id"]


def host_info():
    return runner.host_cpuinfo()["name"]


def main(a):
    if a.remodel:
        out = a.out or runner.new_dir(os.path.join(ROOT, "results"), "native-panel-remodel")
        data = remodel(a.remodel, out, os.path.join(a.save, os.path.basename(a.remodel))
                       if a.save else None)
        if a.plot:
            plot(data, a.plot)
        return 0
    if a.from_json:
        with open(a.from_json) as f:
            data = json.load(f)
        table(data)
        if a.plot:
            plot(data, a.plot)
        return 0
    profile = runner.resolve_profile(a.model)
    pname = os.path.basename(profile)[:-4] if profile.endswith(".cfg") else a.model
    out = a.out or runner.new_dir(os.path.join(ROOT, "results"), "native-panel")
    os.makedirs(out, exist_ok=True)
    bdir = os.path.join(ROOT, "build", "native")
    t0 = time.monotonic()
    panel, vm = build(bdir)
    if not a.native_only and not a.reuse_model:
        build_plugin()
    reused = None
    if a.reuse_model:	# refused now, not after the native rounds, when its inputs differ
        reused = reuse_model(a.reuse_model, profile)
    print("native-panel: native rounds (%d, interleaved) ..." % a.rounds, file=sys.stderr)
    text = run_native(panel, a.rounds, a.only) + run_native(vm, a.rounds, a.only)
    with open(os.path.join(out, "native.log"), "w") as f:
        f.write(text)
    nrows, clocks = parse_panel(text)
    if not nrows:
        raise PanelError("no row selected (--only %s)" % a.only)
    native = native_figures(nrows, clocks)
    guest_rows, model, boot, serial = {}, {}, None, None
    if reused is not None:
        serial, mtext, boot = reused
    elif not a.native_only:
        print("native-panel: Linux guest under the cost model (%s) ..." % pname, file=sys.stderr)
        serial, mtext, boot = run_model(out, panel, vm, profile, a.model_rounds, a.only)
    if serial is not None:
        guest_rows, _ = parse_panel(serial)
        model = parse_model(mtext)
        missing = [n for n in native if n not in model]
        if missing:
            raise PanelError("the model printed no figure for %s (see %s)" % (", ".join(missing), out))
    rows = join(native, guest_rows, model)
    with open(profile) as f:
        ptext = f.read()
    cpt = core_per_tsc(clocks)
    tsc = clocks[0]["tsc_ghz"]
    data = {"schema": SCHEMA, "profile": pname, "rounds": a.rounds, "model_rounds": a.model_rounds,
            "host": {"cpu": host_info(), "core_per_tsc": cpt, "tsc_ghz": tsc, "core_ghz": cpt * tsc,
                     "clocks": clocks},
            "kernel": os.path.basename(kernel_image()) if not a.native_only else None,
            "git": runner.git_info(), "rows": rows, "pairs": pairs(native, rows),
            "summary": summary(rows), "boot": boot, "profile_text": ptext,
            "model_args": os.environ.get("BAREMM_MODEL_ARGS", ""),
            "inputs_sha": None if boot is None else inputs_sha(
                ptext, os.path.basename(kernel_image()), os.environ.get("BAREMM_MODEL_ARGS", "")),
            "cpu_id": cpu_id(),
            "native_sha": native_sha(),
            "duration_s": round(time.monotonic() - t0, 1)}
    table(data)
    runner.write_json(os.path.join(out, "panel.json"), data)
    if a.save:
        os.makedirs(a.save, exist_ok=True)
        runner.write_json(os.path.join(a.save, "native-panel-%s.json" % saved_name(
            pname, data["model_args"], data["cpu_id"])), data)
    if a.plot:
        plot(data, a.plot)
    print("native-panel: %s (%.0f s)" % (out, data["duration_s"]), file=sys.stderr)
    return 0


def recorded_profile_text(rec):
    """The profile a recorded panel's model side stands for: a published profile as it is
    committed now (a change of it makes the panel stale), the host's (not committed) as
    recorded, completed by complete_host_profile() when core keys came after it."""
    committed = os.path.join(ROOT, "model", "profiles", rec.get("profile", "") + ".cfg")
    if rec.get("profile") != "host" and os.path.isfile(committed):
        with open(committed) as f:
            return f.read()
    return complete_host_profile(rec.get("profile_text", ""), rec.get("cpu_id") or "")


# The recorded measurements a legacy rep_line comment quotes: the copy's price per line
# touched (128 lines) and the clear's per line (64), in either wording calibrate used.
_REP_LINE_FIGURES = (
    re.compile(r"= ([0-9.]+) and ([0-9.]+) per line touched"),
    re.compile(r"= ([0-9.]+) per line touched .*?rep stos[bq] 4 KiB: ([0-9.]+) per line"),
)
_REP_MEM_FIGURE = re.compile(r"per round: min ([0-9.]+) ")


def _rep_from_legacy(text, fill):
    """A profile recorded with the one price per line touched (rep_line) rewritten with
    the per-line-stored price (rep_store_line) and rep_mem_line derived anew, both from
    the figures that recording measured and quotes in its comments. @fill: the
    rep_fill_line the profile now has."""
    prof = calibrate.read_profile_text(text)
    com = prof["rep_line"][1]
    m = next(filter(None, (r.search(com) for r in _REP_LINE_FIGURES)), None)
    mm = _REP_MEM_FIGURE.search(prof.get("rep_mem_line", ("", ""))[1])
    if not m or not mm:
        raise PanelError("the recorded host profile's rep_line or rep_mem_line comment quotes "
                         "no measured figure to derive rep_store_line from: calibrate and "
                         "record the panel anew on its CPU")
    copy, clear = 128 * float(m.group(1)), 64 * float(m.group(2))
    store = calibrate.rep_store_price(copy, clear)
    rep_mem = max(0, round(calibrate.rep_mem_price(float(mm.group(1)), store, fill)))
    out = []
    for line in text.rstrip("\n").splitlines():
        k = line.partition("#")[0].partition("=")[0].strip()
        if k == "rep_line":
            out.append("%-16s = %-5s # DERIVED when the model side was booted again, from this "
                       "recording's own figures (its rep_line, one price per line touched, "
                       "quoted them): the copy of a page within L1 %.1f cycles and the clear "
                       "%.1f, over their 64 stored lines each, mean %.2f" % (
                           "rep_store_line", "%.2f" % store, copy, clear, store))
        elif k == "rep_mem_line":
            out.append("%-16s = %-5s # DERIVED when the model side was booted again: the "
                       "recorded copy of 64 KiB from flushed lines, %s cycles, minus 1024 x "
                       "max(rep_store_line, rep_fill_line), over 1024 source lines; recorded: %s"
                       % ("rep_mem_line", rep_mem, mm.group(1), prof["rep_mem_line"][1]))
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def complete_host_profile(text, cpu):
    """A recorded host profile with every core key the parser needs now: a core key that
    did not exist when the host was calibrated is taken from the core table
    (calibrate.CORE_CPUS) for its CPU, @cpu as cpu_id() gives it ("vendor family model
    ..." in decimal), and says so on its line; a recording with the old rep price
    (rep_line) has rep_store_line and rep_mem_line derived from its own figures
    (_rep_from_legacy). Any other missing key, or a CPU the table does not have, is an
    error: the panel must be measured anew on its CPU."""
    have = set(calibrate.read_profile_text(text))
    legacy_rep = "rep_line" in have and "rep_store_line" not in have
    missing = [k for k in calibrate.KEYS if k not in have]
    if legacy_rep:
        missing.remove("rep_store_line")  # _rep_from_legacy writes it
    if not missing and not legacy_rep:
        return text
    fills = [k for k in missing if k in calibrate.REP_FILL_KEYS]
    nested = "nested_page_kib" in missing
    missing = [k for k in missing if k not in calibrate.REP_FILL_KEYS + calibrate.NESTED_KEYS]
    if missing or legacy_rep:
        text = _complete_from_table(text, cpu, missing, legacy_rep)
    if fills:
        # a calibration from before the fill prices by level and kind priced every fill
        # at rep_fill_line: the same price keeps the model what it was for this recording
        fill = calibrate.read_profile_text(text)["rep_fill_line"][0]
        text = text.rstrip("\n") + "\n" + "".join(
            "%-16s = %-5s # DERIVED when the model side was booted again: rep_fill_line's, the "
            "one price of every fill when this host was calibrated (the key is newer than the "
            "recording)\n" % (k, fill) for k in fills)
    if nested:
        text = _nested_from_probe(text)
    return text


_PROBE_LINE = re.compile(r"Page-size probe: (\d+) L1-resident lines one per 2 MiB of the THP "
                         r"arena cost ([0-9.]+) cycles, one per 4 KiB ([0-9.]+)")
_HYPERVISOR = re.compile(r"under hypervisor '([^']*)'")
_WALK_FIGURE = re.compile(r"a walk of ([0-9.]+) cycles; minus the model's four table loads at "
                          r"that size \(3 x l1d_lat \+ l2_lat = (\d+)\)")


def _nested_from_probe(text):
    """A recording from before the model had nested paging: nested_page_kib from the
    page-size probe its header quotes (calibrate.nested_page_from_probe, the rule a new
    calibration follows), and walk_overhead derived anew from the walk it quotes, minus
    the nested leaf load the model now adds to it."""
    probe = _PROBE_LINE.search(text)
    hv = _HYPERVISOR.search(text)
    val, why = calibrate.nested_page_from_probe(
        probe and (float(probe.group(2)), float(probe.group(3))), hv.group(1).strip() if hv else "")
    prof = calibrate.read_profile_text(text)
    walk = _WALK_FIGURE.search(prof["walk_overhead"][1])
    if val and not walk:
        raise PanelError("the recorded host profile's walk_overhead quotes no walk to take the "
                         "nested leaf load from: calibrate and record the panel anew on its CPU")
    out = []
    for line in text.rstrip("\n").splitlines():
        k = line.partition("#")[0].partition("=")[0].strip()
        if k == "walk_overhead" and val:
            leaf = calibrate.nested_leaf_price(val, {"l1d_lat": prof["l1d_lat"][0],
                                                     "l2_lat": prof["l2_lat"][0]})
            loads = int(walk.group(2)) + leaf
            out.append("%-16s = %-5s # DERIVED when the model side was booted again: the "
                       "recorded walk, %s cycles, minus the model's table loads at that size "
                       "(%s) and the nested leaf entry's (%d)%s; recorded: %s" % (
                           k, max(0, round(float(walk.group(1)) - loads)), walk.group(1),
                           walk.group(2), leaf, " (negative: clamped to 0)"
                           if float(walk.group(1)) < loads else "", prof[k][1]))
        else:
            out.append(line)
    out.append("%-16s = %-5s # DERIVED when the model side was booted again (the key is newer "
               "than the recording): %s" % ("nested_page_kib", val, why))
    return "\n".join(out) + "\n"


def _complete_from_table(text, cpu, missing, legacy_rep):
    """complete_host_profile's core keys from the table, and the legacy rep prices."""
    f = cpu.split()
    try:
        cpuid = {"vendor": f[0], "family": int(f[1]), "model": int(f[2])}
    except (IndexError, ValueError):
        raise PanelError("the recorded host profile lacks %s and names no CPU (%r)"
                         % (", ".join(missing), cpu))
    alias = calibrate.cpuid_as_in_profile(text)     # the silicon named by --cpuid-as
    if alias:
        cpuid.update(family=alias[0], model=alias[1])
    entry = calibrate.core_cpu(cpuid)
    bad = [k for k in missing if k not in calibrate.CORE_KEYS or entry is None]
    if bad:
        raise PanelError("the recorded host profile lacks %s, which the core table cannot "
                         "supply for %s: calibrate and record the panel anew on that CPU"
                         % (", ".join(bad), cpu))
    lines = [text.rstrip("\n")]
    for k in missing:
        val, source = entry[1][k]
        lines.append("%-16s = %-5s # LOOKED UP when the model side was booted again (%s): %s; "
                     "the calibration recorded with this panel predates the key"
                     % (k, val, entry[0], source))
    text = "\n".join(lines) + "\n"
    if legacy_rep:
        text = _rep_from_legacy(text, float(calibrate.read_profile_text(text)["rep_fill_line"][0]))
    return text


def native_from_rows(rows):
    """The native figures join() takes, from a recorded panel's rows."""
    return {r["name"]: {"group": r["group"], "cpus": r["cpus"], "desc": r["desc"], "ops": r["ops"],
                        "min": r["native_min"], "median": r["native_median"],
                        "spread": r["native_spread"], "repeats": r["native_repeats"],
                        "trusted": r["native_trusted"]} for r in rows}


def remodel(path, out, save=None):
    """Boot the model side of the recorded panel @path again, keep its native side: a
    change of the plugin alone (the native side's inputs, native_sha, unchanged since the
    recording) re-checks the model against a CPU this machine may not be. The profile is
    the recorded one (a host profile) or the committed one (a published profile, as
    panel-check reads it); the plugin arguments and guest kernel are the recorded ones."""
    old = load_json(path)
    if old is None or not old.get("rows") or old.get("boot") is None:
        raise PanelError("%s is no recorded panel with a guest boot" % path)
    native_rev = (old.get("remodelled") or {}).get("native_git") or (old.get("git") or {}).get("rev")
    if not native_rev or (old.get("git") or {}).get("dirty"):
        raise PanelError("%s names no clean git revision: its native side cannot be checked" % path)
    then, now = recorded_native_sha(old), native_sha()
    if then != now:
        raise PanelError("the native side's sources changed since %s (%s, now %s): measure the "
                         "panel anew on its CPU (%s)" % (native_rev[:12], then, now, old.get("cpu_id")))
    kernel = os.path.basename(kernel_image())
    if old.get("kernel") != kernel:
        raise PanelError("%s ran the guest on %s, this machine has %s" % (path, old.get("kernel"), kernel))
    os.makedirs(out, exist_ok=True)
    ptext = recorded_profile_text(old)
    profile = os.path.join(out, old["profile"] + ".cfg")
    with open(profile, "w") as f:
        f.write(ptext)
    build_plugin()
    panel, vm = build(os.path.join(ROOT, "build", "native"))
    t0 = time.monotonic()
    args = old.get("model_args") or ""
    print("native-panel: remodel %s: Linux guest under the cost model (%s%s) ..." % (
        path, old["profile"], ", " + args if args else ""), file=sys.stderr)
    serial, mtext, boot = run_model(out, panel, vm, profile, old["model_rounds"], model_args=args)
    native = native_from_rows(old["rows"])
    model = parse_model(mtext)
    missing = [n for n in native if n not in model]
    if missing:
        raise PanelError("the model printed no figure for %s (see %s)" % (", ".join(missing), out))
    guest_rows, _ = parse_panel(serial)
    rows = join(native, guest_rows, model)
    by = {r["name"]: r for r in rows}
    data = dict(old)
    data.update(rows=rows, pairs=[pair_model(dict(e), by) for e in old["pairs"]],
                summary=summary(rows), boot=boot, profile_text=ptext, kernel=kernel,
                git=runner.git_info(), inputs_sha=inputs_sha(ptext, kernel, args),
                remodelled={"native_git": native_rev, "native_sha": now,
                            "from_git": (old.get("git") or {}).get("rev"),
                            "model_duration_s": round(time.monotonic() - t0, 1)})
    table(data)
    runner.write_json(os.path.join(out, "panel.json"), data)
    if save:
        runner.write_json(save, data)
    return data


def saved_name(profile, model_args, cpu=None):
    """The name a panel is saved under (modelerror.panel_name): the profile's, the host's
    per CPU, -ooo under the out-of-order core (BAREMM_MODEL_ARGS=core=ooo), so that both
    cores' panels, and the host panels of different machines, sit side by side."""
    return modelerror.panel_name(profile, model_args, cpu)


def add_parser(sub):
    p = sub.add_parser("native-panel", help="the same workloads natively and under the cost "
                       "model, side by side (docs/COSTMODEL.md)")
    p.add_argument("--model", default="skylake-sp", help="cost-model profile name or path "
                   "(default skylake-sp; `host` after tools/baremm calibrate)")
    p.add_argument("--rounds", type=int, default=31, help="native rounds (interleaved)")
    p.add_argument("--model-rounds", type=int, default=5, help="measured runs per row in the guest")
    p.add_argument("--only", help="comma-separated rows")
    p.add_argument("--native-only", action="store_true", help="no guest boot")
    p.add_argument("--reuse-model", metavar="DIR", help="take the guest side from an earlier "
                   "run's directory (same inputs), measure the native side anew")
    p.add_argument("--out", help="output directory (default results/native-panel-<time>)")
    p.add_argument("--save", help="also write DIR/native-panel-<profile>.json")
    p.add_argument("--plot", help="PNG of the ratios (needs gnuplot)")
    p.add_argument("--from", dest="from_json", help="print (and plot) a saved panel JSON")
    p.add_argument("--remodel", metavar="PANEL_JSON", help="boot the model side of a recorded "
                   "panel again and keep its native side (its native sources unchanged): after "
                   "a change of the plugin alone, for a panel of any CPU; with --save, rewrite "
                   "PANEL_JSON")
    p.set_defaults(func=main)


# ---- docs/COSTMODEL.md ----

PANEL_PROFILES = ("host", "skylake-sp", "zen3")


def panel_names(root):
    """(name, profile, out-of-order?) of every panel docs/COSTMODEL.md shows: the host
    profile's of each CPU recorded (docs/data/native-panel-host-<cpu>.json), then the
    published profiles'; each under both cores (saved_name)."""
    hosts = sorted(os.path.basename(p)[len("native-panel-"):-len(".json")]
                   for p in glob.glob(os.path.join(root, "docs", "data", "native-panel-host-*.json")))
    hosts = sorted({h[:-len("-ooo")] if h.endswith("-ooo") else h for h in hosts})
    if not hosts:
        hosts = [saved_name("host", "")]
    out = []
    for base, prof in [(h, "host") for h in hosts] + [(p, p) for p in PANEL_PROFILES[1:]]:
        out += [(base, prof, False), (base + "-ooo", prof, True)]
    return out


def parts_summary(row, top=2):
    """Where a row's model cycles went: its largest parts (model_parts, the median run's)
    with their shares, e.g. "insns 58 %, cache 31 %"; "-" for a row recorded without them."""
    parts = row.get("model_parts") or {}
    total = sum(v for v in parts.values() if v > 0)
    if not total:
        return "-"
    # a part under half a percent says nothing here
    big = sorted(((v, k) for k, v in parts.items() if v >= total / 200),
                 key=lambda x: (-x[0], x[1]))[:top]
    return ", ".join("%s %.0f %%" % (k, 100 * v / total) for v, k in big)


def gen_doc_block(root, problems):
    """The generated block `native-panel` of docs/COSTMODEL.md: one table per profile
    (the host's per CPU) and core with saved data (docs/data/native-panel-<name>.json)."""
    out = []
    for name, prof, ooo in panel_names(root):
        env = "BAREMM_MODEL_ARGS=%s " % runner.OOO_ARGS if ooo else ""
        path = os.path.join(root, "docs", "data", "native-panel-%s.json" % name)
        d = load_json(path)
        if d is None:
            out.append("**%s%s**: not measured (`%stools/baremm native-panel --model %s --save "
                       "docs/data`%s)." % (prof, ", out-of-order core" if ooo else "", env, prof,
                                            " on that CPU" if prof == "host" else ""))
            continue
        g = d.get("git") or {}
        build = (g.get("rev") or "")[:12]
        if g.get("dirty"):
            problems.append("native-panel-%s.json: from a dirty tree (build %s)" % (prof, build))
        s = d["summary"]
        out.append("**Profile %s, %s core** (build `%s`%s; host %s (%s), core %.2f GHz measured; "
                   "kernel %s; %d native rounds, %d model runs per row). Command: `%stools/baremm "
                   "native-panel --model %s --save docs/data --plot docs/img/native-panel-%s.png`." % (
                       prof, "out-of-order" if ooo else "in-order", build,
                       ", dirty tree" if g.get("dirty") else "",
                       d["host"].get("cpu", "?"), d.get("cpu_id", "?"), d["host"]["core_ghz"],
                       d.get("kernel"),
                       d["rounds"], d["model_rounds"], env, prof, name))
        rows = []
        for r in d["rows"]:
            row = ["`%s`" % r["name"], r["group"], str(r["cpus"]), _f(r["insns_per_op"]),
                   _f(r["native_min"]) + ("" if r["native_trusted"] else " (noisy)"),
                   _f(r["model"]), "**%s**" % _f(r["ratio"], "%.2f"),
                   _f(r["native_ipc"], "%.2f"), _f(r["model_ipc"], "%.2f"), parts_summary(r)]
            if ooo:
                m = (r.get("model_events") or {}).get("model_mispredicts")
                row.append(_f(m, "%.0f" if m is not None and m >= 100 else "%.3f"))
            rows.append(row)
        head = ["row", "group", "CPUs", "instructions/op", "native cycles/op (min)",
                "model cycles/op", "model/native", "IPC native", "IPC model",
                "model cycles by part"] + (["mispredicts/op"] if ooo else [])
        out.append(tab.markdown(tab.columns(head, left=(0, 1, 2)), rows))
        if s.get("rows"):
            out.append("model/native over %d trusted rows: geometric mean %.2f; within %.2f-%.2f: "
                       "%d; within %.2f-%.2f: %d.%s" % (
                           s["rows"], s["geomean_ratio"], BAND_TIGHT[0], BAND_TIGHT[1], s["in_tight"],
                           BAND_WIDE[0], BAND_WIDE[1], s["in_wide"],
                           " Memory-level parallelism (%s / %s per load): native %.2fx, model %s." % (
                               MLP[0], MLP[1], s["mlp_native"], _f(s.get("mlp_model"), "%.2fx"))
                           if "mlp_native" in s else ""))
        prs = []
        for e in d["pairs"]:
            prs.append("- %s: native %+.1f %% (95 %% interval of the paired median %+.1f..%+.1f; "
                       "minima %+.1f %%), model %s%s" % (
                           e["title"], 100 * e["effect"], 100 * e["lo"], 100 * e["hi"],
                           100 * e["effect_min"],
                           _f(None if e["model_effect"] is None else 100 * e["model_effect"], "%+.1f %%"),
                           "" if e["model_effect"] is None else ", %s, %+.1f pp" % (
                               "same sign" if e["sign_ok"] else "**wrong sign**", e["diff_pp"])))
        out.append("\n".join(prs))
    return "\n\n".join(out)

