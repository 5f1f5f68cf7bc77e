#!/usr/bin/env python3
"""Run the host test binaries and print ONE KTAP version 1 document: a suite per binary
(`make host-test`). Each binary prints its own one-suite document; this keeps its suite,
renumbers it, turns stray output (printk lines of the code under test) into diagnostics,
and ends with one `# Totals:` line over every leaf test. A binary that exits non-zero is
reported `not ok` with its exit status even if its last line said `ok`; one that dies
mid-run leaves a short plan, which KTAP parsers report. Exit status 1 if anything failed.
"""
import re
import subprocess
import sys

LEAF_RE = re.compile(r"^    (ok|not ok) \d+ .*?(#\s*(SKIP|TODO)\b.*)?$")
TOP_RESULT_RE = re.compile(r"^(ok|not ok) \d+ (.*)$")
KTAP_LINE_RE = re.compile(r"^(KTAP version \d+|\d+\.\.\d+|(ok|not ok) \d+\b.*|#.*|)$")


def run(binaries, out=sys.stdout):
    counts = {"pass": 0, "fail": 0, "skip": 0}
    failed = False
    out.write("KTAP version 1\n1..%d\n" % len(binaries))
    out.flush()
    for num, path in enumerate(binaries, 1):
        name = path.rsplit("/", 1)[-1]
        try:
            p = subprocess.run([path], stdout=subprocess.PIPE, text=True, errors="replace")
            text, rc = p.stdout, p.returncode
        except OSError as e:
            text, rc = "", "not runnable: %s" % e
        body, result = [], None
        for line in text.splitlines():
            if line.startswith("    "):
                inner = line[4:]
                body.append(line if KTAP_LINE_RE.match(inner.lstrip(" ")) else "    # " + inner)
                m = LEAF_RE.match(line)
                if m:
                    if m.group(3) == "SKIP":
                        counts["skip"] += 1
                    elif m.group(3) != "TODO":
                        counts["pass" if m.group(1) == "ok" else "fail"] += 1
                continue
            m = TOP_RESULT_RE.match(line)
            if m:
                result = (m.group(1), m.group(2))
            elif line.startswith("KTAP version") or re.match(r"^\d+\.\.\d+$", line) \
                    or line.startswith("# Totals:"):
                pass    # the binary's own document frame: replaced by ours
            elif line.strip():
                body.append("    # " + line)
        if not body or not body[0].startswith("    KTAP version"):
            body.insert(0, "    KTAP version 1")
            body.insert(1, "    # Subtest: %s" % name)
        ok = result is not None and result[0] == "ok" and rc == 0
        if rc != 0 and (result is None or result[0] == "ok"):
            body.append("    # %s exited with status %s%s" % (
                name, rc, "" if result else " before its suite ended (crash or sanitizer report "
                "on stderr)"))
        out.write("\n".join(body) + "\n")
        out.write("%s %d %s\n" % ("ok" if ok else "not ok", num, result[1] if result else name))
        out.flush()
        failed |= not ok
    out.write("# Totals: pass:%d fail:%d skip:%d total:%d\n"
              % (counts["pass"], counts["fail"], counts["skip"], sum(counts.values())))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
