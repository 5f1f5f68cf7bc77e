/*
 * Shared between mm/page_alloc.c (zone, buddy, pageblocks), mm/pcp.c (per-CPU lists) and
 * mm/page_debug.c (checks). Not for other rooms: use mm/page_alloc.h.
 */
#ifndef BAREMM_PAGE_ALLOC_INTERNAL_H
#define BAREMM_PAGE_ALLOC_INTERNAL_H

#include "mm/page_alloc.h"
#include "kernel/spinlock.h"
#include "kernel/events.h"
#include "mm/pcp.h"
#include "mm/page_debug.h"

struct free_area {
	struct list_head free_list[MIGRATE_TYPES];
	u64 nr_free[MIGRATE_TYPES];	/* blocks (not pages) on each list */
};

/*
 * The single zone: every managed page of the machine. Laid out as Linux lays out struct
 * zone: what allocations only read first; then, on lines of their own, what every buddy
 * operation writes under the lock (free_area, and free_pages, which Linux keeps in per-CPU
 * vmstat diffs); the lock last, sharing its line only with the highest orders' lists,
 * which allocations seldom touch. A waiter spinning on the lock line then costs the holder
 * nothing per page. With free_pages beside the lock, the holder's per-page update of the
 * line every waiter polls took it back from them each time: alloc.bulk10k on two CPUs
 * through one zone lock ran 1.8x slower natively on a Granite Rapids VM (docs/PAGE_ALLOC.md).
 */
struct zone {
	u64 managed_pages;		/* pages handed to the buddy at boot */
	u64 wmark[NR_WMARK];
	u64 *pageblock_bits;		/* PB_BITS bits per pageblock, packed in u64 words */
	u64 nr_pageblocks;
	/* Pageblocks isolated from allocation. Nothing in baremm isolates one, so it stays
	 * 0; bulk free under pcp_mt=cached re-checks it for every page it returns (a block
	 * may have been isolated while its page sat on a pcp list, making the cached type
	 * stale), as the cached scheme must. */
	u64 isolated_pageblocks;
	u64 free_pages __cacheline_aligned;	/* pages in buddy blocks; written under lock */
	struct free_area free_area[NR_ORDERS];
	spinlock_t lock;
} __cacheline_aligned;

extern struct zone mm_zone;
DECLARE_OPTION_UINT(min_free_kbytes);	/* min_free_kbytes=, 0 = auto */
DECLARE_OPTION_BOOL(opt_meminfo);		/* meminfo=on|off */

#define PB_BITS 4			/* bits per pageblock in the bitmap */
#define PB_PER_WORD (64 / PB_BITS)
#define PB_MASK ((1ULL << PB_BITS) - 1)

/* Pageblock type without counting (checker, printing). */
static inline int __pageblock_mt(u64 pfn)
{
	u64 pb = pfn >> PAGEBLOCK_ORDER;
	u64 w = READ_ONCE(mm_zone.pageblock_bits[pb / PB_PER_WORD]);
	return (int)((w >> ((pb % PB_PER_WORD) * PB_BITS)) & PB_MASK);
}

static inline int gfp_migratetype(gfp_t gfp)
{
	if (gfp & __GFP_MOVABLE)
		return MIGRATE_MOVABLE;
	if (gfp & __GFP_RECLAIMABLE)
		return MIGRATE_RECLAIMABLE;
	return MIGRATE_UNMOVABLE;
}

/* Zone lock with interrupts already disabled (pcp paths), counted; released with
 * zone_unlock_irqoff(). */
static inline void zone_lock_irqoff(void)
{
	if (spin_lock_and_test_contended(&mm_zone.lock))
		count_event(EV_ZONE_LOCK_CONTENDED);
	count_event(EV_ZONE_LOCK);
}
static inline void zone_unlock_irqoff(void)
{
	spin_unlock(&mm_zone.lock);
}
/* The same disabling interrupts; released with zone_unlock(). */
static inline unsigned long zone_lock(void)
{
	unsigned long f = local_irq_save();
	zone_lock_irqoff();
	return f;
}
static inline void zone_unlock(unsigned long f)
{
	zone_unlock_irqoff();
	local_irq_restore(f);
}

/* ---- buddy core, zone lock held (page_alloc.c) ---- */
/* Take one block of @order for @mt (with fallback/steal), respecting watermark @mark.
 * Returns NULL when none. The page is off every list, flags PG_buddy cleared; its
 * migratetype field still names the list it came from. */
struct page *__rmqueue(unsigned order, int mt, u64 mark);
/* Give a block back: merge with free buddies, place on @mt's list. */
void __free_one_page(struct page *page, unsigned order, int mt);
u64 wmark_for_gfp(gfp_t gfp);
/* Pageblock lookup, counted as EV_PAGEBLOCK_LOOKUP. */
static inline int pageblock_mt_counted(u64 pfn)
{
	count_event(EV_PAGEBLOCK_LOOKUP);
	return __pageblock_mt(pfn);
}

/* ---- per-CPU lists (pcp.c) ---- */
#define PCP_NR_LISTS ((PCP_MAX_ORDER + 1) * MIGRATE_TYPES)
static inline unsigned pcp_index(unsigned order, int mt) { return order * MIGRATE_TYPES + (unsigned)mt; }

struct per_cpu_pages {
	u32 count;			/* pages (not blocks) on all lists */
	u32 high;			/* computed default; options may override */
	u32 batch;
	u32 rr;				/* round-robin cursor for bulk free */
	u64 stamp_seq;			/* allocation stamps handed out by this CPU */
	u32 list_count[PCP_NR_LISTS];	/* blocks on each list */
	struct list_head lists[PCP_NR_LISTS];
} __cacheline_aligned;

extern struct per_cpu_pages pcp_cpu[NR_CPUS];
extern bool pcp_ready;

void pcp_init_lists(void);
bool pcp_active(void);
/* Allocate one block from this CPU's lists (refilling); irqs are disabled inside. */
struct page *pcp_alloc(unsigned order, int mt, gfp_t gfp);
void pcp_free(struct page *page, unsigned order);
/* Bulk helpers used by alloc_pages_bulk / free_pages_bulk. */
unsigned pcp_alloc_bulk(int mt, gfp_t gfp, unsigned nr, struct list_head *out);
void pcp_free_list(struct list_head *list);
void pcp_print_info(void);
/* Next allocation stamp of this CPU (irqs must be disabled). */
static inline u64 next_stamp(void)
{
	unsigned cpu = smp_processor_id();
	return ((u64)cpu << 48) | (++pcp_cpu[cpu].stamp_seq & ((1ULL << 48) - 1));
}

/* ---- debug (page_debug.c) ---- */
/* Checks at free: returns false (and reports) when the free must be refused. */
bool page_debug_free_ok(struct page *page, unsigned order, void *caller);
void page_debug_poison(struct page *page, unsigned order);
/* Checks at allocation: poison intact, no stale state. */
void page_debug_alloc_check(struct page *page, unsigned order, void *caller);
void page_debug_report(struct page *page, const char *what, void *caller);

#endif
