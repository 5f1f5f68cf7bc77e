/*
 * The page allocator: one zone covering all managed RAM, buddy free lists per order and
 * migratetype, pageblocks (order 9) carrying a migratetype in a bitmap, watermarks, the
 * fallback/steal policy, and the public alloc/free entry points. Per-CPU lists live in
 * mm/pcp.c, debug checks in mm/page_debug.c. Design notes: docs/PAGE_ALLOC.md.
 *
 * Locking: mm_zone.lock (irqs off) protects the free lists, nr_free, mm_zone.free_pages and
 * writes of the pageblock bitmap; the bitmap is read without the lock (one word load).
 */
#include "mm/page_alloc_internal.h"
#include "mm/memblock.h"
#include "kernel/math.h"
#include "kernel/options.h"
#include "kernel/panic.h"
#include "kernel/printk.h"
#include "kernel/string.h"

struct page *mem_map;
u64 max_pfn;
struct zone mm_zone;

DEFINE_OPTION_UINT(min_free_kbytes, "min_free_kbytes", 0, 0, 4194304,
		   "min watermark in KiB (0 = auto: sqrt(16 * managed KiB), 128..262144)");
DEFINE_OPTION_BOOL(opt_meminfo, "meminfo", false,
		   "print buddy free lists, pcp counts, watermarks and stamps at boot");

/* ---------------------------------------------------------------- pageblocks ---- */

/* Set the type of the pageblock holding @pfn (zone lock held or boot). Returns whether
 * the type changed. */
static bool set_pageblock_mt(u64 pfn, int mt)
{
	u64 pb = pfn >> PAGEBLOCK_ORDER;
	u64 *w = &mm_zone.pageblock_bits[pb / PB_PER_WORD];
	unsigned shift = (unsigned)(pb % PB_PER_WORD) * PB_BITS;
	u64 old = *w;
	u64 new = (old & ~(PB_MASK << shift)) | ((u64)mt << shift);
	if (new == old)
		return false;
	WRITE_ONCE(*w, new);
	return true;
}

int get_pageblock_migratetype(u64 pfn)
{
	return pageblock_mt_counted(pfn);
}

/* Relabel every pageblock of a free block of order >= PAGEBLOCK_ORDER. */
static void set_block_mt(u64 pfn, unsigned order, int mt)
{
	u64 n = 0;
	for (u64 p = pfn; p < pfn + (1ULL << order) && p < max_pfn; p += PAGEBLOCK_NR_PAGES)
		n += set_pageblock_mt(p, mt);
	if (n)
		count_events(EV_PAGEBLOCK_STEAL, n);
}

/* ---------------------------------------------------------------- free lists ---- */

static inline void add_to_free_list(struct page *page, unsigned order, int mt)
{
	struct free_area *a = &mm_zone.free_area[order];
	page->order = (u8)order;
	page->migratetype = (u8)mt;
	page->flags |= PG_buddy;
	list_add(&page->lru, &a->free_list[mt]);
	a->nr_free[mt]++;
}

static inline void del_from_free_list(struct page *page, unsigned order)
{
	struct free_area *a = &mm_zone.free_area[order];
	list_del(&page->lru);
	a->nr_free[page->migratetype]--;
	page->flags &= ~PG_buddy;
}

static inline void move_to_free_list(struct page *page, unsigned order, int mt)
{
	del_from_free_list(page, order);
	add_to_free_list(page, order, mt);
}

void __free_one_page(struct page *page, unsigned order, int mt)
{
	u64 pfn = page_to_pfn(page);

	while (order < MAX_ORDER) {
		u64 bpfn = pfn ^ (1ULL << order);
		if (bpfn >= max_pfn)
			break;
		struct page *buddy = pfn_to_page(bpfn);
		/* The buddy check: heads a free block of exactly this order. Holes and
		 * reserved pages never carry PG_buddy, so no merge crosses them. */
		if (!(buddy->flags & PG_buddy) || buddy->order != order)
			break;
		del_from_free_list(buddy, order);
		count_event(EV_BUDDY_MERGE);
		pfn &= ~(1ULL << order);
		order++;
	}
	page = pfn_to_page(pfn);
	/* A whole free pageblock has no owner: give it the type of the list it joins, so
	 * blocks of order >= PAGEBLOCK_ORDER always agree with their pageblocks. */
	if (order >= PAGEBLOCK_ORDER)
		set_block_mt(pfn, order, mt);
	add_to_free_list(page, order, mt);
}

/* Split a block of order @high down to @low, returning the upper halves to @mt. */
static inline void expand(struct page *page, unsigned low, unsigned high, int mt)
{
	while (high > low) {
		high--;
		add_to_free_list(page + (1UL << high), high, mt);
		count_event(EV_BUDDY_SPLIT);
	}
}

