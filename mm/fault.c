/*
 * Page faults in the current address space: demand-zero (a read maps the zero page, a
 * write a fresh zeroed page), copy on write, shared file-like pages (dirty tracking),
 * private file-like pages, reference pages (seed 004 variants). A fault outside any
 * region or against the region's protection is reported on one line naming the address
 * and the region, and not resolved.
 *
 * Everything runs under mm->lock. A fault that replaces a present translation (copy on
 * write, zero page -> private page, reference page -> private page) flushes that page on
 * every CPU of the address space before the old page's mapping reference is dropped;
 * one that only adds permissions (read-only -> writable) does not flush: a CPU holding
 * the old read-only entry takes a spurious fault, handled by a local INVLPG.
 */
#include "mm/fault.h"
#include "mm/mm.h"
#include "mm/tlbflush.h"
#include "mm/filemap.h"
#include "mm/refpage.h"
#include "mm/rmap.h"
#include "mm/page_alloc.h"
#include "kernel/events.h"
#include "kernel/options.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/string.h"

DEFINE_VARIANT_ENUM(refpage_init, "refpage_init", REFPAGE_INIT_REFPAGE,
		    "how new memory in reference-page regions gets its contents", REFPAGE_INIT_LIST);

static const char *const kind_names[NR_VM_KINDS] = {
	[VM_ANON] = "anon", [VM_FILE_SHARED] = "file-shared",
	[VM_FILE_PRIVATE] = "file-private", [VM_REFPAGE] = "refpage",
};

static void fault_report(const struct mm_struct *mm, u64 addr, unsigned flags,
			 const struct vm_region *r, const char *why)
{
	char reg[96];
	if (r)
		snprintf(reg, sizeof(reg), "region [%#llx-%#llx) %s %c%c%c",
			 (unsigned long long)r->start, (unsigned long long)r->end,
			 r->kind < NR_VM_KINDS ? kind_names[r->kind] : "?",
			 r->prot & VM_READ ? 'r' : '-', r->prot & VM_WRITE ? 'w' : '-',
			 r->prot & VM_EXEC ? 'x' : '-');
	else
		snprintf(reg, sizeof(reg), "no region");
	printk("mm: bad page fault on CPU %u: %s at %#llx (%s%s) in mm %u, %s\n",
	       smp_processor_id(), why, (unsigned long long)addr,
	       flags & PF_INSTR ? "fetch" : (flags & PF_WRITE ? "write" : "read"),
	       flags & PF_PROT ? ", page present" : ", page not present",
	       mm ? mm->id : 0, reg);
}

static u64 leaf_flags(const struct vm_region *r, bool writable)
{
	return _PAGE_PRESENT | (writable ? _PAGE_RW : 0) | ((r->prot & VM_EXEC) ? 0 : pte_nx);
}

/* Replace a present leaf by @val and make every CPU forget the old one. */
static void replace_and_flush(struct mm_struct *mm, u64 va, u64 *slot, u64 val)
{
	(void)pt_replace(slot, val);
	flush_tlb_mm_range(mm, va, va + PAGE_SIZE, PAGE_SHIFT, false);
}

static void fill_pattern(struct page *page, u64 pattern)
{
	u64 *w = page_address(page);
	for (unsigned i = 0; i < PAGE_SIZE / sizeof(u64); i++)
		w[i] = pattern;
}

static u64 file_index(const struct vm_region *r, u64 va)
{
	return r->pgoff + ((va - r->start) >> PAGE_SHIFT);
}

/* A new private page mapped at an empty slot. */
static void map_new_anon(struct mm_struct *mm, struct vm_region *r, u64 *slot,
			 struct page *page)
{
	r->anon_vma = true;
	page_add_rmap(page);
	pt_set(slot, mk_pte(page_to_pfn(page), leaf_flags(r, r->prot & VM_WRITE)));
	mm->rss[MM_RSS_ANON]++;
}

