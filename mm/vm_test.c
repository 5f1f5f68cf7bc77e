/*
 * In-kernel tests of address spaces and page faults (suite "vm"): real #PF exceptions,
 * real CR3 switches, the real page allocator. Each test switches CPU 0 (or a remote CPU
 * through a cross-CPU call) into a test address space, touches user-range addresses
 * directly, and switches back to the kernel root before it returns.
 */
#include "kernel/ktest.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/events.h"
#include "kernel/string.h"
#include "arch/x86_64/probe.h"
#include "mm/mm.h"
#include "mm/tlbflush.h"
#include "mm/fault.h"
#include "mm/filemap.h"
#include "mm/refpage.h"
#include "mm/rmap.h"
#include "mm/page_alloc.h"

#define RW (VM_READ | VM_WRITE)

static inline u8 uread(u64 va) { return *(volatile u8 *)va; }
static inline void uwrite(u64 va, u8 v) { *(volatile u8 *)va = v; }
static inline u64 uread64(u64 va) { return *(volatile u64 *)va; }

static u64 ev(enum event e) { return event_sum(e); }

/* switch_mm(NULL) leaves a CPU in the cpumask lazily (mm/tlbflush.h): "unloaded" means
 * no CPU of the mask has it loaded actively. */
static bool no_cpu_active(struct mm_struct *mm)
{
	unsigned c;
	for_each_cpu(c, &mm->cpumask)
		if (!tlb_cpu_is_lazy(c))
			return false;
	return true;
}

KTEST(vm, faults_of_every_kind)
{
	mm_subsys_init();
	struct file_obj *f = file_obj_create(16 * PAGE_SIZE);
	KT_ASSERT(f);
	struct mm_struct *mm = mm_alloc();
	KT_ASSERT(mm);
	u64 an = (u64)vm_mmap(mm, 0, 16 * PAGE_SIZE, RW, VM_ANON, NULL);
	u64 sh = (u64)vm_mmap(mm, 0, 16 * PAGE_SIZE, RW, VM_FILE_SHARED, f);
	u64 pr = (u64)vm_mmap(mm, 0, 16 * PAGE_SIZE, RW, VM_FILE_PRIVATE, f);
	u64 rf = (u64)vm_mmap(mm, 0, 16 * PAGE_SIZE, RW, VM_REFPAGE, NULL);
	KT_ASSERT((long)an > 0 && (long)sh > 0 && (long)pr > 0 && (long)rf > 0);
	int saved = refpage_init;
	refpage_init = REFPAGE_INIT_REFPAGE;
	switch_mm(mm);
	KT_EXPECT(current_mm() == mm);
	KT_EXPECT(cpumask_test_cpu(smp_processor_id(), &mm->cpumask));

	u64 f0 = ev(EV_PGFAULT), z0 = ev(EV_PGFAULT_ZERO), a0 = ev(EV_PGFAULT_ANON);
	u64 s0 = ev(EV_PGFAULT_SHARED), c0 = ev(EV_PGFAULT_COW), r0 = ev(EV_PGFAULT_REFPAGE);
	KT_EXPECT_EQ(uread(an), 0);			/* zero page */
	KT_EXPECT_EQ(ev(EV_PGFAULT_ZERO), z0 + 1);
	uwrite(an, 0x5a);				/* zero page -> private page */
	KT_EXPECT_EQ(uread(an), 0x5a);
	uwrite(an + PAGE_SIZE, 1);			/* demand-zero write */
	KT_EXPECT_EQ(ev(EV_PGFAULT_ANON), a0 + 2);
	uwrite(sh + 100, 0x33);				/* shared file page, dirty */
	KT_EXPECT_EQ(ev(EV_PGFAULT_SHARED), s0 + 1);
	KT_EXPECT_EQ(filemap_nr_dirty(f), 1);
	KT_EXPECT_EQ(uread(pr + 100), 0x33);		/* private view of the same page */
	uwrite(pr + 100, 0x44);				/* copy on write of a file page */
	KT_EXPECT_EQ(ev(EV_PGFAULT_COW), c0 + 1);
	KT_EXPECT_EQ(uread(sh + 100), 0x33);
	KT_EXPECT_EQ(uread64(rf + 8), REFPAGE_DEFAULT_PATTERN);	/* reference page */
	uwrite(rf + 8, 0);
	KT_EXPECT_EQ(uread64(rf), REFPAGE_DEFAULT_PATTERN);
	KT_EXPECT_EQ(uread(rf + 8), 0);
	KT_EXPECT_EQ(ev(EV_PGFAULT_REFPAGE), r0 + 2);
	KT_EXPECT_EQ(ev(EV_PGFAULT), f0 + 8);
	KT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 4);	/* an x2, pr, rf */
	KT_EXPECT_EQ(mm_rss(mm, MM_RSS_SHARED), 1);	/* sh (pr's file page was replaced) */

	switch_mm(NULL);
	KT_EXPECT(current_mm() == NULL);
	KT_EXPECT(no_cpu_active(mm));
	refpage_init = saved;
	mm_put(mm);
	file_obj_put(f);
}

