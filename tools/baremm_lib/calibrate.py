"""tools/baremm calibrate: a cost-model profile of the machine this runs on.

tools/native/calibrate.c measures the host from user space and prints every raw figure
(TSC ticks per operation, one value per interleaved round, each round's core clock);
this module turns them into a profile in the format of model/profiles/*.cfg, each value
with a comment naming the measurement that gave it, and writes the raw figures and the
derivation next to it as JSON. Values user space cannot measure (privileged
instructions, interrupts, TLB geometry when CPUID leaf 0x18 is hidden) come from the
published table for the CPU that CPUID names, or from the nearest published profile,
saying which. docs/COSTMODEL.md, "Calibration".

Nothing here adjusts a value to make a result agree: every measured key is a fixed
function of the raw figures (derive()), written down before any comparison.
"""
import json
import os
import statistics
import subprocess
import sys

from . import runner, status as st

NATIVE_SRC = "tools/native/calibrate.c"
NATIVE_DEPS = ("tools/native/native.h", "model/profile.c", "model/model.h")
NATIVE_BIN = "build/tools/calibrate"
HOST_NAME = runner.HOST_PROFILE
RAW_SCHEMA = "baremm-calibrate-raw/1"
OUT_SCHEMA = "baremm-calibrate/1"

# Every key of model/profile.c's table, in its order (the parser rejects a missing one).
KEYS = ("name", "ghz", "base_cpi", "l1d_kib", "l1d_ways", "l1d_lat", "l2_kib", "l2_ways",
        "l2_lat", "llc_kib", "llc_ways", "llc_lat", "mem_lat", "dtlb4k_entries",
        "dtlb4k_ways", "dtlb2m_entries", "dtlb2m_ways", "stlb_entries", "stlb_ways",
        "stlb_lat", "walk_overhead", "atomic", "serialise", "cpuid", "wrmsr", "mov_cr",
        "invlpg", "fence", "irq_roundtrip", "ipi_latency", "pause", "hlt", "rep_line",
        "rep_mem_line", "c2c_lat", "c2c_remote_lat", "sockets", "cores_per_socket")

# Keys user space cannot measure here: taken from the published table or a fallback
# profile. (TLB geometry is measurable only as a cross-check: its reach, not its ways.)
PUBLISHED_KEYS = ("dtlb4k_entries", "dtlb4k_ways", "dtlb2m_entries", "dtlb2m_ways",
                  "stlb_entries", "stlb_ways", "serialise", "wrmsr", "mov_cr", "invlpg",
                  "irq_roundtrip", "ipi_latency", "hlt", "c2c_remote_lat")

_GOLDEN_COVE_TLB = {
    "dtlb4k_entries": (96, "L1 dTLB (loads) 96 entries for 4 KiB pages on Golden Cove, up from "
                       "64 (cpunews.net, Alder Lake architecture analysis p.5) [checked]; "
                       "Intel 248966 (Golden Cove TLB table) [not re-checked]"),
    "dtlb4k_ways": (6, "Intel 248966, Golden Cove TLB table: 6-way [not re-checked]"),
    "dtlb2m_entries": (32, "Intel 248966, Golden Cove TLB table: DTLB 2M/4M 32 entries "
                       "[not re-checked]"),
    "dtlb2m_ways": (4, "Intel 248966, Golden Cove TLB table: 4-way [not re-checked]"),
    "stlb_entries": (2048, "Intel 248966, Golden Cove TLB table: STLB 2048 entries shared by "
                     "4K and 2M/4M pages [not re-checked]"),
    "stlb_ways": (16, "Intel 248966, Golden Cove TLB table: 16-way [not re-checked]"),
}

