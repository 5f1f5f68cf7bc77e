"""tools/baremm: command-line entry point. See docs/OUTPUT.md."""
import argparse
import json
import os
import sys

from . import cfg as cfgmod, compare, logparse, plot as plotmod, runner, status as st
from . import calibrate, experiment, modelcheck, perfcheck, speed, sweep, symbolize, testrun
from . import docs, panel, panelcheck

SUITES = os.path.join("tests", "qemu", "suites.cfg")
# What a subcommand raises when its input is bad or a step it needs fails: exit status
# EXIT_TOOL_ERROR, mapped in main() only (--model host uncalibrated: EXIT_NOT_CALIBRATED).
TOOL_ERRORS = (runner.ToolError, docs.DocsError, perfcheck.PerfError, sweep.SweepError,
               panel.PanelError, plotmod.PlotError, OSError)


def err(msg):
    sys.stderr.write("baremm: %s\n" % msg)


# ---------------------------------------------------------------- helpers

def load_record(path):
    """A run.json record from a run.json file, a result directory or a raw serial log."""
    if os.path.isdir(path):
        path = os.path.join(path, "run.json")
    with open(path, "rb") as f:
        data = f.read()
    if data.lstrip()[:1] == b"{":
        try:
            rec = json.loads(data.decode("utf-8"))
        except ValueError as e:
            raise runner.ToolError("%s: not valid JSON: %s" % (path, e))
        if rec.get("schema", "").split("/")[0] != "baremm-run":
            raise runner.ToolError("%s: not a baremm run.json (schema %r)"
                                   % (path, rec.get("schema")))
        rec.setdefault("_path", path)
        return rec
    rec, _ = runner.record_from_log(path)
    rec["_path"] = path
    return rec


def summary_lines(rec):
    lines = []
    q = rec.get("qemu")
    s = "status=%s" % rec["status"]
    if q:
        s += " (qemu exit %s%s) in %.1f s" % (q["exit_code"], ", host timeout" if q["timed_out"]
                                              else "", q["duration_s"])
    k = rec["ktap"]
    if k["present"]:
        c = k["counted"]
        s += "; KTAP %d passed, %d failed, %d skipped" % (c["pass"], c["fail"], c["skip"])
    s += "; %d results" % len(rec["results"])
    lines.append(s)
    m = rec.get("machine")
    if m:
        lines.append("machine: " + ", ".join("%s=%s" % kv for kv in m.items()))
    else:
        lines.append("machine: (no BAREMM-MACHINE line)")
    for name in k.get("failures", []):
        lines.append("failed test: %s" % name)
    for e in k.get("errors", []):
        lines.append("KTAP error%s: %s" % (_at(e["line"]), e["message"]))
    for e in rec.get("option_errors", []):
        lines.append("bad option (line %d): %s" % (e["line"], e["text"]))
    for e in rec.get("kernel_errors", []):
        lines.append("kernel error (line %d): %s" % (e["line"], e["text"]))
    for p in rec.get("panics", []):
        lines.append("panic (line %d): %s" % (p["line"], p["text"]))
    for e in rec["log"]["errors"]:
        lines.append("LOG ERROR%s: %s" % (_at(e["line"]), e["message"]))
    for w in rec["log"]["warnings"]:
        lines.append("warning%s: %s" % (_at(w["line"]), w["message"]))
    if rec["log"]["truncated"]:
        lines.append("THE LOG IS TRUNCATED: no BAREMM-END line; figures are only those of "
                     "complete lines")
    return lines


def _at(line):
    return " at line %s" % line if line else ""


def disp_path(p):
    r = os.path.relpath(p)
    return p if r.startswith("..") else r


def print_record(rec, out=sys.stdout):
    for line in summary_lines(rec):
        out.write("baremm: %s\n" % line)
    if rec["results"]:
        out.write("\n")
        if compare.has_variants(rec["results"]):
            c = compare.compare_variants(rec.get("name", ""), rec["results"], rec.get("machine"))
            out.write(compare.format_text(c))
        else:
            out.write(compare.results_table(rec["results"]))


