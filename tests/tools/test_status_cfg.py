import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, data  # noqa: E402
from baremm_lib import cfg, runner, status, testrun, unittests  # noqa: E402


class ExitCodeTest(unittest.TestCase):
    def test_qemu_codes(self):
        expect = {33: "pass", 35: "test_failed", 37: "bad_option", 39: "panic", 41: "watchdog",
                  43: "bench_error", 0: "no_status", 1: "no_status", 32: "no_status",
                  -9: "no_status"}
        for code, name in expect.items():
            self.assertEqual(status.qemu_exit_to_status(code), name, code)
        self.assertEqual(status.qemu_exit_to_status(33, timed_out=True), "host_timeout")

    def test_tool_exit_distinct(self):
        codes = [status.tool_exit(s) for s in status.ALL_STATUSES]
        self.assertEqual(codes[0], 0)
        self.assertEqual(len(set(codes)), len(codes))
        self.assertNotIn(status.EXIT_USAGE, codes)
        self.assertNotIn(status.EXIT_LOG_ERROR, codes)
        self.assertNotIn(status.EXIT_TOOL_ERROR, codes)
        self.assertEqual(status.tool_exit("panic"), 13)

    def test_parse_exit_status(self):
        tool = os.path.join(ROOT, "tools", "baremm")
        for name, code in (("tests_pass_bios.log", 0), ("tests_fail_uefi.log", 11),
                           ("bad_option.log", 12), ("panic.log", 13),
                           ("bench_truncated.log", 18), ("bench_malformed.log", 18)):
            r = subprocess.run([sys.executable, tool, "parse", data(name)], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, code, name + r.stdout + r.stderr)
        r = subprocess.run([sys.executable, tool, "parse", data("bench_truncated.log")],
                           capture_output=True, text=True)
        self.assertIn("TRUNCATED", r.stdout)


def _read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def header_codes(text):
    """kernel/exit.h: {status: (isa-debug-exit value, QEMU exit in the comment)}."""
    rows = re.findall(r"EXIT_(\w+)\s*=\s*(0x[0-9a-fA-F]+),\s*/\*\s*(?:QEMU exit\s+)?(\d+):", text)
    return {n.lower(): (int(v, 16), int(q)) for n, v, q in rows}


def kernel_names(text):
    """kernel/exit.c exit_status_name(): {enum name: printed status}."""
    return {e.lower(): s for e, s in re.findall(r'case EXIT_(\w+):\s*return "(\w+)";', text)}


def md_table(text, after):
    """The rows (lists of cells) of the first Markdown table after the line `after`."""
    lines = text.splitlines()
    i = lines.index(after)
    rows = []
    for line in lines[i + 1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]                                 # without the header row


def doc_status_rows(rows):
    """{status: (kernel code or None, QEMU exit or None, tool exit)} of an exit-code table."""
    out = {}
    for cells in rows:
        name = re.match(r"`?(\w+)", cells[0]).group(1)
        code = int(cells[1], 16) if cells[1].startswith("0x") else None
        qemu = int(cells[2]) if cells[2].isdigit() else None
        out[name] = (code, qemu, int(cells[3]))
    return out


def matrix_statuses(text):
    """The status names matrix.cfg's header lists for expect=, in order."""
    m = re.search(r"^# expect=\s+status the boot must end with \(([^)]*)\)", text, re.M)
    return m.group(1).replace("#", " ").split()


