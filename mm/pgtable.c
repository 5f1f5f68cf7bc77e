/*
 * Page tables: walk, table pages, map/unmap/protect/copy over ranges. See mm/pgtable.h
 * for the conventions (levels, pt_used, special leaves, locking).
 */
#include "mm/pgtable.h"
#include "mm/mmu_gather.h"
#include "mm/tlbflush.h"
#include "mm/rmap.h"
#include "mm/page_alloc.h"
#include "kernel/events.h"
#include "kernel/panic.h"
#include "kernel/string.h"
#include "kernel/options.h"

#ifndef BAREMM_HOST
#include "arch/x86_64/cpu.h"
#endif

u64 pte_nx = _PAGE_NX;

/* How copy and zap scan a last-level table. Linux reads every slot of the range (512
 * for a whole table); `used` stops once the table's present entries (pt_used) have all
 * been seen, so a sparse table costs its entries instead of 512 reads. */
DEFINE_VARIANT_ENUM(pt_scan, "pt_scan", PT_SCAN_FULL, "fork copy and unmap zap of a page table",
		    PT_SCAN_LIST);

void pgtable_init_nx(void)
{
#ifndef BAREMM_HOST
	pte_nx = (rdmsr(MSR_EFER) & EFER_NXE) ? _PAGE_NX : 0;
#endif
}

static inline struct page *table_page_of(const u64 *slot)
{
	return virt_to_page((const void *)((uintptr_t)slot & ~(uintptr_t)(PAGE_SIZE - 1)));
}

struct page *pt_table_alloc(int level)
{
	struct page *p = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!p)
		return NULL;
	page_set_flags(p, PG_pgtable);
	p->pt_used = 0;
	p->private = (u64)level;
	count_event(EV_PGTABLE_ALLOC);
	return p;
}

void pt_table_dtor(struct page *p)
{
	if (unlikely(!(p->flags & PG_pgtable)))
		panic("pgtable: freeing pfn %#llx which is not a table page",
		      (unsigned long long)page_to_pfn(p));
	if (unlikely(p->pt_used))
		panic("pgtable: freeing level-%llu table pfn %#llx with %u entries in use",
		      (unsigned long long)p->private, (unsigned long long)page_to_pfn(p),
		      p->pt_used);
	page_clear_flags(p, PG_pgtable);
	p->private = 0;
	count_event(EV_PGTABLE_FREE);
}

void pt_table_free(struct page *p)
{
	pt_table_dtor(p);
	free_page(p);
}

int pt_init(struct pgtable *pt, const u64 *kernel_top)
{
	struct page *p = pt_table_alloc(PT_LEVELS);
	if (!p)
		return -1;
	pt->pgd = page_address(p);
	pt->nr_tables = 0;
	if (kernel_top)
		memcpy(&pt->pgd[PGD_KERNEL_FIRST], &kernel_top[PGD_KERNEL_FIRST],
		       (PT_ENTRIES - PGD_KERNEL_FIRST) * sizeof(u64));
	return 0;
}

void pt_destroy(struct pgtable *pt)
{
	struct page *p = virt_to_page(pt->pgd);
	if (unlikely(pt->nr_tables || p->pt_used))
		panic("pgtable: destroying a root with %ld tables / %u top entries still in use",
		      pt->nr_tables, p->pt_used);
	pt_table_free(p);
	pt->pgd = NULL;
}

void pt_set(u64 *slot, u64 val)
{
	if (unlikely(pte_present(READ_ONCE(*slot))))
		panic("pgtable: pt_set over a present entry %#llx at %p",
		      (unsigned long long)*slot, (void *)slot);
	if (pte_present(val))
		table_page_of(slot)->pt_used++;
	WRITE_ONCE(*slot, val);
}

u64 pt_clear(u64 *slot)
{
	u64 old = atomic_xchg(slot, 0UL);
	if (pte_present(old))
		table_page_of(slot)->pt_used--;
	return old;
}

