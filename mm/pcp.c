/*
 * Per-CPU page lists (pcp) for orders 0..PCP_MAX_ORDER, one list per (order, migratetype)
 * on every CPU, with one count/high/batch per CPU (counted in pages, as in Linux).
 *
 * - Allocation takes the head of this CPU's list; an empty list is refilled with `batch`
 *   pages (max(batch >> order, 2) blocks for order > 0) under one zone-lock hold.
 * - Free looks up the page's pageblock type (the list it joins), adds it at the head, and
 *   once count >= high bulk-frees count - (high - batch) pages (at least `batch`) under
 *   one zone-lock hold, one block at a time round-robin over the non-empty lists,
 *   coldest (tail) first.
 * - Bulk free learns each page's migratetype per the `pcp_mt` variant (seed 003):
 *   `cached` as Linux before 6.10 (6.6 is the seed's base): the type is stored in the
 *   page when it enters a list (at refill under the zone lock, at free from its
 *   pageblock) and bulk free reads it back, looking the pageblock up only while the
 *   zone has isolated pageblocks; `lookup` as Linux since 6.10: nothing is stored and
 *   bulk free reads every page's pageblock.
 *
 * Every operation on a CPU's lists runs on that CPU with interrupts disabled; remote
 * drains go through a cross-CPU call.
 */
#include "mm/page_alloc_internal.h"
#include "mm/pcp.h"
#include "kernel/options.h"
#include "kernel/printk.h"
#include "kernel/smp.h"
#include "kernel/string.h"

DEFINE_VARIANT_BOOL(opt_pcp, "pcp", true,
		    "per-CPU page lists for orders 0..3 (off: every alloc and free goes to the buddy)");
DEFINE_VARIANT_UINT(opt_pcp_high, "pcp_high", 0, 0, 1 << 20,
		    "pcp high mark in pages (0 = auto: low watermark / CPUs, at least 4 * batch)");
DEFINE_VARIANT_UINT(opt_pcp_batch, "pcp_batch", 0, 0, 1 << 16,
		    "pcp refill/bulk-free batch in pages (0 = auto: 63 for >= 1 GiB, less below)");
DEFINE_VARIANT_ENUM(pcp_mt, "pcp_mt", PCP_MT_LOOKUP, "where bulk free learns a page's migratetype",
		    PCP_MT_LIST);

struct per_cpu_pages pcp_cpu[NR_CPUS];
bool pcp_ready;

void pcp_init_lists(void)
{
	pcp_ready = false;
	memset(pcp_cpu, 0, sizeof(pcp_cpu));
	for (unsigned c = 0; c < NR_CPUS; c++)
		for (unsigned i = 0; i < PCP_NR_LISTS; i++)
			INIT_LIST_HEAD(&pcp_cpu[c].lists[i]);
}

unsigned pcp_default_batch(u64 managed)
{
	/* ~1/1024 of the zone, at most 1 MiB worth, quartered, rounded down to 2^n - 1. */
	u64 b = MIN(managed >> 10, (1ULL << 20) / PAGE_SIZE) / 4;
	if (b < 1)
		b = 1;
	b += b / 2;
	u64 p = 1;
	while (p * 2 <= b)
		p *= 2;
	b = p - 1;
	return b ? (unsigned)b : 1;
}

unsigned pcp_default_high(u64 low_wmark, unsigned batch, unsigned ncpus)
{
	u64 h = low_wmark / (ncpus ? ncpus : 1);
	return (unsigned)MAX(h, 4ULL * batch);
}

void page_alloc_init_pcp(void)
{
	unsigned batch = pcp_default_batch(mm_zone.managed_pages);
	unsigned high = pcp_default_high(mm_zone.wmark[WMARK_LOW], batch, nr_cpu_ids);
	for (unsigned c = 0; c < NR_CPUS; c++) {
		pcp_cpu[c].batch = batch;
		pcp_cpu[c].high = high;
	}
	pcp_ready = true;
}

bool pcp_active(void)
{
	return pcp_ready && READ_ONCE(opt_pcp);
}

static inline u32 eff_high(const struct per_cpu_pages *pcp)
{
	u64 h = READ_ONCE(opt_pcp_high);
	return h ? (u32)h : pcp->high;
}

static inline u32 eff_batch(const struct per_cpu_pages *pcp, u32 high)
{
	u64 b = READ_ONCE(opt_pcp_batch);
	if (!b)
		b = pcp->batch;
	if (b > high)
		b = high;
	return b ? (u32)b : 1;
}

