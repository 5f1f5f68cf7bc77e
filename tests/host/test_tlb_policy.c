/* Host tests of the TLB flush policy (the pure decisions of mm/tlbflush.h), the flags the
 * mmu_gather passes to the flush, the table-free variants, the table fallback's sync and
 * the grace-period mechanism (kernel/rcu.c) on one CPU. */
#include "htest.h"
#include "vm_fake_alloc.h"
#include "mm/mmu_gather.h"
#include "mm/pgtable.h"
#include "mm/rmap.h"
#include "mm/tlbflush.h"
#include "kernel/events.h"
#include "kernel/rcu.h"

#define NPAGES 8192
static struct mm_struct *const MM = (struct mm_struct *)0;

static void setup(void)
{
	fake_mem_init(NPAGES);
	gather_nobatch = false;
	rmapbatch = RMAPBATCH_MULTI;
	ptfree = PTFREE_LOOP;
	ptfree_rcu = false;
	gather_tables_waiting = gather_tables_waiting_peak = 0;
}

HTEST(decide_skip_range_full)
{
	const u64 A = 0x40000000;
	/* caught up: nothing, whatever the range */
	HT_EXPECT_EQ(tlb_flush_decide(5, 5, 5, A, A + PAGE_SIZE, PAGE_SHIFT, 33), TLB_KIND_SKIP);
	HT_EXPECT_EQ(tlb_flush_decide(6, 5, 5, 0, TLB_FLUSH_ALL, PAGE_SHIFT, 33), TLB_KIND_SKIP);
	/* exactly this request pending: its range up to the ceiling */
	HT_EXPECT_EQ(tlb_flush_decide(4, 5, 5, A, A + 33 * PAGE_SIZE, PAGE_SHIFT, 33), TLB_KIND_RANGE);
	HT_EXPECT_EQ(tlb_flush_decide(4, 5, 5, A, A + 34 * PAGE_SIZE, PAGE_SHIFT, 33), TLB_KIND_FULL);
	HT_EXPECT_EQ(tlb_flush_decide(4, 5, 5, A, A + 1 * PAGE_SIZE, PAGE_SHIFT, 0), TLB_KIND_FULL);
	HT_EXPECT_EQ(tlb_flush_decide(4, 5, 5, 0, TLB_FLUSH_ALL, PAGE_SHIFT, 33), TLB_KIND_FULL);
	/* 2 MiB stride: 33 huge pages are 33 strides */
	HT_EXPECT_EQ(tlb_flush_decide(4, 5, 5, A, A + 33 * PMD_SIZE, PMD_SHIFT, 33), TLB_KIND_RANGE);
	/* several pending (another request moved the generation, or we were behind) */
	HT_EXPECT_EQ(tlb_flush_decide(4, 6, 5, A, A + PAGE_SIZE, PAGE_SHIFT, 33), TLB_KIND_FULL);
	HT_EXPECT_EQ(tlb_flush_decide(3, 5, 5, A, A + PAGE_SIZE, PAGE_SHIFT, 33), TLB_KIND_FULL);
	/* an empty range still catches the generation up (nothing to invalidate) */
	HT_EXPECT_EQ(tlb_flush_decide(4, 5, 5, A, A, PAGE_SHIFT, 33), TLB_KIND_RANGE);
	HT_EXPECT(!tlb_flush_wants_full(A, A, PAGE_SHIFT, 33));
	HT_EXPECT(tlb_flush_wants_full(0, TLB_FLUSH_ALL, PAGE_SHIFT, 1000000));
}

HTEST(lazy_and_early_ack_rules)
{
	HT_EXPECT(tlb_may_skip_lazy(0, true));
	HT_EXPECT(tlb_may_skip_lazy(TLB_FLUSH_FREES_PAGES, true));
	HT_EXPECT(!tlb_may_skip_lazy(TLB_FLUSH_FREED_TABLES, true));
	HT_EXPECT(!tlb_may_skip_lazy(0, false));
	HT_EXPECT(tlb_early_ack_allowed(0, true));
	HT_EXPECT(!tlb_early_ack_allowed(0, false));
	HT_EXPECT(!tlb_early_ack_allowed(TLB_FLUSH_FREES_PAGES, true));
	HT_EXPECT(!tlb_early_ack_allowed(TLB_FLUSH_FREED_TABLES, true));
}

HTEST(asid_slots)
{
	struct tlb_asid_slot s[TLB_NR_DYN_ASIDS] = { { 0, 0 } };
	u16 next = 0;
	/* new mms take the slots round-robin, each with a flush */
	for (unsigned i = 0; i < TLB_NR_DYN_ASIDS; i++) {
		struct tlb_asid_pick p = tlb_asid_choose(s, TLB_NR_DYN_ASIDS, 10 + i, 1, &next);
		HT_EXPECT_EQ(p.slot, i);
		HT_EXPECT(p.flush);
		s[p.slot].mm_id = 10 + i;
		s[p.slot].gen = 1;
	}
	/* back to an mm whose slot is up to date: no flush */
	struct tlb_asid_pick p = tlb_asid_choose(s, TLB_NR_DYN_ASIDS, 12, 1, &next);
	HT_EXPECT_EQ(p.slot, 2);
	HT_EXPECT(!p.flush);
	/* its generation moved while away: flush that ASID */
	p = tlb_asid_choose(s, TLB_NR_DYN_ASIDS, 12, 2, &next);
	HT_EXPECT_EQ(p.slot, 2);
	HT_EXPECT(p.flush);
	/* a seventh mm evicts the oldest victim */
	p = tlb_asid_choose(s, TLB_NR_DYN_ASIDS, 99, 1, &next);
	HT_EXPECT_EQ(p.slot, 0);
	HT_EXPECT(p.flush);
}

