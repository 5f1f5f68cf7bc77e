/* Host tests of mm/mmu_gather.c: batching, delayed rmap, table batches, range tracking. */
#include "htest.h"
#include "vm_fake_alloc.h"
#include "mm/mmu_gather.h"
#include "mm/pgtable.h"
#include "mm/rmap.h"
#include "mm/tlbflush.h"
#include "kernel/events.h"

#define NPAGES 16384
static struct mm_struct *const MM = (struct mm_struct *)0;

static void setup(void)
{
	fake_mem_init(NPAGES);
	gather_nobatch = false;
	rmapbatch = RMAPBATCH_MULTI;
}

/* A page as an unmapped leaf leaves it: one reference, map count 1 when delayed. */
static struct page *leaf_page(bool delayed)
{
	struct page *p = alloc_page(0);
	if (delayed) {
		page_set_flags(p, PG_shared | PG_dirty);
		page_add_rmap(p);
	}
	return p;
}

/* Feed @n pages the way an unmap loop does (flush when told to). */
static void feed(struct mmu_gather *tlb, unsigned n, bool delayed, u64 va)
{
	for (unsigned i = 0; i < n; i++) {
		tlb_flush_pte_range(tlb, va + (u64)i * PAGE_SIZE, PAGE_SIZE);
		if (__tlb_remove_page_size(tlb, leaf_page(delayed), delayed, PAGE_SHIFT))
			tlb_flush_mmu(tlb);
	}
}

HTEST(next_action_decisions)
{
	/* no delayed rmaps: link, allocate, cap */
	HT_EXPECT_EQ(gather_next_action(true, false, 0, false, RMAPBATCH_LOCAL), GATHER_NEXT_ALLOC);
	HT_EXPECT_EQ(gather_next_action(false, true, 3, false, RMAPBATCH_LOCAL), GATHER_NEXT_USE);
	HT_EXPECT_EQ(gather_next_action(false, false, GATHER_MAX_BATCHES, false, RMAPBATCH_MULTI),
		     GATHER_NEXT_FLUSH);
	HT_EXPECT_EQ(gather_next_action(false, false, GATHER_MAX_BATCHES - 1, false, RMAPBATCH_MULTI),
		     GATHER_NEXT_ALLOC);
	/* delayed rmaps: local = bundle only; multi = one batch beyond the bundle */
	HT_EXPECT_EQ(gather_next_action(true, false, 0, true, RMAPBATCH_LOCAL), GATHER_NEXT_FLUSH);
	HT_EXPECT_EQ(gather_next_action(true, false, 0, true, RMAPBATCH_MULTI), GATHER_NEXT_ALLOC);
	HT_EXPECT_EQ(gather_next_action(true, true, 1, true, RMAPBATCH_MULTI), GATHER_NEXT_USE);
	HT_EXPECT_EQ(gather_next_action(false, true, 2, true, RMAPBATCH_MULTI), GATHER_NEXT_FLUSH);
	HT_EXPECT(GATHER_BATCH_MAX >= 500);
	HT_EXPECT(GATHER_MAX_BATCHES * GATHER_BATCH_MAX <= GATHER_MAX_PAGES);
}

HTEST(bundle_then_batches)
{
	setup();
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, MM);
	feed(&tlb, MMU_GATHER_BUNDLE - 1, false, 0x100000);
	HT_EXPECT_EQ(event_sum(EV_GATHER_BATCH_ALLOC), 0);
	feed(&tlb, 1, false, 0x200000);	/* fills the bundle: a batch is linked */
	HT_EXPECT_EQ(event_sum(EV_GATHER_BATCH_ALLOC), 1);
	feed(&tlb, GATHER_BATCH_MAX, false, 0x300000);
	HT_EXPECT_EQ(event_sum(EV_GATHER_BATCH_ALLOC), 2);
	HT_EXPECT_EQ(fake_nr_flushes, 0);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES - (MMU_GATHER_BUNDLE + GATHER_BATCH_MAX) - 2);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(fake_nr_flushes, 1);
	HT_EXPECT_EQ(fake_last_flush()->start, 0x100000);
	HT_EXPECT_EQ(fake_last_flush()->end, 0x300000 + GATHER_BATCH_MAX * PAGE_SIZE);
	HT_EXPECT_EQ(fake_last_flush()->stride_shift, PAGE_SHIFT);
	HT_EXPECT(!fake_last_flush()->freed_tables);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
	HT_EXPECT_EQ(event_sum(EV_GATHER_FLUSH), 1);
	HT_EXPECT_EQ(event_sum(EV_GATHER_FORCE_FLUSH), 0);
}

