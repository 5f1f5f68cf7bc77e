/* Host tests of the buddy allocator: init, split/merge, alignment, watermarks, fallback,
 * stealing, high memory, debug checks. pcp behaviour: test_pcp.c. */
#include "test_page_env.h"

static bool page_overlaps_reserved(u64 pa)
{
	for (int i = 0; i < memblock.reserved.cnt; i++) {
		u64 b = memblock.reserved.r[i].base, e = b + memblock.reserved.r[i].size;
		if (b < pa + PAGE_SIZE && e > pa)
			return true;
	}
	return false;
}

static u64 expected_managed(void)
{
	u64 n = 0;
	for (u64 pfn = 1; pfn < max_pfn; pfn++) {
		u64 pa = pfn << PAGE_SHIFT;
		if (memblock_is_memory(pa) && memblock_is_memory(pa + PAGE_SIZE - 1) &&
		    !page_overlaps_reserved(pa))
			n++;
	}
	return n;
}

static void snapshot_nr_free(u64 out[NR_ORDERS][MIGRATE_TYPES])
{
	for (unsigned o = 0; o < NR_ORDERS; o++)
		for (int t = 0; t < MIGRATE_TYPES; t++)
			out[o][t] = mm_zone.free_area[o].nr_free[t];
}

HTEST(init_builds_mem_map_and_frees_unreserved)
{
	struct env_range mem[] = { { 0x1000, 0x9f000 }, { 0x100000, 30 << 20 }, { 40 << 20, 20 << 20 } };
	struct env_range res[] = { { 0x100000, 0x200000 }, { 0x500800, 0x1000 } };
	env_setup_ranges(mem, 3, res, 2, 1, false);
	HT_EXPECT_EQ(max_pfn, (60ULL << 20) >> PAGE_SHIFT);
	HT_EXPECT_EQ(sizeof(struct page), 48);
	HT_EXPECT_EQ(nr_managed_pages(), expected_managed());
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT(pfn_to_page(0)->flags & PG_reserved);			/* pfn 0 kept back */
	HT_EXPECT(pfn_to_page(0x100)->flags & PG_reserved);		/* kernel */
	HT_EXPECT(pfn_to_page(0x500)->flags & PG_reserved);		/* partial reservation */
	HT_EXPECT(pfn_to_page(0x501)->flags & PG_reserved);
	HT_EXPECT(!(pfn_to_page(0x502)->flags & PG_reserved));
	HT_EXPECT(pfn_to_page((35 << 20) >> PAGE_SHIFT)->flags & PG_reserved);	/* hole */
	/* mem_map itself is reserved (it came from memblock_alloc). */
	HT_EXPECT(pfn_to_page(PFN_DOWN(__pa(mem_map)))->flags & PG_reserved);
	HT_EXPECT_EQ(env_check(), 0);
	/* Every pageblock starts movable. */
	HT_EXPECT_EQ(__pageblock_mt(0x3000), MIGRATE_MOVABLE);
}

HTEST(split_and_merge_restore_free_lists)
{
	env_setup(64, 1);
	opt_pcp = false;
	u64 before[NR_ORDERS][MIGRATE_TYPES], after[NR_ORDERS][MIGRATE_TYPES];
	snapshot_nr_free(before);
	u64 free0 = nr_free_pages();

	struct page *a = alloc_pages(GFP_USER, 0);
	HT_ASSERT(a);
	HT_EXPECT_EQ(nr_free_pages(), free0 - 1);
	struct page *b = alloc_pages(GFP_USER, 0);
	HT_ASSERT(b);
	HT_EXPECT_EQ(page_to_pfn(a) ^ 1, page_to_pfn(b));	/* took a's buddy */
	HT_EXPECT_EQ(env_check(), 0);

	free_pages(a, 0);	/* buddy b allocated: no merge yet */
	HT_EXPECT(a->flags & PG_buddy);
	HT_EXPECT_EQ(a->order, 0);
	free_pages(b, 0);	/* merges all the way back */
	snapshot_nr_free(after);
	HT_EXPECT(memcmp(before, after, sizeof(before)) == 0);
	HT_EXPECT_EQ(nr_free_pages(), free0);
	HT_EXPECT_EQ(env_check(), 0);

	/* Free in the other order, with order-1 and order-0 mixed. */
	struct page *c = alloc_pages(GFP_USER, 1), *d = alloc_pages(GFP_USER, 0),
		    *e = alloc_pages(GFP_USER, 0);
	HT_ASSERT(c && d && e);
	free_pages(e, 0);
	free_pages(c, 1);
	free_pages(d, 0);
	snapshot_nr_free(after);
	HT_EXPECT(memcmp(before, after, sizeof(before)) == 0);
	HT_EXPECT_EQ(env_check(), 0);
}