# (vendor, family, model) -> what is published for that CPU. "fallback" names the
# profile in model/profiles/ that supplies every published key this table lacks.
KNOWN_CPUS = {
    ("GenuineIntel", 6, 0xCF): {
        "cpu": "Intel Emerald Rapids (5th gen Xeon Scalable, Raptor Cove cores)",
        "fallback": "skylake-sp", "values": _GOLDEN_COVE_TLB,
        "note": "Raptor Cove keeps Golden Cove's L1/L2 TLBs; no published figure for "
                "Emerald Rapids was found for the privileged instructions, interrupts or "
                "the cross-socket transfer"},
    ("GenuineIntel", 6, 0x8F): {
        "cpu": "Intel Sapphire Rapids (4th gen Xeon Scalable, Golden Cove cores)",
        "fallback": "skylake-sp", "values": _GOLDEN_COVE_TLB,
        "note": "no published figure for Sapphire Rapids was found for the privileged "
                "instructions, interrupts or the cross-socket transfer"},
    ("GenuineIntel", 6, 0x55): {
        "cpu": "Intel Skylake-SP / Cascade Lake", "fallback": "skylake-sp", "values": {},
        "note": "the skylake-sp profile is this CPU's published profile"},
    ("AuthenticAMD", 0x19, 0x21): {
        "cpu": "AMD Zen 3 (Vermeer)", "fallback": "zen3", "values": {},
        "note": "the zen3 profile is this CPU's published profile"},
    ("AuthenticAMD", 0x19, 0x01): {
        "cpu": "AMD Zen 3 (Milan)", "fallback": "zen3", "values": {},
        "note": "the zen3 profile's core is this CPU's"},
}


class CalibrateError(Exception):
    """The measurement could not be made or turned into a profile."""


# ---------------------------------------------------------------- statistics

def spread(vals):
    """(min, median, max) of per-round values, negatives (not measured) dropped."""
    v = [x for x in vals if x is not None and x >= 0]
    if not v:
        raise CalibrateError("no valid round")
    return min(v), statistics.median(v), max(v)


def cycles(raw, ticks):
    """Per-round ticks -> per-round core cycles, with each round's own clock."""
    cpt = raw["core_per_tsc"]
    if len(ticks) != len(cpt):
        raise CalibrateError("a per-round array has %d values for %d rounds"
                             % (len(ticks), len(cpt)))
    return [t * c if t >= 0 else -1 for t, c in zip(ticks, cpt)]


def column(raw, series, key, i):
    return cycles(raw, [row[i] for row in raw[series][key]])


def fmt_spread(s, unit="cycles", prec=1):
    return "min {0:.{p}f} median {1:.{p}f} max {2:.{p}f} {3}".format(
        s[0], s[1], s[2], unit, p=prec)


# ---------------------------------------------------------------- published values

def read_profile(path):
    """A profile file as {key: (value text, comment)}."""
    out = {}
    with open(path) as f:
        for line in f:
            body, _, comment = line.partition("#")
            if "=" not in body:
                continue
            k, _, v = body.partition("=")
            out[k.strip()] = (v.strip(), comment.strip())
    return out


def published(cpuid, root=None):
    """(values {key: (value, comment)}, statement) for the keys of PUBLISHED_KEYS."""
    root = root or runner.ROOT
    key = (cpuid.get("vendor"), cpuid.get("family"), cpuid.get("model"))
    known = KNOWN_CPUS.get(key)
    ident = "%s family 0x%x model 0x%x stepping %d (%s)" % (
        cpuid.get("vendor"), cpuid.get("family", 0), cpuid.get("model", 0),
        cpuid.get("stepping", 0), cpuid.get("brand", "").strip())
    if known:
        fb = known["fallback"]
        statement = "CPUID names %s: %s; %s; the rest from the %s profile" % (
            ident, known["cpu"], known["note"], fb)
        table = known["values"]
    else:
        fb = "zen3" if cpuid.get("vendor") == "AuthenticAMD" else "skylake-sp"
        statement = ("CPUID names %s: NOT in the table of known CPUs; every unmeasurable "
                     "value falls back to the nearest published profile, %s" % (ident, fb))
        table = {}
    prof = read_profile(os.path.join(root, runner.PROFILE_DIR, fb + ".cfg"))
    vals = {}
    for k in PUBLISHED_KEYS:
        if k in table:
            v, c = table[k]
            vals[k] = (str(v), "published: " + c)
        else:
            v, c = prof[k]
            vals[k] = (v, "no figure for this CPU in the table: %s profile's value (%s)"
                       % (fb, c))
    return vals, statement


