/*
 * Host tests of address spaces (mm/mm.c), faults (mm/fault.c), file-like objects and
 * reference pages, over the fake allocator. "User memory" is read and written through the
 * page tables (translate, then touch the fake physical page), and faults are raised the
 * way the MMU would: a missing or read-only leaf calls handle_mm_fault() first.
 */
#include "htest.h"
#include "vm_fake_alloc.h"
#include "mm/mm.h"
#include "mm/fault.h"
#include "mm/filemap.h"
#include "mm/refpage.h"
#include "mm/rmap.h"
#include "mm/mmu_gather.h"
#include "kernel/events.h"

#define NPAGES 32768

static void setup(void)
{
	static bool once;
	if (!once) {
		fake_mem_init(NPAGES);
		mm_subsys_init();
		once = true;
	}
	fake_flush_hook = NULL;
	refpage_init = REFPAGE_INIT_REFPAGE;
	rmapbatch = RMAPBATCH_MULTI;
}

static int fault_errors;

/* The byte at @va as the CPU would see it, faulting like the MMU (read or write). */
static u8 *touch(struct mm_struct *mm, u64 va, bool write)
{
	u64 e = pt_get(&mm->pt, va);
	if (!pte_present(e) || (write && !pte_write(e))) {
		unsigned fl = (write ? PF_WRITE : 0) | (pte_present(e) ? PF_PROT : 0);
		if (handle_mm_fault(mm, va, fl)) {
			fault_errors++;
			return NULL;
		}
	}
	u64 *slot = pt_lookup(&mm->pt, va, NULL);
	if (!slot || (write && !pte_write(*slot))) {
		fault_errors++;
		return NULL;
	}
	*slot |= _PAGE_ACCESSED | (write ? _PAGE_DIRTY : 0);
	return (u8 *)__va(pte_phys(*slot)) + (va & (PAGE_SIZE - 1));
}

static u8 rd(struct mm_struct *mm, u64 va)
{
	u8 *p = touch(mm, va, false);
	return p ? *p : 0xee;
}

static void wr(struct mm_struct *mm, u64 va, u8 v)
{
	u8 *p = touch(mm, va, true);
	if (p)
		*p = v;
}

static u64 pfn_at(struct mm_struct *mm, u64 va) { return pte_pfn(pt_get(&mm->pt, va)); }

