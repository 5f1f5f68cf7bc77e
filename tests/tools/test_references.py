"""Every path, link and section the tree mentions exists in a clone, and nothing points at
the issue tracker.

Scanned: every tracked text file (docs/*.md, README.md, sources with their comments, build
and test config, scripts), except recorded data (see SKIP_FILES). A token counts as a
repository path when it starts with a top-level directory of the repository, with `../`
(resolved from the file's own directory) or with `/work/`. It must name a file or
directory of the clone: globs (`mm/*.[ch]`, `mm/{a,b}.c`) must match something, and
placeholders (`NNN`, `PROFILE`, `<profile>`) stand for any name. A token without a `/` at
its end and without an extension in its last part (`mm/pgtable`, `model/native` as a
ratio) is a module's name, not a path, and is not checked, unless it leaves the tree.
Markdown links must reach their file and heading; `docs/X.md section N` and
`docs/X.md, "Title"` must find that section. No "issue N" anywhere: the tracker is not
part of a clone, so the text says the fact instead.
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT  # noqa: E402


def top_dirs(root):
    """The tracked top-level directories (tools, tests, mm, docs, ...). build/ and
    results/ hold what make and tools/baremm write; they are never tracked, so paths in
    them are not checked."""
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                         check=True).stdout.decode()
    return sorted({f.split("/")[0] for f in out.split("\0") if "/" in f})


# Paths that need not exist in a clone, each with the reason.
ALLOWED = {
    # build outputs: `make` writes them (.gitignore lists them)
    "iso/baremm.iso": "the bootable image `make` builds",
    # paths in other projects' trees, named as such where they are mentioned
    "tools/testing/kunit/kunit_parser.py": "Linux's KUnit parser",
    "docs/system/replay.rst": "QEMU's record/replay documentation",
    # a deliberately missing file
    "model/profiles/does-not-exist.cfg": "model/test_model.c checks that loading it fails",
    # a recorded command line, quoted verbatim inside a generated block
    "/work/det/out": "--save directory of the recorded shootdown sweep (docs/TLB.md block "
                     "shootdown-model-causal-off, from its docs/data/ file)",
    "/work/det/out/shootdown_model_skylake_causal_off.png": "--plot file of the same command",
}

# Files that are data, not prose or code of this project, and this file (its examples of
# broken paths are the scanner's test data).
SKIP_FILES = re.compile(r"^(docs/data/|tests/tools/data/|tests/tools/test_references\.py$|"
                        r".*\.(json|png|svg|csv|log)$)")


def path_re(dirs):
    return re.compile(r"(?<![\w./<>-])((?:\.\./)+[\w./*\[\]{},<>\\+-]*|/work/[\w./*\[\]{},<>+-]*"
                      r"|(?:%s)/[\w./*\[\]{},<>\\+-]*)" % "|".join(re.escape(d) for d in dirs))


# An issue-tracker reference: "issue 6", "issues 4 and 5", "issue #13". Built in two parts
# so that this file does not match itself.
ISSUE_RE = re.compile(r"\bissues?" + r"[\s-]+#?\d+", re.IGNORECASE)
# Placeholders the docs write for "any name": <profile>, NNN (a seed), NAME, PROFILE, MODE.
PLACEHOLDER_RE = re.compile(r"<[^>/]*>|\b(?:NNN|NAME|PROFILE|MODE)\b")


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                         check=True).stdout.decode()
    return [f for f in out.split("\0") if f and not SKIP_FILES.match(f)]


def read_text(root, rel):
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return None


def _braces(tok):
    m = re.search(r"\{([^{}]*)\}", tok)
    if not m:
        return [tok]
    out = []
    for alt in m.group(1).split(","):
        out += _braces(tok[:m.start()] + alt + tok[m.end():])
    return out


def clean(tok):
    """The path part of a token: regex escapes undone, trailing punctuation dropped."""
    tok = tok.replace("\\.", ".").replace("\\", "")
    tok = re.sub(r"\[(?![a-z]+\]).*$", "", tok)      # `file[,option]`: a syntax bracket
    while tok and tok[-1] in ".,:;)}]'\"`":
        if re.search(r"\[[a-z]+\]$", tok) or tok.endswith("}") and "{" in tok:
            break
        tok = tok[:-1]
    return tok


def is_path(tok):
    if tok.startswith(("../", "/work/")):
        return True                 # outside the tree whatever it names
    last = tok.rstrip("/").rsplit("/", 1)[-1]
    return tok.endswith("/") or "." in last or "*" in last or "[" in last or "{" in last


def allowed(tok):
    """The ALLOWED entry that covers tok, or None."""
    templ = PLACEHOLDER_RE.sub("*", tok)
    for a in ALLOWED:
        if tok == a or templ == a or ("*" in a and fnmatch.fnmatch(tok, a)):
            return a
    return None


def resolves(root, rel_file, tok):
    """True when tok names something inside the clone."""
    if tok.startswith("/work/"):
        return False
    if tok.startswith("../"):
        full = os.path.normpath(os.path.join(root, os.path.dirname(rel_file), tok))
        if not (full + os.sep).startswith(os.path.abspath(root) + os.sep):
            return False
        tok = os.path.relpath(full, root)
    for alt in _braces(tok):
        pattern = PLACEHOLDER_RE.sub("*", alt)
        if not glob.glob(os.path.join(root, pattern)):
            return False
    return True


def broken_references(root, files=None, used=None):
    """[(file, line, token)] for every path token that does not resolve; the ALLOWED
    entries met go into the set `used`."""
    bad = []
    pattern = path_re(top_dirs(root))
    for rel in files if files is not None else tracked_files(root):
        text = read_text(root, rel)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in pattern.finditer(line):
                tok = clean(m.group(1))
                if not is_path(tok):
                    continue
                entry = allowed(tok)
                if entry:
                    if used is not None:
                        used.add(entry)
                    continue
                if not resolves(root, rel, tok):
                    bad.append((rel, n, tok))
    return bad


def issue_references(root, files=None):
    bad = []
    for rel in files if files is not None else tracked_files(root):
        text = read_text(root, rel)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in ISSUE_RE.finditer(line):
                bad.append((rel, n, m.group(0)))
    return bad


def github_slug(heading):
    """The anchor GitHub gives a Markdown heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


