"""`tools/baremm test`: host unit tests, tool unit tests and the QEMU matrix."""
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
import time

from . import cfg as cfgmod, ciformats, ktap, logparse, runner, screen, status as st, unittests

MATRIX = os.path.join("tests", "qemu", "matrix.cfg")


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.problems = []

    def add(self, p=0, f=0, s=0):
        self.passed += p
        self.failed += f
        self.skipped += s


def host_tests(outdir, out=sys.stdout, timeout=600, steps=None):
    """make -s host-test; parse the KTAP each host test binary prints."""
    log = os.path.join(outdir, "host-test.log")
    p = subprocess.Popen(["make", "-s", "host-test"], cwd=runner.ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, signal.SIGKILL)
        stdout, stderr = p.communicate()
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        raise
    with open(log, "w") as f:
        f.write(stdout)
        if stderr:
            f.write("\n--- stderr ---\n" + stderr)
    k = ktap.parse_text(stdout)
    c = k.counts()
    problems = ["line %s: %s" % e for e in k.all_errors()]
    extra_fail = 0
    if timed_out:
        extra_fail = 1
        problems.insert(0, "make host-test killed after %d s (host timeout)" % timeout)
    elif p.returncode != 0 and c["fail"] == 0:
        extra_fail = 1
        problems.append("make host-test exited %d without a failing test (build error?): "
                        "see %s" % (p.returncode, log))
    if problems and not extra_fail:
        extra_fail = 1
    ok = c["fail"] == 0 and extra_fail == 0
    if len(k.documents) != 1:
        extra_fail = 1
        ok = False
        problems.append("make host-test printed %d KTAP documents; expected one" % len(k.documents))
    suites = sum(len(d.root.children) for d in k.documents)
    out.write("%s host-tests (%d suites: %d passed, %d failed, %d skipped)\n"
              % ("PASS" if ok else "FAIL", suites, c["pass"], c["fail"], c["skip"]))
    for name in k.failures():
        out.write("    failed: %s\n" % name)
    for prob in problems:
        out.write("    %s\n" % prob)
    if not ok:
        out.write("    log: %s\n" % os.path.relpath(log, runner.ROOT))
    if steps is not None:
        steps.append({"name": "host-tests", "ok": ok, "problems": problems, "ktap": k.to_dict(),
                      "log": os.path.relpath(log, runner.ROOT)})
    return c["pass"], c["fail"] + extra_fail, c["skip"]


def tool_tests(outdir, out=sys.stdout, steps=None):
    """tests/tools, run in this process and counted from unittest's result."""
    log = os.path.join(outdir, "tool-unittests.log")
    with open(log, "w") as f:
        p, f_, s = unittests.run(os.path.join(runner.ROOT, "tests", "tools"), f,
                                 top_level_dir=runner.ROOT)
    out.write("%s tool-unittests (%d passed, %d failed, %d skipped)\n"
              % ("PASS" if f_ == 0 else "FAIL", p, f_, s))
    if f_:
        out.write("    see %s\n" % log)
    _step(steps, "tool-unittests", f_ == 0, ["unittest: %d passed, %d failed, %d skipped"
                                             % (p, f_, s)], log)
    return p, f_, s


def _step(steps, name, ok, problems, log=None, skipped=None):
    if steps is not None:
        steps.append({"name": name, "ok": ok, "problems": problems, "ktap": None,
                      "log": os.path.relpath(log, runner.ROOT) if log else None,
                      "skipped": skipped})


def make_check(name, script, outdir, out=sys.stdout, steps=None):
    """One build-system check of tests/make/ (a shell script printing PASS/FAIL name ...)."""
    log = os.path.join(outdir, name + ".log")
    r = subprocess.run([os.path.join(runner.ROOT, "tests", "make", script)], cwd=runner.ROOT,
                       capture_output=True, text=True)
    with open(log, "w") as f:
        f.write(r.stdout + r.stderr)
    ok = r.returncode == 0
    lines = (r.stdout + r.stderr).splitlines()
    summary = [line for line in lines if line.startswith(("PASS ", "FAIL "))]
    out.write((summary[-1] if summary else "%s %s (exit %d)" % ("PASS" if ok else "FAIL",
                                                                name, r.returncode)) + "\n")
    if not ok:
        out.write("".join("    " + line + "\n" for line in lines[-20:]))
    _step(steps, name, ok, [] if ok else lines[-20:], log)
    return (1, 0, 0) if ok else (0, 1, 0)