def print_backtraces(rec, logpath, out=sys.stdout, iso=None):
    # the ELF built with the ISO booted (build/contracts/ holds both of the contracts kernel)
    elf = os.path.join(os.path.dirname(os.path.abspath(iso)) if iso else
                       os.path.join(runner.ROOT, "build"), "baremm.elf")
    if iso and not os.path.exists(elf):
        elf = os.path.join(runner.ROOT, "build", "baremm.elf")
    if not rec.get("panics") or not os.path.exists(elf):
        return
    frames = [f for p in rec["panics"] for f in p["backtrace"]]
    if not frames:
        return
    try:
        with open(logpath, errors="replace") as f:
            lines = f.read().split("\n")
        want = {f["line"] for f in frames}
        texts = [logparse.clean_line(lines[i - 1]) for i in sorted(want)]
        ok, msg = symbolize.check_build_id([logparse.clean_line(x) for x in lines], elf)
        if not ok:
            err("not symbolizing the backtrace: %s" % msg)
            return
        out.write("baremm: symbolized backtrace (tools/symbolize):\n")
        for line in symbolize.symbolize_lines(texts, elf, root=runner.ROOT):
            out.write("  " + line + "\n")
    except (OSError, symbolize.SymbolizeError) as e:
        err("cannot symbolize: %s" % e)


def add_model_arg(p):
    p.add_argument("--model", metavar="PROFILE", default=None,
                   help="cost-model mode: deterministic (icount) boot with the cycle-cost "
                        "plugin and this CPU profile (%s, host after `tools/baremm "
                        "calibrate`, or a profile file); figures in "
                        "model cycles (docs/COSTMODEL.md)" % ", ".join(runner.model_profiles()))


def add_boot_args(p):
    p.add_argument("--smp", type=int, default=2, help="number of CPUs (default 2)")
    p.add_argument("--mem", default="512M", help="memory size (default 512M)")
    p.add_argument("--cpu", default="max", help="QEMU CPU model (default max; qemu64 = xAPIC)")
    p.add_argument("--firmware", choices=("bios", "uefi"), default="bios")
    p.add_argument("--accel", choices=("tcg", "tcg-single", "tcg-multi", "kvm", "auto"), default="tcg",
                   help="tcg (default), kvm, or auto (kvm when /dev/kvm is usable)")
    p.add_argument("--icount", action="store_true",
                   help="deterministic mode: -icount " + runner.ICOUNT)
    add_model_arg(p)
    p.add_argument("--boot", choices=runner.BOOT_MODES, default=None,
                   help="grub: the ISO through the firmware and GRUB; direct: QEMU's "
                        "multiboot loader (-kernel build/baremm.bin), no disk I/O (default: "
                        "direct under --icount/--model with the BIOS, else grub)")
    p.add_argument("--timeout", type=float, default=300,
                   help="host timeout in seconds; QEMU is killed after it (default 300)")
    p.add_argument("--no-build", action="store_true", help="do not run make first")
    p.add_argument("--iso", default=None, help="ISO to boot (default build/baremm-qemu.iso: iso/baremm.iso without the GRUB menu wait)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not echo the serial output")


# ---------------------------------------------------------------- run

