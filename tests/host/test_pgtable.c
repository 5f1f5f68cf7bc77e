/* Host tests of mm/pgtable.c over fake physical memory (tests/host/vm_fake_alloc.c). */
#include "htest.h"
#include "vm_fake_alloc.h"
#include "mm/pgtable.h"
#include "mm/mmu_gather.h"
#include "mm/rmap.h"
#include "mm/tlbflush.h"
#include "kernel/events.h"

#define NPAGES 8192
static struct pgtable pt;
static struct mm_struct *const FAKE_MM = (struct mm_struct *)0;

static void setup(void)
{
	fake_mem_init(NPAGES);
	if (pt_init(&pt, kernel_pml4))
		abort();
}

/* Tear down the root (all user tables must be gone) and check every page came back. */
static int teardown_ok(void)
{
	struct mmu_gather tlb;
	tlb_gather_mmu_fullmm(&tlb, FAKE_MM);
	pt_unmap_range(&pt, 0, USER_VA_END, &tlb, NULL);
	tlb_finish_mmu(&tlb);
	long left = pt.nr_tables;
	pt_destroy(&pt);
	return left == 0 && nr_free_pages() == NPAGES &&
	       event_sum(EV_PGTABLE_ALLOC) == event_sum(EV_PGTABLE_FREE);
}

static void unmap(u64 start, u64 end)
{
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, FAKE_MM);
	pt_unmap_range(&pt, start, end, &tlb, NULL);
	tlb_finish_mmu(&tlb);
}

static long protect(u64 start, u64 end, u64 clear, u64 set)
{
	struct mmu_gather tlb;
	tlb_gather_mmu(&tlb, FAKE_MM);
	long n = pt_protect_range(&pt, start, end, clear, set, &tlb);
	tlb_finish_mmu(&tlb);
	return n;
}

/* Physical address @va translates to (or ~0). */
static u64 translate(u64 va)
{
	int level;
	u64 *e = pt_lookup(&pt, va, &level);
	if (!e)
		return ~0UL;
	u64 size = PT_LEVEL_SIZE(level);
	return (pte_phys(*e) & ~(size - 1)) + (va & (size - 1));
}

HTEST(init_copies_kernel_half)
{
	setup();
	HT_EXPECT_EQ(pt.pgd[255], 0);
	HT_EXPECT_EQ(pt.pgd[256], kernel_pml4[256]);
	HT_EXPECT_EQ(pt.pgd[511], kernel_pml4[511]);
	HT_EXPECT_EQ(pt.nr_tables, 0);
	HT_EXPECT(teardown_ok());
}

HTEST(map_one_page)
{
	setup();
	u64 va = 0x400000, pa = 0x12345000;
	HT_ASSERT(pt_map_range(&pt, va, pa, PAGE_SIZE, _PAGE_RW | _PAGE_NX, 0) == 0);
	int level = 0;
	u64 *e = pt_lookup(&pt, va, &level);
	HT_ASSERT(e);
	HT_EXPECT_EQ(level, 1);
	HT_EXPECT_EQ(pte_phys(*e), pa);
	HT_EXPECT(pte_write(*e) && (*e & _PAGE_NX) && pte_special(*e) && !(*e & _PAGE_USER));
	HT_EXPECT_EQ(pt.nr_tables, 3);
	HT_EXPECT_EQ(pt_count_tables(&pt), 3);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_ALLOC), 4);	/* + the root */
	HT_EXPECT(pt_lookup(&pt, va + PAGE_SIZE, NULL) == NULL);
	HT_EXPECT(pt_lookup_slot(&pt, va + PAGE_SIZE) != NULL);	/* same table, empty slot */
	HT_EXPECT(pt_lookup_slot(&pt, va + PMD_SIZE) == NULL);	/* no table there */
	HT_EXPECT_EQ(pt_map_range(&pt, va, pa, PAGE_SIZE, 0, 0), -2);	/* already mapped */
	HT_EXPECT(teardown_ok());
}