HTEST(no_merge_across_holes_or_past_max_pfn)
{
	/* RAM [1 MiB, 9 MiB) and [9 MiB + 4 KiB, 17 MiB): one page hole at 9 MiB. */
	struct env_range mem[] = { { 0x100000, 8 << 20 }, { (9 << 20) + 0x1000, (8 << 20) - 0x1000 } };
	env_setup_ranges(mem, 2, NULL, 0, 1, false);
	opt_pcp = false;
	u64 hole = (9 << 20) >> PAGE_SHIFT;
	HT_EXPECT(pfn_to_page(hole)->flags & PG_reserved);
	/* The page after the hole heads an order-0 block whose buddy is the hole. */
	struct page *p = pfn_to_page(hole + 1);
	HT_EXPECT(p->flags & PG_buddy);
	HT_EXPECT_EQ(p->order, 0);
	HT_EXPECT_EQ(env_check(), 0);
	/* Exhaust and refill everything: still consistent, hole untouched. */
	LIST_HEAD(l);
	min_free_kbytes = 4;
	env_setup_ranges(mem, 2, NULL, 0, 1, true);
	u64 managed = nr_managed_pages();
	u64 n = env_exhaust(GFP_USER | __GFP_ATOMIC, &l);
	HT_EXPECT(n >= managed - 2);
	HT_EXPECT(pfn_to_page(hole)->flags & PG_reserved);
	env_free_list(&l);
	HT_EXPECT_EQ(nr_free_pages(), managed);
	HT_EXPECT_EQ(env_check(), 0);
	HT_EXPECT(pfn_to_page(hole)->flags & PG_reserved);
}

HTEST(multi_page_blocks_are_aligned_with_head)
{
	env_setup(64, 1);
	struct page *blocks[64];
	unsigned orders[64];
	int n = 0;
	for (unsigned o = 1; o <= MAX_ORDER; o++) {
		for (int k = 0; k < 3; k++) {
			struct page *p = alloc_pages(k == 1 ? GFP_KERNEL : GFP_USER, o);
			HT_ASSERT(p);
			u64 pfn = page_to_pfn(p);
			HT_EXPECT(IS_ALIGNED(pfn, 1ULL << o));
			HT_EXPECT(p->flags & PG_head);
			HT_EXPECT_EQ(p->order, o);
			HT_EXPECT_EQ(p->refcount, 1);
			for (u64 i = 1; i < (1ULL << o); i++) {
				HT_EXPECT_EQ(p[i].flags, 0);
				HT_EXPECT_EQ(p[i].stamp, p->stamp);
			}
			/* physically contiguous and writable through the direct map */
			memset(page_address(p), 0x11, PAGE_SIZE << o);
			blocks[n] = p;
			orders[n++] = o;
		}
	}
	/* no two blocks overlap */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			u64 a = page_to_pfn(blocks[i]), b = page_to_pfn(blocks[j]);
			HT_EXPECT(a + (1ULL << orders[i]) <= b || b + (1ULL << orders[j]) <= a);
		}
	HT_EXPECT_EQ(env_check(), 0);
	for (int i = 0; i < n; i++)
		free_pages(blocks[i], orders[i]);
	drain_local_pages();
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
	HT_EXPECT(alloc_pages(GFP_USER, MAX_ORDER + 1) == NULL);
	HT_EXPECT_EQ(ev(EV_PGALLOC_FAIL), 1);
}

