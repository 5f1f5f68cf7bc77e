import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, data  # noqa: E402
from baremm_lib import cfg, logparse, runner, symbolize, testrun  # noqa: E402


@unittest.skipUnless(shutil.which("gcc") and shutil.which("addr2line") and shutil.which("nm"),
                     "needs gcc, nm and addr2line")
class SymbolizeTest(unittest.TestCase):
    def test_frames(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "t.c")
            with open(src, "w") as f:
                f.write("__attribute__((noinline)) int leaf(int x) { return x * 7; }\n"
                        "int main(int c, char **v) { (void)v; return leaf(c); }\n")
            elf = os.path.join(d, "t.elf")
            subprocess.run(["gcc", "-O1", "-g", "-o", elf, src], check=True)
            nm = subprocess.run(["nm", elf], capture_output=True, text=True).stdout
            leaf = next(int(line.split()[0], 16) for line in nm.splitlines()
                        if line.endswith(" leaf"))
            lines = ["PANIC: test\n", " [<%016x>]\n" % (leaf + 1), "other line\n"]
            out = symbolize.symbolize_lines(lines, elf, root=d)
            self.assertEqual(out[0], lines[0])
            self.assertEqual(out[2], lines[2])
            self.assertRegex(out[1], r"^ \[<[0-9a-f]{16}>\] leaf at t\.c:1\n$")
            tool = os.path.join(ROOT, "tools", "symbolize")
            r = subprocess.run([sys.executable, tool, "--elf", elf, "-"], input="".join(lines),
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("leaf at", r.stdout)

    def test_build_id_checked(self):
        """A log from another build is refused: its addresses name the wrong functions."""
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "t.c")
            with open(src, "w") as f:
                f.write('__attribute__((used)) const char tag[] = "baremm-build-id:abc123";\n'
                        "__attribute__((noinline)) int leaf(int x) { return x * 7; }\n"
                        "int main(int c, char **v) { (void)v; return leaf(c); }\n")
            elf = os.path.join(d, "t.elf")
            subprocess.run(["gcc", "-O1", "-g", "-o", elf, src], check=True)
            self.assertEqual(symbolize.elf_build_id(elf), "abc123")
            tool = os.path.join(ROOT, "tools", "symbolize")

            def run(build, *extra):
                log = ("baremm %s booting\nBAREMM-MACHINE cpus=1 build=%s cmdline=\"\"\n"
                       "PANIC: x\n [<ffffffff80201234>]\n" % (build, build))
                return subprocess.run([sys.executable, tool, "--elf", elf] + list(extra) + ["-"],
                                      input=log, capture_output=True, text=True)
            r = run("abc123")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "")
            r = run("def456")
            self.assertEqual(r.returncode, 1)
            self.assertIn("build def456", r.stderr)
            self.assertIn("build abc123", r.stderr)
            self.assertEqual(r.stdout, "")
            r = run("def456", "--ignore-build-id")
            self.assertEqual(r.returncode, 0)
            self.assertIn("PANIC", r.stdout)
            ok, msg = symbolize.check_build_id(["baremm abc123-dirty booting\n"], elf)
            self.assertFalse(ok)
        self.assertEqual(symbolize.log_build_id(["x", "baremm 1234abcd booting"]), "1234abcd")

    def test_missing_elf(self):
        with self.assertRaises(symbolize.SymbolizeError):
            symbolize.symbolize_lines([" [<ffffffff80201234>]\n"], "/nonexistent.elf")


def fake_record(logname, exit_code, timed_out=False):
    parsed = logparse.parse_file(data(logname))
    q = {"exit_code": exit_code, "timed_out": timed_out, "duration_s": 1.0, "stderr": ""}
    return runner.make_record({"cmdline": "tests=*"}, ["qemu", "-accel", "tcg"], q, parsed,
                              name="x"), parsed


