/*
 * Set-associative caches with 64-byte lines and true LRU: every way carries the time of
 * its last use; a miss replaces an invalid way if the set has one, else the way used
 * longest ago. Sets are indexed by line number modulo the set count (a mask when it is a
 * power of two; LLCs of 11 ways have a set count that is not).
 */
#include <stdlib.h>
#include "model/model.h"

int cache_init(struct cache *c, u64 kib, u64 ways)
{
	u64 lines = kib * 1024 >> LINE_SHIFT;
	if (!ways || lines % ways)
		return -1;
	c->ways = (u32)ways;
	c->sets = (u32)(lines / ways);
	c->set_mask = (c->sets & (c->sets - 1)) == 0 ? c->sets - 1 : 0;
	if (c->sets == 1)
		c->set_mask = 0;	/* cache_set() then takes line % 1 = 0 */
	c->clock = 0;
	c->w = calloc(lines, sizeof(*c->w));
	c->mru = calloc(c->sets, 1);
	if (!c->w || !c->mru) {
		cache_free(c);
		return -1;
	}
	return 0;
}

void cache_free(struct cache *c)
{
	free(c->w);
	free(c->mru);
	c->w = NULL;
	c->mru = NULL;
}

bool cache_access(struct cache *c, u64 line)
{
	u64 si = cache_set(c, line);
	struct cache_way *set = c->w + si * c->ways;
	u64 tag = line + 1;
	if (set[c->mru[si]].tag == tag)
		return true;	/* already the set's most recent way: LRU order unchanged */
	struct cache_way *victim = set;
	for (u32 i = 0; i < c->ways; i++) {
		if (set[i].tag == tag) {
			set[i].stamp = ++c->clock;
			c->mru[si] = (u8)i;
			return true;
		}
		if (set[i].stamp < victim->stamp)
			victim = &set[i];	/* invalid ways have stamp 0: chosen first */
	}
	victim->tag = tag;
	victim->stamp = ++c->clock;
	c->mru[si] = (u8)(victim - set);
	return false;
}

bool cache_contains(const struct cache *c, u64 line)
{
	const struct cache_way *set = c->w + cache_set(c, line) * c->ways;
	for (u32 i = 0; i < c->ways; i++)
		if (set[i].tag == line + 1)
			return true;
	return false;
}

bool cache_invalidate(struct cache *c, u64 line)
{
	struct cache_way *set = c->w + cache_set(c, line) * c->ways;
	for (u32 i = 0; i < c->ways; i++)
		if (set[i].tag == line + 1) {
			set[i].tag = 0;
			set[i].stamp = 0;
			return true;
		}
	return false;
}

int hier_access(const struct hierarchy *h, u64 line)
{
	if (cache_access(h->l1, line))
		return LVL_L1;
	if (cache_access(h->l2, line))
		return LVL_L2;
	if (cache_access(h->llc, line))
		return LVL_LLC;
	for (unsigned i = 0; i < h->nllc; i++)
		if (&h->llcs[i] != h->llc && cache_contains(&h->llcs[i], line))
			return LVL_LLC_REMOTE;
	return LVL_MEM;
}
