/*
 * Page allocator debug checks: free-time state checks, poisoning, allocation-time poison
 * checks, and the full consistency check. See mm/page_debug.h.
 */
#include "mm/page_alloc_internal.h"
#include "mm/page_debug.h"
#include "kernel/options.h"
#include "kernel/panic.h"
#include "kernel/printk.h"
#include "kernel/string.h"

DEFINE_OPTION_BOOL(page_debug, "page_debug", false,
		   "page allocator checks: poison freed pages, catch double/mapped frees (slow)");

bool page_debug_nopanic;
u64 page_debug_errors;
const char *page_debug_last_error;
u64 page_debug_last_pfn;

static bool page_in_map(const struct page *page)
{
	return page && mem_map && page >= mem_map && page < mem_map + max_pfn;
}

void page_debug_report(struct page *page, const char *what, void *caller)
{
	u64 pfn = page_in_map(page) ? page_to_pfn(page) : ~0ULL;
	if (page_debug_nopanic) {
		page_debug_errors++;
		page_debug_last_error = what;
		page_debug_last_pfn = pfn;
		return;
	}
	if (!page_in_map(page))
		panic("page_alloc: %s: page=%p (not in mem_map) caller=%p", what, (void *)page, caller);
	panic("page_alloc: %s: pfn=0x%llx flags=0x%x order=%u mt=%u refcount=%d mapcount=%d "
	      "stamp=0x%llx caller=%p",
	      what, (unsigned long long)pfn, page->flags, page->order, page->migratetype,
	      page->refcount, page->mapcount, (unsigned long long)page->stamp, caller);
}

bool page_debug_free_ok(struct page *page, unsigned order, void *caller)
{
	u64 pfn = page_to_pfn(page), n = 1ULL << order;

	if (!IS_ALIGNED(pfn, n) || pfn + n > max_pfn) {
		page_debug_report(page, "free of a misaligned or out-of-range block", caller);
		return false;
	}
	if (page->flags & PG_reserved) {
		page_debug_report(page, "free of a reserved page", caller);
		return false;
	}
	if (page->flags & PG_zero) {
		page_debug_report(page, "free of the zero/reference page", caller);
		return false;
	}
	if (order ? (!(page->flags & PG_head) || page->order != order) : !!(page->flags & PG_head)) {
		page_debug_report(page, "free with an order other than the allocation's", caller);
		return false;
	}
	for (u64 i = 0; i < n; i++) {
		struct page *p = page + i;
		if (p->flags & (PG_free | PG_buddy | PG_pcp | PG_reserved)) {
			page_debug_report(p, "double free (page already free)", caller);
			return false;
		}
		if (p->mapcount != 0) {
			page_debug_report(p, "free of a page still mapped (mapcount != 0)", caller);
			return false;
		}
	}
	if (page->refcount < 0 || page->refcount > 1) {
		page_debug_report(page, "free of a page still referenced (refcount > 1) or underflowed",
				  caller);
		return false;
	}
	return true;
}

void page_debug_poison(struct page *page, unsigned order)
{
	memset(page_address(page), PAGE_POISON_BYTE, PAGE_SIZE << order);
	for (u64 i = 0; i < (1ULL << order); i++)
		page[i].flags |= PG_poisoned;
}

static bool poison_intact(const struct page *page)
{
	const u64 *w = page_address(page);
	const u64 pat = 0x0101010101010101ULL * PAGE_POISON_BYTE;
	for (u64 i = 0; i < PAGE_SIZE / 8; i++)
		if (w[i] != pat)
			return false;
	return true;
}

void page_debug_alloc_check(struct page *page, unsigned order, void *caller)
{
	for (u64 i = 0; i < (1ULL << order); i++) {
		struct page *p = page + i;
		if (!(p->flags & PG_free) || (p->flags & (PG_buddy | PG_pcp | PG_reserved)) ||
		    p->mapcount != 0 || p->refcount != 0) {
			page_debug_report(p, "allocating a page in a bad state", caller);
			return;
		}
		if ((p->flags & PG_poisoned) && !poison_intact(p)) {
			page_debug_report(p, "poison overwritten while free (use after free)", caller);
			return;
		}
	}
}

/* ---------------------------------------------------------------- full check ---- */

static void check_err(struct page_check_result *r, u64 pfn, const char *what)
{
	if (!r->errors) {
		r->first_bad_pfn = pfn;
		r->first_error = what;
	}
	r->errors++;
}

/* Interior pages of a free block: free, no head flags, not reserved. */
static void check_interior(struct page_check_result *r, u64 pfn, unsigned order)
{
	for (u64 i = 1; i < (1ULL << order); i++) {
		const struct page *p = pfn_to_page(pfn + i);
		if (!(p->flags & PG_free) || (p->flags & (PG_buddy | PG_pcp | PG_reserved))) {
			check_err(r, pfn + i, "free block interior page in a bad state");
			return;
		}
	}
}

static bool block_ok(struct page_check_result *r, u64 pfn, unsigned order)
{
	if (pfn >= max_pfn || !IS_ALIGNED(pfn, 1ULL << order) || pfn + (1ULL << order) > max_pfn) {
		check_err(r, pfn, "free block misaligned or out of range");
		return false;
	}
	return true;
}