class MatrixCheckTest(unittest.TestCase):
    def entry(self, **kw):
        e = cfg.parse("[x]\ncmdline=tests=*\n")[0]
        e.update(kw)
        return e

    def test_pass(self):
        rec, parsed = fake_record("tests_pass_bios.log", 33)
        self.assertEqual(rec["status"], "pass")
        self.assertEqual(rec["tool_exit"], 0)
        self.assertEqual(testrun.check_entry(self.entry(), rec, parsed), [])

    def test_failed_tests(self):
        rec, parsed = fake_record("tests_fail_uefi.log", 35)
        problems = testrun.check_entry(self.entry(), rec, parsed)
        self.assertTrue(any("expected status pass, got test_failed" in p for p in problems))

    def test_missing_totals_fails_entry(self):
        rec, parsed = fake_record("ktap_missing_totals.log", 33)
        problems = testrun.check_entry(self.entry(), rec, parsed)
        self.assertTrue(any("Totals" in p for p in problems), problems)

    def test_missing_plan_fails_entry(self):
        rec, parsed = fake_record("ktap_missing_plan.log", 33)
        self.assertTrue(testrun.check_entry(self.entry(), rec, parsed))

    def test_bad_option_expected(self):
        rec, parsed = fake_record("bad_option.log", 37)
        e = self.entry(cmdline="nosuchoption=1", expect="bad_option", ktap="optional",
                       expect_output=r"^BAREMM-ERROR option:.*nosuchoption")
        self.assertEqual(testrun.check_entry(e, rec, parsed), [])
        e["expect_output"] = "^BAREMM-ERROR option:.*otheroption"
        self.assertTrue(testrun.check_entry(e, rec, parsed))

    def test_host_timeout(self):
        rec, parsed = fake_record("bench_noend.log", 0, timed_out=True)
        self.assertEqual(rec["status"], "host_timeout")
        self.assertEqual(rec["tool_exit"], 16)
        self.assertTrue(testrun.check_entry(self.entry(), rec, parsed))

    def test_failure_details(self):
        rec, _ = fake_record("tests_fail_uefi.log", 35)
        self.assertEqual(testrun.failure_details(rec["ktap"]),
                         [("memmap.absurd_range",
                           ["mm/memblock.c:88: expected total == 3 (2 != 3)"])])

    def test_run_entry_output(self):
        import io
        import threading
        from unittest import mock
        rec, parsed = fake_record("tests_fail_uefi.log", 35)
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.object(runner, "boot", return_value=(rec, parsed)):
            out = io.StringIO()
            r = testrun.run_entry(self.entry(name="e1"), d, None, threading.Lock(), out)
        self.assertFalse(r["ok"])
        text = out.getvalue()
        self.assertTrue(text.startswith("FAIL e1 (test_failed; KTAP 2 passed, 1 failed"), text)
        self.assertIn("failed: memmap.absurd_range", text)
        self.assertIn("# mm/memblock.c:88", text)
        self.assertIn("/e1/serial.log", text)

    def test_run_entry_boots_the_kernel_named(self):
        import io
        import threading
        from unittest import mock
        rec, parsed = fake_record("tests_pass_bios.log", 33)
        for kernel, iso in (("default", None),
                            ("contracts", os.path.join(runner.ROOT, runner.CONTRACTS_ISO))):
            with tempfile.TemporaryDirectory() as d, \
                    mock.patch.object(runner, "boot", return_value=(rec, parsed)) as boot:
                testrun.run_entry(self.entry(name="e1", kernel=kernel), d, None,
                                  threading.Lock(), io.StringIO())
            self.assertEqual(boot.call_args.kwargs["iso"], iso, kernel)

    def test_status_mismatch_warning(self):
        rec, _ = fake_record("tests_pass_bios.log", 39)
        self.assertEqual(rec["status"], "panic")
        self.assertTrue(any("QEMU exit code 39" in w["message"] for w in rec["log"]["warnings"]))


@unittest.skipUnless(os.environ.get("BAREMM_E2E") == "1" and
                     os.path.exists(os.path.join(ROOT, "iso", "baremm.iso")) and
                     shutil.which("qemu-system-x86_64"),
                     "end-to-end boot: set BAREMM_E2E=1 (needs iso/baremm.iso and QEMU)")
class EndToEndTest(unittest.TestCase):
    def test_boot_produces_json(self):
        import json
        with tempfile.TemporaryDirectory() as d:
            tool = os.path.join(ROOT, "tools", "baremm")
            r = subprocess.run([sys.executable, tool, "run", "--no-build", "-q", "--smp", "1",
                                "--cmdline", "tests=*", "--timeout", "240", "--out", d],
                               capture_output=True, text=True)
            with open(os.path.join(d, "run.json")) as f:
                rec = json.load(f)
            self.assertIn(rec["status"], ("pass", "test_failed"), r.stdout + r.stderr)
            self.assertEqual(r.returncode, rec["tool_exit"])
            self.assertTrue(rec["ktap"]["present"])
            self.assertEqual(rec["ktap"]["errors"], [])
            self.assertIsNotNone(rec["machine"])
            self.assertEqual(rec["machine"]["cpus"], 1)
            self.assertEqual(rec["config"]["cmdline"], "tests=*")
            self.assertIn("-fw_cfg", rec["qemu"]["argv"])


if __name__ == "__main__":
    unittest.main()