LINK_RE = re.compile(r"\]\(([^()\s]*)\)")


def broken_links(root, files=None):
    """[(file, line, link)] for Markdown links to a missing file or a missing heading."""
    bad = []
    for rel in files if files is not None else tracked_files(root):
        if not rel.endswith(".md"):
            continue
        text = read_text(root, rel)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in LINK_RE.finditer(line):
                link = m.group(1)
                if re.match(r"[a-z]+:", link):
                    continue                        # http:, https:, mailto:
                target, _, anchor = link.partition("#")
                path = os.path.normpath(os.path.join(root, os.path.dirname(rel), target)) \
                    if target else os.path.join(root, rel)
                if not os.path.exists(path):
                    bad.append((rel, n, link))
                    continue
                if anchor and path.endswith(".md"):
                    with open(path, encoding="utf-8") as f:
                        slugs = {github_slug(h) for h in re.findall(r"^#+ (.*)$", f.read(), re.M)}
                    if anchor not in slugs:
                        bad.append((rel, n, link))
    return bad


SECTION_NUM_RE = re.compile(r"((?:docs/[\w-]+|README)\.md)[\"',]*\s+sections?\s+(\d+(?:\.\d+)*)")
SECTION_NAME_RE = re.compile(r"((?:docs/[\w-]+|README)\.md)[,:]?\s+(?:sections?\s+)?"
                             r"\(?\"([^\"]+)\"")