HTEST(cap_forces_flush)
{
	setup();
	struct mmu_gather tlb;
	unsigned cap = MMU_GATHER_BUNDLE + GATHER_MAX_BATCHES * GATHER_BATCH_MAX;
	tlb_gather_mmu(&tlb, MM);
	feed(&tlb, cap - 1, false, 0);
	HT_EXPECT_EQ(fake_nr_flushes, 0);
	feed(&tlb, 1, false, 0);
	HT_EXPECT_EQ(fake_nr_flushes, 1);
	HT_EXPECT_EQ(event_sum(EV_GATHER_FORCE_FLUSH), 1);
	HT_EXPECT_EQ(event_sum(EV_GATHER_BATCH_ALLOC), GATHER_MAX_BATCHES);
	/* batches are kept and reused after the flush */
	feed(&tlb, 2000, false, 0);
	HT_EXPECT_EQ(event_sum(EV_GATHER_BATCH_ALLOC), GATHER_MAX_BATCHES);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
}

static void fallback_run(bool via_option)
{
	setup();
	if (via_option)
		gather_nobatch = true;
	else
		fake_fail_nowarn = true;
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, MM);
	feed(&tlb, 8 * 5 - 1, false, 0);
	tlb_finish_mmu(&tlb);
}

HTEST(no_batch_page_falls_back_to_bundle)
{
	for (int v = 0; v < 2; v++) {
		fallback_run(v);
		HT_EXPECT_EQ(fake_nr_flushes, 5);	/* 4 forced + finish */
		HT_EXPECT_EQ(event_sum(EV_GATHER_FALLBACK), 4);
		HT_EXPECT_EQ(event_sum(EV_GATHER_FORCE_FLUSH), 4);
		HT_EXPECT_EQ(nr_free_pages(), NPAGES);
	}
}

/* At every flush, every gathered delayed-rmap page must still be mapped. */
static struct mmu_gather *watched;
static int rmap_violations;
static void check_delayed_still_mapped(const struct fake_flush *f)
{
	(void)f;
	for (struct mmu_gather_batch *b = &watched->local; b; b = b == watched->active ? NULL : b->next)
		for (unsigned i = 0; i < b->nr; i++)
			if ((b->entries[i] & GATHER_ENTRY_DELAY_RMAP) &&
			    page_mapcount((struct page *)(b->entries[i] & ~1UL)) != 1)
				rmap_violations++;
}

static u64 delayed_run(int policy, unsigned n)
{
	setup();
	rmapbatch = policy;
	struct mmu_gather tlb;
	watched = &tlb;
	rmap_violations = 0;
	fake_flush_hook = check_delayed_still_mapped;
	tlb_gather_mmu(&tlb, MM);
	feed(&tlb, n, true, 0x40000000);
	tlb_finish_mmu(&tlb);
	fake_flush_hook = NULL;
	return fake_nr_flushes;
}

HTEST(delayed_rmap_local_vs_multi)
{
	/* seed 001: the bundle-only policy flushes every 8 pages */
	HT_EXPECT_EQ(delayed_run(RMAPBATCH_LOCAL, 512), 512 / MMU_GATHER_BUNDLE);
	HT_EXPECT_EQ(rmap_violations, 0);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
	HT_EXPECT_EQ(event_sum(EV_RMAP_REMOVE), 512);
	/* the fix: bundle + one batch before a flush */
	u64 per = MMU_GATHER_BUNDLE + GATHER_BATCH_MAX;
	HT_EXPECT_EQ(delayed_run(RMAPBATCH_MULTI, 2048), DIV_ROUND_UP(2048, per));
	HT_EXPECT_EQ(rmap_violations, 0);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
	HT_EXPECT_EQ(event_sum(EV_RMAP_REMOVE), 2048);
	HT_EXPECT_EQ(event_sum(EV_GATHER_BATCH_ALLOC), 1);
}

