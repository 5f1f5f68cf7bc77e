"""Formats CI systems read, written by `tools/baremm test` (docs/OUTPUT.md section 6):

- one KTAP version 1 document for the whole run: a suite per step (host tests, the tools'
  unit tests, the clang build, each matrix boot, perf-check). A step's suite holds the
  KTAP tests the step printed (a boot's suites, the host test binaries' suites) and one
  leaf `check` that passes when the step as a whole passed (expected status, expected
  output, no log or KTAP errors), so a boot without tests still counts as one test and
  every suite has at least one;
- JUnit XML (the Jenkins / GitLab dialect): a <testsuite> per step, a <testcase> per leaf.

A step is a dict: name, ok (bool), problems (list of str), ktap (a ktap dict as in
run.json, or None), time (seconds, optional), log (path, optional).
"""
import xml.etree.ElementTree as ET

STATUS_OK = {"pass": True, "skip": True, "todo": True, "fail": False, "missing": False}


def _clean(name):
    """KTAP test names stop at '#' and end at the line: keep them to one line, no '#'."""
    return " ".join(str(name or "?").replace("#", "_").split()) or "?"


def _tests_of(ktap):
    """The top-level tests of every document of a ktap dict, in order."""
    out = []
    for d in (ktap or {}).get("documents", []):
        out.extend(d.get("tests", []))
    return out


def _is_suite(t):
    """A node with tests under it. A suite whose output was cut before its first test has
    none: it is written and counted as one test with the suite's status, as the KUnit
    parser counts it (a `1..0` suite would drop its failure from the totals)."""
    return bool(t.get("tests"))


def _emit(tests, indent, lines, counts):
    pad = " " * indent
    for num, t in enumerate(tests, 1):
        name = _clean(t.get("name"))
        if "tests" in t and not t["tests"]:
            lines.append(pad + "# suite planned %s tests, reported none (output cut)"
                         % (t.get("plan") if t.get("plan") is not None else "?"))
        if _is_suite(t):
            lines.append(pad + "    KTAP version 1")
            lines.append(pad + "    # Subtest: " + name)
            lines.append(pad + "    1..%d" % len(t["tests"]))
            _emit(t["tests"], indent + 4, lines, counts)
        else:
            counts[{"pass": "pass", "todo": "pass", "skip": "skip"}.get(t["status"], "fail")] += 1
        for diag in t.get("diagnostics", []):
            lines.append(pad + "# " + " ".join(str(diag).split()))
        if t["status"] == "missing":
            lines.append(pad + "# no result line (output cut)")
        res = "ok" if STATUS_OK.get(t["status"], False) else "not ok"
        suffix = ""
        if t["status"] == "skip":
            suffix = " # SKIP " + " ".join(str(t.get("reason") or "").split())
        elif t["status"] == "todo":
            suffix = " # TODO " + " ".join(str(t.get("reason") or "").split())
        lines.append("%s%s %d %s%s" % (pad, res, num, name, suffix.rstrip()))


def step_tests(step):
    """The tests of a step as ktap-dict nodes: its own tests, then the `check` leaf."""
    tests = list(_tests_of(step.get("ktap")))
    check = {"name": "check", "status": "pass" if step["ok"] else "fail",
             "diagnostics": list(step.get("problems", []))}
    if step.get("log") and not step["ok"]:
        check["diagnostics"].append("log: %s" % step["log"])
    if step.get("skipped"):
        check = {"name": "check", "status": "skip", "reason": step["skipped"]}
    tests.append(check)
    return tests


def combined_ktap(steps):
    """One KTAP version 1 document (str) with a suite per step and one # Totals line."""
    counts = {"pass": 0, "fail": 0, "skip": 0}
    lines = ["KTAP version 1", "1..%d" % len(steps)]
    suites = [{"name": s["name"], "tests": step_tests(s),
               "status": "skip" if s.get("skipped") else "pass" if s["ok"] else "fail",
               "reason": s.get("skipped")} for s in steps]
    _emit(suites, 0, lines, counts)
    lines.append("# Totals: pass:%d fail:%d skip:%d total:%d"
                 % (counts["pass"], counts["fail"], counts["skip"], sum(counts.values())))
    return "\n".join(lines) + "\n"


def _leaves(tests, prefix):
    for t in tests:
        name = _clean(t.get("name"))
        if _is_suite(t):
            yield from _leaves(t["tests"], prefix + [name])
        else:
            yield prefix, name, t


def junit_xml(steps, name="baremm test"):
    """JUnit XML text: <testsuites> with a <testsuite> per step, a <testcase> per leaf."""
    root = ET.Element("testsuites", name=name)
    tot = {"tests": 0, "failures": 0, "skipped": 0}
    for s in steps:
        cases = list(_leaves(step_tests(s), [s["name"]]))
        ts = ET.SubElement(root, "testsuite", name=s["name"])
        n = {"tests": 0, "failures": 0, "skipped": 0}
        for path, leaf, t in cases:
            tc = ET.SubElement(ts, "testcase", classname=".".join(path), name=leaf)
            n["tests"] += 1
            diags = "\n".join(str(d) for d in t.get("diagnostics", []))
            if t["status"] == "skip":
                ET.SubElement(tc, "skipped", message=str(t.get("reason") or ""))
                n["skipped"] += 1
            elif not STATUS_OK.get(t["status"], False):
                f = ET.SubElement(tc, "failure", message=(diags.split("\n")[0] if diags else
                                                          "not ok"))
                f.text = diags or t["status"]
                n["failures"] += 1
            elif diags:
                ET.SubElement(tc, "system-out").text = diags
        for k, v in n.items():
            ts.set(k, str(v))
            tot[k] += v
        ts.set("errors", "0")
        if s.get("time") is not None:
            ts.set("time", "%.3f" % s["time"])
        if s.get("log"):
            ET.SubElement(ts, "system-out").text = "log: %s" % s["log"]
    for k, v in tot.items():
        root.set(k, str(v))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
