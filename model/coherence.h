/*
 * Across CPUs (coherence.c, docs/COSTMODEL.md "Across CPUs"): the directory of modified
 * lines, core-to-core transfers, reads for ownership and invalidations, causal reads,
 * waits (a pause spin that a store of another CPU ends) and IPIs (send, delivery, take).
 * QEMU-free: the glue (costmodel.c) calls it from its callbacks, the host test
 * (test_coherence.c) on synthetic access streams.
 *
 * Contract:
 * - Every function that takes a cpu acts for the CPU whose callback is running (the glue's
 *   identified slot), and touches other CPUs' state only as that CPU's action would:
 *   invalidating their copies, marking an IPI pending for them.
 * - Coherence never computes a clock. It asks through struct coh_clock, and only for the
 *   CPU it acts for (cpu): now() for the clock as it stands, set() to move it when a wait
 *   ends or an IPI is taken. So a core model may compute the clock as it likes.
 * - Events are counted into the CPU's ev[] array (struct cpu_acct's, clock.h), which the
 *   glue hands over at coh_cpu_init(); at the end of a wait coherence puts that array
 *   back to its values at the wait's start.
 * - With one CPU (coh_init with n == 1) coh_access() is the hierarchy alone: no directory,
 *   no waits, no IPIs; the glue calls nothing else here.
 * - With prefetch (coh_init), every access of coh_access() that misses the CPU's L1d is
 *   shown to its L2 stream prefetcher (prefetch.h), and the lines it asks for are filled
 *   into the CPU's L2 and LLC at once (no timeliness: a prefetched line is there for the
 *   next access), each counted as EV_PREFETCH. A line already in the L2 is left alone;
 *   with several CPUs a line the directory says another CPU holds modified is skipped,
 *   and a filled line gets this CPU's sharer bit, so another CPU's store invalidates it.
 *   Without prefetch nothing of this runs (the figures are the model's without it).
 */
#ifndef BAREMM_MODEL_COHERENCE_H
#define BAREMM_MODEL_COHERENCE_H

#include "model/model.h"
#include "model/clock.h"
#include "model/prefetch.h"

/* How coherence reads and moves a CPU's clock (x100); the glue implements it. */
struct coh_clock {
	/* The clock of cpu as it stands in the running callback. */
	u64 (*now)(unsigned cpu);
	/* From now on the clock of cpu reads t; what its other parts do not explain of t is
	 * booked in part (PT_WAIT for waits, PT_IPI for IPIs). */
	void (*set)(unsigned cpu, u64 t, int part);
	/* NULL: a store is visible to other CPUs from its start (the in-order core: its clock
	 * already holds every older store's price). Else the core has a store buffer, and a
	 * store becomes visible when it drains: no earlier than store_floor(cpu) (x100, the
	 * CPU's own clock), when its older stores have drained in the core, nor before its
	 * own read for ownership as the hierarchy priced it, nor before the CPU's previous
	 * store became visible (stores drain in program order, whatever line they write). */
	u64 (*store_floor)(unsigned cpu);
};

/* One CPU as coherence sees it. The glue sets the xAPIC fields from the guest's register
 * writes; everything else is coherence's. */
struct coh_cpu {
	bool live;		/* coh_cpu_init() ran */
	struct hierarchy h;	/* its L1d, L2 (the glue's) and LLC (coherence's) */
	u64 *ev;		/* its event counters */
	u64 last_line;		/* most recent line of the plain path: the L1's MRU line */
	struct prefetcher pf;	/* its L2 stream prefetcher (coh.prefetch) */
	bool rep;		/* within coh_access_rep(): the access does not train it */
	u64 inval_line, inval_epoch;	/* last line this CPU's store invalidated elsewhere */
	u64 store_vis;		/* x100: when its latest store became visible (coh_clock.store_floor) */
	/* waits */
	bool waiting;		/* after a pause: nothing is charged until it ends */
	u64 wait_clock;		/* x100: the clock at the last load before the pause */
	u64 wait_seq;		/* store_seq at that load: stores after it wake the CPU */
	u64 wait_ev[NR_MEV];	/* events at the wait's start (restored at the wake) */
	u64 ld_clock, ld_seq;	/* clock x100 and store_seq at this CPU's latest load */
	u64 ld_pev[NR_PEV];	/* and the part events then (a wait that starts there restores them) */
	/* IPIs */
	bool ipi_pending;	/* an IPI was sent to this CPU and not taken yet */
	u64 ipi_at;		/* x100: its earliest start (send + ipi_latency) */
	bool halted;		/* its last instruction was a HLT (cleared by its next block) */
	u64 ipi_shift;		/* x100: until its IRET, how far behind the IPI it took it ran */
	u32 xapic_icr_hi;	/* the last value this CPU stored to the xAPIC ICR high */
	u32 xapic_ldr, xapic_dfr;	/* its xAPIC logical destination and destination format */
};

