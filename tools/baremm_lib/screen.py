"""The framebuffer mirror, checked from outside: read a QEMU screendump (PPM) back into
text with the kernel's own font and compare it with the serial log.

The kernel (kernel/fbcon.c) draws every byte it prints over serial into 8x16 cells, white
glyphs on black, cell (col, row) at pixel (8*col, 16*row). So each cell of a screendump is
either exactly one glyph of kernel/font8x16.h (or fbcon.c's box for a byte outside printable
ASCII), or that with the cursor (its last two pixel rows white). Anything else - a colour,
grey, a glyph the font does not have, text off the cell grid - is an unreadable cell and a
failure. The serial bytes run through a model of the console (wrap at the last column,
'\\r', '\\t', '\\b', scrolling) give the screen the kernel should have left; the check is
that the screendump shows exactly its last rows, up to the cursor.
"""
import os
import re

from . import runner

FONT_W, FONT_H = 8, 16
CURSOR_ROWS = 2          # kernel/fbcon.c CURSOR_ROW: the cell's last two pixel rows
UNKNOWN = "\ufffd"       # fbcon's box for a byte outside 0x20-0x7e
UNREADABLE = "\u2593"    # a cell that is no glyph of the font

GLYPH_RE = re.compile(r"^\s*\{([^}]*)\},\s*/\* 0x([0-9a-f]{2}) ", re.M)
UNKNOWN_RE = re.compile(r"glyph_unknown\[FONT_H\]\s*=\s*\{([^}]*)\}")


class ScreenError(Exception):
    pass


def _bytes_list(s):
    return tuple(int(v, 0) for v in s.replace("\n", " ").split(",") if v.strip())


def load_font(root=None):
    """{16 row bytes: character} from the kernel's own sources: kernel/font8x16.h (what
    tools/mkfont.py generated and the kernel compiles) and the box of kernel/fbcon.c."""
    root = root or runner.ROOT
    with open(os.path.join(root, "kernel", "font8x16.h")) as f:
        header = f.read()
    with open(os.path.join(root, "kernel", "fbcon.c")) as f:
        m = UNKNOWN_RE.search(f.read())
    font = {}
    for rows, code in GLYPH_RE.findall(header):
        rows = _bytes_list(rows)
        if len(rows) != FONT_H:
            raise ScreenError("font8x16.h: glyph 0x%s has %d rows" % (code, len(rows)))
        if rows in font and chr(int(code, 16)) != " ":
            raise ScreenError("font8x16.h: glyphs %r and %r are identical"
                              % (font[rows], chr(int(code, 16))))
        font[rows] = chr(int(code, 16))
    if len(font) != 0x7f - 0x20:
        raise ScreenError("font8x16.h: %d glyphs, expected 95" % len(font))
    if not m or len(_bytes_list(m.group(1))) != FONT_H:
        raise ScreenError("kernel/fbcon.c: no glyph_unknown[FONT_H] initialiser")
    font[_bytes_list(m.group(1))] = UNKNOWN
    return font


def read_ppm(data):
    """(width, height, RGB bytes) of a binary PPM (P6, maxval 255) as QEMU writes it."""
    fields = []
    pos = 0
    while len(fields) < 4:
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while end < len(data) and not data[end:end + 1].isspace():
            end += 1
        if end == pos:
            raise ScreenError("PPM header cut short")
        fields.append(data[pos:end])
        pos = end
    pos += 1    # the one whitespace byte before the pixels
    if fields[0] != b"P6":
        raise ScreenError("not a binary PPM (magic %r)" % fields[0])
    try:
        w, h, maxval = (int(x) for x in fields[1:])
    except ValueError:
        raise ScreenError("PPM header: bad size %r" % fields[1:])
    if maxval != 255:
        raise ScreenError("PPM maxval %d, expected 255" % maxval)
    if len(data) - pos < w * h * 3:
        raise ScreenError("PPM has %d pixel bytes, %dx%d needs %d"
                          % (len(data) - pos, w, h, w * h * 3))
    return w, h, data[pos:pos + w * h * 3]


class Screen:
    """The text on a screendump: rows (strings of cols characters), the cursor cell
    (col, row) or None, and the unreadable cells [(col, row, why)]."""

    def __init__(self, cols, rows, text, cursor, unreadable):
        self.cols = cols
        self.nrows = rows
        self.rows = text
        self.cursor = cursor
        self.unreadable = unreadable


