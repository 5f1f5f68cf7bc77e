/* Reverse-map-lite: map counts per page, and the page reference that frees at zero. */
#include "mm/rmap.h"
#include "mm/page_alloc.h"
#include "kernel/events.h"
#include "kernel/panic.h"

void page_add_rmap(struct page *page)
{
	atomic_inc(&page->mapcount);
}

void page_remove_rmap(struct page *page)
{
	s32 m = atomic_dec_return(&page->mapcount);
	if (unlikely(m < 0))
		panic("rmap: page pfn %#llx map count went negative (%d)",
		      (unsigned long long)page_to_pfn(page), (int)m);
	count_event(EV_RMAP_REMOVE);
}

/* The page is about to go back to the allocator: nothing may still map it. */
static void page_free_check(struct page *page)
{
	s32 m = page_mapcount(page);
	if (unlikely(m != 0))
		panic("rmap: page pfn %#llx freed while still mapped (mapcount %d)",
		      (unsigned long long)page_to_pfn(page), (int)m);
	if (unlikely(page->flags & (PG_pgtable | PG_zero)))
		panic("rmap: page pfn %#llx freed through put_page with flags %#x",
		      (unsigned long long)page_to_pfn(page), page->flags);
	page_clear_flags(page, PG_shared | PG_dirty);
	page->private = 0;
}

bool put_page_testzero(struct page *page)
{
	s32 r = atomic_dec_return(&page->refcount);
	if (unlikely(r < 0))
		panic("rmap: page pfn %#llx reference count went negative",
		      (unsigned long long)page_to_pfn(page));
	if (r)
		return false;
	page_free_check(page);
	return true;
}

void put_page(struct page *page)
{
	if (put_page_testzero(page))
		free_page(page);
}