static int do_anonymous(struct mm_struct *mm, struct vm_region *r, u64 *slot, bool write)
{
	if (!write) {
		pt_set(slot, mk_pte(page_to_pfn(zero_page), leaf_flags(r, false) | _PAGE_SPECIAL));
		count_event(EV_PGFAULT_ZERO);
		return 0;
	}
	struct page *page = alloc_page(GFP_USER | __GFP_ZERO);
	if (!page)
		return -1;
	map_new_anon(mm, r, slot, page);
	count_event(EV_PGFAULT_ANON);
	return 0;
}

static int do_refpage(struct mm_struct *mm, struct vm_region *r, u64 *slot, bool write)
{
	int mode = READ_ONCE(refpage_init);
	struct refpage *ref = r->obj;
	if (mode == REFPAGE_INIT_ZEROPAGE)
		return do_anonymous(mm, r, slot, write);
	if (mode == REFPAGE_INIT_REFPAGE && !write) {
		pt_set(slot, mk_pte(page_to_pfn(ref->page), leaf_flags(r, false) | _PAGE_SPECIAL));
		count_event(EV_PGFAULT_REFPAGE);
		return 0;
	}
	/* memset at fault time, or the first access is a write: a private filled page */
	struct page *page = alloc_page(GFP_USER);
	if (!page)
		return -1;
	if (mode == REFPAGE_INIT_MEMSET)
		fill_pattern(page, ref->pattern);
	else
		memcpy(page_address(page), page_address(ref->page), PAGE_SIZE);
	map_new_anon(mm, r, slot, page);
	count_event(EV_PGFAULT_REFPAGE);
	return 0;
}

static int do_file(struct mm_struct *mm, struct vm_region *r, u64 va, u64 *slot, bool write)
{
	struct page *page = filemap_get_page(r->obj, file_index(r, va));
	if (!page)
		return -1;
	if (r->kind == VM_FILE_PRIVATE && write) {
		struct page *copy = alloc_page(GFP_USER);
		if (!copy) {
			put_page(page);
			return -1;
		}
		memcpy(page_address(copy), page_address(page), PAGE_SIZE);
		put_page(page);
		map_new_anon(mm, r, slot, copy);
		count_event(EV_PGFAULT_COW);
		return 0;
	}
	/* Shared: read faults map read-only so the first write is seen (dirty tracking).
	 * Private: the file page is only ever mapped read-only. */
	bool writable = r->kind == VM_FILE_SHARED && write;
	if (writable)
		filemap_mark_dirty(r->obj, page);
	page_add_rmap(page);
	pt_set(slot, mk_pte(page_to_pfn(page), leaf_flags(r, writable)));
	mm->rss[MM_RSS_SHARED]++;
	count_event(EV_PGFAULT_SHARED);
	return 0;
}

static int do_missing(struct mm_struct *mm, struct vm_region *r, u64 va, u64 *slot, bool write)
{
	switch (r->kind) {
	case VM_ANON:
		return do_anonymous(mm, r, slot, write);
	case VM_REFPAGE:
		return do_refpage(mm, r, slot, write);
	case VM_FILE_SHARED:
	case VM_FILE_PRIVATE:
		return do_file(mm, r, va, slot, write);
	default:
		return -1;
	}
}