unsigned pcp_high(unsigned cpu) { return eff_high(&pcp_cpu[cpu]); }
unsigned pcp_batch(unsigned cpu) { return eff_batch(&pcp_cpu[cpu], eff_high(&pcp_cpu[cpu])); }
unsigned pcp_count(unsigned cpu) { return READ_ONCE(pcp_cpu[cpu].count); }

u64 nr_free_pcp_pages(void)
{
	u64 s = 0;
	for (unsigned c = 0; c < NR_CPUS; c++)
		s += READ_ONCE(pcp_cpu[c].count);
	return s;
}

/*
 * Up to @n blocks from the buddy onto @list; zone lock held. @store_mt: record in each
 * page the type it was taken for (the cached variant's in-lock write). Always inlined
 * with a constant @store_mt, so the lookup variant's loop has neither the store nor a
 * test for it.
 */
static inline __attribute__((always_inline)) unsigned
rmqueue_bulk_locked(struct list_head *list, unsigned order, int mt, u64 mark, unsigned n,
		    bool store_mt)
{
	unsigned got = 0;
	for (; got < n; got++) {
		struct page *page = __rmqueue(order, mt, mark);
		if (!page)
			break;
		/* a borrowed block's own list type is overwritten, as in Linux */
		if (store_mt)
			page->migratetype = (u8)mt;
		page->flags |= PG_pcp;
		list_add_tail(&page->lru, list);
	}
	return got;
}

/* Refill one list from the buddy under one lock hold. Irqs off. Returns blocks added. */
static unsigned pcp_refill(struct per_cpu_pages *pcp, unsigned order, int mt, gfp_t gfp)
{
	unsigned idx = pcp_index(order, mt);
	u32 batch = eff_batch(pcp, eff_high(pcp));
	unsigned n = order ? MAX(batch >> order, 2u) : batch, got;
	u64 mark = wmark_for_gfp(gfp);

	zone_lock_irqoff();
	/* cached: every page records, under the lock, the type it was taken for; lookup:
	 * no write, the field keeps whatever the buddy left. */
	if (READ_ONCE(pcp_mt) == PCP_MT_CACHED)
		got = rmqueue_bulk_locked(&pcp->lists[idx], order, mt, mark, n, true);
	else
		got = rmqueue_bulk_locked(&pcp->lists[idx], order, mt, mark, n, false);
	zone_unlock_irqoff();
	if (got) {
		pcp->list_count[idx] += got;
		pcp->count += got << order;
		count_event(EV_PGALLOC_PCP_REFILL);
	}
	return got;
}

static inline struct page *pcp_take(struct per_cpu_pages *pcp, unsigned idx, unsigned order)
{
	struct page *page = list_first_entry(&pcp->lists[idx], struct page, lru);
	list_del(&page->lru);
	pcp->list_count[idx]--;
	pcp->count -= 1u << order;
	page->flags &= ~PG_pcp;
	page->stamp = next_stamp();
	return page;
}

struct page *pcp_alloc(unsigned order, int mt, gfp_t gfp)
{
	unsigned long f = local_irq_save();
	struct per_cpu_pages *pcp = &pcp_cpu[smp_processor_id()];
	unsigned idx = pcp_index(order, mt);
	struct page *page = NULL;

	if (list_empty(&pcp->lists[idx]) && !pcp_refill(pcp, order, mt, gfp))
		goto out;
	page = pcp_take(pcp, idx, order);
	count_event(EV_PGALLOC_PCP_HIT);
out:
	local_irq_restore(f);
	return page;
}

unsigned pcp_alloc_bulk(int mt, gfp_t gfp, unsigned nr, struct list_head *out)
{
	unsigned got = 0, idx = pcp_index(0, mt);
	while (got < nr) {
		unsigned long f = local_irq_save();
		struct per_cpu_pages *pcp = &pcp_cpu[smp_processor_id()];
		unsigned k = 0;
		bool empty = false;
		for (; k < 64 && got < nr; k++, got++) {
			if (list_empty(&pcp->lists[idx]) && !pcp_refill(pcp, 0, mt, gfp)) {
				empty = true;
				break;
			}
			list_add_tail(&pcp_take(pcp, idx, 0)->lru, out);
		}
		count_events(EV_PGALLOC_PCP_HIT, k);
		local_irq_restore(f);
		if (empty)
			break;
	}
	return got;
}

