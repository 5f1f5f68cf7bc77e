/*
 * mmu_gather: page batches (on-stack bundle, then page-sized batches up to a cap),
 * delayed rmap for dirty shared pages, a page-sized batch of table pages freed after the
 * shootdown (one by one or in bulk, right away or after a grace period), the synchronous
 * fallback for a table when no batch page can be had, range tracking. See
 * mm/mmu_gather.h.
 */
#include "mm/mmu_gather.h"
#include "mm/tlbflush.h"
#include "mm/pgtable.h"
#include "mm/rmap.h"
#include "mm/page_alloc.h"
#include "kernel/events.h"
#include "kernel/options.h"
#include "kernel/panic.h"
#include "kernel/smp.h"
#include "kernel/rcu.h"

DEFINE_VARIANT_ENUM(rmapbatch, "rmapbatch", RMAPBATCH_MULTI,
		    "how many pages a gather holding delayed-rmap (dirty shared) pages may collect "
		    "before a flush", RMAPBATCH_LIST);
DEFINE_VARIANT_BOOL(gather_nobatch, "gather_nobatch", false,
		    "test: never allocate mmu_gather batch pages (forces the fallback paths)");
DEFINE_VARIANT_ENUM(ptfree, "ptfree", PTFREE_LOOP,
		    "how gathered page-table pages are freed after the shootdown", PTFREE_LIST);
DEFINE_VARIANT_BOOL(ptfree_rcu, "ptfree_rcu", false,
		    "free gathered page-table pages only after an RCU-like grace period "
		    "(seed 002) instead of right after the shootdown");

/* Beyond this many table pages waiting for a grace period, the deferring CPU waits for
 * the callbacks to run (bounds the memory held). */
#define GATHER_RCU_MAX_WAITING 16384

u64 gather_tables_waiting, gather_tables_waiting_peak;

static void range_reset(struct mmu_gather *tlb)
{
	tlb->start = ~0UL;
	tlb->end = 0;
	tlb->stride_shift = 63;
	tlb->freed_tables = false;
	tlb->cleared_ptes = tlb->cleared_pmds = tlb->cleared_puds = tlb->cleared_p4ds = false;
}

static void gather_init(struct mmu_gather *tlb, struct mm_struct *mm, bool fullmm)
{
	tlb->mm = mm;
	tlb->fullmm = fullmm;
	tlb->delayed_rmap = false;
	tlb->frees_objects = false;
	tlb->batch_count = 0;
	tlb->local.next = NULL;
	tlb->local.nr = 0;
	tlb->local.max = MMU_GATHER_BUNDLE;
	tlb->local.entries = tlb->__local_entries;
	tlb->active = &tlb->local;
	tlb->tables = NULL;
	range_reset(tlb);
}

void tlb_gather_mmu(struct mmu_gather *tlb, struct mm_struct *mm)
{
	gather_init(tlb, mm, false);
}

void tlb_gather_mmu_fullmm(struct mmu_gather *tlb, struct mm_struct *mm)
{
	gather_init(tlb, mm, true);
}

static struct page *gather_alloc_batch_page(void)
{
	if (READ_ONCE(gather_nobatch))
		return NULL;
	return alloc_page(__GFP_NOWARN);
}

/* The active batch is full: move to the next one. False when the caller must flush. */
static bool tlb_next_batch(struct mmu_gather *tlb)
{
	struct mmu_gather_batch *a = tlb->active;
	switch (gather_next_action(a == &tlb->local, a->next != NULL, tlb->batch_count,
				   tlb->delayed_rmap, READ_ONCE(rmapbatch))) {
	case GATHER_NEXT_USE:
		tlb->active = a->next;
		return true;
	case GATHER_NEXT_ALLOC: {
		struct page *p = gather_alloc_batch_page();
		if (!p) {
			count_event(EV_GATHER_FALLBACK);
			count_event(EV_GATHER_FORCE_FLUSH);
			return false;
		}
		struct mmu_gather_batch *b = page_address(p);
		b->next = NULL;
		b->nr = 0;
		b->max = GATHER_BATCH_MAX;
		b->entries = (uintptr_t *)(b + 1);
		a->next = b;
		tlb->active = b;
		tlb->batch_count++;
		count_event(EV_GATHER_BATCH_ALLOC);
		return true;
	}
	case GATHER_NEXT_FLUSH:
	default:
		count_event(EV_GATHER_FORCE_FLUSH);
		return false;
	}
}

