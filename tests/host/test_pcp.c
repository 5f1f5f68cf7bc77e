/* Host tests of the per-CPU page lists: refill, overflow, round-robin bulk free, drains,
 * pcp on/off, the pcp_mt variants with a stolen pageblock, bulk interfaces. */
#include "test_page_env.h"

static void pcp_params(u64 batch, u64 high)
{
	opt_pcp_batch = batch;
	opt_pcp_high = high;
}

HTEST(refill_takes_batch_under_one_lock)
{
	env_setup(64, 2);
	pcp_params(16, 100);
	u64 locks = ev(EV_ZONE_LOCK);
	struct page *p = alloc_pages(GFP_USER, 0);
	HT_ASSERT(p);
	HT_EXPECT_EQ(ev(EV_PGALLOC_PCP_REFILL), 1);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 1);
	HT_EXPECT_EQ(ev(EV_PGALLOC_PCP_HIT), 1);
	HT_EXPECT_EQ(pcp_count(0), 15);
	struct page *q[15];
	for (int i = 0; i < 15; i++)
		q[i] = alloc_pages(GFP_USER, 0);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 1);	/* all hits */
	HT_EXPECT_EQ(pcp_count(0), 0);
	struct page *r = alloc_pages(GFP_USER, 0);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 2);
	HT_EXPECT_EQ(ev(EV_PGALLOC_PCP_REFILL), 2);

	/* order > 0: max(batch >> order, 2) blocks */
	struct page *o2 = alloc_pages(GFP_USER, 2);
	HT_ASSERT(o2);
	HT_EXPECT_EQ(pcp_cpu[0].list_count[pcp_index(2, MIGRATE_MOVABLE)], 3);
	struct page *o3 = alloc_pages(GFP_KERNEL, 3);
	HT_ASSERT(o3);
	HT_EXPECT_EQ(pcp_cpu[0].list_count[pcp_index(3, MIGRATE_UNMOVABLE)], 1);
	HT_EXPECT(IS_ALIGNED(page_to_pfn(o3), 8));
	HT_EXPECT_EQ(pcp_count(0), 15 + 3 * 4 + 8);
	HT_EXPECT_EQ(env_check(), 0);

	free_pages(p, 0);
	for (int i = 0; i < 15; i++)
		free_pages(q[i], 0);
	free_pages(r, 0);
	free_pages(o2, 2);
	free_pages(o3, 3);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	drain_local_pages();
	HT_EXPECT_EQ(nr_free_buddy_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
}

HTEST(overflow_bulk_frees_under_one_lock)
{
	env_setup(64, 1);
	pcp_params(16, 100);
	LIST_HEAD(l);
	for (int i = 0; i < 200; i++) {
		struct page *p = alloc_pages(GFP_USER, 0);
		HT_ASSERT(p);
		list_add_tail(&p->lru, &l);
	}
	HT_EXPECT_EQ(pcp_count(0), 13 * 16 - 200);
	u64 locks = ev(EV_ZONE_LOCK), bulk = ev(EV_PGFREE_BULK);
	unsigned max_seen = 0, bulks = 0, prev = pcp_count(0);
	while (!list_empty(&l)) {
		struct page *p = list_first_entry(&l, struct page, lru);
		list_del(&p->lru);
		free_pages(p, 0);
		unsigned c = pcp_count(0);
		max_seen = MAX(max_seen, c);
		if (c < prev) {
			bulks++;
			HT_EXPECT_EQ(c, 100 - 16);	/* freed count - (high - batch) */
		}
		prev = c;
	}
	HT_EXPECT(max_seen < 100);
	HT_EXPECT(bulks > 0);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, bulks);
	HT_EXPECT_EQ(ev(EV_PGFREE_BULK) - bulk, 16ULL * bulks);
	HT_EXPECT_EQ(ev(EV_PGFREE_PCP), 200);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);

	/* Lowering high at run time (variant) trims on the next free. */
	struct page *p = alloc_pages(GFP_USER, 0);
	pcp_params(16, 40);
	free_pages(p, 0);
	HT_EXPECT(pcp_count(0) < 40);
	HT_EXPECT_EQ(env_check(), 0);
}

