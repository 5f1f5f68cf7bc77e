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
import math
import json
import os
import re
import statistics
import subprocess
import sys

from . import runner, status as st

NATIVE_SRC = "tools/native/calibrate.c"
NATIVE_DEPS = ("tools/native/native.h", "model/profile.c", "model/model.h", "model/core.h")
NATIVE_BIN = "build/tools/calibrate"
HOST_NAME = runner.HOST_PROFILE
RAW_SCHEMA = "baremm-calibrate-raw/7"
# raw/7 adds the chains of 32-2048 distinct taken branches (core.btb); before it,
# btb_l0_entries and btb_bubble are looked up.
# raw/6 times every rep string series in one window that ends once its stores are visible
# (rep.timing "window"; before it each page was timed alone and its stores' drain fell
# outside the window), clears the copy's destination (dirty lines) rather than its source,
# and adds the series from the LLC (rep.movs_4k_llc): before it, rep_read_line,
# rep_llc_line and rep_llc_read_line are rep_fill_line's. raw/5 adds the taken branches of small loops (core.taken_loops); before it, loop_branches
# and loop_taken_per_cycle are looked up. raw/4 adds the page copies from the L2
# (rep.movs_4k_l2); before it, rep_fill_line is looked up. raw/2 and raw/3 differ only by
# the taken-branch loop (core.taken), which the derivation looks for itself: without it its
# key is looked up.
RAW_SCHEMAS = ("baremm-calibrate-raw/2", "baremm-calibrate-raw/3", "baremm-calibrate-raw/4",
               "baremm-calibrate-raw/5", "baremm-calibrate-raw/6", RAW_SCHEMA)
OUT_SCHEMA = "baremm-calibrate/1"

# Every key of model/profile.c's table, in its order (the parser rejects a missing one).
PARSER_KEYS = ("name", "ghz", "base_cpi", "l1d_kib", "l1d_ways", "l1d_lat", "l2_kib", "l2_ways",
        "l2_lat", "llc_kib", "llc_ways", "llc_lat", "mem_lat", "dtlb4k_entries",
        "dtlb4k_ways", "dtlb2m_entries", "dtlb2m_ways", "stlb_entries", "stlb_ways",
        "stlb_lat", "walk_overhead", "atomic", "serialise", "cpuid", "wrmsr", "mov_cr",
        "invlpg", "fence", "irq_roundtrip", "ipi_latency", "pause", "hlt", "rep_store_line",
        "rep_mem_line", "c2c_lat", "c2c_remote_lat", "sockets", "cores_per_socket")

# The out-of-order core's parameters, which every profile carries after the keys above
# (the key contract shared with the core model; docs/COSTMODEL.md, "Calibration").
CORE_KEYS = ("core_width", "rob_size", "load_buffer", "store_buffer", "fill_buffers",
             "mispredict", "lat_imul", "lat_div", "lat_vec", "lat_fp", "lat_fpdiv",
             "prefetch_lines", "prefetch_streams", "page_walkers", "stores_per_cycle",
             "taken_per_cycle", "rep_fill_line", "loop_branches", "loop_taken_per_cycle",
             "btb_l0_entries", "btb_bubble")

# The fill prices of a rep string's lines by where they come from and whether the string
# stores to them (model.h, rep_fill_x100()), beside rep_fill_line (a stored line from the
# L2): measured from the rep series, or rep_fill_line's where a recording has no series.
REP_FILL_KEYS = ("rep_read_line", "rep_llc_line", "rep_llc_read_line")

# The page size of the hypervisor's tables under this machine (model.h, nested paging):
# from the page-size probe; a recording made before the model had the key gets it from
# the probe's line in its header (panel.complete_host_profile).
NESTED_KEYS = ("nested_page_kib",)

KEYS = PARSER_KEYS + CORE_KEYS + REP_FILL_KEYS + NESTED_KEYS

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

_ZEN5_CPUID = "CPUID of an EPYC 9655 (InstLatX64 dump AuthenticAMD0B00F21, and this family/model)"
_ZEN5_TLB = {
    "dtlb4k_entries": (96, "%s, leaf 0x80000005 EBX: L1 DTLB 96 entries, fully associative, "
                       "4 KiB pages [checked]" % _ZEN5_CPUID),
    "dtlb4k_ways": (96, "same leaf: fully associative [checked]"),
    "dtlb2m_entries": (96, "%s, leaf 0x80000005 EAX: 96 entries for 2 MiB pages [checked]"
                       % _ZEN5_CPUID),
    "dtlb2m_ways": (96, "same leaf: fully associative [checked]"),
    "stlb_entries": (4096, "%s, leaf 0x80000006 EBX: L2 DTLB 4096 entries (0x080 x 32) for "
                     "4 KiB pages, and 4096 for 2 MiB (EAX) [checked]" % _ZEN5_CPUID),
    "stlb_ways": (8, "same leaf: associativity code 6 = 8-way for 4 KiB pages (AMD 58455, as "
                  "quoted by jiegec's Zen 5 review, says 16-way) [checked: CPUID]"),
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
    ("GenuineIntel", 6, 0xAD): {
        "cpu": "Intel Granite Rapids (Xeon 6 P-cores, Redwood Cove cores)",
        "fallback": "skylake-sp",
        "values": {k: (val, "Chips and Cheese, \"Intel's Redwood Cove: Baby Steps are Still "
                       "Steps\": no major structure size changed from Golden Cove, so " + src)
                   for k, (val, src) in _GOLDEN_COVE_TLB.items()},
        "note": "no published figure for Granite Rapids was found for the privileged "
                "instructions, interrupts or the cross-socket transfer"},
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
    ("AuthenticAMD", 0x1A, 0x02): {
        "cpu": "AMD Zen 5 (Turin, 5th gen EPYC)", "fallback": "zen3", "values": _ZEN5_TLB,
        "note": "no published figure for Zen 5 was found for the privileged instructions, "
                "interrupts or the cross-CCD transfer"},
}


class CalibrateError(Exception):
    """The measurement could not be made or turned into a profile."""


# ---------------------------------------------------------------- the core table

def _src(text, checked=False):
    return text + (" [checked]" if checked else " [not re-checked]")


_AGNER_IT = "Agner Fog, instruction_tables.pdf"
_AGNER_MA = "Agner Fog, microarchitecture.pdf"
_INTEL_OPT = "Intel 64 and IA-32 Architectures Optimization Reference Manual (248966)"
_INTEL_PF = _src(_INTEL_OPT + ", data prefetching (L2 streamer): runs up to 20 lines ahead of "
                 "the load, 32 streams (one forward and one backward per 4 KiB page)")
_INTEL_PF_N = _src(_INTEL_OPT + ", L2 streamer: detects and maintains up to 32 streams")
_AMD_PF = _src("AMD's Software Optimization Guides (Zen 2/3/4) describe an L2 stream prefetcher "
               "but publish no distance: Intel's streamer figure (%s), as the nearest published "
               "description" % _INTEL_OPT)
_AMD_PF_N = _src("no AMD figure published: Intel's streamer figure (%s), as the nearest "
                 "published description" % _INTEL_OPT)

_SKYLAKE_CORE = {
    "core_width": (4, _src(_INTEL_OPT + ", Skylake: allocation/rename of 4 fused uops per cycle")),
    "rob_size": (224, _src(_INTEL_OPT + ", Skylake buffer sizes: ROB 224")),
    "load_buffer": (72, _src(_INTEL_OPT + ", Skylake buffer sizes: 72 load buffers")),
    "store_buffer": (56, _src(_INTEL_OPT + ", Skylake buffer sizes: 56 store buffers")),
    "fill_buffers": (12, _src(_INTEL_OPT + ", Skylake: 12 L1D fill buffers (10 on Haswell); "
                              "cpunews.net Alder Lake analysis p.5 gives 12 for the core "
                              "before Golden Cove")),
    "mispredict": (17, _src(_AGNER_MA + ", Skylake: misprediction penalty 15-20 cycles, "
                            "middle value")),
    "lat_imul": (3, _src(_AGNER_IT + ", Skylake: IMUL r64,r64 latency 3")),
    "lat_div": (35, _src(_AGNER_IT + ", Skylake: DIV r64 latency 35-88, lower value (small "
                         "quotients, the kernel's common case)")),
    "lat_vec": (1, _src(_AGNER_IT + ", Skylake: PADDQ latency 1")),
    "lat_fp": (4, _src(_AGNER_IT + ", Skylake: ADDSD/MULSD latency 4")),
    "lat_fpdiv": (13, _src(_AGNER_IT + ", Skylake: DIVSD latency 13-14, lower value")),
    "prefetch_lines": (20, _INTEL_PF),
    "prefetch_streams": (32, _INTEL_PF_N),
    "page_walkers": (2, _src(_INTEL_OPT + ", Broadwell and Skylake: two page walkers "
                             "(TLB misses handled in parallel)")),
    "stores_per_cycle": (1, _src(_INTEL_OPT + ", Skylake: one store per cycle (a single "
                                 "store-data port)")),
    "taken_per_cycle": (1, _src(_AGNER_IT + ", Skylake: JMP / taken Jcc reciprocal throughput "
                                "1-2 cycles, at most one taken branch per cycle")),
    "rep_fill_line": (1, _src(_INTEL_OPT + ", Skylake-SP cache table: L2 peak bandwidth 64 "
                              "bytes per cycle into the L1d, one 64-byte line per cycle")),
    "loop_branches": (0, _src("no figure published for a loop rate above the general one (Intel 248966 and Agner Fog give one taken branch per cycle), so none is assumed")),
    "loop_taken_per_cycle": (1, _src("unused while loop_branches is 0; Agner Fog's general "
                                     "figure, one taken branch per cycle")),
    "btb_l0_entries": (128, _src("Chips and Cheese, \"Skylake: Intel's Longest Serving "
                                 "Architecture\" (2022-10-14), measured: the first BTB level "
                                 "tracks 128 branch targets with no wasted cycles")),
    "btb_bubble": (1, _src("Chips and Cheese, \"Skylake: Intel's Longest Serving Architecture\", "
                           "measured: the second level (4096 targets) costs one penalty cycle")),
}

