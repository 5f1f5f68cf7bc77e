/*
 * mmu_gather, first version: page batches (on-stack bundle, then page-sized batches up to
 * a cap), delayed rmap for dirty shared pages, a page-sized batch of table pages freed one
 * by one right after the flush, range tracking. See mm/mmu_gather.h.
 */
#include "mm/mmu_gather.h"
#include "mm/tlbflush.h"
#include "mm/pgtable.h"
#include "mm/rmap.h"
#include "mm/page_alloc.h"
#include "kernel/events.h"
#include "kernel/options.h"
#include "kernel/panic.h"

DEFINE_VARIANT_ENUM(gather_rmap_batch, "rmapbatch", RMAPBATCH_MULTI,
		    "how many pages a gather holding delayed-rmap (dirty shared) pages may collect "
		    "before a flush: local = the 8-entry on-stack bundle, multi = one extra batch",
		    "local", "multi");
DEFINE_VARIANT_BOOL(gather_nobatch, "gather_nobatch", false,
		    "test: never allocate mmu_gather batch pages (forces the fallback paths)");

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
				   tlb->delayed_rmap, READ_ONCE(gather_rmap_batch))) {
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

void tlb_flush_mmu_tlbonly(struct mmu_gather *tlb)
{
	if (tlb->start >= tlb->end)
		return;
	if (tlb->fullmm)
		flush_tlb_mm_range(tlb->mm, 0, TLB_FLUSH_ALL, PAGE_SHIFT, tlb->freed_tables);
	else
		flush_tlb_mm_range(tlb->mm, tlb->start, tlb->end, tlb->stride_shift,
				   tlb->freed_tables);
	range_reset(tlb);
}

/* Every batch in use: the bundle and the linked batches up to the active one. */
#define for_each_used_batch(b, tlb) \
	for ((b) = &(tlb)->local; (b); (b) = ((b) == (tlb)->active ? NULL : (b)->next))

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

static bool tlb_free_tables(struct mmu_gather *tlb)
{
	struct mmu_gather_table_batch *t = tlb->tables;
	if (!t || !t->nr)
		return false;
	for (unsigned i = 0; i < t->nr; i++)
		pt_table_free(t->tables[i]);
	t->nr = 0;
	return true;
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
			/* No batch page: invalidate now and free this one table. No software
			 * walker runs without the page-table lock here, so once every TLB
			 * (and paging-structure cache) has dropped it the table is unreachable. */
			count_event(EV_GATHER_FALLBACK);
			tlb_flush_mmu_tlbonly(tlb);
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
}