bool __tlb_remove_page_size(struct mmu_gather *tlb, struct page *page, bool delay_rmap,
			    unsigned page_shift)
{
	struct mmu_gather_batch *b = tlb->active;
	BUG_ON(b->nr >= b->max);
	(void)page_shift;	/* only 4 KiB pages carry struct page bookkeeping here */
	b->entries[b->nr++] = (uintptr_t)page | (delay_rmap ? GATHER_ENTRY_DELAY_RMAP : 0);
	if (delay_rmap)
		tlb->delayed_rmap = true;
	if (b->nr < b->max)
		return false;
	return !tlb_next_batch(tlb);
}

void tlb_remove_page(struct mmu_gather *tlb, struct page *page)
{
	if (__tlb_remove_page_size(tlb, page, false, PAGE_SHIFT))
		tlb_flush_mmu(tlb);
}

/* Every batch in use: the bundle and the linked batches up to the active one. */
#define for_each_used_batch(b, tlb) \
	for ((b) = &(tlb)->local; (b); (b) = ((b) == (tlb)->active ? NULL : (b)->next))

/* Will anything be freed after the coming flush (pages or tables held)? */
static bool gather_frees_something(struct mmu_gather *tlb)
{
	struct mmu_gather_batch *b;
	if (tlb->frees_objects || (tlb->tables && tlb->tables->nr))
		return true;
	for_each_used_batch(b, tlb)
		if (b->nr)
			return true;
	return false;
}

void tlb_flush_mmu_tlbonly(struct mmu_gather *tlb)
{
	if (tlb->start >= tlb->end && !tlb->freed_tables)
		return;
	unsigned flags = (tlb->freed_tables ? TLB_FLUSH_FREED_TABLES : 0) |
			 (gather_frees_something(tlb) ? TLB_FLUSH_FREES_PAGES : 0);
	if (tlb->fullmm || tlb->start >= tlb->end)
		flush_tlb_mm_range_flags(tlb->mm, 0, TLB_FLUSH_ALL, PAGE_SHIFT, flags);
	else
		flush_tlb_mm_range_flags(tlb->mm, tlb->start, tlb->end, tlb->stride_shift, flags);
	range_reset(tlb);
}

void tlb_flush_rmaps(struct mmu_gather *tlb)
{
	struct mmu_gather_batch *b;
	if (!tlb->delayed_rmap)
		return;
	if (unlikely(tlb->start < tlb->end))
		panic("mmu_gather: delayed rmaps dropped before the TLB flush");
	for_each_used_batch(b, tlb) {
		for (unsigned i = 0; i < b->nr; i++) {
			if (b->entries[i] & GATHER_ENTRY_DELAY_RMAP) {
				b->entries[i] &= ~GATHER_ENTRY_DELAY_RMAP;
				page_remove_rmap((struct page *)b->entries[i]);
			}
		}
	}
	tlb->delayed_rmap = false;
}

static bool tlb_free_pages(struct mmu_gather *tlb)
{
	struct mmu_gather_batch *b;
	LIST_HEAD(freelist);
	bool any = false;
	for_each_used_batch(b, tlb) {
		for (unsigned i = 0; i < b->nr; i++) {
			struct page *page = (struct page *)b->entries[i];
			BUG_ON(b->entries[i] & GATHER_ENTRY_DELAY_RMAP);
			if (put_page_testzero(page))
				list_add_tail(&page->lru, &freelist);
		}
		any |= b->nr != 0;
		b->nr = 0;
	}
	tlb->active = &tlb->local;
	if (!list_empty(&freelist))
		free_pages_bulk(&freelist);
	return any;
}

