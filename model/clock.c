/*
 * The clock of one CPU from its account (clock.h): an in-order core, base_cpi per
 * instruction plus what the penalties, the memory accesses, waits and IPIs add.
 */
#include "model/clock.h"
#include "model/core.h"

const char *const ev_names[NR_MEV] = {
	"l1d_miss", "l2_miss", "llc_miss", "dtlb_miss", "stlb_miss", "walk", "walk_cycles",
	"atomic", "serialise", "iret", "rep_lines", "walk_fail", "coh_inval", "invlpg",
	"cr3_write", "tlb_flush_all", "fence", "pause", "hlt", "io", "mem_access",
	"c2c_transfer", "c2c_remote", "rfo_inval", "wait", "wait_cycles", "ipi_sent", "ipi_wait_cycles",
	"cyc_cache", "cyc_tlb", "cyc_rep",
	"insns", "cyc_pen", "cyc_io",
	"ipi_behind", "ipi_behind_cycles",
	"llc_remote",
	"prefetch",
	"branches", "mispredicts", "rob_stalls", "lb_stalls", "sb_stalls", "fb_waits", "forwards",
	"taken", "btb_misses",
};

const char *const part_names[NR_PART] = {
	"insns", "penalties", "cache", "tlb", "rep", "io", "wait", "ipi", "branch",
};
unsigned nr_part_shown = PT_BRANCH;
unsigned nr_ev_shown = EV_BRANCHES;

const int part_ev[NR_PEV] = { EV_INSNS, EV_CYC_PEN, EV_CYC_CACHE, EV_CYC_TLB, EV_CYC_REP, EV_CYC_IO };

static u64 base_cpi_x100;

void clock_init(const struct profile *p, bool ooo)
{
	base_cpi_x100 = p->base_cpi_x100;
	nr_part_shown = ooo ? NR_PART : PT_BRANCH;
	nr_ev_shown = ooo ? NR_MEV : EV_BRANCHES;
}

/* The core's part that each PT_* is. */
static const int core_part_of[NR_PART] = {
	[PT_INSNS] = CORE_PART_INSNS, [PT_PEN] = CORE_PART_PEN, [PT_CACHE] = CORE_PART_CACHE,
	[PT_TLB] = CORE_PART_TLB, [PT_REP] = CORE_PART_REP, [PT_IO] = CORE_PART_IO,
	[PT_WAIT] = CORE_PART_WAIT, [PT_IPI] = CORE_PART_IPI, [PT_BRANCH] = CORE_PART_BRANCH,
};

u64 acct_clock(const struct cpu_acct *a, const struct tb_counts *tail)
{
	if (a->core)
		return core_now(a->core) * 100;
	u64 insns = a->insns + a->rep_execs, pen = a->pen;
	if (tail) {
		insns -= tail->insns;
		pen -= tail->pen;
	}
	return insns * base_cpi_x100 + (pen + a->cyc) * 100 + (u64)a->adj;
}

void acct_events(const struct cpu_acct *a, u64 ev[NR_MEV], const struct tb_counts *tail)
{
	for (int e = 0; e < NR_MEV; e++)
		ev[e] = a->ev[e] - (tail ? tail->ev[e] : 0);
	if (tail) {
		ev[EV_INSNS] -= tail->insns;
		ev[EV_CYC_PEN] -= tail->pen;
	}
	if (a->core) {	/* it has been given exactly the instructions before the marker */
		const struct core_stats *st = &a->core->st;
		ev[EV_BRANCHES] = st->branches;
		ev[EV_MISPREDICTS] = st->mispredicts;
		ev[EV_ROB_STALLS] = st->rob_stalls;
		ev[EV_LB_STALLS] = st->lb_stalls;
		ev[EV_SB_STALLS] = st->sb_stalls;
		ev[EV_FB_WAITS] = st->fb_waits;
		ev[EV_FORWARDS] = st->forwards;
		ev[EV_TAKEN] = st->taken;
		ev[EV_BTB_MISSES] = st->btb_misses;
	}
}

void acct_parts(const struct cpu_acct *a, int64_t p[NR_PART], const struct tb_counts *tail)
{
	if (a->core) {
		u64 cp[NR_CORE_PART];
		core_parts(a->core, cp);
		for (int k = 0; k < NR_PART; k++)
			p[k] = (int64_t)cp[core_part_of[k]] * 100;
		return;
	}
	u64 ev[NR_MEV];
	acct_events(a, ev, tail);
	p[PT_INSNS] = (int64_t)(ev[EV_INSNS] * base_cpi_x100);
	p[PT_PEN] = (int64_t)ev[EV_CYC_PEN] * 100;
	p[PT_CACHE] = (int64_t)ev[EV_CYC_CACHE] * 100;
	p[PT_TLB] = (int64_t)ev[EV_CYC_TLB] * 100;
	p[PT_REP] = (int64_t)ev[EV_CYC_REP] * 100;
	p[PT_IO] = (int64_t)ev[EV_CYC_IO] * 100;
	p[PT_WAIT] = a->part_wait;
	p[PT_IPI] = a->part_ipi;
	p[PT_BRANCH] = 0;
}

void acct_clock_set(struct cpu_acct *a, u64 t, int part)
{
	if (a->core) {
		/* whole cycles, rounded up: the clock never runs ahead of where it is moved to
		 * by less than a cycle */
		core_advance_to(a->core, (t + 99) / 100, part == PT_IPI ? CORE_PART_IPI : CORE_PART_WAIT);
		return;
	}
	a->adj += (int64_t)t - (int64_t)acct_clock(a, NULL);
	int64_t p[NR_PART], sum = 0;
	acct_parts(a, p, NULL);
	for (int k = 0; k < NR_PART; k++)
		sum += p[k];
	*(part == PT_IPI ? &a->part_ipi : &a->part_wait) += (int64_t)t - sum;
}
