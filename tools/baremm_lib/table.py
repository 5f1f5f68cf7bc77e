"""Tables of the host tools: one column description, printed as aligned text or Markdown.

A table is a list of Column and rows of cells (anything str() prints). Aligned text pads
every cell to its column's width (the widest of its head and cells, or a fixed width, which
a wider cell overflows as printf's %Ns does), joins the cells with a separator and drops
trailing blanks; a rule row of dashes under the head is optional. Markdown pipes the same
cells and aligns the columns with `---` (left) or `---:` (right).
"""
from dataclasses import dataclass
from typing import Optional

LEFT = "left"
RIGHT = "right"


@dataclass(frozen=True)
class Column:
    head: str
    align: str = RIGHT
    width: Optional[int] = None     # None: the widest cell; else at least this, no wider

    def __post_init__(self):
        if self.align not in (LEFT, RIGHT):
            raise ValueError("column %r: align must be %r or %r" % (self.head, LEFT, RIGHT))


def columns(heads, left=()):
    """Columns for heads; those whose index is in left are left-aligned, the rest right."""
    return [Column(str(h), LEFT if i in left else RIGHT) for i, h in enumerate(heads)]


def _check(cols, rows):
    for r in rows:
        if len(r) != len(cols):
            raise ValueError("a row of %d cells in a table of %d columns" % (len(r), len(cols)))


def widths(cols, rows):
    return [c.width if c.width is not None else
            max([len(c.head)] + [len(str(r[i])) for r in rows]) for i, c in enumerate(cols)]


def text_lines(cols, rows, sep="  ", rule=False, head=True):
    """The lines (without newlines) of an aligned-text table."""
    rows = [[str(x) for x in r] for r in rows]
    _check(cols, rows)
    w = widths(cols, rows)
    out = []
    if head:
        out.append([c.head for c in cols])
    if rule:
        out.append(["-" * n for n in w])
    out += rows
    return [sep.join(x.ljust(w[i]) if cols[i].align == LEFT else x.rjust(w[i])
                     for i, x in enumerate(r)).rstrip() for r in out]


def text(cols, rows, sep="  ", rule=False, head=True):
    """text_lines() as one string, every line ending in a newline."""
    return "".join(line + "\n" for line in text_lines(cols, rows, sep, rule, head))


def _md_cell(x):
    return str(x).replace("|", "\\|")


def markdown(cols, rows):
    """A Markdown table (no final newline); a | inside a cell is escaped."""
    _check(cols, rows)
    out = ["| " + " | ".join(_md_cell(c.head) for c in cols) + " |",
           "|" + "|".join("---" if c.align == LEFT else "---:" for c in cols) + "|"]
    out += ["| " + " | ".join(_md_cell(x) for x in r) + " |" for r in rows]
    return "\n".join(out)