HTEST(zero_flag_zeroes)
{
	env_setup(16, 1);
	struct page *p = alloc_pages(GFP_KERNEL, 2);
	HT_ASSERT(p);
	memset(page_address(p), 0x5a, PAGE_SIZE << 2);
	free_pages(p, 2);
	p = alloc_pages(GFP_KERNEL | __GFP_ZERO, 2);
	HT_ASSERT(p);
	const u8 *b = page_address(p);
	bool zero = true;
	for (u64 i = 0; i < (PAGE_SIZE << 2); i++)
		zero &= b[i] == 0;
	HT_EXPECT(zero);
	free_pages(p, 2);
}

HTEST(watermarks_linux_way)
{
	/* 1 GiB machine: batch 63, min = sqrt(16 * KiB) KiB. */
	HT_EXPECT_EQ(pcp_default_batch(262144), 63);
	HT_EXPECT_EQ(pcp_default_batch(4ULL << 20), 63);	/* capped */
	HT_EXPECT_EQ(pcp_default_batch(16384), 3);		/* 64 MiB */
	HT_EXPECT_EQ(pcp_default_batch(131072), 31);		/* 512 MiB */
	HT_EXPECT_EQ(pcp_default_batch(100), 1);
	HT_EXPECT_EQ(pcp_default_high(1286, 63, 4), 321);
	HT_EXPECT_EQ(pcp_default_high(1286, 63, 16), 252);	/* at least 4 * batch */

	env_setup(64, 2);
	u64 m = nr_managed_pages();
	u64 kb = 0;
	while ((kb + 1) * (kb + 1) <= m * 4 * 16)
		kb++;
	HT_EXPECT_EQ(zone_wmark(WMARK_MIN), kb / 4);
	HT_EXPECT(zone_wmark(WMARK_LOW) > zone_wmark(WMARK_MIN));
	HT_EXPECT(zone_wmark(WMARK_HIGH) > zone_wmark(WMARK_LOW));
	HT_EXPECT_EQ(pcp_batch(0), pcp_default_batch(m));
	HT_EXPECT_EQ(pcp_high(1), pcp_default_high(zone_wmark(WMARK_LOW), pcp_batch(0), 2));
}

HTEST(exhaustion_fails_cleanly_and_recovers)
{
	env_setup(32, 1);
	opt_pcp = false;
	LIST_HEAD(l);
	u64 managed = nr_managed_pages(), min = zone_wmark(WMARK_MIN);
	u64 n = env_exhaust(GFP_KERNEL, &l);
	HT_EXPECT_EQ(n, managed - min);		/* stops exactly at the min watermark */
	HT_EXPECT_EQ(ev(EV_PGALLOC_FAIL), 1);
	HT_EXPECT(alloc_pages(GFP_USER, 3) == NULL);
	HT_EXPECT_EQ(ev(EV_PGALLOC_FAIL), 2);
	/* atomic allocations may dip to min/2 */
	u64 na = env_exhaust(GFP_KERNEL | __GFP_ATOMIC, &l);
	HT_EXPECT_EQ(na, min - (min - min / 2));
	HT_EXPECT_EQ(env_check(), 0);
	env_free_list(&l);
	HT_EXPECT_EQ(nr_free_pages(), managed);
	struct page *big = alloc_pages(GFP_USER, MAX_ORDER);
	HT_EXPECT(big != NULL);		/* everything merged back */
	if (big)
		free_pages(big, MAX_ORDER);
	HT_EXPECT_EQ(env_check(), 0);

	/* The same with pcp on: pages parked on the local pcp lists are recovered by the
	 * drain-and-retry slow path. */
	opt_pcp = true;
	n = env_exhaust(GFP_USER, &l);
	HT_EXPECT_EQ(n, managed - min);
	env_free_list(&l);
	HT_EXPECT(pcp_count(0) > 0);
	n = env_exhaust(GFP_KERNEL, &l);	/* other migratetype: needs the drain */
	HT_EXPECT_EQ(n, managed - min);
	env_free_list(&l);
	drain_local_pages();
	HT_EXPECT_EQ(nr_free_buddy_pages(), managed);
	HT_EXPECT_EQ(env_check(), 0);
}