def clang_build(outdir, out=sys.stdout, steps=None):
    """The kernel must also build with clang (-Wall -Wextra -Werror), and `make CC=clang`
    after a gcc build must rebuild every object with clang (tests/make/cc-switch.sh)."""
    import shutil
    if not shutil.which("clang"):
        out.write("SKIP clang-build (clang not installed)\n")
        _step(steps, "clang-build", True, [], skipped="clang not installed")
        return 0, 0, 1
    return make_check("clang-build", "cc-switch.sh", outdir, out, steps)


def reproducible_iso(outdir, out=sys.stdout, steps=None):
    """A second build in another directory gives byte-identical ISOs
    (tests/make/reproducible-iso.sh)."""
    return make_check("reproducible-iso", "reproducible-iso.sh", outdir, out, steps)


def perf_check(outdir, out=sys.stdout, steps=None):
    """The deterministic-mode regression check (tools/baremm perf-check): each figure of
    tests/perf/perf.cfg within its tolerance of tests/perf/baseline.json counts as one."""
    log = os.path.join(outdir, "perf-check.log")
    r = subprocess.run([sys.executable, os.path.join(runner.ROOT, "tools", "baremm"), "perf-check",
                        "--no-build"], cwd=runner.ROOT, capture_output=True, text=True)
    with open(log, "w") as f:
        f.write(r.stdout + r.stderr)
    m = re.search(r"^(\d+) passed, (\d+) failed", r.stdout, re.M)
    if not m:
        out.write("FAIL perf-check (no summary line; see %s)\n" % log)
        _step(steps, "perf-check", False, ["no summary line"], log)
        return 0, 1, 0
    p, f = int(m.group(1)), int(m.group(2))
    if r.returncode != 0 and f == 0:
        f = 1
    out.write("%s perf-check (deterministic figures vs tests/perf/baseline.json: %d within "
              "tolerance, %d slower or missing)\n" % ("PASS" if f == 0 else "FAIL", p, f))
    if f:
        out.write("".join("    " + line + "\n" for line in r.stdout.splitlines()
                          if "FAIL" in line or "SLOWER" in line.upper())[:4000])
        out.write("    see %s (refresh with `make perf-baseline` when a slowdown is intended)\n" % log)
    _step(steps, "perf-check", f == 0, ["%d figures within tolerance, %d slower or missing"
                                        % (p, f)] + [line.strip() for line in r.stdout.splitlines()
                                                     if "FAIL" in line][:20], log)
    return p, f, 0