HTEST(map_unmap_across_table_boundaries)
{
	setup();
	/* 6 pages straddling the 512 GiB boundary: a separate PUD/PMD/PT on each side */
	u64 va = PGDIR_SIZE - 3 * PAGE_SIZE, pa = 0x40000000;
	HT_ASSERT(pt_map_range(&pt, va, pa, 6 * PAGE_SIZE, _PAGE_RW, 0) == 0);
	HT_EXPECT_EQ(pt.nr_tables, 6);
	for (int i = 0; i < 6; i++)
		HT_EXPECT_EQ(translate(va + i * PAGE_SIZE), pa + i * PAGE_SIZE);
	/* 2 pages straddling a 1 GiB boundary and a 2 MiB boundary */
	u64 vb = 5 * PUD_SIZE - PAGE_SIZE;
	HT_ASSERT(pt_map_range(&pt, vb, 0x80000000, 2 * PAGE_SIZE, 0, 0) == 0);
	HT_EXPECT_EQ(pt.nr_tables, 6 + 4);	/* under the low side's PUD: 2 PMD, 2 PT */
	/* unmap the middle of the first range: the tables on both sides stay */
	unmap(va + 2 * PAGE_SIZE, va + 4 * PAGE_SIZE);
	HT_EXPECT_EQ(translate(va + 1 * PAGE_SIZE), pa + PAGE_SIZE);
	HT_EXPECT_EQ(translate(va + 2 * PAGE_SIZE), ~0UL);
	HT_EXPECT_EQ(translate(va + 3 * PAGE_SIZE), ~0UL);
	HT_EXPECT_EQ(translate(va + 4 * PAGE_SIZE), pa + 4 * PAGE_SIZE);
	HT_EXPECT_EQ(pt.nr_tables, 10);
	/* unmap the low side fully: its PMD and PT go, the PUD stays for vb */
	unmap(va, PGDIR_SIZE);
	HT_EXPECT_EQ(pt.nr_tables, 8);
	HT_EXPECT_EQ(pt_count_tables(&pt), 8);
	HT_EXPECT(teardown_ok());
}

HTEST(huge_alignment_edges)
{
	setup();
	/* va and pa both 4 KiB below a 2 MiB boundary: 4K, 2M, 2M, 4K */
	u64 va = PMD_SIZE - PAGE_SIZE, pa = 0x10000000 + PMD_SIZE - PAGE_SIZE;
	u64 len = 2 * PMD_SIZE + 2 * PAGE_SIZE;
	HT_ASSERT(pt_map_range(&pt, va, pa, len, _PAGE_RW, PT_MAP_HUGE) == 0);
	int level;
	HT_ASSERT(pt_lookup(&pt, va, &level));
	HT_EXPECT_EQ(level, 1);
	HT_ASSERT(pt_lookup(&pt, PMD_SIZE, &level));
	HT_EXPECT_EQ(level, 2);
	HT_ASSERT(pt_lookup(&pt, 2 * PMD_SIZE + 0x1234, &level));
	HT_EXPECT_EQ(level, 2);
	HT_ASSERT(pt_lookup(&pt, 3 * PMD_SIZE, &level));
	HT_EXPECT_EQ(level, 1);
	for (u64 off = 0; off < len; off += PAGE_SIZE)
		HT_EXPECT_EQ(translate(va + off), pa + off);
	/* no slot under a huge leaf */
	HT_EXPECT(pt_lookup_slot(&pt, PMD_SIZE + PAGE_SIZE) == NULL);
	HT_EXPECT(pt_alloc_slot(&pt, PMD_SIZE + PAGE_SIZE) == NULL);
	/* misaligned pa: no huge leaves */
	HT_ASSERT(pt_map_range(&pt, 8 * PMD_SIZE, 0x20001000, PMD_SIZE, 0, PT_MAP_HUGE) == 0);
	HT_ASSERT(pt_lookup(&pt, 8 * PMD_SIZE, &level));
	HT_EXPECT_EQ(level, 1);
	/* exactly 2 MiB - 4 KiB at an aligned address: no huge leaf */
	HT_ASSERT(pt_map_range(&pt, 12 * PMD_SIZE, 0x40000000, PMD_SIZE - PAGE_SIZE, 0, PT_MAP_HUGE) == 0);
	HT_ASSERT(pt_lookup(&pt, 12 * PMD_SIZE, &level));
	HT_EXPECT_EQ(level, 1);
	HT_EXPECT(teardown_ok());
}