_SUNNY_COVE_CORE = dict(_SKYLAKE_CORE, **{
    "stores_per_cycle": (2, _src("WikiChip, Sunny Cove: a second store-data port, two stores "
                                 "per cycle")),
    "core_width": (5, _src("WikiChip, Sunny Cove: wider allocation (5-way, up from 4-way)",
                           True)),
    "rob_size": (352, _src("WikiChip, Sunny Cove: 1.6x larger ROB (352, up from 224 entries)",
                           True)),
    "load_buffer": (128, _src("WikiChip, Sunny Cove buffers: load buffer 128 (up from 72)")),
    "store_buffer": (72, _src("WikiChip, Sunny Cove buffers: store buffer 72 (up from 56)")),
    "fill_buffers": (12, _src("cpunews.net, Alder Lake architecture analysis p.5: Golden Cove "
                              "raises the L1D fill buffers from 12 to 16 (12 on the cores "
                              "before it)", True)),
    "mispredict": (17, _src(_AGNER_MA + ", Ice Lake/Tiger Lake: misprediction penalty as on "
                            "Skylake, 15-20 cycles, middle value")),
    "lat_div": (15, _src(_AGNER_IT + ", Ice Lake: DIV r64 latency 15 (new integer divider)")),
    "lat_fpdiv": (13, _src(_AGNER_IT + ", Ice Lake: DIVSD latency 13-15, lower value")),
})

_GOLDEN_COVE_CORE = dict(_SUNNY_COVE_CORE, **{
    "core_width": (6, _src("Chips and Cheese, \"Popping the Hood on Golden Cove\": 6-wide "
                           "rename/allocate; the micro-op cache delivers 8 per cycle "
                           "(Golden Cove overview notes)")),
    "rob_size": (512, _src("Chips and Cheese, \"Popping the Hood on Golden Cove\": 512-entry "
                           "ROB; Intel Architecture Day 2021")),
    "load_buffer": (192, _src("Intel Architecture Day 2021, Golden Cove: 192 load buffer "
                              "entries")),
    "store_buffer": (114, _src("Intel Architecture Day 2021, Golden Cove: 114 store buffer "
                               "entries")),
    "fill_buffers": (16, _src("cpunews.net, Alder Lake architecture analysis p.5: L1D fill "
                              "buffers raised from 12 to 16 on Golden Cove", True)),
    "mispredict": (17, _src(_AGNER_MA + ", Alder Lake P-core (Golden Cove): misprediction "
                            "penalty about 17 cycles")),
    "lat_fp": (2, _src("cpunews.net, Alder Lake analysis p.5: Golden Cove adds dedicated FADD "
                       "units on ports 1 and 5 with lower latency than the FMA units [checked]; "
                       + _AGNER_IT + ", Alder Lake P: ADDSD latency 2 (MULSD 4)")),
    "page_walkers": (4, _src("cpunews.net, Alder Lake architecture analysis p.5: page walkers "
                             "raised from 2 to 4 on Golden Cove", True)),
    "stores_per_cycle": (2, _src("Chips and Cheese, \"Popping the Hood on Golden Cove\": two "
                                 "store ports, two stores per cycle")),
    "taken_per_cycle": (1, _src("no separate figure found for Golden Cove: Skylake's (" + _AGNER_IT
                                + ", one taken branch per cycle at best)")),
    "btb_l0_entries": (128, _src("Chips and Cheese, \"Popping the Hood on Golden Cove\" "
                                 "(2021-12-02), measured: 128 branches at about one a cycle")),
    "btb_bubble": (1, _src("Chips and Cheese, \"Popping the Hood on Golden Cove\", measured: "
                           "three BTB levels, a miss in one that hits the next costs one cycle")),
})

# Redwood Cove doubles the L1i (64 KiB) and tunes the branch predictor; "Intel has not
# changed any major core structure sizes" from Golden Cove, by Chips and Cheese's testing.
_REDWOOD_SAME = ("Chips and Cheese, \"Intel's Redwood Cove: Baby Steps are Still Steps\" "
                 "(2024-09-22): no major core structure size changed from Golden Cove, so "
                 "Golden Cove's figure: ")
_REDWOOD_COVE_CORE = dict({k: (val, _REDWOOD_SAME + src) for k, (val, src) in
                           _GOLDEN_COVE_CORE.items()}, **{
    "btb_l0_entries": (128, _src("Chips and Cheese, \"Lion Cove: Intel's P-Core Roars\" "
                                 "(2024-09-27), Redwood Cove (Meteor Lake) measured beside it: "
                                 "128 branches with no bubble")),
    "btb_bubble": (1, _src("Chips and Cheese, \"Lion Cove: Intel's P-Core Roars\", Redwood "
                           "Cove measured: the next level (6K branches) has a 2-cycle latency, "
                           "one bubble")),
    "mispredict": (17, _src(_INTEL_OPT + ", Redwood Cove: \"reduced average branch "
                            "misprediction recovery latency\", by no stated amount, so Golden "
                            "Cove's figure (" + _AGNER_MA + ", Alder Lake P-core: about 17 "
                            "cycles) as its upper bound")),
})

_ZEN2_CORE = {
    "core_width": (6, _src("AMD Software Optimization Guide for family 17h models 30h+ (Zen 2): "
                           "dispatch of up to 6 macro-ops per cycle")),
    "rob_size": (224, _src("WikiChip, Zen 2: 224-entry retire queue shared with the FP unit "
                           "(up from 192)", True)),
    "load_buffer": (72, _src("WikiChip, Zen: a 44-entry load queue, up to 72 out-of-order "
                             "loads counting the AGU scheduler queues (Zen 2 keeps the 44-entry "
                             "load queue)", True)),
    "store_buffer": (48, _src("AnandTech 16214 p.4 (Zen 3 deep dive): the store queue grows "
                              "from 48 entries (Zen 2) to 64", True)),
    "fill_buffers": (22, _src("AMD Software Optimization Guide (Zen 2): 22 outstanding L1D "
                              "misses (miss address buffers)")),
    "mispredict": (16, _src(_AGNER_MA + ", Zen 2: misprediction penalty about 16 cycles "
                            "(AMD: 12-18)")),
    "lat_imul": (3, _src(_AGNER_IT + ", Zen 2: IMUL r64,r64 latency 3")),
    "lat_div": (13, _src(_AGNER_IT + ", Zen 2: DIV r64 latency 13-44, lower value")),
    "lat_vec": (1, _src(_AGNER_IT + ", Zen 2: PADDQ latency 1")),
    "lat_fp": (3, _src(_AGNER_IT + ", Zen 2: ADDSD/MULSD latency 3")),
    "lat_fpdiv": (13, _src(_AGNER_IT + ", Zen 2: DIVSD latency 13-15, lower value")),
    "prefetch_lines": (20, _AMD_PF),
    "prefetch_streams": (32, _AMD_PF_N),
    "page_walkers": (2, _src("AMD, Zen 3 presentation (Hot Chips 33, 2021): six page-table "
                             "walkers, up from two in Zen 2")),
    "stores_per_cycle": (1, _src("AMD Software Optimization Guide for family 17h (Zen 2): one "
                                 "store per cycle")),
    "rep_fill_line": (2, _src("AMD Software Optimization Guides for families 17h and 19h (Zen "
                              "2-4): the L2 returns 32 bytes per cycle to the L1d, two cycles a "
                              "line")),
    "taken_per_cycle": (1, _src("Chips and Cheese, \"Zen 5's 2-Ahead Branch Predictor Unit\" "
                                "(2024-07-26): the Zen cores before Zen 5 predict one taken "
                                "branch per cycle")),
    "loop_branches": (0, _src("no figure published for a loop rate above the general one (AMD's guides and Agner Fog give one taken branch per cycle), so none is assumed")),
    "loop_taken_per_cycle": (1, _src("unused while loop_branches is 0; Agner Fog's general "
                                     "figure, one taken branch per cycle")),
    "btb_l0_entries": (16, _src("AMD Software Optimization Guide for family 17h models 30h and "
                                "greater (56305), Zen 2: the L0BTB (8 forward and 8 backward "
                                "taken branches) predicts with no bubble")),
    "btb_bubble": (1, _src("AMD 56305, Zen 2: the L1BTB (512 entries) costs one bubble (the "
                           "L2BTB's four are not modelled)")),
}

