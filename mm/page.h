/*
 * struct page: one descriptor per 4 KiB frame, in a flat array indexed by pfn
 * (mem_map[0 .. max_pfn)), holes included (their descriptors are PG_reserved).
 * 48 bytes (checked at compile time; the limit is 64).
 *
 * Field use by owner:
 *   flags       PG_* bits below; owner of the page's current state writes them.
 *   order       buddy: order of the free block this page heads (PG_buddy);
 *               pcp: order of the block on the pcp list (PG_pcp);
 *               allocated: order of the block, on its head (PG_head).
 *   migratetype buddy: the free list (migratetype) the block this page heads sits on;
 *               pcp, under pcp_mt=cached: the type stored when the page entered the
 *               list (refill: the type it was taken for; free: its pageblock's), which
 *               bulk free reads; under lookup pcp neither writes nor reads it (it keeps
 *               the buddy's last value). Always < MIGRATE_TYPES.
 *   pt_used     page-table pages: number of present entries (to free empty tables).
 *   refcount    references held (allocation = 1; each mapping of a shared/COW page +1).
 *   mapcount    PTEs mapping this page (rmap-lite); 0 = unmapped.
 *   lru         list linkage: buddy free list, pcp list, gather/free lists, file pages.
 *   private     owner-defined word (file-like object index, table level, ...).
 *   stamp       debug: (cpu << 48) | sequence of the allocation that handed it out.
 */
#ifndef BAREMM_PAGE_H
#define BAREMM_PAGE_H

#include "kernel/list.h"
#include "mm/physmem.h"

enum pageflags {
	PG_reserved = 1u << 0,	/* not managed by the allocator (hole, kernel, boot data) */
	PG_buddy = 1u << 1,	/* heads a free block on a buddy free list */
	PG_pcp = 1u << 2,	/* sits on a per-CPU page list */
	PG_pgtable = 1u << 3,	/* in use as a page-table page */
	PG_dirty = 1u << 4,	/* shared file-like page written through a mapping */
	PG_shared = 1u << 5,	/* belongs to a shared file-like object */
	PG_zero = 1u << 6,	/* the shared zero page / a reference page: never freed */
	PG_poisoned = 1u << 7,	/* debug: contents poisoned at free */
	PG_head = 1u << 8,	/* first page of an allocated order > 0 block */
	PG_free = 1u << 9,	/* inside a free block (buddy or pcp); cleared on allocation */
};

struct page {
	u32 flags;
	u8 order;
	u8 migratetype;
	u16 pt_used;
	s32 refcount;
	s32 mapcount;
	struct list_head lru;
	u64 private;
	u64 stamp;
};

_Static_assert(sizeof(struct page) <= 64, "struct page must stay within 64 bytes");

extern struct page *mem_map;	/* descriptor of pfn 0 */
extern u64 max_pfn;		/* one past the highest pfn with a descriptor */

static inline u64 page_to_pfn(const struct page *p) { return (u64)(p - mem_map); }
static inline struct page *pfn_to_page(u64 pfn) { return mem_map + pfn; }
static inline phys_addr_t page_to_phys(const struct page *p) { return PFN_PHYS(page_to_pfn(p)); }
static inline struct page *phys_to_page(phys_addr_t pa) { return pfn_to_page(PFN_DOWN(pa)); }
static inline void *page_address(const struct page *p) { return __va(page_to_phys(p)); }
static inline struct page *virt_to_page(const void *va) { return phys_to_page(__pa(va)); }
static inline bool pfn_valid(u64 pfn) { return pfn < max_pfn; }

#endif
