"""Symbolize Linux-style backtrace frames ` [<ffffffff80201234>]` with addr2line."""
import os
import re
import subprocess

FRAME_RE = re.compile(r"\[<([0-9a-fA-F]{8,16})>\]")
ADDR2LINE = "addr2line"


class SymbolizeError(Exception):
    pass


ELF_TAG = b"baremm-build-id:"
LOG_ID_RES = (re.compile(r"^BAREMM-MACHINE .*\bbuild=(\S+)"),
              re.compile(r"^baremm (\S+) booting\b"))


def elf_build_id(elf):
    """The build id kernel/version.c stores in the ELF, or None."""
    try:
        with open(elf, "rb") as f:
            data = f.read()
    except OSError:
        return None
    i = data.find(ELF_TAG)
    if i < 0:
        return None
    end = data.find(b"\0", i)
    return data[i + len(ELF_TAG):end].decode("ascii", "replace")


def log_build_id(lines):
    """The build id a serial log names (BAREMM-MACHINE build=, or the boot banner)."""
    for rx in LOG_ID_RES:
        for line in lines:
            m = rx.search(line.strip("\r\n").lstrip("\x1b"))
            if m:
                return m.group(1)
    return None


def check_build_id(lines, elf):
    """(ok, message): ok False when the log and the ELF name different builds; the
    message also warns when a match cannot be proved (unknown or dirty-tree ids)."""
    lid, eid = log_build_id(lines), elf_build_id(elf)
    if lid is None:
        return True, "the log names no build id; cannot check that %s is the kernel that ran" % elf
    if eid is None:
        return True, "%s carries no build id; cannot check it against the log's %s" % (elf, lid)
    if lid != eid:
        return False, ("the log is from build %s but %s is build %s: its addresses would name "
                       "the wrong functions (rebuild that commit, or pass --elf)" % (lid, elf, eid))
    if lid.endswith("-dirty") or lid == "unknown":
        return True, ("build id %s: a tree with uncommitted changes, so the ids match without "
                      "proving the ELF is the one that ran" % lid)
    return True, None


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