class StatusSourcesTest(unittest.TestCase):
    """The exit codes written outside status.py agree with status.py: kernel/exit.h and
    exit.c, README.md, docs/OUTPUT.md, tests/qemu/matrix.cfg, tools/debug.sh."""

    def test_kernel_header(self):
        self.assertEqual(header_codes(_read("kernel/exit.h")),
                         {s: (v, (v << 1) | 1) for s, v in status.KERNEL_CODES.items()})

    def test_kernel_names(self):
        names = kernel_names(_read("kernel/exit.c"))
        self.assertEqual(names, {s: s for s in status.KERNEL_CODES})

    def test_readme(self):
        rows = doc_status_rows(md_table(_read("README.md"), "## Exit statuses"))
        want = {s: (v, (v << 1) | 1, status.TOOL_EXIT[s]) for s, v in status.KERNEL_CODES.items()}
        self.assertEqual(rows, want)

    def test_output_md(self):
        text = _read("docs/OUTPUT.md")
        rows = doc_status_rows(md_table(text, "## 2. Exit codes"))
        want = {s: (v, (v << 1) | 1, status.TOOL_EXIT[s]) for s, v in status.KERNEL_CODES.items()}
        want.update({s: (None, None, status.TOOL_EXIT[s]) for s in status.HOST_STATUSES})
        self.assertEqual(rows, want)
        self.assertEqual(list(rows), list(status.ALL_STATUSES))
        more = {int(c[0]) for c in md_table(text, "More tool exit statuses:")}
        self.assertEqual(more, {status.EXIT_LOG_ERROR, status.EXIT_TOOL_ERROR,
                                status.EXIT_USAGE, status.EXIT_INTERRUPTED,
                                status.EXIT_NOT_CALIBRATED, status.EXIT_UNKNOWN_CPU})

    def test_matrix(self):
        text = _read("tests/qemu/matrix.cfg")
        self.assertEqual(matrix_statuses(text), list(status.ALL_STATUSES))
        expected = {e["expect"] for e in cfg.parse(text)}
        self.assertEqual(expected - set(status.ALL_STATUSES), set())
        # every status the kernel can end with is provoked by at least one entry
        self.assertEqual(set(status.KERNEL_CODES) - expected, set())

    def test_debug_sh(self):
        """tools/debug.sh maps QEMU's exit to the status and the tool's exit itself."""
        rows = re.findall(r"^(\d+)\) st=(\w+); out=(\d+) ;;$", _read("tools/debug.sh"), re.M)
        self.assertEqual({int(q): (s, int(o)) for q, s, o in rows},
                         {(v << 1) | 1: (s, status.TOOL_EXIT[s])
                          for s, v in status.KERNEL_CODES.items()})

    def test_drift_is_caught(self):
        """Each parser sees a changed number or name (so the tests above can fail)."""
        h = _read("kernel/exit.h")
        self.assertNotEqual(header_codes(h.replace("0x13,", "0x16,")), header_codes(h))
        self.assertNotEqual(header_codes(h.replace("/* 39:", "/* 38:")), header_codes(h))
        self.assertEqual(len(header_codes(h)), len(status.KERNEL_CODES))
        c = _read("kernel/exit.c")
        self.assertNotEqual(kernel_names(c.replace('"panic"', '"panicked"')), kernel_names(c))
        r = _read("README.md")
        self.assertNotEqual(md_table(r.replace("| 43 | 15 |", "| 43 | 16 |"), "## Exit statuses"),
                            md_table(r, "## Exit statuses"))
        o = _read("docs/OUTPUT.md")
        self.assertNotEqual(md_table(o.replace("| 18 | the log", "| 19 | the log"),
                                     "More tool exit statuses:"),
                            md_table(o, "More tool exit statuses:"))
        m = _read("tests/qemu/matrix.cfg")
        self.assertNotEqual(matrix_statuses(m.replace("bench_error host_timeout", "host_timeout")),
                            matrix_statuses(m))


# A statement that hands back a number as an exit status: return N, `status or N`,
# sys.exit(N), SystemExit(N) (the number last on its line, so `return 2 * x` is not one).
LITERAL_EXIT_RE = re.compile(r"(?:\breturn|\bor|\bexit\(|\bSystemExit\()\s*(\d+)\)?\s*(?:#.*)?$",
                             re.M)


def literal_exits(text):
    """The status numbers (other than 0 and 1, plain success and failure) that text
    returns as literals instead of naming status.py's constant."""
    named = set(status.TOOL_EXIT.values()) | {
        status.EXIT_LOG_ERROR, status.EXIT_TOOL_ERROR, status.EXIT_NOT_CALIBRATED,
        status.EXIT_USAGE, status.EXIT_INTERRUPTED}
    return [int(n) for n in LITERAL_EXIT_RE.findall(text) if int(n) in named - {0, 1}]