def _titles(root, rel, cache):
    """Headings and bold paragraph titles of a Markdown file, without backticks."""
    if rel not in cache:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read().replace("`", "")
        cache[rel] = (re.findall(r"^#+ (.*)$", text, re.M),
                      re.findall(r"^\s*(?:- )?\*\*([^*]+)\*\*", text, re.M))
    return cache[rel]


def broken_sections(root, files=None):
    """[(file, line, reference)] for `docs/X.md section N` or `docs/X.md, "Title"` whose
    section (a numbered heading, or a heading or bold paragraph title containing the
    quoted words) is not in that file."""
    bad, cache = [], {}
    for rel in files if files is not None else tracked_files(root):
        text = read_text(root, rel)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in SECTION_NUM_RE.finditer(line):
                if not os.path.exists(os.path.join(root, m.group(1))):
                    continue                        # a missing file is reported above
                heads, _ = _titles(root, m.group(1), cache)
                if not any(re.match(re.escape(m.group(2)) + r"\.? ", h) for h in heads):
                    bad.append((rel, n, m.group(0)))
            for m in SECTION_NAME_RE.finditer(line):
                if not os.path.exists(os.path.join(root, m.group(1))):
                    continue
                name = m.group(2).replace("`", "").lower()
                heads, bold = _titles(root, m.group(1), cache)
                if not any(name in h.lower() for h in heads + bold):
                    bad.append((rel, n, m.group(0)))
    return bad


def _fmt(rows):
    return "\n".join("%s:%d: %s" % r for r in rows)


class TreeReferencesTest(unittest.TestCase):
    def test_every_path_resolves_in_the_clone(self):
        bad = broken_references(ROOT)
        self.assertEqual(bad, [], "paths that do not exist in a clone (fix the text, or add "
                         "a generated path to ALLOWED with its reason):\n" + _fmt(bad))

    def test_no_issue_tracker_references(self):
        bad = issue_references(ROOT)
        self.assertEqual(bad, [], "the issue tracker is not in the clone; say the fact "
                         "instead (history goes in commit messages):\n" + _fmt(bad))

    def test_markdown_links_resolve(self):
        bad = broken_links(ROOT)
        self.assertEqual(bad, [], "Markdown links to a missing file or heading:\n" + _fmt(bad))

    def test_named_sections_exist(self):
        bad = broken_sections(ROOT)
        self.assertEqual(bad, [], "references to a section that is not there:\n" + _fmt(bad))

    def test_outputs_are_not_tracked(self):
        """build/ and results/ stay outputs: were they tracked, their paths would be checked."""
        dirs = top_dirs(ROOT)
        self.assertNotIn("build", dirs)
        self.assertNotIn("results", dirs)
        self.assertTrue({"docs", "mm", "tools", "tests"} <= set(dirs), dirs)

    def test_allow_list_entries_are_needed(self):
        """An allowed path that now exists, or is no longer mentioned, is dropped."""
        used = set()
        broken_references(ROOT, used=used)
        self.assertEqual(sorted(set(ALLOWED) - used), [], "ALLOWED entries never met")
        for a in ALLOWED:
            for path in glob.glob(os.path.join(ROOT, a)) if not a.startswith("/") else ():
                # present only as an ignored build output, never tracked
                ignored = subprocess.run(["git", "-C", ROOT, "check-ignore", "-q", path])
                self.assertEqual(ignored.returncode, 0, a + " exists now and is not an output")


