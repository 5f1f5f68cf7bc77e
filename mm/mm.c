/*
 * Address spaces: create, duplicate (fork), tear down (exit), regions (mmap/munmap).
 * See mm/mm.h for the locking rules and region kinds.
 */
#include "mm/mm.h"
#include "mm/mmu_gather.h"
#include "mm/tlbflush.h"
#include "mm/filemap.h"
#include "mm/refpage.h"
#include "mm/rmap.h"
#include "mm/page_alloc.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/panic.h"
#include "kernel/string.h"
#include "arch/x86_64/irqflags.h"

_Static_assert(sizeof(struct mm_struct) <= PAGE_SIZE, "mm_struct must fit in one page");

struct page *zero_page;
static DEFINE_SPINLOCK(mm_init_lock);
static u32 mm_next_id;

void mm_subsys_init(void)
{
	if (atomic_load_acquire(&zero_page))
		return;
	unsigned long f = spin_lock_irqsave(&mm_init_lock);
	if (!zero_page) {
		struct page *p = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!p)
			panic("mm: no page for the zero page");
		page_set_flags(p, PG_zero);
		p->private = 0;		/* 0: the zero page (reference pages are non-zero) */
		refpage_init_default();
		pgtable_init_nx();
		atomic_store_release(&zero_page, p);
	}
	spin_unlock_irqrestore(&mm_init_lock, f);
}

/* ---- the page-table lock ---- */

void mm_lock(struct mm_struct *mm)
{
	unsigned cpu = smp_processor_id();
	if (unlikely(READ_ONCE(mm->lock_cpu) == (s32)cpu))
		panic("mm %u: page-table lock taken again on CPU %u (a fault on a user address "
		      "while holding it?)", mm->id, cpu);
	/* A holder may be waiting for our acknowledgement of a TLB flush: serve calls. */
	while (!spin_trylock(&mm->lock)) {
		if (irqs_disabled())
			smp_call_queue_drain();
		cpu_relax();
	}
	WRITE_ONCE(mm->lock_cpu, (s32)cpu);
}

void mm_unlock(struct mm_struct *mm)
{
	WRITE_ONCE(mm->lock_cpu, -1);
	spin_unlock(&mm->lock);
}

/* ---- creation, references ---- */

struct mm_struct *mm_alloc(void)
{
	mm_subsys_init();
	struct page *p = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!p)
		return NULL;
	struct mm_struct *mm = page_address(p);
	spin_lock_init(&mm->lock);
	mm->lock_cpu = -1;
	mm->users = 1;
	mm->id = atomic_add_return(&mm_next_id, 1);
	cpumask_clear(&mm->cpumask);
	mm->tlb_gen = 0;
	if (pt_init(&mm->pt, kernel_pml4)) {
		free_page(p);
		return NULL;
	}
	return mm;
}

void mm_get(struct mm_struct *mm)
{
	atomic_inc(&mm->users);
}

void mm_put(struct mm_struct *mm)
{
	s32 u = atomic_dec_return(&mm->users);
	BUG_ON(u < 0);
	if (!u)
		mm_destroy(mm);
}

long mm_rss(const struct mm_struct *mm, int which)
{
	if (which == MM_RSS_PGTABLES)
		return READ_ONCE(mm->pt.nr_tables);
	return READ_ONCE(mm->rss[which]);
}

static void rss_sub(struct mm_struct *mm, const struct pt_zap_stats *st)
{
	mm_assert_locked(mm);
	mm->rss[MM_RSS_ANON] -= st->anon;
	mm->rss[MM_RSS_SHARED] -= st->shared;
}

/* ---- region objects ---- */

static void region_get_obj(const struct vm_region *r)
{
	if (!r->obj)
		return;
	if (r->kind == VM_FILE_SHARED || r->kind == VM_FILE_PRIVATE)
		file_obj_get(r->obj);
	else if (r->kind == VM_REFPAGE)
		refpage_get(r->obj);
}

static void region_put_obj(const struct vm_region *r)
{
	if (!r->obj)
		return;
	if (r->kind == VM_FILE_SHARED || r->kind == VM_FILE_PRIVATE)
		file_obj_put(r->obj);
	else if (r->kind == VM_REFPAGE)
		refpage_put(r->obj);
}

