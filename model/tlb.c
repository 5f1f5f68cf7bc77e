/*
 * TLBs: an L1 dTLB with separate 4 KiB and 2 MiB arrays and a second-level TLB (STLB)
 * holding both sizes, all set-associative with true LRU (as the caches). A 1 GiB page is
 * held as the 2 MiB entry covering the access (no 1 GiB arrays are modelled). Entries
 * remember the global bit so a CR3 write can keep them. Tags carry the page size, so a
 * 4 KiB and a 2 MiB entry never alias in the STLB.
 */
#include <stdlib.h>
#include "model/model.h"

static int arr_init(struct tlb_array *a, u64 entries, u64 ways)
{
	if (!ways || entries % ways)
		return -1;
	a->ways = (u32)ways;
	a->sets = (u32)(entries / ways);
	a->set_mask = (a->sets & (a->sets - 1)) == 0 ? a->sets - 1 : ~0ull;
	a->clock = 0;
	a->w = calloc(entries, sizeof(*a->w));
	a->mru = calloc(a->sets, sizeof(*a->mru));
	return a->w && a->mru ? 0 : -1;
}

int tlb_init(struct tlb *t, const struct profile *p)
{
	t->last_2m = false;	/* a caller's struct may be uninitialised (the host test's is on the stack) */
	if (arr_init(&t->d4k, p->dtlb4k_entries, p->dtlb4k_ways) ||
	    arr_init(&t->d2m, p->dtlb2m_entries, p->dtlb2m_ways) ||
	    arr_init(&t->stlb, p->stlb_entries, p->stlb_ways)) {
		tlb_free(t);
		return -1;
	}
	return 0;
}

void tlb_free(struct tlb *t)
{
	struct tlb_array *arrs[3] = { &t->d4k, &t->d2m, &t->stlb };
	for (int i = 0; i < 3; i++) {
		free(arrs[i]->w);
		free(arrs[i]->mru);
		arrs[i]->w = NULL;
		arrs[i]->mru = NULL;
	}
}

static inline u64 tag_of(u64 va, bool is_2m)
{
	u64 pn = is_2m ? va >> 21 : va >> 12;
	return ((pn << 1) | is_2m) + 1;
}

static inline u64 set_index(const struct tlb_array *a, u64 va, bool is_2m)
{
	u64 pn = is_2m ? va >> 21 : va >> 12;
	return a->set_mask != ~0ull ? pn & a->set_mask : pn % a->sets;
}

static bool arr_lookup(struct tlb_array *a, u64 va, bool is_2m, bool *global)
{
	u64 si = set_index(a, va, is_2m);
	struct tlb_way *s = a->w + si * a->ways;
	u64 tag = tag_of(va, is_2m);
	if (s[a->mru[si]].tag == tag) {	/* the set's most recent way: order unchanged */
		if (global)
			*global = s[a->mru[si]].global;
		return true;
	}
	for (u32 i = 0; i < a->ways; i++)
		if (s[i].tag == tag) {
			s[i].stamp = ++a->clock;
			a->mru[si] = (u16)i;
			if (global)
				*global = s[i].global;
			return true;
		}
	return false;
}

static void arr_fill(struct tlb_array *a, u64 va, bool is_2m, bool global)
{
	u64 si = set_index(a, va, is_2m);
	struct tlb_way *s = a->w + si * a->ways, *victim = s;
	u64 tag = tag_of(va, is_2m);
	for (u32 i = 0; i < a->ways; i++) {
		if (s[i].tag == tag) {
			victim = &s[i];
			break;
		}
		if (s[i].stamp < victim->stamp)
			victim = &s[i];
	}
	victim->tag = tag;
	victim->global = global;
	victim->stamp = ++a->clock;
	a->mru[si] = (u16)(victim - s);
}

static void arr_drop(struct tlb_array *a, u64 va, bool is_2m)
{
	struct tlb_way *s = a->w + set_index(a, va, is_2m) * a->ways;
	u64 tag = tag_of(va, is_2m);
	for (u32 i = 0; i < a->ways; i++)
		if (s[i].tag == tag) {
			s[i].tag = 0;
			s[i].stamp = 0;
		}
}

static void arr_flush(struct tlb_array *a, bool keep_global)
{
	u64 n = (u64)a->sets * a->ways;
	for (u64 i = 0; i < n; i++)
		if (!(keep_global && a->w[i].global)) {
			a->w[i].tag = 0;
			a->w[i].stamp = 0;
		}
}

int tlb_lookup(struct tlb *t, u64 va)
{
	bool g;
	/* an address is in at most one L1 array: the order of the probes changes nothing */
	if (t->last_2m) {
		if (arr_lookup(&t->d2m, va, true, NULL))
			return TLB_L1_HIT;
		if (arr_lookup(&t->d4k, va, false, NULL)) {
			t->last_2m = false;
			return TLB_L1_HIT;
		}
	} else {
		if (arr_lookup(&t->d4k, va, false, NULL))
			return TLB_L1_HIT;
		if (arr_lookup(&t->d2m, va, true, NULL)) {
			t->last_2m = true;
			return TLB_L1_HIT;
		}
	}
	if (arr_lookup(&t->stlb, va, false, &g)) {
		arr_fill(&t->d4k, va, false, g);
		return TLB_STLB_HIT;
	}
	if (arr_lookup(&t->stlb, va, true, &g)) {
		arr_fill(&t->d2m, va, true, g);
		return TLB_STLB_HIT;
	}
	return TLB_MISS;
}

void tlb_fill(struct tlb *t, u64 va, bool is_2m, bool global)
{
	arr_fill(&t->stlb, va, is_2m, global);
	arr_fill(is_2m ? &t->d2m : &t->d4k, va, is_2m, global);
}

void tlb_invlpg(struct tlb *t, u64 va)
{
	arr_drop(&t->d4k, va, false);
	arr_drop(&t->d2m, va, true);
	arr_drop(&t->stlb, va, false);
	arr_drop(&t->stlb, va, true);
}

void tlb_flush(struct tlb *t, bool keep_global)
{
	arr_flush(&t->d4k, keep_global);
	arr_flush(&t->d2m, keep_global);
	arr_flush(&t->stlb, keep_global);
}

unsigned tlb_count(const struct tlb *t, bool global_only)
{
	const struct tlb_array *arrs[3] = { &t->d4k, &t->d2m, &t->stlb };
	unsigned n = 0;
	for (int a = 0; a < 3; a++)
		for (u64 i = 0; i < (u64)arrs[a]->sets * arrs[a]->ways; i++)
			if (arrs[a]->w[i].tag && (!global_only || arrs[a]->w[i].global))
				n++;
	return n;
}
