"""Hosts beyond Debian: tools/install-deps.sh checks tools, not
packages, on a PATH of stubs (apt-get is never the real one here); tools/debug.sh exits
with the run's status and its gdb stub listens on 127.0.0.1 only; a missing ISO says so."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT  # noqa: E402
from baremm_lib import runner  # noqa: E402

REAL = ("bash", "sed", "head", "grep", "awk", "cat")
TOOLS = ("nasm", "gcc", "ld", "make", "python3", "grub-mkrescue", "xorriso", "mformat",
         "clang", "gdb", "gnuplot", "cpio")


def grub_dirs_present():
    return all(any(os.path.isfile(os.path.join(d, p, "moddep.lst"))
                   for d in ("/usr/lib/grub", "/usr/lib/grub2", "/usr/share/grub",
                             "/usr/share/grub2")) for p in ("i386-pc", "x86_64-efi"))


@unittest.skipUnless(grub_dirs_present() and all(shutil.which(t) for t in REAL),
                     "needs GRUB's module directories and the basic tools")
class InstallDepsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.bin = os.path.join(self.tmp, "bin")
        os.mkdir(self.bin)
        self.log = os.path.join(self.tmp, "calls.log")
        for t in REAL:
            os.symlink(shutil.which(t), os.path.join(self.bin, t))
        for t in TOOLS:
            self.stub(t, "exit 0")
        self.stub("qemu-system-x86_64", 'echo "QEMU emulator version 10.0.2 (Debian)"')
        self.stub("id", "echo 0")
        self.stub("tee", 'echo "tee $*" >> %s; cat >/dev/null' % self.log)
        self.ovmf = []
        for n in ("code.fd", "vars.fd"):
            p = os.path.join(self.tmp, n)
            open(p, "w").close()
            self.ovmf.append(p)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def stub(self, name, body):
        p = os.path.join(self.bin, name)
        if os.path.lexists(p):
            os.unlink(p)
        with open(p, "w") as f:
            f.write("#!%s\n%s\n" % (shutil.which("bash"), body))
        os.chmod(p, 0o755)

    def apt(self):
        self.stub("apt-get", 'echo "apt-get $*" >> %s' % self.log)
        self.stub("apt-cache", "echo")

    def run_deps(self, **env):
        e = {"PATH": self.bin, "BAREMM_OVMF_CODE": self.ovmf[0],
             "BAREMM_OVMF_VARS": self.ovmf[1]}
        e.update(env)
        r = subprocess.run([shutil.which("bash"), os.path.join(ROOT, "tools", "install-deps.sh")],
                           env=e, capture_output=True, text=True, timeout=60)
        calls = ""
        if os.path.exists(self.log):
            with open(self.log) as f:
                calls = f.read()
        return r.returncode, r.stderr, calls

    def test_all_tools_present_without_apt_or_dpkg(self):
        rc, err, calls = self.run_deps()
        self.assertEqual((rc, err, calls), (0, "", ""))

    def test_missing_tool_without_apt_is_named(self):
        os.unlink(os.path.join(self.bin, "nasm"))
        rc, err, _ = self.run_deps()
        self.assertEqual(rc, 1)
        self.assertIn("missing: nasm", err)
        self.assertIn("no apt-get", err)

    def test_qemu_version_checked_against_need(self):
        self.stub("qemu-system-x86_64", 'echo "QEMU emulator version 9.2.0"')
        rc, err, _ = self.run_deps(QEMU_NEED="10")
        self.assertEqual(rc, 1)
        self.assertIn("version 9", err)
        self.assertIn("-icount with SMP needs 10", err)
        self.assertEqual(self.run_deps(QEMU_NEED="8")[0], 0)

    def test_baremm_qemu_is_used_and_never_replaced(self):
        os.unlink(os.path.join(self.bin, "qemu-system-x86_64"))
        self.apt()
        mine = os.path.join(self.tmp, "my-qemu")
        with open(mine, "w") as f:
            f.write('#!%s\necho "QEMU emulator version 7.2.0"\n' % shutil.which("bash"))
        os.chmod(mine, 0o755)
        rc, err, calls = self.run_deps(BAREMM_QEMU=mine)
        self.assertEqual(rc, 1)
        self.assertIn(mine, err)
        self.assertNotIn("apt-get", calls)
        with open(mine, "w") as f:
            f.write('#!%s\necho "QEMU emulator version 10.1.0"\n' % shutil.which("bash"))
        self.assertEqual(self.run_deps(BAREMM_QEMU=mine)[:2], (0, ""))

    def test_not_root_without_sudo_does_not_call_apt(self):
        self.stub("id", "echo 1000")
        self.apt()
        os.unlink(os.path.join(self.bin, "nasm"))
        rc, err, calls = self.run_deps()
        self.assertEqual(rc, 1)
        self.assertIn("not root and no sudo", err)
        self.assertEqual(calls, "")

    def test_sudo_only_when_not_root(self):
        self.apt()
        self.stub("sudo", 'echo "sudo $1" >> %s; "$@"' % self.log)
        os.unlink(os.path.join(self.bin, "nasm"))
        self.stub("id", "echo 1000")
        rc, err, calls = self.run_deps()
        self.assertEqual(rc, 0, err)
        self.assertIn("sudo apt-get", calls)
        self.assertRegex(calls, r"apt-get install .*\bnasm\b")
        os.unlink(self.log)
        self.stub("id", "echo 0")
        rc, err, calls = self.run_deps()
        self.assertEqual(rc, 0, err)
        self.assertNotIn("sudo", calls)
        self.assertRegex(calls, r"apt-get install .*\bnasm\b")

    def test_optional_tool_missing_is_a_note(self):
        os.unlink(os.path.join(self.bin, "gdb"))
        rc, err, calls = self.run_deps()
        self.assertEqual(rc, 0)
        self.assertIn("optional, not found: gdb", err)

    def test_wrong_ovmf_path_is_named_not_installed(self):
        self.apt()
        rc, err, calls = self.run_deps(BAREMM_OVMF_CODE="/nonexistent/code.fd")
        self.assertEqual(rc, 1)
        self.assertIn("/nonexistent/code.fd", err)
        self.assertEqual(calls, "")


class MissingIsoTest(unittest.TestCase):
    def test_missing_iso_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(runner.ToolError) as cm:
                runner.boot({"cmdline": "tests=*"}, d, iso=os.path.join(d, "none.iso"))
        self.assertIn("none.iso does not exist", str(cm.exception))
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "baremm"), "run",
                                "--no-build", "-q", "--iso", "/nonexistent/x.iso", "--out", d],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 20)
        self.assertIn("/nonexistent/x.iso does not exist", r.stderr)
        self.assertNotIn("truncated", r.stdout + r.stderr)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@unittest.skipUnless(shutil.which("gdb") and shutil.which(runner.QEMU)
                     and os.path.exists(os.path.join(ROOT, "iso", "baremm.iso")),
                     "needs gdb, QEMU and iso/baremm.iso")
class DebugShTest(unittest.TestCase):
    def debug_run(self, cmdline):
        port = free_port()
        env = dict(os.environ, BAREMM_GDB_PORT=str(port))
        p = subprocess.Popen(["tools/debug.sh", "--no-build", "--smp", "1", "--mem", "128M",
                              "--cmdline", cmdline], cwd=ROOT, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            listen = None
            for _ in range(100):
                with open("/proc/net/tcp") as f:
                    rows = [r.split() for r in f.read().splitlines()[1:]]
                mine = [r[1] for r in rows if r[3] == "0A" and r[1].endswith(":%04X" % port)]
                if mine:
                    listen = mine
                    break
                time.sleep(0.1)
            subprocess.run(["gdb", "-batch", "-ex", "target remote 127.0.0.1:%d" % port,
                            "-ex", "continue"], capture_output=True, timeout=120)
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        return p.returncode, listen, out, err

    def test_exit_status_and_localhost_stub(self):
        rc, listen, out, err = self.debug_run("tests=boot.*")
        self.assertEqual(listen, ["0100007F:%s" % listen[0].split(":")[1]])   # 127.0.0.1 only
        self.assertIn("BAREMM-END status=pass", out)
        self.assertEqual(rc, 0, err)
        rc, _, out, err = self.debug_run("nosuchoption=1")
        self.assertEqual(rc, 12, err)