u64 pt_replace(u64 *slot, u64 val)
{
	u64 old = atomic_xchg(slot, val);
	BUG_ON(!pte_present(old) || !pte_present(val));
	return old;
}

u64 pt_modify(u64 *slot, u64 clear, u64 set)
{
	u64 old = READ_ONCE(*slot);
	while (!atomic_cmpxchg(slot, &old, (old & ~clear) | set))
		;
	return old;
}

static inline bool is_leaf(u64 e, int level)
{
	return level == 1 || (level <= 3 && pte_huge(e));
}

u64 *pt_lookup(const struct pgtable *pt, u64 addr, int *level)
{
	u64 *table = pt->pgd;
	for (int l = PT_LEVELS; l >= 1; l--) {
		u64 *e = &table[pt_index(addr, l)];
		u64 v = READ_ONCE(*e);
		if (!pte_present(v))
			return NULL;
		if (is_leaf(v, l)) {
			if (level)
				*level = l;
			return e;
		}
		table = pt_entry_table(v);
	}
	return NULL;
}

u64 pt_get(const struct pgtable *pt, u64 addr)
{
	u64 *e = pt_lookup(pt, addr, NULL);
	return e ? READ_ONCE(*e) : 0;
}

/*
 * The slot at @level for @addr. Tables above @level are allocated when @alloc. NULL with
 * *err = 0 (table missing, !alloc), -1 (out of memory) or -2 (a huge leaf above @level).
 */
static u64 *slot_at(struct pgtable *pt, u64 addr, int level, bool alloc, int *err)
{
	u64 *table = pt->pgd;
	for (int l = PT_LEVELS; l > level; l--) {
		u64 *e = &table[pt_index(addr, l)];
		u64 v = READ_ONCE(*e);
		if (!pte_present(v)) {
			if (!alloc) {
				*err = 0;
				return NULL;
			}
			struct page *t = pt_table_alloc(l - 1);
			if (!t) {
				*err = -1;
				return NULL;
			}
			v = page_to_phys(t) | _PAGE_TABLE;
			pt_set(e, v);
			pt->nr_tables++;
		} else if (is_leaf(v, l)) {
			*err = -2;
			return NULL;
		}
		table = pt_entry_table(v);
	}
	return &table[pt_index(addr, level)];
}

u64 *pt_lookup_slot(const struct pgtable *pt, u64 addr)
{
	int err;
	return slot_at((struct pgtable *)pt, addr, 1, false, &err);
}

u64 *pt_alloc_slot(struct pgtable *pt, u64 addr)
{
	int err;
	return slot_at(pt, addr, 1, true, &err);
}

int pt_map_range(struct pgtable *pt, u64 va, phys_addr_t pa, u64 len, u64 flags, unsigned mflags)
{
	BUG_ON(!IS_ALIGNED(va, PAGE_SIZE) || !IS_ALIGNED(pa, PAGE_SIZE) || !IS_ALIGNED(len, PAGE_SIZE));
	u64 end = va + len;
	flags = (flags & ~(PTE_ADDR_MASK | _PAGE_PSE)) | _PAGE_PRESENT | _PAGE_SPECIAL;
	while (va < end) {
		int err = 0;
		bool huge = (mflags & PT_MAP_HUGE) && IS_ALIGNED(va, PMD_SIZE) &&
			    IS_ALIGNED(pa, PMD_SIZE) && end - va >= PMD_SIZE;
		int level = huge ? 2 : 1;
		u64 *slot = slot_at(pt, va, level, true, &err);
		if (!slot)
			return err;
		if (pte_present(READ_ONCE(*slot)))
			return -2;
		pt_set(slot, pa | flags | (huge ? _PAGE_PSE : 0));
		va += PT_LEVEL_SIZE(level);
		pa += PT_LEVEL_SIZE(level);
	}
	return 0;
}