def _summary_tool(name, argv, outdir):
    """Run `tools/baremm ARGV`; its log and (passed, failed, skipped, stdout), or None for
    the counts when it printed no `N passed, N failed[, N skipped]` line."""
    log = os.path.join(outdir, name + ".log")
    r = subprocess.run([sys.executable, os.path.join(runner.ROOT, "tools", "baremm")] + argv,
                       cwd=runner.ROOT, capture_output=True, text=True)
    with open(log, "w") as f:
        f.write(r.stdout + r.stderr)
    m = re.search(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?", r.stdout, re.M)
    if not m:
        return log, None, r
    p, f, sk = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if r.returncode != 0 and f == 0:
        f = 1
    return log, (p, f, sk), r


# model-check runs: every profile under the in-order core; the out-of-order core
# (core=ooo, its own known answers) under one profile, to keep make test short
MODEL_CHECKS = (("model-check", ["model-check", "--no-build"]),
                ("model-check-ooo", ["model-check", "--no-build", "--core", "ooo",
                                     "--profile", "skylake-sp"]))


def model_check(outdir, out=sys.stdout, steps=None):
    """The cost model's known answers (tools/baremm model-check, docs/COSTMODEL.md): per
    profile and core, the one-CPU known answers count as one check and each two-CPU figure
    (line ping-pong, IPI round trip) as one."""
    tp = tf = 0
    for name, argv in MODEL_CHECKS:
        log, counts, r = _summary_tool(name, argv, outdir)
        if counts is None:
            out.write("FAIL %s (no summary line; see %s)\n" % (name, log))
            _step(steps, name, False, ["no summary line"] + r.stderr.splitlines()[-5:], log)
            tf += 1
            continue
        p, f, _ = counts
        fails = [line.strip() for line in r.stdout.splitlines() if ": FAIL" in line]
        out.write("%s %s (cost-model known answers: %d checks pass, %d fail)\n"
                  % ("PASS" if f == 0 else "FAIL", name, p, f))
        out.write("".join("    " + line + "\n" for line in fails[:20]))
        _step(steps, name, f == 0, ["%d checks pass, %d fail" % (p, f)] + fails[:20], log)
        tp, tf = tp + p, tf + f
    return tp, tf, 0


def panel_check(outdir, out=sys.stdout, steps=None):
    """The short native panel against the recorded one (tools/baremm panel-check,
    docs/COSTMODEL.md): its KTAP counts, a known failure (TODO) counted as skipped."""
    log, counts, r = _summary_tool("panel-check", ["panel-check"], outdir)
    if counts is None:
        out.write("FAIL panel-check (no summary line; see %s)\n" % log)
        _step(steps, "panel-check", False, ["no summary line"] + r.stderr.splitlines()[-5:], log)
        return 0, 1, 0
    p, f, sk = counts
    fails = [line.strip() for line in r.stdout.splitlines()
             if line.startswith("not ok") and "# TODO" not in line]
    out.write("%s panel-check (native panel: %d pass, %d fail, %d skipped or known failures)\n"
              % ("PASS" if f == 0 else "FAIL", p, f, sk))
    out.write("".join("    " + line + "\n" for line in fails[:20]))
    _step(steps, "panel-check", f == 0, ["%d pass, %d fail, %d skip" % (p, f, sk)] + fails[:20], log)
    return p, f, sk


def failure_details(k):
    """[(suite.test, diagnostics)] of the failed leaf tests in a ktap dict."""
    out = []

    def walk(tests, path):
        for t in tests:
            name = path + [t.get("name") or "?"]
            if "tests" in t:
                walk(t["tests"], name)
            elif t["status"] == "fail":
                out.append((".".join(name), t.get("diagnostics", [])))
    for d in k.get("documents", []):
        walk(d["tests"], [])
    known = {n for n, _ in out}
    out += [(n, []) for n in k.get("failures", []) if n not in known]
    return out


def check_entry(entry, record, parsed):
    """Problems (list of strings) of one matrix boot; empty when it passed."""
    problems = []
    if record["status"] != entry["expect"]:
        problems.append("expected status %s, got %s (qemu exit %s)"
                        % (entry["expect"], record["status"], record["qemu"]["exit_code"]))
    if entry.get("expect_output"):
        with open(parsed["path"], "rb") as f:
            text = logparse.join_continued(f.read().decode("utf-8", "replace"))
        if not re.search(entry["expect_output"], text, re.M):
            problems.append("output does not match /%s/" % entry["expect_output"])
    k = record["ktap"]
    if entry["ktap"] == "required":
        if not k["present"]:
            problems.append("no KTAP output")
        for e in k["errors"]:
            problems.append("KTAP line %s: %s" % (e["line"], e["message"]))
    elif k["present"]:
        for e in k["errors"]:
            if record["status"] in ("pass", "test_failed"):
                problems.append("KTAP line %s: %s" % (e["line"], e["message"]))
    if record["status"] in ("pass", "test_failed", "bench_error", "bad_option", "panic",
                            "watchdog"):
        for e in record["log"]["errors"]:
            problems.append("log line %s: %s" % (e["line"], e["message"]))
    if entry.get("screendump"):
        problems += check_screen(entry, record, os.path.dirname(parsed["path"]))
    return problems


def check_screen(entry, record, d):
    """The framebuffer mirror (screendump=yes): the screen at the guest's exit shows the
    serial log's last rows, read back with the kernel's font (tools/baremm_lib/screen.py);
    kernel lines matching screen_fit= fit the screen's width."""
    dump = record["qemu"].get("screendump") or {}
    if dump.get("error") or not dump.get("path"):
        return [dump.get("error") or "no screendump taken"]
    try:
        with open(os.path.join(d, dump["path"]), "rb") as f:
            scr = screen.read_screen(f.read(), screen.load_font())
        with open(os.path.join(d, "screen.txt"), "w") as f:     # what was read, for people
            f.write("".join(r.rstrip(" ") + "\n" for r in scr.rows))
        with open(os.path.join(d, "serial.log"), "rb") as f:
            serial = f.read()
        problems = ["screen: " + p for p in screen.compare(scr, serial)]
        if entry.get("screen_fit"):
            for line in screen.long_lines(serial, scr.cols, entry["screen_fit"])[:5]:
                problems.append("screen: a line of %d characters wraps on the %d-column "
                                "screen: %r" % (len(line), scr.cols, line[:80]))
    except (OSError, screen.ScreenError) as e:
        problems = ["screen: %s" % e]
    return problems


def run_entry(entry, outdir, iso, lock, out, verbose=False):
    d = runner.new_dir(outdir, entry["name"])
    t0 = time.monotonic()
    if entry.get("kernel", "default") != "default":
        iso = os.path.join(runner.ROOT, runner.KERNEL_ISOS[entry["kernel"]])
    try:
        record, parsed = runner.boot(entry, d, echo=None, iso=iso, name=entry["name"])
    except runner.ToolError as e:
        with lock:
            out.write("FAIL %s (%s)\n" % (entry["name"], e))
            out.flush()
        return {"name": entry["name"], "ok": False, "counts": (0, 0, 0), "problems": [str(e)],
                "ktap": None, "time": time.monotonic() - t0}
    problems = check_entry(entry, record, parsed)
    c = record["ktap"]["counted"]
    desc = [record["status"]]
    if record["ktap"]["present"]:
        desc.append("KTAP %d passed, %d failed, %d skipped" % (c["pass"], c["fail"], c["skip"]))
    desc.append("%.1f s" % (time.monotonic() - t0))
    with lock:
        out.write("%s %s (%s)\n" % ("PASS" if not problems else "FAIL", entry["name"],
                                    "; ".join(desc)))
        for name, diags in failure_details(record["ktap"]):
            out.write("    failed: %s\n" % name)
            for diag in diags[:5]:
                out.write("        # %s\n" % diag)
        for p in problems:
            out.write("    %s\n" % p)
        if problems:
            out.write("    log: %s\n" % os.path.relpath(os.path.join(d, "serial.log"),
                                                        runner.ROOT))
        out.flush()
    counts = (c["pass"], c["fail"], c["skip"])
    ktap = record["ktap"] if record["ktap"]["present"] else None
    if entry["expect"] == "test_failed" and not problems:
        # the entry exists to show these tests fail: expected failures, counted as passes,
        # and their not-ok lines stay out of the combined KTAP document (its check leaf
        # says the boot failed as expected)
        counts = (c["pass"] + c["fail"], 0, c["skip"])
        ktap = None
    return {"name": entry["name"], "ok": not problems, "counts": counts, "problems": problems,
            "ktap": ktap, "time": time.monotonic() - t0,
            "log": os.path.relpath(os.path.join(d, "serial.log"), runner.ROOT)}


def run_matrix(entries, outdir, jobs, out=sys.stdout, build_error=None, iso=None):
    lock = threading.Lock()
    results = []
    if build_error:
        for e in entries:
            out.write("FAIL %s (not booted: build failed)\n" % e["name"])
            results.append({"name": e["name"], "ok": False, "counts": (0, 0, 0),
                            "problems": ["build failed"], "ktap": None})
        return results
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = [ex.submit(run_entry, e, outdir, iso, lock, out) for e in entries]
        try:
            for f in futs:
                results.append(f.result())
        except KeyboardInterrupt:
            for f in futs:
                f.cancel()
            runner.kill_all()
            raise
    return results


def write_reports(steps, outdir, args, out=sys.stdout):
    """results.ktap (one KTAP document, a suite per step) and junit.xml in the log
    directory, and copies where --ktap / --junit ask."""
    ktap_text = ciformats.combined_ktap(steps)
    junit_text = ciformats.junit_xml(steps)
    targets = [(os.path.join(outdir, "results.ktap"), ktap_text),
               (os.path.join(outdir, "junit.xml"), junit_text)]
    if getattr(args, "ktap", None):
        targets.append((args.ktap, ktap_text))
    if getattr(args, "junit", None):
        targets.append((args.junit, junit_text))
    for path, text in targets:
        with open(path, "w") as f:
            f.write(text)
    out.write("baremm test: KTAP %s, JUnit %s\n" % tuple(
        os.path.relpath(p, runner.ROOT) for p, _ in targets[:2]))


def main(args, out=sys.stdout):
    matrix_path = args.matrix or os.path.join(runner.ROOT, MATRIX)
    try:
        entries = cfgmod.load(matrix_path)
    except (OSError, cfgmod.CfgError) as e:
        sys.stderr.write("baremm test: %s\n" % e)
        return st.EXIT_TOOL_ERROR
    groups = list(args.group or [])
    if args.quick:
        groups.append("quick")
    bad = cfgmod.unknown_selection(entries, groups=groups, names=args.only)
    if bad:
        for msg in bad:
            sys.stderr.write("baremm test: %s: %s\n" % (matrix_path, msg))
        return st.EXIT_USAGE
    entries = cfgmod.select(entries, groups=groups, names=args.only)
    outdir = runner.new_dir(os.path.join(runner.ROOT, "results"), "test-" + runner.timestamp())
    tally = Tally()
    steps = []
    out.write("baremm test: logs in %s\n" % os.path.relpath(outdir, runner.ROOT))
    out.flush()
    build_error = None
    if not args.no_build and entries:
        try:
            runner.build(quiet=True, model=True)
            if any(e["kernel"] == "contracts" for e in entries):
                runner.build_contracts()
        except runner.ToolError as e:
            build_error = str(e)
            out.write("FAIL build\n%s\n" % "\n".join("    " + line for line in
                                                    build_error.splitlines()[:40]))
            tally.add(f=1)
            _step(steps, "build", False, build_error.splitlines()[:40])
    if not args.no_host:
        tally.add(*host_tests(outdir, out, timeout=args.host_timeout, steps=steps))
        out.flush()
    if not args.no_unittest:
        tally.add(*tool_tests(outdir, out, steps=steps))
        out.flush()
    if not args.no_build:
        tally.add(*clang_build(outdir, out, steps=steps))
        out.flush()
        tally.add(*reproducible_iso(outdir, out, steps=steps))
        out.flush()
    results = run_matrix(entries, outdir, args.jobs, out, build_error=build_error)
    perf_steps = []
    if not args.no_build and not build_error and not (args.quick or args.only or args.group):
        tally.add(*perf_check(outdir, out, steps=perf_steps))
        out.flush()
        tally.add(*model_check(outdir, out, steps=perf_steps))
        out.flush()
        tally.add(*panel_check(outdir, out, steps=perf_steps))
        out.flush()
    for r in results:
        p, f, s = r["counts"]
        tally.add(p, f, s)
        tally.add(*(1, 0, 0) if r["ok"] else (0, 1, 0))
        steps.append(r)
    steps += perf_steps
    write_reports(steps, outdir, args, out)
    out.write("%d passed, %d failed, %d skipped\n" % (tally.passed, tally.failed, tally.skipped))
    out.flush()
    return 0 if tally.failed == 0 else 1