/* The first block on free_list[o][mt], split down to @order (remainders stay on mt's
 * lists); NULL when that list is empty. */
static struct page *take_block(unsigned order, unsigned o, int mt)
{
	struct list_head *l = &mm_zone.free_area[o].free_list[mt];
	if (list_empty(l))
		return NULL;
	struct page *page = list_first_entry(l, struct page, lru);
	del_from_free_list(page, o);
	expand(page, order, o, mt);
	page->order = (u8)order;
	return page;
}

static struct page *rmqueue_smallest(unsigned order, int mt)
{
	for (unsigned o = order; o <= MAX_ORDER; o++) {
		struct page *page = take_block(order, o, mt);
		if (page)
			return page;
	}
	return NULL;
}

static const int fallbacks[MIGRATE_TYPES][MIGRATE_TYPES - 1] = {
	[MIGRATE_UNMOVABLE] = { MIGRATE_RECLAIMABLE, MIGRATE_MOVABLE },
	[MIGRATE_MOVABLE] = { MIGRATE_RECLAIMABLE, MIGRATE_UNMOVABLE },
	[MIGRATE_RECLAIMABLE] = { MIGRATE_UNMOVABLE, MIGRATE_MOVABLE },
};

/*
 * Try to make the pageblock of @page (a free block of order @order on @from's list) ours:
 * whole blocks of order >= PAGEBLOCK_ORDER always; smaller ones when at least half the
 * pageblock is free, moving every free block of the pageblock to @mt's lists.
 */
static bool try_claim_block(struct page *page, unsigned order, int mt, int from)
{
	u64 pfn = page_to_pfn(page);

	if (order >= PAGEBLOCK_ORDER) {
		set_block_mt(pfn, order, mt);
		move_to_free_list(page, order, mt);
		return true;
	}
	u64 start = pfn & ~(PAGEBLOCK_NR_PAGES - 1);
	u64 end = MIN(start + PAGEBLOCK_NR_PAGES, max_pfn);
	u64 free = 0;
	for (u64 p = start; p < end;) {
		struct page *q = pfn_to_page(p);
		if (q->flags & PG_buddy) {
			free += 1ULL << q->order;
			p += 1ULL << q->order;
		} else {
			p++;
		}
	}
	if (free < PAGEBLOCK_NR_PAGES / 2)
		return false;
	(void)from;
	if (set_pageblock_mt(start, mt))
		count_event(EV_PAGEBLOCK_STEAL);
	for (u64 p = start; p < end;) {
		struct page *q = pfn_to_page(p);
		if (q->flags & PG_buddy) {
			unsigned o = q->order;
			if (q->migratetype != mt)
				move_to_free_list(q, o, mt);
			p += 1ULL << o;
		} else {
			p++;
		}
	}
	return true;
}

static struct page *rmqueue_fallback(unsigned order, int mt)
{
	/* Claim: largest block first (Linux: fragment other types' blocks as little as
	 * possible). Small movable requests don't claim; they only borrow. */
	if (order >= PAGEBLOCK_ORDER / 2 || mt != MIGRATE_MOVABLE) {
		for (int o = MAX_ORDER; o >= (int)order; o--) {
			for (int i = 0; i < MIGRATE_TYPES - 1; i++) {
				int from = fallbacks[mt][i];
				struct list_head *l = &mm_zone.free_area[o].free_list[from];
				if (list_empty(l))
					continue;
				struct page *page = list_first_entry(l, struct page, lru);
				if (try_claim_block(page, (unsigned)o, mt, from))
					return rmqueue_smallest(order, mt);
			}
		}
	}
	/* Borrow: smallest block of another type, its remainders stay on that type. */
	for (unsigned o = order; o <= MAX_ORDER; o++) {
		for (int i = 0; i < MIGRATE_TYPES - 1; i++) {
			struct page *page = take_block(order, o, fallbacks[mt][i]);
			if (page)
				return page;
		}
	}
	return NULL;
}

struct page *__rmqueue(unsigned order, int mt, u64 mark)
{
	if (mm_zone.free_pages < mark + (1ULL << order))
		return NULL;
	struct page *page = rmqueue_smallest(order, mt);
	if (!page)
		page = rmqueue_fallback(order, mt);
	if (page)
		mm_zone.free_pages -= 1ULL << order;
	return page;
}

/* ---------------------------------------------------------------- watermarks ---- */

