"""runner.run_qemu: QEMU's standard output (the serial port) goes to a regular file, never
a pipe (a full pipe makes the guest's UART wait on the host: docs/OUTPUT.md section 7)."""
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401
from baremm_lib import runner  # noqa: E402

# Stands in for QEMU: says what its stdout is, prints in two bursts, exits with 33.
FAKE = ("if [ -p /dev/stdout ]; then echo 'baremm stdout=pipe'; "
        "elif [ -f /dev/stdout ]; then echo 'baremm stdout=file'; else echo 'baremm stdout=other'; fi; "
        "sleep 0.2; printf 'BAREMM-END status=pass results=0\\n'; exit 16")


class RunQemuTest(unittest.TestCase):
    def test_stdout_is_a_file_and_echoed(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "serial.log")
            echo = io.StringIO()
            q = runner.run_qemu(["sh", "-c", FAKE], log, 30, echo=runner.LineEcho(echo),
                                stderr_path=os.path.join(d, "qemu.stderr"))
            self.assertEqual(q["exit_code"], 16)
            self.assertFalse(q["timed_out"])
            with open(log) as f:
                text = f.read()
            self.assertEqual(text, "baremm stdout=file\nBAREMM-END status=pass results=0\n")
            self.assertEqual(echo.getvalue(), text)

    def test_timeout_keeps_log(self):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "serial.log")
            q = runner.run_qemu(["sh", "-c", "echo baremm started; exec sleep 30"], log, 0.5)
            self.assertTrue(q["timed_out"])
            with open(log) as f:
                self.assertEqual(f.read(), "baremm started\n")



class NewDirTest(unittest.TestCase):
    def test_same_name_at_once_never_shares_a_directory(self):
        import shutil
        import threading
        base = tempfile.mkdtemp(prefix="newdir-")
        try:
            got, lock = [], threading.Lock()

            def make():
                d = runner.new_dir(base, "experiment-004-20261203-135924")
                with lock:
                    got.append(d)
            ts = [threading.Thread(target=make) for _ in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(len(set(got)), 8)
            self.assertIn(os.path.join(base, "experiment-004-20261203-135924"), got)
            self.assertIn(os.path.join(base, "experiment-004-20261203-135924-8"), got)
        finally:
            shutil.rmtree(base)


if __name__ == "__main__":
    unittest.main()