KTEST(vm, accessed_and_dirty_bits)
{
	struct mm_struct *mm = mm_alloc();
	KT_ASSERT(mm);
	u64 a = (u64)vm_mmap(mm, 0, 4 * PAGE_SIZE, RW, VM_ANON, NULL);
	switch_mm(mm);
	uwrite(a, 1);					/* mapped writable, then written */
	(void)uread(a + PAGE_SIZE);			/* zero page, read */
	u64 e0 = pt_get(&mm->pt, a), e1 = pt_get(&mm->pt, a + PAGE_SIZE);
	KT_EXPECT(pte_young(e0) && pte_dirty(e0));
	KT_EXPECT(pte_young(e1) && !pte_dirty(e1));
	KT_EXPECT(!(e0 & _PAGE_USER));
	KT_EXPECT_EQ(e0 & _PAGE_NX, pte_nx);
	switch_mm(NULL);
	mm_put(mm);
}

KTEST(vm, cow_after_dup)
{
	struct mm_struct *parent = mm_alloc();
	KT_ASSERT(parent);
	u64 a = (u64)vm_mmap(parent, 0, 64 * PAGE_SIZE, RW, VM_ANON, NULL);
	switch_mm(parent);
	for (int i = 0; i < 64; i++)
		uwrite(a + (u64)i * PAGE_SIZE, (u8)i);
	struct mm_struct *child = dup_mm(parent);
	KT_ASSERT(child);
	/* the parent's TLB had writable entries: they must be gone (write faults now) */
	u64 c0 = ev(EV_PGFAULT_COW);
	uwrite(a, 0xaa);				/* parent writes page 0 */
	KT_EXPECT_EQ(ev(EV_PGFAULT_COW), c0 + 1);
	switch_mm(child);
	for (int i = 0; i < 64; i++)
		KT_EXPECT_EQ(uread(a + (u64)i * PAGE_SIZE), (u8)i);	/* the child sees the fork-time data */
	uwrite(a + PAGE_SIZE, 0xcc);			/* child writes page 1 */
	switch_mm(parent);
	KT_EXPECT_EQ(uread(a), 0xaa);
	KT_EXPECT_EQ(uread(a + PAGE_SIZE), 1);		/* not the child's write */
	switch_mm(child);
	KT_EXPECT_EQ(uread(a), 0);			/* not the parent's write */
	KT_EXPECT_EQ(uread(a + PAGE_SIZE), 0xcc);
	switch_mm(NULL);
	KT_EXPECT_EQ(mm_rss(child, MM_RSS_ANON), 64);
	mm_put(child);
	mm_put(parent);
}

KTEST(vm, refpage_reads_keep_rss_flat)
{
	mm_subsys_init();
	int saved = refpage_init;
	refpage_init = REFPAGE_INIT_REFPAGE;
	struct mm_struct *mm = mm_alloc();
	KT_ASSERT(mm);
	u64 a = (u64)vm_mmap(mm, 0, 256 * PAGE_SIZE, RW, VM_REFPAGE, NULL);
	switch_mm(mm);
	(void)uread(a);					/* builds the tables */
	u64 free0 = nr_free_pages();
	bool all = true;
	for (u64 off = 0; off < 256 * PAGE_SIZE; off += 512)
		all &= uread64(a + off) == REFPAGE_DEFAULT_PATTERN;
	KT_EXPECT(all);
	KT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 0);
	KT_EXPECT_EQ(nr_free_pages(), free0);
	uwrite(a + 5 * PAGE_SIZE, 7);
	KT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 1);
	KT_EXPECT_EQ(uread(a + 5 * PAGE_SIZE), 7);
	KT_EXPECT_EQ(uread64(a + 5 * PAGE_SIZE + 8), REFPAGE_DEFAULT_PATTERN);
	KT_EXPECT_EQ(uread64(a + 6 * PAGE_SIZE), REFPAGE_DEFAULT_PATTERN);
	/* memset variant: every touched page costs a page */
	refpage_init = REFPAGE_INIT_MEMSET;
	u64 b = (u64)vm_mmap(mm, 0, 16 * PAGE_SIZE, RW, VM_REFPAGE, NULL);
	for (int i = 0; i < 16; i++)
		KT_EXPECT_EQ(uread64(b + (u64)i * PAGE_SIZE + 64), REFPAGE_DEFAULT_PATTERN);
	KT_EXPECT_EQ(mm_rss(mm, MM_RSS_ANON), 17);
	switch_mm(NULL);
	refpage_init = saved;
	mm_put(mm);
}

