/*
 * Shared "file-like" objects: a page-cache-like object of a fixed size whose pages are
 * created (zeroed) on first access and shared by every mapper, the way a tmpfs file's
 * pages are. A write through a mapping makes the page dirty (PG_dirty; set at the write
 * fault and again at unmap from the PTE's dirty bit); filemap_nr_dirty() counts them.
 *
 * Storage: the object header and a directory of leaf pages fill one page; each leaf page
 * holds 512 page pointers, so an object holds up to FILE_OBJ_MAX_PAGES pages (~1 GiB).
 * Cache pages have PG_shared, page->private = their index, and one reference held by the
 * cache; the object frees them when its last reference goes (mappers hold references to
 * the object through their regions, so a mapped page is never freed under them).
 *
 * Locking: obj->lock protects the directory and the counters; taken after mm->lock.
 */
#ifndef BAREMM_FILEMAP_H
#define BAREMM_FILEMAP_H

#include "mm/page.h"
#include "kernel/spinlock.h"

#define FILE_OBJ_DIR_SLOTS 500
#define FILE_OBJ_MAX_PAGES ((u64)FILE_OBJ_DIR_SLOTS * 512)

struct file_obj {
	spinlock_t lock;
	s32 refs;
	u64 nr_pages;		/* size in pages */
	u64 nr_cached;		/* pages present in the cache */
	struct page **dir[FILE_OBJ_DIR_SLOTS];
};

/* A new object of @size bytes (rounded up to pages), one reference. NULL when out of
 * memory or too large. */
struct file_obj *file_obj_create(u64 size);
void file_obj_get(struct file_obj *f);
/* Drop a reference; the last frees every cache page and the object. */
void file_obj_put(struct file_obj *f);

/* The cache page at @index (created zeroed when absent), with a reference taken for the
 * caller. NULL when @index is beyond the object or out of memory. */
struct page *filemap_get_page(struct file_obj *f, u64 index);
/* The cache page at @index if present (no reference taken), else NULL. */
struct page *filemap_peek_page(struct file_obj *f, u64 index);
/* Mark a cache page dirty (written through a mapping). */
void filemap_mark_dirty(struct file_obj *f, struct page *page);
/* Cache pages with PG_dirty (a scan). */
u64 filemap_nr_dirty(struct file_obj *f);
/* "Write back": clear every dirty bit; returns how many were dirty. Mappers keep their
 * writable PTEs (no write-protect pass), so later writes through them are seen at unmap. */
u64 filemap_writeback(struct file_obj *f);

#endif