HTEST(regions_mmap_munmap)
{
	setup();
	u64 free0 = nr_free_pages();
	struct mm_struct *mm = mm_alloc();
	HT_ASSERT(mm);
	HT_EXPECT_EQ(mm->pt.pgd[300], kernel_pml4[300]);
	HT_EXPECT_EQ(vm_mmap(mm, 0x10000000, 16 * PAGE_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL), 0x10000000);
	HT_EXPECT_EQ(vm_mmap(mm, 0x1000f000, PAGE_SIZE, VM_READ, VM_ANON, NULL), -VM_EEXIST);
	HT_EXPECT_EQ(vm_mmap(mm, 0x1000, PAGE_SIZE, VM_READ, VM_ANON, NULL), -VM_EINVAL);
	HT_EXPECT_EQ(vm_mmap(mm, 0x10000800, PAGE_SIZE, VM_READ, VM_ANON, NULL), -VM_EINVAL);
	HT_EXPECT_EQ(vm_mmap(mm, 0, 0, VM_READ, VM_ANON, NULL), -VM_EINVAL);
	HT_EXPECT_EQ(vm_mmap(mm, 0, PAGE_SIZE, VM_READ, VM_FILE_SHARED, NULL), -VM_EINVAL);
	long a = vm_mmap(mm, 0, 3 * PMD_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL);
	long b = vm_mmap(mm, 0, PAGE_SIZE, VM_READ, VM_ANON, NULL);
	HT_EXPECT_EQ(a, MM_MMAP_BASE);
	HT_EXPECT_EQ(b, MM_MMAP_BASE + 3 * PMD_SIZE);
	HT_EXPECT_EQ(mm->nr_regions, 3);
	/* split the first region in the middle, trim its head */
	HT_EXPECT_EQ(vm_munmap(mm, 0x10004000, 2 * PAGE_SIZE), 0);
	HT_EXPECT_EQ(mm->nr_regions, 4);
	HT_EXPECT(mm_find_region(mm, 0x10003000) && !mm_find_region(mm, 0x10004000) &&
		  !mm_find_region(mm, 0x10005000) && mm_find_region(mm, 0x10006000));
	HT_EXPECT_EQ(vm_munmap(mm, 0x10000000, PAGE_SIZE), 0);
	HT_EXPECT_EQ(mm_find_region(mm, 0x10001000)->start, 0x10001000);
	/* a range covering several regions and holes */
	HT_EXPECT_EQ(vm_munmap(mm, 0x10000000, (u64)a + PMD_SIZE - 0x10000000), 0);
	HT_EXPECT_EQ(mm->nr_regions, 2);
	HT_EXPECT_EQ(mm->regions[0].start, (u64)a + PMD_SIZE);
	HT_EXPECT_EQ(vm_munmap(mm, 0x5000, PAGE_SIZE), 0);	/* nothing there: fine */
	HT_EXPECT_EQ(vm_munmap(mm, 0x5001, PAGE_SIZE), -VM_EINVAL);
	/* a length that would round up to 0 must not split a region or return success */
	unsigned before = mm->nr_regions;
	HT_EXPECT_EQ(vm_munmap(mm, mm->regions[0].start + PAGE_SIZE, 0xfffffffffffff001ULL), -VM_EINVAL);
	HT_EXPECT_EQ(mm->nr_regions, before);
	mm_put(mm);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

HTEST(anonymous_faults)
{
	setup();
	u64 free0 = nr_free_pages();
	struct mm_struct *mm = mm_alloc();
	u64 base = (u64)vm_mmap(mm, 0, 64 * PAGE_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL);
	u64 z0 = event_sum(EV_PGFAULT_ZERO), a0 = event_sum(EV_PGFAULT_ANON);
	fault_errors = 0;
	HT_EXPECT_EQ(rd(mm, base), 0);
	HT_EXPECT_EQ(pfn_at(mm, base), page_to_pfn(zero_page));
	HT_EXPECT(!pte_write(pt_get(&mm->pt, base)));
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_ZERO), z0 + 1);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_PGTABLES), 3);
	/* write after read: zero page replaced by a private page, with a flush */
	u64 nflush = fake_nr_flushes;
	wr(mm, base + 10, 0x42);
	HT_EXPECT(fake_nr_flushes == nflush + 1);
	HT_EXPECT(pfn_at(mm, base) != page_to_pfn(zero_page));
	HT_EXPECT_EQ(rd(mm, base + 10), 0x42);
	HT_EXPECT_EQ(rd(mm, base + 11), 0);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_ANON), a0 + 1);
	/* first access a write: no zero page, no flush */
	nflush = fake_nr_flushes;
	wr(mm, base + PAGE_SIZE, 7);
	HT_EXPECT_EQ(fake_nr_flushes, nflush);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_ANON), a0 + 2);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 2);
	struct page *p = pfn_to_page(pfn_at(mm, base + PAGE_SIZE));
	HT_EXPECT_EQ(page_mapcount(p), 1);
	HT_EXPECT_EQ(page_refcount(p), 1);
	/* a fault on an entry that is already fine (stale TLB) is resolved */
	HT_EXPECT_EQ(handle_mm_fault(mm, base + PAGE_SIZE, PF_WRITE | PF_PROT), 0);
	HT_EXPECT_EQ(fault_errors, 0);
	/* munmap returns the pages; rss drops */
	HT_EXPECT_EQ(vm_munmap(mm, base, 64 * PAGE_SIZE), 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_PGTABLES), 0);
	mm_put(mm);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