HTEST(flush_rmaps_requires_tlb_flush_first)
{
	setup();
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, MM);
	struct page *p = leaf_page(true);
	tlb_flush_pte_range(&tlb, 0x1000, PAGE_SIZE);
	HT_EXPECT(!__tlb_remove_page_size(&tlb, p, true, PAGE_SHIFT));
	HT_EXPECT(tlb.delayed_rmap);
	tlb_flush_mmu_tlbonly(&tlb);
	HT_EXPECT_EQ(page_mapcount(p), 1);
	tlb_flush_rmaps(&tlb);
	HT_EXPECT_EQ(page_mapcount(p), 0);
	HT_EXPECT(!tlb.delayed_rmap);
	HT_EXPECT_EQ(page_refcount(p), 1);	/* still held by the gather */
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
}

static struct page *table_page(void)
{
	struct page *t = pt_table_alloc(1);
	return t;
}

static u64 table_frees_at_flush;
static int flushes_without_freed_tables;
static void note_table_frees(const struct fake_flush *f)
{
	if (!f->freed_tables)
		flushes_without_freed_tables++;
	table_frees_at_flush = event_sum(EV_PGTABLE_FREE);
}

HTEST(table_batch_and_fallback)
{
	setup();
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, MM);
	fake_flush_hook = note_table_frees;
	unsigned n = GATHER_TABLE_BATCH_MAX + 3;
	for (unsigned i = 0; i < n; i++)
		tlb_free_table_at(&tlb, table_page(), (u64)i * PMD_SIZE, 1);
	HT_EXPECT_EQ(fake_nr_flushes, 1);	/* the full table batch */
	HT_EXPECT_EQ(table_frees_at_flush, 0);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), GATHER_TABLE_BATCH_MAX);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), n);
	HT_EXPECT_EQ(table_frees_at_flush, GATHER_TABLE_BATCH_MAX);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);

	/* no batch page: flush and free each table on the spot */
	setup();
	gather_nobatch = true;
	fake_flush_hook = note_table_frees;
	tlb_gather_mmu(&tlb, MM);
	for (unsigned i = 0; i < 3; i++)
		tlb_free_table_at(&tlb, table_page(), (u64)i * PMD_SIZE, 1);
	HT_EXPECT_EQ(fake_nr_flushes, 3);
	HT_EXPECT_EQ(event_sum(EV_GATHER_FALLBACK), 3);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), 3);
	HT_EXPECT_EQ(table_frees_at_flush, 2);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(fake_nr_flushes, 3);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
	HT_EXPECT_EQ(flushes_without_freed_tables, 0);
}

HTEST(range_tracking)
{
	setup();
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, MM);
	HT_EXPECT(tlb.start >= tlb.end);
	tlb_flush_pmd_range(&tlb, 0x40000000, PMD_SIZE);
	HT_EXPECT_EQ(tlb.stride_shift, PMD_SHIFT);
	HT_EXPECT(tlb.cleared_pmds && !tlb.cleared_ptes);
	tlb_flush_pte_range(&tlb, 0x3000, PAGE_SIZE);
	HT_EXPECT_EQ(tlb.start, 0x3000);
	HT_EXPECT_EQ(tlb.end, 0x40000000 + PMD_SIZE);
	HT_EXPECT_EQ(tlb.stride_shift, PAGE_SHIFT);
	HT_EXPECT(tlb.cleared_ptes);
	HT_EXPECT(!tlb.freed_tables);
	tlb_free_table_at(&tlb, table_page(), 0x7654321000, 1);	/* a PT under a PMD entry */
	HT_EXPECT(tlb.freed_tables && tlb.cleared_pmds);
	HT_EXPECT_EQ(tlb.end, 0x7654400000);
	tlb_flush_mmu(&tlb);
	HT_EXPECT_EQ(fake_nr_flushes, 1);
	HT_EXPECT(fake_last_flush()->freed_tables);
	HT_EXPECT_EQ(fake_last_flush()->start, 0x3000);
	HT_EXPECT(tlb.start >= tlb.end && !tlb.freed_tables && !tlb.cleared_ptes);
	/* nothing tracked: no flush request */
	tlb_flush_mmu(&tlb);
	HT_EXPECT_EQ(fake_nr_flushes, 1);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(fake_nr_flushes, 1);

	/* a full-mm gather flushes everything */
	tlb_gather_mmu_fullmm(&tlb, MM);
	feed(&tlb, 3, false, 0x5000);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(fake_last_flush()->start, 0);
	HT_EXPECT_EQ(fake_last_flush()->end, TLB_FLUSH_ALL);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
}

int main(void)
{
	int r = htest_main("mmu_gather");
	fake_mem_fini();
	return r;
}
