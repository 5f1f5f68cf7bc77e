/*
 * Reference pages: a read-only page holding a pattern, mapped by reads of
 * reference-page-backed anonymous memory (VM_REFPAGE regions, `refpage_init=refpage`) and
 * copied into a private page on the first write. One page serves every mapper, so reading
 * such memory costs no RSS.
 *
 * A reference page has PG_zero (never freed while the object lives) and is always mapped
 * with _PAGE_SPECIAL (no refcount or map count per mapping); the object's reference count
 * is held by regions (vm_mmap takes one). Objects come from a small static pool.
 */
#ifndef BAREMM_REFPAGE_H
#define BAREMM_REFPAGE_H

#include "mm/page.h"
#include "kernel/options.h"

/* The `refpage_init` variant (mm/fault.c): how new memory in VM_REFPAGE regions gets
 * its contents. */
#define REFPAGE_INIT_LIST(X)                                                                \
	X(REFPAGE_INIT_ZEROPAGE, "zeropage", "demand-zero anonymous")                       \
	X(REFPAGE_INIT_MEMSET, "memset", "a fresh page filled with the pattern at the fault") \
	X(REFPAGE_INIT_REFPAGE, "refpage",                                                  \
	  "reads map the shared reference page, a write copies it")
enum { REFPAGE_INIT_LIST(OPTION_ENUM_CONST) };
DECLARE_OPTION_ENUM(refpage_init);

#define REFPAGE_POOL 32
#define REFPAGE_DEFAULT_PATTERN 0x5a5aa5a5c3c33c3cULL

struct refpage {
	struct page *page;	/* the contents: @pattern repeated */
	u64 pattern;
	s32 refs;		/* 0: the pool slot is free */
};

/* A reference page filled with the 64-bit @pattern; one reference. NULL when out of
 * pages or pool slots. */
struct refpage *refpage_create(u64 pattern);
void refpage_get(struct refpage *r);
void refpage_put(struct refpage *r);
/* The default reference page (REFPAGE_DEFAULT_PATTERN), created by mm_subsys_init(). */
struct refpage *refpage_default(void);
/* Create the default reference page (mm_subsys_init(), once). */
void refpage_init_default(void);
/* Is @page some reference page's contents? */
static inline bool page_is_refpage(const struct page *p)
{
	return (p->flags & PG_zero) && p->private != 0;
}

#endif
