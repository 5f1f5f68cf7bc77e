"""tests/qemu/matrix.cfg and suites.cfg: kvm-unit-tests unittests.cfg style.

    # comment
    [name]
    cmdline=tests=*
    smp=2
    mem=512M
    cpu=max
    firmware=bios|uefi
    accel=tcg|kvm|auto
    icount=yes|no
    timeout=120
    expect=pass
    expect_output=<regex>
    ktap=required|optional
    groups=quick tests

Values run to the end of the line (a cmdline may contain '=' and '#'); only lines whose
first non-blank character is '#' or ';' are comments. Unknown keys are errors.
"""
import re

from .status import ALL_STATUSES

DEFAULTS = {
    "cmdline": None, "smp": 1, "mem": "512M", "cpu": "max", "firmware": "bios",
    "accel": "tcg", "icount": False, "timeout": 120, "expect": "pass",
    "expect_output": None, "ktap": None, "groups": [],
}
KEYS = tuple(DEFAULTS)
NAME_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
MEM_RE = re.compile(r"^\d+[KMGT]?$", re.IGNORECASE)


class CfgError(Exception):
    pass


def parse_bool(s):
    v = s.strip().lower()
    if v in ("1", "yes", "true", "on", "y"):
        return True
    if v in ("0", "no", "false", "off", "n", ""):
        return False
    raise ValueError("not a boolean: %r" % s)


def parse(text, path="<cfg>"):
    """Return a list of entry dicts (in file order), each with every key of DEFAULTS."""
    entries = []
    cur = None
    seen = set()

    def err(ln, msg):
        raise CfgError("%s:%d: %s" % (path, ln, msg))

    for ln, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                err(ln, "section header must be [name]")
            name = line[1:-1].strip()
            if not NAME_RE.match(name):
                err(ln, "bad entry name %r (letters, digits, _ . + - only)" % name)
            if name in seen:
                err(ln, "duplicate entry [%s]" % name)
            seen.add(name)
            cur = dict(DEFAULTS, name=name, groups=[], line=ln)
            entries.append(cur)
            continue
        if "=" not in line:
            err(ln, "expected key=value, got %r" % line)
        if cur is None:
            err(ln, "key=value before the first [name] section")
        key, val = line.split("=", 1)
        key, val = key.strip(), val.strip()
        if key not in KEYS:
            err(ln, "unknown key %r (known: %s)" % (key, ", ".join(KEYS)))
        try:
            if key in ("smp", "timeout"):
                v = int(val)
                if v <= 0:
                    raise ValueError("must be > 0")
                cur[key] = v
            elif key == "icount":
                cur[key] = parse_bool(val)
            elif key == "mem":
                if not MEM_RE.match(val):
                    raise ValueError("expected a size like 128M or 6G")
                cur[key] = val
            elif key == "firmware":
                if val not in ("bios", "uefi"):
                    raise ValueError("expected bios or uefi")
                cur[key] = val
            elif key == "accel":
                if val not in ("tcg", "kvm", "auto"):
                    raise ValueError("expected tcg, kvm or auto")
                cur[key] = val
            elif key == "expect":
                if val not in ALL_STATUSES:
                    raise ValueError("expected one of %s" % ", ".join(ALL_STATUSES))
                cur[key] = val
            elif key == "expect_output":
                re.compile(val)
                cur[key] = val
            elif key == "ktap":
                if val not in ("required", "optional"):
                    raise ValueError("expected required or optional")
                cur[key] = val
            elif key == "groups":
                cur[key] = val.split()
            else:
                cur[key] = val
        except (ValueError, re.error) as e:
            err(ln, "%s=%s: %s" % (key, val, e))
    for e in entries:
        if e["ktap"] is None:
            e["ktap"] = "required" if e["expect"] in ("pass", "test_failed") and \
                e["cmdline"] and "tests=" in e["cmdline"] else "optional"
    return entries


def load(path):
    with open(path) as f:
        return parse(f.read(), path)


def select(entries, groups=None, names=None):
    """Entries in any of @groups (or named in @names); all when both are empty."""
    out = []
    for e in entries:
        if names and e["name"] in names:
            out.append(e)
        elif groups and (set(groups) & set(e["groups"]) or e["name"] in groups):
            out.append(e)
        elif not names and not groups:
            out.append(e)
    return out
