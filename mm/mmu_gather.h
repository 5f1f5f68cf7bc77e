/*
 * mmu_gather: the order "unhook -> invalidate every TLB that may hold it -> free" for
 * pages and page-table pages taken out of an address space.
 *
 *   struct mmu_gather tlb;
 *   tlb_gather_mmu(&tlb, mm);            // or tlb_gather_mmu_fullmm() for a teardown
 *   ... clear PTEs; tlb_remove_page(&tlb, page) / __tlb_remove_page_size(...);
 *       tlb_remove_table(&tlb, table) for emptied page-table pages ...
 *   tlb_finish_mmu(&tlb);                // flush the TLBs, drop the rmaps, free
 *
 * Range tracking: every cleared leaf widens [start, end) and notes its level; a freed
 * table sets freed_tables (remote CPUs must then flush even when they would otherwise be
 * skipped, since a speculative walk could still reach the freed table). The flush is one
 * call to flush_tlb_mm_range() over the tracked range.
 *
 * Page batching: the first MMU_GATHER_BUNDLE pages go into a bundle inside the gather
 * (on the caller's stack); then page-sized batches are allocated without sleeping
 * (__GFP_NOWARN), up to GATHER_MAX_BATCHES (~10,000 pages). When no further batch may or
 * can be had, __tlb_remove_page_size() returns true and the caller flushes
 * (tlb_flush_mmu: TLB flush, delayed rmaps, free pages), counted as EV_GATHER_FORCE_FLUSH
 * (and EV_GATHER_FALLBACK when the reason was a failed batch allocation).
 *
 * Delayed rmap: a dirty shared page's map count may only drop after the TLB
 * flush (until then another CPU may still write it through a stale TLB entry, and a
 * writeback that saw it unmapped would miss that write). Such pages are marked in the
 * batch; the unmap loop must call tlb_flush_mmu_tlbonly() + tlb_flush_rmaps() before it
 * drops the page-table lock (pt_unmap_range does it at the end of every level-1 table).
 * How far a gather holding delayed-rmap pages may grow is the `rmapbatch` variant:
 * `local` = the on-stack bundle only (a flush every MMU_GATHER_BUNDLE pages),
 * `multi` = one extra page-sized batch (about one flush per page table).
 *
 * Table pages have their own page-sized batch. After the shootdown
 * a full batch is freed either one table at a time or in one free_pages_bulk() pass
 * (variant `ptfree=loop|bulk`), and either right away or only after a grace period
 * (variant `ptfree_rcu=off|on`: the batch page goes to call_rcu, kernel/rcu.h; the
 * tables waiting are counted, with their peak, in gather_tables_waiting[_peak]). When
 * the batch page cannot be allocated (or `gather_nobatch=on` forces it), the gather
 * falls back for that one table: invalidate every TLB (tlb_flush_mmu_tlbonly), then
 * synchronise with every online CPU through an empty waiting cross-CPU call (any CPU
 * that was inside an interrupts-off walk has left it; counted EV_TLB_TABLE_SYNC), then
 * free the table (EV_GATHER_FALLBACK).
 *
 * Locking: a gather belongs to one caller and one address space; the caller holds the
 * address space's lock from the first removal to tlb_finish_mmu() (the delayed-rmap rule
 * needs the flush before the lock is dropped).
 */
#ifndef BAREMM_MMU_GATHER_H
#define BAREMM_MMU_GATHER_H

#include "mm/page.h"
#include "kernel/options.h"
#include "kernel/rcu.h"

struct mm_struct;

#define MMU_GATHER_BUNDLE 8
#define GATHER_ENTRY_DELAY_RMAP 1UL	/* low bit of a batch entry */

/* A page-sized batch holds its entries right after this header; the on-stack bundle's
 * entries are in the gather (a pointer rather than a flexible array, so the bundle can be
 * embedded in struct mmu_gather in plain C). */
