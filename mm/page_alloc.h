/*
 * The page allocator: one zone, buddy free lists per order and migratetype, pageblocks
 * with a migratetype each, watermarks, per-CPU page lists (mm/pcp.c) for orders
 * 0..PCP_MAX_ORDER. Any CPU may call alloc_pages/free_pages with interrupts on or off;
 * the zone lock is taken with interrupts disabled. Allocation failure returns NULL
 * (counted as EV_PGALLOC_FAIL); the caller decides what to do.
 */
#ifndef BAREMM_PAGE_ALLOC_H
#define BAREMM_PAGE_ALLOC_H

#include "mm/page.h"

#define MAX_ORDER 10		/* orders 0..MAX_ORDER inclusive (4 KiB .. 4 MiB) */
#define NR_ORDERS (MAX_ORDER + 1)
#define PCP_MAX_ORDER 3
#define PAGEBLOCK_ORDER 9	/* 2 MiB pageblocks */
#define PAGEBLOCK_NR_PAGES (1UL << PAGEBLOCK_ORDER)

enum migratetype {
	MIGRATE_UNMOVABLE,
	MIGRATE_MOVABLE,
	MIGRATE_RECLAIMABLE,
	MIGRATE_TYPES
};
#define MIGRATE_PCPTYPES MIGRATE_TYPES	/* types with pcp lists: every one baremm has */

typedef unsigned gfp_t;
#define __GFP_MOVABLE 0x01u	/* migratetype movable (user pages) */
#define __GFP_RECLAIMABLE 0x02u
#define __GFP_ZERO 0x04u	/* zero the pages */
#define __GFP_NOPCP 0x08u	/* bypass the per-CPU lists (buddy only) */
#define __GFP_NOWARN 0x10u	/* failure is expected (mmu_gather batch pages) */
#define __GFP_ATOMIC 0x20u	/* may dip below the min watermark */
#define GFP_KERNEL 0u
#define GFP_USER (__GFP_MOVABLE)

/* Boot: build mem_map from memblock and free every unreserved page into the buddy. */
void page_alloc_init(void);
/* After nr_cpu_ids is known: compute pcp high/batch for every CPU. */
void page_alloc_init_pcp(void);

struct page *alloc_pages(gfp_t gfp, unsigned order);
void free_pages(struct page *page, unsigned order);
static inline struct page *alloc_page(gfp_t gfp) { return alloc_pages(gfp, 0); }
static inline void free_page(struct page *page) { free_pages(page, 0); }

/* Bulk: allocate up to @nr order-0 pages onto @list (lru); returns how many. */
unsigned alloc_pages_bulk(gfp_t gfp, unsigned nr, struct list_head *list);
/* Bulk: free every order-0 page on @list (lru), one zone-lock hold per batch. */
void free_pages_bulk(struct list_head *list);

u64 nr_free_pages(void);	/* buddy + every pcp list */
u64 nr_managed_pages(void);

/* ---- additions (see docs/PAGE_ALLOC.md) ---- */

u64 nr_free_buddy_pages(void);	/* buddy free lists only (what watermarks are checked on) */
u64 nr_free_pcp_pages(void);	/* sum of every CPU's pcp count (racy snapshot) */

/* Per-CPU lists: give this CPU's pages back to the buddy (one zone-lock hold). */
void drain_local_pages(void);
/* Drain @cpu's lists: locally when @cpu is the caller, else by a waiting cross-CPU call. */
void drain_pages_cpu(unsigned cpu);
/* Drain every online CPU (on_each_cpu; kernel only, not from interrupt context). */
void drain_all_pages(void);
/* Current pcp parameters of @cpu after option overrides (benchmarks size batches with these). */
unsigned pcp_high(unsigned cpu);
unsigned pcp_batch(unsigned cpu);
unsigned pcp_count(unsigned cpu);

/* Watermarks in pages (min, low, high). */
enum { WMARK_MIN, WMARK_LOW, WMARK_HIGH, NR_WMARK };
u64 zone_wmark(int which);

/* Pageblock migratetype (one bitmap read, counted as EV_PAGEBLOCK_LOOKUP). */
int get_pageblock_migratetype(u64 pfn);

/*
 * Full consistency check of free lists, buddy pairs, pcp lists/counts, pageblock bits and
 * free counts. Call while every CPU is quiet (after a stress test). page_alloc_check()
 * panics on the first error (pfn, state, caller); page_alloc_check_report() never panics
 * and fills @r (may be NULL), returning the number of errors.
 */
struct page_check_result {
	unsigned errors;
	u64 buddy_pages;	/* pages in buddy blocks (walked) */
	u64 pcp_pages;		/* pages on pcp lists (walked) */
	u64 stale_blocks;	/* buddy blocks on a list != their pageblock's type (legal) */
	u64 first_bad_pfn;
	const char *first_error;
};
void page_alloc_check(void);
unsigned page_alloc_check_report(struct page_check_result *r);

/* Print free pages per order and migratetype, pcp counts per CPU, watermarks, stamps. */
void page_alloc_print_info(void);
/* Boot hook: prints page_alloc_print_info() when the `meminfo=on` option is set. */
void page_alloc_boot_report(void);

#endif