/*
 * Turn the huge leaf at @slot (a level-@level entry) into a table of level-1 leaves
 * mapping the same memory with the same flags. The translations do not change, but a
 * TLB must never hold the huge entry and a small one for the same address at once (the
 * SDM leaves the result of such a mix undefined), so the leaf is first invalidated (made
 * non-present), then flushed on every CPU that may cache it, and only then is the table
 * installed. The children take the flags of the invalidated entry, so an accessed or
 * dirty bit set until the invalidation is kept. A CPU touching the range in between
 * faults and waits for the mm lock the caller holds. Returns false when out of memory
 * (nothing changed).
 */
static bool split_huge(struct pgtable *pt, u64 *slot, int level, u64 addr,
		       struct mmu_gather *tlb)
{
	struct page *t = pt_table_alloc(level - 1);
	if (!t)
		return false;
	u64 size = PT_LEVEL_SIZE(level);
	u64 haddr = addr & ~(size - 1);
	u64 v = pt_clear(slot);
	flush_tlb_mm_range_nofree(tlb->mm, haddr, haddr + size, level == 2 ? PMD_SHIFT : PUD_SHIFT);
	u64 *child = page_address(t);
	u64 child_size = PT_LEVEL_SIZE(level - 1);
	u64 base = v & PTE_ADDR_MASK & ~(size - 1);
	u64 fl = v & ~PTE_ADDR_MASK;
	if (level - 1 == 1)
		fl &= ~_PAGE_PSE;
	for (unsigned i = 0; i < PT_ENTRIES; i++)
		child[i] = (base + i * child_size) | fl;
	t->pt_used = PT_ENTRIES;
	pt->nr_tables++;
	pt_set(slot, page_to_phys(t) | _PAGE_TABLE);
	return true;
}

/* ---- unmap ---- */

struct zap_ctx {
	struct pgtable *pt;
	struct mmu_gather *tlb;
	struct pt_zap_stats *st;
};

static void zap_pte_table(struct zap_ctx *z, u64 *table, u64 addr, u64 end)
{
	struct mmu_gather *tlb = z->tlb;
	/* pt_scan=used: pt_used counts the table's present entries; once it is 0 nothing
	 * is left to zap, so a sparse table costs its present entries, not 512 slot reads.
	 * pt_scan=full (default, as Linux) reads every slot of the range. */
	const struct page *tp = virt_to_page(table);
	bool full = READ_ONCE(pt_scan) == PT_SCAN_FULL;
	for (; addr < end && (full || tp->pt_used); addr += PAGE_SIZE) {
		u64 *slot = &table[pt_index(addr, 1)];
		if (!pte_present(READ_ONCE(*slot)))
			continue;
		u64 old = pt_clear(slot);
		tlb_flush_pte_range(tlb, addr, PAGE_SIZE);
		if (pte_special(old)) {
			z->st->special++;
			continue;
		}
		struct page *page = pfn_to_page(pte_pfn(old));
		bool delay = false;
		if (page_test_flag(page, PG_shared)) {
			z->st->shared++;
			if (pte_dirty(old)) {
				/* written through this mapping: the page is dirty, and its map
				 * count stays up until every TLB has forgotten the entry */
				page_set_flags(page, PG_dirty);
				delay = true;
			}
		} else {
			z->st->anon++;
		}
		if (!delay)
			page_remove_rmap(page);
		if (__tlb_remove_page_size(tlb, page, delay, PAGE_SHIFT))
			tlb_flush_mmu(tlb);
	}
	/* Delayed rmaps: flush before this table is left (in Linux: before its lock is
	 * dropped), then drop the map counts. */
	if (tlb->delayed_rmap) {
		tlb_flush_mmu_tlbonly(tlb);
		tlb_flush_rmaps(tlb);
	}
}

/* Does [addr, next) cover the whole entry of @level at addr? If not, a huge leaf there
 * must be split before only part of it is unmapped or changed. */
static inline bool covers_entry(u64 addr, u64 next, int level)
{
	return IS_ALIGNED(addr, PT_LEVEL_SIZE(level)) && next - addr == PT_LEVEL_SIZE(level);
}