struct mmu_gather_batch {
	struct mmu_gather_batch *next;
	unsigned nr;
	unsigned max;
	uintptr_t *entries;	/* struct page * | GATHER_ENTRY_DELAY_RMAP */
};

#define GATHER_BATCH_MAX \
	((unsigned)((PAGE_SIZE - sizeof(struct mmu_gather_batch)) / sizeof(uintptr_t)))
#define GATHER_MAX_PAGES 10000
#define GATHER_MAX_BATCHES (GATHER_MAX_PAGES / GATHER_BATCH_MAX)

struct mmu_gather_table_batch {
	struct rcu_head rcu;	/* ptfree_rcu=on: queued here until a grace period passed */
	unsigned nr;
	unsigned pad;
	struct page *tables[];
};
#define GATHER_TABLE_BATCH_MAX \
	((unsigned)((PAGE_SIZE - sizeof(struct mmu_gather_table_batch)) / sizeof(struct page *)))

struct mmu_gather {
	struct mm_struct *mm;
	u64 start, end;			/* range to flush; start >= end: nothing */
	unsigned stride_shift;		/* smallest leaf size cleared (PAGE_SHIFT / PMD_SHIFT) */
	bool fullmm;			/* the whole address space is being torn down */
	bool freed_tables;		/* a table page was unhooked since the last flush */
	bool cleared_ptes, cleared_pmds, cleared_puds, cleared_p4ds;
	bool delayed_rmap;		/* batches hold delayed-rmap pages */
	bool frees_objects;		/* the caller frees what cleared special entries mapped
					 * (a region's reference page) after tlb_finish_mmu: the
					 * flush must count as freeing pages (no early ack, no
					 * lazy skip) even when the batches are empty */
	unsigned batch_count;		/* page-sized batches allocated */
	struct mmu_gather_batch *active;
	struct mmu_gather_table_batch *tables;
	struct mmu_gather_batch local;
	uintptr_t __local_entries[MMU_GATHER_BUNDLE];
};

/* The `rmapbatch` variant: how many pages a gather holding delayed-rmap pages collects
 * before it must flush. */
#define RMAPBATCH_LIST(X)                                                                   \
	X(RMAPBATCH_LOCAL, "local", "the 8-entry on-stack bundle only")                     \
	X(RMAPBATCH_MULTI, "multi", "the bundle plus one page-sized batch")
enum { RMAPBATCH_LIST(OPTION_ENUM_CONST) };
/* The `ptfree` variant: how a batch of gathered table pages is freed. */
#define PTFREE_LIST(X)                                                                      \
	X(PTFREE_LOOP, "loop", "one free_page each")                                        \
	X(PTFREE_BULK, "bulk", "one free_pages_bulk pass per batch")
enum { PTFREE_LIST(OPTION_ENUM_CONST) };

void tlb_gather_mmu(struct mmu_gather *tlb, struct mm_struct *mm);
void tlb_gather_mmu_fullmm(struct mmu_gather *tlb, struct mm_struct *mm);
void tlb_finish_mmu(struct mmu_gather *tlb);

/* Add @page (its PTE already cleared and tracked); true when the caller must flush now
 * (tlb_flush_mmu) before adding more. */
bool __tlb_remove_page_size(struct mmu_gather *tlb, struct page *page, bool delay_rmap,
			    unsigned page_shift);
/* Add @page, flushing on the spot when the gather is full. */
void tlb_remove_page(struct mmu_gather *tlb, struct page *page);
/* Add an unhooked page-table page (its parent entry already cleared). */
void tlb_remove_table(struct mmu_gather *tlb, struct page *table);

/* TLB flush of the tracked range only (pages stay gathered). */
void tlb_flush_mmu_tlbonly(struct mmu_gather *tlb);
/* Drop the map counts of delayed-rmap pages; only after tlb_flush_mmu_tlbonly(). */
void tlb_flush_rmaps(struct mmu_gather *tlb);
/* Flush TLBs, drop delayed rmaps, free gathered pages and tables (EV_GATHER_FLUSH). */
void tlb_flush_mmu(struct mmu_gather *tlb);