HTEST(partial_unmap_splits_huge_leaf)
{
	setup();
	u64 va = 4 * PMD_SIZE, pa = 0x60000000;
	HT_ASSERT(pt_map_range(&pt, va, pa, PMD_SIZE, _PAGE_RW, PT_MAP_HUGE) == 0);
	long before = pt.nr_tables;
	unmap(va + 5 * PAGE_SIZE, va + 6 * PAGE_SIZE);
	HT_EXPECT_EQ(pt.nr_tables, before + 1);
	HT_EXPECT_EQ(translate(va + 5 * PAGE_SIZE), ~0UL);
	HT_EXPECT_EQ(translate(va + 4 * PAGE_SIZE), pa + 4 * PAGE_SIZE);
	HT_EXPECT_EQ(translate(va + 511 * PAGE_SIZE), pa + 511 * PAGE_SIZE);
	int level;
	HT_ASSERT(pt_lookup(&pt, va, &level));
	HT_EXPECT_EQ(level, 1);
	HT_EXPECT(pte_write(pt_get(&pt, va)) && pte_special(pt_get(&pt, va)));
	/* the whole 2 MiB leaf at once: cleared at level 2 */
	HT_ASSERT(pt_map_range(&pt, 6 * PMD_SIZE, pa, PMD_SIZE, 0, PT_MAP_HUGE) == 0);
	unmap(6 * PMD_SIZE, 7 * PMD_SIZE);
	HT_EXPECT_EQ(translate(6 * PMD_SIZE), ~0UL);
	const struct fake_flush *f = fake_last_flush();
	HT_EXPECT_EQ(f->start, 6 * PMD_SIZE);
	HT_EXPECT_EQ(f->end, 7 * PMD_SIZE);
	HT_EXPECT_EQ(f->stride_shift, PMD_SHIFT);
	HT_EXPECT(teardown_ok());
}

/* split_huge: the huge leaf is invalidated, then flushed, then the table installed. */
static u64 split_va;
static int split_flushes_seen, split_flush_saw_present;
static void record_split_flush(const struct fake_flush *f)
{
	if (f->start != split_va || f->end != split_va + PMD_SIZE || f->stride_shift != PMD_SHIFT)
		return;
	split_flushes_seen++;
	int level;
	if (pt_lookup(&pt, split_va, &level))	/* anything still mapped there? */
		split_flush_saw_present++;
}

HTEST(split_invalidates_then_flushes_then_installs)
{
	setup();
	u64 va = 8 * PMD_SIZE, pa = 0x40000000;
	HT_ASSERT(pt_map_range(&pt, va, pa, PMD_SIZE, _PAGE_RW, PT_MAP_HUGE) == 0);
	split_va = va;
	split_flushes_seen = split_flush_saw_present = 0;
	fake_flush_hook = record_split_flush;
	u64 n0 = fake_nr_flushes;
	/* a protection change of one page splits the leaf */
	HT_EXPECT_EQ(protect(va + 3 * PAGE_SIZE, va + 4 * PAGE_SIZE, _PAGE_RW, 0), 1);
	fake_flush_hook = NULL;
	HT_EXPECT_EQ(split_flushes_seen, 1);
	HT_EXPECT_EQ(split_flush_saw_present, 0);	/* flushed while invalid */
	HT_EXPECT(fake_nr_flushes >= n0 + 2);		/* the split's flush, then the gather's */
	int level;
	HT_ASSERT(pt_lookup(&pt, va, &level));
	HT_EXPECT_EQ(level, 1);
	HT_EXPECT_EQ(translate(va + 511 * PAGE_SIZE), pa + 511 * PAGE_SIZE);
	HT_EXPECT(!pte_write(pt_get(&pt, va + 3 * PAGE_SIZE)));
	HT_EXPECT(pte_write(pt_get(&pt, va + 4 * PAGE_SIZE)));
	/* the same through a partial unmap */
	split_va = va + PMD_SIZE;
	HT_ASSERT(pt_map_range(&pt, split_va, pa, PMD_SIZE, _PAGE_RW, PT_MAP_HUGE) == 0);
	split_flushes_seen = split_flush_saw_present = 0;
	fake_flush_hook = record_split_flush;
	unmap(split_va + PAGE_SIZE, split_va + 2 * PAGE_SIZE);
	fake_flush_hook = NULL;
	HT_EXPECT_EQ(split_flushes_seen, 1);
	HT_EXPECT_EQ(split_flush_saw_present, 0);
	HT_EXPECT_EQ(translate(split_va), pa);
	HT_EXPECT_EQ(translate(split_va + PAGE_SIZE), ~0UL);
	HT_EXPECT(teardown_ok());
}

