"""Symbolize Linux-style backtrace frames ` [<ffffffff80201234>]` with addr2line."""
import os
import re
import subprocess

FRAME_RE = re.compile(r"\[<([0-9a-fA-F]{8,16})>\]")
ADDR2LINE = "addr2line"


class SymbolizeError(Exception):
    pass


def lookup(elf, addrs, root=None):
    """Map each int address to a list of (function, 'file:line') frames, innermost first
    (more than one when addr2line reports inlining)."""
    if not addrs:
        return {}
    if not os.path.exists(elf):
        raise SymbolizeError("ELF %s not found (build it with make)" % elf)
    uniq = sorted(set(addrs))
    try:
        r = subprocess.run([ADDR2LINE, "-a", "-f", "-i", "-C", "-e", elf]
                           + ["0x%x" % a for a in uniq], capture_output=True, text=True)
    except FileNotFoundError:
        raise SymbolizeError("addr2line not found (Debian package binutils)")
    if r.returncode != 0:
        raise SymbolizeError("addr2line failed: %s" % r.stderr.strip())
    out = {}
    cur = None
    lines = r.stdout.splitlines()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if re.match(r"^0x[0-9a-fA-F]+$", ln):
            cur = int(ln, 16)
            out[cur] = []
            i += 1
            continue
        func = ln
        loc = lines[i + 1] if i + 1 < len(lines) else "??:0"
        loc = re.sub(r" \(discriminator \d+\)$", "", loc)
        if root and loc.startswith(root.rstrip("/") + "/"):
            loc = loc[len(root.rstrip("/")) + 1:]
        if cur is not None:
            out[cur].append((func, loc))
        i += 2
    return out


def symbolize_lines(lines, elf, root=None):
    """Return the lines with every frame line extended by `function at file:line`.

    Frames are return addresses, so addr - 1 is looked up (the call instruction), except
    on lines that mention RIP (the faulting instruction itself).
    """
    wanted = []
    for line in lines:
        for m in FRAME_RE.finditer(line):
            a = int(m.group(1), 16)
            wanted.append(a if "RIP" in line else a - 1)
    table = lookup(elf, wanted, root=root)
    out = []
    for line in lines:
        ms = list(FRAME_RE.finditer(line))
        if not ms:
            out.append(line)
            continue
        base = line.rstrip("\n")
        nl = "\n" if line.endswith("\n") else ""
        descs = []
        for m in ms:
            a = int(m.group(1), 16)
            frames = table.get(a if "RIP" in line else a - 1, [])
            if not frames or frames[0][0] == "??":
                descs.append("?")
                continue
            descs.append(" (inlined by) ".join("%s at %s" % f for f in frames))
        out.append(base + " " + "; ".join(descs) + nl)
    return out