_ZEN3_CORE = dict(_ZEN2_CORE, **{
    "core_width": (6, _src("AMD Software Optimization Guide for family 19h (Zen 3): 6 "
                           "macro-ops dispatched per cycle")),
    "rob_size": (256, _src("AMD Zen 3 (Hot Chips 33 / launch material): 256-entry retire "
                           "queue")),
    "load_buffer": (72, _src("AnandTech 16214 p.4: load queue 44 entries, AMD counts 72 with "
                             "the 28-entry address generation queue", True)),
    "store_buffer": (64, _src("AnandTech 16214 p.4: store queue 64 entries, up from 48", True)),
    "fill_buffers": (24, _src("AMD Software Optimization Guide for family 19h: 24 outstanding "
                              "L1D misses (miss address buffers)")),
    "mispredict": (13, _src("AMD Software Optimization Guide for family 19h: misprediction "
                            "penalty 11-18 cycles, 13 typical; " + _AGNER_MA + ", Zen 3")),
    "lat_div": (9, _src(_AGNER_IT + ", Zen 3: DIV r64 latency 9-17, lower value")),
    "lat_fpdiv": (13, _src(_AGNER_IT + ", Zen 3: DIVSD latency 13.5")),
    "page_walkers": (6, _src("AMD, Zen 3 presentation (Hot Chips 33, 2021): six page-table "
                             "walkers, up from two in Zen 2")),
    "stores_per_cycle": (2, _src("AMD Software Optimization Guide for family 19h (Zen 3): up "
                                 "to two stores per cycle")),
    "btb_l0_entries": (1024, _src("AMD Software Optimization Guide for EPYC 7003 (56665), Zen 3: "
                                  "the L1BTB's 1024 entries predict direct branches with no "
                                  "bubble (calls, returns and indirect ones with one, not "
                                  "modelled); Chips and Cheese measured 1024 with no lost "
                                  "cycle")),
    "btb_bubble": (3, _src("AMD 56665, Zen 3: the L2BTB (6656 entries) costs three cycles where "
                           "its prediction differs from the L1BTB's")),
})

_ZEN4_CORE = dict(_ZEN3_CORE, **{
    "core_width": (6, _src("AnandTech 17585 p.8 (Zen 4): the micro-op queue still delivers 6 "
                           "per clock to dispatch", True)),
    "rob_size": (320, _src("AMD Zen 4 launch material / Chips and Cheese \"AMD's Zen 4, Part 1\": "
                           "320-entry retire queue")),
    "load_buffer": (136, _src("Chips and Cheese, \"AMD's Zen 4, Part 2: Memory Subsystem\": 136 "
                              "load operations in flight (load validation queue)", True)),
    "store_buffer": (64, _src("Chips and Cheese, \"AMD's Zen 4, Part 2\": 64-entry store queue "
                              "as on Zen 3")),
    "lat_div": (10, _src(_AGNER_IT + ", Zen 4: DIV r64 latency 10-18, lower value")),
    "btb_l0_entries": (1024, _src("Chips and Cheese, \"AMD's Zen 4 Part 1\" (2022-11-05), "
                                  "measured: the first level holds 1024-3072 taken branches "
                                  "with no bubble, depending on their spacing; the lower")),
    "btb_bubble": (1, _src("Chips and Cheese, \"AMD's Zen 4 Part 1\", measured: the L2 BTB "
                           "(8192 entries) costs one bubble")),
})

_ZEN5_CORE = dict(_ZEN4_CORE, **{
    "core_width": (8, _src("LLVM X86ScheduleZnver5.td, quoting the AMD Software Optimization "
                           "Guide for the Zen5 Microarchitecture (58455) 2.9.7: dispatch of up "
                           "to 8 macro-ops per cycle", True)),
    "rob_size": (448, _src("LLVM X86ScheduleZnver5.td, quoting AMD 58455 2.10.3: 448 macro-ops "
                           "in flight without SMT (224 per thread with SMT)", True)),
    "load_buffer": (202, _src("Chips and Cheese, \"Discussing AMD's Zen 5 at Hot Chips 2024\": "
                              "about 202 loads in flight measured (AMD 58455: 64 uncompleted "
                              "loads, no fixed limit on completed ones)", True)),
    "store_buffer": (104, _src("Chips and Cheese, \"AMD's Ryzen 9950X: Zen 5 on Desktop\": the "
                               "store queue grows from 64 to 104 entries", True)),
    "fill_buffers": (124, _src("Chips and Cheese, \"Discussing AMD's Zen 5 at Hot Chips 2024\", "
                               "quoting AMD 58455: up to 124 outstanding L1 misses", True)),
    "mispredict": (15, _src("LLVM X86ScheduleZnver5.td, quoting AMD 58455 2.8: misprediction "
                            "penalty 12-18 cycles, 15 in the common case", True)),
    "lat_div": (10, _src("InstLatX64, Ryzen 9 9950X: DIV r64 latency 9.97 (small quotient)",
                         True)),
    "lat_fp": (2, _src("InstLatX64, Ryzen 9 9950X: ADDSD latency 1.99; Chips and Cheese, "
                       "\"AMD's Ryzen 9950X\": FP adds 2 cycles on desktop Zen 5", True)),
    "page_walkers": (6, _src("no Zen 5 figure published: Zen 3's and Zen 4's six (AMD, Zen 3 "
                             "presentation, Hot Chips 33), as the nearest")),
    "stores_per_cycle": (2, _src("Chips and Cheese, \"AMD's Strix Point: Zen 5 Hits Mobile\": four "
                                 "AGUs, up to two of them stores", True)),
    "taken_per_cycle": (2, _src("Chips and Cheese, \"Zen 5's 2-Ahead Branch Predictor Unit\" "
                                "(2024-07-26): two taken branches predicted per cycle")),
    "btb_l0_entries": (1024, _src("Chips and Cheese, \"AMD's Strix Point: Zen 5 Hits Mobile\", "
                                  "measured: the fastest level tracks up to 1024 branches at two "
                                  "taken a cycle")),
    "btb_bubble": (1, _src("no Zen 5 figure published for the next level: Zen 4's one bubble "
                           "(Chips and Cheese, \"AMD's Zen 4 Part 1\")")),
    "rep_fill_line": (1, _src("Chips and Cheese, \"Discussing AMD's Zen 5 at Hot Chips 2024\": "
                              "L2 to L1d bandwidth doubled to 64 bytes per cycle, one cycle a "
                              "line")),
})

# The core table: (vendor, family, first model, last model) -> the CPU and, per key of
# CORE_KEYS, (value, public source). The one place these figures live; a key that cannot be
# measured (or whose measurement is not clean) is taken from here, and a CPU not in this
# table then stops the calibration (UnknownCpu) instead of borrowing another CPU's figures.
CORE_CPUS = (
    ("GenuineIntel", 6, 0x55, 0x55, "Skylake-SP / Cascade Lake (Skylake cores)", _SKYLAKE_CORE),
    ("GenuineIntel", 6, 0x6A, 0x6A, "Ice Lake-SP (Sunny Cove cores)", _SUNNY_COVE_CORE),
    ("GenuineIntel", 6, 0x8F, 0x8F, "Sapphire Rapids (Golden Cove cores)", _GOLDEN_COVE_CORE),
    # Raptor Cove is Golden Cove's core with a larger L2: no separate core figures published
    ("GenuineIntel", 6, 0xCF, 0xCF, "Emerald Rapids (Raptor Cove = Golden Cove core)",
     _GOLDEN_COVE_CORE),
    ("GenuineIntel", 6, 0xAD, 0xAE, "Granite Rapids (Redwood Cove cores)", _REDWOOD_COVE_CORE),
    ("AuthenticAMD", 0x17, 0x30, 0x7F, "Zen 2 (Rome, Matisse, Renoir...)", _ZEN2_CORE),
    ("AuthenticAMD", 0x19, 0x00, 0x0F, "Zen 3 (Milan)", _ZEN3_CORE),
    ("AuthenticAMD", 0x19, 0x20, 0x2F, "Zen 3 (Vermeer)", _ZEN3_CORE),
    ("AuthenticAMD", 0x19, 0x40, 0x5F, "Zen 3 (Rembrandt, Cezanne)", _ZEN3_CORE),
    ("AuthenticAMD", 0x19, 0x10, 0x1F, "Zen 4 (Genoa)", _ZEN4_CORE),
    ("AuthenticAMD", 0x19, 0x60, 0x7F, "Zen 4 (Raphael, Phoenix)", _ZEN4_CORE),
    ("AuthenticAMD", 0x19, 0xA0, 0xAF, "Zen 4c (Bergamo)", _ZEN4_CORE),
    ("AuthenticAMD", 0x1A, 0x00, 0x0F, "Zen 5 (Turin)", _ZEN5_CORE),
    ("AuthenticAMD", 0x1A, 0x40, 0x4F, "Zen 5 (Granite Ridge)", _ZEN5_CORE),
)


class UnknownCpu(CalibrateError):
    """A key must be looked up and CORE_CPUS has no entry for this CPU."""


def core_cpu(cpuid):
    """(name, {key: (value, source)}) of the CORE_CPUS entry for this CPUID, else None."""
    for vendor, fam, lo, hi, name, values in CORE_CPUS:
        if (cpuid.get("vendor") == vendor and cpuid.get("family") == fam
                and lo <= cpuid.get("model", -1) <= hi):
            return name, values
    return None


# ---------------------------------------------------------------- core derivations

# A taken-branch rate within this fraction of a whole number of branches per cycle is
# that number; anything between is a front end this measurement does not explain.
TAKEN_TOLERANCE = 0.15


# Two rounds within this fraction of each other confirm a best round (confirmed_best).
CONFIRM_TOL = 0.05


def confirmed(vals, largest=False, tol=CONFIRM_TOL):
    """The best of @vals (smallest, or largest) that another of them confirms within @tol
    of it, or None when none does. Negatives (not measured) are dropped."""
    v = sorted((x for x in vals if x is not None and x >= 0), reverse=largest)
    for a, b in zip(v, v[1:]):
        if abs(b - a) <= tol * abs(a):
            return a
    return None


