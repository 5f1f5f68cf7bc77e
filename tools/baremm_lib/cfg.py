r"""tests/qemu/matrix.cfg and suites.cfg: kvm-unit-tests unittests.cfg style.

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
    cmdline_escaped=tests=boot.*\x00bench=x   (the cmdline with C escapes \xNN \t \v \f \\)
    screendump=yes            (compare the screen at the end with the serial log)
    screen_fit=<regex>        (kernel lines matching it must fit the screen's width)
    kernel=default|contracts  (contracts: the DEBUG_CONTRACTS=1 kernel, build/contracts/)
    boot=grub|direct          (default: direct under icount with the BIOS, else grub;
                               runner.boot_mode)

Values run to the end of the line (a cmdline may contain '=' and '#'); only lines whose
first non-blank character is '#' or ';' are comments. Unknown keys are errors.
"""
import re

from .status import ALL_STATUSES

DEFAULTS = {
    "cmdline": None, "smp": 1, "mem": "512M", "cpu": "max", "firmware": "bios",
    "accel": "tcg", "icount": False, "timeout": 120, "expect": "pass",
    "expect_output": None, "ktap": None, "groups": [], "cmdline_escaped": None,
    "screendump": False, "screen_fit": None, "kernel": "default", "boot": None,
}
KERNELS = ("default", "contracts")
ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|[\\tvfnr0])")
ESCAPES = {"\\": "\\", "t": "\t", "v": "\v", "f": "\f", "n": "\n", "r": "\r", "0": "\0"}


def unescape(s):
    r"""C-style escapes of cmdline_escaped=: \xNN, \t, \v, \f, \n, \r, \0, \\."""
    return ESCAPE_RE.sub(lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "x"
                         else ESCAPES[m.group(1)], s)
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


def read_sections(text, path, error=None):
    """The shared syntax of matrix.cfg, suites.cfg and perf.cfg: '#'/';' comments,
    [name] headers (unique, letters, digits and _ . + -) and key=value lines.
    Yields (line number, section name, None, None) for a header and
    (line number, None, key, value) for a key=value line; errors raise @error
    (default CfgError) with path:line."""
    error = error or CfgError
    seen = set()
    for ln, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise error("%s:%d: section header must be [name]" % (path, ln))
            name = line[1:-1].strip()
            if not NAME_RE.match(name):
                raise error("%s:%d: bad entry name %r (letters, digits, _ . + - only)"
                            % (path, ln, name))
            if name in seen:
                raise error("%s:%d: duplicate entry [%s]" % (path, ln, name))
            seen.add(name)
            yield ln, name, None, None
            continue
        if "=" not in line:
            raise error("%s:%d: expected key=value, got %r" % (path, ln, line))
        key, val = line.split("=", 1)
        yield ln, None, key.strip(), val.strip()


def parse(text, path="<cfg>"):
    """Return a list of entry dicts (in file order), each with every key of DEFAULTS."""
    entries = []
    cur = None

    def err(ln, msg):
        raise CfgError("%s:%d: %s" % (path, ln, msg))

    for ln, name, key, val in read_sections(text, path):
        if name is not None:
            cur = dict(DEFAULTS, name=name, groups=[], line=ln)
            entries.append(cur)
            continue
        if cur is None:
            err(ln, "key=value before the first [name] section")
        if key not in KEYS:
            err(ln, "unknown key %r (known: %s)" % (key, ", ".join(KEYS)))
        try:
            if key in ("smp", "timeout"):
                v = int(val)
                if v <= 0:
                    raise ValueError("must be > 0")
                cur[key] = v
            elif key in ("icount", "screendump"):
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
                if val not in ("tcg", "tcg-single", "tcg-multi", "kvm", "auto"):
                    raise ValueError("expected tcg, tcg-single, tcg-multi, kvm or auto")
                cur[key] = val
            elif key == "boot":
                if val not in ("grub", "direct"):
                    raise ValueError("expected grub or direct")
                cur[key] = val
            elif key == "kernel":
                if val not in KERNELS:
                    raise ValueError("expected %s" % " or ".join(KERNELS))
                cur[key] = val
            elif key == "expect":
                if val not in ALL_STATUSES:
                    raise ValueError("expected one of %s" % ", ".join(ALL_STATUSES))
                cur[key] = val
            elif key in ("expect_output", "screen_fit"):
                re.compile(val)
                cur[key] = val
            elif key == "ktap":
                if val not in ("required", "optional"):
                    raise ValueError("expected required or optional")
                cur[key] = val
            elif key == "groups":
                cur[key] = val.split()
            elif key == "cmdline_escaped":
                cur["cmdline"] = unescape(val)
                cur[key] = val
            else:
                cur[key] = val
        except (ValueError, re.error) as e:
            err(ln, "%s=%s: %s" % (key, val, e))
    for e in entries:
        if e["screen_fit"] and not e["screendump"]:
            err(e["line"], "screen_fit= needs screendump=yes")
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


def unknown_selection(entries, groups=None, names=None):
    """Messages for each of @groups and @names that selects nothing (a typo must not pass
    as an empty selection)."""
    known_groups = sorted({g for e in entries for g in e["groups"]})
    known_names = {e["name"] for e in entries}
    out = []
    for g in groups or []:
        if g not in known_groups and g not in known_names:
            out.append("unknown group %r (groups: %s; repeat --group for several)"
                       % (g, " ".join(known_groups)))
    for n in names or []:
        if n not in known_names:
            close = [k for k in sorted(known_names) if n in k or k in n][:5]
            out.append("no entry named %r%s" % (n, " (did you mean %s?)" % ", ".join(close)
                                                if close else ""))
    return out