def cmd_run(a):
    words = [a.cmdline] if a.cmdline is not None else []
    if a.bench:
        words.append("bench=" + a.bench)
    if a.ab:
        words.append("ab=" + a.ab)
    cmdline = " ".join(w for w in words if w) if words or a.cmdline is not None else None
    name = runner.safe_name(a.name or (a.bench or (a.cmdline or "default").split()[0]
                                       if (a.bench or a.cmdline) else "default"))
    base_cfg = {"cmdline": cmdline, "smp": a.smp, "mem": a.mem, "cpu": a.cpu,
                "firmware": a.firmware, "accel": a.accel, "icount": a.icount,
                "model": a.model, "timeout": a.timeout, "boot": a.boot}
    boots = [(name, base_cfg)]
    if a.variants:
        if "=" not in a.variants:
            err("--variants expects OPTION=v1,v2,...")
            return st.EXIT_USAGE
        opt, vals = a.variants.split("=", 1)
        boots = []
        for v in vals.split(","):
            c = dict(base_cfg)
            c["cmdline"] = ((cmdline or "") + " %s=%s" % (opt, v)).strip()
            boots.append(("%s-%s" % (name, runner.safe_name(v)), c))
    if not a.no_build:
        runner.build(model=bool(a.model))
    if a.out:
        top = os.path.abspath(a.out)
        os.makedirs(top, exist_ok=True)
    else:
        top = runner.new_dir(os.path.join(runner.ROOT, "results"),
                             "%s-%s" % (runner.timestamp(), name))
    records = []
    for bname, c in boots:
        d = top if len(boots) == 1 else runner.new_dir(top, runner.safe_name(bname))
        echo = None if a.quiet else runner.LineEcho(sys.stdout)
        if not a.quiet:
            print("baremm: booting %s (cmdline: %s)" % (bname, c["cmdline"]))
        rec, _ = runner.boot(c, d, echo=echo, iso=a.iso, name=bname)
        records.append((d, rec))
        if not a.quiet:
            print()
        print_record(rec)
        print_backtraces(rec, os.path.join(d, "serial.log"), iso=a.iso)
        print("baremm: wrote %s" % disp_path(os.path.join(d, "run.json")))
    if len(records) > 1:
        sides = [(rec["name"], rec["results"], rec.get("machine")) for _, rec in records]
        print()
        print(compare.format_text(compare.compare_sides(sides)))
    for _, rec in records:
        if rec["tool_exit"]:
            return rec["tool_exit"]
    return 0


# ---------------------------------------------------------------- parse

def print_model_output(path):
    """`parse --model-output`: the figures of the plugin's own out= file (which holds no
    kernel lines), one key=value line each, their statistics computed from the raw runs."""
    try:
        with open(path, errors="replace") as f:
            figures = logparse.parse_model_output(f.read())
    except OSError as e:
        err(str(e))
        return st.EXIT_TOOL_ERROR
    except logparse.ParseError as e:
        err("%s: %s" % (path, e))
        return st.EXIT_LOG_ERROR
    for r in figures:
        fields = [("bench", r["bench"]), ("variant", r["variant"]), ("cpus", r["cpus"])]
        fields += [("case", r["case"])] if "case" in r else []
        fields += [("metric", r["metric"]), ("unit", r["unit"]), ("runs", r["runs"])]
        fields += [(k, "%.2f" % r[k]) for k in ("median", "mean", "stddev", "min", "max")]
        print(" ".join("%s=%s" % kv for kv in fields))
    return 0