HTEST(bad_faults_are_reported)
{
	setup();
	struct mm_struct *mm = mm_alloc();
	u64 ro = (u64)vm_mmap(mm, 0x20000000, PAGE_SIZE, VM_READ, VM_ANON, NULL);
	u64 none = (u64)vm_mmap(mm, 0x20100000, PAGE_SIZE, 0, VM_ANON, NULL);
	HT_EXPECT_EQ(handle_mm_fault(mm, 0x30000000, 0), -1);		/* no region */
	HT_EXPECT_EQ(handle_mm_fault(mm, ro, PF_WRITE), -1);		/* read-only */
	HT_EXPECT_EQ(handle_mm_fault(mm, ro, PF_INSTR), -1);		/* not executable */
	HT_EXPECT_EQ(handle_mm_fault(mm, none, 0), -1);			/* no access */
	HT_EXPECT_EQ(handle_mm_fault(mm, 0xffff888000001000UL, 0), -1);	/* kernel half */
	HT_EXPECT_EQ(handle_mm_fault(mm, ro, 0), 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_PGTABLES), 3);
	HT_EXPECT(!mm->lock.owner || !spin_is_locked(&mm->lock));
	/* do_page_fault with no address space loaded */
	HT_EXPECT(!do_page_fault(NULL, 0, ro));
	switch_mm(mm);
	HT_EXPECT(do_page_fault(NULL, PF_PROT, ro));
	HT_EXPECT(!do_page_fault(NULL, PF_WRITE | PF_PROT, ro));
	mm_put(mm);	/* switches this CPU away first */
	HT_EXPECT(current_mm() == NULL);
}

HTEST(shared_file_dirty_tracking)
{
	setup();
	u64 free0 = nr_free_pages();
	struct file_obj *f = file_obj_create(64 * PAGE_SIZE);
	HT_ASSERT(f);
	struct mm_struct *m1 = mm_alloc(), *m2 = mm_alloc();
	u64 a1 = (u64)vm_mmap(m1, 0, 64 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_SHARED, f);
	u64 a2 = (u64)vm_mmap(m2, 0x40000000, 64 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_SHARED, f);
	fault_errors = 0;
	u64 s0 = event_sum(EV_PGFAULT_SHARED);
	wr(m1, a1 + 3 * PAGE_SIZE + 5, 0x77);
	HT_EXPECT_EQ(rd(m2, a2 + 3 * PAGE_SIZE + 5), 0x77);
	HT_EXPECT_EQ(pfn_at(m1, a1 + 3 * PAGE_SIZE), pfn_at(m2, a2 + 3 * PAGE_SIZE));
	HT_EXPECT(!pte_write(pt_get(&m2->pt, a2 + 3 * PAGE_SIZE)));	/* read fault: read-only */
	HT_EXPECT_EQ(filemap_nr_dirty(f), 1);
	struct page *p3 = filemap_peek_page(f, 3);
	HT_EXPECT_EQ(page_mapcount(p3), 2);
	HT_EXPECT_EQ(page_refcount(p3), 3);	/* cache + 2 mappings */
	/* a write through m2's read-only entry: made writable in place, no copy */
	u64 pfn = pfn_at(m2, a2 + 3 * PAGE_SIZE);
	wr(m2, a2 + 3 * PAGE_SIZE, 1);
	HT_EXPECT_EQ(pfn_at(m2, a2 + 3 * PAGE_SIZE), pfn);
	HT_EXPECT_EQ(rd(m1, a1 + 3 * PAGE_SIZE), 1);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_SHARED), s0 + 3);
	HT_EXPECT_EQ(mm_rss(m1, MM_RSS_SHARED), 1);
	HT_EXPECT_EQ(mm_rss(m1, MM_RSS_ANON), 0);
	/* writeback clears the dirty bits; unmap of a dirty PTE sets it again (delayed rmap) */
	HT_EXPECT_EQ(filemap_writeback(f), 1);
	HT_EXPECT_EQ(filemap_nr_dirty(f), 0);
	u64 r0 = event_sum(EV_RMAP_REMOVE);
	HT_EXPECT_EQ(vm_munmap(m1, a1, 64 * PAGE_SIZE), 0);
	HT_EXPECT_EQ(filemap_nr_dirty(f), 1);
	HT_EXPECT_EQ(page_mapcount(p3), 1);
	HT_EXPECT_EQ(event_sum(EV_RMAP_REMOVE), r0 + 1);
	HT_EXPECT_EQ(mm_rss(m1, MM_RSS_SHARED), 0);
	/* many dirty pages through one mm: one flush per page table with rmapbatch=multi */
	u64 a3 = (u64)vm_mmap(m1, 0, 64 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_SHARED, f);
	for (int i = 0; i < 64; i++)
		wr(m1, a3 + (u64)i * PAGE_SIZE, (u8)i);
	u64 fl0 = fake_nr_flushes;
	vm_munmap(m1, a3, 64 * PAGE_SIZE);
	/* one at the end of the page table (delayed rmaps), one for the freed tables */
	HT_EXPECT_EQ(fake_nr_flushes, fl0 + 2);
	a3 = (u64)vm_mmap(m1, 0, 64 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_SHARED, f);
	for (int i = 0; i < 64; i++)
		wr(m1, a3 + (u64)i * PAGE_SIZE, (u8)i);
	rmapbatch = RMAPBATCH_LOCAL;
	fl0 = fake_nr_flushes;
	vm_munmap(m1, a3, 64 * PAGE_SIZE);
	HT_EXPECT_EQ(fake_nr_flushes, fl0 + 64 / MMU_GATHER_BUNDLE + 1);
	rmapbatch = RMAPBATCH_MULTI;
	HT_EXPECT_EQ(fault_errors, 0);
	mm_put(m1);
	mm_put(m2);
	HT_EXPECT_EQ(f->nr_cached, 64);
	file_obj_put(f);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