static u64 frees_at_flush;
static void record_frees(const struct fake_flush *f)
{
	(void)f;
	frees_at_flush = event_sum(EV_PGTABLE_FREE);
}

HTEST(empty_tables_freed_after_flush)
{
	setup();
	/* two PTE tables under one PMD table */
	HT_ASSERT(pt_map_range(&pt, 0x200000, 0x1000000, PAGE_SIZE, 0, 0) == 0);
	HT_ASSERT(pt_map_range(&pt, 0x400000, 0x1001000, PAGE_SIZE, 0, 0) == 0);
	HT_EXPECT_EQ(pt.nr_tables, 4);
	fake_flush_hook = record_frees;
	u64 freed0 = event_sum(EV_PGTABLE_FREE);
	unmap(0x200000, 0x201000);
	HT_EXPECT_EQ(pt.nr_tables, 3);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), freed0 + 1);
	HT_EXPECT_EQ(frees_at_flush, freed0);	/* nothing freed before the flush */
	HT_EXPECT(fake_last_flush()->freed_tables);
	/* unmapping a range with nothing in it frees nothing and flushes nothing */
	u64 nflush = fake_nr_flushes;
	unmap(0x800000, 0x900000);
	HT_EXPECT_EQ(fake_nr_flushes, nflush);
	/* the last page: PT, PMD and PUD all go */
	unmap(0x400000, 0x401000);
	HT_EXPECT_EQ(pt.nr_tables, 0);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_FREE), freed0 + 4);
	HT_EXPECT_EQ(frees_at_flush, freed0 + 1);
	HT_EXPECT_EQ(virt_to_page(pt.pgd)->pt_used, 0);
	HT_EXPECT(teardown_ok());
}

HTEST(protection_changes)
{
	setup();
	u64 va = 0x7000000;
	HT_ASSERT(pt_map_range(&pt, va, 0x3000000, 16 * PAGE_SIZE, _PAGE_RW, 0) == 0);
	HT_EXPECT_EQ(protect(va + 4 * PAGE_SIZE, va + 8 * PAGE_SIZE, _PAGE_RW, _PAGE_NX), 4);
	const struct fake_flush *f = fake_last_flush();
	HT_EXPECT_EQ(f->start, va + 4 * PAGE_SIZE);
	HT_EXPECT_EQ(f->end, va + 8 * PAGE_SIZE);
	HT_EXPECT(!f->freed_tables);
	for (int i = 0; i < 16; i++) {
		u64 e = pt_get(&pt, va + i * PAGE_SIZE);
		bool in = i >= 4 && i < 8;
		HT_EXPECT_EQ(pte_write(e), !in);
		HT_EXPECT_EQ(!!(e & _PAGE_NX), in);
		HT_EXPECT_EQ(pte_phys(e), 0x3000000 + i * PAGE_SIZE);
		HT_EXPECT(pte_special(e) && pte_present(e));
	}
	/* no change: nothing counted, nothing flushed */
	u64 nflush = fake_nr_flushes;
	HT_EXPECT_EQ(protect(va + 4 * PAGE_SIZE, va + 8 * PAGE_SIZE, _PAGE_RW, 0), 0);
	HT_EXPECT_EQ(fake_nr_flushes, nflush);
	/* protection bits only: present/special/address cannot be cleared this way */
	protect(va, va + PAGE_SIZE, _PAGE_PRESENT | _PAGE_SPECIAL | PTE_ADDR_MASK, 0);
	HT_EXPECT(pte_present(pt_get(&pt, va)) && pte_phys(pt_get(&pt, va)) == 0x3000000);
	/* part of a huge leaf: split, only that part changes */
	HT_ASSERT(pt_map_range(&pt, 16 * PMD_SIZE, 0x8000000, PMD_SIZE, _PAGE_RW, PT_MAP_HUGE) == 0);
	HT_EXPECT_EQ(protect(16 * PMD_SIZE, 16 * PMD_SIZE + PAGE_SIZE, _PAGE_RW, 0), 1);
	HT_EXPECT(!pte_write(pt_get(&pt, 16 * PMD_SIZE)));
	HT_EXPECT(pte_write(pt_get(&pt, 16 * PMD_SIZE + PAGE_SIZE)));
	/* a whole huge leaf: stays huge */
	HT_ASSERT(pt_map_range(&pt, 18 * PMD_SIZE, 0xa000000, PMD_SIZE, _PAGE_RW, PT_MAP_HUGE) == 0);
	HT_EXPECT_EQ(protect(18 * PMD_SIZE, 19 * PMD_SIZE, _PAGE_RW, 0), 1);
	int level;
	HT_ASSERT(pt_lookup(&pt, 18 * PMD_SIZE, &level));
	HT_EXPECT_EQ(level, 2);
	HT_EXPECT(teardown_ok());
}