static struct page *table_page(void)
{
	return pt_table_alloc(1);
}

HTEST(gather_passes_what_is_freed)
{
	setup();
	struct mmu_gather tlb;
	/* only special leaves cleared: nothing freed, early ack allowed */
	tlb_gather_mmu(&tlb, MM);
	tlb_flush_pte_range(&tlb, 0x1000, PAGE_SIZE);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(fake_nr_flushes, 1);
	HT_EXPECT_EQ(fake_last_flush()->flags, 0);
	/* a page gathered: it will be freed */
	tlb_gather_mmu(&tlb, MM);
	tlb_flush_pte_range(&tlb, 0x1000, PAGE_SIZE);
	HT_EXPECT(!__tlb_remove_page_size(&tlb, alloc_page(0), false, PAGE_SHIFT));
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(fake_last_flush()->flags, TLB_FLUSH_FREES_PAGES);
	/* a table: tables freed (lazy CPUs must be flushed too) */
	tlb_gather_mmu(&tlb, MM);
	tlb_free_table_at(&tlb, table_page(), 0x200000, 1);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(fake_last_flush()->flags, TLB_FLUSH_FREED_TABLES | TLB_FLUSH_FREES_PAGES);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
	/* a gathered range of 33 pages stays under the default ceiling, 34 goes over */
	tlb_gather_mmu(&tlb, MM);
	tlb_flush_pte_range(&tlb, 0x100000, 33 * PAGE_SIZE);
	HT_EXPECT(!tlb_flush_wants_full(tlb.start, tlb.end, tlb.stride_shift, 33));
	tlb_flush_pte_range(&tlb, 0x100000 + 33 * PAGE_SIZE, PAGE_SIZE);
	HT_EXPECT(tlb_flush_wants_full(tlb.start, tlb.end, tlb.stride_shift, 33));
	tlb_finish_mmu(&tlb);
}

static u64 frees_at_flush;
static void note_frees(const struct fake_flush *f)
{
	(void)f;
	frees_at_flush = event_sum(EV_PGTABLE_FREE);
}

static void free_tables_run(int mode, bool rcu, unsigned n)
{
	setup();
	ptfree = mode;
	ptfree_rcu = rcu;
	fake_flush_hook = note_frees;
	frees_at_flush = ~0ULL;
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, MM);
	for (unsigned i = 0; i < n; i++)
		tlb_free_table_at(&tlb, table_page(), (u64)i * PMD_SIZE, 1);
	tlb_finish_mmu(&tlb);
	fake_flush_hook = NULL;
}

HTEST(ptfree_loop_bulk_rcu)
{
	const unsigned n = GATHER_TABLE_BATCH_MAX + 5;	/* one full batch + a partial */
	free_tables_run(PTFREE_LOOP, false, n);
	HT_EXPECT_EQ(frees_at_flush, GATHER_TABLE_BATCH_MAX);	/* none before the 2nd flush */
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), n);
	HT_EXPECT_EQ(event_sum(EV_PTFREE_BULK), 0);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);

	free_tables_run(PTFREE_BULK, false, n);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), n);
	HT_EXPECT_EQ(event_sum(EV_PTFREE_BULK), 2);	/* one pass per batch */
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);

	/* RCU: handed over after the flush, freed when the grace period is over (on one
	 * CPU at once), by the gather's own poll */
	free_tables_run(PTFREE_BULK, true, n);
	HT_EXPECT_EQ(event_sum(EV_RCU_TABLES_DEFERRED), n);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), n);
	HT_EXPECT_EQ(gather_tables_waiting, 0);
	HT_EXPECT(gather_tables_waiting_peak >= GATHER_TABLE_BATCH_MAX);
	HT_EXPECT(event_sum(EV_RCU_GP) >= 1);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
}

HTEST(table_fallback_syncs_every_cpu)
{
	setup();
	gather_nobatch = true;
	fake_flush_hook = note_frees;
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, MM);
	for (unsigned i = 0; i < 4; i++) {
		u64 calls = fake_nr_calls;
		tlb_free_table_at(&tlb, table_page(), (u64)i * PMD_SIZE, 1);
		HT_EXPECT_EQ(fake_nr_calls, calls + 1);	/* the empty call, after the flush */
		HT_EXPECT_EQ(frees_at_flush, i);	/* freed only after its flush */
		HT_EXPECT(fake_last_flush()->freed_tables);
	}
	tlb_finish_mmu(&tlb);
	fake_flush_hook = NULL;
	HT_EXPECT_EQ(event_sum(EV_TLB_TABLE_SYNC), 4);
	HT_EXPECT_EQ(event_sum(EV_GATHER_FALLBACK), 4);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), 4);
	HT_EXPECT_EQ(nr_free_pages(), NPAGES);
}

static int cb_runs;
static void count_cb(struct rcu_head *h)
{
	(void)h;
	cb_runs++;
}

HTEST(rcu_one_cpu)
{
	setup();
	struct rcu_head h[3];
	struct rcu_stats st0, st1;
	rcu_get_stats(&st0);
	cb_runs = 0;
	for (int i = 0; i < 3; i++)
		call_rcu(&h[i], count_cb);
	HT_EXPECT_EQ(cb_runs, 0);	/* never run from call_rcu itself */
	rcu_poll();
	rcu_barrier();
	HT_EXPECT_EQ(cb_runs, 3);
	synchronize_rcu();
	rcu_get_stats(&st1);
	HT_EXPECT(st1.gp_completed >= st0.gp_completed + 2);
	HT_EXPECT_EQ(st1.cbs_waiting, 0);
	HT_EXPECT(st1.cbs_peak >= 3);
}

int main(void)
{
	int r = htest_main("tlb_policy");
	fake_mem_fini();
	return r;
}