HTEST(private_file_copy_on_write)
{
	setup();
	u64 free0 = nr_free_pages();
	struct file_obj *f = file_obj_create(8 * PAGE_SIZE);
	struct page *fp = filemap_get_page(f, 2);
	((u8 *)page_address(fp))[9] = 0x99;
	put_page(fp);
	struct mm_struct *mm = mm_alloc();
	u64 a = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_PRIVATE, f);
	fault_errors = 0;
	HT_EXPECT_EQ(rd(mm, a + 2 * PAGE_SIZE + 9), 0x99);
	HT_EXPECT_EQ(pfn_at(mm, a + 2 * PAGE_SIZE), page_to_pfn(fp));
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_SHARED), 1);
	u64 c0 = event_sum(EV_PGFAULT_COW);
	wr(mm, a + 2 * PAGE_SIZE + 10, 0x11);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_COW), c0 + 1);
	HT_EXPECT(pfn_at(mm, a + 2 * PAGE_SIZE) != page_to_pfn(fp));
	HT_EXPECT_EQ(rd(mm, a + 2 * PAGE_SIZE + 9), 0x99);
	HT_EXPECT_EQ(((u8 *)page_address(fp))[10], 0);	/* the file is unchanged */
	HT_EXPECT_EQ(page_mapcount(fp), 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_SHARED), 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 1);
	/* a first-access write copies directly */
	wr(mm, a + 5 * PAGE_SIZE, 3);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_COW), c0 + 2);
	HT_EXPECT_EQ(filemap_nr_dirty(f), 0);
	HT_EXPECT_EQ(fault_errors, 0);
	mm_put(mm);
	file_obj_put(f);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

static bool page_is_pattern(struct mm_struct *mm, u64 va, u64 pattern)
{
	for (unsigned off = 0; off < PAGE_SIZE; off += 8) {
		u64 w = 0;
		for (int b = 0; b < 8; b++)
			w |= (u64)rd(mm, va + off + b) << (8 * b);
		if (w != pattern)
			return false;
	}
	return true;
}