static void zap_level(struct zap_ctx *z, u64 *table, int level, u64 addr, u64 end)
{
	while (addr < end) {
		u64 next = pt_level_end(addr, end, level);
		u64 *slot = &table[pt_index(addr, level)];
		u64 v = READ_ONCE(*slot);
		if (!pte_present(v)) {
			addr = next;
			continue;
		}
		if (is_leaf(v, level)) {
			if (covers_entry(addr, next, level)) {
				(void)pt_clear(slot);
				tlb_track_range(z->tlb, addr, PT_LEVEL_SIZE(level), level);
				z->st->special++;
				addr = next;
				continue;
			}
			if (!split_huge(z->pt, slot, level, addr, z->tlb))
				panic("pgtable: out of memory splitting a %s leaf at %#llx for an unmap",
				      level == 2 ? "2 MiB" : "1 GiB", (unsigned long long)addr);
			v = READ_ONCE(*slot);
		}
		u64 *child = pt_entry_table(v);
		if (level - 1 == 1)
			zap_pte_table(z, child, addr, next);
		else
			zap_level(z, child, level - 1, addr, next);
		struct page *cp = virt_to_page(child);
		if (cp->pt_used == 0) {
			(void)pt_clear(slot);
			z->pt->nr_tables--;
			tlb_free_table_at(z->tlb, cp, addr, level - 1);
		}
		addr = next;
	}
}

void pt_unmap_range(struct pgtable *pt, u64 start, u64 end, struct mmu_gather *tlb,
		    struct pt_zap_stats *st)
{
	struct pt_zap_stats dummy = { 0, 0, 0 };
	BUG_ON(!IS_ALIGNED(start, PAGE_SIZE) || !IS_ALIGNED(end, PAGE_SIZE));
	BUG_ON(end > USER_VA_END || start > end);
	struct zap_ctx z = { pt, tlb, st ? st : &dummy };
	if (start < end)
		zap_level(&z, pt->pgd, PT_LEVELS, start, end);
}

/* ---- protection changes ---- */

#define PT_PROT_CHANGEABLE (_PAGE_PROT_MASK | _PAGE_ACCESSED | _PAGE_DIRTY)

static long protect_level(struct pgtable *pt, u64 *table, int level, u64 addr, u64 end,
			  u64 clear, u64 set, struct mmu_gather *tlb)
{
	long n = 0;
	while (addr < end) {
		u64 next = pt_level_end(addr, end, level);
		u64 *slot = &table[pt_index(addr, level)];
		u64 v = READ_ONCE(*slot);
		if (!pte_present(v)) {
			addr = next;
			continue;
		}
		if (is_leaf(v, level) && level > 1 &&
		    !covers_entry(addr, next, level)) {
			if (!split_huge(pt, slot, level, addr, tlb))
				return -1;
			v = READ_ONCE(*slot);
		}
		if (is_leaf(v, level)) {
			u64 old = pt_modify(slot, clear, set);
			if (((old & ~clear) | set) != old) {
				n++;
				tlb_track_range(tlb, addr, PT_LEVEL_SIZE(level), level);
			}
		} else {
			long r = protect_level(pt, pt_entry_table(v), level - 1, addr, next, clear, set, tlb);
			if (r < 0)
				return r;
			n += r;
		}
		addr = next;
	}
	return n;
}

long pt_protect_range(struct pgtable *pt, u64 start, u64 end, u64 clear, u64 set,
		      struct mmu_gather *tlb)
{
	BUG_ON(end > USER_VA_END || start > end);
	clear &= PT_PROT_CHANGEABLE;
	set &= PT_PROT_CHANGEABLE;
	return protect_level(pt, pt->pgd, PT_LEVELS, start, end, clear, set, tlb);
}

/* ---- fork-style copy ---- */

/* Copy one present leaf @v (at @slot in the source) into @dslot, fork-style. */
static void copy_leaf(u64 *slot, u64 v, u64 *dslot, struct pt_zap_stats *st)
{
	if (pte_special(v)) {
		pt_set(dslot, v);
		st->special++;
		return;
	}
	struct page *page = pfn_to_page(pte_pfn(v));
	if (page_test_flag(page, PG_shared)) {
		st->shared++;
	} else {
		/* private: copy on write for both sides */
		if (pte_write(v))
			v = pt_modify(slot, _PAGE_RW, 0) & ~_PAGE_RW;
		st->anon++;
	}
	get_page(page);
	page_add_rmap(page);
	pt_set(dslot, v);
}