KTEST(vm, teardown_returns_every_page)
{
	mm_subsys_init();
	u64 free0 = nr_free_pages();
	u64 ta0 = ev(EV_PGTABLE_ALLOC), tf0 = ev(EV_PGTABLE_FREE);
	struct file_obj *f = file_obj_create(64 * PAGE_SIZE);
	struct mm_struct *mm = mm_alloc();
	KT_ASSERT(f && mm);
	u64 a = (u64)vm_mmap(mm, 0, 1024 * PAGE_SIZE, RW, VM_ANON, NULL);
	u64 s = (u64)vm_mmap(mm, 0, 64 * PAGE_SIZE, RW, VM_FILE_SHARED, f);
	u64 sp = (u64)vm_mmap(mm, 0, PUD_SIZE, RW, VM_ANON, NULL);
	switch_mm(mm);
	for (int i = 0; i < 1024; i++)
		uwrite(a + (u64)i * PAGE_SIZE, 1);
	for (int i = 0; i < 64; i++)
		uwrite(s + (u64)i * PAGE_SIZE, 2);
	for (u64 off = 0; off < PUD_SIZE; off += PMD_SIZE)	/* a page table per touch */
		(void)uread(sp + off);
	KT_EXPECT(mm_rss(mm, MM_RSS_PGTABLES) >= 512 + 2);
	struct mm_struct *child = dup_mm(mm);
	KT_ASSERT(child);
	switch_mm(child);
	uwrite(a, 9);
	switch_mm(NULL);
	mm_put(child);
	mm_put(mm);
	file_obj_put(f);
	KT_EXPECT_EQ(ev(EV_PGTABLE_ALLOC) - ta0, ev(EV_PGTABLE_FREE) - tf0);
	KT_EXPECT_EQ(nr_free_pages(), free0);
}

KTEST(vm, bad_access_is_reported)
{
	struct mm_struct *mm = mm_alloc();
	KT_ASSERT(mm);
	u64 ro = (u64)vm_mmap(mm, 0x40000000, PAGE_SIZE, VM_READ, VM_ANON, NULL);
	switch_mm(mm);
	struct fault_expect *fe = &fault_expect[smp_processor_id()];
	u64 v = 0;
	KT_EXPECT(probe_read((void *)0x50000000UL, &v));	/* no region */
	KT_EXPECT(fe->hit);
	KT_EXPECT_EQ(fe->vector, 14);
	KT_EXPECT_EQ(fe->addr, 0x50000000UL);
	KT_EXPECT(!probe_read((void *)ro, &v));		/* a region: demand-zero read */
	KT_EXPECT_EQ(v, 0);
	KT_EXPECT(probe_write((void *)ro, 1));		/* read-only region */
	KT_EXPECT(fe->hit);
	KT_EXPECT_EQ(fe->addr, ro);
	KT_EXPECT_EQ(fe->error_code & (PF_PROT | PF_WRITE), PF_PROT | PF_WRITE);
	KT_EXPECT(probe_read((void *)(ro + PAGE_SIZE), &v));	/* just past the region */
	switch_mm(NULL);
	mm_put(mm);
}

/* ---- every CPU ---- */

struct cpu_job {
	struct mm_struct *mm;
	u64 base;
	unsigned npages;
	volatile int errors;
	volatile u64 faults;
};

static void touch_on_cpu(void *arg)
{
	struct cpu_job *j = arg;
	unsigned cpu = smp_processor_id();
	struct mm_struct *prev = current_mm();
	u64 f0 = event_counts[cpu].v[EV_PGFAULT];
	switch_mm(j->mm);
	for (unsigned i = 0; i < j->npages; i++) {
		u64 va = j->base + (u64)i * PAGE_SIZE;
		if (uread(va) != 0)			/* zero page */
			j->errors++;
		uwrite(va, (u8)(cpu + i));		/* private page */
		if (uread(va) != (u8)(cpu + i))
			j->errors++;
	}
	j->faults = event_counts[cpu].v[EV_PGFAULT] - f0;
	switch_mm(prev);
}