HTEST(reference_pages)
{
	setup();
	u64 free0 = nr_free_pages();
	struct refpage *ref = refpage_create(0x0123456789abcdefULL);
	HT_ASSERT(ref);
	struct mm_struct *mm = mm_alloc();
	u64 a = (u64)vm_mmap(mm, 0, 32 * PAGE_SIZE, VM_READ | VM_WRITE, VM_REFPAGE, ref);
	refpage_put(ref);	/* the region holds it now */
	fault_errors = 0;
	u64 r0 = event_sum(EV_PGFAULT_REFPAGE);
	(void)rd(mm, a);	/* builds the page tables */
	u64 used = nr_free_pages();
	for (int i = 0; i < 32; i++)
		HT_EXPECT(page_is_pattern(mm, a + (u64)i * PAGE_SIZE, 0x0123456789abcdefULL));
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 0);		/* RSS flat until written */
	HT_EXPECT_EQ(nr_free_pages(), used);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_REFPAGE), r0 + 32);
	HT_EXPECT_EQ(pfn_at(mm, a), page_to_pfn(ref->page));
	wr(mm, a + 4 * PAGE_SIZE + 1, 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 1);
	HT_EXPECT_EQ(rd(mm, a + 4 * PAGE_SIZE), 0xef);
	HT_EXPECT_EQ(rd(mm, a + 4 * PAGE_SIZE + 1), 0);
	HT_EXPECT_EQ(rd(mm, a + 4 * PAGE_SIZE + 2), 0xab);
	HT_EXPECT(page_is_pattern(mm, a + 5 * PAGE_SIZE, 0x0123456789abcdefULL));
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_REFPAGE), r0 + 33);
	vm_munmap(mm, a, 32 * PAGE_SIZE);	/* drops the last reference: the page goes */

	/* memset variant: every fault allocates and fills */
	refpage_init = REFPAGE_INIT_MEMSET;
	a = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_REFPAGE, NULL);
	HT_EXPECT(page_is_pattern(mm, a, REFPAGE_DEFAULT_PATTERN));
	HT_EXPECT(page_is_pattern(mm, a + PAGE_SIZE, REFPAGE_DEFAULT_PATTERN));
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 2);
	vm_munmap(mm, a, 8 * PAGE_SIZE);

	/* zeropage variant: plain demand-zero */
	refpage_init = REFPAGE_INIT_ZEROPAGE;
	a = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_REFPAGE, NULL);
	HT_EXPECT_EQ(rd(mm, a + 100), 0);
	HT_EXPECT_EQ(pfn_at(mm, a), page_to_pfn(zero_page));
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 0);
	vm_munmap(mm, a, 8 * PAGE_SIZE);
	refpage_init = REFPAGE_INIT_REFPAGE;
	HT_EXPECT_EQ(fault_errors, 0);
	mm_put(mm);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

