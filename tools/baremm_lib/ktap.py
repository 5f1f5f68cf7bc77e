"""KTAP version 1 parser (Documentation/dev-tools/ktap.rst of the Linux kernel).

Handles nested suites (4-space indentation), `# SKIP` / `# TODO` directives, '#'
diagnostics, the `# Totals:` line kselftest/KUnit print, and several top-level KTAP
documents in one stream (host test binaries each print their own). Lines that are not
KTAP are ignored, as the spec allows. Problems are collected as errors with line numbers,
never silently turned into passes.
"""
import re

VERSION_RE = re.compile(r"^(?:KTAP|TAP) version (\d+)\s*$")
PLAN_RE = re.compile(r"^1\.\.(\d+)\s*(?:#.*)?$")
RESULT_RE = re.compile(r"^(ok|not ok)\s+(\d+)(?:\s+(?:-\s+)?([^#]*?))?\s*(?:#\s*(.*))?$")
SUBTEST_RE = re.compile(r"^#\s*Subtest:\s*(.*?)\s*$")
TOTALS_RE = re.compile(
    r"^#\s*Totals:\s*pass:(\d+)\s+fail:(\d+)\s+(?:xfail:(\d+)\s+)?(?:xpass:(\d+)\s+)?"
    r"skip:(\d+)(?:\s+error:(\d+))?(?:\s+total:(\d+))?\s*$")
DIRECTIVE_RE = re.compile(r"^(SKIP|TODO|XFAIL)\b\s*(.*)$", re.IGNORECASE)


class Node:
    """A test (leaf) or a suite (has its own plan / children)."""

    def __init__(self, name=None, level=0, line=None, is_suite=False):
        self.name = name
        self.level = level
        self.line = line            # line of the result line (or of the header)
        self.is_suite = is_suite
        self.plan = None
        self.number = None
        self.ok = None              # True / False / None (no result line yet)
        self.directive = None       # "SKIP" / "TODO" / None
        self.reason = None
        self.children = []
        self.diagnostics = []

    @property
    def status(self):
        if self.ok is None:
            return "missing"
        if self.directive == "SKIP":
            return "skip"
        if self.directive in ("TODO", "XFAIL"):
            return "todo"
        return "pass" if self.ok else "fail"

    def to_dict(self):
        d = {"name": self.name, "number": self.number, "status": self.status, "line": self.line}
        if self.reason:
            d["reason"] = self.reason
        if self.is_suite:
            d["plan"] = self.plan
            d["tests"] = [c.to_dict() for c in self.children]
        if self.diagnostics:
            d["diagnostics"] = self.diagnostics
        return d


class Document:
    """One top-level KTAP document."""

    def __init__(self, line):
        self.root = Node(name=None, level=0, line=line, is_suite=True)
        self.version_line = line
        self.totals = None
        self.totals_line = None
        self.errors = []            # (line, message)
        self.warnings = []

    def leaves(self):
        out = []

        def walk(node, path):
            for c in node.children:
                p = path + [c.name or "?"]
                if c.is_suite:
                    walk(c, p)
                else:
                    out.append((".".join(p), c))
        walk(self.root, [])
        return out

    def counts(self):
        c = {"pass": 0, "fail": 0, "skip": 0, "todo": 0, "total": 0}
        for _, leaf in self.leaves():
            st = leaf.status
            c[st if st in c else "fail"] += 1
            c["total"] += 1
        return c