HTEST(accessed_dirty_bits)
{
	setup();
	HT_ASSERT(pt_map_range(&pt, 0x5000, 0x9000, PAGE_SIZE, _PAGE_RW, 0) == 0);
	u64 *e = pt_lookup(&pt, 0x5000, NULL);
	HT_ASSERT(e);
	HT_EXPECT(!pt_test_and_clear_young(&pt, 0x5000));
	*e |= _PAGE_ACCESSED | _PAGE_DIRTY;	/* what the MMU would do */
	HT_EXPECT(pte_dirty(pt_get(&pt, 0x5000)));
	HT_EXPECT(pt_test_and_clear_young(&pt, 0x5000));
	HT_EXPECT(!pte_young(*e) && pte_dirty(*e));
	HT_EXPECT(!pt_test_and_clear_young(&pt, 0x6000));
	HT_EXPECT(teardown_ok());
}

/* Map a real page with bookkeeping, the way the fault handler does. */
static struct page *map_counted(u64 va, u32 pflags, u64 flags)
{
	struct page *p = alloc_page(0);
	page_set_flags(p, pflags);
	page_add_rmap(p);
	pt_set(pt_alloc_slot(&pt, va), mk_pte(page_to_pfn(p), _PAGE_PRESENT | flags));
	return p;
}

static struct page *delayed_page;
static s32 mapcount_at_flush;
static void record_mapcount(const struct fake_flush *f)
{
	(void)f;
	mapcount_at_flush = page_mapcount(delayed_page);
}

HTEST(unmap_drops_references_and_delays_dirty_shared)
{
	setup();
	struct page *anon = map_counted(0x10000, 0, _PAGE_RW);
	struct page *shared = map_counted(0x11000, PG_shared, _PAGE_RW | _PAGE_DIRTY);
	struct page *clean = map_counted(0x12000, PG_shared, _PAGE_RW);
	get_page(shared);	/* the "page cache" reference */
	get_page(clean);
	u64 free0 = nr_free_pages();
	delayed_page = shared;
	mapcount_at_flush = -1;
	fake_flush_hook = record_mapcount;
	struct mmu_gather tlb;
	struct pt_zap_stats st = { 0, 0, 0 };
	tlb_gather_mmu(&tlb, FAKE_MM);
	pt_unmap_range(&pt, 0x10000, 0x13000, &tlb, &st);
	/* the delayed rmap was flushed at the end of the table, before returning */
	HT_EXPECT_EQ(mapcount_at_flush, 1);
	HT_EXPECT_EQ(page_mapcount(shared), 0);
	HT_EXPECT_EQ(page_mapcount(clean), 0);
	HT_EXPECT(page_test_flag(shared, PG_dirty));
	HT_EXPECT(!page_test_flag(clean, PG_dirty));
	/* nothing freed before finish; one page taken for the table batch */
	HT_EXPECT_EQ(nr_free_pages(), free0 - 1);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(st.anon, 1);
	HT_EXPECT_EQ(st.shared, 2);
	HT_EXPECT_EQ(page_refcount(shared), 1);
	HT_EXPECT_EQ(page_refcount(clean), 1);
	HT_EXPECT(anon->flags & PG_buddy);	/* freed by the fake allocator */
	page_clear_flags(shared, PG_shared | PG_dirty);
	page_clear_flags(clean, PG_shared);
	put_page(shared);
	put_page(clean);
	HT_EXPECT(teardown_ok());
}

/*
 * pt_scan: full reads every slot of a table (Linux), used stops after pt_used present
 * entries. Shown by under-stating a table's count: full still copies and zaps the entry
 * at slot 511, used stops after slot 0.
 */