/*
 * A last-level table: the destination table is found (or allocated) once, not walked
 * from the root per entry. pt_scan=full reads every slot of the range, as Linux;
 * pt_scan=used stops after the source's present entries (pt_used; entries before @addr
 * may make it an overcount, never an undercount).
 */
static int copy_pte_table(struct pgtable *dst, u64 *table, u64 addr, u64 end,
			  struct pt_zap_stats *st)
{
	/* full: a count that cannot run out (a table has 512 slots), so both modes run the
	 * same loop and a full scan costs the same per slot before and after the entry */
	unsigned left = READ_ONCE(pt_scan) == PT_SCAN_FULL ? ~0u : virt_to_page(table)->pt_used;
	u64 *dtable = NULL;
	for (; addr < end && left; addr += PAGE_SIZE) {
		unsigned idx = pt_index(addr, 1);
		u64 v = READ_ONCE(table[idx]);
		if (!pte_present(v))
			continue;
		left--;
		if (!dtable) {
			int err = 0;
			u64 *dslot = slot_at(dst, addr, 1, true, &err);
			if (!dslot)
				return -1;
			dtable = dslot - idx;
		}
		if (pte_present(READ_ONCE(dtable[idx])))
			continue;	/* already copied (overlapping calls) */
		copy_leaf(&table[idx], v, &dtable[idx], st);
	}
	return 0;
}

static int copy_level(struct pgtable *dst, struct pgtable *src, u64 *table, int level,
		      u64 addr, u64 end, struct pt_zap_stats *st)
{
	if (level == 1)
		return copy_pte_table(dst, table, addr, end, st);
	while (addr < end) {
		u64 next = pt_level_end(addr, end, level);
		u64 *slot = &table[pt_index(addr, level)];
		u64 v = READ_ONCE(*slot);
		if (!pte_present(v)) {
			addr = next;
			continue;
		}
		if (!is_leaf(v, level)) {
			if (copy_level(dst, src, pt_entry_table(v), level - 1, addr, next, st))
				return -1;
			addr = next;
			continue;
		}
		int err = 0;
		u64 *dslot = slot_at(dst, addr, level, true, &err);
		if (!dslot)
			return -1;
		if (!pte_present(READ_ONCE(*dslot)))	/* else already copied (overlapping calls) */
			copy_leaf(slot, v, dslot, st);
		addr = next;
	}
	return 0;
}

int pt_copy_range(struct pgtable *dst, struct pgtable *src, u64 start, u64 end,
		  struct pt_zap_stats *st)
{
	struct pt_zap_stats dummy = { 0, 0, 0 };
	BUG_ON(end > USER_VA_END || start > end);
	return copy_level(dst, src, src->pgd, PT_LEVELS, start, end, st ? st : &dummy);
}

/* ---- accessed bits, counting ---- */

bool pt_test_and_clear_young(struct pgtable *pt, u64 addr)
{
	u64 *e = pt_lookup(pt, addr, NULL);
	if (!e)
		return false;
	return pte_young(pt_modify(e, _PAGE_ACCESSED, 0));
}

static long count_level(const u64 *table, int level, unsigned first, unsigned last)
{
	long n = 0;
	for (unsigned i = first; i < last; i++) {
		u64 v = READ_ONCE(table[i]);
		if (!pte_present(v) || is_leaf(v, level))
			continue;
		n += 1 + (level - 1 > 1 ? count_level(pt_entry_table(v), level - 1, 0, PT_ENTRIES) : 0);
	}
	return n;
}

long pt_count_tables(const struct pgtable *pt)
{
	return count_level(pt->pgd, PT_LEVELS, 0, PGD_KERNEL_FIRST);
}