HTEST(cow_after_dup)
{
	setup();
	u64 free0 = nr_free_pages();
	struct file_obj *f = file_obj_create(4 * PAGE_SIZE);
	struct mm_struct *parent = mm_alloc();
	u64 a = (u64)vm_mmap(parent, 0, 16 * PAGE_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL);
	u64 s = (u64)vm_mmap(parent, 0, 4 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_SHARED, f);
	fault_errors = 0;
	for (int i = 0; i < 4; i++)
		wr(parent, a + (u64)i * PAGE_SIZE, (u8)(0x10 + i));
	(void)rd(parent, a + 8 * PAGE_SIZE);		/* zero page */
	wr(parent, s, 0x55);
	u64 fl0 = fake_nr_flushes;
	struct mm_struct *child = dup_mm(parent);
	HT_ASSERT(child);
	HT_EXPECT_EQ(fake_nr_flushes, fl0 + 1);	/* the parent's writable entries */
	HT_EXPECT(fake_last_flush()->mm == parent);
	HT_EXPECT_EQ(mm_rss(child, MM_RSS_ANON), 4);
	/* the shared region has no private pages: not copied, the child faults it in */
	HT_EXPECT_EQ(mm_rss(child, MM_RSS_SHARED), 0);
	HT_EXPECT(!pte_present(pt_get(&child->pt, s)));
	HT_EXPECT_EQ(child->nr_regions, 2);
	for (int i = 0; i < 4; i++) {
		u64 va = a + (u64)i * PAGE_SIZE;
		HT_EXPECT_EQ(rd(child, va), 0x10 + i);
		HT_EXPECT_EQ(pfn_at(child, va), pfn_at(parent, va));
		HT_EXPECT(!pte_write(pt_get(&parent->pt, va)) && !pte_write(pt_get(&child->pt, va)));
		HT_EXPECT_EQ(page_mapcount(pfn_to_page(pfn_at(parent, va))), 2);
	}
	/* child writes: its own copy; the parent keeps the old contents */
	u64 c0 = event_sum(EV_PGFAULT_COW);
	wr(child, a, 0xc0);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_COW), c0 + 1);
	HT_EXPECT_EQ(rd(child, a), 0xc0);
	HT_EXPECT_EQ(rd(parent, a), 0x10);
	HT_EXPECT(pfn_at(child, a) != pfn_at(parent, a));
	HT_EXPECT_EQ(page_mapcount(pfn_to_page(pfn_at(parent, a))), 1);
	/* the parent now writes its page: sole user, reused without a copy */
	u64 pfn = pfn_at(parent, a);
	wr(parent, a, 0xb0);
	HT_EXPECT_EQ(pfn_at(parent, a), pfn);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_COW), c0 + 1);
	HT_EXPECT_EQ(rd(child, a), 0xc0);
	/* parent writes a still-shared page: copy */
	wr(parent, a + PAGE_SIZE, 0xb1);
	HT_EXPECT_EQ(rd(child, a + PAGE_SIZE), 0x11);
	HT_EXPECT_EQ(event_sum(EV_PGFAULT_COW), c0 + 2);
	/* zero page stays shared; the child's write gets a fresh page */
	HT_EXPECT_EQ(pfn_at(child, a + 8 * PAGE_SIZE), page_to_pfn(zero_page));
	wr(child, a + 8 * PAGE_SIZE, 1);
	HT_EXPECT_EQ(rd(parent, a + 8 * PAGE_SIZE), 0);
	/* the shared region stays shared */
	wr(child, s + 1, 0x66);
	HT_EXPECT_EQ(mm_rss(child, MM_RSS_SHARED), 1);
	HT_EXPECT_EQ(pfn_at(child, s), pfn_at(parent, s));
	HT_EXPECT_EQ(rd(parent, s + 1), 0x66);
	HT_EXPECT_EQ(rd(child, s), 0x55);
	HT_EXPECT_EQ(fault_errors, 0);
	/* exit of the child: the parent's pages are sole-owned again */
	mm_put(child);
	HT_EXPECT_EQ(page_mapcount(pfn_to_page(pfn_at(parent, a + 2 * PAGE_SIZE))), 1);
	pfn = pfn_at(parent, a + 2 * PAGE_SIZE);
	wr(parent, a + 2 * PAGE_SIZE, 9);
	HT_EXPECT_EQ(pfn_at(parent, a + 2 * PAGE_SIZE), pfn);
	mm_put(parent);
	file_obj_put(f);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