static void copy_with_scan(int mode, bool *got0, bool *got511, int *ht_failures)
{
	struct pgtable child;
	HT_ASSERT(pt_init(&child, kernel_pml4) == 0);
	u64 base = 0x600000;
	u64 *leaf = pt_lookup(&pt, base, NULL);
	HT_ASSERT(leaf != NULL);
	struct page *tp = virt_to_page((void *)((uintptr_t)leaf & ~(uintptr_t)(PAGE_SIZE - 1)));
	unsigned real = tp->pt_used;
	tp->pt_used = 1;	/* pretend only one entry: what `used` trusts */
	pt_scan = mode;
	HT_EXPECT_EQ(pt_copy_range(&child, &pt, base, base + PMD_SIZE, NULL), 0);
	pt_scan = PT_SCAN_FULL;
	tp->pt_used = real;
	*got0 = pte_present(pt_get(&child, base));
	*got511 = pte_present(pt_get(&child, base + 511 * PAGE_SIZE));
	struct mmu_gather tlb;
	tlb_gather_mmu_fullmm(&tlb, FAKE_MM);
	pt_unmap_range(&child, 0, USER_VA_END, &tlb, NULL);
	tlb_finish_mmu(&tlb);
	pt_destroy(&child);
}

HTEST(pt_scan_full_reads_every_slot)
{
	setup();
	u64 base = 0x600000;
	HT_ASSERT(pt_map_range(&pt, base, 0x1000000, PAGE_SIZE, 0, 0) == 0);		/* slot 0 */
	HT_ASSERT(pt_map_range(&pt, base + 511 * PAGE_SIZE, 0x1001000, PAGE_SIZE, 0, 0) == 0);
	bool a, b;
	a = b = false;
	copy_with_scan(PT_SCAN_FULL, &a, &b, ht_failures);
	HT_EXPECT(a && b);
	copy_with_scan(PT_SCAN_USED, &a, &b, ht_failures);
	HT_EXPECT(a && !b);
	/* both give the same result when the count is right */
	struct pgtable child;
	HT_ASSERT(pt_init(&child, kernel_pml4) == 0);
	pt_scan = PT_SCAN_USED;
	HT_EXPECT_EQ(pt_copy_range(&child, &pt, base, base + PMD_SIZE, NULL), 0);
	HT_EXPECT(pte_present(pt_get(&child, base + 511 * PAGE_SIZE)));
	struct mmu_gather tlb;
	tlb_gather_mmu_fullmm(&tlb, FAKE_MM);
	pt_unmap_range(&child, 0, USER_VA_END, &tlb, NULL);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(child.nr_tables, 0);
	pt_destroy(&child);
	pt_scan = PT_SCAN_FULL;
	HT_EXPECT(teardown_ok());
}

HTEST(copy_range_for_fork)
{
	setup();
	struct pgtable child;
	HT_ASSERT(pt_init(&child, kernel_pml4) == 0);
	struct page *anon = map_counted(0x20000, 0, _PAGE_RW);
	struct page *shared = map_counted(0x21000, PG_shared, _PAGE_RW);
	HT_ASSERT(pt_map_range(&pt, 0x22000, 0x5000000, PAGE_SIZE, 0, 0) == 0);	/* special */
	struct pt_zap_stats st = { 0, 0, 0 };
	HT_ASSERT(pt_copy_range(&child, &pt, 0, 0x100000, &st) == 0);
	HT_EXPECT_EQ(st.anon, 1);
	HT_EXPECT_EQ(st.shared, 1);
	HT_EXPECT_EQ(st.special, 1);
	HT_EXPECT(!pte_write(pt_get(&pt, 0x20000)));
	HT_EXPECT(!pte_write(pt_get(&child, 0x20000)));
	HT_EXPECT(pte_write(pt_get(&pt, 0x21000)));
	HT_EXPECT(pte_write(pt_get(&child, 0x21000)));
	HT_EXPECT_EQ(pt_get(&child, 0x22000), pt_get(&pt, 0x22000));
	HT_EXPECT_EQ(page_mapcount(anon), 2);
	HT_EXPECT_EQ(page_refcount(anon), 2);
	HT_EXPECT_EQ(page_mapcount(shared), 2);
	HT_EXPECT_EQ(child.nr_tables, 3);
	/* tear the child down: the pages stay for the parent */
	struct mmu_gather tlb;
	tlb_gather_mmu_fullmm(&tlb, FAKE_MM);
	pt_unmap_range(&child, 0, USER_VA_END, &tlb, NULL);
	tlb_finish_mmu(&tlb);
	HT_EXPECT_EQ(child.nr_tables, 0);
	pt_destroy(&child);
	HT_EXPECT_EQ(page_mapcount(anon), 1);
	HT_EXPECT_EQ(page_refcount(anon), 1);
	page_clear_flags(shared, PG_shared);
	HT_EXPECT(teardown_ok());
}

