/* Shared file-like objects: see mm/filemap.h. */
#include "mm/filemap.h"
#include "mm/rmap.h"
#include "mm/page_alloc.h"
#include "kernel/panic.h"
#include "kernel/string.h"

_Static_assert(sizeof(struct file_obj) <= PAGE_SIZE, "file_obj must fit in one page");

struct file_obj *file_obj_create(u64 size)
{
	u64 pages = PFN_UP(size);
	if (!pages || pages > FILE_OBJ_MAX_PAGES)
		return NULL;
	struct page *p = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!p)
		return NULL;
	struct file_obj *f = page_address(p);
	spin_lock_init(&f->lock);
	f->refs = 1;
	f->nr_pages = pages;
	f->nr_cached = 0;
	return f;
}

void file_obj_get(struct file_obj *f)
{
	atomic_inc(&f->refs);
}

void file_obj_put(struct file_obj *f)
{
	s32 r = atomic_dec_return(&f->refs);
	BUG_ON(r < 0);
	if (r)
		return;
	for (unsigned d = 0; d < FILE_OBJ_DIR_SLOTS; d++) {
		struct page **leaf = f->dir[d];
		if (!leaf)
			continue;
		for (unsigned i = 0; i < 512; i++) {
			struct page *page = leaf[i];
			if (!page)
				continue;
			/* No region maps the object any more, so nothing maps the page. */
			page_clear_flags(page, PG_shared);
			put_page(page);
		}
		free_page(virt_to_page(leaf));
	}
	free_page(virt_to_page(f));
}

static struct page **slot_of(struct file_obj *f, u64 index, bool alloc)
{
	unsigned d = (unsigned)(index / 512);
	if (!f->dir[d]) {
		if (!alloc)
			return NULL;
		struct page *lp = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!lp)
			return NULL;
		f->dir[d] = page_address(lp);
	}
	return &f->dir[d][index % 512];
}

struct page *filemap_get_page(struct file_obj *f, u64 index)
{
	if (index >= f->nr_pages)
		return NULL;
	unsigned long fl = spin_lock_irqsave(&f->lock);
	struct page **slot = slot_of(f, index, true);
	struct page *page = slot ? *slot : NULL;
	if (slot && !page) {
		page = alloc_page(GFP_USER | __GFP_ZERO);
		if (page) {
			page_set_flags(page, PG_shared);
			page->private = index;
			*slot = page;
			f->nr_cached++;
		}
	}
	if (page)
		get_page(page);
	spin_unlock_irqrestore(&f->lock, fl);
	return page;
}

struct page *filemap_peek_page(struct file_obj *f, u64 index)
{
	if (index >= f->nr_pages)
		return NULL;
	unsigned long fl = spin_lock_irqsave(&f->lock);
	struct page **slot = slot_of(f, index, false);
	struct page *page = slot ? *slot : NULL;
	spin_unlock_irqrestore(&f->lock, fl);
	return page;
}

void filemap_mark_dirty(struct file_obj *f, struct page *page)
{
	(void)f;
	page_set_flags(page, PG_dirty);
}

static u64 scan_dirty(struct file_obj *f, bool clear)
{
	u64 n = 0;
	unsigned long fl = spin_lock_irqsave(&f->lock);
	for (unsigned d = 0; d < FILE_OBJ_DIR_SLOTS; d++) {
		struct page **leaf = f->dir[d];
		if (!leaf)
			continue;
		for (unsigned i = 0; i < 512; i++) {
			if (!leaf[i] || !page_test_flag(leaf[i], PG_dirty))
				continue;
			n++;
			if (clear)
				page_clear_flags(leaf[i], PG_dirty);
		}
	}
	spin_unlock_irqrestore(&f->lock, fl);
	return n;
}

u64 filemap_nr_dirty(struct file_obj *f)
{
	return scan_dirty(f, false);
}

u64 filemap_writeback(struct file_obj *f)
{
	return scan_dirty(f, true);
}