def confirmed_best(vals, largest=False):
    """The best per-round value (smallest, or largest) that another round confirms within
    CONFIRM_TOL. A neighbour only slows a round's ticks, but the conversion to cycles uses
    the clock read at the start of the round: a round whose clock reading missed a turbo
    change comes out faster than the core is, and alone. A value no other round comes
    near (or a single round) is still the best."""
    v = [x for x in vals if x is not None and x >= 0]
    if not v:
        raise CalibrateError("no valid round")
    c = confirmed(v, largest)
    return c if c is not None else (max(v) if largest else min(v))


def width_from_ipc(ipc):
    """core_width from {kind: [IPC per round]}: each kind is bounded by the allocation
    width (nops and zero idioms by it alone), a neighbour only lowers a round, so the
    largest IPC another round confirms (confirmed_best), rounded. Returns (width, kind,
    that IPC)."""
    best = max(((confirmed_best(v, largest=True), k) for k, v in ipc.items() if v), default=None)
    if best is None or best[0] <= 0:
        raise CalibrateError("no width measurement")
    return int(round(best[0])), best[1], best[0]


# The branch of calibrate's mispredict loop (tools/native/calibrate.c, branch_loop)
# resolves from a byte loaded from the L1d through one test: the load, the test and the
# jump itself.
BRANCH_LOOP_RESOLVE_OPS = 2


def mispredict_refill(total, l1d_lat):
    """(mispredict, comment) from the whole cost of one mispredicted branch in the
    calibration loop. That cost is the branch resolving (its byte's load and test) plus
    the refill after it; the out-of-order core resolves a branch from its own inputs and
    then adds `mispredict` (model/core.c: floor = C_br + mispredict), so the profile's key
    is the refill alone. Kept whole, the resolution was paid twice: the panel's
    branch_rand row, the same loop, cost 1.25x its native time on the Granite Rapids VM."""
    res = l1d_lat + BRANCH_LOOP_RESOLVE_OPS
    refill = max(1, int(round(total - res)))
    return str(refill), ("; minus that loop's branch resolution, which the core model adds "
                         "from the branch's inputs (l1d_lat %d + test + jz = %d): %d"
                         % (l1d_lat, res, refill))


# A nop filler that runs this many times faster than every other single-uop filler is
# being fused: the core puts several nops in one dispatch slot and one window entry.
NOP_FUSION_RATIO = 1.75


def rep_store_price(copy_l1, clear_l1):
    """rep_store_line from a copy and a clear of a page within the L1d (cycles each): both
    store 64 lines and the copy's source lines are L1 hits, so one price per line stored
    fits both: their mean (the model's store stream, rep_stream_x100 in model/model.h)."""
    return (copy_l1 + clear_l1) / (2 * 64)


# The LLC series measures the LLC only when its footprint (a copy from one half of its
# arena into the other, then a clear of both) is at least this many L2s, so that no line
# of the stream is still in the L2, and within the capacity the chase found for the LLC.
REP_LLC_OVER_L2 = 1.5


def nested_page_from_probe(probe, hypervisor=""):
    """(nested_page_kib, comment) from the page-size probe's best (2 MiB stride, 4 KiB
    stride) cycles (None: the raw figures have no probe) and CPUID's hypervisor signature
    ("" on bare metal). A 2 MiB stride that costs more than the 4 KiB one means the TLB
    holds 4 KiB entries for guest huge pages: the hypervisor's pages are 4 KiB. Otherwise
    they are at least 2 MiB (the probe cannot tell 2 MiB from 1 GiB; the model's entries
    are 2 MiB at most either way). Bare metal has no nested tables."""
    if not probe:
        return 0, ("not probed (raw figures from before the page-size probe): no nested "
                   "paging modelled")
    p2, p4 = probe
    seen = ("measured: the page-size probe's 16 L1-resident lines one per 2 MiB of the THP "
            "arena cost %.1f cycles, one per 4 KiB %.1f" % (p2, p4))
    if p2 > p4 + 2:
        return 4, (seen + ": the TLB holds 4 KiB entries for guest huge pages, so the "
                   "hypervisor (%s) maps this machine with 4 KiB pages" % (hypervisor or
                                                                        "CPUID names none"))
    if not hypervisor:
        return 0, seen + ": huge pages keep 2 MiB TLB entries and CPUID names no hypervisor: bare metal"
    return 2048, (seen + ": guest huge pages keep 2 MiB TLB entries, so the hypervisor's (%s) "
                  "pages under them are at least 2 MiB; 2048, the smallest size that fits"
                  % hypervisor)


def nested_leaf_level(nested):
    """The level the model finds the nested leaf entry in at calibrate's walk size (8192
    pages of 4 KiB, data and PTEs L2-resident): one 4 KiB host page per guest page puts
    8192 entries (64 KiB) beside the data; 2 MiB host pages put them all in a few lines."""
    return {0: 0, 4: "l2_lat"}.get(nested, "l1d_lat")


def nested_leaf_price(nested, v):
    lvl = nested_leaf_level(nested)
    return int(v[{"l2_lat": "l2_lat", "l1d_lat": "l1d_lat"}[lvl]]) if lvl else 0


def rep_fill_prices(raw, fill, l2_kib, llc_kib):
    """{key: (value, comment)} of REP_FILL_KEYS from the rep series timed in one window:
    a read line's price is what a copy (64 lines stored, 64 read) costs beyond a clear (64
    stored) of the same pages, a stored line's from the LLC is the clear of a footprint
    beyond the L2. Without the series (older raw figures) or with an LLC series that the
    sizes do not place in the LLC, a key is rep_fill_line's (@fill), as the model priced
    every fill before it told them apart."""
    rep = raw.get("rep", {})

    def same(keys, why):
        return {k: ("%.2f" % fill, "%s: rep_fill_line's (%.2f), as one price for every fill"
                    % (why, fill)) for k in keys}

    if rep.get("timing") != "window" or not rep.get("movs_4k_l2"):
        return same(REP_FILL_KEYS, "not measured (raw figures of %s, before the rep series "
                    "timed in one window)" % raw.get("schema"))
    copy, clear = spread(cycles(raw, rep["movs_4k_l2"])), spread(cycles(raw, rep["stos_4k_l2"]))
    read = max(0.0, (copy[0] - clear[0]) / 64)
    out = {"rep_read_line": ("%.2f" % read, (
        "measured: the copy through the L2 that rep_fill_line's clear follows, %s per page, "
        "minus that clear of its destination, %s, over the 64 source lines it only reads = "
        "%.2f per line read" % (fmt_spread(copy), fmt_spread(clear), read)))}
    foot = 2 * rep["llc_pages"] * 4
    if foot < REP_LLC_OVER_L2 * l2_kib or foot > llc_kib:
        out.update(same(("rep_llc_line", "rep_llc_read_line"), (
            "not measured: the LLC series' %d KiB is not both at least %.1fx the L2 (%d KiB) "
            "and within llc_kib (%d KiB)" % (foot, REP_LLC_OVER_L2, l2_kib, llc_kib))))
        return out
    lcopy, lclear = spread(cycles(raw, rep["movs_4k_llc"])), spread(cycles(raw, rep["stos_4k_llc"]))
    st, rd = lclear[0] / 64, max(0.0, (lcopy[0] - lclear[0]) / 64)
    what = ("a copy of %d pages into %d more, then a clear of all %d (%d KiB: %.1fx the L2, "
            "within llc_kib), each series in one window, best of 4 passes per round" % (
                rep["llc_pages"], rep["llc_pages"], 2 * rep["llc_pages"], foot, foot / l2_kib))
    out["rep_llc_line"] = ("%.2f" % st, "measured: rep stosq in %s: %s per page, over its 64 "
                           "lines = %.2f per line stored" % (what, fmt_spread(lclear), st))
    out["rep_llc_read_line"] = ("%.2f" % rd, "measured: rep movsq in the same (%s): %s per "
                                "page, minus the clear's per page, over the 64 source lines it "
                                "only reads = %.2f per line read" % (what, fmt_spread(lcopy), rd))
    return out


def rep_mem_price(copy_64k_mem, store, fill):
    """rep_mem_line (unrounded) from a copy of 64 KiB whose source lines were flushed: its
    1024 destination lines stored and filled from the L2 (64 KiB is more than any L1d in
    the table), priced by the larger of the two streams, and the rest over its 1024 source
    lines from memory."""
    return (copy_64k_mem - 1024 * max(store, fill)) / 1024


def nop_fusion(ipc):
    """Nops per dispatch slot from {kind: [IPC per round]}: 1, or the whole ratio of the
    best nop IPC to the best of the other fillers (each a round another confirms,
    confirmed_best) when that is at least NOP_FUSION_RATIO (zero idioms and adds are never
    fused with each other, so they bound the slots)."""
    nop = confirmed_best(ipc["nop4"], largest=True) if ipc.get("nop4") else 0
    other = max((confirmed_best(v, largest=True) for k, v in ipc.items() if k != "nop4" and v),
                default=0)
    if other <= 0 or nop < NOP_FUSION_RATIO * other:
        return 1
    return int(round(nop / other))


def wong_step(fillers, t, min_ratio=1.5):
    """The step of one window-size curve (cycles per iteration at each filler count):
    lo/hi = medians of the first and last three points, the split with the fewest points
    on the wrong side of their midpoint. Returns {"n_lo", "n_hi", "bad", "ratio"} (n_lo
    the largest filler count before the split), or None when hi < min_ratio x lo."""
    if len(t) < 6 or len(t) != len(fillers):
        return None
    lo, hi = statistics.median(t[:3]), statistics.median(t[-3:])
    if hi < min_ratio * lo:
        return None
    mid = (lo + hi) / 2
    best = None
    for i in range(1, len(t)):
        bad = sum(1 for j, x in enumerate(t) if (x > mid if j < i else x < mid))
        if best is None or bad < best[1]:
            best = (i, bad)
    return {"n_lo": fillers[best[0] - 1], "n_hi": fillers[best[0]], "bad": best[1],
            "ratio": hi / lo}