HTEST(copy_fails_cleanly_without_memory)
{
	setup();
	struct pgtable child;
	HT_ASSERT(pt_init(&child, kernel_pml4) == 0);
	struct page *anon = map_counted(0x20000, 0, _PAGE_RW);
	map_counted(0x40000000, 0, _PAGE_RW);
	fake_fail_after = 4;	/* enough for the first page's tables, not the second's */
	int r = pt_copy_range(&child, &pt, 0, 0x80000000, NULL);
	fake_fail_after = -1;
	HT_EXPECT_EQ(r, -1);
	HT_EXPECT_EQ(page_mapcount(anon), 2);
	struct mmu_gather tlb;
	tlb_gather_mmu_fullmm(&tlb, FAKE_MM);
	pt_unmap_range(&child, 0, USER_VA_END, &tlb, NULL);
	tlb_finish_mmu(&tlb);
	pt_destroy(&child);
	HT_EXPECT_EQ(page_mapcount(anon), 1);
	HT_EXPECT(teardown_ok());
}

/* ---- randomized test against a model ---- */

#define ZONE_PAGES 1536
static const u64 zone_base[3] = {
	0x0,					/* the start of the address space */
	PUD_SIZE - 3 * PMD_SIZE,		/* around a 1 GiB boundary */
	PGDIR_SIZE - 2 * PMD_SIZE,		/* around a 512 GiB boundary */
};
#define UNIVERSE (3 * ZONE_PAGES)

struct model_page {
	bool present;
	u64 pa;
	u64 prot;	/* _PAGE_RW | _PAGE_NX */
};
static struct model_page model[UNIVERSE];

static u64 rnd_state = 0x9e3779b97f4a7c15ULL;
static u64 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static u64 uva(unsigned i) { return zone_base[i / ZONE_PAGES] + (u64)(i % ZONE_PAGES) * PAGE_SIZE; }

/* Every table below the root has pt_used == its present entries, and none is empty. */
static bool tables_consistent(const u64 *table, int level, unsigned first, unsigned last)
{
	unsigned present = 0;
	for (unsigned i = 0; i < PT_ENTRIES; i++) {
		u64 v = table[i];
		if (!pte_present(v))
			continue;
		if (i >= first && i < last)
			present++;
		if (level > 1 && !(level <= 3 && pte_huge(v)) && i >= first && i < last) {
			if (!tables_consistent(pt_entry_table(v), level - 1, 0, PT_ENTRIES))
				return false;
		}
	}
	const struct page *tp = virt_to_page(table);
	if (tp->pt_used != present || !(tp->flags & PG_pgtable))
		return false;
	return level == PT_LEVELS || present > 0;
}

static int check_model(void)
{
	int bad = 0;
	for (unsigned i = 0; i < UNIVERSE; i++) {
		u64 e = pt_get(&pt, uva(i));
		u64 t = translate(uva(i));
		if (model[i].present != pte_present(e) ||
		    (model[i].present && (t != model[i].pa ||
					  (e & (_PAGE_RW | _PAGE_NX)) != model[i].prot)))
			bad++;
	}
	if (pt.nr_tables != pt_count_tables(&pt))
		bad++;
	if (!tables_consistent(pt.pgd, PT_LEVELS, 0, PGD_KERNEL_FIRST))
		bad++;
	return bad;
}

