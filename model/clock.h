/*
 * What one CPU has done, as every room of the cost model counts it, and the clock made of
 * it (clock.c). QEMU-free.
 *
 *   the glue (costmodel.c)      counts instructions, fixed penalties and memory cycles
 *                               into a CPU's struct cpu_acct, and events into its ev[];
 *   coherence (coherence.c)     puts events back at the end of a wait and moves the clock
 *                               (through struct coh_clock, which the glue implements with
 *                               acct_clock() and acct_clock_set());
 *   the protocol (protocol.c)   reads clocks, events and parts at markers.
 *
 * In-order (core=inorder): the clock (x100) is instructions x base_cpi + (penalties +
 * memory cycles) x 100 + adj, adj being how far waits and IPIs moved it. Out-of-order
 * (core=ooo): the clock is the core's commit clock (core.h) x 100, and its parts are the
 * core's; waits and IPIs move it through core_advance_to(), never backwards. Its parts (PT_*) add up to it: the first six
 * follow from the events part_ev[] names, PT_WAIT and PT_IPI are what acct_clock_set()
 * books when it moves the clock.
 */
#ifndef BAREMM_MODEL_CLOCK_H
#define BAREMM_MODEL_CLOCK_H

#include "model/model.h"

/* ---- events ---- */

enum {
	EV_L1D_MISS, EV_L2_MISS, EV_LLC_MISS, EV_DTLB_MISS, EV_STLB_MISS, EV_WALK, EV_WALK_CYCLES,
	EV_ATOMIC, EV_SERIALISE, EV_IRET, EV_REP_LINES, EV_WALK_FAIL, EV_COH_INVAL, EV_INVLPG,
	EV_CR3_WRITE, EV_TLB_FLUSH_ALL, EV_FENCE, EV_PAUSE, EV_HLT, EV_IO, EV_MEM_ACCESS,
	/* across CPUs (docs/COSTMODEL.md, "Across CPUs") */
	EV_C2C, EV_C2C_REMOTE, EV_RFO_INVAL, EV_WAIT, EV_WAIT_CYCLES, EV_IPI_SENT, EV_IPI_WAIT_CYCLES,
	/* where the memory cycles went, so a figure's difference can be taken apart */
	EV_CYC_CACHE, EV_CYC_TLB, EV_CYC_REP,
	/* the clock's other parts, counted outside struct tb_counts' mask: instructions (rep
	 * strings once per execution), fixed penalties, MMIO cycles */
	EV_INSNS, EV_CYC_PEN, EV_CYC_IO,
	/* IPIs that reached a running CPU whose clock was behind send + ipi_latency */
	EV_IPI_BEHIND, EV_IPI_BEHIND_CYCLES,
	/* a line that only another socket's (CCD's) LLC held */
	EV_LLC_REMOTE,
	/* lines the L2 stream prefetcher filled into the L2 (prefetch=on) */
	EV_PREFETCH,
	/* the out-of-order core's own counts (core=ooo), read from its struct core_stats:
	 * branches and mispredicted ones, dispatches a full ROB, load or store buffer
	 * delayed, misses that waited for a fill buffer, loads an in-flight store served,
	 * taken branches and those the zero-bubble BTB level did not hold */
	EV_BRANCHES, EV_MISPREDICTS, EV_ROB_STALLS, EV_LB_STALLS, EV_SB_STALLS, EV_FB_WAITS,
	EV_FORWARDS, EV_TAKEN, EV_BTB_MISSES,
	NR_MEV
};
/* The names in ev.model_<name> fields, by event. */
extern const char *const ev_names[NR_MEV];
/* The events a line shows: the core's (EV_BRANCHES on) only with the out-of-order core,
 * so the in-order one's lines keep theirs. */
extern unsigned nr_ev_shown;

/* ---- where a figure's cycles went (the part.* fields of BAREMM-RESULT) ---- */

enum { PT_INSNS, PT_PEN, PT_CACHE, PT_TLB, PT_REP, PT_IO, PT_WAIT, PT_IPI, PT_BRANCH, NR_PART };
extern const char *const part_names[NR_PART];
/* The parts a result line shows: PT_BRANCH (mispredicted branches) only exists with the
 * out-of-order core; the in-order one's lines keep their eight. */
extern unsigned nr_part_shown;
/* The events the first six parts come from (a wait puts them back to their values at its
 * start, so its spin is in none of them). */
#define NR_PEV 6
extern const int part_ev[NR_PEV];

/* ---- what a translation block (or the tail of one after a marker) adds when it runs ---- */

struct tb_counts {
	u32 insns;		/* instructions, rep string instructions excluded */
	u32 evmask;		/* events with a nonzero count below */
	u64 pen;		/* fixed penalties, cycles */
	u16 ev[NR_MEV];
};
_Static_assert(EV_INSNS <= 32, "tb_counts.evmask has 32 bits for the events a block carries");

/* ---- one CPU's account ---- */

struct cpu_acct {
	u64 insns;		/* instructions, rep string instructions excluded */
	u64 rep_execs;		/* rep string instructions (each counted once) */
	u64 pen;		/* fixed penalties, cycles */
	u64 cyc;		/* memory cycles */
	u64 ev[NR_MEV];
	int64_t adj;		/* clock correction x100: waits and IPIs move the clock */
	int64_t part_wait, part_ipi;	/* x100: PT_WAIT and PT_IPI */
	/* the out-of-order core (core.h) when the plugin runs one (core=ooo): then it alone
	 * is the clock and its parts; instructions fed to it are exactly those before the
	 * marker or access being priced, so no tail is subtracted */
	struct core *core;
};

struct core;

/* The price of an instruction, from the profile; before any clock is read. ooo: the
 * accounts carry an out-of-order core (cpu_acct.core). */
void clock_init(const struct profile *p, bool ooo);

/* A block ran (the glue's per-block callback). */
static inline void acct_add_block(struct cpu_acct *a, const struct tb_counts *c)
{
	a->insns += c->insns;
	a->pen += c->pen;
	a->ev[EV_INSNS] += c->insns;
	a->ev[EV_CYC_PEN] += c->pen;
	for (u32 m = c->evmask; m; m &= m - 1) {
		int e = __builtin_ctz(m);
		a->ev[e] += c->ev[e];
	}
}

/* The clock x100, less what the rest of the running block (tail, may be NULL) has
 * already added. */
u64 acct_clock(const struct cpu_acct *a, const struct tb_counts *tail);
/* The events, and the clock's parts (x100), less the tail likewise. */
void acct_events(const struct cpu_acct *a, u64 ev[NR_MEV], const struct tb_counts *tail);
void acct_parts(const struct cpu_acct *a, int64_t p[NR_PART], const struct tb_counts *tail);
/* From now on the clock reads t (x100); what the other parts do not explain of t is
 * booked in part (PT_WAIT or PT_IPI), so the parts add up to t. */
void acct_clock_set(struct cpu_acct *a, u64 t, int part);

#endif