class KtapResult:
    def __init__(self):
        self.documents = []
        self.errors = []   # (line, message)

    @property
    def present(self):
        return bool(self.documents)

    def counts(self):
        c = {"pass": 0, "fail": 0, "skip": 0, "todo": 0, "total": 0}
        for d in self.documents:
            for k, v in d.counts().items():
                c[k] += v
        # A suite reported "not ok" with no failing leaf (e.g. a crashed suite) still fails.
        c["fail"] += len(self.failed_suites_without_failed_leaf())
        return c

    def failed_suites_without_failed_leaf(self):
        out = []

        def has_failed_leaf(node):
            return any((has_failed_leaf(c) if c.is_suite else c.status in ("fail", "missing"))
                       for c in node.children)

        def walk(node):
            for c in node.children:
                if c.is_suite:
                    if c.status == "fail" and not has_failed_leaf(c):
                        out.append(c)
                    walk(c)
        for d in self.documents:
            walk(d.root)
        return out

    def failures(self):
        """Names of failed leaf tests (suite.test) and failed suites."""
        names = []
        for d in self.documents:
            for name, leaf in d.leaves():
                if leaf.status == "fail":
                    names.append(name)
        names += [s.name for s in self.failed_suites_without_failed_leaf()]
        return names

    def all_errors(self):
        errs = list(self.errors)
        for d in self.documents:
            errs += d.errors
        return sorted(errs, key=lambda e: (e[0] or 0))

    def to_dict(self):
        docs = []
        for d in self.documents:
            docs.append({
                "line": d.version_line,
                "plan": d.root.plan,
                "totals": d.totals,
                "counted": d.counts(),
                "tests": [c.to_dict() for c in d.root.children],
            })
        plan = None
        totals = None
        if self.documents:
            plan = sum(d.root.plan or 0 for d in self.documents) if all(
                d.root.plan is not None for d in self.documents) else None
            if all(d.totals for d in self.documents):
                totals = {}
                for d in self.documents:
                    for k, v in d.totals.items():
                        totals[k] = totals.get(k, 0) + v
        return {
            "present": self.present,
            "plan": plan,
            "totals": totals,
            "counted": self.counts(),
            "failures": self.failures(),
            "errors": [{"line": ln, "message": m} for ln, m in self.all_errors()],
            "documents": docs,
        }