HTEST(sparse_tables_fork_exit)
{
	/* seed 002's shape, small: one touch per 2 MiB over 1 GiB builds 512 page tables */
	setup();
	u64 free0 = nr_free_pages();
	u64 ta0 = event_sum(EV_PGTABLE_ALLOC), tf0 = event_sum(EV_PGTABLE_FREE);
	struct mm_struct *mm = mm_alloc();
	u64 a = (u64)vm_mmap(mm, 0, PUD_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL);
	fault_errors = 0;
	for (u64 off = 0; off < PUD_SIZE; off += PMD_SIZE)
		HT_EXPECT_EQ(rd(mm, a + off), 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_PGTABLES), 512 + 1 + 1);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 0);
	/* reads only (the thread's workload): zero-page entries, no anon_vma, so fork
	 * copies no table at all */
	HT_EXPECT(!mm->regions[0].anon_vma);
	struct mm_struct *child = dup_mm(mm);
	HT_ASSERT(child);
	HT_EXPECT_EQ(mm_rss(child, MM_RSS_PGTABLES), 0);
	HT_EXPECT_EQ(rd(child, a + PMD_SIZE), 0);	/* the child faults its own in */
	HT_EXPECT_EQ(mm_rss(child, MM_RSS_PGTABLES), 3);
	mm_put(child);
	/* one write (tools/linux-ref's sparse fork): the region has private pages, and
	 * the fork copies all of its tables */
	wr(mm, a, 1);
	HT_EXPECT(mm->regions[0].anon_vma);
	child = dup_mm(mm);
	HT_ASSERT(child);
	HT_EXPECT_EQ(mm_rss(child, MM_RSS_PGTABLES), 514);
	HT_EXPECT_EQ(mm_rss(child, MM_RSS_ANON), 1);
	mm_put(child);
	/* munmap of the whole region frees every table */
	HT_EXPECT_EQ(vm_munmap(mm, a, PUD_SIZE), 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_PGTABLES), 0);
	mm_put(mm);
	HT_EXPECT_EQ(fault_errors, 0);
	HT_EXPECT_EQ(nr_free_pages(), free0);
	HT_EXPECT_EQ(event_sum(EV_PGTABLE_ALLOC) - ta0, event_sum(EV_PGTABLE_FREE) - tf0);
}

/* Linux's fork rule (vma_needs_copy): page tables are copied only for regions that have
 * private pages; a read (zero page, reference page, file page) never gives a region one,
 * a write, a copy on write or a filled reference page does, and a split keeps it. */
HTEST(fork_copies_only_regions_with_private_pages)
{
	setup();
	u64 free0 = nr_free_pages();
	struct file_obj *f = file_obj_create(8 * PAGE_SIZE);
	struct mm_struct *mm = mm_alloc();
	u64 ar = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL);
	u64 aw = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL);
	u64 pr = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_PRIVATE, f);
	u64 pw = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_PRIVATE, f);
	u64 rr = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_REFPAGE, NULL);
	u64 zw = (u64)vm_mmap(mm, 0, 8 * PAGE_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL);
	fault_errors = 0;
	for (int i = 0; i < 8; i++) {
		u64 o = (u64)i * PAGE_SIZE;
		(void)rd(mm, ar + o);
		wr(mm, aw + o, 1);
		(void)rd(mm, pr + o);
		if (i == 3)
			wr(mm, pw + o, 2);		/* copy on write of one file page */
		else
			(void)rd(mm, pw + o);
		(void)rd(mm, rr + o);
		(void)rd(mm, zw + o);
	}
	wr(mm, zw + 5 * PAGE_SIZE, 3);			/* copy of the zero page */
	bool want[] = { false, true, false, true, false, true };
	for (unsigned i = 0; i < 6; i++)
		HT_EXPECT_EQ(mm->regions[i].anon_vma, want[i]);
	/* split the written anonymous region: both halves keep the marker */
	HT_EXPECT_EQ(vm_munmap(mm, aw + 2 * PAGE_SIZE, PAGE_SIZE), 0);
	HT_EXPECT(mm->regions[1].anon_vma && mm->regions[2].anon_vma);
	struct mm_struct *child = dup_mm(mm);
	HT_ASSERT(child);
	for (unsigned i = 0; i < child->nr_regions; i++)
		HT_EXPECT_EQ(child->regions[i].anon_vma, mm->regions[i].anon_vma);
	HT_EXPECT(!pte_present(pt_get(&child->pt, ar)));
	HT_EXPECT(!pte_present(pt_get(&child->pt, pr)));
	HT_EXPECT(!pte_present(pt_get(&child->pt, rr)));
	HT_EXPECT(pte_present(pt_get(&child->pt, aw)));
	HT_EXPECT(pte_present(pt_get(&child->pt, pw)));	/* the whole region's tables */
	HT_EXPECT(pte_present(pt_get(&child->pt, zw)));
	HT_EXPECT_EQ(mm_rss(child, MM_RSS_ANON), 7 + 1 + 1);
	/* the child faults the rest in and sees the same contents */
	HT_EXPECT_EQ(rd(child, ar), 0);
	HT_EXPECT_EQ(rd(child, pw + 3 * PAGE_SIZE), 2);
	HT_EXPECT_EQ(rd(child, aw + 7 * PAGE_SIZE), 1);
	(void)rd(child, pr);
	HT_EXPECT_EQ(pfn_at(child, pr), pfn_at(mm, pr));	/* the file page, refaulted */
	HT_EXPECT_EQ(fault_errors, 0);
	mm_put(child);
	mm_put(mm);
	file_obj_put(f);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