static void setup_watermarks(void)
{
	u64 managed = mm_zone.managed_pages;
	u64 kb = READ_ONCE(min_free_kbytes);
	if (!kb) {
		kb = isqrt64((managed << (PAGE_SHIFT - 10)) * 16);
		kb = MAX(kb, 128ULL);
		kb = MIN(kb, 262144ULL);
	}
	u64 min = kb >> (PAGE_SHIFT - 10);
	if (min > managed / 4)	/* tiny machines: keep most memory usable */
		min = managed / 4;
	u64 tmp = MAX(min >> 2, managed * 10 / 10000);	/* watermark_scale_factor 10 */
	mm_zone.wmark[WMARK_MIN] = min;
	mm_zone.wmark[WMARK_LOW] = min + tmp;
	mm_zone.wmark[WMARK_HIGH] = min + 2 * tmp;
}

u64 zone_wmark(int which)
{
	return (which >= 0 && which < NR_WMARK) ? mm_zone.wmark[which] : 0;
}

u64 wmark_for_gfp(gfp_t gfp)
{
	u64 min = mm_zone.wmark[WMARK_MIN];
	return (gfp & __GFP_ATOMIC) ? min - min / 2 : min;
}

/* ---------------------------------------------------------------- boot ---- */

static void free_range_boot(u64 start, u64 end)
{
	if (start == 0)		/* pfn 0 stays reserved: physical address 0 looks like NULL */
		start = 1;
	while (start < end) {
		unsigned order = start ? (unsigned)__builtin_ctzll(start) : MAX_ORDER;
		if (order > MAX_ORDER)
			order = MAX_ORDER;
		while (start + (1ULL << order) > end)
			order--;
		for (u64 p = start; p < start + (1ULL << order); p++)
			pfn_to_page(p)->flags = PG_free;
		__free_one_page(pfn_to_page(start), order, __pageblock_mt(start));
		mm_zone.free_pages += 1ULL << order;
		mm_zone.managed_pages += 1ULL << order;
		start += 1ULL << order;
	}
}

void page_alloc_init(void)
{
	const struct memblock_type *mem = &memblock.memory, *res = &memblock.reserved;

	memset(&mm_zone, 0, sizeof(mm_zone));
	spin_lock_init(&mm_zone.lock);
	for (unsigned o = 0; o < NR_ORDERS; o++)
		for (int t = 0; t < MIGRATE_TYPES; t++)
			INIT_LIST_HEAD(&mm_zone.free_area[o].free_list[t]);

	max_pfn = PFN_DOWN(memblock_end_of_ram());
	if (!max_pfn)
		panic("page_alloc: no usable memory in memblock");
	u64 map_bytes = ALIGN_UP(max_pfn * sizeof(struct page), PAGE_SIZE);
	phys_addr_t map_pa = memblock_alloc(map_bytes, PAGE_SIZE);
	if (!map_pa)
		panic("page_alloc: cannot allocate mem_map (%llu bytes for %llu pfns)",
		      (unsigned long long)map_bytes, (unsigned long long)max_pfn);
	mm_zone.nr_pageblocks = DIV_ROUND_UP(max_pfn, PAGEBLOCK_NR_PAGES);
	u64 pb_bytes = ALIGN_UP(DIV_ROUND_UP(mm_zone.nr_pageblocks, PB_PER_WORD) * 8, 64);
	phys_addr_t pb_pa = memblock_alloc(pb_bytes, 64);
	if (!pb_pa)
		panic("page_alloc: cannot allocate the pageblock bitmap");
	mem_map = __va(map_pa);
	mm_zone.pageblock_bits = __va(pb_pa);

	memset(mem_map, 0, max_pfn * sizeof(struct page));
	for (u64 p = 0; p < max_pfn; p++) {
		mem_map[p].flags = PG_reserved;
		INIT_LIST_HEAD(&mem_map[p].lru);
	}
	/* Every pageblock starts movable, as in Linux; unmovable users claim blocks. */
	memset(mm_zone.pageblock_bits, 0, pb_bytes);
	for (u64 pb = 0; pb < mm_zone.nr_pageblocks; pb++)
		set_pageblock_mt(pb << PAGEBLOCK_ORDER, MIGRATE_MOVABLE);

	pcp_init_lists();

	/* Free memory minus reserved, page-granular (a partly reserved page is reserved). */
	for (int i = 0; i < mem->cnt; i++) {
		phys_addr_t base = mem->r[i].base, end = base + mem->r[i].size;
		phys_addr_t cur = base;
		for (int j = 0; j < res->cnt && cur < end; j++) {
			phys_addr_t rb = res->r[j].base, re = rb + res->r[j].size;
			if (re <= cur || rb >= end)
				continue;
			if (rb > cur)
				free_range_boot(PFN_UP(cur), PFN_DOWN(rb));
			cur = MAX(cur, re);
		}
		if (cur < end)
			free_range_boot(PFN_UP(cur), PFN_DOWN(end));
	}
	setup_watermarks();
}