def parse(lines, require_totals=True):
    """Parse KTAP from an iterable of (line_number, text) pairs; text without newline.

    Returns a KtapResult. Error conditions: missing plan, missing totals (when
    require_totals), totals that disagree with the counted leaves, plan/result count
    mismatch, suites left open (truncated output), results at an impossible indentation.
    """
    res = KtapResult()
    doc = None
    stack = []          # stack[level] = open suite Node at that indentation level
    pending_name = {}   # level -> name from "# Subtest:" seen before the suite's plan
    pending_diag = {}   # level -> '#' diagnostics not yet attached to a result
    last_line = 0

    def finish(doc, stack, end_line):
        if doc is None:
            return
        for lvl in range(len(stack) - 1, 0, -1):
            s = stack[lvl]
            doc.errors.append((s.line, "suite %r (line %s) has no result line: output truncated"
                               % (s.name, s.line)))
            s.ok = False
            stack[lvl - 1].children.append(s)
        root = doc.root
        if root.plan is None:
            doc.errors.append((doc.version_line, "KTAP document has no plan (1..N)"))
        _check_plans(doc, root)
        if doc.totals is None:
            if require_totals:
                doc.errors.append((end_line, "KTAP document has no '# Totals:' line"))
        else:
            c = doc.counts()
            t = doc.totals
            keys = ("pass", "fail", "skip") if not c["todo"] else ("skip",)
            for k in keys:
                if t.get(k) is not None and t[k] != c[k]:
                    doc.errors.append((doc.totals_line,
                                       "totals say %s:%d but %d leaf tests were counted as %s"
                                       % (k, t[k], c[k], k)))
            if t.get("total") is not None and t["total"] != c["total"]:
                doc.errors.append((doc.totals_line, "totals say total:%d but %d leaf tests were "
                                   "reported" % (t["total"], c["total"])))

    for ln, raw in lines:
        last_line = ln
        text = raw.rstrip()
        stripped = text.lstrip(" ")
        indent = len(text) - len(stripped)
        if not stripped:
            continue
        level = indent // 4
        m = VERSION_RE.match(stripped)
        if m:
            if indent % 4:
                res.errors.append((ln, "KTAP version line indented by %d spaces (not a multiple "
                                   "of 4)" % indent))
                continue
            if m.group(1) != "1" and stripped.startswith("KTAP"):
                res.errors.append((ln, "unsupported KTAP version %s" % m.group(1)))
            if level == 0:
                finish(doc, stack, ln - 1)
                doc = Document(ln)
                res.documents.append(doc)
                stack = [doc.root]
                pending_name = {}
                pending_diag = {}
            elif doc is None or level > len(stack):
                res.errors.append((ln, "nested KTAP header at indentation %d without a parent"
                                   % indent))
            else:
                del stack[level:]
                node = Node(name=pending_name.pop(level, None), level=level, line=ln,
                            is_suite=True)
                stack.append(node)
            continue
        if doc is None:
            continue  # not KTAP (yet)
        m = SUBTEST_RE.match(stripped)
        if m:
            if level == 0:
                continue
            if len(stack) > level and stack[level].name is None and not stack[level].children \
                    and stack[level].plan is None:
                stack[level].name = m.group(1)
            elif len(stack) == level:
                # "# Subtest:" without a KTAP version line (older KUnit): open the suite here.
                stack.append(Node(name=m.group(1), level=level, line=ln, is_suite=True))
            else:
                pending_name[level] = m.group(1)
            continue
        m = TOTALS_RE.match(stripped)
        if m and level == 0:
            g = [int(x) if x is not None else None for x in m.groups()]
            doc.totals = {"pass": g[0], "fail": g[1], "skip": g[4]}
            if g[2] is not None:
                doc.totals["xfail"] = g[2]
            if g[3] is not None:
                doc.totals["xpass"] = g[3]
            if g[5] is not None:
                doc.totals["error"] = g[5]
            if g[6] is not None:
                doc.totals["total"] = g[6]
            doc.totals_line = ln
            continue
        m = PLAN_RE.match(stripped)
        if m:
            if level < len(stack):
                s = stack[level]
                if s.plan is not None:
                    doc.errors.append((ln, "second plan line for suite %r" % s.name))
                s.plan = int(m.group(1))
            else:
                doc.errors.append((ln, "plan at indentation %d outside any suite" % indent))
            continue
        m = RESULT_RE.match(stripped)
        if m:
            ok = m.group(1) == "ok"
            num = int(m.group(2))
            name = (m.group(3) or "").strip()
            directive, reason = None, None
            if m.group(4) is not None:
                dm = DIRECTIVE_RE.match(m.group(4).strip())
                if dm:
                    directive = dm.group(1).upper()
                    reason = dm.group(2).strip() or None
            if level >= len(stack):
                doc.errors.append((ln, "test result at indentation %d outside any suite" % indent))
                continue
            if len(stack) > level + 1:
                # closes the suite one level deeper
                node = stack[level + 1]
                del stack[level + 1:]
                for k in [k for k in pending_diag if k > level]:
                    node.diagnostics += pending_diag.pop(k)
                if node.name and name and node.name != name:
                    doc.warnings.append((ln, "suite %r closed by result named %r"
                                         % (node.name, name)))
                node.name = node.name or name
            else:
                node = Node(name=name, level=level)
                # a leaf's own diagnostics may be indented one level deeper than its result
                node.diagnostics += pending_diag.pop(level + 1, [])
            node.line = ln
            node.diagnostics = pending_diag.pop(level, []) + node.diagnostics
            node.number = num
            node.ok = ok
            node.directive = directive
            node.reason = reason
            parent = stack[level]
            expected = len(parent.children) + 1
            if num != expected:
                doc.errors.append((ln, "test number %d where %d was expected" % (num, expected)))
            parent.children.append(node)
            continue
        if stripped.startswith("#"):
            # KUnit prints a test's diagnostics before its result line: keep them for the
            # next result at this level.
            pending_diag.setdefault(level, []).append(stripped[1:].strip())
            continue
        # anything else: not KTAP, ignored
    finish(doc, stack, last_line)
    return res


def _check_plans(doc, node):
    if node.is_suite and node.plan is not None and len(node.children) != node.plan:
        doc.errors.append((node.line, "suite %r planned %d tests but reported %d"
                           % (node.name or "(top level)", node.plan, len(node.children))))
    elif node.is_suite and node.plan is None and node is not doc.root:
        doc.errors.append((node.line, "suite %r has no plan (1..N)" % node.name))
    for c in node.children:
        if c.is_suite:
            _check_plans(doc, c)


def parse_text(text, require_totals=True):
    return parse(enumerate(text.splitlines(), 1), require_totals=require_totals)