HTEST(randomized_against_model)
{
	setup();
	memset(model, 0, sizeof(model));
	int bad = 0, nmap = 0, nhuge = 0, nrefused = 0, nunmap = 0, nprot = 0;
	for (int step = 0; step < 4000 && !bad; step++) {
		unsigned zone = (unsigned)(rnd() % 3);
		unsigned op = (unsigned)(rnd() % 8);
		unsigned a = (unsigned)(rnd() % ZONE_PAGES), len = 1 + (unsigned)(rnd() % 700);
		if (op == 0 && (rnd() & 1)) {	/* often a 2 MiB aligned start and length >= 2 MiB */
			a &= ~511u;
			len = 512 + (unsigned)(rnd() % 600);
		}
		if (a + len > ZONE_PAGES)
			len = ZONE_PAGES - a;
		unsigned i0 = zone * ZONE_PAGES + a;
		u64 va = uva(i0), end = va + (u64)len * PAGE_SIZE;
		if (op < 3) {	/* map, maybe huge */
			bool huge = op == 0;
			u64 pa = (rnd() % 4096) * PMD_SIZE + (huge ? 0 : (rnd() % 512) * PAGE_SIZE);
			if (huge) {	/* align both ends of the mapping in va and pa like va */
				pa += va & (PMD_SIZE - 1);
			}
			u64 prot = (rnd() & 1 ? _PAGE_RW : 0) | (rnd() & 1 ? _PAGE_NX : 0);
			bool free_all = true;
			for (unsigned i = i0; i < i0 + len; i++)
				free_all &= !model[i].present;
			int r = pt_map_range(&pt, va, pa, end - va, prot, huge ? PT_MAP_HUGE : 0);
			if (free_all) {
				if (r != 0)
					bad++;
				nmap++;
				nhuge += huge && len >= 512;
				for (unsigned i = i0; i < i0 + len; i++) {
					model[i].present = true;
					model[i].pa = pa + (u64)(i - i0) * PAGE_SIZE;
					model[i].prot = prot;
				}
			} else {
				/* refused somewhere: undo whatever it mapped (only free pages) */
				if (r != -2)
					bad++;
				nrefused++;
				for (unsigned i = i0; i < i0 + len; i++)
					if (!model[i].present && pte_present(pt_get(&pt, uva(i))))
						unmap(uva(i), uva(i) + PAGE_SIZE);
			}
		} else if (op < 6) {
			unmap(va, end);
			nunmap++;
			for (unsigned i = i0; i < i0 + len; i++)
				model[i].present = false;
		} else {
			u64 clear = (rnd() & 1 ? _PAGE_RW : 0) | (rnd() & 1 ? _PAGE_NX : 0);
			u64 set = (rnd() & 1 ? _PAGE_RW : 0) | (rnd() & 1 ? _PAGE_NX : 0);
			set &= ~clear;
			if (protect(va, end, clear, set) < 0)
				bad++;
			nprot++;
			for (unsigned i = i0; i < i0 + len; i++)
				if (model[i].present)
					model[i].prot = (model[i].prot & ~clear) | set;
		}
		bad += check_model();
		if (bad)
			printf("    # model mismatch after step %d (op %u at %#llx len %u)\n", step, op,
			       (unsigned long long)va, len);
	}
	printf("    # %d maps (%d may use 2 MiB leaves), %d refused, %d unmaps, %d protects; "
	       "%llu tables allocated\n", nmap, nhuge, nrefused, nunmap, nprot,
	       (unsigned long long)event_sum(EV_PGTABLE_ALLOC));
	HT_EXPECT_EQ(bad, 0);
	HT_EXPECT(teardown_ok());
}

HTEST(ceiling_decision)
{
	HT_EXPECT(!tlb_flush_wants_full(0, 33 * PAGE_SIZE, PAGE_SHIFT, 33));
	HT_EXPECT(tlb_flush_wants_full(0, 34 * PAGE_SIZE, PAGE_SHIFT, 33));
	HT_EXPECT(tlb_flush_wants_full(0, TLB_FLUSH_ALL, PAGE_SHIFT, 33));
	HT_EXPECT(!tlb_flush_wants_full(0, 33 * PMD_SIZE, PMD_SHIFT, 33));
	HT_EXPECT(tlb_flush_wants_full(0, 34 * PMD_SIZE, PMD_SHIFT, 33));
	HT_EXPECT(tlb_flush_wants_full(0, PAGE_SIZE, PAGE_SHIFT, 0));
	HT_EXPECT(!tlb_flush_wants_full(PAGE_SIZE, PAGE_SIZE, PAGE_SHIFT, 33));
}

int main(void)
{
	int r = htest_main("pgtable");
	fake_mem_fini();
	return r;
}
