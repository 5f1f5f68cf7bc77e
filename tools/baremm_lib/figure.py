"""A figure's identity: which benchmark, metric, case, CPU count and variant a median is of.

Its one text form, `format()`, is what the tools print and what tests/perf/baseline*.json
use as keys:

    [<entry>: ]<bench>.<metric>[[<case>]] cpus=<N>[ [<variant>]]

e.g. `vm-1cpu: vm.sparse_tables.table[gib:1] cpus=1` or
`alloc-pcp-1cpu: alloc.order0_pair.pair cpus=1 [pcp:on]`. The entry is the perf.cfg
entry that measured it (perf-check only); the case is the `case=<name>:<value>` of a
benchmark with parameters; the variant is the RESULT line's `variant=` (`default`: none,
not printed). `parse()` is the inverse of `format()`: the fields reject the characters
that would make a text ambiguous, so parse(f.format()) == f for every Figure and
parse(s).format() == s for every text parse accepts. The mode a figure was measured in
(TCG, icount, a cost-model profile) is not part of it: it selects the file a figure is
stored in (perfcheck.model_baseline, experiment.data_name).
"""
import re
from dataclasses import dataclass, replace

DEFAULT_VARIANT = "default"

_ID_RE = re.compile(r"(?:(?P<entry>[^:]+): )?(?P<bench>[^\s\[\]:]+)\.(?P<metric>[^\s.\[\]:]+)"
                    r"(?:\[(?P<case>[^\s\[\]]+)\])? cpus=(?P<cpus>0|[1-9][0-9]*)"
                    r"(?: \[(?P<variant>\S+)\])?")
_METRIC_RE = re.compile(r"(?P<metric>[^\s.\[\]:]+)(?:\[(?P<case>[^\s\[\]]+)\])?")


def fold_metric(metric, case=""):
    """A metric and its case (name:value, "" for none) -> `metric[case]`, the metric of a
    parsed result: each case of a benchmark with parameters is its own figure."""
    return "%s[%s]" % (metric, case) if case else metric


def split_metric(m):
    """A result's metric, with the case folded in (`batch[pages:10000]`) -> (metric, case);
    case is "" when there is none."""
    mo = _METRIC_RE.fullmatch(m)
    if not mo:
        raise ValueError("metric %r: expected <name> or <name>[<case>]" % m)
    return mo.group("metric"), mo.group("case") or ""


def format_variant(options):
    """{option: value} -> the variant string of a RESULT line (`default` when empty)."""
    if not options:
        return DEFAULT_VARIANT
    return ",".join("%s:%s" % kv for kv in options.items())


def parse_variant(s):
    """A variant string -> {option: value} (insertion ordered); `default` -> {}."""
    if s == DEFAULT_VARIANT:
        return {}
    out = {}
    for part in s.split(","):
        k, sep, v = part.partition(":")
        if not sep or not k:
            raise ValueError("variant=%r: expected 'default' or opt:val[,opt:val...]" % s)
        if k in out:
            raise ValueError("variant=%r names option %r twice" % (s, k))
        out[k] = v
    return out


def _bad(what, value, why):
    raise ValueError("figure %s %r: %s" % (what, value, why))


@dataclass(frozen=True)
class Figure:
    bench: str
    metric: str                     # without the case
    cpus: int
    case: str = ""                  # "<name>:<value>" of a benchmark with parameters
    variant: str = DEFAULT_VARIANT
    entry: str = ""                 # the perf.cfg entry ("" outside perf-check)

    def __post_init__(self):
        if not re.fullmatch(r"[^\s\[\]:]+", self.bench or ""):
            _bad("bench", self.bench, "empty, or a blank, bracket or colon in it")
        if not re.fullmatch(r"[^\s.\[\]:]+", self.metric or ""):
            _bad("metric", self.metric, "empty, or a blank, dot, bracket or colon in it")
        if self.case and not re.fullmatch(r"[^\s\[\]]+", self.case):
            _bad("case", self.case, "a blank or bracket in it")
        if not isinstance(self.cpus, int) or isinstance(self.cpus, bool) or self.cpus < 0:
            _bad("cpus", self.cpus, "not a count")
        if not re.fullmatch(r"\S+", self.variant or ""):
            _bad("variant", self.variant, "empty, or a blank in it")
        if self.entry and (":" in self.entry or self.entry != self.entry.strip()
                           or "\n" in self.entry):
            _bad("entry", self.entry, "a colon, or blanks around it")

    @classmethod
    def of(cls, r, entry=""):
        """The figure of a parsed result (logparse: bench, metric with the case folded in,
        cpus, variant)."""
        metric, case = split_metric(r["metric"])
        return cls(r["bench"], metric, r["cpus"], case, r.get("variant", DEFAULT_VARIANT),
                   entry)

    @classmethod
    def parse(cls, s):
        mo = _ID_RE.fullmatch(s)
        if not mo:
            raise ValueError("%r is not a figure (expected [<entry>: ]<bench>.<metric>"
                             "[[<case>]] cpus=<N>[ [<variant>]])" % s)
        if mo.group("variant") == DEFAULT_VARIANT:
            raise ValueError("%r: the default variant is not written" % s)
        return cls(mo.group("bench"), mo.group("metric"), int(mo.group("cpus")),
                   mo.group("case") or "", mo.group("variant") or DEFAULT_VARIANT,
                   mo.group("entry") or "")

    @property
    def full_metric(self):
        """The metric with the case folded in, as a parsed result's "metric"."""
        return fold_metric(self.metric, self.case)

    @property
    def param(self):
        """(name, value) of the case, or (None, None) without one."""
        name, sep, value = self.case.partition(":")
        return (name, value) if sep else (None, None)

    @property
    def options(self):
        """The variant as {option: value}."""
        return parse_variant(self.variant)

    def name(self, with_variant=True):
        """The figure without its entry: `<bench>.<metric>[[<case>]] cpus=<N>[ [<variant>]]`."""
        s = "%s.%s cpus=%d" % (self.bench, self.full_metric, self.cpus)
        if with_variant and self.variant != DEFAULT_VARIANT:
            s += " [%s]" % self.variant
        return s

    def format(self):
        return "%s: %s" % (self.entry, self.name()) if self.entry else self.name()

    __str__ = format

    def group(self):
        """The figure without variant and entry: what the variants of an A/B share."""
        return replace(self, variant=DEFAULT_VARIANT, entry="")

    def with_variant(self, variant):
        return replace(self, variant=variant)
