/*
 * Reverse-map-lite and page references.
 *
 *   refcount  references (allocation = 1; the page cache of a file-like object holds
 *             one; every leaf mapping holds one; an mmu_gather holds the mapping's until
 *             the TLB flush is done). The page returns to the allocator when it hits 0.
 *   mapcount  leaf entries mapping the page. Dropped by page_remove_rmap(), which for a
 *             dirty shared page the mmu_gather delays until after the TLB flush.
 *
 * A page may never be freed while its mapcount is not zero: put_page() panics naming the
 * page if it is. Special leaves (zero page, reference pages) take neither.
 * All operations are atomic; no lock is needed.
 */
#ifndef BAREMM_RMAP_H
#define BAREMM_RMAP_H

#include "mm/page.h"
#include "kernel/atomic.h"

static inline void get_page(struct page *p) { atomic_inc(&p->refcount); }
static inline s32 page_mapcount(const struct page *p) { return atomic_load_relaxed(&p->mapcount); }
static inline s32 page_refcount(const struct page *p) { return atomic_load_relaxed(&p->refcount); }

static inline void page_set_flags(struct page *p, u32 f) { __atomic_fetch_or(&p->flags, f, __ATOMIC_SEQ_CST); }
static inline void page_clear_flags(struct page *p, u32 f) { __atomic_fetch_and(&p->flags, ~f, __ATOMIC_SEQ_CST); }
static inline bool page_test_flag(const struct page *p, u32 f) { return atomic_load_relaxed(&p->flags) & f; }
/* Set @f; returns whether it was already set. */
static inline bool page_test_and_set_flag(struct page *p, u32 f)
{
	return __atomic_fetch_or(&p->flags, f, __ATOMIC_SEQ_CST) & f;
}

/* A new leaf maps @page (fault / fork copy). */
void page_add_rmap(struct page *page);
/* A leaf mapping @page was cleared and (for delayed rmaps) the TLB flushed. */
void page_remove_rmap(struct page *page);
/* Drop a reference; frees the page at zero (checking it is no longer mapped). */
void put_page(struct page *page);
/* Drop a reference; at zero check the page and return true without freeing it (the
 * caller frees in bulk). */
bool put_page_testzero(struct page *page);

#endif