class LiteralExitTest(unittest.TestCase):
    def test_tools_name_their_exit_statuses(self):
        lib = os.path.join(ROOT, "tools", "baremm_lib")
        paths = [os.path.join(lib, n) for n in sorted(os.listdir(lib)) if n.endswith(".py")]
        for path in paths + [os.path.join(ROOT, "tools", "baremm")]:
            with open(path) as f:
                self.assertEqual(literal_exits(f.read()), [], path)

    def test_a_literal_is_caught(self):
        self.assertEqual(literal_exits("        return 20\n    status = status or 2  # x\n"
                                       "    sys.exit(130)\n"), [20, 2, 130])
        self.assertEqual(literal_exits("    return 2 * lat\n    return 0\n    return 1\n"
                                       "    return st.EXIT_USAGE\n"), [])


class CfgTest(unittest.TestCase):
    def test_parse(self):
        text = """# comment
[a]
cmdline=tests=* x=#1
smp=4
mem=6G
cpu=qemu64
firmware=uefi
icount=yes
timeout=200
groups=quick tests

; another comment
[b]
cmdline=nosuchoption=1
expect=bad_option
expect_output=^BAREMM-ERROR option:.*nosuchoption
"""
        es = cfg.parse(text)
        self.assertEqual([e["name"] for e in es], ["a", "b"])
        a, b = es
        self.assertEqual(a["cmdline"], "tests=* x=#1")
        self.assertEqual((a["smp"], a["mem"], a["cpu"], a["firmware"]), (4, "6G", "qemu64", "uefi"))
        self.assertTrue(a["icount"])
        self.assertEqual(a["timeout"], 200)
        self.assertEqual(a["groups"], ["quick", "tests"])
        self.assertEqual(a["ktap"], "required")
        self.assertEqual(b["expect"], "bad_option")
        self.assertEqual(b["ktap"], "optional")
        self.assertEqual(b["smp"], 1)
        self.assertEqual([e["name"] for e in cfg.select(es, groups=["quick"])], ["a"])
        self.assertEqual([e["name"] for e in cfg.select(es, names=["b"])], ["b"])
        self.assertEqual(len(cfg.select(es)), 2)

    def test_errors(self):
        bad = ["smp=1\n", "[a]\nfoo=1\n", "[a]\n[a]\n", "[a]\nsmp=zero\n",
               "[a]\nexpect=great\n", "[a]\nfirmware=coreboot\n", "[a]\nmem=lots\n",
               "[a]\nexpect_output=(\n", "[a b]\n", "[a]\njunk\n", "[a]\nkernel=debug\n"]
        for text in bad:
            with self.assertRaises(cfg.CfgError, msg=text):
                cfg.parse(text)
        try:
            cfg.parse("[a]\nsmp=1\nfoo=2\n", "m.cfg")
        except cfg.CfgError as e:
            self.assertIn("m.cfg:3", str(e))

    def test_project_matrix(self):
        es = cfg.load(os.path.join(ROOT, "tests", "qemu", "matrix.cfg"))
        names = [e["name"] for e in es]
        self.assertIn("bad-option", names)
        self.assertIn("watchdog", names)
        tests = [e for e in es if e["cmdline"] == "tests=*"]
        self.assertTrue({1, 2, 4} <= {e["smp"] for e in tests})
        self.assertTrue({"128M", "6G"} <= {e["mem"] for e in tests})
        self.assertEqual({e["cpu"] for e in tests}, {"qemu64", "max"})
        self.assertEqual({e["firmware"] for e in tests}, {"bios", "uefi"})
        self.assertTrue(all(e["ktap"] == "required" for e in tests))
        self.assertTrue(cfg.select(es, groups=["quick"]))
        cfg.load(os.path.join(ROOT, "tests", "qemu", "suites.cfg"))
        # the contracts kernel runs every test, and each contract broken on purpose panics
        contracts = [e for e in es if e["kernel"] == "contracts"]
        self.assertIn("tests=*", [e["cmdline"] for e in contracts])
        broken = {e["cmdline"] for e in contracts if e["expect"] == "panic"}
        self.assertEqual(broken, {"selftest=contract_irqs", "selftest=contract_mm_lock"})
        self.assertTrue(all(e["kernel"] == "default" for e in es if e not in contracts))

    def test_kernel_key(self):
        es = cfg.parse("[a]\nkernel=contracts\n[b]\nsmp=1\n")
        self.assertEqual([e["kernel"] for e in es], ["contracts", "default"])