/*
 * Variant code layout. Both pcp_mt variants run from one kernel, switched at run time,
 * but each must run its per-page paths as straight-line code, as its own Linux kernel
 * would: a test of the variant inside a per-page loop puts one variant's work out of
 * line, and that variant then pays two taken branches per page that its kernel does not
 * have. Measured natively on a Granite Rapids VM (the native panel's alloc pair): with
 * the lookup out of line in bulk free, `lookup` cost +4.1..+5.4 % against `cached`; the
 * same code with the lookup on the fall-through path and `cached` out of line, -0.4..
 * -1.2 %. So the per-page functions below are written once, inlined with the variant as
 * a constant, and chosen once per call through a table indexed by the variant: the same
 * indirect jump for both (a conditional branch would be taken for one and not the other).
 */

/*
 * Move @nr pages (at least; whole blocks) from @pcp to the buddy under one zone-lock
 * hold, round-robin over the lists, coldest first. Irqs off. @cached: the variant, a
 * constant in each copy.
 */
static inline __attribute__((always_inline)) void
free_pcppages_bulk_variant(struct per_cpu_pages *pcp, long nr, const bool cached)
{
	u64 freed = 0, blocks = 0;

	zone_lock_irqoff();
	/* cached: a pageblock isolated while its pages sat here makes every cached type
	 * suspect, so each page tests this (read once per pass, under the lock, and only
	 * by the variant that needs it). */
	bool isolated = cached && READ_ONCE(mm_zone.isolated_pageblocks) != 0;
	while (nr > 0 && pcp->count) {
		unsigned idx = pcp->rr;
		do {
			idx = idx + 1 == PCP_NR_LISTS ? 0 : idx + 1;
		} while (list_empty(&pcp->lists[idx]));
		pcp->rr = idx;
		unsigned order = idx / MIGRATE_TYPES;
		struct page *page = list_last_entry(&pcp->lists[idx], struct page, lru);
		list_del(&page->lru);
		pcp->list_count[idx]--;
		pcp->count -= 1u << order;
		page->flags &= ~PG_pcp;
		/*
		 * Seed 003. cached: trust the type recorded at pcp entry unless pageblocks
		 * are isolated; if the pageblock was claimed by another type meanwhile, the
		 * page goes back to the stale type's list (accounting and merging stay exact;
		 * only list placement differs). lookup: read the bitmap now, always the
		 * current type. The lookups are counted after the loop, the same way in both
		 * variants, so neither pays for instrumentation per page.
		 */
		int mt;
		if (cached) {
			mt = page->migratetype;
			if (unlikely(isolated))
				mt = __pageblock_mt(page_to_pfn(page));
		} else {
			mt = __pageblock_mt(page_to_pfn(page));
		}
		__free_one_page(page, order, mt);
		mm_zone.free_pages += 1ULL << order;
		nr -= 1L << order;
		freed += 1ULL << order;
		blocks++;
	}
	zone_unlock_irqoff();
	count_events(EV_PGFREE_BULK, freed);
	count_events(EV_PAGEBLOCK_LOOKUP, !cached || isolated ? blocks : 0);
}

static __attribute__((noinline)) void free_pcppages_bulk_cached(struct per_cpu_pages *pcp, long nr)
{
	free_pcppages_bulk_variant(pcp, nr, true);
}

static __attribute__((noinline)) void free_pcppages_bulk_lookup(struct per_cpu_pages *pcp, long nr)
{
	free_pcppages_bulk_variant(pcp, nr, false);
}

static void (*const free_pcppages_bulk_fns[])(struct per_cpu_pages *, long) = {
	[PCP_MT_CACHED] = free_pcppages_bulk_cached,
	[PCP_MT_LOOKUP] = free_pcppages_bulk_lookup,
};

static void free_pcppages_bulk(struct per_cpu_pages *pcp, long nr)
{
	free_pcppages_bulk_fns[READ_ONCE(pcp_mt)](pcp, nr);
}

/* Irqs off. @cached: the variant, a constant wherever this is inlined. */
static inline __attribute__((always_inline)) void
__pcp_free(struct per_cpu_pages *pcp, struct page *page, unsigned order, int mt,
	   const bool cached)
{
	if (cached) {
		page->migratetype = (u8)mt;	/* the cache write */
		mt = page->migratetype;		/* the list is picked from the cached type */
	}
	/* The pcp-type branch, on the type the variant picks the list by: only the pcp
	 * types have lists (all of baremm's types are; a type beyond them, as Linux's
	 * highatomic or CMA, would join the movable list). */
	if (unlikely((unsigned)mt >= MIGRATE_PCPTYPES))
		mt = MIGRATE_MOVABLE;
	unsigned idx = pcp_index(order, mt);
	page->flags |= PG_pcp;
	page->order = (u8)order;
	list_add(&page->lru, &pcp->lists[idx]);
	pcp->list_count[idx]++;
	pcp->count += 1u << order;
	u32 high = eff_high(pcp);
	if (pcp->count >= high) {
		u32 batch = eff_batch(pcp, high);
		free_pcppages_bulk(pcp, (long)pcp->count - (long)(high - batch));
	}
}