HTEST(teardown_of_everything)
{
	setup();
	u64 free0 = nr_free_pages();
	struct file_obj *f = file_obj_create(256 * PAGE_SIZE);
	struct mm_struct *mm = mm_alloc();
	u64 a = (u64)vm_mmap(mm, 0, 600 * PAGE_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL);
	u64 s = (u64)vm_mmap(mm, 0, 256 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_SHARED, f);
	u64 p = (u64)vm_mmap(mm, 0, 256 * PAGE_SIZE, VM_READ | VM_WRITE, VM_FILE_PRIVATE, f);
	u64 r = (u64)vm_mmap(mm, 0x7fff00000000UL, 64 * PAGE_SIZE, VM_READ | VM_WRITE, VM_REFPAGE, NULL);
	fault_errors = 0;
	for (int i = 0; i < 600; i++)
		wr(mm, a + (u64)i * PAGE_SIZE, 1);
	for (int i = 0; i < 256; i++) {
		wr(mm, s + (u64)i * PAGE_SIZE, 2);
		if (i & 1)
			wr(mm, p + (u64)i * PAGE_SIZE, 3);
		else
			(void)rd(mm, p + (u64)i * PAGE_SIZE);
	}
	for (int i = 0; i < 64; i++)
		(void)rd(mm, r + (u64)i * PAGE_SIZE);
	struct mm_struct *child = dup_mm(mm);
	HT_ASSERT(child);
	wr(child, a, 5);
	HT_EXPECT_EQ(fault_errors, 0);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 600 + 128);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_SHARED), 256 + 128);
	HT_EXPECT_EQ(mm_rss(mm, MM_RSS_PGTABLES), pt_count_tables(&mm->pt));
	mm_put(mm);
	mm_put(child);
	file_obj_put(f);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

HTEST(region_slots_run_out)
{
	setup();
	u64 free0 = nr_free_pages();
	struct mm_struct *mm = mm_alloc();
	for (int i = 0; i < MM_MAX_REGIONS; i++)
		HT_EXPECT(vm_mmap(mm, 0, 4 * PAGE_SIZE, VM_READ, VM_ANON, NULL) > 0);
	HT_EXPECT_EQ(vm_mmap(mm, 0, PAGE_SIZE, VM_READ, VM_ANON, NULL), -VM_ENOMEM);
	HT_EXPECT_EQ(vm_munmap(mm, MM_MMAP_BASE + PAGE_SIZE, PAGE_SIZE), -VM_ENOMEM);
	HT_EXPECT_EQ(vm_munmap(mm, MM_MMAP_BASE, PAGE_SIZE), 0);	/* a trim needs no slot */
	mm_put(mm);
	HT_EXPECT_EQ(nr_free_pages(), free0);
}

int main(void)
{
	int r = htest_main("vm_mm");
	fake_mem_fini();
	return r;
}
