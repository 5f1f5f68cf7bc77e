/*
 * TLB flush policy and address-space switching. Every policy decision is made in
 * mm/tlbflush.c or in the pure helpers at the end of this header (host-tested in
 * tests/host/test_tlb_policy.c).
 *
 *   mm->tlb_gen         bumped once per flush request, after the page tables changed.
 *   cpu_tlbstate[c]     the mm CPU c has loaded, whether it is lazy, the generation its
 *                       TLB has caught up to, its PCID slots. Only CPU c writes its row
 *                       (interrupts off); flushers read is_lazy.
 *
 * flush_tlb_mm_range(mm, start, end, stride_shift, freed_tables):
 *   1. bump the generation;
 *   2. pick the CPUs: every CPU in mm->cpumask but the caller, minus the lazy ones when
 *      nothing but leaves changed (tlb_may_skip_lazy; EV_TLB_SKIP_LAZY);
 *   3. flush locally with interrupts off and remotely through cross-CPU calls, in the
 *      order of the `tlb_protocol` variant (sequential: local then remote and wait;
 *      concurrent: send, local while the IPIs fly, wait), acknowledged after the flush
 *      or, with `tlb_early_ack=on` and when the caller frees nothing, before it;
 *   4. on each CPU, tlb_flush_decide(): skip (already caught up, EV_TLB_SKIP_UPTODATE),
 *      INVLPG per stride (this request is the only one pending and has at most
 *      `tlb_ceiling` strides), or one full flush catching up with everything pending.
 *
 * Lazy TLB: switch_mm(NULL) keeps the old address space loaded ("lazy") and stays in its
 * cpumask. Flushes that free no page tables may skip a lazy CPU: it catches up through
 * the generation when it switches back. A flush that frees page tables must reach it
 * (its CR3 still points at the tables, and a speculative walk could load a freed one);
 * the lazy CPU then switches to the kernel root and leaves the cpumask
 * (EV_TLB_LAZY_LEAVE). tlb_mm_release() makes every lazy CPU leave an mm before it is
 * destroyed.
 *
 * PCID (variant `pcid`, used only when the CPU has it): TLB_NR_DYN_ASIDS dynamic ASIDs
 * per CPU, each remembering the mm it last held and the generation it caught up to; a
 * switch back to an mm whose ASID is up to date loads CR3 with the no-flush bit
 * (EV_TLB_PCID_NOFLUSH). INVPCID (single context) replaces the CR3 reload of a full
 * flush when the CPU has it. QEMU TCG has neither: these paths only run on KVM/hardware.
 *
 * Callable with interrupts on or off, from any CPU, with an mm lock held (others waiting
 * for that lock serve cross-CPU calls while they spin: mm_lock()). Not from inside a
 * cross-CPU call function when remote CPUs may need flushing.
 */
#ifndef BAREMM_TLBFLUSH_H
#define BAREMM_TLBFLUSH_H

#include "kernel/types.h"
#include "kernel/cpumask.h"
#include "kernel/options.h"

struct mm_struct;

#define TLB_FLUSH_ALL (~0UL)

#define TLB_NR_DYN_ASIDS 6
#define TLB_ASID_NONE 0xffffu

struct tlb_asid_slot {
	u32 mm_id;	/* 0: empty (mm ids start at 1 and are never reused) */
	u64 gen;	/* that mm's tlb_gen this ASID's entries have caught up to */
};

struct tlb_state {
	struct mm_struct *loaded_mm;	/* NULL: the kernel-only root */
	u64 loaded_gen;			/* loaded_mm->tlb_gen this TLB has caught up to */
	bool is_lazy;			/* switched away without loading another mm */
	bool pcide;			/* CR4.PCIDE set on this CPU */
	u16 cur_asid;			/* slot of the loaded mm, TLB_ASID_NONE: PCID 0 */
	u16 next_asid;			/* round-robin victim */
	struct tlb_asid_slot asids[TLB_NR_DYN_ASIDS];
} __cacheline_aligned;

extern struct tlb_state cpu_tlbstate[NR_CPUS];

/* The `tlb_protocol` variant: the order of the local flush and the IPIs. */
#define TLB_PROTOCOL_LIST(X)                                                                \
	X(TLB_PROTO_SEQUENTIAL, "sequential", "flush locally, then IPI and wait")           \
	X(TLB_PROTO_CONCURRENT, "concurrent",                                               \
	  "send the IPIs, flush locally while they are in flight, then wait")
enum { TLB_PROTOCOL_LIST(OPTION_ENUM_CONST) };

/* Options (mm/tlbflush.c). Variants are read at every use. */
DECLARE_OPTION_UINT(tlb_ceiling);	/* pages */
DECLARE_OPTION_ENUM(tlb_protocol);	/* TLB_PROTO_* */
DECLARE_OPTION_BOOL(tlb_early_ack);
DECLARE_OPTION_BOOL(tlb_lazy);		/* skip lazy CPUs when allowed */
DECLARE_OPTION_BOOL(opt_pcid);		/* `pcid`: only when the CPU has PCID */
DECLARE_OPTION_BOOL(tlb_test_skip_remote);	/* test only: never flush remote CPUs */