HTEST(unmovable_claims_a_movable_pageblock)
{
	env_setup(64, 1);
	opt_pcp = false;
	u64 steals = ev(EV_PAGEBLOCK_STEAL);
	struct page *p = alloc_pages(GFP_KERNEL, 0);
	HT_ASSERT(p);
	/* the claimed block was a whole order-10 block: both its pageblocks change type */
	HT_EXPECT_EQ(ev(EV_PAGEBLOCK_STEAL) - steals, 2);
	HT_EXPECT_EQ(__pageblock_mt(page_to_pfn(p)), MIGRATE_UNMOVABLE);
	struct page *q = alloc_pages(GFP_KERNEL, 0);	/* now served from its own list */
	HT_ASSERT(q);
	HT_EXPECT_EQ(ev(EV_PAGEBLOCK_STEAL) - steals, 2);
	HT_EXPECT_EQ(page_to_pfn(q) >> PAGEBLOCK_ORDER, page_to_pfn(p) >> PAGEBLOCK_ORDER);
	HT_EXPECT_EQ(env_check(), 0);
	free_pages(p, 0);
	free_pages(q, 0);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
}

/* Allocate everything as @gfp order 0 (pcp off), returning pages indexed by pfn. */
static struct page **grab_all(gfp_t gfp)
{
	struct page **by_pfn = calloc(max_pfn, sizeof(*by_pfn));
	struct page *p;
	while ((p = alloc_pages(gfp | __GFP_ATOMIC, 0)))
		by_pfn[page_to_pfn(p)] = p;
	return by_pfn;
}

static void release_all(struct page **by_pfn)
{
	for (u64 i = 0; i < max_pfn; i++)
		if (by_pfn[i])
			free_pages(by_pfn[i], 0);
	free(by_pfn);
}

/* First pageblock whose 512 pages are all held in @by_pfn. */
static u64 full_pageblock(struct page **by_pfn, u64 after)
{
	for (u64 pb = after; pb < max_pfn / PAGEBLOCK_NR_PAGES; pb++) {
		bool all = true;
		for (u64 i = 0; i < PAGEBLOCK_NR_PAGES && all; i++)
			all = by_pfn[pb * PAGEBLOCK_NR_PAGES + i] != NULL;
		if (all)
			return pb;
	}
	return 0;
}