static inline __attribute__((always_inline)) void
pcp_free_variant(struct page *page, unsigned order, const bool cached)
{
	/* The pageblock type picks the list (both variants read it here, like Linux). */
	int mt = pageblock_mt_counted(page_to_pfn(page));
	unsigned long f = local_irq_save();
	__pcp_free(&pcp_cpu[smp_processor_id()], page, order, mt, cached);
	count_event(EV_PGFREE_PCP);
	local_irq_restore(f);
}

static __attribute__((noinline)) void pcp_free_cached(struct page *page, unsigned order)
{
	pcp_free_variant(page, order, true);
}

static __attribute__((noinline)) void pcp_free_lookup(struct page *page, unsigned order)
{
	pcp_free_variant(page, order, false);
}

static void (*const pcp_free_fns[])(struct page *, unsigned) = {
	[PCP_MT_CACHED] = pcp_free_cached,
	[PCP_MT_LOOKUP] = pcp_free_lookup,
};

void pcp_free(struct page *page, unsigned order)
{
	pcp_free_fns[READ_ONCE(pcp_mt)](page, order);
}

static inline __attribute__((always_inline)) void
pcp_free_list_variant(struct list_head *list, const bool cached)
{
	while (!list_empty(list)) {
		unsigned long f = local_irq_save();
		struct per_cpu_pages *pcp = &pcp_cpu[smp_processor_id()];
		for (unsigned k = 0; k < 64 && !list_empty(list); k++) {
			struct page *page = list_first_entry(list, struct page, lru);
			list_del(&page->lru);
			__pcp_free(pcp, page, 0, pageblock_mt_counted(page_to_pfn(page)), cached);
			/* per page, as pcp_free() counts (and as Linux counts every freed page
			 * on both paths): seed 000 compares this path with a free_page() loop,
			 * so the counter must cost the same per page on both sides */
			count_event(EV_PGFREE_PCP);
		}
		local_irq_restore(f);
	}
}

static __attribute__((noinline)) void pcp_free_list_cached(struct list_head *list)
{
	pcp_free_list_variant(list, true);
}

static __attribute__((noinline)) void pcp_free_list_lookup(struct list_head *list)
{
	pcp_free_list_variant(list, false);
}

static void (*const pcp_free_list_fns[])(struct list_head *) = {
	[PCP_MT_CACHED] = pcp_free_list_cached,
	[PCP_MT_LOOKUP] = pcp_free_list_lookup,
};

void pcp_free_list(struct list_head *list)
{
	pcp_free_list_fns[READ_ONCE(pcp_mt)](list);
}

void drain_local_pages(void)
{
	unsigned long f = local_irq_save();
	struct per_cpu_pages *pcp = &pcp_cpu[smp_processor_id()];
	if (pcp->count) {
		free_pcppages_bulk(pcp, pcp->count);
		count_event(EV_PCP_DRAIN);
	}
	local_irq_restore(f);
}

static void drain_fn(void *info)
{
	(void)info;
	drain_local_pages();
}

void drain_pages_cpu(unsigned cpu)
{
	if (cpu == smp_processor_id())
		drain_local_pages();
	else
		smp_call_function_single(cpu, drain_fn, NULL, true);
}

void drain_all_pages(void)
{
	on_each_cpu(drain_fn, NULL, true);
}

void pcp_print_info(void)
{
	printk("meminfo: pcp %s mt=%s high=%u batch=%u (auto high=%u batch=%u)\n",
	       pcp_active() ? "on" : "off", pcp_mt_names[READ_ONCE(pcp_mt)],
	       pcp_high(0), pcp_batch(0), pcp_cpu[0].high, pcp_cpu[0].batch);
	for (unsigned c = 0; c < nr_cpu_ids && c < NR_CPUS; c++) {
		const struct per_cpu_pages *pcp = &pcp_cpu[c];
		char line[200];
		int n = snprintf(line, sizeof(line), "meminfo: pcp cpu%-3u count=%-6u stamp_seq=%llu lists(order:U/M/R)",
				 c, pcp->count, (unsigned long long)pcp->stamp_seq);
		for (unsigned o = 0; o <= PCP_MAX_ORDER; o++)
			n += snprintf(line + n, sizeof(line) - (size_t)n, " %u:%u/%u/%u", o,
				      pcp->list_count[pcp_index(o, 0)], pcp->list_count[pcp_index(o, 1)],
				      pcp->list_count[pcp_index(o, 2)]);
		printk("%s\n", line);
	}
}