/* What the caller does after the flush returns (decides whether early ack is safe). */
#define TLB_FLUSH_FREED_TABLES 0x1u	/* page-table pages were unhooked and will be freed */
#define TLB_FLUSH_FREES_PAGES 0x2u	/* pages unmapped by this change may be freed */

void flush_tlb_mm_range_flags(struct mm_struct *mm, u64 start, u64 end, unsigned stride_shift,
			      unsigned flags);
/* The mm API: conservative, assumes the caller may free the pages it unmapped. */
static inline void flush_tlb_mm_range(struct mm_struct *mm, u64 start, u64 end,
				      unsigned stride_shift, bool freed_tables)
{
	flush_tlb_mm_range_flags(mm, start, end, stride_shift,
				 TLB_FLUSH_FREES_PAGES | (freed_tables ? TLB_FLUSH_FREED_TABLES : 0));
}
/* Permission changes and remaps that free nothing (early ack allowed). */
static inline void flush_tlb_mm_range_nofree(struct mm_struct *mm, u64 start, u64 end,
					     unsigned stride_shift)
{
	flush_tlb_mm_range_flags(mm, start, end, stride_shift, 0);
}
static inline void flush_tlb_mm(struct mm_struct *mm)
{
	flush_tlb_mm_range(mm, 0, TLB_FLUSH_ALL, PAGE_SHIFT, true);
}
static inline void flush_tlb_page(struct mm_struct *mm, u64 addr)
{
	flush_tlb_mm_range(mm, addr, addr + PAGE_SIZE, PAGE_SHIFT, false);
}
/* This CPU only, one address (a spurious fault's stale entry). */
void flush_tlb_one_local(u64 addr);
#ifdef CONFIG_DEBUG_CONTRACTS
/* selftest=contract_irqs: runs the local flush with interrupts on, breaking its contract
 * on purpose; the contract check must panic (DEBUG_CONTRACTS builds only). */
void tlb_selftest_break_irq_contract(void);
#endif
/* Full flush on every online CPU, each catching up with its loaded mm (tests). */
void flush_tlb_all(void);
/* Make every CPU that has @mm loaded lazily (the caller included) switch to the kernel
 * root and leave the cpumask. Before an mm is destroyed. */
void tlb_mm_release(struct mm_struct *mm);
/* CPU @cpu has an mm loaded lazily. */
bool tlb_cpu_is_lazy(unsigned cpu);
/* PCID in use on this boot (variant on and CPU support), for reports. */
bool tlb_pcid_active(void);

/* ---- pure policy (host-tested) ---- */

/* Should [start, end) at this stride be one full flush rather than INVLPG per stride? */
static inline bool tlb_flush_wants_full(u64 start, u64 end, unsigned stride_shift, u64 ceiling)
{
	if (end == TLB_FLUSH_ALL || end <= start)
		return end == TLB_FLUSH_ALL;
	return ((end - start) >> stride_shift) > ceiling;
}

enum tlb_flush_kind { TLB_KIND_SKIP, TLB_KIND_RANGE, TLB_KIND_FULL };

/*
 * The one full-flush decision, made on each CPU that runs a flush. @local_gen: what this
 * TLB has caught up to; @mm_gen: the mm's generation now; @req_gen: the generation this
 * request created. Already caught up: skip. Exactly this request pending and small
 * enough: its range. Anything else (several pending, or over the ceiling): full.
 */
static inline enum tlb_flush_kind tlb_flush_decide(u64 local_gen, u64 mm_gen, u64 req_gen,
						   u64 start, u64 end, unsigned stride_shift,
						   u64 ceiling)
{
	if (local_gen >= mm_gen)
		return TLB_KIND_SKIP;
	if (req_gen != mm_gen || local_gen + 1 != req_gen)
		return TLB_KIND_FULL;
	return tlb_flush_wants_full(start, end, stride_shift, ceiling) ? TLB_KIND_FULL : TLB_KIND_RANGE;
}

/* May a flush skip lazy CPUs? Never when page tables are freed. */
static inline bool tlb_may_skip_lazy(unsigned flags, bool lazy_variant)
{
	return lazy_variant && !(flags & TLB_FLUSH_FREED_TABLES);
}

/* May responders acknowledge before flushing? Only when nothing is freed (see
 * mm/tlbflush.c for why). */
static inline bool tlb_early_ack_allowed(unsigned flags, bool early_variant)
{
	return early_variant && !(flags & (TLB_FLUSH_FREED_TABLES | TLB_FLUSH_FREES_PAGES));
}

struct tlb_asid_pick {
	unsigned slot;
	bool flush;	/* load without the no-flush bit (new owner, or entries behind) */
};
/* Choose the ASID slot for @mm_id on a CPU: its own slot when it has one (flush only if
 * behind @mm_gen), else the round-robin victim (*next advances). */
static inline struct tlb_asid_pick tlb_asid_choose(const struct tlb_asid_slot *s, unsigned n,
						   u32 mm_id, u64 mm_gen, u16 *next)
{
	for (unsigned i = 0; i < n; i++)
		if (s[i].mm_id == mm_id)
			return (struct tlb_asid_pick){ i, s[i].gen < mm_gen };
	unsigned v = *next % n;
	*next = (u16)((v + 1) % n);
	return (struct tlb_asid_pick){ v, true };
}

#endif