/* ---------------------------------------------------------------- alloc/free ---- */

static struct page *buddy_alloc(unsigned order, int mt, gfp_t gfp)
{
	unsigned long f = zone_lock();
	struct page *page = __rmqueue(order, mt, wmark_for_gfp(gfp));
	if (page) {
		page->stamp = next_stamp();
		count_event(EV_PGALLOC_BUDDY);
	}
	zone_unlock(f);
	return page;
}

/* Turn a block taken off a free/pcp list into an allocated block. */
static void prep_new_page(struct page *page, unsigned order, gfp_t gfp, void *caller)
{
	u64 n = 1ULL << order, stamp = page->stamp;

	if (unlikely(page_debug))
		page_debug_alloc_check(page, order, caller);
	for (u64 i = 0; i < n; i++) {
		struct page *p = page + i;
		p->flags = 0;
		p->refcount = 0;
		p->mapcount = 0;
		p->pt_used = 0;
		p->private = 0;
		p->stamp = stamp;
	}
	page->refcount = 1;
	page->order = (u8)order;
	if (order)
		page->flags = PG_head;
	if (gfp & __GFP_ZERO)
		memset(page_address(page), 0, PAGE_SIZE << order);
}

static struct page *alloc_slow_retry(unsigned order, int mt, gfp_t gfp)
{
	/* No reclaim here: the only memory to recover is this CPU's pcp lists. */
	if (!pcp_ready || !pcp_count(smp_processor_id()))
		return NULL;
	drain_local_pages();
	return buddy_alloc(order, mt, gfp);
}

struct page *alloc_pages(gfp_t gfp, unsigned order)
{
	void *caller = __builtin_return_address(0);
	struct page *page = NULL;

	if (unlikely(order > MAX_ORDER))
		goto fail;
	int mt = gfp_migratetype(gfp);
	if (order <= PCP_MAX_ORDER && !(gfp & __GFP_NOPCP) && pcp_active())
		page = pcp_alloc(order, mt, gfp);
	else
		page = buddy_alloc(order, mt, gfp);
	if (unlikely(!page))
		page = alloc_slow_retry(order, mt, gfp);
	if (unlikely(!page))
		goto fail;
	prep_new_page(page, order, gfp, caller);
	return page;
fail:
	count_event(EV_PGALLOC_FAIL);
	return NULL;
}

/* Turn an allocated block into a free one (flags, counts); false = refused (debug). */
static bool prep_free_page(struct page *page, unsigned order, void *caller)
{
	if (unlikely(page_debug) && !page_debug_free_ok(page, order, caller))
		return false;
	u64 n = 1ULL << order;
	for (u64 i = 0; i < n; i++) {
		struct page *p = page + i;
		p->flags = PG_free;
		p->refcount = 0;
		p->mapcount = 0;
	}
	page->order = (u8)order;
	if (unlikely(page_debug))
		page_debug_poison(page, order);
	return true;
}

void free_pages(struct page *page, unsigned order)
{
	void *caller = __builtin_return_address(0);

	if (unlikely(!page || order > MAX_ORDER || !pfn_valid(page_to_pfn(page)))) {
		page_debug_report(page, "free_pages: bad page pointer or order", caller);
		return;
	}
	if (!prep_free_page(page, order, caller))
		return;
	if (order <= PCP_MAX_ORDER && pcp_active()) {
		pcp_free(page, order);
		return;
	}
	int mt = pageblock_mt_counted(page_to_pfn(page));
	unsigned long f = zone_lock();
	__free_one_page(page, order, mt);
	mm_zone.free_pages += 1ULL << order;
	count_event(EV_PGFREE_BUDDY);
	zone_unlock(f);
}

static unsigned direct_batch(void)
{
	if (!pcp_ready)
		return 63;
	return pcp_batch(smp_processor_id());
}

/* Order-0 pages straight from the buddy, one lock hold per batch. */
static unsigned buddy_alloc_bulk(int mt, gfp_t gfp, unsigned nr, struct list_head *out)
{
	unsigned got = 0, chunk = direct_batch();
	u64 mark = wmark_for_gfp(gfp);
	while (got < nr) {
		unsigned n = 0;
		unsigned long f = zone_lock();
		for (; n < chunk && got < nr; n++, got++) {
			struct page *page = __rmqueue(0, mt, mark);
			if (!page)
				break;
			page->stamp = next_stamp();
			list_add_tail(&page->lru, out);
		}
		count_events(EV_PGALLOC_BUDDY, n);
		zone_unlock(f);
		if (n < chunk && got < nr)
			break;
	}
	return got;
}

