"""The framebuffer-mirror check (tools/baremm_lib/screen.py) on screens drawn here with the
kernel's font, and the QMP screendump client against a scripted QMP server."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT  # noqa: E402
from baremm_lib import cfg, runner, screen, testrun  # noqa: E402

FONT = screen.load_font()
GLYPH = {ch: rows for rows, ch in FONT.items()}


def draw(rows, cols, nrows, cursor=None, extra_w=0):
    """A PPM of @rows (strings) drawn as kernel/fbcon.c draws them: white on black,
    cursor = the cell's last two pixel rows white."""
    w, h = cols * 8 + extra_w, nrows * 16
    px = bytearray(w * h * 3)
    for r, text in enumerate(rows):
        for c, ch in enumerate(text):
            glyph = GLYPH[ch if 0x20 <= ord(ch) <= 0x7e else screen.UNKNOWN]
            for y in range(16):
                for x in range(8):
                    if glyph[y] & (0x80 >> x):
                        i = ((r * 16 + y) * w + c * 8 + x) * 3
                        px[i:i + 3] = b"\xff\xff\xff"
    if cursor:
        c, r = cursor
        for y in (14, 15):
            i = ((r * 16 + y) * w + c * 8) * 3
            px[i:i + 24] = b"\xff" * 24
    return b"P6\n# drawn by test_screen\n%d %d\n255\n" % (w, h) + bytes(px)


def serial_of(lines):
    """A serial log: firmware noise, the banner, the lines (CR LF as the UART sends)."""
    return b"\x1b[2JSeaBIOS\r\nBooting\r\n" + b"".join(
        line.encode() + b"\r\n" for line in ["baremm abc booting"] + lines)