HTEST(bulk_free_is_round_robin_over_lists)
{
	env_setup(64, 1);
	pcp_params(8, 64);
	LIST_HEAD(mov);
	LIST_HEAD(unm);
	LIST_HEAD(rec);
	struct page *o1[10];
	for (int i = 0; i < 20; i++) {
		list_add_tail(&alloc_pages(GFP_USER, 0)->lru, &mov);
		list_add_tail(&alloc_pages(GFP_KERNEL, 0)->lru, &unm);
	}
	for (int i = 0; i < 4; i++)
		list_add_tail(&alloc_pages(__GFP_RECLAIMABLE, 0)->lru, &rec);
	for (int i = 0; i < 10; i++)
		o1[i] = alloc_pages(GFP_USER, 1);
	drain_local_pages();
	HT_EXPECT_EQ(pcp_count(0), 0);
	env_free_list(&mov);
	env_free_list(&unm);
	for (int i = 0; i < 10; i++)
		free_pages(o1[i], 1);
	HT_EXPECT_EQ(pcp_count(0), 60);
	const u32 *lc = pcp_cpu[0].list_count;
	unsigned idx[4] = { pcp_index(0, MIGRATE_UNMOVABLE), pcp_index(0, MIGRATE_MOVABLE),
			    pcp_index(0, MIGRATE_RECLAIMABLE), pcp_index(1, MIGRATE_MOVABLE) };
	u32 before[4];
	/* the 4th reclaimable free reaches high: 8 pages leave, one block per list in turn */
	for (int i = 0; i < 3; i++) {
		struct page *p = list_first_entry(&rec, struct page, lru);
		list_del(&p->lru);
		free_pages(p, 0);
	}
	for (int i = 0; i < 4; i++)
		before[i] = lc[idx[i]];
	HT_EXPECT_EQ(before[0], 20);
	HT_EXPECT_EQ(before[1], 20);
	HT_EXPECT_EQ(before[2], 3);
	HT_EXPECT_EQ(before[3], 10);
	u64 locks = ev(EV_ZONE_LOCK);
	env_free_list(&rec);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 1);
	HT_EXPECT(pcp_count(0) <= 64 - 8);
	before[2]++;	/* the page just freed */
	for (int i = 0; i < 4; i++)
		HT_EXPECT(lc[idx[i]] < before[i]);
	HT_EXPECT_EQ(env_check(), 0);
}

static void alloc_free_as(unsigned cpu, int n)
{
	unsigned me = host_cpu_id;
	host_cpu_id = cpu;
	LIST_HEAD(l);
	for (int i = 0; i < n; i++)
		list_add_tail(&alloc_pages(GFP_USER, 0)->lru, &l);
	env_free_list(&l);
	host_cpu_id = me;
}

HTEST(drain_local_remote_all)
{
	env_setup(64, 4);
	pcp_params(8, 64);
	for (unsigned c = 0; c < 4; c++)
		alloc_free_as(c, 30);
	for (unsigned c = 0; c < 4; c++)
		HT_EXPECT(pcp_count(c) > 0);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	u64 drains = ev(EV_PCP_DRAIN), locks = ev(EV_ZONE_LOCK);
	drain_local_pages();
	HT_EXPECT_EQ(pcp_count(0), 0);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 1);
	drain_pages_cpu(2);		/* remote: runs as CPU 2 */
	HT_EXPECT_EQ(pcp_count(2), 0);
	HT_EXPECT(pcp_count(1) > 0);
	HT_EXPECT_EQ(ev(EV_PCP_DRAIN) - drains, 2);
	drain_all_pages();
	for (unsigned c = 0; c < 4; c++)
		HT_EXPECT_EQ(pcp_count(c), 0);
	HT_EXPECT_EQ(ev(EV_PCP_DRAIN) - drains, 4);	/* only non-empty lists count */
	HT_EXPECT_EQ(nr_free_buddy_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
}

HTEST(pcp_off_goes_straight_to_buddy)
{
	env_setup(64, 1);
	opt_pcp = false;
	u64 locks = ev(EV_ZONE_LOCK);
	struct page *p = alloc_pages(GFP_USER, 0);
	free_pages(p, 0);
	HT_EXPECT_EQ(pcp_count(0), 0);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 2);
	HT_EXPECT_EQ(ev(EV_PGALLOC_BUDDY), 1);
	HT_EXPECT_EQ(ev(EV_PGFREE_BUDDY), 1);
	HT_EXPECT_EQ(ev(EV_PGALLOC_PCP_HIT), 0);
	/* __GFP_NOPCP bypasses the lists when they are on */
	opt_pcp = true;
	p = alloc_pages(GFP_USER | __GFP_NOPCP, 0);
	HT_EXPECT_EQ(ev(EV_PGALLOC_BUDDY), 2);
	free_pages(p, 0);		/* frees still go through the pcp */
	HT_EXPECT_EQ(pcp_count(0), 1);
	/* switching off with pages parked: they stay counted and come back on drain */
	opt_pcp = false;
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
	drain_local_pages();
	HT_EXPECT_EQ(nr_free_buddy_pages(), nr_managed_pages());
}