struct vm_region *mm_find_region(struct mm_struct *mm, u64 addr)
{
	mm_assert_locked(mm);
	unsigned lo = 0, hi = mm->nr_regions;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		struct vm_region *r = &mm->regions[mid];
		if (addr < r->start)
			hi = mid;
		else if (addr >= r->end)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

/* Index of the first region ending after @addr. mm->lock held, as for the two below. */
static unsigned region_index_after(struct mm_struct *mm, u64 addr)
{
	mm_assert_locked(mm);
	unsigned i = 0;
	while (i < mm->nr_regions && mm->regions[i].end <= addr)
		i++;
	return i;
}

static void region_insert(struct mm_struct *mm, unsigned i, const struct vm_region *r)
{
	mm_assert_locked(mm);
	memmove(&mm->regions[i + 1], &mm->regions[i], (mm->nr_regions - i) * sizeof(*r));
	mm->regions[i] = *r;
	mm->nr_regions++;
}

static void region_remove(struct mm_struct *mm, unsigned i)
{
	mm_assert_locked(mm);
	memmove(&mm->regions[i], &mm->regions[i + 1], (mm->nr_regions - i - 1) * sizeof(mm->regions[0]));
	mm->nr_regions--;
}

/* ---- mmap / munmap ---- */

long vm_mmap(struct mm_struct *mm, u64 start, u64 len, u32 prot, enum vm_kind kind, void *obj)
{
	if (!len || (unsigned)kind >= NR_VM_KINDS || (prot & ~(VM_READ | VM_WRITE | VM_EXEC)) ||
	    !IS_ALIGNED(start, PAGE_SIZE) || len > USER_VA_END)
		return -VM_EINVAL;
	len = ALIGN_UP(len, PAGE_SIZE);
	if (kind == VM_FILE_SHARED || kind == VM_FILE_PRIVATE) {
		struct file_obj *f = obj;
		if (!f || len > f->nr_pages * PAGE_SIZE)
			return -VM_EINVAL;
	} else if (kind == VM_REFPAGE) {
		if (!obj)
			obj = refpage_default();
	} else {
		obj = NULL;
	}

	mm_lock(mm);
	long ret;
	if (mm->nr_regions == MM_MAX_REGIONS) {
		ret = -VM_ENOMEM;
		goto out;
	}
	if (!start) {
		u64 cand = MM_MMAP_BASE;
		for (unsigned i = 0; i < mm->nr_regions; i++) {
			struct vm_region *r = &mm->regions[i];
			if (r->end <= cand)
				continue;
			if (r->start >= cand + len)
				break;
			cand = ALIGN_UP(r->end, PMD_SIZE);
		}
		start = cand;
	}
	if (start < MM_USER_MIN || start + len > USER_VA_END || start + len < start) {
		ret = -VM_EINVAL;
		goto out;
	}
	unsigned i = region_index_after(mm, start);
	if (i < mm->nr_regions && mm->regions[i].start < start + len) {
		ret = -VM_EEXIST;
		goto out;
	}
	struct vm_region r = { .start = start, .end = start + len, .prot = prot, .kind = kind,
			       .obj = obj, .pgoff = 0, .anon_vma = false };
	region_get_obj(&r);
	region_insert(mm, i, &r);
	ret = (long)start;
out:
	mm_unlock(mm);
	return ret;
}

int vm_munmap(struct mm_struct *mm, u64 start, u64 len)
{
	/* len checked before rounding up: a length near 2^64 must not round to 0 */
	if (!len || len > USER_VA_END || !IS_ALIGNED(start, PAGE_SIZE) || start >= USER_VA_END)
		return -VM_EINVAL;
	len = ALIGN_UP(len, PAGE_SIZE);
	u64 end = start + len;
	if (end > USER_VA_END || end < start)
		return -VM_EINVAL;

	mm_lock(mm);
	/* A region strictly containing the range splits in two: check for a slot first. */
	for (unsigned i = 0; i < mm->nr_regions; i++) {
		struct vm_region *r = &mm->regions[i];
		if (r->start < start && r->end > end && mm->nr_regions == MM_MAX_REGIONS) {
			mm_unlock(mm);
			return -VM_ENOMEM;
		}
	}
	struct mmu_gather tlb;
	struct pt_zap_stats st = { 0, 0, 0 };
	/* Objects of removed regions (a reference page mapped by special entries the
	 * gather does not hold) are released only after every TLB forgot them. */
	struct vm_region dropped[MM_MAX_REGIONS];
	unsigned ndropped = 0;
	tlb_gather_mmu(&tlb, mm);
	for (unsigned i = region_index_after(mm, start); i < mm->nr_regions;) {
		struct vm_region *r = &mm->regions[i];
		if (r->start >= end)
			break;
		u64 s = MAX(r->start, start), e = MIN(r->end, end);
		bool whole = s == r->start && e == r->end;
		if (whole && r->obj)
			tlb.frees_objects = true;	/* before any flush of this unmap */
		pt_unmap_range(&mm->pt, s, e, &tlb, &st);
		if (whole) {
			if (r->obj)
				dropped[ndropped++] = *r;
			region_remove(mm, i);
		} else if (s == r->start) {
			r->pgoff += (e - r->start) >> PAGE_SHIFT;
			r->start = e;
			i++;
		} else if (e == r->end) {
			r->end = s;
			i++;
		} else {
			struct vm_region tail = *r;
			tail.pgoff += (e - r->start) >> PAGE_SHIFT;
			tail.start = e;
			r->end = s;
			region_get_obj(&tail);
			region_insert(mm, i + 1, &tail);
			i += 2;
		}
	}
	tlb_finish_mmu(&tlb);
	for (unsigned k = 0; k < ndropped; k++)
		region_put_obj(&dropped[k]);
	rss_sub(mm, &st);
	mm_unlock(mm);
	return 0;
}

/* ---- teardown ---- */

void mm_destroy(struct mm_struct *mm)
{
	/* CPUs holding it lazily (switch_mm(NULL) keeps the root loaded), this one
	 * included, switch to the kernel root first. */
	tlb_mm_release(mm);
	if (unlikely(!cpumask_empty(&mm->cpumask)))
		panic("mm %u destroyed while still loaded on CPU %u", mm->id,
		      cpumask_next(0, &mm->cpumask));

	mm_lock(mm);
	struct mmu_gather tlb;
	struct pt_zap_stats st = { 0, 0, 0 };
	tlb_gather_mmu_fullmm(&tlb, mm);
	pt_unmap_range(&mm->pt, 0, USER_VA_END, &tlb, &st);
	tlb_finish_mmu(&tlb);
	rss_sub(mm, &st);
	for (unsigned i = 0; i < mm->nr_regions; i++)
		region_put_obj(&mm->regions[i]);
	mm->nr_regions = 0;
	mm_unlock(mm);

	if (unlikely(mm->rss[MM_RSS_ANON] || mm->rss[MM_RSS_SHARED] || mm->pt.nr_tables))
		panic("mm %u: teardown left rss anon=%ld shared=%ld pgtables=%ld", mm->id,
		      mm->rss[MM_RSS_ANON], mm->rss[MM_RSS_SHARED], mm->pt.nr_tables);
	pt_destroy(&mm->pt);
	free_page(virt_to_page(mm));
}

/* ---- fork ---- */

struct mm_struct *dup_mm(struct mm_struct *parent)
{
	struct mm_struct *child = mm_alloc();
	if (!child)
		return NULL;
	int err = 0;
	struct pt_zap_stats st = { 0, 0, 0 };