/* Write to a present read-only leaf of a writable region. */
static int do_wp(struct mm_struct *mm, struct vm_region *r, u64 va, u64 *slot, u64 pte)
{
	struct page *old = pfn_to_page(pte_pfn(pte));
	struct page *page;

	if (pte_special(pte)) {
		/* the zero page or a reference page: a private copy */
		bool zero = old == zero_page;
		page = alloc_page(GFP_USER | (zero ? __GFP_ZERO : 0));
		if (!page)
			return -1;
		if (!zero)
			memcpy(page_address(page), page_address(old), PAGE_SIZE);
		r->anon_vma = true;
		page_add_rmap(page);
		replace_and_flush(mm, va, slot, mk_pte(page_to_pfn(page), leaf_flags(r, true)));
		mm->rss[MM_RSS_ANON]++;
		count_event(zero ? EV_PGFAULT_ANON : EV_PGFAULT_REFPAGE);
		return 0;
	}
	bool shared = page_test_flag(old, PG_shared);
	if (shared && r->kind == VM_FILE_SHARED) {
		filemap_mark_dirty(r->obj, old);
		(void)pt_modify(slot, 0, _PAGE_RW);
		count_event(EV_PGFAULT_SHARED);
		return 0;
	}
	/* Sole user of a private page (no other mapping, no gather holding it): reuse. */
	if (!shared && page_mapcount(old) == 1 && page_refcount(old) == 1) {
		(void)pt_modify(slot, 0, _PAGE_RW);
		return 0;
	}
	page = alloc_page(GFP_USER);
	if (!page)
		return -1;
	memcpy(page_address(page), page_address(old), PAGE_SIZE);
	r->anon_vma = true;
	page_add_rmap(page);
	replace_and_flush(mm, va, slot, mk_pte(page_to_pfn(page), leaf_flags(r, true)));
	/* No CPU can reach the old page through this mapping any more. */
	page_remove_rmap(old);
	put_page(old);
	if (shared)
		mm->rss[MM_RSS_SHARED]--;
	else
		mm->rss[MM_RSS_ANON]--;
	mm->rss[MM_RSS_ANON]++;
	count_event(EV_PGFAULT_COW);
	return 0;
}

int handle_mm_fault(struct mm_struct *mm, u64 addr, unsigned flags)
{
	bool write = flags & PF_WRITE, fetch = flags & PF_INSTR;
	u64 va = addr & PAGE_MASK;
	const char *why = NULL;
	int ret = -1;

	count_event(EV_PGFAULT);
	if (addr >= USER_VA_END) {
		fault_report(mm, addr, flags, NULL, "kernel-half address");
		return -1;
	}
	mm_lock(mm);
	struct vm_region *r = mm_find_region(mm, addr);
	if (!r) {
		why = "access outside any region";
		goto bad;
	}
	if (flags & PF_RSVD) {
		why = "reserved bit set in a page-table entry";
		goto bad;
	}
	if (write && !(r->prot & VM_WRITE)) {
		why = "protection violation: write to a read-only region";
		goto bad;
	}
	if (fetch && !(r->prot & VM_EXEC)) {
		why = "protection violation: instruction fetch from a non-executable region";
		goto bad;
	}
	if (!(r->prot & (VM_READ | VM_WRITE | VM_EXEC))) {
		why = "protection violation: access to a no-access region";
		goto bad;
	}
	u64 *slot = pt_alloc_slot(&mm->pt, va);
	if (!slot) {
		why = "no page for a page table (or a huge leaf in the way)";
		goto bad;
	}
	u64 pte = READ_ONCE(*slot);
	if (!pte_present(pte)) {
		ret = do_missing(mm, r, va, slot, write);
	} else if (write && !pte_write(pte)) {
		ret = do_wp(mm, r, va, slot, pte);
	} else {
		/* Already resolved (another CPU, or a stale entry in this TLB). */
		flush_tlb_one_local(va);
		ret = 0;
	}
	if (ret) {
		why = "out of memory";
		goto bad;
	}
	mm_unlock(mm);
	return 0;
bad:
	fault_report(mm, addr, flags, r, why);
	mm_unlock(mm);
	return -1;
}

bool do_page_fault(struct pt_regs *regs, u64 error_code, u64 addr)
{
	(void)regs;
	struct mm_struct *mm = current_mm();
	if (!mm || addr >= USER_VA_END) {
		printk("mm: bad page fault on CPU %u at %#llx (error %#llx): %s\n",
		       smp_processor_id(), (unsigned long long)addr, (unsigned long long)error_code,
		       addr >= USER_VA_END ? "kernel-half address, no region" :
					     "no address space loaded, no region");
		return false;
	}
	return handle_mm_fault(mm, addr, (unsigned)error_code) == 0;
}