/*
 * Seed 003: page P sits on the pcp list (entered as movable) while its pageblock is
 * claimed by an unmovable allocation. Returns the checker's stale block count after the
 * drain.
 */
static u64 stolen_pageblock(int mode, bool isolated, int *ht_failures, u64 *lookups_in_drain)
{
	min_free_kbytes = 4;
	struct env_range mem[] = { { 0x100000, 32 << 20 } };
	env_setup_ranges(mem, 1, NULL, 0, 1, true);
	pcp_mt = mode;
	opt_pcp = false;
	struct page **all = calloc(max_pfn, sizeof(*all));
	struct page *p;
	while ((p = alloc_pages(GFP_USER | __GFP_ATOMIC, 0)))
		all[page_to_pfn(p)] = p;
	u64 pb = 0;
	for (u64 b = 1; b < max_pfn / PAGEBLOCK_NR_PAGES && !pb; b++) {
		bool full = true;
		for (u64 i = 0; i < PAGEBLOCK_NR_PAGES && full; i++)
			full = all[(b << PAGEBLOCK_ORDER) + i] != NULL;
		if (full)
			pb = b;
	}
	if (!pb) {
		HT_EXPECT(pb != 0);
		return ~0ULL;
	}
	u64 base = pb << PAGEBLOCK_ORDER;
	struct page *P = all[base + 511];
	all[base + 511] = NULL;
	opt_pcp = true;
	free_pages(P, 0);				/* onto the movable pcp list */
	HT_EXPECT(P->flags & PG_pcp);
	if (mode == PCP_MT_CACHED)
		HT_EXPECT_EQ(P->migratetype, MIGRATE_MOVABLE);
	opt_pcp = false;
	for (u64 i = 1; i < 511; i++) {			/* page `base` stays allocated */
		free_pages(all[base + i], 0);
		all[base + i] = NULL;
	}
	u64 steals = ev(EV_PAGEBLOCK_STEAL);
	struct page *u = alloc_pages(GFP_KERNEL, 0);	/* claims the pageblock */
	HT_EXPECT(u != NULL);
	HT_EXPECT_EQ(ev(EV_PAGEBLOCK_STEAL), steals + 1);
	HT_EXPECT_EQ(__pageblock_mt(base), MIGRATE_UNMOVABLE);
	HT_EXPECT_EQ(page_to_pfn(u) >> PAGEBLOCK_ORDER, pb);
	free_pages(u, 0);
	struct page_check_result r;
	HT_EXPECT_EQ(page_alloc_check_report(&r), 0);
	HT_EXPECT_EQ(r.stale_blocks, 0);

	u64 lk = ev(EV_PAGEBLOCK_LOOKUP);
	opt_pcp = true;
	mm_zone.isolated_pageblocks = isolated;
	drain_local_pages();
	mm_zone.isolated_pageblocks = 0;
	*lookups_in_drain = ev(EV_PAGEBLOCK_LOOKUP) - lk;
	HT_EXPECT_EQ(page_alloc_check_report(&r), 0);
	u64 stale = r.stale_blocks;
	/* Either way the merge happened: P joined its free buddies into one order-8 block
	 * (its order-8 buddy holds the allocated page `base`). */
	struct page *blk = pfn_to_page(base + 256);
	HT_EXPECT(blk->flags & PG_buddy);
	HT_EXPECT_EQ(blk->order, 8);
	HT_EXPECT_EQ(blk->migratetype, mode == PCP_MT_CACHED && !isolated ? MIGRATE_MOVABLE
									 : MIGRATE_UNMOVABLE);

	for (u64 i = 0; i < max_pfn; i++)
		if (all[i])
			free_pages(all[i], 0);
	free(all);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(page_alloc_check_report(&r), 0);
	return stale;
}

