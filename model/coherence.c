/*
 * Across CPUs: a directory of modified lines, waits, IPIs (coherence.h, docs/COSTMODEL.md
 * "Across CPUs").
 *
 * Per line the directory keeps its modified owner (the last CPU that stored it, until
 * another CPU reads it or the owner's private caches drop it) and the last store: which
 * CPU, its clock then, and the store's place in the global order of stores (store_seq).
 * Sharers are the CPUs whose private L1d/L2 hold the line. The table is direct-mapped by
 * a hash of the line number: a line whose slot another line took is treated as modified
 * nowhere (deterministic, and rare among the few hot shared lines).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "model/coherence.h"

struct coherence coh;

struct dent {
	u64 tag;	/* line + 1; 0 = empty */
	u64 wclock;	/* x100: the writer's clock at the last store */
	u64 seq;	/* store_seq of the last store */
	u16 owner;	/* modified owner's slot + 1; 0 = clean (shared or nowhere) */
	u16 writer;	/* slot of the last store's CPU */
	/* A speed aid that prices nothing: bit (slot % 32) is set for every slot whose L1d or
	 * L2 may hold the line (a superset; all bits while unknown, i.e. since the entry was
	 * made). A store then looks only in those CPUs' caches for copies to invalidate. */
	u32 sharers;
};
_Static_assert(sizeof(struct dent) == 32, "two directory entries per host cache line");
#define DIR_BITS 22

/* The directory is 128 MiB touched at random: on 2 MiB host pages its lookups miss the
 * host's TLB far less (zeroed like calloc's memory). */