void tlb_free_table_pages(struct page **tables, unsigned nr)
{
	bool bulk = READ_ONCE(ptfree) == PTFREE_BULK;
	if (bulk) {
		LIST_HEAD(list);
		for (unsigned i = 0; i < nr; i++) {
			pt_table_dtor(tables[i]);
			list_add_tail(&tables[i]->lru, &list);
		}
		free_pages_bulk(&list);
	} else {
		for (unsigned i = 0; i < nr; i++)
			pt_table_free(tables[i]);
	}
	/* counted the same way in both variants (seed 000 compares them) */
	count_events(EV_PTFREE_BULK, bulk);
}

static void table_batch_rcu_free(struct rcu_head *head)
{
	struct mmu_gather_table_batch *t = container_of(head, struct mmu_gather_table_batch, rcu);
	unsigned nr = t->nr;
	tlb_free_table_pages(t->tables, nr);
	count_events(EV_RCU_TABLES_DEFERRED, nr);
	(void)atomic_sub_return(&gather_tables_waiting, (u64)nr);
	free_page(virt_to_page(t));
}

/* After the shootdown: free the gathered tables now, or hand the batch to call_rcu. */
static bool tlb_free_tables(struct mmu_gather *tlb)
{
	struct mmu_gather_table_batch *t = tlb->tables;
	if (!t || !t->nr)
		return false;
	if (READ_ONCE(ptfree_rcu)) {
		tlb->tables = NULL;	/* the next table gets a fresh batch page */
		u64 w = atomic_add_return(&gather_tables_waiting, (u64)t->nr);
		u64 peak = atomic_load_relaxed(&gather_tables_waiting_peak);
		while (w > peak && !atomic_cmpxchg(&gather_tables_waiting_peak, &peak, w))
			;
		call_rcu(&t->rcu, table_batch_rcu_free);
		if (w > GATHER_RCU_MAX_WAITING)
			rcu_barrier();
		else
			(void)rcu_poll();
		return true;
	}
	tlb_free_table_pages(t->tables, t->nr);
	t->nr = 0;
	return true;
}

static void table_sync_fn(void *info)
{
	(void)info;
	rcu_quiescent_state();
}

void tlb_flush_mmu(struct mmu_gather *tlb)
{
	bool any = tlb->start < tlb->end;
	tlb_flush_mmu_tlbonly(tlb);
	tlb_flush_rmaps(tlb);
	any |= tlb_free_pages(tlb);
	any |= tlb_free_tables(tlb);
	if (any)
		count_event(EV_GATHER_FLUSH);
}

void tlb_remove_table(struct mmu_gather *tlb, struct page *table)
{
	tlb->freed_tables = true;
	if (!tlb->tables) {
		struct page *p = gather_alloc_batch_page();
		if (!p) {
			/* No batch page: invalidate every TLB and paging-structure cache
			 * that may hold it, wait until every CPU has passed a quiescent
			 * point (an empty waiting call: a CPU walking with interrupts off
			 * has finished), then free this one table. */
			count_event(EV_GATHER_FALLBACK);
			tlb_flush_mmu_tlbonly(tlb);
			count_event(EV_TLB_TABLE_SYNC);
			smp_call_function(table_sync_fn, NULL, true);
			pt_table_free(table);
			return;
		}
		tlb->tables = page_address(p);
		tlb->tables->nr = 0;
	}
	tlb->tables->tables[tlb->tables->nr++] = table;
	if (tlb->tables->nr == GATHER_TABLE_BATCH_MAX) {
		count_event(EV_GATHER_FORCE_FLUSH);
		tlb_flush_mmu_tlbonly(tlb);
		tlb_free_tables(tlb);
	}
}

void tlb_finish_mmu(struct mmu_gather *tlb)
{
	tlb_flush_mmu(tlb);
	struct mmu_gather_batch *b = tlb->local.next;
	while (b) {
		struct mmu_gather_batch *n = b->next;
		free_page(virt_to_page(b));
		b = n;
	}
	tlb->local.next = NULL;
	tlb->active = &tlb->local;
	tlb->batch_count = 0;
	if (tlb->tables) {
		free_page(virt_to_page(tlb->tables));
		tlb->tables = NULL;
	}
	if (READ_ONCE(ptfree_rcu) || READ_ONCE(gather_tables_waiting))
		(void)rcu_poll();
}