/* Range tracking for a cleared entry of @level covering [addr, addr+size). */
static inline void tlb_track_range(struct mmu_gather *tlb, u64 addr, u64 size, int level)
{
	if (addr < tlb->start)
		tlb->start = addr;
	if (addr + size > tlb->end)
		tlb->end = addr + size;
	switch (level) {
	case 1: tlb->cleared_ptes = true; break;
	case 2: tlb->cleared_pmds = true; break;
	case 3: tlb->cleared_puds = true; break;
	default: tlb->cleared_p4ds = true; break;
	}
	unsigned shift = level == 1 ? PAGE_SHIFT : (unsigned)PAGE_SHIFT + 9u * (unsigned)(level - 1);
	if (shift < tlb->stride_shift)
		tlb->stride_shift = shift;
}
static inline void tlb_flush_pte_range(struct mmu_gather *tlb, u64 addr, u64 size)
{
	tlb_track_range(tlb, addr, size, 1);
}
static inline void tlb_flush_pmd_range(struct mmu_gather *tlb, u64 addr, u64 size)
{
	tlb_track_range(tlb, addr, size, 2);
}
/* A level-@level table covering @addr was unhooked from its parent (level + 1). */
static inline void tlb_free_table_at(struct mmu_gather *tlb, struct page *table, u64 addr,
				     int level)
{
	u64 span = 1UL << (PAGE_SHIFT + 9 * level);
	tlb_track_range(tlb, addr & ~(span - 1), span, level + 1);
	tlb->freed_tables = true;
	tlb_remove_table(tlb, table);
}

/* ---- pure batching decisions (host-tested) ---- */

enum gather_next {
	GATHER_NEXT_USE,	/* a batch is already linked after the active one */
	GATHER_NEXT_ALLOC,	/* allocate a new page-sized batch */
	GATHER_NEXT_FLUSH,	/* no more room: the caller must flush */
};

/* What to do when the active batch is full. @active_is_local: the active batch is the
 * on-stack bundle; @next_exists: a batch is linked after it (kept from an earlier pass);
 * @batch_count: page-sized batches allocated so far; @rmap_policy: RMAPBATCH_*. */
static inline enum gather_next gather_next_action(bool active_is_local, bool next_exists,
						  unsigned batch_count, bool delayed_rmap,
						  int rmap_policy)
{
	if (delayed_rmap) {
		/* Delayed rmaps must be flushed before the lock is dropped anyway; how much
		 * may pile up before that is the `rmapbatch` variant. */
		if (rmap_policy == RMAPBATCH_LOCAL || !active_is_local)
			return GATHER_NEXT_FLUSH;
	}
	if (next_exists)
		return GATHER_NEXT_USE;
	if (batch_count >= GATHER_MAX_BATCHES)
		return GATHER_NEXT_FLUSH;
	return GATHER_NEXT_ALLOC;
}

/* Test hook / fault injection: when true, gather batch pages are never allocated (the
 * fallback paths run). A variant option, `gather_nobatch`. */
DECLARE_OPTION_BOOL(gather_nobatch);
DECLARE_OPTION_ENUM(rmapbatch);		/* RMAPBATCH_* */
DECLARE_OPTION_ENUM(ptfree);		/* PTFREE_* */
DECLARE_OPTION_BOOL(ptfree_rcu);	/* free table pages after a grace period */

/* Table pages handed to call_rcu and not yet freed; the most at once since the last
 * reset (benchmarks reset it). */
extern u64 gather_tables_waiting, gather_tables_waiting_peak;
/* Free @nr table pages now, one by one or in bulk per the `ptfree` variant. */
void tlb_free_table_pages(struct page **tables, unsigned nr);

#endif