	mm_lock(parent);
	/* The child is not visible to anyone yet: its lock is not needed. */
	for (unsigned i = 0; i < parent->nr_regions; i++) {
		child->regions[i] = parent->regions[i];
		region_get_obj(&child->regions[i]);
	}
	child->nr_regions = parent->nr_regions;
	for (unsigned i = 0; i < parent->nr_regions && !err; i++) {
		const struct vm_region *r = &parent->regions[i];
		/* Linux's vma_needs_copy(): without private pages every entry is one a
		 * fault in the child fills alike, so fork leaves the tables out. */
		if (!r->anon_vma)
			continue;
		err = pt_copy_range(&child->pt, &parent->pt, r->start, r->end, &st);
	}
	child->rss[MM_RSS_ANON] = st.anon;
	child->rss[MM_RSS_SHARED] = st.shared;
	/* Private pages were write-protected in the parent: its TLBs must forget the
	 * writable entries before anyone can write the page the child now shares. */
	if (st.anon)	/* write-protection only: nothing is freed (early ack allowed) */
		flush_tlb_mm_range_nofree(parent, 0, TLB_FLUSH_ALL, PAGE_SHIFT);
	mm_unlock(parent);

	if (err) {
		mm_put(child);
		return NULL;
	}
	return child;
}