HTEST(pcp_mt_cached_returns_stolen_page_to_stale_list)
{
	u64 lookups;
	u64 stale = stolen_pageblock(PCP_MT_CACHED, false, ht_failures, &lookups);
	HT_EXPECT_EQ(stale, 1);
	HT_EXPECT_EQ(lookups, 0);
}

/* The cached type carries the per-page isolated-pageblock check: with a pageblock
 * isolated, bulk free looks every page's type up (and finds the current one). */
HTEST(pcp_mt_cached_rechecks_when_pageblocks_isolated)
{
	u64 lookups;
	u64 stale = stolen_pageblock(PCP_MT_CACHED, true, ht_failures, &lookups);
	HT_EXPECT_EQ(stale, 0);
	HT_EXPECT_EQ(lookups, 1);
}

HTEST(pcp_mt_lookup_returns_stolen_page_to_current_list)
{
	u64 lookups;
	u64 stale = stolen_pageblock(PCP_MT_LOOKUP, false, ht_failures, &lookups);
	HT_EXPECT_EQ(stale, 0);
	HT_EXPECT_EQ(lookups, 1);
}

/*
 * Seed 003, the refill side. All memory is allocated movable with pcp off; then one
 * pageblock's pages are freed and an unmovable allocation claims the block, so (almost)
 * every free page sits on the unmovable lists and a movable refill borrows them. Under
 * cached, refill stores the type the pages were taken for (movable) in each page; under
 * lookup it writes nothing, so each page keeps the type of the list the buddy had it on
 * (its pageblock's). Returns how many refilled pages came from the borrowed block.
 */