def cmd_parse(a):
    if a.model_output:
        return print_model_output(a.log)
    try:
        rec, _ = runner.record_from_log(a.log)
    except OSError as e:
        err(str(e))
        return st.EXIT_TOOL_ERROR
    if a.json:
        json.dump(rec, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_record(rec)
    return rec["tool_exit"]


# ---------------------------------------------------------------- compare

def cmd_compare(a):
    try:
        recs = [load_record(p) for p in a.inputs]
    except (OSError, runner.ToolError) as e:
        err(str(e))
        return st.EXIT_TOOL_ERROR
    for r in recs:
        if r["log"]["truncated"] or r["log"]["errors"]:
            err("warning: %s: %s" % (r["_path"], "; ".join(
                "line %s: %s" % (e["line"], e["message"]) for e in r["log"]["errors"])))
    if len(recs) == 1:
        r = recs[0]
        if not r["results"]:
            err("%s has no BAREMM-RESULT lines" % r["_path"])
            return st.EXIT_LOG_ERROR
        c = compare.compare_variants(r.get("name", ""), r["results"], r.get("machine"))
    else:
        labels = [r.get("name") or r["_path"] for r in recs]
        if len(set(labels)) < len(labels):
            labels = [r["_path"] for r in recs]
        c = compare.compare_sides([(lab, r["results"], r.get("machine"))
                                   for lab, r in zip(labels, recs)])
        for w in compare.run_differences(recs, labels):
            err("warning: %s; the runs are not comparable as they stand" % w)
    sys.stdout.write(compare.FORMATS[a.format](c))
    return 0


# ---------------------------------------------------------------- suite

def cmd_suite(a):
    path = a.config or os.path.join(runner.ROOT, SUITES)
    try:
        entries = cfgmod.select(cfgmod.load(path), groups=[a.name])
    except (OSError, cfgmod.CfgError) as e:
        err(str(e))
        return st.EXIT_TOOL_ERROR
    if not entries:
        err("no entry of %s is named or in group %r" % (path, a.name))
        return st.EXIT_USAGE
    if not a.no_build:
        runner.build(model=bool(a.model))
    top = runner.new_dir(os.path.join(runner.ROOT, "results"),
                         "suite-%s-%s" % (runner.safe_name(a.name), runner.timestamp()))
    records = []
    for e in entries:
        c = dict(e)
        if a.icount:
            c["icount"] = True
        if a.model:
            c["model"] = a.model
        if a.accel:
            c["accel"] = a.accel
        d = runner.new_dir(top, e["name"])
        print("baremm: suite %s: booting [%s] smp=%s cmdline=%s"
              % (a.name, e["name"], c["smp"], c["cmdline"]))
        echo = None if a.quiet else runner.LineEcho(sys.stdout, prefix="  | ")
        rec, _ = runner.boot(c, d, echo=echo, name=e["name"])
        records.append(rec)
        for line in summary_lines(rec):
            print("baremm: %s" % line)
        print_backtraces(rec, os.path.join(d, "serial.log"))
    print()
    for rec in records:
        if not rec["results"]:
            continue
        print("== %s ==" % rec["name"])
        if compare.has_variants(rec["results"]):
            print(compare.format_text(compare.compare_variants(rec["name"], rec["results"],
                                                               rec.get("machine"))))
        else:
            print(compare.results_table(rec["results"]))
    with_results = [r for r in records if r["results"]]
    if len(with_results) > 1:
        keys = [set((x["bench"], x["metric"]) for x in r["results"]) for r in with_results]
        if set.intersection(*keys):
            print("== across boots ==")
            print(compare.format_text(compare.compare_sides(
                [(r["name"], r["results"], r.get("machine")) for r in with_results])))
    print("baremm: results in %s" % disp_path(top))
    for rec in records:
        if rec["tool_exit"]:
            return rec["tool_exit"]
    return 0


# ---------------------------------------------------------------- plot

def cmd_plot(a):
    try:
        recs = [load_record(p) for p in a.inputs]
        info = plotmod.plot(recs, a.x, a.output, bench=a.bench, metric=a.metric,
                            error=a.error, title=a.title, xscale=a.xscale)
    except (OSError, runner.ToolError, plotmod.PlotError) as e:
        err(str(e))
        return st.EXIT_TOOL_ERROR
    print("baremm: wrote %s (%d series, unit %s)" % (a.output, len(info["series"]),
                                                     info["unit"]))
    return 0


# ---------------------------------------------------------------- main

def build_parser():
    ap = argparse.ArgumentParser(
        prog="tools/baremm",
        description="Boot baremm in QEMU, parse its serial output, compare and plot results.",
        epilog="Exit statuses: 0 pass, 11 test_failed, 12 bad_option, 13 panic, 14 watchdog, "
               "15 bench_error, 16 host_timeout, 17 no_status, 18 log error (truncated or "
               "malformed), 20 tool error, 2 usage. `test` exits 0 or 1. See docs/OUTPUT.md.")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("run", help="build, boot once (or once per --variants value), save "
                       "serial.log + run.json, print the results")
    p.add_argument("--cmdline", default=None,
                   help="kernel command line, passed through fw_cfg (default: GRUB's line)")
    p.add_argument("--bench", default=None, help="append bench=GLOB to the command line")
    p.add_argument("--ab", default=None, metavar="OPT:V1,V2",
                   help="append ab=OPT:V1,V2 (in-boot interleaved variants)")
    p.add_argument("--variants", default=None, metavar="OPT=V1,V2",
                   help="boot once per value (appending OPT=V) and compare the boots")
    add_boot_args(p)
    p.add_argument("--out", default=None, help="directory for serial.log and run.json "
                   "(default results/<timestamp>-<name>)")
    p.add_argument("--name", default=None, help="name of the run (default from the cmdline)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("parse", help="parse a saved serial log")
    p.add_argument("log")
    p.add_argument("--json", action="store_true", help="print the run.json-shaped record")
    p.add_argument("--model-output", action="store_true", help="LOG is the cost model's own "
                   "out= file: print its figures, one key=value line each")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("compare", help="LKP-style comparison of result sets")
    p.add_argument("inputs", nargs="+", metavar="RESULT",
                   help="run.json, a result directory, or a serial log; one input compares "
                   "its in-boot variants")
    p.add_argument("--format", choices=sorted(compare.FORMATS), default="text")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("test", help="host tests + tool tests + QEMU matrix (make test)")
    p.add_argument("--quick", action="store_true", help="only matrix entries in group quick")
    p.add_argument("-j", "--jobs", type=int, default=2, help="parallel QEMUs (default 2)")
    p.add_argument("--group", action="append", help="only matrix entries of this group")
    p.add_argument("--only", action="append", help="only this matrix entry (repeatable)")
    p.add_argument("--matrix", default=None, help="matrix file (default tests/qemu/matrix.cfg)")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--no-host", action="store_true", help="skip make host-test")
    p.add_argument("--host-timeout", type=int, default=600,
                   help="seconds before make host-test is killed (default 600)")
    p.add_argument("--no-unittest", action="store_true", help="skip the tools' unit tests")
    p.add_argument("--junit", default=None, metavar="PATH", help="also write the JUnit XML "
                   "here (always written as junit.xml in the log directory)")
    p.add_argument("--ktap", default=None, metavar="PATH", help="also write the combined KTAP "
                   "document here (always results.ktap in the log directory)")
    p.set_defaults(func=lambda a: testrun.main(a))

    p = sub.add_parser("suite", help="boot the entries of tests/qemu/suites.cfg in group NAME")
    p.add_argument("name")
    p.add_argument("--config", default=None, help="suites file (default tests/qemu/suites.cfg)")
    p.add_argument("--icount", action="store_true", help="deterministic mode for every boot")
    add_model_arg(p)
    p.add_argument("--accel", choices=("tcg", "tcg-single", "tcg-multi", "kvm", "auto"), default=None)
    p.add_argument("--no-build", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_suite)

    p = sub.add_parser("plot", help="PNG plot of a sweep (needs gnuplot)")
    p.add_argument("inputs", nargs="+", metavar="RESULT")
    p.add_argument("--x", required=True, help="x axis: cpus, a variant option, an extra "
                   "result key, or a machine/config key")
    p.add_argument("--bench", default=None, help="only benches matching this glob")
    p.add_argument("--metric", default=None)
    p.add_argument("--error", choices=("stddev", "minmax"), default="stddev")
    p.add_argument("--title", default=None)
    p.add_argument("--xscale", choices=("auto", "linear", "log"), default="auto",
                   help="x axis scale (auto: log when numeric x values span a factor of 64; "
                   "a zero x is drawn at a tick labelled 0 left of the smallest)")
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(func=cmd_plot)

    experiment.add_parser(sub)
    perfcheck.add_parser(sub)
    docs.add_parser(sub)
    modelcheck.add_parser(sub)
    sweep.add_parser(sub)
    panel.add_parser(sub)
    panelcheck.add_parser(sub)
    calibrate.add_parser(sub)
    speed.add_parser(sub)
    return ap


def main(argv=None):
    a = build_parser().parse_args(argv)
    # checked before any build or boot, so that it has its own exit status
    prof = getattr(a, "profile", None)
    wanted = [getattr(a, "model", None)] + (prof if isinstance(prof, list) else [prof])
    if runner.HOST_PROFILE in wanted:
        try:
            runner.resolve_profile(runner.HOST_PROFILE)
        except runner.NotCalibrated as e:
            err(str(e))
            return st.EXIT_NOT_CALIBRATED
    try:
        return a.func(a)
    except KeyboardInterrupt:
        runner.kill_all()
        err("interrupted")
        return st.EXIT_INTERRUPTED
    except TOOL_ERRORS as e:
        # the one place an error becomes an exit status (docs/OUTPUT.md, exit codes)
        err("%s: %s" % (a.cmd, e))
        return st.EXIT_TOOL_ERROR
    except BrokenPipeError:
        return 0