def wong_size(steps, offset, agree=0.1, quorum=0.6, max_bad=0.1, npoints=None):
    """The structure size from the per-round steps (None where a round had no step): a
    round is clean when at most max_bad of its points sit on the wrong side; the size is
    the median n_lo of the clean rounds within `agree` of their median, plus `offset`
    (the chase loads when they use the structure too), if those are at least `quorum` of
    all rounds. Returns (size or None, reason)."""
    n = len(steps)
    clean = [s for s in steps if s and (npoints is None or s["bad"] <= max_bad * npoints)]
    if not clean:
        return None, "no round shows a clean step"
    med = statistics.median(s["n_lo"] for s in clean)
    near = [s["n_lo"] for s in clean if abs(s["n_lo"] - med) <= agree * max(med, 1)]
    if len(near) < quorum * n:
        return None, ("the rounds disagree: %d of %d rounds within %d%% of the median step"
                      % (len(near), n, round(100 * agree)))
    return int(round(statistics.median(near))) + offset, "%d of %d rounds agree" % (len(near), n)


def mlp_plateau(ks, t):
    """Memory-level parallelism from cycles per load at k chains: the plateau is the median
    of the last three points, MLP = t(1) / plateau; the knee is the first k within 10% of
    the plateau. Clean when t(1)/t(2) >= 1.5 (the misses do overlap) and the knee lies
    before the last three points (the plateau was reached). Returns a dict."""
    if len(ks) < 6 or ks[0] != 1:
        return {"clean": False, "why": "no k = 1 point or too few points"}
    plateau = statistics.median(t[-3:])
    mlp = t[0] / plateau
    knee = next((k for k, x in zip(ks, t) if x <= 1.1 * plateau), None)
    clean = t[0] / t[1] >= 1.5 and knee is not None and knee < ks[-3]
    return {"clean": clean, "mlp": mlp, "plateau": plateau, "knee": knee,
            "why": "" if clean else "the curve does not flatten before the largest k"}


def _fmt_curve(xs, ys, prec=0):
    return " ".join("%s:%.*f" % (x, prec, y) for x, y in zip(xs, ys))


# A small loop counts as replayed by the front end when its taken branches run at least
# this many times faster than the 33 of the general taken-branch loop.
LOOP_RATE_MIN = 1.25


def derive_loop_taken(raw, tl, general, d, measured, lookup):
    """loop_branches and loop_taken_per_cycle from loops of 2-28 taken branches an
    iteration (core.taken_loops): the fastest rate, rounded, if at least LOOP_RATE_MIN x the
    general one; the largest loop still above the midpoint of the two rates, if a larger
    one falls below it. No loop that fast: loop_branches 0 (no loop rule)."""
    sizes = tl["branches_per_iter"]
    per = [confirmed_best(cycles(raw, [row[i] for row in tl["ticks"]])) for i in range(len(sizes))]
    rates = [1.0 / x if x > 0 else 0.0 for x in per]
    curve = " ".join("%d:%.2f" % (n, r) for n, r in zip(sizes, rates))
    best = max(rates)
    d["taken_loops"] = {"sizes": sizes, "rates": rates, "general": general}
    text = ("loops of k always-taken jae (each to the next 16-byte block) and the loop branch, "
            "best confirmed round, taken per cycle by taken branches an iteration %s; the 33 of the "
            "general loop %.2f" % (curve, general))
    if best < LOOP_RATE_MIN * general:
        measured("loop_branches", 0, text + ": no small loop runs %.2fx faster, so no loop "
                 "rule" % LOOP_RATE_MIN)
        measured("loop_taken_per_cycle", 1, "unused while loop_branches is 0")
        return
    n = int(round(best))
    mid = (best + general) / 2
    inside = [s for s, r in zip(sizes, rates) if r >= mid]
    last = max(inside)
    falls = any(r < mid for s, r in zip(sizes, rates) if s > last)
    if not (n >= 1 and abs(best - n) <= TAKEN_TOLERANCE * n) or not falls:
        why = ("the fastest rate %.2f is not within %d%% of a whole number" % (
            best, 100 * TAKEN_TOLERANCE) if falls else
            "the rate does not fall below the midpoint within the largest loop")
        for k in ("loop_branches", "loop_taken_per_cycle"):
            lookup(k, "the measurement is not clean (%s), so the table's value: %s"
                   % (why, text), "measurement not clean")
        return
    measured("loop_taken_per_cycle", n, text + "; the fastest, %.2f, rounded" % best)
    measured("loop_branches", last, text + "; the largest loop at or above the midpoint "
             "(%.2f) of the two rates" % mid)


# A chain's cycles per taken branch within this much of a whole number of bubbles above
# the shortest chain's count as a clean step (the longer chains' front ends add fractions
# of a cycle: 2048 blocks of three uops are more than some micro-op caches hold).
BTB_TOLERANCE = 0.3