# ---------------------------------------------------------------- derivation

def _pick(ws_list, lo, hi):
    """The largest working set in [lo, hi], else the smallest above lo."""
    inside = [w for w in ws_list if lo <= w <= hi]
    if inside:
        return max(inside)
    above = [w for w in ws_list if w >= lo]
    if not above:
        raise CalibrateError("no working set at or above %d KiB" % lo)
    return min(above)


def _cache_level(leaf4, level):
    for c in leaf4:
        if c["level"] == level and c["type"] in ("data", "unified"):
            return c
    raise CalibrateError("CPUID leaf 4 has no level-%d data cache" % level)


def derive(raw, topology=None, root=None):
    """The profile from the raw figures: (entries [(key, value, comment)], header lines,
    derivation dict). A fixed function of the raw figures; no value is chosen by looking
    at anything the profile will be compared with."""
    if raw.get("schema") != RAW_SCHEMA:
        raise CalibrateError("raw figures: schema %r, expected %r"
                             % (raw.get("schema"), RAW_SCHEMA))
    cpuid = raw["cpuid"]
    rounds = raw["rounds"]
    pub, statement = published(cpuid, root)
    v, c = {}, {}          # key -> value, comment
    d = {"published": statement}

    ghz = spread([g * k for g, k in zip(raw["tsc_ghz"], raw["core_per_tsc"])])
    v["ghz"] = "%.2f" % ghz[1]
    c["ghz"] = ("measured: core clock = TSC rate (vs CLOCK_MONOTONIC_RAW, 20 ms) x core "
                "cycles per tick (dependent imul chain, 3 cycles each, best of 20 x 1M), "
                "%d rounds, median; %s" % (rounds, fmt_spread(ghz, "GHz", 2)))
    v["base_cpi"] = "1.00"
    c["base_cpi"] = ("model choice, as in every profile: the dependent latency of a simple "
                     "integer op (1 cycle)")

    # caches: sizes and ways from CPUID leaf 4, latencies from the chase plateaus
    leaf4 = cpuid["leaf4"]
    l1, l2, l3 = (_cache_level(leaf4, n) for n in (1, 2, 3))
    ws = raw["chase"]["ws_kib"]
    lat4k = {w: spread(column(raw, "chase", "ticks_4k", i)) for i, w in enumerate(ws)}
    lat2m = {w: spread(column(raw, "chase", "ticks_2m", i)) for i, w in enumerate(ws)}
    pages = raw["tlb"]["pages"]
    t4k = {n: spread(column(raw, "tlb", "ticks_4k", i)) for i, n in enumerate(pages)}
    t2m = {n: spread(column(raw, "tlb", "ticks_2m", i)) for i, n in enumerate(pages)}
    dtlb_entries = int(pub["dtlb4k_entries"][0])
    stlb_entries = int(pub["stlb_entries"][0])

    thp = raw["thp_fraction"]
    probe = raw.get("page_probe", {})
    probe_note = ""
    if probe.get("lines"):
        p2 = spread(cycles(raw, probe["stride_2m"]))
        p4 = spread(cycles(raw, probe["stride_4k"]))
        split = p2[0] > p4[0] + 2
        d["page_probe"] = {"stride_2m": p2, "stride_4k": p4, "tlb_holds_4k_entries": split}
        probe_note = ("%d L1-resident lines one per 2 MiB of the THP arena cost %.1f cycles, "
                      "one per 4 KiB %.1f: %s" % (
                          probe["lines"], p2[0], p4[0],
                          "the TLB holds 4 KiB entries even for guest huge pages (consistent "
                          "with a hypervisor that maps this VM's memory with 4 KiB pages), so "
                          "the THP buffer does not keep TLB misses out of the chase" if split else
                          "huge pages give 2 MiB TLB entries"))

    for lvl, key, info in ((1, "l1d", l1), (2, "l2", l2), (3, "llc", l3)):
        v[key + "_kib"] = str(info["kib"])
        v[key + "_ways"] = str(info["ways"])
        c[key + "_kib"] = "CPUID leaf 4, level %d: %d sets x %d ways x %d B" % (
            lvl, info["sets"], info["ways"], info["line"])
        c[key + "_ways"] = "CPUID leaf 4, level %d" % lvl

    # L1: half the L1, few pages (every TLB level hits)
    w1 = _pick(ws, 1, l1["kib"] // 2)
    l1_lat = lat4k[w1]
    v["l1d_lat"] = str(round(l1_lat[0]))
    # stlb_lat: an L1 dTLB miss that hits the STLB, from the one-line-per-page chase at
    # page counts above the L1 dTLB's reach whose lines still fit the L1 cache
    base = t4k[min(pages)][0]
    stlb_ns = [n for n in pages if 1.3 * dtlb_entries <= n <= min(stlb_entries // 2, 256)]
    if not stlb_ns:
        raise CalibrateError("no page count between the L1 dTLB's and the STLB's reach")
    stlb_lat = statistics.median(t4k[n][0] - base for n in stlb_ns)
    v["stlb_lat"] = str(max(0, round(stlb_lat)))
    c["stlb_lat"] = ("measured: chase of one line per 4 KiB page (lines L1-resident), %s "
                     "pages minus %d pages (%.1f cycles), median of the minima over %d rounds"
                     % ("/".join(map(str, stlb_ns)), min(pages), base, rounds))
    c["l1d_lat"] = ("measured: random-cycle pointer chase, %d KiB working set (%d pages), "
                    "4 KiB pages, %d rounds x best of 16 x 4096 loads: %s"
                    % (w1, w1 // 4, rounds, fmt_spread(l1_lat)))
    # L2: at least 4x the L1, at most half the L2 and inside the L1 dTLB's reach
    w2 = _pick(ws, 4 * l1["kib"], min(l2["kib"] // 2, dtlb_entries * 4))
    l2_lat = lat4k[w2]
    v["l2_lat"] = str(round(l2_lat[0]))
    c["l2_lat"] = ("measured: same chase, %d KiB working set (%d pages, within the L1 dTLB): "
                   "%s" % (w2, w2 // 4, fmt_spread(l2_lat)))
    # LLC: at least 3x the L2, inside the STLB's reach; every page misses the L1 dTLB, so
    # the STLB hit is subtracted
    w3 = _pick(ws, 3 * l2["kib"], stlb_entries * 4 * 3 // 4)
    llc_raw = lat4k[w3]
    v["llc_lat"] = str(round(llc_raw[0] - stlb_lat))
    c["llc_lat"] = ("measured: same chase, %d KiB working set (%d pages, within the STLB): "
                    "%s, minus stlb_lat" % (w3, w3 // 4, fmt_spread(llc_raw)))

    # plateau edges, cross-checking the CPUID sizes: the first working set whose latency
    # is past the midpoint between two levels
    edges = {}
    for name, size, lo, hi in (("l1d", l1["kib"], l1_lat[0], l2_lat[0]),
                               ("l2", l2["kib"], l2_lat[0], llc_raw[0])):
        mid = (lo + hi) / 2
        past = [w for w in ws if lat2m[w][0] > mid]
        edge = min(past) if past else None
        prev = max([w for w in ws if edge is None or w < edge] or [0])
        ok = edge is not None and size / 2 <= edge <= 4 * size
        edges[name] = {"cpuid_kib": size, "last_below_kib": prev, "first_above_kib": edge,
                       "consistent": ok}
    d["plateau_edges"] = edges
    for name in ("l1d", "l2"):
        e = edges[name]
        c[name + "_kib"] += ("; chase (THP buffer) plateau ends between %s and %s KiB (%s)"
                             % (e["last_below_kib"], e["first_above_kib"],
                                "consistent" if e["consistent"] else "NOT consistent"))
    c["llc_kib"] += ("; not checked against the chase: the host's L3 is shared with other "
                     "tenants, the plateau is not a measure of its size")

    # TLB: reach from the one-line-per-page chase; walk cost from its 4 KiB series at 4x
    # the STLB reach, where data lines and PTEs are L2-resident
    dtlb_edge = next((n for n in pages if t4k[n][0] - base > stlb_lat / 2), None)
    stlb_edge = next((n for n in pages if n > dtlb_entries and t4k[n][0] - t2m[n][0] > 3),
                     None)
    d["tlb_reach"] = {"dtlb_first_miss_pages": dtlb_edge, "stlb_first_miss_pages": stlb_edge}
    nw = _pick(pages, 4 * stlb_entries, 4 * stlb_entries)
    walk = t4k[nw][0] - float(v["l2_lat"]) - stlb_lat
    walk_guest2m = t2m[nw][0] - float(v["l2_lat"]) - stlb_lat
    loads = 3 * int(v["l1d_lat"]) + int(v["l2_lat"])
    d["walk"] = {"pages": nw, "walk_cycles": walk, "walk_cycles_guest_2m": walk_guest2m,
                 "model_table_loads": loads,
                 "per_pages": {str(n): t4k[n][0] - float(v["l2_lat"]) - stlb_lat
                               for n in pages if n >= 2 * stlb_entries}}
    v["walk_overhead"] = str(max(0, round(walk - loads)))
    c["walk_overhead"] = (
        "measured: one-line-per-page chase at %d 4 KiB pages (4x the STLB; data and PTEs "
        "L2-resident): %.1f cycles per load, minus l2_lat (the data) and stlb_lat = a walk "
        "of %.1f cycles; minus the model's four table loads at that size (3 x l1d_lat + "
        "l2_lat = %d)%s. The same chase in the THP buffer (guest 2 MiB pages, one guest "
        "level less): a walk of %.1f. THIS HOST IS A VM: a native walk here is two-dimensional (every "
        "guest table load is itself translated through the hypervisor's tables), and that "
        "nested part is inside this figure; a bare-metal walk is cheaper, and a guest-side "
        "model never sees the nested tables" % (
            nw, t4k[nw][0], walk, loads,
            "" if walk >= loads else " (negative: clamped to 0)", walk_guest2m))
    for k in ("dtlb4k_entries", "stlb_entries"):
        edge = dtlb_edge if k == "dtlb4k_entries" else stlb_edge
        prev = max([n for n in pages if edge is None or n < edge] or [0])
        pub[k] = (pub[k][0], pub[k][1] + "; chase: first extra cost between %s and %s pages"
                  % (prev, edge))

    mem = spread(cycles(raw, raw["mem"]["ticks"]))
    v["mem_lat"] = str(round(mem[0] - stlb_lat - max(walk, 0)))
    c["mem_lat"] = ("measured: chase over a %d MiB THP buffer (%.0f%% huge pages), no warm-up, "
                    "%s, minus stlb_lat and the walk above (every load misses the STLB; the "
                    "model charges those separately)" % (
                        raw["mem"]["ws_mib"], 100 * thp["mem"], fmt_spread(mem)))

    for k, (val, com) in pub.items():
        v[k], c[k] = val, com

    xadd = spread(cycles(raw, raw["lock_xadd"]))
    xchg = spread(cycles(raw, raw["xchg"]))
    v["atomic"] = str(max(0, round(xadd[0] - int(v["l1d_lat"]))))
    c["atomic"] = ("measured: dependent lock xadd on a private L1 line, best of 5 x 16384 per "
                   "round: %s, minus l1d_lat (the model adds the access itself); xchg m,r: %s"
                   % (fmt_spread(xadd), fmt_spread(xchg)))
    mf = spread(cycles(raw, raw["mfence"]))
    lf = spread(cycles(raw, raw["lfence"]))
    v["fence"] = str(round(mf[0]))
    c["fence"] = ("measured: back-to-back mfence, best of 5 x 16384 per round: %s (lfence: %s; "
                  "the model has one price for both)" % (fmt_spread(mf), fmt_spread(lf)))
    cp = spread(cycles(raw, raw["cpuid_leaf0"]))
    v["cpuid"] = str(round(cp[0]))
    hv = cpuid.get("hypervisor", "").strip()
    c["cpuid"] = ("measured: cpuid leaf 0, best of 200 per round: %s%s" % (
        fmt_spread(cp), "; under hypervisor %r every cpuid exits to it: this is the VM exit "
        "round trip, not the instruction (bare metal: ~100-250, Agner Fog)" % hv if hv else ""))
    pb = spread(cycles(raw, raw["pause_burst8"]))
    pl = spread(cycles(raw, raw["pause_loop4096"]))
    v["pause"] = str(round(pb[0]))
    c["pause"] = ("measured: bursts of 8 pause, best of 200 per round: %s (a 4096-pause loop, "
                  "where a pause-loop exit could show: %s)" % (fmt_spread(pb), fmt_spread(pl)))

    rep = raw["rep"]
    movs = spread(cycles(raw, rep["movsb_4k_l1"]))
    stos = spread(cycles(raw, rep["stosb_4k_l1"]))
    rep_line = movs[0] / 128
    v["rep_line"] = str(max(1, round(rep_line)))
    c["rep_line"] = ("measured: rep movsb of 4 KiB within L1, best of 20 per round: %s = "
                     "%.2f per line touched (64 source + 64 destination lines, as the model "
                     "counts); rep stosb 4 KiB: %.2f per line" % (
                         fmt_spread(movs), rep_line, stos[0] / 64))
    mm = spread(cycles(raw, rep["movsb_64k_from_mem"]))
    sm = spread(cycles(raw, rep["stosb_64k_to_mem"]))
    rep_mem = (mm[0] - 2048 * rep_line) / 1024
    v["rep_mem_line"] = str(max(0, round(rep_mem)))
    c["rep_mem_line"] = ("measured: rep movsb of 64 KiB from clflushed source lines, best of 8 "
                         "per round: %s; minus 2048 x the L1 per-line price, over 1024 source "
                         "lines = %.1f; rep stosb 64 KiB to flushed lines: %.1f per line" % (
                             fmt_spread(mm), rep_mem, sm[0] / 1024))

    c2c = spread(cycles(raw, raw["c2c"]["roundtrip"])) if raw["cpus_online"] >= 2 else None
    if c2c:
        v["c2c_lat"] = str(round(c2c[0] / 2))
        c["c2c_lat"] = ("measured: CAS ping-pong on one line, threads pinned to CPUs %s, best "
                        "of 20 x %d round trips per round: round trip %s; half of it. The "
                        "hypervisor decides which physical cores these vCPUs are (siblings of "
                        "one core would be faster)" % (
                            "/".join(map(str, raw["c2c"]["cpus"])), raw["c2c"]["batch"],
                            fmt_spread(c2c)))
    else:
        v["c2c_lat"], com = read_profile(os.path.join(
            root or runner.ROOT, runner.PROFILE_DIR, "skylake-sp.cfg"))["c2c_lat"]
        c["c2c_lat"] = "one CPU online, not measurable: skylake-sp profile's value (%s)" % com

    topo = topology or {"sockets": 1, "cpus": raw["cpus_online"]}
    v["sockets"] = str(topo["sockets"])
    v["cores_per_socket"] = str(max(1, topo["cpus"] // topo["sockets"]))
    c["sockets"] = "sysfs topology: distinct physical_package_id of the online CPUs"
    c["cores_per_socket"] = "online CPUs / sockets (the CPUs this VM has, not the die's)"
    if topo["sockets"] == 1:
        c["c2c_remote_lat"] += "; unused with sockets = 1"

    br = raw["branch"]
    bp = cycles(raw, br["predictable"])
    bq = cycles(raw, br["random"])
    mis = spread([(q - p) / 0.5 for p, q in zip(bp, bq)])
    d["branch_mispredict"] = mis

    v["name"] = HOST_NAME
    c["name"] = "this host, measured by tools/baremm calibrate"
    missing = [k for k in KEYS if k not in v]
    if missing:
        raise CalibrateError("derivation left out %s" % ", ".join(missing))
    entries = [(k, v[k], c[k]) for k in KEYS]
    header = [
        "Profile of the host tools/baremm calibrate ran on (docs/COSTMODEL.md, "
        "\"Calibration\"). Generated: not a published CPU, not to be committed as one.",
        "Cycles unless noted. Measured values name their measurement; minimum over "
        "interleaved rounds unless noted (a neighbour only ever slows a round).",
        "Published values: " + statement + ".",
        "Chase buffers: 4 KiB pages (MADV_NOHUGEPAGE) and THP (MADV_HUGEPAGE, "
        "AnonHugePages %.0f%% / %.0f%% of the chase / TLB arenas); latencies are read "
        "from the 4 KiB series at working sets whose TLB level is known. hugetlb "
        "(MAP_HUGETLB): %s." % (
            100 * thp["chase_2m"], 100 * thp["tlb_2m"],
            {True: "available, not used", False: "not available (no huge pages reserved)",
             None: "not probed"}[raw.get("hugetlb_2m")]),
    ]
    if probe_note:
        header.append("Page-size probe: " + probe_note + ".")
    header.append("Not a profile key: branch mispredict penalty %s (random vs predictable "
                  "branch on the same 64 KiB of bytes, per mispredicted branch)"
                  % fmt_spread(mis))
    d.update({"l1d_ws_kib": w1, "l2_ws_kib": w2, "llc_ws_kib": w3, "stlb_pages": stlb_ns,
              "stlb_lat_exact": stlb_lat, "rep_line_exact": rep_line,
              "rep_mem_line_exact": rep_mem})
    return entries, header, d


def format_profile(entries, header):
    """Profile text: '# ' header lines, then 'key = value  # comment' per entry."""
    lines = ["# " + h for h in header]
    width = max(len("%s = %s" % (k, val)) for k, val, _ in entries)
    for k, val, com in entries:
        kv = "%s = %s" % (k, val)
        lines.append("%s  # %s" % (kv.ljust(width), " ".join(com.split())))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the native side

def topology():
    """Sockets and CPUs online, from sysfs."""
    base = "/sys/devices/system/cpu"
    pkgs, cpus = set(), 0
    try:
        with open(os.path.join(base, "online")) as f:
            spec = f.read().strip()
    except OSError:
        return {"sockets": 1, "cpus": os.cpu_count() or 1}
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        for n in range(int(lo), int(hi or lo) + 1):
            cpus += 1
            try:
                with open(os.path.join(base, "cpu%d" % n, "topology",
                                       "physical_package_id")) as f:
                    pkgs.add(f.read().strip())
            except OSError:
                pkgs.add("0")
    return {"sockets": max(1, len(pkgs)), "cpus": cpus}


def build_native(root=None, cc=None):
    """Compile the measurer (it links model/profile.c for --check); returns its path."""
    root = root or runner.ROOT
    out = os.path.join(root, NATIVE_BIN)
    srcs = [os.path.join(root, p) for p in (NATIVE_SRC,) + NATIVE_DEPS]
    if os.path.exists(out) and all(os.path.getmtime(s) <= os.path.getmtime(out) for s in srcs):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = [cc or os.environ.get("HOSTCC", "gcc"), "-std=gnu11", "-O2", "-Wall", "-Wextra",
           "-Werror", "-I" + root, "-o", out, os.path.join(root, NATIVE_SRC),
           os.path.join(root, "model", "profile.c"), "-lpthread"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if r.returncode:
        raise CalibrateError("building %s failed:\n%s" % (NATIVE_BIN, r.stdout))
    return out


def measure(binary, rounds, quick=False):
    cmd = [binary, "--rounds", str(rounds)] + (["--quick"] if quick else [])
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode:
        raise CalibrateError("%s exited %d: %s" % (binary, r.returncode, r.stderr.strip()))
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        raise CalibrateError("%s printed no valid JSON: %s" % (binary, e))


def check_profile(binary, path):
    """(ok, message): the plugin's own parser (model/profile.c) on the written file."""
    r = subprocess.run([binary, "--check", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    return r.returncode == 0, (r.stdout if r.returncode == 0 else r.stderr).strip()


def write(raw, out_dir, topo=None, root=None):
    """Derive and write host.cfg and host.json into out_dir; returns (cfg path, json path,
    entries, derivation)."""
    entries, header, d = derive(raw, topo, root)
    os.makedirs(out_dir, exist_ok=True)
    cfg = os.path.join(out_dir, HOST_NAME + ".cfg")
    js = os.path.join(out_dir, HOST_NAME + ".json")
    with open(cfg, "w") as f:
        f.write(format_profile(entries, header))
    with open(js, "w") as f:
        json.dump({"schema": OUT_SCHEMA, "raw": raw, "topology": topo,
                   "profile": {k: val for k, val, _ in entries},
                   "comments": {k: com for k, _, com in entries}, "derivation": d},
                  f, indent=1, sort_keys=True)
        f.write("\n")
    return cfg, js, entries, d


# ---------------------------------------------------------------- command

def main(a):
    out_dir = os.path.abspath(a.out) if a.out else os.path.dirname(runner.host_profile_path())
    try:
        binary = build_native()
        if a.raw:
            with open(a.raw) as f:
                raw = json.load(f)
            if raw.get("schema") == OUT_SCHEMA:     # a written host.json
                raw = raw["raw"]
            topo = raw.get("_topology") or topology()
        else:
            sys.stderr.write("baremm: calibrating this host (%d rounds, ~30-60 s; the "
                             "machine should be as idle as it gets)\n" % a.rounds)
            raw = measure(binary, a.rounds, a.quick)
            topo = topology()
            raw["_topology"] = topo
        cfg, js, entries, d = write(raw, out_dir, topo)
        ok, msg = check_profile(binary, cfg)
    except (OSError, ValueError, KeyError, CalibrateError) as e:
        sys.stderr.write("baremm: calibrate: %s\n" % e)
        return st.EXIT_TOOL_ERROR
    for k, val, _ in entries:
        print("  %-16s %s" % (k, val))
    print("baremm: %s" % d["published"])
    print("baremm: measured in %.1f s; wrote %s and %s" % (raw.get("elapsed_s", 0), cfg, js))
    if not ok:
        sys.stderr.write("baremm: the plugin's profile parser REJECTS %s: %s\n" % (cfg, msg))
        return st.EXIT_TOOL_ERROR
    print("baremm: accepted by the plugin's profile parser; use it with --model %s"
          % HOST_NAME)
    return 0


def add_parser(sub):
    p = sub.add_parser("calibrate", help="measure this host and write a cost-model profile "
                       "of it (results/host.cfg, used by --model host)")
    p.add_argument("--rounds", type=int, default=5,
                   help="interleaved measurement rounds (default 5)")
    p.add_argument("--out", default=None,
                   help="directory for host.cfg and host.json (default %s)"
                   % os.path.dirname(runner.HOST_PROFILE_PATH))
    p.add_argument("--raw", default=None,
                   help="derive from a saved host.json's raw figures (or the measurer's own "
                        "JSON) instead of measuring")
    p.add_argument("--quick", action="store_true",
                   help="fewer working sets, a 64 MiB memory buffer: a smoke test, not a "
                        "calibration")
    p.set_defaults(func=main)
    return p