struct dent;

struct coherence {
	struct profile p;
	struct coh_clock clk;
	unsigned n;		/* CPUs (slots) */
	bool multi;		/* n > 1: the directory, waits and IPIs are modelled */
	bool causal;		/* a load cannot see a store from its future (causal=off drops it) */
	bool prefetch;		/* L2 stream prefetchers (prefetch=on) */
	struct coh_cpu *cpu;
	struct cache *llcs;	/* one LLC per socket (CCD) that has CPUs */
	unsigned nllc;
	struct dent *dir;	/* multi only */
	void *dir_map;
	size_t dir_map_len;
	u64 store_seq;		/* stores to lines in the directory so far */
	u64 switches;		/* times the running CPU changed (coh_switched) */
};
extern struct coherence coh;

/* Sets up n CPUs (none live yet), their sockets' LLCs and, with prefetch, their L2 stream
 * prefetchers (the profile's prefetch_streams and prefetch_lines). 0, or -1 out of memory. */
int coh_init(const struct profile *p, unsigned n, bool causal, bool prefetch, const struct coh_clock *clk);
void coh_free(void);
/* CPU cpu comes up with these private caches and event counters. */
void coh_cpu_init(unsigned cpu, struct cache *l1, struct cache *l2, u64 *ev);
/* CPU n sits on socket (n / cores_per_socket) % sockets. */
unsigned coh_socket_of(unsigned cpu);

/* Another CPU runs from now on (the glue identified a switch). */
static inline void coh_switched(void)
{
	coh.switches++;
}

/* The cache part of one access of cpu to a physical line (rmw: the load half of an
 * atomic), in cycles: what the clock does not already hold of it (a wait that ends here
 * has moved the clock past the access, and returns 0). */
u64 coh_access(unsigned cpu, u64 line, bool store, bool rmw);
/* The same for a line of a rep string, which the stream prefetcher does not see: a rep
 * string's price per line (rep_fill_line, rep_llc_line ...) was measured with the
 * hardware's prefetchers at work, so the level that holds the line, not a prefetch the
 * string's own first lines set off, decides its price. */
u64 coh_access_rep(unsigned cpu, u64 line, bool store);

/* PAUSE: cpu spins; its wait starts at its last load before the pause. */
void coh_pause(unsigned cpu);
/* A wait that ends with no load that explains it (a marker, a HLT): nothing of the spin
 * is charged. */
void coh_wait_abandon(unsigned cpu);
/* HLT: cpu idles until an IPI. */
void coh_hlt(unsigned cpu);
/* IRET: the end of the handler of an IPI cpu took while behind. */
static inline void coh_iret(unsigned cpu)
{
	coh.cpu[cpu].ipi_shift = 0;
}
/* An ICR write by cpu: icr_lo's bits 18-19 are the shorthand, dest the destination when
 * there is none: the APIC ID (= slot), or logical IDs when ICR bit 11 says so (x2: the
 * x2APIC's logical IDs, else xAPIC's LDR/DFR). The targets take it at their next block. */
void coh_send_ipi(unsigned cpu, u32 icr_lo, u32 dest, bool x2);
/* cpu takes the IPI pending for it (coh_block_start does it). */
void coh_take_ipi(unsigned cpu);
/* A block of cpu starts: a pending IPI is taken, and the CPU is not halted any more. */
static inline void coh_block_start(unsigned cpu)
{
	struct coh_cpu *c = &coh.cpu[cpu];
	if (c->ipi_pending)
		coh_take_ipi(cpu);
	c->halted = false;
}

/* The directory's view of a line (tests): its modified owner's slot, or -1 when clean or
 * not in the directory. */
int coh_owner(u64 line);

#endif
