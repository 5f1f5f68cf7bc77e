/*
 * Host test support for the mm/ VM code: a simple page allocator over a malloc'd buffer
 * ("physical memory" at FAKE_PHYS_BASE, mem_map + host_phys_offset), with AddressSanitizer
 * poisoning of free pages (a walk through a freed table page is caught), allocation
 * failure injection, and stubs for what the kernel provides (TLB flushing, switch_mm,
 * cross-CPU call draining, the kernel root) that record what they were asked.
 */
#ifndef BAREMM_VM_FAKE_ALLOC_H
#define BAREMM_VM_FAKE_ALLOC_H

#include "mm/page_alloc.h"

struct mm_struct;

#define FAKE_PHYS_BASE 0x100000UL

extern u64 *kernel_pml4;	/* a fake kernel half for pt_init() */

/* (Re)create @npages pages of fake memory; every page free. */
void fake_mem_init(u64 npages);
void fake_mem_fini(void);
extern long fake_fail_after;	/* >= 0: allocations left before every one fails */
extern bool fake_fail_nowarn;	/* fail __GFP_NOWARN allocations (gather batches) */
extern u64 fake_allocs, fake_frees;

/* Recorded TLB flush requests. */
struct fake_flush {
	struct mm_struct *mm;
	u64 start, end;
	unsigned stride_shift;
	bool freed_tables;
	unsigned flags;		/* TLB_FLUSH_* */
};
extern u64 fake_nr_calls;	/* smp_call_function* requests (nobody else is online) */
#define FAKE_FLUSH_LOG 64
extern struct fake_flush fake_flush_log[FAKE_FLUSH_LOG];	/* the last ones, ring */
extern u64 fake_nr_flushes;
/* Called at every flush_tlb_mm_range (tests check invariants at flush time). */
extern void (*fake_flush_hook)(const struct fake_flush *f);
static inline const struct fake_flush *fake_last_flush(void)
{
	return &fake_flush_log[(fake_nr_flushes - 1) % FAKE_FLUSH_LOG];
}

#endif