unsigned page_alloc_check_report(struct page_check_result *out)
{
	struct page_check_result res = { 0 }, *r = &res;
	u64 list_blocks = 0;
	unsigned long f = zone_lock();

	for (u64 pb = 0; pb < mm_zone.nr_pageblocks; pb++)
		if (__pageblock_mt(pb << PAGEBLOCK_ORDER) >= MIGRATE_TYPES)
			check_err(r, pb << PAGEBLOCK_ORDER, "pageblock with an invalid migratetype");

	for (unsigned o = 0; o < NR_ORDERS; o++) {
		for (int t = 0; t < MIGRATE_TYPES; t++) {
			const struct list_head *head = &mm_zone.free_area[o].free_list[t], *pos;
			u64 n = 0;
			for (pos = head->next; pos != head; pos = pos->next) {
				if (++n > max_pfn) {
					check_err(r, 0, "free list loops");
					break;
				}
				struct page *page = list_entry(pos, struct page, lru);
				if (!page_in_map(page)) {
					check_err(r, ~0ULL, "free list entry outside mem_map");
					break;
				}
				u64 pfn = page_to_pfn(page);
				if (!block_ok(r, pfn, o))
					continue;
				if ((page->flags & (PG_buddy | PG_free | PG_pcp | PG_reserved)) !=
				    (PG_buddy | PG_free))
					check_err(r, pfn, "buddy list page without PG_buddy|PG_free or with PG_pcp");
				if (page->order != o)
					check_err(r, pfn, "buddy page order differs from its list");
				if (page->migratetype != t)
					check_err(r, pfn, "buddy page migratetype differs from its list");
				check_interior(r, pfn, o);
				if (o < MAX_ORDER) {
					u64 bpfn = pfn ^ (1ULL << o);
					if (bpfn < max_pfn && (pfn_to_page(bpfn)->flags & PG_buddy) &&
					    pfn_to_page(bpfn)->order == o)
						check_err(r, pfn, "two free buddies of the same order not merged");
				}
				if (o >= PAGEBLOCK_ORDER) {
					for (u64 p = pfn; p < pfn + (1ULL << o); p += PAGEBLOCK_NR_PAGES)
						if (__pageblock_mt(p) != t)
							check_err(r, p, "whole free pageblock typed unlike its list");
				} else if (__pageblock_mt(pfn) != t) {
					r->stale_blocks++;
				}
				r->buddy_pages += 1ULL << o;
			}
			if (n != mm_zone.free_area[o].nr_free[t])
				check_err(r, 0, "nr_free differs from the free list length");
			list_blocks += n;
		}
	}

	for (unsigned c = 0; c < NR_CPUS; c++) {
		const struct per_cpu_pages *pcp = &pcp_cpu[c];
		u64 sum = 0;
		for (unsigned idx = 0; idx < PCP_NR_LISTS; idx++) {
			const struct list_head *head = &pcp->lists[idx], *pos;
			unsigned order = idx / MIGRATE_TYPES;
			u64 n = 0;
			for (pos = head->next; pos != head; pos = pos->next) {
				if (++n > max_pfn) {
					check_err(r, 0, "pcp list loops");
					break;
				}
				struct page *page = list_entry(pos, struct page, lru);
				if (!page_in_map(page)) {
					check_err(r, ~0ULL, "pcp list entry outside mem_map");
					break;
				}
				u64 pfn = page_to_pfn(page);
				if (!block_ok(r, pfn, order))
					continue;
				if ((page->flags & (PG_buddy | PG_free | PG_pcp | PG_reserved)) !=
				    (PG_pcp | PG_free))
					check_err(r, pfn, "pcp page without PG_pcp|PG_free or with PG_buddy");
				if (page->order != order)
					check_err(r, pfn, "pcp page order differs from its list");
				if (page->migratetype >= MIGRATE_TYPES)
					check_err(r, pfn, "pcp page with an invalid cached migratetype");
				check_interior(r, pfn, order);
				sum += 1ULL << order;
			}
			if (n != pcp->list_count[idx])
				check_err(r, 0, "pcp list_count differs from the list length");
			list_blocks += n;
		}
		if (sum != pcp->count)
			check_err(r, c, "pcp count differs from the pages on its lists");
		r->pcp_pages += sum;
	}

	/* Every free page belongs to exactly one listed block; managed = non-reserved. */
	u64 heads = 0, reserved = 0;
	for (u64 pfn = 0; pfn < max_pfn;) {
		const struct page *p = pfn_to_page(pfn);
		if (p->flags & (PG_buddy | PG_pcp)) {
			heads++;
			pfn += 1ULL << p->order;
			continue;
		}
		if (p->flags & PG_free)
			check_err(r, pfn, "free page outside any free block");
		if (p->flags & PG_reserved)
			reserved++;
		pfn++;
	}
	if (heads != list_blocks)
		check_err(r, 0, "free block heads not on exactly one list");
	if (max_pfn - reserved != mm_zone.managed_pages)
		check_err(r, 0, "managed pages differ from non-reserved descriptors");
	if (r->buddy_pages != mm_zone.free_pages)
		check_err(r, 0, "zone free_pages differs from the pages on free lists");

	zone_unlock(f);
	if (out)
		*out = res;
	return res.errors;
}

void page_alloc_check(void)
{
	struct page_check_result r;
	if (page_alloc_check_report(&r)) {
		struct page *p = r.first_bad_pfn < max_pfn ? pfn_to_page(r.first_bad_pfn) : NULL;
		if (p)
			panic("page_alloc_check: %u error(s), first: %s: pfn=0x%llx flags=0x%x order=%u "
			      "mt=%u caller=%p",
			      r.errors, r.first_error, (unsigned long long)r.first_bad_pfn, p->flags,
			      p->order, p->migratetype, __builtin_return_address(0));
		panic("page_alloc_check: %u error(s), first: %s (0x%llx) caller=%p", r.errors,
		      r.first_error, (unsigned long long)r.first_bad_pfn, __builtin_return_address(0));
	}
}