HTEST(fallback_borrows_or_claims_by_free_share)
{
	min_free_kbytes = 4;	/* min watermark of one page: exhaust (almost) fully */
	struct env_range mem[] = { { 0x100000, 32 << 20 } };
	env_setup_ranges(mem, 1, NULL, 0, 1, true);
	opt_pcp = false;
	struct page **all = grab_all(GFP_USER);
	u64 pb1 = full_pageblock(all, 1), pb2 = full_pageblock(all, pb1 + 1);
	HT_ASSERT(pb1 && pb2);
	HT_EXPECT_EQ(__pageblock_mt(pb1 << PAGEBLOCK_ORDER), MIGRATE_MOVABLE);

	/* 16 free pages in pb1: an unmovable request borrows one, no claim. */
	for (u64 i = 0; i < 16; i++) {
		u64 pfn = (pb1 << PAGEBLOCK_ORDER) + i;
		free_pages(all[pfn], 0);
		all[pfn] = NULL;
	}
	u64 steals = ev(EV_PAGEBLOCK_STEAL);
	struct page *u = alloc_pages(GFP_KERNEL, 0);
	HT_ASSERT(u);
	HT_EXPECT_EQ(ev(EV_PAGEBLOCK_STEAL), steals);
	HT_EXPECT_EQ(__pageblock_mt(pb1 << PAGEBLOCK_ORDER), MIGRATE_MOVABLE);
	all[page_to_pfn(u)] = u;

	/* 300 free pages in pb2: claimed (>= half free), free blocks move to unmovable. */
	for (u64 i = 0; i < 300; i++) {
		u64 pfn = (pb2 << PAGEBLOCK_ORDER) + i;
		free_pages(all[pfn], 0);
		all[pfn] = NULL;
	}
	u64 unmov_before = 0;
	for (unsigned o = 0; o < NR_ORDERS; o++)
		unmov_before += mm_zone.free_area[o].nr_free[MIGRATE_UNMOVABLE] << o;
	struct page *v = alloc_pages(GFP_KERNEL, 0);
	HT_ASSERT(v);
	all[page_to_pfn(v)] = v;
	HT_EXPECT_EQ(ev(EV_PAGEBLOCK_STEAL), steals + 1);
	HT_EXPECT_EQ(__pageblock_mt(pb2 << PAGEBLOCK_ORDER), MIGRATE_UNMOVABLE);
	HT_EXPECT_EQ(page_to_pfn(v) >> PAGEBLOCK_ORDER, pb2);
	u64 unmov_after = 0;
	for (unsigned o = 0; o < NR_ORDERS; o++)
		unmov_after += mm_zone.free_area[o].nr_free[MIGRATE_UNMOVABLE] << o;
	HT_EXPECT_EQ(unmov_after, unmov_before + 299);
	HT_EXPECT_EQ(env_check(), 0);

	/* A movable request with no movable free pages borrows from unmovable, no claim
	 * (small movable requests never claim). */
	struct page *w;
	u64 st = ev(EV_PAGEBLOCK_STEAL);
	while ((w = alloc_pages(GFP_USER | __GFP_ATOMIC, 0)) &&
	       __pageblock_mt(page_to_pfn(w)) == MIGRATE_MOVABLE)
		all[page_to_pfn(w)] = w;
	HT_ASSERT(w);
	all[page_to_pfn(w)] = w;
	HT_EXPECT_EQ(__pageblock_mt(page_to_pfn(w)), MIGRATE_UNMOVABLE);
	HT_EXPECT_EQ(ev(EV_PAGEBLOCK_STEAL), st);
	HT_EXPECT_EQ(env_check(), 0);

	release_all(all);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
}

HTEST(ram_above_4g)
{
	struct env_range mem[] = { { 0x100000, 16 << 20 }, { 4ULL << 30, 128 << 20 } };
	env_setup_ranges(mem, 2, NULL, 0, 1, false);
	HT_EXPECT_EQ(max_pfn, ((4ULL << 30) + (128 << 20)) >> PAGE_SHIFT);
	HT_EXPECT_EQ(nr_managed_pages(), expected_managed());
	HT_EXPECT(pfn_to_page((1ULL << 30) >> PAGE_SHIFT)->flags & PG_reserved);
	struct page *blocks[64];
	int n = 0, high = 0;
	struct page *p;
	while (n < 64 && (p = alloc_pages(GFP_USER, MAX_ORDER))) {
		high += page_to_phys(p) >= (4ULL << 30);
		memset(page_address(p), 0x22, PAGE_SIZE);
		memset(page_address(p + 1023), 0x22, PAGE_SIZE);
		blocks[n++] = p;
	}
	HT_EXPECT(high >= 6);	/* ~52 MiB of mem_map sits at the top of high RAM */
	HT_EXPECT_EQ(env_check(), 0);
	for (int i = 0; i < n; i++)
		free_pages(blocks[i], MAX_ORDER);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
}