class ScreenTest(unittest.TestCase):
    COLS, ROWS = 20, 6

    def check(self, serial_lines, screen_rows, cursor, min_rows=2, **kw):
        scr = screen.read_screen(draw(screen_rows, self.COLS, self.ROWS, cursor, **kw), FONT)
        return screen.compare(scr, serial_of(serial_lines), min_rows=min_rows)

    def test_font_is_the_generated_one(self):
        """kernel/font8x16.h is what tools/mkfont.py makes from its glyphs (the check
        reads the header, the kernel compiles it)."""
        out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "mkfont.py")],
                             capture_output=True, text=True, check=True).stdout
        with open(os.path.join(ROOT, "kernel", "font8x16.h")) as f:
            self.assertEqual(out, f.read())
        self.assertEqual(len(FONT), 96)     # 95 printable characters and the box

    def test_read_back(self):
        rows = ["Hello, world!", "  ok 1 x_y {[]}~|", "\x01"]
        scr = screen.read_screen(draw(rows, self.COLS, self.ROWS, (0, 3)), FONT)
        self.assertEqual([r.rstrip() for r in scr.rows],
                         ["Hello, world!", "  ok 1 x_y {[]}~|", screen.UNKNOWN, "", "", ""])
        self.assertEqual(scr.cursor, (0, 3))
        self.assertEqual(scr.unreadable, [])

    def test_matches_with_wrap_and_scroll(self):
        # 25 and 22 characters wrap at 20; 9 rows of output on 6 screen rows: scrolled
        lines = ["first", "a" * 20 + "bbbbb", "third", "fourth", "BAREMM-END status=pass"]
        want, cur = screen.console_rows(screen.kernel_bytes(serial_of(lines)), self.COLS)
        self.assertEqual(cur, (0, 8))
        shown = ["bbbbb", "third", "fourth", "BAREMM-END status=pa", "ss"]
        self.assertEqual([r.rstrip() for r in want[3:8]], shown)
        self.assertEqual(self.check(lines, shown, (0, 5)), [])
        # long lines cut at the width instead of wrapped: another screen
        p = self.check(lines, ["a" * 20, "third", "fourth", "BAREMM-END status=pa"], (0, 4))
        self.assertEqual(p[0], "screen row 0: '%s', serial output: 'third'" % ("a" * 20))

    def test_unscrolled_screen_missing_early_lines(self):
        # lines printed before the mirror started are not on the screen: still a match
        lines = ["not drawn", "one", "two", "three"]
        self.assertEqual(self.check(lines, ["one", "two", "three"], (0, 3)), [])

    def test_mirror_off_fails(self):
        p = self.check(["one", "two"], [], None)
        self.assertEqual(p, ["no cursor on the screen (the screen is blank: nothing was "
                             "mirrored)"])
        p = self.check(["one", "two"], ["one", "two"], None)
        self.assertEqual(p, ["no cursor on the screen (2 rows with text)"])

    def test_wrong_row_fails(self):
        p = self.check(["one", "two", "three"], ["one", "tw0", "three"], (0, 3))
        self.assertEqual(p, ["screen row 1: 'tw0', serial output: 'two'"])

    def test_stale_row_after_scroll_fails(self):
        # a scroll that forgot the top row leaves an old line there
        lines = ["l%d" % i for i in range(9)]
        p = self.check(lines, ["l0", "l5", "l6", "l7", "l8"], (0, 5))
        self.assertEqual(p, ["screen row 0: 'l0', serial output: 'l4'"])

    def test_missing_tail_fails(self):
        p = self.check(["one", "two", "three"], ["one", "two"], (0, 2))
        self.assertEqual(p, ["screen row 0: 'one', serial output: 'two'",
                             "screen row 1: 'two', serial output: 'three'"])

    def test_too_few_rows_fails(self):
        p = self.check(["one"], ["one"], (0, 1), min_rows=8)
        self.assertEqual(p, ["the cursor is on row 1: fewer than 8 rows to compare"])

    def test_cursor_column(self):
        # output that ends without a newline leaves the cursor after it
        serial = serial_of(["one"]) + b"tw"
        scr = screen.read_screen(draw(["one", "tw"], self.COLS, self.ROWS, (2, 1)), FONT)
        self.assertEqual(screen.compare(scr, serial, min_rows=2), [])
        scr = screen.read_screen(draw(["one", "tw"], self.COLS, self.ROWS, (0, 2)), FONT)
        self.assertIn("cursor in column 0, the serial output leaves it in column 2",
                      screen.compare(scr, serial, min_rows=2))

    def test_unreadable_cells(self):
        ppm = bytearray(draw(["one"], self.COLS, self.ROWS, (0, 1)))
        ppm[-3:] = b"\x80\x80\x80"      # a grey pixel in the last cell
        scr = screen.read_screen(bytes(ppm), FONT)
        self.assertEqual(scr.unreadable, [(self.COLS - 1, self.ROWS - 1,
                                           "a pixel neither black nor white")])
        self.assertTrue(screen.compare(scr, serial_of(["one"]), min_rows=1))
        # a glyph not in the font (a full block)
        ppm = bytearray(draw(["one"], self.COLS, self.ROWS, (0, 1)))
        header = len(ppm) - self.COLS * 8 * self.ROWS * 16 * 3
        for y in range(16):
            i = header + (y * self.COLS * 8 + 8 * 5) * 3
            ppm[i:i + 24] = b"\xff" * 24
        scr = screen.read_screen(bytes(ppm), FONT)
        self.assertEqual(scr.unreadable, [(5, 0, "no glyph of the kernel font")])
        # ink right of the last whole cell
        ppm = bytearray(draw(["one"], self.COLS, self.ROWS, (0, 1), extra_w=4))
        ppm[-3:] = b"\xff\xff\xff"
        scr = screen.read_screen(bytes(ppm), FONT)
        self.assertEqual(scr.unreadable[0][2], "pixels outside the 20x6 cell grid")

    def test_console_rows(self):
        rows, cur = screen.console_rows(b"a\tb\r\nxy\bz\n" + b"c" * 20 + b"\n", 20)
        self.assertEqual([r.rstrip() for r in rows], ["a       b", "xz", "c" * 20, ""])
        self.assertEqual(cur, (0, 3))
        rows, cur = screen.console_rows(b"c" * 21, 20)
        self.assertEqual([r.rstrip() for r in rows], ["c" * 20, "c"])
        self.assertEqual(cur, (1, 1))

    def test_long_lines(self):
        serial = serial_of(["BAREMM-RESULT " + "x" * 30, "table " + "-" * 20, "short"])
        self.assertEqual(screen.long_lines(serial, 20, r"^(?!BAREMM-)"), ["table " + "-" * 20])

    def test_bad_ppm(self):
        for data in (b"P5\n1 1\n255\n\0", b"P6\n2 2\n255\n\0\0\0", b"P6\n1 1\n65535\n\0" * 6,
                     b"P6\n"):
            with self.assertRaises(screen.ScreenError):
                screen.read_ppm(data)

    def test_cfg(self):
        e = cfg.parse("[a]\nscreendump=yes\nscreen_fit=^x\n")[0]
        self.assertTrue(e["screendump"])
        self.assertEqual(e["screen_fit"], "^x")
        with self.assertRaises(cfg.CfgError):
            cfg.parse("[a]\nscreen_fit=^x\n")