class ScannerTest(unittest.TestCase):
    """The scanner on a small fake tree: it finds what is broken and only that."""

    def setUp(self):
        import tempfile
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "repo")
        for d in ("mm", "docs", "tools/sub", "model/profiles"):
            os.makedirs(os.path.join(self.root, d))
        for f in ("mm/pgtable.c", "mm/pgtable.h", "docs/A.md", "model/profiles/zen3.cfg",
                  "tools/sub/.keep"):
            open(os.path.join(self.root, f), "w").close()
        subprocess.run(["git", "init", "-q", self.root], check=True)
        subprocess.run(["git", "-C", self.root, "add", "-A"], check=True)

    def tearDown(self):
        self.tmp.cleanup()

    def scan(self, rel, text):
        path = os.path.join(self.root, rel)
        with open(path, "w") as f:
            f.write(text)
        return [t for _, _, t in broken_references(self.root, [rel])]

    def test_good_references(self):
        self.assertEqual(self.scan("docs/B.md", "See mm/pgtable.c, `mm/pgtable.[ch]`, "
                                   "mm/{pgtable.c,pgtable.h}, mm/*.c, docs/, "
                                   "model/profiles/NAME.cfg, model/profiles/<name>.cfg and "
                                   "owned by mm/pgtable.\n"), [])
        self.assertEqual(self.scan("tools/sub/x.c", '#include "../../mm/pgtable.h"\n'), [])
        self.assertEqual(self.scan("docs/C.md", r"regex ^# mm/pgtable\.c:\d+" + "\n"), [])
        self.assertEqual(self.scan("docs/C.md", "--model model/profiles/zen3.cfg[,opt=v]\n"), [])

    def test_broken_references(self):
        self.assertEqual(self.scan("docs/B.md", "See mm/pgtable.c and mm/tlb.c.\n"), ["mm/tlb.c"])
        self.assertEqual(self.scan("docs/B.md", "mm/{pgtable,nosuch}.c\n"),
                         ["mm/{pgtable,nosuch}.c"])
        self.assertEqual(self.scan("docs/B.md", "`../shared/design.md`\n"),
                         ["../shared/design.md"])
        self.assertEqual(self.scan("docs/B.md", "see /work/shared/x.md\n"), ["/work/shared/x.md"])
        self.assertEqual(self.scan("docs/B.md", "docs/nothing/\n"), ["docs/nothing/"])
        self.assertEqual(self.scan("tools/sub/x.c", '#include "../../../mm/pgtable.h"\n'),
                         ["../../../mm/pgtable.h"])
        self.assertEqual(self.scan("docs/B.md", "model/profiles/NAME.ini\n"),
                         ["model/profiles/NAME.ini"])
        self.assertEqual(self.scan("docs/B.md", "docs/NOPE.md\n"), ["docs/NOPE.md"])

    def test_markdown_links(self):
        rel = "docs/B.md"
        with open(os.path.join(self.root, rel), "w") as f:
            f.write("# The page (`mm/x.c`, part 2)\n[a](#the-page-mmxc-part-2) [b](A.md) "
                    "[c](../mm/pgtable.c) [d](https://example.org/x)\n"
                    "[e](#the-page-issue) [f](NOPE.md) [g](A.md#nothing)\n")
        self.assertEqual([t for _, _, t in broken_links(self.root, [rel])],
                         ["#the-page-issue", "NOPE.md", "A.md#nothing"])

    def test_sections(self):
        with open(os.path.join(self.root, "docs/A.md"), "w") as f:
            f.write("# A\n## 1. One\n### 1.2 Sub part\n## The `x` panel\n**Bold title.** text\n")
        rel = "mm/x.c"
        with open(os.path.join(self.root, rel), "w") as f:
            f.write("/* docs/A.md section 1, docs/A.md section 1.2, docs/A.md, \"Sub part\",\n"
                    " * docs/A.md \"the x panel\", docs/A.md, \"Bold title\" */\n"
                    "/* docs/A.md section 3; docs/A.md, \"Calibration\" */\n")
        self.assertEqual([t for _, _, t in broken_sections(self.root, [rel])],
                         ["docs/A.md section 3", 'docs/A.md, "Calibration"'])

    def test_issue_references(self):
        rel = "docs/B.md"
        with open(os.path.join(self.root, rel), "w") as f:
            f.write("# Heading (Issue 10)\nfixed in issue #3\nissues are rare\ntissue 4\n"
                    "[x](#heading-issue-10)\n")
        self.assertEqual([t for _, _, t in issue_references(self.root, [rel])],
                         ["Issue 10", "issue #3", "issue-10"])


if __name__ == "__main__":
    unittest.main()