unsigned alloc_pages_bulk(gfp_t gfp, unsigned nr, struct list_head *list)
{
	void *caller = __builtin_return_address(0);
	LIST_HEAD(got_list);
	int mt = gfp_migratetype(gfp);
	unsigned got;

	if (!(gfp & __GFP_NOPCP) && pcp_active())
		got = pcp_alloc_bulk(mt, gfp, nr, &got_list);
	else
		got = buddy_alloc_bulk(mt, gfp, nr, &got_list);
	if (got < nr && pcp_ready && pcp_count(smp_processor_id())) {
		drain_local_pages();
		got += buddy_alloc_bulk(mt, gfp, nr - got, &got_list);
	}
	if (got < nr)
		count_event(EV_PGALLOC_FAIL);
	struct page *page;
	list_for_each_entry(page, &got_list, lru)
		prep_new_page(page, 0, gfp, caller);
	list_splice_tail_init(&got_list, list);
	return got;
}

void free_pages_bulk(struct list_head *list)
{
	void *caller = __builtin_return_address(0);
	struct page *page, *next;

	list_for_each_entry_safe(page, next, list, lru) {
		if (!prep_free_page(page, 0, caller))
			list_del_init(&page->lru);	/* refused: leave it alone */
	}
	if (pcp_active()) {
		pcp_free_list(list);
		return;
	}
	unsigned chunk = direct_batch();
	while (!list_empty(list)) {
		unsigned n = 0;
		unsigned long f = zone_lock();
		while (n < chunk && !list_empty(list)) {
			page = list_first_entry(list, struct page, lru);
			list_del(&page->lru);
			__free_one_page(page, 0, pageblock_mt_counted(page_to_pfn(page)));
			n++;
		}
		mm_zone.free_pages += n;
		count_events(EV_PGFREE_BUDDY, n);
		zone_unlock(f);
	}
}

/* ---------------------------------------------------------------- counts ---- */

u64 nr_free_buddy_pages(void) { return READ_ONCE(mm_zone.free_pages); }
u64 nr_free_pages(void) { return nr_free_buddy_pages() + nr_free_pcp_pages(); }
u64 nr_managed_pages(void) { return mm_zone.managed_pages; }

/* ---------------------------------------------------------------- reporting ---- */

static const char *const mt_names[MIGRATE_TYPES] = { "unmovable", "movable", "reclaimable" };

void page_alloc_print_info(void)
{
	u64 pb[MIGRATE_TYPES] = { 0 };
	for (u64 i = 0; i < mm_zone.nr_pageblocks; i++) {
		int t = __pageblock_mt(i << PAGEBLOCK_ORDER);
		if (t < MIGRATE_TYPES)
			pb[t]++;
	}
	printk("meminfo: managed=%llu free=%llu buddy=%llu pcp=%llu max_pfn=%llu struct_page=%llu\n",
	       (unsigned long long)mm_zone.managed_pages, (unsigned long long)nr_free_pages(),
	       (unsigned long long)nr_free_buddy_pages(), (unsigned long long)nr_free_pcp_pages(),
	       (unsigned long long)max_pfn, (unsigned long long)sizeof(struct page));
	printk("meminfo: wmark min=%llu low=%llu high=%llu pageblocks unmovable=%llu movable=%llu reclaimable=%llu\n",
	       (unsigned long long)mm_zone.wmark[WMARK_MIN], (unsigned long long)mm_zone.wmark[WMARK_LOW],
	       (unsigned long long)mm_zone.wmark[WMARK_HIGH], (unsigned long long)pb[0],
	       (unsigned long long)pb[1], (unsigned long long)pb[2]);
	char line[160];
	int n = snprintf(line, sizeof(line), "meminfo: buddy blocks  order");
	for (unsigned o = 0; o < NR_ORDERS; o++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %6u", o);
	printk("%s\n", line);
	for (int t = 0; t < MIGRATE_TYPES; t++) {
		n = snprintf(line, sizeof(line), "meminfo: buddy %-11s", mt_names[t]);
		for (unsigned o = 0; o < NR_ORDERS; o++)
			n += snprintf(line + n, sizeof(line) - (size_t)n, " %6llu",
				      (unsigned long long)READ_ONCE(mm_zone.free_area[o].nr_free[t]));
		printk("%s\n", line);
	}
	pcp_print_info();
}

void page_alloc_boot_report(void)
{
	if (opt_meminfo)
		page_alloc_print_info();
}