def derive_btb(raw, bt, d, measured, lookup):
    """btb_l0_entries and btb_bubble from chains of K distinct always-taken branches
    (core.btb). The core model charges a taken branch the level does not hold its own
    dispatch cycle and btb_bubble more, whatever taken_per_cycle is, so the bubble is the
    longest chain's cycles per taken branch minus one, rounded; the zero-bubble level
    holds the largest chain (a power of two) still below the midpoint between the shortest
    chain's cycles and the longest's. The longest no more than half a cycle slower than
    the shortest: no BTB rule (btb_l0_entries 0)."""
    ks = [n - 1 for n in bt["branches_per_lap"]]
    per = [confirmed_best(cycles(raw, [row[i] for row in bt["ticks"]])) for i in range(len(ks))]
    curve = " ".join("%d:%.2f" % (k, c) for k, c in zip(ks, per))
    base, slow = per[0], per[-1]
    step = slow - base
    d["btb"] = {"chains": ks, "cycles_per_taken": per, "step": step}
    text = ("chains of K always-taken jae, each to the next %d-byte block (at most %d KiB of "
            "code), run round a loop, cycles per taken branch by K, best confirmed round: %s" % (
                bt["spacing"], bt["spacing"] * ks[-1] // 1024, curve))
    if step < 0.5:
        measured("btb_l0_entries", 0, text + ": no chain is half a cycle slower than the "
                 "shortest, so no BTB rule")
        measured("btb_bubble", 0, "unused while btb_l0_entries is 0")
        return
    extra = slow - 1.0
    n = int(round(extra))
    mid = base + step / 2
    # the shortest chain is at or below the midpoint: some chain always is
    held = max(k for k, c in zip(ks, per) if c <= mid)
    pow2 = 1 << (held.bit_length() - 1)
    if n < 1 or abs(extra - n) > BTB_TOLERANCE:
        for k in ("btb_l0_entries", "btb_bubble"):
            lookup(k, "the measurement is not clean (the longest chain's %.2f cycles a taken "
                   "branch, minus its own cycle, is not within %.1f of a whole number of "
                   "cycles), so the table's value: %s" % (slow, BTB_TOLERANCE, text),
                   "measurement not clean")
        return
    measured("btb_bubble", n, text + "; the longest chain's %.2f minus the taken branch's own "
             "cycle, rounded" % slow)
    measured("btb_l0_entries", pow2, text + "; the largest chain at or below the midpoint "
             "(%.2f)%s" % (mid, "" if pow2 == held else ", %d, down to a power of two" % held))


def derive_core(raw, cpuid):
    """(values, comments, derivation) of CORE_KEYS. Each key is MEASURED where the native
    measurement is clean, else LOOKED UP in CORE_CPUS; UnknownCpu when a key must be
    looked up and the CPU is not in the table."""
    core = raw["core"]
    entry = core_cpu(cpuid)
    v, c, d, need, short = {}, {}, {}, [], {}
    tab = (lambda k: " (table, %s: %s)" % (entry[0], entry[1][k][0])) if entry else (lambda k: "")

    def measured(key, value, text):
        v[key] = str(value)
        c[key] = "MEASURED: " + text + tab(key)

    def lookup(key, why, reason):
        need.append(key)
        c[key] = why
        short[key] = reason

    # width
    w = core["width"]
    ipc = {k: [1.0 / (x * cpt) for x, cpt in zip(w[k], raw["core_per_tsc"]) if x > 0]
           for k in ("nop4", "add_imm", "xor_zero")}
    fused = nop_fusion(ipc)
    slots = ipc if fused == 1 else {k: x for k, x in ipc.items() if k != "nop4"}
    width, kind, best = width_from_ipc(slots)
    d["width_ipc"] = ipc
    d["nop_fusion"] = fused
    fusion_txt = ("" if fused == 1 else
                  "; the nops ran %.2fx faster than any other filler: this core fuses %d nops "
                  "into one dispatch slot and one window entry, so the width is the other "
                  "fillers' and nop counts below are divided by %d" % (
                      max(ipc["nop4"]) / best, fused, fused))
    measured("core_width", width, (
        "IPC of a loop of %d independent single-uop instructions (+ the fused loop branch), "
        "best round: 4-byte nops %s, adds to 12 registers %s, xor zero idioms %s (IPC per "
        "round); the largest another round confirms within %d %%, %.2f (%s), rounded%s. "
        "Rounds below it share the core with the "
        "SMT sibling (another tenant's vCPU: this VM sees 1 thread per core)" % (
            w["ops_per_iter"], "/".join("%.2f" % x for x in ipc["nop4"]),
            "/".join("%.2f" % x for x in ipc["add_imm"]),
            "/".join("%.2f" % x for x in ipc["xor_zero"]), 100 * CONFIRM_TOL, best, kind,
            "" if fused == 1 else " among adds and zero idioms" + fusion_txt)))

    # dependent chains
    lat = {k: cycles(raw, vals) for k, vals in core["lat"].items()}
    d["latency"] = {k: spread(x) for k, x in lat.items()}
    add, imul = spread(lat["add"]), spread(lat["imul"])
    ratio = min(core["lat"]["imul"]) / min(core["lat"]["add"])
    measured("lat_imul", int(round(ratio)), (
        "dependent imul r64 chain against a dependent add chain (1 cycle on every x86 core): "
        "%.2f adds per imul (imul %s; add %s; the clock assumes imul = 3, so this ratio is "
        "the independent figure)" % (ratio, fmt_spread(imul, prec=2), fmt_spread(add, prec=2))))
    ds, dl, d128 = (spread(lat[k]) for k in ("div_small", "div_large", "div_128"))
    measured("lat_div", int(round(ds[0] - 1)), (
        "dependent chain of div r64 by 7 with rdx = 0 and an 8-bit quotient, each followed by "
        "a 1-cycle lea that feeds the remainder back: %s per step, minus 1. Also: 61-bit "
        "quotient %s (minus 1: %.1f); 128-bit dividend rdx:rax, chained directly: %s"
        % (fmt_spread(ds), fmt_spread(dl), dl[0] - 1, fmt_spread(d128))))
    for key, k, what in (("lat_vec", "paddq", "paddq xmm"), ("lat_fp", "addsd", "addsd"),
                         ("lat_fpdiv", "divsd", "divsd by 1.0000001")):
        sp = spread(lat[k])
        extra = ("; mulsd chain %s" % fmt_spread(spread(lat["mulsd"]))) if k == "addsd" else ""
        measured(key, int(round(sp[0])), "dependent %s chain: %s%s" % (what, fmt_spread(sp),
                                                                       extra))

    # branch
    br = raw["branch"]
    bp, bq = cycles(raw, br["predictable"]), cycles(raw, br["random"])
    per_round = spread([(q - p) / 0.5 for p, q in zip(bp, bq)])
    mis = (confirmed_best(bq) - confirmed_best(bp)) / 0.5
    d["branch_mispredict"] = {"per_round": per_round, "from_minima": mis}
    measured("mispredict", int(round(mis)), (
        "one loop over %d random bytes branching on a random bit vs on an always-clear bit "
        "(both paths the same add): (best random - best predictable, each a round another confirms) per iteration / 0.5 "
        "(half the random branches mispredict) = %.1f; per round %s"
        % (br["n"], mis, fmt_spread(per_round))))

    # window sizes
    wong = core["wong"]
    offsets = {"rob_size": 2, "load_buffer": 2, "store_buffer": 0}
    what = {"rob_size": "nops", "load_buffer": "L1-hit loads", "store_buffer": "stores"}
    d["wong"] = {}
    for key in ("rob_size", "store_buffer", "load_buffer"):
        wk = wong[key]
        if wk.get("error") or not wk["fillers"]:
            lookup(key, "not measured (%s)" % wk.get("error", "no grid"), "not measured")
            continue
        curves = matrix_cycles(raw, wk["ticks"])
        steps = [wong_step(wk["fillers"], cv) for cv in curves]
        size, why = wong_size(steps, 0, npoints=len(wk["fillers"]))
        per_entry = fused if key == "rob_size" else 1
        if size is not None:
            size = int(round(size / per_entry)) + offsets[key]
        best = [min(col) for col in zip(*curves)]
        d["wong"][key] = {"steps": steps, "size": size, "why": why,
                          "min_curve": dict(zip(map(str, wk["fillers"]), best))}
        rounds_txt = ", ".join("%d-%d" % (s["n_lo"], s["n_hi"]) if s else "none"
                               for s in steps)
        text = ("Henry Wong's method: two independent 1 GiB pointer chases, one load of each "
                "per iteration, N %s (%s) between them; the step where an iteration goes from "
                "one memory latency to two, per round: %s (N before-after); %s. Best-of-rounds "
                "curve (N:cycles) %s. A core whose SMT sibling runs splits these structures "
                "in half (this VM sees one thread per core; a sibling would be another "
                "tenant's vCPU)" % (what[key], wk["filler"], rounds_txt, why,
                                    _fmt_curve(wk["fillers"][::4], best[::4])))
        if size is not None:
            measured(key, size, text + "; value = the step's N%s%s" % (
                " / %d (fused nops per entry, core_width)" % per_entry if per_entry > 1 else "",
                " + the two chase loads" if offsets[key] else ""))
        else:
            lookup(key, "the measurement is not clean, so the table's value: " + text,
                   "measurement not clean: " + why)

    # memory-level parallelism
    m = core["mlp"]
    mcv = [min(col) for col in zip(*matrix_cycles(raw, m["ticks"]))]
    mp = mlp_plateau(m["k"], mcv)
    d["mlp"] = dict(mp, curve=dict(zip(map(str, m["k"]), mcv)))
    text = ("k independent pointer chases through the 1 GiB arena, cycles per load (best "
            "round) k:cycles %s; t(1) / plateau = %.1f loads in flight, the curve within 10%% "
            "of its plateau from k = %s. This is the parallelism the whole path to memory "
            "gives (L1 fill buffers, and the L2's miss queue, page walks of a VM with 4 KiB "
            "host pages, the memory controller): the fill buffers bound it from above"
            % (_fmt_curve(m["k"], mcv), mp.get("mlp", 0), mp.get("knee")))
    if mp["clean"]:
        measured("fill_buffers", int(round(mp["mlp"])), text)
    else:
        lookup("fill_buffers", "the measurement is not clean (%s), so the table's value: %s"
               % (mp["why"], text), "measurement not clean: " + mp["why"])

    # the fill path from the L2 into the L1d, under a rep copy whose both streams miss it
    rep = raw.get("rep", {})
    if rep.get("movs_4k_l2"):
        per_page = spread(cycles(raw, rep["movs_4k_l2"]))
        per_clear = spread(cycles(raw, rep["stos_4k_l2"]))
    if rep.get("movs_4k_l2") and rep.get("timing") == "window":
        fill = per_clear[0] / 64
        measured("rep_fill_line", "%.2f" % fill, (
            "rep stosq of the destination pages of a copy through a %d KiB source and a %d KiB "
            "destination (more than any L1d, within any L2: every line from the L2, dirty), "
            "the %d pages in one window, best of 8 passes per round: %s per page, over its 64 "
            "lines = %.2f per line stored (the fill, and the dirty line the L1d writes back "
            "for it); the copy of those pages: %s" % (
                4 * rep["l2_pages"], 4 * rep["l2_pages"], rep["l2_pages"], fmt_spread(per_clear),
                fill, fmt_spread(per_page))))
    elif rep.get("movs_4k_l2"):
        fill = per_page[0] / 128
        measured("rep_fill_line", "%.2f" % fill, (
            "rep movsq of 4 KiB pages through a %d KiB source and a %d KiB destination (both "
            "streams from the L2: more than any L1d, within any L2), best of 8 passes per "
            "round, each page timed alone (raw figures of %s: the stores' drain partly "
            "outside the window): %s per page, over its 64 source + 64 destination lines "
            "filled = %.2f; the model bounds a copy by the larger of its fills and its stores "
            "(rep_store_line), so where the stores are the slower this price is not what "
            "decides it. rep stosq of those pages: %s" % (
                4 * rep["l2_pages"], 4 * rep["l2_pages"], raw.get("schema"), fmt_spread(per_page),
                fill, fmt_spread(per_clear))))
    else:
        lookup("rep_fill_line", "not measured (raw figures of %s, before the page copies from "
               "the L2)" % raw.get("schema"), "not measured")

    # prefetch: reported, the keys are looked up
    pf = core["prefetch"]
    seq, rnd = spread(cycles(raw, pf["sequential"])), spread(cycles(raw, pf["random"]))
    active = seq[0] * 4 < rnd[0]
    d["prefetch"] = {"sequential": seq, "random": rnd, "active": active}
    pf_text = ("user space cannot see the prefetch distance; measured for the record: a chase "
               "through %d clflushed lines in address order costs %s per line, in random order "
               "%s: %s" % (pf["lines"], fmt_spread(seq), fmt_spread(rnd),
                           "a stream prefetcher is at work" if active else
                           "NO sign of a stream prefetcher (the table's value is kept)"))
    lookup("prefetch_lines", pf_text, "not measurable from user space")
    lookup("prefetch_streams", "user space cannot count the streams tracked",
           "not measurable from user space")
    lookup("page_walkers", "user space cannot tell concurrent page walks from other TLB-miss "
           "overlap", "not measurable from user space")
    lookup("stores_per_cycle", "the store loop's rate also depends on the store buffer and the "
           "loop's branch", "not measured")

    # taken branches per cycle
    tk = core.get("taken")
    if tk:
        per = spread(cycles(raw, tk["ticks"]))
        best = confirmed_best(cycles(raw, tk["ticks"]))
        rate = 1.0 / best if best > 0 else 0.0
        n = int(round(rate))
        d["taken"] = {"cycles_per_taken": per, "rate": rate}
        text = ("a loop of %d always-taken branches, each to the next 16-byte block: %s per "
                "taken branch, best confirmed round %.2f taken per cycle" % (
                    tk["branches_per_iter"], fmt_spread(per, prec=2), rate))
        if n >= 1 and abs(rate - n) <= TAKEN_TOLERANCE * n:
            measured("taken_per_cycle", n, text + ", rounded")
        else:
            lookup("taken_per_cycle", "the measurement is not clean (%.2f per cycle is not "
                   "within %d%% of a whole number), so the table's value: %s"
                   % (rate, 100 * TAKEN_TOLERANCE, text), "measurement not clean")
    else:
        lookup("taken_per_cycle", "not measured (raw figures of %s, before the taken-branch "
               "loop)" % raw.get("schema"), "not measured")

    # taken branches in small loops
    tl = core.get("taken_loops")
    if tl and tk:
        derive_loop_taken(raw, tl, d["taken"]["rate"], d, measured, lookup)
    else:
        for k in ("loop_branches", "loop_taken_per_cycle"):
            lookup(k, "not measured (raw figures of %s, before the small taken-branch loops)"
                   % raw.get("schema"), "not measured")

    # the BTB's levels
    bt = core.get("btb")
    if bt and not bt.get("error"):
        derive_btb(raw, bt, d, measured, lookup)
    else:
        for k in ("btb_l0_entries", "btb_bubble"):
            lookup(k, "not measured (%s)" % (bt["error"] if bt else "raw figures of %s, "
                   "before the chains of taken branches" % raw.get("schema")),
                   "not measured" if not bt else "measurement failed")

    if need and not entry:
        raise UnknownCpu(
            "CPUID names %s family 0x%x model 0x%x (%s): not in the core table (CORE_CPUS in "
            "tools/baremm_lib/calibrate.py), and these keys must be looked up: %s. Add the "
            "CPU to the table with a public source for every key; no default is assumed. If "
            "a hypervisor reports a signature that is not the silicon's, name the real one "
            "with --cpuid-as FAMILY:MODEL"
            % (cpuid.get("vendor"), cpuid.get("family", 0), cpuid.get("model", 0),
               cpuid.get("brand", "").strip(),
               "; ".join("%s (%s)" % (k, short[k]) for k in need)))
    for k in need:
        val, source = entry[1][k]
        v[k] = str(val)
        c[k] = "LOOKED UP (%s): %s; %s" % (entry[0], source, c[k])
    d["core_table"] = entry[0] if entry else None
    d["looked_up"] = need
    return v, c, d


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


def matrix_cycles(raw, rows):
    """Per-round rows of ticks -> rows of core cycles, each with its round's clock."""
    cpt = raw["core_per_tsc"]
    if len(rows) != len(cpt):
        raise CalibrateError("a per-round matrix has %d rows for %d rounds"
                             % (len(rows), len(cpt)))
    return [[t * c for t in row] for row, c in zip(rows, cpt)]


def column(raw, series, key, i):
    return cycles(raw, [row[i] for row in raw[series][key]])


def fmt_spread(s, unit="cycles", prec=1):
    return "min {0:.{p}f} median {1:.{p}f} max {2:.{p}f} {3}".format(
        s[0], s[1], s[2], unit, p=prec)


# ---------------------------------------------------------------- published values

def read_profile(path):
    """A profile file as {key: (value text, comment)}."""
    with open(path) as f:
        return read_profile_text(f.read())


def read_profile_text(text):
    """Profile text as {key: (value text, comment)}."""
    out = {}
    for line in text.splitlines():
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


# A working set past the LLC: its chase costs more than this many times the chase at the
# first working set past the L2 (a DRAM access is several times an L3 hit on every x86).
LLC_RISE = 2.0


def effective_llc(ws, lat, l2_kib, llc_kib, ways=None):
    """The LLC capacity the chase finds (a VM shares the L3 with other tenants and gets a
    fraction of what CPUID says): from the first working set of at least 1.5x the L2
    (the L2 mostly missed), the largest working set whose chase latency @lat (cycles, by
    working set in KiB) stays within LLC_RISE x of it, at most the CPUID size @llc_kib;
    rounded down so that it divides into whole sets of @ways. Also the working set to
    read the LLC's latency at: the one nearest the geometric middle of that range."""
    first = min([w for w in ws if w >= 1.5 * l2_kib] or [max(ws)])
    ref = lat[first]
    last = first
    for w in sorted(w for w in ws if w > first):
        if w > llc_kib or lat[w] > LLC_RISE * ref:
            break
        last = w
    nxt = min([w for w in ws if w > last] or [0])
    kib = min(last, llc_kib)
    while ways and kib > 1 and (kib * 16) % ways:
        kib -= 1
    mid = math.sqrt(first * last)
    in_range = [w for w in ws if first <= w <= last]
    at = min(in_range, key=lambda w: (abs(math.log(w / mid)), w))
    return {"kib": kib, "first_ws_kib": first, "ref_cycles": ref, "last_ws_kib": last,
            "next_ws_kib": nxt or None, "next_cycles": lat[nxt] if nxt else None,
            "latency_ws_kib": at}


def _cache_level(leaf4, level):
    for c in leaf4:
        if c["level"] == level and c["type"] in ("data", "unified"):
            return c
    raise CalibrateError("CPUID's cache parameters (leaf 4 on Intel, 0x8000001D on AMD) "
                         "have no level-%d data cache" % level)


def parse_cpuid_as(text):
    """(family, model) from --cpuid-as "FAMILY:MODEL" (each decimal or 0x-hex)."""
    try:
        fam, model = (int(x, 0) for x in text.split(":"))
    except ValueError:
        raise CalibrateError("--cpuid-as %r: expected FAMILY:MODEL, e.g. 6:0xad" % text)
    if not (0 < fam <= 0x10F and 0 <= model <= 0xFF):
        raise CalibrateError("--cpuid-as %r: family 1..0x10f and model 0..0xff" % text)
    return fam, model


# How a profile's header names the CPU --cpuid-as chose (cpuid_identity writes it,
# cpuid_as_in_profile reads it back from a recorded profile).
CPUID_AS_NOTE = "identified by --cpuid-as as family 0x%x model 0x%x"
_CPUID_AS_RE = re.compile(CPUID_AS_NOTE.replace("%x", "([0-9a-f]+)"))


def cpuid_as_in_profile(text):
    """(family, model) a profile's header says --cpuid-as named, else None."""
    m = _CPUID_AS_RE.search(text)
    return (int(m.group(1), 16), int(m.group(2), 16)) if m else None


def cpuid_identity(raw):
    """(cpuid dict the derivation uses, note or None). raw["cpuid_as"] (from --cpuid-as)
    replaces the family and model CPUID reported, for a hypervisor that masks the
    signature; the note keeps both in the profile so the choice is never silent."""
    cpuid = raw["cpuid"]
    alias = raw.get("cpuid_as")
    if not alias:
        return cpuid, None
    note = ("CPUID reports family 0x%x model 0x%x; " % (cpuid.get("family", 0),
                                                        cpuid.get("model", 0))
            + CPUID_AS_NOTE % (alias["family"], alias["model"]))
    return dict(cpuid, family=alias["family"], model=alias["model"]), note


def derive(raw, topology=None, root=None):
    """The profile from the raw figures: (entries [(key, value, comment)], header lines,
    derivation dict). A fixed function of the raw figures; no value is chosen by looking
    at anything the profile will be compared with."""
    if raw.get("schema") not in RAW_SCHEMAS:
        raise CalibrateError("raw figures: schema %r, expected one of %s"
                             % (raw.get("schema"), ", ".join(RAW_SCHEMAS)))
    cpuid, as_note = cpuid_identity(raw)
    rounds = raw["rounds"]
    pub, statement = published(cpuid, root)
    if as_note:
        statement = as_note + "; " + statement
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

    # caches: sizes and ways from CPUID's cache parameters, latencies from the chase plateaus
    leaf4 = cpuid["leaf4"]
    cleaf = "CPUID leaf %s" % ("0x8000001D" if cpuid.get("cache_leaf") == 0x8000001D else "4")
    l1, l2, l3 = (_cache_level(leaf4, n) for n in (1, 2, 3))
    ws = raw["chase"]["ws_kib"]
    lat4k = {w: spread(column(raw, "chase", "ticks_4k", i)) for i, w in enumerate(ws)}
    lat2m = {w: spread(column(raw, "chase", "ticks_2m", i)) for i, w in enumerate(ws)}
    # whole laps (raw/4): what the LLC's capacity and latency are read from; before them,
    # the best short run, which finds the luckiest stretch of a cycle larger than a cache
    laps = "lap_ticks_2m" in raw["chase"]
    lap2m = ({w: spread(column(raw, "chase", "lap_ticks_2m", i)) for i, w in enumerate(ws)}
             if laps else lat2m)
    lap4k = ({w: spread(column(raw, "chase", "lap_ticks_4k", i)) for i, w in enumerate(ws)}
             if laps else lat4k)
    lap_txt = ("whole laps of the cycle, best of 2 after a warm lap" if laps else
               "best of 16 x 4096 loads (raw figures from before the whole laps)")
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

    nested, c["nested_page_kib"] = nested_page_from_probe(
        probe.get("lines") and (p2[0], p4[0]), raw["cpuid"].get("hypervisor", "").strip())
    v["nested_page_kib"] = str(nested)

    for lvl, key, info in ((1, "l1d", l1), (2, "l2", l2), (3, "llc", l3)):
        v[key + "_kib"] = str(info["kib"])
        v[key + "_ways"] = str(info["ways"])
        c[key + "_kib"] = cleaf + ", level %d: %d sets x %d ways x %d B" % (
            lvl, info["sets"], info["ways"], info["line"])
        c[key + "_ways"] = cleaf + ", level %d" % lvl

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
    # LLC: the capacity this host's L3 gives the chase (effective_llc), and its latency
    # in the middle of that range, inside the STLB's reach; every page misses the L1
    # dTLB, so the STLB hit is subtracted
    eff = effective_llc(ws, {w: lap2m[w][0] for w in ws}, l2["kib"], l3["kib"], l3["ways"])
    w3 = eff["latency_ws_kib"]
    if w3 > stlb_entries * 4 * 3 // 4:
        w3 = _pick(ws, eff["first_ws_kib"], stlb_entries * 4 * 3 // 4)
    d["effective_llc"] = eff
    llc_raw = lap4k[w3]
    v["llc_lat"] = str(round(llc_raw[0] - stlb_lat))
    c["llc_lat"] = ("measured: same chase, %d KiB working set (%d pages, within the STLB; the "
                    "middle of the range the L3 holds, llc_kib), %s: %s, minus stlb_lat"
                    % (w3, w3 // 4, lap_txt, fmt_spread(llc_raw)))

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
    if eff["kib"] < l3["kib"]:
        v["llc_kib"] = str(eff["kib"])
        c["llc_kib"] = ("measured, the capacity the chase finds: %s gives %d KiB (%d sets x %d "
                        "ways), shared with whatever else runs on the host; " % (
                            cleaf + ", level 3", l3["kib"], l3["sets"], l3["ways"]))
    else:
        c["llc_kib"] += "; the chase finds all of it: "
    c["llc_kib"] += ("the THP chase (%s) costs %.0f cycles at %d KiB (the first working set of "
                     "at least 1.5x the L2) and stays within %.1fx of that up to %d KiB%s" % (
                         lap_txt, eff["ref_cycles"], eff["first_ws_kib"], LLC_RISE, eff["last_ws_kib"],
                         "; %d KiB costs %.0f" % (eff["next_ws_kib"], eff["next_cycles"])
                         if eff["next_ws_kib"] else ""))

    # TLB: reach from the one-line-per-page chase; walk cost from its 4 KiB series at 4x
    # the STLB reach, where data lines and PTEs are L2-resident
    dtlb_edge = next((n for n in pages if t4k[n][0] - base > stlb_lat / 2), None)
    stlb_edge = next((n for n in pages if n > dtlb_entries and t4k[n][0] - t2m[n][0] > 3),
                     None)
    d["tlb_reach"] = {"dtlb_first_miss_pages": dtlb_edge, "stlb_first_miss_pages": stlb_edge}
    nw = _pick(pages, 4 * stlb_entries, 4 * stlb_entries)
    walk = t4k[nw][0] - float(v["l2_lat"]) - stlb_lat
    walk_guest2m = t2m[nw][0] - float(v["l2_lat"]) - stlb_lat
    leaf = nested_leaf_price(nested, v)
    loads = 3 * int(v["l1d_lat"]) + int(v["l2_lat"]) + leaf
    d["walk"] = {"pages": nw, "walk_cycles": walk, "walk_cycles_guest_2m": walk_guest2m,
                 "model_table_loads": loads,
                 "per_pages": {str(n): t4k[n][0] - float(v["l2_lat"]) - stlb_lat
                               for n in pages if n >= 2 * stlb_entries}}
    v["walk_overhead"] = str(max(0, round(walk - loads)))
    c["walk_overhead"] = (
        "measured: one-line-per-page chase at %d 4 KiB pages (4x the STLB; data and PTEs "
        "L2-resident): %.1f cycles per load, minus l2_lat (the data) and stlb_lat = a walk "
        "of %.1f cycles; minus the model's table loads at that size (3 x l1d_lat + "
        "l2_lat%s = %d)%s. The same chase in the THP buffer (guest 2 MiB pages, one guest "
        "level less): a walk of %.1f. %s" % (
            nw, t4k[nw][0], walk,
            {0: "", "l1d_lat": " + l1d_lat for the nested leaf entry",
             "l2_lat": " + l2_lat for the nested leaf entry"}[nested_leaf_level(nested)],
            loads, "" if walk >= loads else " (negative: clamped to 0; the model's walk costs "
            "more than this one, which the paging-structure caches shorten)", walk_guest2m,
            "THIS HOST IS A VM: a native walk here is two-dimensional (every guest table load "
            "is itself translated through the hypervisor's tables); the model loads the "
            "nested leaf entry of the page (nested_page_kib) and leaves the rest of the "
            "nested part to this figure" if nested else
            "No nested paging is modelled (nested_page_kib = 0)"))
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
    # the measurer times the q forms kernel/string.c runs; a recording made before it did
    # ("form" absent) timed the b forms
    form = rep.get("form", "b")
    key = (lambda k: k) if form == "q" else (lambda k: k.replace("movs", "movsb").replace("stos", "stosb"))
    op = {"movs": "rep movs" + form, "stos": "rep stos" + form}
    movs = spread(cycles(raw, rep[key("movs_4k_l1")]))
    stos = spread(cycles(raw, rep[key("stos_4k_l1")]))
    store = rep_store_price(movs[0], stos[0])
    v["rep_store_line"] = "%.2f" % store
    how = ("%d of them in one window, best of 20 per round" % rep["l1_repeats"]
           if rep.get("timing") == "window" else "each timed alone, best of 20 per round")
    c["rep_store_line"] = (("measured: %s and %s of 4 KiB within L1, " + how + ": %s and %s "
                            "= %.2f and %.2f per line stored (64 destination lines each; the "
                            "copy's 64 source lines are L1 hits); the model has one price for "
                            "both: their mean, %.2f") % (
                               op["movs"], op["stos"], fmt_spread(movs), fmt_spread(stos),
                               movs[0] / 64, stos[0] / 64, store))
    mm = spread(cycles(raw, rep[key("movs_64k_from_mem")]))
    sm = spread(cycles(raw, rep[key("stos_64k_to_mem")]))
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

    cv, cc, cd = derive_core(raw, cpuid)
    v.update(cv)
    c.update(cc)
    d["core"] = cd
    if c["mispredict"].startswith("MEASURED"):
        total = cd["branch_mispredict"]["from_minima"]
        v["mispredict"], note = mispredict_refill(total, int(v["l1d_lat"]))
        c["mispredict"] += note

    # the copy from memory and the other fill prices, once rep_fill_line (a core key) is known
    fill = float(v["rep_fill_line"])
    for k, (val, com) in rep_fill_prices(raw, fill, int(v["l2_kib"]), int(v["llc_kib"])).items():
        v[k], c[k] = val, com
    stream = 1024 * max(store, fill)
    rep_mem = rep_mem_price(mm[0], store, fill)
    v["rep_mem_line"] = str(max(0, round(rep_mem)))
    c["rep_mem_line"] = ("measured: %s of 64 KiB from clflushed source lines, best of 8 "
                         "per round: %s; minus the stream's price (1024 lines x the larger of "
                         "rep_store_line and rep_fill_line, %.0f), over 1024 source lines = "
                         "%.1f; %s 64 KiB to flushed lines: %.1f per line" % (
                             op["movs"], fmt_spread(mm), stream, rep_mem, op["stos"],
                             sm[0] / 1024))

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
    header.append("Out-of-order core keys (%s): MEASURED where a user-space measurement is "
                  "clean, else LOOKED UP in the core table (%s)" % (
                      ", ".join(CORE_KEYS), cd["core_table"] or "no entry for this CPU"))
    d.update({"l1d_ws_kib": w1, "l2_ws_kib": w2, "llc_ws_kib": w3, "stlb_pages": stlb_ns,
              "stlb_lat_exact": stlb_lat, "rep_store_line_exact": store,
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


def _parser_check(binary, path):
    r = subprocess.run([binary, "--check", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    return r.returncode == 0, (r.stdout if r.returncode == 0 else r.stderr).strip()


def check_profile(binary, path):
    """(ok, message): the plugin's own parser (model/profile.c) on the written file."""
    return _parser_check(binary, path)


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
    alias = getattr(a, "cpuid_as", None)
    if alias:
        try:
            alias = parse_cpuid_as(alias)   # refused before anything is measured
        except CalibrateError as e:
            sys.stderr.write("baremm: calibrate: %s\n" % e)
            return st.EXIT_USAGE
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
        if alias:
            raw["cpuid_as"] = {"family": alias[0], "model": alias[1]}
        cfg, js, entries, d = write(raw, out_dir, topo)
        ok, msg = check_profile(binary, cfg)
    except UnknownCpu as e:
        sys.stderr.write("baremm: calibrate: %s\n" % e)
        return st.EXIT_UNKNOWN_CPU
    except (OSError, ValueError, KeyError, CalibrateError) as e:
        sys.stderr.write("baremm: calibrate: %s\n" % e)
        return st.EXIT_TOOL_ERROR
    for k, val, _ in entries:
        print("  %-16s %s" % (k, val))
    print("baremm: %s" % d["published"])
    core = d["core"]
    print("baremm: core keys MEASURED: %s; LOOKED UP (%s): %s" % (
        ", ".join(k for k in CORE_KEYS if k not in core["looked_up"]),
        core["core_table"], ", ".join(core["looked_up"]) or "none"))
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
    p.add_argument("--cpuid-as", default=None, metavar="FAMILY:MODEL",
                   help="the silicon's CPUID family and model when a hypervisor reports "
                        "another (e.g. 6:0xad); both are written into the profile")
    p.add_argument("--quick", action="store_true",
                   help="fewer working sets, a 64 MiB memory buffer: a smoke test, not a "
                        "calibration")
    p.set_defaults(func=main)
    return p