class CheckScreenTest(unittest.TestCase):
    """testrun.check_screen: what a matrix entry with screendump=yes reports."""

    def run_check(self, lines, rows, cursor, cols=20, fit=None, dump=None):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        with open(os.path.join(d, "screen.ppm"), "wb") as f:
            f.write(draw(rows, cols, 10, cursor))
        with open(os.path.join(d, "serial.log"), "wb") as f:
            f.write(serial_of(lines))
        rec = {"qemu": {"screendump": dump or {"path": "screen.ppm", "error": None}}}
        return testrun.check_screen({"screendump": True, "screen_fit": fit}, rec, d), d

    def test_pass_and_text_file(self):
        lines = ["l%d" % i for i in range(12)]
        p, d = self.run_check(lines, lines[3:], (0, 9), fit=r"^(?!BAREMM-)")
        self.assertEqual(p, [])
        with open(os.path.join(d, "screen.txt")) as f:
            self.assertEqual(f.read().split("\n")[:2], ["l3", "l4"])

    def test_table_too_wide(self):
        lines = ["l%d" % i for i in range(8)] + ["BAREMM-RESULT x=1", "table " + "-" * 20]
        rows, _ = screen.console_rows(screen.kernel_bytes(serial_of(lines)), 20)
        p, _ = self.run_check(lines, [r.rstrip() for r in rows[-10:-1]], (0, 9),
                              fit=r"^(?!BAREMM-)")
        self.assertEqual(p, ["screen: a line of 26 characters wraps on the 20-column screen: "
                             "'table --------------------'"])

    def test_no_dump(self):
        p, _ = self.run_check(["x"], ["x"], (0, 1),
                              dump={"path": None, "error": "screendump: QMP screendump: x"})
        self.assertEqual(p, ["screendump: QMP screendump: x"])


class FakeProc:
    """What ScreenDump needs of a Popen: poll(), and terminate/kill/wait for _stop."""

    def __init__(self):
        self.stopped = False

    def poll(self):
        return 0 if self.stopped else None

    def terminate(self):
        self.stopped = True

    kill = terminate

    def wait(self, timeout=None):
        return 0


class QmpTest(unittest.TestCase):
    def serve(self, script):
        """A one-connection QMP server on a unix socket; script(conn_file) talks."""
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        path = os.path.join(d, "qmp.sock")
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(path)
        srv.listen(1)
        self.seen = []

        def run():
            conn, _ = srv.accept()
            f = conn.makefile("rwb")
            try:
                script(f)
            finally:
                f.close()
                conn.close()
                srv.close()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return path, os.path.join(d, "screen.ppm"), t

    def expect(self, f, cmd, reply):
        msg = json.loads(f.readline())
        self.seen.append(msg["execute"])
        self.assertEqual(msg["execute"], cmd)
        f.write(json.dumps(reply).encode() + b"\n")
        f.flush()
        return msg

    def test_dump_on_shutdown_then_quit(self):
        def script(f):
            f.write(b'{"QMP": {}}\n')
            f.flush()
            self.expect(f, "qmp_capabilities", {"return": {}})
            f.write(b'{"event": "RESET"}\n{"event": "SHUTDOWN", "data": {"guest": true}}\n')
            f.flush()
            msg = self.expect(f, "screendump", {"return": {}})
            self.assertEqual(msg["arguments"]["format"], "ppm")
            self.expect(f, "quit", {"return": {}})
        sock, ppm, t = self.serve(script)
        proc = FakeProc()
        d = runner.ScreenDump(sock, ppm)
        d.run(proc, time.monotonic() + 10)
        t.join(5)
        self.assertEqual(self.seen, ["qmp_capabilities", "screendump", "quit"])
        self.assertTrue(d.taken)
        self.assertIsNone(d.error)
        self.assertFalse(proc.stopped)      # QEMU quits by itself

    def test_error_stops_qemu(self):
        def script(f):
            f.write(b'{"QMP": {}}\n')
            f.flush()
            self.expect(f, "qmp_capabilities", {"return": {}})
            f.write(b'{"event": "SHUTDOWN"}\n')
            f.flush()
            self.expect(f, "screendump", {"error": {"desc": "no console"}})
        sock, ppm, t = self.serve(script)
        proc = FakeProc()
        d = runner.ScreenDump(sock, ppm)
        d.run(proc, time.monotonic() + 10)
        t.join(5)
        self.assertFalse(d.taken)
        self.assertEqual(d.error, "screendump: QMP screendump: no console")
        self.assertTrue(proc.stopped)       # a paused machine is not left waiting

    def test_connection_closed_early(self):
        def script(f):
            f.write(b'{"QMP": {}}\n')
            f.flush()
        sock, ppm, t = self.serve(script)
        proc = FakeProc()
        d = runner.ScreenDump(sock, ppm)
        d.run(proc, time.monotonic() + 10)
        self.assertEqual(d.error, "QMP connection closed before the screendump")
        self.assertTrue(proc.stopped)


if __name__ == "__main__":
    unittest.main()