KTEST_SMP(vm, faults_on_every_cpu, 2)
{
	static struct cpu_job jobs[NR_CPUS];
	struct mm_struct *shared = mm_alloc();
	KT_ASSERT(shared);
	const unsigned per = 32;
	u64 base = (u64)vm_mmap(shared, 0, (u64)nr_cpu_ids * per * PAGE_SIZE, RW, VM_ANON, NULL);
	/* "threads": every CPU in one address space, each on its own pages */
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		jobs[c] = (struct cpu_job){ .mm = shared, .base = base + (u64)c * per * PAGE_SIZE, .npages = per };
		KT_EXPECT_EQ(smp_call_function_single(c, touch_on_cpu, &jobs[c], true), 0);
		KT_EXPECT_EQ(jobs[c].errors, 0);
		KT_EXPECT_MSG(jobs[c].faults >= 2 * per, "CPU %u took %llu faults", c,
			      (unsigned long long)jobs[c].faults);
	}
	KT_EXPECT(no_cpu_active(shared));
	switch_mm(shared);
	for (unsigned c = 0; c < nr_cpu_ids; c++)
		for (unsigned i = 0; i < per; i++)
			KT_EXPECT_EQ(uread(jobs[c].base + (u64)i * PAGE_SIZE), (u8)(c + i));
	switch_mm(NULL);
	KT_EXPECT_EQ(mm_rss(shared, MM_RSS_ANON), nr_cpu_ids * per);
	mm_put(shared);

	/* "processes": every CPU its own address space, at the same addresses */
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		struct mm_struct *mm = mm_alloc();
		KT_ASSERT(mm);
		u64 b = (u64)vm_mmap(mm, 0x200000000UL, per * PAGE_SIZE, RW, VM_ANON, NULL);
		jobs[c] = (struct cpu_job){ .mm = mm, .base = b, .npages = per };
		KT_EXPECT_EQ(smp_call_function_single(c, touch_on_cpu, &jobs[c], true), 0);
		KT_EXPECT_EQ(jobs[c].errors, 0);
	}
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		switch_mm(jobs[c].mm);
		KT_EXPECT_EQ(uread(jobs[c].base + PAGE_SIZE), (u8)(c + 1));
		switch_mm(NULL);
		mm_put(jobs[c].mm);
	}
}

/* ---- a replaced translation is flushed on the other CPUs of the address space ---- */

struct remote_job {
	struct mm_struct *mm;
	u64 va;
	volatile u8 val;
};

static void load_and_read(void *arg)
{
	struct remote_job *j = arg;
	switch_mm(j->mm);
	j->val = uread(j->va);
}

static void just_read(void *arg)
{
	struct remote_job *j = arg;
	j->val = uread(j->va);
}

static void unload(void *arg)
{
	(void)arg;
	switch_mm(NULL);
}

KTEST_SMP(vm, replaced_page_flushed_on_remote_cpu, 2)
{
	struct mm_struct *mm = mm_alloc();
	KT_ASSERT(mm);
	u64 a = (u64)vm_mmap(mm, 0, 4 * PAGE_SIZE, RW, VM_ANON, NULL);
	struct remote_job j = { .mm = mm, .va = a, .val = 0xff };
	/* CPU 1 loads the mm and caches the zero-page translation */
	KT_ASSERT(smp_call_function_single(1, load_and_read, &j, true) == 0);
	KT_EXPECT_EQ(j.val, 0);
	KT_EXPECT(cpumask_test_cpu(1, &mm->cpumask));
	/* CPU 0 writes: the zero page is replaced, CPU 1 must forget it */
	switch_mm(mm);
	u64 ipi0 = ev(EV_TLB_REMOTE_IPI), rf0 = ev(EV_TLB_REMOTE_FLUSH);
	uwrite(a, 0x77);
	KT_EXPECT_EQ(ev(EV_TLB_REMOTE_IPI), ipi0 + 1);
	KT_EXPECT_EQ(ev(EV_TLB_REMOTE_FLUSH), rf0 + 1);
	KT_EXPECT(smp_call_function_single(1, just_read, &j, true) == 0);
	KT_EXPECT_EQ(j.val, 0x77);
	/* munmap while CPU 1 still has it loaded: its TLB is flushed, then the page freed */
	KT_EXPECT_EQ(vm_munmap(mm, a, 4 * PAGE_SIZE), 0);
	KT_EXPECT_EQ(ev(EV_TLB_REMOTE_IPI), ipi0 + 2);
	smp_call_function_single(1, unload, NULL, true);
	switch_mm(NULL);
	KT_EXPECT(no_cpu_active(mm));
	mm_put(mm);
}
