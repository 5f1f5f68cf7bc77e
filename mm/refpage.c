/* Reference pages: see mm/refpage.h. */
#include "mm/refpage.h"
#include "mm/rmap.h"
#include "mm/page_alloc.h"
#include "kernel/spinlock.h"
#include "kernel/panic.h"

static struct refpage pool[REFPAGE_POOL];
static DEFINE_SPINLOCK(pool_lock);
static struct refpage *default_ref;

struct refpage *refpage_create(u64 pattern)
{
	struct page *p = alloc_page(GFP_KERNEL);
	if (!p)
		return NULL;
	u64 *w = page_address(p);
	for (unsigned i = 0; i < PAGE_SIZE / sizeof(u64); i++)
		w[i] = pattern;
	unsigned long fl = spin_lock_irqsave(&pool_lock);
	struct refpage *r = NULL;
	for (unsigned i = 0; i < REFPAGE_POOL; i++) {
		if (!pool[i].refs) {
			r = &pool[i];
			r->refs = 1;
			break;
		}
	}
	spin_unlock_irqrestore(&pool_lock, fl);
	if (!r) {
		free_page(p);
		return NULL;
	}
	page_set_flags(p, PG_zero);
	p->private = (u64)(r - pool) + 1;	/* non-zero: a reference page (not the zero page) */
	r->page = p;
	r->pattern = pattern;
	return r;
}

void refpage_get(struct refpage *r)
{
	unsigned long fl = spin_lock_irqsave(&pool_lock);
	BUG_ON(r->refs <= 0);
	r->refs++;
	spin_unlock_irqrestore(&pool_lock, fl);
}

void refpage_put(struct refpage *r)
{
	unsigned long fl = spin_lock_irqsave(&pool_lock);
	s32 left = --r->refs;
	BUG_ON(left < 0);
	struct page *p = left ? NULL : r->page;
	if (!left)
		r->page = NULL;
	spin_unlock_irqrestore(&pool_lock, fl);
	if (p) {
		page_clear_flags(p, PG_zero);
		p->private = 0;
		free_page(p);
	}
}

struct refpage *refpage_default(void)
{
	return default_ref;
}

void refpage_init_default(void)
{
	if (!default_ref)
		default_ref = refpage_create(REFPAGE_DEFAULT_PATTERN);
	BUG_ON(!default_ref);
}
