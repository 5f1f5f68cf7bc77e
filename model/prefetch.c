/*
 * The L2 stream prefetcher (prefetch.h): a small fully associative table of pages, each
 * with the last line missed on, a direction once a stream is found, and how far ahead the
 * stream has already fetched.
 */
#include <stdlib.h>
#include "model/prefetch.h"

int pf_init(struct prefetcher *pf, unsigned streams, unsigned lines)
{
	pf->nstreams = streams;
	pf->lines = lines;
	pf->clock = 0;
	pf->s = NULL;
	if (!streams || !lines)
		return 0;
	pf->s = calloc(streams, sizeof(*pf->s));
	return pf->s ? 0 : -1;
}

void pf_free(struct prefetcher *pf)
{
	free(pf->s);
	pf->s = NULL;
	pf->nstreams = 0;
}

/* The entry of page (line >> 6), made over the LRU one if there is none; *fresh says so. */
static struct pf_stream *pf_entry(struct prefetcher *pf, u64 page, bool *fresh)
{
	struct pf_stream *lru = &pf->s[0];
	for (unsigned i = 0; i < pf->nstreams; i++) {
		struct pf_stream *e = &pf->s[i];
		if (e->page == page + 1) {
			*fresh = false;
			return e;
		}
		if (e->stamp < lru->stamp)
			lru = e;	/* free entries have stamp 0: they go first */
	}
	*fresh = true;
	lru->page = page + 1;
	lru->dir = 0;
	return lru;
}

unsigned pf_observe(struct prefetcher *pf, u64 line, u64 *out)
{
	if (!pf->s)
		return 0;
	u64 page = line / PF_PAGE_LINES;
	bool fresh;
	struct pf_stream *e = pf_entry(pf, page, &fresh);
	e->stamp = ++pf->clock;
	if (fresh) {
		e->last = e->ahead = line;
		return 0;
	}
	if (line == e->last)
		return 0;
	/* how far the access is from the last one, in the stream's direction (or +1's) */
	int64_t step = (int64_t)(line - e->last);
	if (e->dir && step * e->dir > 0 && step * e->dir <= (int64_t)pf->lines) {
		/* continues the stream: lines it skipped hit the L1d */
	} else if (step == 1 || step == -1) {
		e->dir = (int)step;	/* two consecutive misses: a stream */
		e->ahead = line;
	} else {
		e->dir = 0;	/* not a stream (any more): start over here */
		e->last = e->ahead = line;
		return 0;
	}
	e->last = line;
	/* lines L+d .. L+d*lines, inside the page, past what the stream already asked for */
	int64_t d = e->dir;
	int64_t lo = (int64_t)(page * PF_PAGE_LINES), hi = lo + PF_PAGE_LINES - 1;
	int64_t from = (int64_t)line + d, to = (int64_t)line + d * (int64_t)pf->lines;
	if ((int64_t)(e->ahead - line) * d > 0)
		from = (int64_t)e->ahead + d;	/* asked for up to ahead already */
	if (to < lo)
		to = lo;
	if (to > hi)
		to = hi;
	unsigned n = 0;
	for (int64_t x = from; (to - x) * d >= 0; x += d)
		out[n++] = (u64)x;
	if (n)
		e->ahead = out[n - 1];
	return n;
}