class QemuCommandTest(unittest.TestCase):
    def test_command(self):
        with tempfile.TemporaryDirectory() as d:
            argv = runner.build_command({"cmdline": "tests=* timeout=5", "smp": 4, "mem": "6G",
                                         "cpu": "qemu64", "firmware": "bios", "accel": "tcg",
                                         "icount": True, "boot": "grub"}, d, iso="/x/baremm.iso")
            s = " ".join(argv)
            for part in ("-machine q35", "-cdrom /x/baremm.iso", "-boot d", "-no-reboot",
                         "-device isa-debug-exit,iobase=0xf4,iosize=0x04", "-smp 4", "-m 6G",
                         "-cpu qemu64", "-accel tcg", "-icount shift=0,sleep=off,align=off",
                         "-fw_cfg name=opt/baremm/cmdline,file=" + d + "/cmdline.txt"):
                self.assertIn(part, s)
            with open(os.path.join(d, "cmdline.txt")) as f:
                self.assertEqual(f.read(), "tests=* timeout=5")

    def test_boot_modes(self):
        """Deterministic boots load the flat image through QEMU's multiboot loader (no
        firmware disk I/O, so the instruction count at kernel entry does not follow the
        host); everything else boots the ISO; direct refuses what it cannot do."""
        with tempfile.TemporaryDirectory() as d:
            iso = os.path.join(d, "baremm-qemu.iso")
            for name in ("baremm-qemu.iso", "baremm.bin"):
                open(os.path.join(d, name), "wb").close()
            det = runner.build_command({"icount": True}, d, iso=iso)
            self.assertIn("-kernel", det)
            self.assertEqual(det[det.index("-kernel") + 1], os.path.join(d, "baremm.bin"))
            self.assertNotIn("-cdrom", det)
            self.assertEqual(runner.boot_mode({"model": "zen3"}), "direct")
            for cfg in ({}, {"icount": True, "firmware": "uefi"},
                        {"icount": True, "screendump": True}, {"icount": True, "boot": "grub"}):
                self.assertEqual(runner.boot_mode(cfg), "grub", cfg)
                if "screendump" in cfg or "firmware" in cfg:
                    continue
                argv = runner.build_command(dict(cfg), d, iso=iso)
                self.assertIn("-cdrom", argv)
                self.assertNotIn("-kernel", argv)
            self.assertEqual(runner.boot_mode({"boot": "direct"}), "direct")   # TCG too
            for bad in ({"boot": "direct", "firmware": "uefi"},
                        {"boot": "direct", "screendump": True}, {"boot": "floppy"}):
                with self.assertRaises(runner.ToolError):
                    runner.boot_mode(bad)
            # a private copy's own image wins over the build's
            own = os.path.join(d, "copy.bin")
            open(own, "wb").close()
            self.assertEqual(runner.direct_image(os.path.join(d, "copy.iso")), own)
            os.unlink(os.path.join(d, "baremm.bin"))
            with self.assertRaises(runner.ToolError):                         # not built
                runner.build_command({"icount": True}, d, iso=iso)

    def test_boot_key(self):
        es = cfg.parse("[a]\nboot=direct\n[b]\nsmp=1\n")
        self.assertEqual([e["boot"] for e in es], ["direct", None])
        with self.assertRaises(cfg.CfgError):
            cfg.parse("[a]\nboot=pxe\n")

    def test_no_cmdline_no_fwcfg(self):
        with tempfile.TemporaryDirectory() as d:
            argv = runner.build_command({"cmdline": None}, d, iso="/x.iso")
            self.assertNotIn("-fw_cfg", argv)

    @unittest.skipUnless(os.path.exists(runner.OVMF_VARS), "OVMF not installed")
    def test_uefi(self):
        with tempfile.TemporaryDirectory() as d:
            argv = runner.build_command({"firmware": "uefi"}, d, iso="/x.iso")
            s = " ".join(argv)
            self.assertIn("if=pflash,format=raw,readonly=on,file=" + runner.OVMF_CODE, s)
            self.assertIn("if=pflash,format=raw,file=" + d + "/ovmf_vars.fd", s)
            self.assertTrue(os.path.exists(os.path.join(d, "ovmf_vars.fd")))

    def test_comma_escape(self):
        self.assertEqual(runner.qemu_arg_path("/a,b"), "/a,,b")

    def test_kvm_with_icount_refused(self):
        if runner.kvm_usable():
            with self.assertRaises(runner.ToolError):
                runner.resolve_accel("kvm", icount=True)
        else:
            with self.assertRaises(runner.ToolError):
                runner.resolve_accel("kvm")
            self.assertEqual(runner.resolve_accel("auto"), "tcg")