static unsigned refill_from_borrowed_blocks(int mode, int *ht_failures)
{
	min_free_kbytes = 4;
	struct env_range mem[] = { { 0x100000, 16 << 20 } };
	env_setup_ranges(mem, 1, NULL, 0, 1, true);
	pcp_mt = mode;
	pcp_params(16, 64);
	opt_pcp = false;
	struct page **all = calloc(max_pfn, sizeof(*all));
	struct page *p;
	while ((p = alloc_pages(GFP_USER | __GFP_ATOMIC, 0)))
		all[page_to_pfn(p)] = p;
	u64 pb = 0;
	for (u64 b = 1; b < max_pfn / PAGEBLOCK_NR_PAGES && !pb; b++) {
		bool full = true;
		for (u64 i = 0; i < PAGEBLOCK_NR_PAGES && full; i++)
			full = all[(b << PAGEBLOCK_ORDER) + i] != NULL;
		if (full)
			pb = b;
	}
	unsigned borrowed = 0;
	if (!pb) {
		HT_EXPECT(pb != 0);
		goto out;
	}
	u64 base = pb << PAGEBLOCK_ORDER;
	for (u64 i = 1; i < PAGEBLOCK_NR_PAGES; i++) {	/* page `base` stays allocated */
		free_pages(all[base + i], 0);
		all[base + i] = NULL;
	}
	struct page *u = alloc_pages(GFP_KERNEL, 0);	/* claims the pageblock */
	HT_EXPECT(u != NULL);
	HT_EXPECT_EQ(__pageblock_mt(base), MIGRATE_UNMOVABLE);
	if (u)
		free_pages(u, 0);
	opt_pcp = true;

	u64 refills = ev(EV_PGALLOC_PCP_REFILL);
	p = alloc_pages(GFP_USER, 0);
	if (!p) {
		HT_EXPECT(p != NULL);
		goto out;
	}
	HT_EXPECT_EQ(ev(EV_PGALLOC_PCP_REFILL), refills + 1);
	struct list_head *list = &pcp_cpu[0].lists[pcp_index(0, MIGRATE_MOVABLE)];
	list_add(&p->lru, list);	/* walk the allocated page with the listed ones */
	unsigned seen = 0;
	struct page *q;
	list_for_each_entry(q, list, lru) {
		int pbt = __pageblock_mt(page_to_pfn(q));
		borrowed += pbt == MIGRATE_UNMOVABLE;
		HT_EXPECT_EQ(q->migratetype, mode == PCP_MT_CACHED ? MIGRATE_MOVABLE : pbt);
		seen++;
	}
	list_del(&p->lru);
	HT_EXPECT_EQ(seen, 16);
	HT_EXPECT_EQ(env_check(), 0);
	free_pages(p, 0);
out:
	for (u64 i = 0; i < max_pfn; i++)
		if (all[i])
			free_pages(all[i], 0);
	free(all);
	drain_local_pages();
	HT_EXPECT_EQ(nr_free_buddy_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
	return borrowed;
}

HTEST(pcp_mt_cached_refill_stores_type_under_zone_lock)
{
	HT_EXPECT(refill_from_borrowed_blocks(PCP_MT_CACHED, ht_failures) >= 15);
}

HTEST(pcp_mt_lookup_refill_stores_nothing)
{
	HT_EXPECT(refill_from_borrowed_blocks(PCP_MT_LOOKUP, ht_failures) >= 15);
}

/* Seed 003, the bulk-free side: with no isolated pageblock, cached trusts the stored
 * types (no lookup in bulk free), lookup looks up every page it frees; both look the
 * type up at every pcp free. */
HTEST(pcp_mt_bulk_free_lookups_per_variant)
{
	for (int mode = PCP_MT_CACHED; mode <= PCP_MT_LOOKUP; mode++) {
		env_setup(64, 1);
		pcp_mt = mode;
		pcp_params(16, 64);
		LIST_HEAD(l);
		for (int i = 0; i < 200; i++) {
			struct page *p = alloc_pages(GFP_USER, 0);
			HT_ASSERT(p);
			list_add_tail(&p->lru, &l);
		}
		drain_local_pages();
		u64 lk = ev(EV_PAGEBLOCK_LOOKUP), bulk = ev(EV_PGFREE_BULK);
		env_free_list(&l);		/* 200 pcp frees, each a pageblock lookup */
		drain_local_pages();
		u64 freed = ev(EV_PGFREE_BULK) - bulk;
		HT_EXPECT_EQ(freed, 200);
		u64 lookups = ev(EV_PAGEBLOCK_LOOKUP) - lk;
		HT_EXPECT_EQ(lookups, mode == PCP_MT_CACHED ? 200 : 400);
		HT_EXPECT_EQ(env_check(), 0);
	}
}

HTEST(bulk_alloc_and_free_one_lock_per_batch)
{
	env_setup(128, 1);
	pcp_params(32, 128);
	LIST_HEAD(l);
	u64 locks = ev(EV_ZONE_LOCK);
	unsigned n = alloc_pages_bulk(GFP_USER, 1000, &l);
	HT_EXPECT_EQ(n, 1000);
	HT_EXPECT_EQ(ev(EV_PGALLOC_PCP_REFILL), 32);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 32);
	struct page *p;
	u64 last = 0, cnt = 0;
	bool ok = true;
	list_for_each_entry(p, &l, lru) {
		ok &= p->flags == 0 && p->refcount == 1 && (p->stamp & 0xffffffffffffULL) > last;
		last = p->stamp & 0xffffffffffffULL;
		cnt++;
	}
	HT_EXPECT(ok);
	HT_EXPECT_EQ(cnt, 1000);
	locks = ev(EV_ZONE_LOCK);
	free_pages_bulk(&l);
	HT_EXPECT(list_empty(&l));
	u64 bulk_locks = ev(EV_ZONE_LOCK) - locks;
	HT_EXPECT(bulk_locks >= 1000 / 32 - 2 && bulk_locks <= 1000 / 32 + 1);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);

	/* pcp off: chunks of `batch` straight from/to the buddy */
	opt_pcp = false;
	drain_local_pages();
	locks = ev(EV_ZONE_LOCK);
	n = alloc_pages_bulk(GFP_KERNEL, 1000, &l);
	HT_EXPECT_EQ(n, 1000);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 32);
	locks = ev(EV_ZONE_LOCK);
	free_pages_bulk(&l);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 32);
	HT_EXPECT_EQ(nr_free_buddy_pages(), nr_managed_pages());

	/* the one-by-one loop for comparison: one lock per page */
	alloc_pages_bulk(GFP_KERNEL, 100, &l);
	locks = ev(EV_ZONE_LOCK);
	env_free_list(&l);
	HT_EXPECT_EQ(ev(EV_ZONE_LOCK) - locks, 100);

	/* bulk beyond what memory holds: partial, counted failure, nothing lost */
	u64 fails = ev(EV_PGALLOC_FAIL);
	n = alloc_pages_bulk(GFP_USER, 1000000, &l);
	HT_EXPECT_EQ(n, nr_managed_pages() - zone_wmark(WMARK_MIN));
	HT_EXPECT_EQ(ev(EV_PGALLOC_FAIL), fails + 1);
	free_pages_bulk(&l);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
}

int main(void)
{
	return htest_main("pcp");
}