HTEST(debug_catches_bad_frees_and_poison)
{
	env_setup(16, 1);
	page_debug = true;
	page_debug_nopanic = true;
	struct page *p = alloc_pages(GFP_KERNEL, 0);
	HT_ASSERT(p);
	free_pages(p, 0);
	HT_EXPECT_EQ(page_debug_errors, 0);
	HT_EXPECT(p->flags & PG_poisoned);
	free_pages(p, 0);			/* double free (page on a pcp list) */
	HT_EXPECT_EQ(page_debug_errors, 1);
	HT_EXPECT(page_debug_last_error && strstr(page_debug_last_error, "double free"));
	HT_EXPECT_EQ(env_check(), 0);		/* the bad free was refused */

	/* double free of a page merged into a larger buddy block */
	opt_pcp = false;
	struct page *q = alloc_pages(GFP_KERNEL, 0);
	HT_ASSERT(q);
	free_pages(q, 0);	/* back in the buddy (merged or not) */
	free_pages(q, 0);
	HT_EXPECT_EQ(page_debug_errors, 2);
	HT_EXPECT_EQ(page_debug_last_pfn, page_to_pfn(q));
	opt_pcp = true;

	struct page *m = alloc_pages(GFP_USER, 0);
	HT_ASSERT(m);
	m->mapcount = 1;
	free_pages(m, 0);
	HT_EXPECT_EQ(page_debug_errors, 3);
	HT_EXPECT(strstr(page_debug_last_error, "mapped"));
	m->mapcount = 0;
	m->refcount = 2;
	free_pages(m, 0);
	HT_EXPECT_EQ(page_debug_errors, 4);
	HT_EXPECT(strstr(page_debug_last_error, "referenced"));
	m->refcount = 1;
	free_pages(m, 1);			/* wrong order */
	HT_EXPECT_EQ(page_debug_errors, 5);
	free_pages(m, 0);			/* correct free */
	HT_EXPECT_EQ(page_debug_errors, 5);
	free_pages(pfn_to_page(0), 0);		/* reserved */
	HT_EXPECT_EQ(page_debug_errors, 6);

	/* use after free: scribble on a freed (poisoned) page, get it back */
	struct page *u = alloc_pages(GFP_USER, 0);
	HT_ASSERT(u);
	free_pages(u, 0);
	((u8 *)page_address(u))[100] = 1;
	struct page *u2 = alloc_pages(GFP_USER, 0);	/* pcp is LIFO: the same page */
	HT_EXPECT(u2 == u);
	HT_EXPECT_EQ(page_debug_errors, 7);
	HT_EXPECT(strstr(page_debug_last_error, "poison"));
	free_pages(u2, 0);
	HT_EXPECT_EQ(env_check(), 0);

	/* order > 0 free with an order mismatch and a mapped tail */
	struct page *h = alloc_pages(GFP_USER, 2);
	HT_ASSERT(h);
	h[3].mapcount = 1;
	free_pages(h, 2);
	HT_EXPECT_EQ(page_debug_errors, 8);
	h[3].mapcount = 0;
	free_pages(h, 2);
	HT_EXPECT_EQ(page_debug_errors, 8);
	drain_local_pages();
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
}

HTEST(consistency_check_sees_corruption)
{
	env_setup(16, 2);
	struct page *p = alloc_pages(GFP_USER, 0);
	HT_ASSERT(p);
	struct page_check_result r;
	HT_EXPECT_EQ(page_alloc_check_report(&r), 0);
	HT_EXPECT_EQ(r.buddy_pages + r.pcp_pages + 1, nr_managed_pages());

	mm_zone.free_pages++;
	HT_EXPECT(page_alloc_check_report(&r) > 0);
	mm_zone.free_pages--;

	pcp_cpu[0].count++;
	HT_EXPECT(page_alloc_check_report(&r) > 0);
	pcp_cpu[0].count--;

	p->flags |= PG_free;		/* an allocated page claiming to be free */
	HT_EXPECT(page_alloc_check_report(&r) > 0);
	HT_EXPECT_EQ(r.first_bad_pfn, page_to_pfn(p));
	p->flags &= ~PG_free;

	/* a free block not on any list */
	struct page *b = list_first_entry(&mm_zone.free_area[MAX_ORDER].free_list[MIGRATE_MOVABLE],
					  struct page, lru);
	b->flags &= ~PG_buddy;
	HT_EXPECT(page_alloc_check_report(&r) > 0);
	b->flags |= PG_buddy;
	HT_EXPECT_EQ(page_alloc_check_report(&r), 0);
	free_pages(p, 0);
	page_alloc_print_info();
}

int main(void)
{
	return htest_main("page_alloc");
}