class ToolTestsCountTest(unittest.TestCase):
    MODULE = """import unittest
class T(unittest.TestCase):
    def test_pass1(self): pass
    def test_pass2(self): print("noise on stdout")
    def test_fail(self): self.assertEqual(1, 2)
    def test_error(self): raise RuntimeError("boom")
    @unittest.skip("why")
    def test_skip(self): pass
    @unittest.expectedFailure
    def test_xfail(self): self.assertEqual(1, 2)
"""

    def test_counts_from_the_result(self):
        d = tempfile.mkdtemp(prefix="baremm-ut-")
        try:
            with open(os.path.join(d, "test_counted_sample.py"), "w") as f:
                f.write(self.MODULE)
            with open(os.path.join(d, "test_counted_broken.py"), "w") as f:
                f.write("import no_such_module_here\n")
            log = io.StringIO()
            # pass1, pass2, xfail pass; fail, error and the broken import fail; 1 skip
            self.assertEqual(unittests.run(d, log, top_level_dir=d), (3, 3, 1))
            self.assertIn("noise on stdout", log.getvalue())
            self.assertIn("boom", log.getvalue())
        finally:
            sys.modules.pop("test_counted_sample", None)
            sys.modules.pop("test_counted_broken", None)
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()


class SelectionTypoTest(unittest.TestCase):
    """A misspelled --group or --only is an error, never an empty run that passes."""
    CFG = "[a]\ngroups=quick tests\n[b]\ngroups=uefi\n"

    def test_unknown_selection(self):
        entries = cfg.parse(self.CFG)
        self.assertEqual(cfg.unknown_selection(entries, ["quick"], ["b"]), [])
        self.assertEqual(cfg.unknown_selection(entries, ["a"]), [])   # a name works as a group
        bad = cfg.unknown_selection(entries, ["quick,uefi"], ["bb", "c"])
        self.assertEqual(len(bad), 3, bad)
        self.assertIn("'quick,uefi'", bad[0])
        self.assertIn("did you mean b", bad[1])

    def test_test_command_exits_2(self):
        tool = os.path.join(ROOT, "tools", "baremm")
        for args in (["--group", "quick,uefi"], ["--only", "smp2-bios-maxx"],
                     ["--group", "nosuchgroup"]):
            r = subprocess.run([sys.executable, tool, "test", "--no-build", "--no-host",
                                "--no-unittest"] + args, capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, status.EXIT_USAGE, args)
            self.assertIn(args[1], r.stderr)
            self.assertNotIn("passed", r.stdout)

    def test_cmdline_escaped(self):
        e = cfg.parse("[x]\ncmdline_escaped=\\x00tests=boot.*\\vbench=a\\\\b\n")[0]
        self.assertEqual(e["cmdline"], "\0tests=boot.*\vbench=a\\b")