static int dir_alloc(void)
{
	size_t len = sizeof(struct dent) << DIR_BITS, huge = (size_t)2 << 20;
	u8 *p = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	u8 *a = (u8 *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
	madvise(a, len, MADV_HUGEPAGE);	/* advice only: without it the table still works */
#endif
	coh.dir_map = p;
	coh.dir_map_len = len + huge;
	coh.dir = (struct dent *)a;
	return 0;
}

int coh_init(const struct profile *p, unsigned n, bool causal, bool prefetch, const struct coh_clock *clk)
{
	coh_free();
	coh.p = *p;
	coh.clk = *clk;
	coh.n = n;
	coh.multi = n > 1;
	coh.causal = causal;
	coh.prefetch = prefetch;
	coh.cpu = calloc(n, sizeof(*coh.cpu));
	if (!coh.cpu || (coh.multi && dir_alloc()))
		return -1;
	for (unsigned i = 0; prefetch && i < n; i++)
		if (pf_init(&coh.cpu[i].pf, (unsigned)p->prefetch_streams, (unsigned)p->prefetch_lines))
			return -1;
	/* an LLC per socket (CCD) with CPUs: CPU n uses coh_socket_of(n)'s */
	u64 used = (n + p->cores_per_socket - 1) / p->cores_per_socket;
	coh.nllc = (unsigned)(used < p->sockets ? used : p->sockets);
	coh.llcs = calloc(coh.nllc, sizeof(*coh.llcs));
	if (!coh.llcs)
		return -1;
	for (unsigned i = 0; i < coh.nllc; i++)
		if (cache_init(&coh.llcs[i], p->llc_kib, p->llc_ways))
			return -1;
	return 0;
}

void coh_free(void)
{
	if (coh.dir_map)
		munmap(coh.dir_map, coh.dir_map_len);
	for (unsigned i = 0; coh.llcs && i < coh.nllc; i++)
		cache_free(&coh.llcs[i]);
	for (unsigned i = 0; coh.cpu && i < coh.n; i++)
		pf_free(&coh.cpu[i].pf);
	free(coh.llcs);
	free(coh.cpu);
	memset(&coh, 0, sizeof(coh));
}

unsigned coh_socket_of(unsigned cpu)
{
	return (unsigned)((cpu / coh.p.cores_per_socket) % coh.p.sockets);
}

void coh_cpu_init(unsigned cpu, struct cache *l1, struct cache *l2, u64 *ev)
{
	struct coh_cpu *c = &coh.cpu[cpu];
	c->h = (struct hierarchy){ l1, l2, &coh.llcs[coh.nllc > 1 ? coh_socket_of(cpu) : 0], coh.llcs, coh.nllc };
	c->ev = ev;
	c->last_line = ~0ull;
	c->inval_line = ~0ull;
	c->xapic_dfr = ~0u;	/* the xAPIC's reset value: flat model */
	c->live = true;
}

static inline u64 clock_now(unsigned cpu)
{
	return coh.clk.now(cpu);
}

static inline u32 sharer_bit(unsigned slot)
{
	return 1u << (slot & 31);
}

static inline struct dent *dir_get(u64 line, bool create)
{
	struct dent *d = &coh.dir[(line * 0x9E3779B97F4A7C15ull) >> (64 - DIR_BITS)];
	if (d->tag == line + 1)
		return d;
	if (!create)
		return NULL;
	memset(d, 0, sizeof(*d));
	d->tag = line + 1;
	d->sharers = ~0u;	/* CPUs may hold the line from before the entry existed */
	return d;
}

int coh_owner(u64 line)
{
	struct dent *d = coh.dir ? dir_get(line, false) : NULL;
	return d && d->owner ? d->owner - 1 : -1;
}

/* A line another CPU (o) holds modified, brought to CPU vi. */
static u64 c2c_price(struct coh_cpu *v, unsigned vi, unsigned o)
{
	v->ev[EV_C2C]++;
	if (coh_socket_of(vi) != coh_socket_of(o)) {
		v->ev[EV_C2C_REMOTE]++;
		return coh.p.c2c_remote_lat;
	}
	return coh.p.c2c_lat;
}

static inline bool holds(unsigned o, u64 line)
{
	struct coh_cpu *w = &coh.cpu[o];
	return w->live && (w->last_line == line || cache_contains(w->h.l1, line) || cache_contains(w->h.l2, line));
}

/* The clock other CPUs see a CPU's actions at: while it waits, the clock at the wait's
 * start; in the handler of an IPI it took while behind, shifted to the IPI's arrival. */
static inline u64 eff_clock(unsigned vi)
{
	struct coh_cpu *v = &coh.cpu[vi];
	return (v->waiting ? v->wait_clock : clock_now(vi)) + v->ipi_shift;
}

/* The earliest time (x100, as eff_clock) after t at which something cpu vi does now can
 * be seen by the others when its core has a store buffer (coh_clock.store_floor): once
 * its older stores have drained in the core and its latest store is visible. */
static inline u64 after_older_stores(unsigned vi, u64 t)
{
	const struct coh_cpu *v = &coh.cpu[vi];
	u64 f = coh.clk.store_floor(vi) + v->ipi_shift;
	if (t < f)
		t = f;
	return t > v->store_vis ? t : v->store_vis;
}

/* When a store cpu vi makes now, whose read for ownership costs cost cycles, becomes
 * visible to the others (x100, as eff_clock): at its start, or with a store buffer when
 * it drains, in program order after the CPU's previous store (the core's drain of a
 * store whose RFO it started early can be sooner than this price from the access; a
 * later store is still never visible first). */
static inline u64 store_visible(unsigned vi, u64 cost)
{
	if (!coh.clk.store_floor)
		return eff_clock(vi);
	return coh.cpu[vi].store_vis = after_older_stores(vi, eff_clock(vi) + cost * 100);
}

/* When an IPI cpu vi sends now leaves (x100, as eff_clock): with a store buffer, not
 * before its older stores are visible (the kernel fences before the ICR write, so a
 * handler never reads a call slot before the store that filled it). */
static inline u64 send_clock(unsigned vi)
{
	return coh.clk.store_floor ? after_older_stores(vi, eff_clock(vi)) : eff_clock(vi);
}

/* Ends a wait, first step: the events go back to their values at the wait's start (the
 * spin's own instructions, accesses and pauses are not counted). */
static inline void wait_events_back(struct coh_cpu *v)
{
	memcpy(v->ev, v->wait_ev, sizeof(v->wait_ev));
	v->waiting = false;
}

/* Ends a wait, second step: the clock becomes max(clock at the wait, t) + cost. */
static void wake_to(unsigned vi, u64 t, u64 cost)
{
	struct coh_cpu *v = &coh.cpu[vi];
	t = t > v->ipi_shift ? t - v->ipi_shift : 0;	/* into this CPU's own clock */
	u64 c = (t > v->wait_clock ? t : v->wait_clock) + cost * 100;
	v->ev[EV_WAIT]++;
	v->ev[EV_WAIT_CYCLES] += (c - v->wait_clock) / 100;
	coh.clk.set(vi, c, PT_WAIT);
}

/* The running CPU takes the interrupt of an IPI sent to it, which cannot start before the
 * sender's ICR write + ipi_latency. A halted CPU (its clock has not moved since its HLT)
 * and a waiting one (its clock stands at its wait's start) idled until then: their clocks
 * move there. A CPU that was running did not wait: its clock stays, and until its IRET
 * what it does is seen by the others as if it had started at the IPI's arrival
 * (ipi_shift, in eff_clock); counted as ipi_behind. */
void coh_take_ipi(unsigned vi)
{
	struct coh_cpu *v = &coh.cpu[vi];
	v->ipi_pending = false;
	u64 now;
	bool idle = v->halted || v->waiting;
	if (v->waiting) {
		wait_events_back(v);
		now = v->wait_clock;
		coh.clk.set(vi, now, PT_WAIT);
	} else {
		now = clock_now(vi);
	}
	u64 seen = now + v->ipi_shift;
	if (v->ipi_at <= seen)
		return;
	if (idle) {
		v->ev[EV_IPI_WAIT_CYCLES] += (v->ipi_at - seen) / 100;
		coh.clk.set(vi, v->ipi_at - v->ipi_shift, PT_IPI);
	} else {
		v->ev[EV_IPI_BEHIND]++;
		v->ev[EV_IPI_BEHIND_CYCLES] += (v->ipi_at - seen) / 100;
		v->ipi_shift = v->ipi_at - now;
	}
}

/* Drops every other CPU's copy of the line (a store or an atomic takes it). Returns true
 * if another CPU's L1d or L2 held one. */
static bool inval_others(struct coh_cpu *v, unsigned vi, u64 line, struct dent *d)
{
	bool shared = false;
	/* no other CPU ran since this CPU's last store to the same line: nobody can have it */
	if (line != v->inval_line || coh.switches != v->inval_epoch) {
		v->inval_line = line;
		v->inval_epoch = coh.switches;
		/* only the CPUs the entry names can hold a copy: the others would find none */
		for (u32 m = d->sharers; m; m &= m - 1) {
			for (unsigned k = (unsigned)__builtin_ctz(m); k < coh.n; k += 32) {
				struct coh_cpu *w = &coh.cpu[k];
				if (k == vi || !w->live)
					continue;
				bool a = cache_invalidate(w->h.l1, line), b = cache_invalidate(w->h.l2, line);
				if (a || b || w->last_line == line) {
					shared = true;
					v->ev[EV_COH_INVAL]++;
					if (w->last_line == line)
						w->last_line = ~0ull;
				}
			}
		}
		d->sharers = 0;	/* every other copy is gone */
		for (unsigned i = 0; i < coh.nllc; i++)	/* other sockets' LLCs too */
			if (&coh.llcs[i] != v->h.llc)
				cache_invalidate(&coh.llcs[i], line);
	}
	d->sharers |= sharer_bit(vi);
	return shared;
}

/* A load starts here: remember the clock, the store count and the parts, so that a spin
 * whose check this load was can start its wait at it (coh_pause). */
static inline void note_load(struct coh_cpu *v, unsigned vi)
{
	if (v->waiting)
		return;
	v->ld_clock = clock_now(vi);
	v->ld_seq = coh.store_seq;
	for (int k = 0; k < NR_PEV; k++)
		v->ld_pev[k] = v->ev[part_ev[k]];
}

static u64 level_lat(struct coh_cpu *v, int lvl)
{
	switch (lvl) {
	case LVL_L1:
		return coh.p.l1d_lat;
	case LVL_L2:
		v->ev[EV_L1D_MISS]++;
		return coh.p.l2_lat;
	case LVL_LLC:
		v->ev[EV_L1D_MISS]++;
		v->ev[EV_L2_MISS]++;
		return coh.p.llc_lat;
	case LVL_LLC_REMOTE:	/* the same link as a transfer from a core there */
		v->ev[EV_L1D_MISS]++;
		v->ev[EV_L2_MISS]++;
		v->ev[EV_LLC_REMOTE]++;
		return coh.p.c2c_remote_lat;
	default:
		v->ev[EV_L1D_MISS]++;
		v->ev[EV_L2_MISS]++;
		v->ev[EV_LLC_MISS]++;
		return coh.p.mem_lat;
	}
}

/* The L2 streamer of CPU v after a demand access that missed its L1d at @line: the lines
 * it asks for are in v's L2 and LLC from now on (coherence.h). A line another CPU holds
 * modified is not fetched: the streamer would have to take it from that CPU's cache. */
static void stream_prefetch(struct coh_cpu *v, u64 line)
{
	u64 want[PF_PAGE_LINES];
	unsigned n = pf_observe(&v->pf, line, want), vi = (unsigned)(v - coh.cpu);
	for (unsigned i = 0; i < n; i++) {
		u64 x = want[i];
		if (cache_contains(v->h.l2, x))
			continue;
		if (coh.multi) {
			struct dent *d = dir_get(x, false);
			if (d) {
				unsigned o = d->owner ? d->owner - 1u : vi;
				if (o != vi && holds(o, x))
					continue;
				d->sharers |= sharer_bit(vi);	/* a store elsewhere must find the copy */
			}	/* no entry: a store's new entry names every CPU a sharer */
		}
		cache_access(v->h.l2, x);
		cache_access(v->h.llc, x);
		v->ev[EV_PREFETCH]++;
	}
}

/* This CPU's own hierarchy: the level that holds @line, or -1 for the line of the
 * previous access (an L1 hit without a lookup). A miss in the L1d goes on to the L2's
 * stream prefetcher. */
static inline int hier_level(struct coh_cpu *v, u64 line)
{
	if (line == v->last_line)
		return -1;
	v->last_line = line;
	int lvl = hier_access(&v->h, line);
	if (coh.prefetch && lvl != LVL_L1 && !v->rep)
		stream_prefetch(v, line);
	return lvl;
}

/* The latency of that level, counting its misses (so after a wait's events are undone). */
static inline u64 hier_lat(struct coh_cpu *v, int lvl)
{
	return lvl < 0 ? coh.p.l1d_lat : level_lat(v, lvl);
}

/* Taking @line for ownership (a store, an atomic's read for ownership) on top of @cost,
 * the own hierarchy's: a transfer from @o when it held the line modified, an RFO (at least
 * the LLC's latency) when other CPUs only shared it. */
static inline u64 ownership_cost(struct coh_cpu *v, unsigned vi, unsigned o, bool remote_m, bool shared,
				 u64 cost)
{
	if (remote_m)
		return c2c_price(v, vi, o);
	if (shared) {
		v->ev[EV_RFO_INVAL]++;
		if (cost < coh.p.llc_lat)
			cost = coh.p.llc_lat;
	}
	return cost;
}

/* QEMU ran the writer first, but its store comes later in modelled time: the access
 * returns no earlier than that store + the transfer (counted as a wait), as on hardware,
 * where the reader would have spun until then. causal=off (the model before this rule)
 * lets the read see the future: docs/COSTMODEL.md. Returns 0 (the cost is in the clock). */
static inline u64 causal_wait(struct coh_cpu *v, unsigned vi, const struct dent *d, u64 cost)
{
	u64 t = d->wclock + cost * 100;
	v->ev[EV_WAIT]++;
	v->ev[EV_WAIT_CYCLES] += (t - eff_clock(vi)) / 100;
	coh.clk.set(vi, t - v->ipi_shift, PT_WAIT);
	return 0;
}

/* The load half of an atomic (lock prefix, xchg): a read for ownership. It takes the line
 * exclusive in one transaction: a line another CPU holds modified costs one transfer, a
 * line others share an RFO, and every other copy is gone, so the store half that follows
 * is an L1 hit. Otherwise a load: it ends a wait and reads causally like one. */
static u64 rmw_load_multi(struct coh_cpu *v, unsigned vi, u64 line)
{
	note_load(v, vi);
	struct dent *d = dir_get(line, true);
	unsigned o = d->owner ? d->owner - 1u : vi;
	bool remote_m = o != vi && holds(o, line);
	bool wake = v->waiting && d->writer != vi && d->seq > v->wait_seq;
	bool shared = inval_others(v, vi, line, d);
	if (wake)
		wait_events_back(v);
	u64 cost = ownership_cost(v, vi, o, remote_m, shared, hier_lat(v, hier_level(v, line)));
	d->owner = (u16)(vi + 1);	/* exclusive now; the store half makes it modified */
	if (wake) {
		wake_to(vi, d->wclock, cost);
		return 0;	/* the transfer is in the clock already */
	}
	if (v->waiting && (remote_m || shared)) {
		/* an atomic on a line other CPUs hold: the CPU has stopped spinning */
		wait_events_back(v);
		wake_to(vi, 0, 0);
	} else if (coh.causal && !v->waiting && remote_m && d->wclock > eff_clock(vi)) {
		return causal_wait(v, vi, d, cost);	/* a store from this CPU's future */
	}
	return cost;
}

/* The cache part of one access with several CPUs: MESI-like through the directory. A
 * load of a line another CPU holds modified pays a core-to-core transfer and leaves the
 * line shared; a store invalidates the other copies, paying the transfer when another
 * CPU held the line modified, an RFO (at least the LLC's latency) when others only shared
 * it. A waiting CPU wakes at a load of a line another CPU stored after the wait began. */
static u64 data_line_multi(struct coh_cpu *v, unsigned vi, u64 line, bool store)
{
	if (!store) {
		note_load(v, vi);
		int lvl = hier_level(v, line);
		struct dent *d = lvl >= LVL_LLC ? dir_get(line, false) : NULL;
		if (!d)
			return hier_lat(v, lvl);
		/* a fill into this CPU's L1d/L2 (an L2 hit was such a fill before) */
		d->sharers |= sharer_bit(vi);
		bool wake = v->waiting && d->writer != vi && d->seq > v->wait_seq;
		if (wake)
			wait_events_back(v);
		u64 cost = hier_lat(v, lvl);
		unsigned o = d->owner ? d->owner - 1u : vi;
		bool c2c = o != vi && holds(o, line);
		if (c2c)
			cost = c2c_price(v, vi, o);
		d->owner = 0;	/* shared now (the owner keeps its copy) */
		if (coh.causal && !wake && !v->waiting && c2c && d->wclock > eff_clock(vi))
			return causal_wait(v, vi, d, cost);
		if (!wake)
			return cost;
		wake_to(vi, d->wclock, cost);
		return 0;	/* the transfer is in the clock already */
	}
	struct dent *d = dir_get(line, true);
	unsigned o = d->owner ? d->owner - 1u : vi;
	bool remote_m = o != vi && holds(o, line);
	bool shared = inval_others(v, vi, line, d);
	if (v->waiting && (remote_m || shared)) {
		/* a store to a line other CPUs hold: the CPU has stopped spinning */
		wait_events_back(v);
		wake_to(vi, 0, 0);
	}
	u64 cost = ownership_cost(v, vi, o, remote_m, shared, hier_lat(v, hier_level(v, line)));
	d->owner = (u16)(vi + 1);
	d->writer = (u16)vi;
	d->seq = ++coh.store_seq;
	d->wclock = store_visible(vi, cost);
	return cost;
}

u64 coh_access(unsigned cpu, u64 line, bool store, bool rmw)
{
	struct coh_cpu *v = &coh.cpu[cpu];
	if (coh.multi)
		return rmw && !store ? rmw_load_multi(v, cpu, line) : data_line_multi(v, cpu, line, store);
	return hier_lat(v, hier_level(v, line));
}

u64 coh_access_rep(unsigned cpu, u64 line, bool store)
{
	struct coh_cpu *v = &coh.cpu[cpu];
	v->rep = true;
	u64 c = coh_access(cpu, line, store, false);
	v->rep = false;
	return c;
}

void coh_wait_abandon(unsigned vi)
{
	struct coh_cpu *v = &coh.cpu[vi];
	if (!v->waiting)
		return;
	wait_events_back(v);
	coh.clk.set(vi, v->wait_clock, PT_WAIT);
}

/* The wait starts at the CPU's last load before the pause (the check that failed), so a
 * figure does not depend on how many rounds of the spin QEMU's round-robin happened to
 * run; a load that long ago (more than 2000 cycles: a pause that is no spin on memory) is
 * not used. */
void coh_pause(unsigned vi)
{
	struct coh_cpu *v = &coh.cpu[vi];
	if (v->waiting)
		return;
	u64 now = clock_now(vi);
	v->waiting = true;
	v->wait_clock = now - v->ld_clock <= 2000 * 100 ? v->ld_clock : now;
	v->wait_seq = v->ld_seq;
	memcpy(v->wait_ev, v->ev, sizeof(v->wait_ev));
	if (v->wait_clock == v->ld_clock)	/* the clock's parts as they were at that load */
		for (int k = 0; k < NR_PEV; k++)
			v->wait_ev[part_ev[k]] = v->ld_pev[k];
}

void coh_hlt(unsigned vi)
{
	coh_wait_abandon(vi);
	coh.cpu[vi].halted = true;
}

void coh_send_ipi(unsigned vi, u32 icr_lo, u32 dest, bool x2)
{
	u64 at = send_clock(vi) + coh.p.ipi_latency * 100;
	unsigned sh = (icr_lo >> 18) & 3;
	bool logical = icr_lo & (1u << 11);
	for (unsigned t = 0; t < coh.n; t++) {
		struct coh_cpu *w = &coh.cpu[t];
		bool hit;
		if (sh == 0)
			hit = logical ? apic_logical_hit(x2, t, w->xapic_ldr, w->xapic_dfr, dest) : t == dest;
		else
			hit = sh == 1 ? t == vi : sh == 2 ? true : t != vi;
		if (!hit || !w->live)
			continue;
		if (!w->ipi_pending || at < w->ipi_at)
			w->ipi_at = at;
		w->ipi_pending = true;
		coh.cpu[vi].ev[EV_IPI_SENT]++;
	}
}
