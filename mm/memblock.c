/*
 * memblock: sorted arrays of non-overlapping ranges. Adding merges overlaps and neighbours,
 * removing splits, so the arrays stay canonical and the boot code can feed firmware data
 * in any order.
 */
#include "mm/memblock.h"

struct memblock memblock = { .alloc_limit = ~0ULL };

void memblock_reset(void)
{
	memblock.memory.cnt = 0;
	memblock.reserved.cnt = 0;
	memblock.alloc_limit = ~0ULL;
}

static void remove_at(struct memblock_type *t, int i)
{
	for (int j = i; j < t->cnt - 1; j++)
		t->r[j] = t->r[j + 1];
	t->cnt--;
}

static int insert_at(struct memblock_type *t, int i, phys_addr_t base, u64 size)
{
	if (t->cnt >= MEMBLOCK_MAX)
		return -1;
	for (int j = t->cnt; j > i; j--)
		t->r[j] = t->r[j - 1];
	t->r[i].base = base;
	t->r[i].size = size;
	t->cnt++;
	return 0;
}

static int type_add(struct memblock_type *t, phys_addr_t base, u64 size)
{
	if (size == 0)
		return 0;
	phys_addr_t end = base + size;
	if (end < base)		/* wraps: clamp to the top of the address space */
		end = ~0ULL;
	int i = 0;
	while (i < t->cnt && t->r[i].base + t->r[i].size < base)
		i++;
	/* absorb every region that overlaps or touches [base, end) */
	while (i < t->cnt && t->r[i].base <= end) {
		phys_addr_t rb = t->r[i].base, re = rb + t->r[i].size;
		base = MIN(base, rb);
		end = MAX(end, re);
		remove_at(t, i);
	}
	return insert_at(t, i, base, end - base);
}

static int type_remove(struct memblock_type *t, phys_addr_t base, u64 size)
{
	phys_addr_t end = base + size;
	if (end < base)
		end = ~0ULL;
	for (int i = 0; i < t->cnt;) {
		phys_addr_t rb = t->r[i].base, re = rb + t->r[i].size;
		if (re <= base || rb >= end) {
			i++;
			continue;
		}
		remove_at(t, i);
		if (rb < base) {
			if (insert_at(t, i, rb, base - rb))
				return -1;
			i++;
		}
		if (re > end) {
			if (insert_at(t, i, end, re - end))
				return -1;
			i++;
		}
	}
	return 0;
}

int memblock_add(phys_addr_t base, u64 size) { return type_add(&memblock.memory, base, size); }
int memblock_reserve(phys_addr_t base, u64 size) { return type_add(&memblock.reserved, base, size); }
int memblock_remove(phys_addr_t base, u64 size) { return type_remove(&memblock.memory, base, size); }

static bool type_contains(const struct memblock_type *t, phys_addr_t a)
{
	for (int i = 0; i < t->cnt; i++)
		if (a >= t->r[i].base && a - t->r[i].base < t->r[i].size)
			return true;
	return false;
}

bool memblock_is_reserved(phys_addr_t a) { return type_contains(&memblock.reserved, a); }
bool memblock_is_memory(phys_addr_t a) { return type_contains(&memblock.memory, a); }

u64 memblock_total(const struct memblock_type *t)
{
	u64 s = 0;
	for (int i = 0; i < t->cnt; i++)
		s += t->r[i].size;
	return s;
}

phys_addr_t memblock_end_of_ram(void)
{
	const struct memblock_type *m = &memblock.memory;
	return m->cnt ? m->r[m->cnt - 1].base + m->r[m->cnt - 1].size : 0;
}

phys_addr_t memblock_alloc(u64 size, u64 align)
{
	const struct memblock_type *m = &memblock.memory, *rs = &memblock.reserved;
	if (size == 0 || align == 0 || (align & (align - 1)))
		return 0;
	/* Walk memory regions from the top; inside each, try candidate ends below every
	 * reserved range start so the first fit found is the highest one. */
	for (int i = m->cnt - 1; i >= 0; i--) {
		phys_addr_t lo = m->r[i].base, hi = lo + m->r[i].size;
		if (hi > memblock.alloc_limit)
			hi = memblock.alloc_limit;
		while (hi > lo && hi - lo >= size) {
			phys_addr_t cand = ALIGN_DOWN(hi - size, align);
			if (cand < lo || cand == 0)
				break;
			/* find the highest reserved range overlapping [cand, cand+size) */
			int clash = -1;
			for (int j = 0; j < rs->cnt; j++)
				if (rs->r[j].base < cand + size && rs->r[j].base + rs->r[j].size > cand)
					clash = j;
			if (clash < 0) {
				if (memblock_reserve(cand, size))
					return 0;
				return cand;
			}
			hi = rs->r[clash].base;
		}
	}
	return 0;
}
