/*
 * TLB flush policy (first version): per-address-space TLB generations, a full-flush
 * ceiling, local flush with interrupts off, remote flush of every other CPU in the
 * address space's cpumask through smp_call_function_many(wait = true).
 *
 *   mm->tlb_gen         bumped once per flush request (after the page tables changed).
 *   cpu_tlbstate[c]     which mm CPU c has loaded and the generation its TLB has caught
 *                       up to. Only CPU c writes its row (interrupts off).
 *
 * A flush function on a CPU compares its generation with the mm's: already caught up ->
 * nothing to do (EV_TLB_SKIP_UPTODATE); exactly this request pending -> the requested
 * range (INVLPG per page up to `tlb_ceiling` pages, else a CR3 reload); several requests
 * pending -> one full flush that catches up with all of them.
 *
 * switch_mm() loads an address space on the calling CPU (or the kernel-only root for
 * NULL): it joins the new mm's cpumask before reading its generation and loading CR3, and
 * leaves the old mm's cpumask afterwards (no lazy TLB yet: issue 6). Without PCID the CR3
 * load flushes every non-global entry, so the new generation is caught up.
 *
 * Every policy decision lives in mm/tlbflush.c (and the pure helpers below), so the
 * later flush variants (lazy CPUs, PCID, protocols) change one file.
 *
 * Callable with interrupts on or off, from any CPU, with an mm lock held (others waiting
 * for that lock serve cross-CPU calls while they spin: mm_lock()). Not from inside a
 * cross-CPU call function when remote CPUs may need flushing.
 */
#ifndef BAREMM_TLBFLUSH_H
#define BAREMM_TLBFLUSH_H

#include "kernel/types.h"
#include "kernel/cpumask.h"

struct mm_struct;

#define TLB_FLUSH_ALL (~0UL)

struct tlb_state {
	struct mm_struct *loaded_mm;	/* NULL: the kernel-only root */
	u64 loaded_gen;			/* loaded_mm->tlb_gen this TLB has caught up to */
} __cacheline_aligned;

extern struct tlb_state cpu_tlbstate[NR_CPUS];
extern u64 tlb_ceiling;		/* option tlb_ceiling= (pages) */

void flush_tlb_mm_range(struct mm_struct *mm, u64 start, u64 end, unsigned stride_shift,
			bool freed_tables);
static inline void flush_tlb_mm(struct mm_struct *mm)
{
	flush_tlb_mm_range(mm, 0, TLB_FLUSH_ALL, 12, true);
}
static inline void flush_tlb_page(struct mm_struct *mm, u64 addr)
{
	flush_tlb_mm_range(mm, addr, addr + 4096, 12, false);
}
/* This CPU only, one address (a spurious fault's stale entry). */
void flush_tlb_one_local(u64 addr);

/* Pure policy: should [start, end) at this stride be a full flush rather than one
 * INVLPG per stride? */
static inline bool tlb_flush_wants_full(u64 start, u64 end, unsigned stride_shift, u64 ceiling)
{
	if (end == TLB_FLUSH_ALL || end <= start)
		return end == TLB_FLUSH_ALL;
	return ((end - start) >> stride_shift) > ceiling;
}

#endif