def read_screen(ppm, font):
    """Recognise every cell of a screendump with the kernel font."""
    w, h, px = read_ppm(ppm)
    cols, nrows = w // FONT_W, h // FONT_H
    if not cols or not nrows:
        raise ScreenError("a %dx%d screen holds no %dx%d cell" % (w, h, FONT_W, FONT_H))
    stride = w * 3
    white, black = b"\xff\xff\xff", b"\x00\x00\x00"
    # each pixel row of the screen as a string of '0'/'1'/'?' (neither black nor white)
    bits = []
    for y in range(h):
        line = px[y * stride:(y + 1) * stride]
        bits.append("".join("1" if line[i:i + 3] == white else "0" if line[i:i + 3] == black
                            else "?" for i in range(0, stride, 3)))
    unreadable = []
    # nothing may be drawn outside the cell grid (right and bottom margins)
    for y in range(h):
        if "1" in bits[y][cols * FONT_W:] or "?" in bits[y][cols * FONT_W:] or \
                (y >= nrows * FONT_H and bits[y].strip("0")):
            unreadable.append((None, y, "pixels outside the %dx%d cell grid" % (cols, nrows)))
            break
    text, cursor = [], None
    for r in range(nrows):
        row = []
        for c in range(cols):
            cell = [bits[r * FONT_H + i][c * FONT_W:(c + 1) * FONT_W] for i in range(FONT_H)]
            if any("?" in s for s in cell):
                row.append(UNREADABLE)
                unreadable.append((c, r, "a pixel neither black nor white"))
                continue
            glyph = tuple(int(s, 2) for s in cell)
            ch = font.get(glyph)
            if ch is None and glyph[-CURSOR_ROWS:] == (0xff,) * CURSOR_ROWS:
                # the cursor overwrites the cell's last rows: match the rows above it
                top = glyph[:-CURSOR_ROWS]
                # ('_' under the cursor looks like ' ': the cursor sits after the text)
                hits = {v for k, v in font.items() if k[:-CURSOR_ROWS] == top}
                if cursor is None and (len(hits) == 1 or " " in hits):
                    ch = " " if " " in hits else hits.pop()
                    cursor = (c, r)
            if ch is None:
                row.append(UNREADABLE)
                unreadable.append((c, r, "no glyph of the kernel font"))
            else:
                row.append(ch)
        text.append("".join(row))
    return Screen(cols, nrows, text, cursor, unreadable)


def console_rows(data, cols):
    """The rows a console of @cols columns shows after printing @data (bytes), with no
    limit on height, and the cursor (col, row): kernel/fbcon.c's rules. A character in
    the column after the last moves to the next row first; '\\n' starts the next row; '\\r'
    returns to column 0; '\\t' goes to the next multiple of 8; '\\b' steps back."""
    rows = [[" "] * cols]
    x = y = 0
    for b in data:
        if b == 0x0a:
            x, y = 0, y + 1
            rows.append([" "] * cols)
        elif b == 0x0d:
            x = 0
        elif b == 0x09:
            x = min((x + 8) & ~7, cols)
        elif b == 0x08:
            x = max(x - 1, 0)
        else:
            if x >= cols:
                x, y = 0, y + 1
                rows.append([" "] * cols)
            rows[y][x] = chr(b) if 0x20 <= b <= 0x7e else UNKNOWN
            x += 1
    return ["".join(r) for r in rows], (x, y)


# the kernel's first line (under UEFI GRUB leaves a '\r' before it)
KERNEL_BANNER_RE = re.compile(rb"baremm \S+ booting\r?\n")


def kernel_bytes(serial):
    """The kernel's part of a serial log (from its banner line); '\\r' of '\\r\\n' kept,
    which moves the cursor to column 0 as the '\\n' after it does."""
    m = KERNEL_BANNER_RE.search(serial)
    if not m:
        raise ScreenError("no `baremm ... booting` line in the serial log")
    return serial[m.start():]


def compare(screen, serial, min_rows=8):
    """Problems (strings) of a screen against the serial log (bytes); [] when the screen
    shows the serial output's last rows exactly, ending with the cursor."""
    problems = []
    for c, r, why in screen.unreadable[:5]:
        problems.append("screen cell %s: %s" % ("(%d, %d)" % (c, r) if c is not None
                                                 else "row %d" % r, why))
    if len(screen.unreadable) > 5:
        problems.append("... %d unreadable cells in all" % len(screen.unreadable))
    if screen.cursor is None:
        shown = sum(1 for r in screen.rows if r.strip(" "))
        problems.append("no cursor on the screen (%s)" % (
            "the screen is blank: nothing was mirrored" if not shown else
            "%d rows with text" % shown))
        return problems
    expect, (ex, ey) = console_rows(kernel_bytes(serial), screen.cols)
    cx, cy = screen.cursor
    if cx != ex:
        problems.append("cursor in column %d, the serial output leaves it in column %d"
                        % (cx, ex))
    if cy + 1 < min_rows:
        problems.append("the cursor is on row %d: fewer than %d rows to compare"
                        % (cy, min_rows))
    first = ey - cy     # the serial row shown on the screen's top row
    for r in range(screen.nrows):
        got = screen.rows[r].rstrip(" ")
        want = expect[first + r].rstrip(" ") if 0 <= first + r <= ey else ""
        if got != want:
            problems.append("screen row %d: %r, serial output: %r" % (r, got, want))
            if len(problems) >= 12:
                problems.append("(further rows not compared)")
                break
    return problems


def long_lines(serial, cols, pattern=None):
    """Lines of the kernel's output longer than @cols that match @pattern (a regex):
    they wrap on the screen."""
    out = []
    for line in kernel_bytes(serial).decode("ascii", "replace").split("\n"):
        line = line.rstrip("\r")
        if len(line) > cols and (pattern is None or re.search(pattern, line)):
            out.append(line)
    return out
