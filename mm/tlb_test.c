/*
 * In-kernel tests of TLB shootdown and the mmu_gather (suite "tlb"; the stale-TLB
 * detector is in mm/tlb_stale_test.c): lazy_cpu_catches_up, flush_ceiling,
 * concurrent_initiators, uaf_poison, table_fallback_syncs, ptfree_variants,
 * refpage_released_after_shootdown.
 *
 * Remote work runs through smp_run_parallel (thread context, interrupts on), so remote
 * CPUs take flush IPIs exactly as a thread of a process would.
 */
#include "kernel/ktest.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/events.h"
#include "kernel/options.h"
#include "kernel/rcu.h"
#include "kernel/string.h"
#include "arch/x86_64/probe.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/tsc.h"
#include "arch/x86_64/irqflags.h"
#include "mm/mm.h"
#include "mm/tlbflush.h"
#include "mm/mmu_gather.h"
#include "mm/page_alloc.h"
#include "mm/page_debug.h"
#include "mm/refpage.h"
#include "mm/tlb_test.h"

DEFINE_OPTION_UINT(tlb_stress_iters, "tlb_stress_iters", 50, 1, 1000000,
		   "iterations per variant of the tlb.concurrent_initiators test (at most: after "
		   "the first, a variant stops at 2 s)");

/* ==== lazy TLB ==== */

struct lazy_job {
	struct mm_struct *mm;
	u64 va;
	u64 val;
};
static void lazy_load_read(void *arg)
{
	struct lazy_job *j = arg;
	switch_mm(j->mm);
	j->val = uread64(j->va);
}
static void lazy_leave(void *arg)
{
	(void)arg;
	switch_mm(NULL);
}
static void lazy_read_only(void *arg)
{
	struct lazy_job *j = arg;
	j->val = uread64(j->va);
}

KTEST_SMP(tlb, lazy_cpu_catches_up, 2)
{
	struct tlb_variants saved;
	variants_save(&saved);
	tlb_lazy = true;
	struct mm_struct *mm = mm_alloc();
	struct page *pa = alloc_page(0), *pb = alloc_page(0), *anchor = alloc_page(__GFP_ZERO);
	KT_ASSERT(mm && pa && pb && anchor);
	fill64(pa, PAT_A);
	fill64(pb, PAT_B);
	KT_ASSERT(vm_mmap(mm, TEST_VA, 4 * PAGE_SIZE, VM_READ, VM_ANON, NULL) == (long)TEST_VA);
	mm_lock(mm);
	u64 *slot = pt_alloc_slot(&mm->pt, TEST_VA);
	u64 *aslot = pt_alloc_slot(&mm->pt, TEST_VA + PAGE_SIZE);
	pt_set(slot, raw_pte(pa, false));
	pt_set(aslot, raw_pte(anchor, false));
	mm_unlock(mm);

	struct lazy_job j = { mm, TEST_VA, 0 };
	KT_ASSERT(smp_call_function_single(1, lazy_load_read, &j, true) == 0);
	KT_EXPECT_EQ(j.val, PAT_A);
	KT_ASSERT(smp_call_function_single(1, lazy_leave, NULL, true) == 0);
	KT_EXPECT(tlb_cpu_is_lazy(1));
	KT_EXPECT(cpumask_test_cpu(1, &mm->cpumask));

	/* A remap that frees no tables skips the lazy CPU. */
	u64 sl0 = ev(EV_TLB_SKIP_LAZY), ipi0 = ev(EV_TLB_REMOTE_IPI);
	mm_lock(mm);
	(void)pt_replace(slot, raw_pte(pb, false));
	flush_tlb_mm_range_nofree(mm, TEST_VA, TEST_VA + PAGE_SIZE, PAGE_SHIFT);
	mm_unlock(mm);
	KT_EXPECT_EQ(ev(EV_TLB_SKIP_LAZY), sl0 + 1);
	KT_EXPECT_EQ(ev(EV_TLB_REMOTE_IPI), ipi0);
	/* Still lazy with the old root: what its TLB holds is not our business, but say it. */
	KT_ASSERT(smp_call_function_single(1, lazy_read_only, &j, true) == 0);
	printk("# lazy CPU 1 read %s through the still-loaded root (no flush sent to it)\n",
	       j.val == PAT_A ? "the OLD page (stale TLB kept while lazy, as expected)" :
				"the new page (its TLB entry was gone)");
	/* Switching back catches up through the generation. */
	KT_ASSERT(smp_call_function_single(1, lazy_load_read, &j, true) == 0);
	KT_EXPECT_EQ(j.val, PAT_B);

	/* Lazy again; a flush that frees tables must reach it, and it leaves the mm. */
	KT_ASSERT(smp_call_function_single(1, lazy_leave, NULL, true) == 0);
	u64 ll0 = ev(EV_TLB_LAZY_LEAVE);
	ipi0 = ev(EV_TLB_REMOTE_IPI);
	flush_tlb_mm_range(mm, TEST_VA, TEST_VA + PAGE_SIZE, PAGE_SHIFT, true);
	KT_EXPECT_EQ(ev(EV_TLB_REMOTE_IPI), ipi0 + 1);
	KT_EXPECT_EQ(ev(EV_TLB_LAZY_LEAVE), ll0 + 1);
	KT_EXPECT(!cpumask_test_cpu(1, &mm->cpumask));

	/* Lazy skipping off: a leaf-only flush reaches the lazy CPU too. */
	KT_ASSERT(smp_call_function_single(1, lazy_load_read, &j, true) == 0);
	KT_ASSERT(smp_call_function_single(1, lazy_leave, NULL, true) == 0);
	tlb_lazy = false;
	sl0 = ev(EV_TLB_SKIP_LAZY);
	ipi0 = ev(EV_TLB_REMOTE_IPI);
	flush_tlb_mm_range_nofree(mm, TEST_VA, TEST_VA + PAGE_SIZE, PAGE_SHIFT);
	KT_EXPECT_EQ(ev(EV_TLB_SKIP_LAZY), sl0);
	KT_EXPECT_EQ(ev(EV_TLB_REMOTE_IPI), ipi0 + 1);
	KT_EXPECT(!cpumask_test_cpu(1, &mm->cpumask));

	/* Destroying an mm held lazily makes the holder leave first. */
	KT_ASSERT(smp_call_function_single(1, lazy_load_read, &j, true) == 0);
	KT_ASSERT(smp_call_function_single(1, lazy_leave, NULL, true) == 0);
	mm_lock(mm);
	(void)pt_clear(slot);
	(void)pt_clear(aslot);
	mm_unlock(mm);
	flush_tlb_all();
	mm_put(mm);	/* panics if a CPU still had it loaded */
	free_page(pa);
	free_page(pb);
	free_page(anchor);
	variants_restore(&saved);
}

/* ==== the ceiling ==== */

KTEST(tlb, flush_ceiling)
{
	struct tlb_variants saved;
	variants_save(&saved);
	struct mm_struct *mm = mm_alloc();
	KT_ASSERT(mm);
	switch_mm(mm);
	tlb_ceiling = 33;
	u64 i0 = ev(EV_TLB_INVLPG), f0 = ev(EV_TLB_FULL_FLUSH), g0 = ev(EV_TLB_SKIP_UPTODATE);
	flush_tlb_mm_range_nofree(mm, TEST_VA, TEST_VA + 33 * PAGE_SIZE, PAGE_SHIFT);
	KT_EXPECT_EQ(ev(EV_TLB_INVLPG), i0 + 33);
	KT_EXPECT_EQ(ev(EV_TLB_FULL_FLUSH), f0);
	flush_tlb_mm_range_nofree(mm, TEST_VA, TEST_VA + 34 * PAGE_SIZE, PAGE_SHIFT);
	KT_EXPECT_EQ(ev(EV_TLB_INVLPG), i0 + 33);
	KT_EXPECT_EQ(ev(EV_TLB_FULL_FLUSH), f0 + 1);
	/* 2 MiB stride: 4 strides are 4 INVLPGs */
	flush_tlb_mm_range_nofree(mm, TEST_VA, TEST_VA + 4 * PMD_SIZE, PMD_SHIFT);
	KT_EXPECT_EQ(ev(EV_TLB_INVLPG), i0 + 37);
	tlb_ceiling = 0;
	flush_tlb_mm_range_nofree(mm, TEST_VA, TEST_VA + PAGE_SIZE, PAGE_SHIFT);
	KT_EXPECT_EQ(ev(EV_TLB_FULL_FLUSH), f0 + 2);
	KT_EXPECT_EQ(ev(EV_TLB_SKIP_UPTODATE), g0);
	KT_EXPECT_EQ(cpu_tlbstate[0].loaded_gen, mm->tlb_gen);
	switch_mm(NULL);
	mm_put(mm);
	variants_restore(&saved);
}

/* ==== concurrent initiators ==== */

#define CONC_PAGES 4

/*
 * Bounded by time as well as by tlb_stress_iters (at least CONC_MIN_ITERS per variant):
 * booted by hand with 8 vCPUs on 2 host cores under multi-threaded TCG, each of the six
 * barriers per iteration waits for the host to schedule every vCPU thread. Round-robin
 * and -icount boots run every iteration well inside the bound.
 */
#define CONC_MIN_ITERS 1
#define CONC_SECONDS 2

struct conc_ctx {
	struct mm_struct *mm;
	u64 iters, deadline;
	volatile u64 iters_done;
	volatile u32 stop;
	u32 ncpus;
	struct smp_barrier bar;
	volatile u64 errors, stale, lost, faults_bad;
	volatile u64 first_bad;
};
static struct conc_ctx cctx;

static u64 conc_base(unsigned cpu) { return TEST_VA + (u64)cpu * PMD_SIZE; }
static u64 conc_tag(unsigned cpu, u64 i) { return 0x7a6700000000ULL | ((u64)cpu << 24) | (i + 1); }

static void conc_fn(void *arg)
{
	struct conc_ctx *c = arg;
	unsigned me = smp_processor_id();
	u64 own = conc_base(me);
	switch_mm(c->mm);
	if (vm_mmap(c->mm, own, CONC_PAGES * PAGE_SIZE, RW, VM_ANON, NULL) != (long)own)
		atomic_inc(&c->errors);
	smp_barrier_wait(&c->bar);
	for (u64 i = 0; !c->stop; i++) {
		for (unsigned p = 0; p < CONC_PAGES; p++)
			*(volatile u64 *)(own + p * PAGE_SIZE) = conc_tag(me, i);
		smp_barrier_wait(&c->bar);
		/* every CPU caches every other CPU's translations */
		for (unsigned o = 0; o < c->ncpus; o++) {
			if (o == me)
				continue;
			for (unsigned p = 0; p < CONC_PAGES; p++)
				if (uread64(conc_base(o) + p * PAGE_SIZE) != conc_tag(o, i))
					atomic_inc(&c->errors);
		}
		smp_barrier_wait(&c->bar);
		/* everyone unmaps at once: concurrent initiators, flushing each other, pages
		 * and tables freed; then maps the range again (empty) */
		if (vm_munmap(c->mm, own, CONC_PAGES * PAGE_SIZE) ||
		    vm_mmap(c->mm, own, CONC_PAGES * PAGE_SIZE, RW, VM_ANON, NULL) != (long)own)
			atomic_inc(&c->errors);
		smp_barrier_wait(&c->bar);
		/* the old pages are freed: any old value seen now is a lost flush */
		for (unsigned o = 0; o < c->ncpus; o++) {
			if (o == me)
				continue;
			for (unsigned p = 0; p < CONC_PAGES; p++) {
				u64 v = uread64(conc_base(o) + p * PAGE_SIZE);
				if (v != 0) {
					atomic_inc(&c->stale);
					c->first_bad = v;
				}
			}
		}
		/* raw flush requests from everyone at once, several variants of range */
		for (unsigned k = 0; k < 4; k++)
			flush_tlb_mm_range_flags(c->mm, own, own + ((k & 1) ? 64 : 1) * PAGE_SIZE,
						 PAGE_SHIFT, k == 3 ? TLB_FLUSH_FREES_PAGES : 0);
		smp_barrier_wait(&c->bar);
		/* every request was acknowledged: every CPU has caught up */
		unsigned long f = local_irq_save();
		if (cpu_tlbstate[me].loaded_gen != atomic_load(&c->mm->tlb_gen))
			atomic_inc(&c->lost);
		local_irq_restore(f);
		/* CPU 0 decides between the last two barriers; all read it after the last one,
		 * before CPU 0 can decide again */
		if (me == 0) {
			c->iters_done = i + 1;
			c->stop = i + 1 >= c->iters ||
				  (i + 1 >= CONC_MIN_ITERS && rdtsc() > c->deadline);
		}
		smp_barrier_wait(&c->bar);
	}
	switch_mm(NULL);
}

KTEST_SMP(tlb, concurrent_initiators, 2)
{
	struct tlb_variants saved;
	variants_save(&saved);
	mm_subsys_init();
	u64 free0 = nr_free_pages();
	for (int v = 0; v < 4; v++) {
		tlb_protocol = v & 1;
		tlb_early_ack = v >> 1;
		struct conc_ctx *c = &cctx;
		memset(c, 0, sizeof(*c));
		c->mm = mm_alloc();
		KT_ASSERT(c->mm);
		c->iters = tlb_stress_iters;
		c->deadline = deadline_after_ms(1000 * CONC_SECONDS);
		c->ncpus = smp_num_online();
		smp_barrier_init(&c->bar, c->ncpus);
		u64 req0 = ev(EV_TLB_FLUSH_REQ), rf0 = ev(EV_TLB_REMOTE_FLUSH);
		u64 sk0 = ev(EV_TLB_SKIP_UPTODATE), ea0 = ev(EV_TLB_EARLY_ACK);
		u64 t0 = rdtsc();
		smp_run_parallel(&cpu_online_mask, conc_fn, c);
		u64 dt = rdtsc() - t0;
		printk("# %s early_ack=%s: %u CPUs x %llu iterations in %llu ms: %llu flush "
		       "requests, %llu remote flushes, %llu skipped as caught up, %llu early acks\n",
		       tlb_protocol_names[v & 1], v >> 1 ? "on" : "off", c->ncpus,
		       (unsigned long long)c->iters_done, (unsigned long long)(dt / tsc_khz),
		       (unsigned long long)(ev(EV_TLB_FLUSH_REQ) - req0),
		       (unsigned long long)(ev(EV_TLB_REMOTE_FLUSH) - rf0),
		       (unsigned long long)(ev(EV_TLB_SKIP_UPTODATE) - sk0),
		       (unsigned long long)(ev(EV_TLB_EARLY_ACK) - ea0));
		KT_EXPECT(c->iters_done >= MIN(CONC_MIN_ITERS, c->iters));
		KT_EXPECT_EQ(c->errors, 0);
		KT_EXPECT_MSG(c->stale == 0, "%llu reads saw a freed page's old contents (last %#llx)",
			      (unsigned long long)c->stale, (unsigned long long)c->first_bad);
		KT_EXPECT_EQ(c->lost, 0);
		mm_put(c->mm);
	}
	variants_restore(&saved);
	struct page_check_result r;
	unsigned errs = page_alloc_check_report(&r);
	KT_EXPECT_MSG(errs == 0, "page allocator inconsistent: %u errors, first: %s (pfn %#llx)",
		      errs, r.first_error ? r.first_error : "?", (unsigned long long)r.first_bad_pfn);
	KT_EXPECT_EQ(nr_free_pages(), free0);
}

/* ==== use after free: poisoned pages ==== */

struct uaf_job {
	struct mm_struct *mm;
	u64 va;
	u64 val;
	bool faulted;
};
static void uaf_load(void *arg)
{
	struct uaf_job *j = arg;
	switch_mm(j->mm);
	j->val = uread64(j->va);
}
static void uaf_probe(void *arg)
{
	struct uaf_job *j = arg;
	j->faulted = probe_read((const volatile void *)j->va, &j->val);
}
static void uaf_unload(void *arg)
{
	(void)arg;
	switch_mm(NULL);
}

static bool is_poison(u64 v)
{
	return v == 0x0101010101010101ULL * PAGE_POISON_BYTE;
}

KTEST_SMP(tlb, uaf_poison, 2)
{
	if (!page_debug)
		kt_skip("needs page_debug=on (only then are freed pages poisoned)");
	struct tlb_variants saved;
	variants_save(&saved);
	for (int skip = 1; skip >= 0; skip--) {
		struct mm_struct *mm = mm_alloc();
		KT_ASSERT(mm);
		KT_ASSERT(vm_mmap(mm, TEST_VA, PAGE_SIZE, RW, VM_ANON, NULL) == (long)TEST_VA);
		switch_mm(mm);
		*(volatile u64 *)TEST_VA = PAT_A;
		struct uaf_job j = { mm, TEST_VA, 0, false };
		KT_ASSERT(smp_call_function_single(1, uaf_load, &j, true) == 0);
		KT_EXPECT_EQ(j.val, PAT_A);
		tlb_test_skip_remote = skip;
		u64 pf0 = ev(EV_PGTABLE_FREE);
		KT_EXPECT_EQ(vm_munmap(mm, TEST_VA, PAGE_SIZE), 0);	/* page and tables freed */
		tlb_test_skip_remote = false;
		KT_EXPECT(ev(EV_PGTABLE_FREE) > pf0);
		KT_ASSERT(smp_call_function_single(1, uaf_probe, &j, true) == 0);
		if (skip) {
			printk("# remote flush skipped: CPU 1 %s\n",
			       j.faulted ? "faulted (TLB entry gone anyway: not observable here)" :
			       is_poison(j.val) ? "read the POISON of the freed page: use after free "
						  "caught by page_debug" :
						  "read a freed page that was already reused");
		} else {
			KT_EXPECT_MSG(j.faulted, "CPU 1 reached a freed page after the shootdown "
				      "(read %#llx%s)", (unsigned long long)j.val,
				      is_poison(j.val) ? ", poison" : "");
		}
		smp_call_function_single(1, uaf_unload, NULL, true);
		switch_mm(NULL);
		flush_tlb_all();
		mm_put(mm);
	}
	variants_restore(&saved);
}

/* ==== the table fallback ==== */

static void touch_sparse(struct mm_struct *mm, u64 base, unsigned n)
{
	switch_mm(mm);
	for (unsigned i = 0; i < n; i++)
		(void)uread64(base + (u64)i * PMD_SIZE);	/* zero page: one PT each */
	switch_mm(NULL);
}

KTEST_SMP(tlb, table_fallback_syncs, 2)
{
	struct tlb_variants saved;
	variants_save(&saved);
	struct mm_struct *mm = mm_alloc();
	KT_ASSERT(mm);
	const unsigned n = 16;
	KT_ASSERT(vm_mmap(mm, TEST_VA, n * PMD_SIZE, VM_READ, VM_ANON, NULL) == (long)TEST_VA);
	touch_sparse(mm, TEST_VA, n);
	long tables = mm_rss(mm, MM_RSS_PGTABLES);
	KT_EXPECT(tables >= (long)n);
	u64 fb0 = ev(EV_GATHER_FALLBACK), sy0 = ev(EV_TLB_TABLE_SYNC), pf0 = ev(EV_PGTABLE_FREE);
	u64 calls0 = ev(EV_SMP_CALL_RUN);
	gather_nobatch = true;	/* fault injection: no batch page can be had */
	KT_EXPECT_EQ(vm_munmap(mm, TEST_VA, n * PMD_SIZE), 0);
	gather_nobatch = false;
	u64 freed = ev(EV_PGTABLE_FREE) - pf0;
	KT_EXPECT_EQ(freed, (u64)tables - (u64)mm_rss(mm, MM_RSS_PGTABLES));
	KT_EXPECT_EQ(ev(EV_TLB_TABLE_SYNC) - sy0, freed);
	KT_EXPECT(ev(EV_GATHER_FALLBACK) - fb0 >= freed);
	KT_EXPECT(ev(EV_SMP_CALL_RUN) - calls0 >= freed);	/* the empty calls ran remotely */
	printk("# %llu tables freed through the fallback (flush, empty call to every CPU, free)\n",
	       (unsigned long long)freed);
	mm_put(mm);
	KT_EXPECT_EQ(page_alloc_check_report(NULL), 0);
	variants_restore(&saved);
}

/* ==== ptfree variants ==== */

KTEST_SMP(tlb, ptfree_variants, 2)
{
	struct tlb_variants saved;
	variants_save(&saved);
	const unsigned n = 64;
	mm_subsys_init();	/* the zero page and the reference page are allocated once */
	for (int v = 0; v < 4; v++) {
		ptfree = v & 1 ? PTFREE_BULK : PTFREE_LOOP;
		ptfree_rcu = v >> 1;
		u64 free0 = nr_free_pages();
		struct mm_struct *mm = mm_alloc();
		KT_ASSERT(mm);
		KT_ASSERT(vm_mmap(mm, TEST_VA, n * PMD_SIZE, VM_READ, VM_ANON, NULL) == (long)TEST_VA);
		touch_sparse(mm, TEST_VA, n);
		long tables = mm_rss(mm, MM_RSS_PGTABLES);
		u64 pa0 = ev(EV_PGTABLE_ALLOC), pf0 = ev(EV_PGTABLE_FREE), bk0 = ev(EV_PTFREE_BULK);
		u64 df0 = ev(EV_RCU_TABLES_DEFERRED);
		mm_put(mm);	/* exit: every table freed through the gather */
		rcu_barrier();
		u64 freed = ev(EV_PGTABLE_FREE) - pf0;
		KT_EXPECT_EQ(freed, (u64)tables + 1 + (ev(EV_PGTABLE_ALLOC) - pa0));	/* + root */
		if (v & 1)
			KT_EXPECT(ev(EV_PTFREE_BULK) > bk0);
		else
			KT_EXPECT_EQ(ev(EV_PTFREE_BULK), bk0);
		if (v >> 1)
			KT_EXPECT_EQ(ev(EV_RCU_TABLES_DEFERRED) - df0, (u64)tables);
		else
			KT_EXPECT_EQ(ev(EV_RCU_TABLES_DEFERRED), df0);
		KT_EXPECT_EQ(gather_tables_waiting, 0);
		KT_EXPECT_MSG(nr_free_pages() == free0, "ptfree=%s ptfree_rcu=%s: %lld pages not "
			      "returned", ptfree_names[v & 1 ? PTFREE_BULK : PTFREE_LOOP], v >> 1 ? "on" : "off",
			      (long long)(free0 - nr_free_pages()));
	}
	KT_EXPECT_EQ(page_alloc_check_report(NULL), 0);
	variants_restore(&saved);
}

/*
 * Unmapping a reference-page region: the reference page is mapped by special entries the
 * gather does not hold, and the region's reference may be the last one. It must be
 * released only after every TLB forgot it: dropped before the shootdown, CPU 1 would
 * read the freed page's poison through its stale TLB entry.
 */
struct rp_ctx {
	struct mm_struct *mm;
	volatile u64 stop, go;
	volatile u64 poison_reads, reads;
};
static struct rp_ctx rpctx;

static void rp_reader(struct rp_ctx *c)
{
	switch_mm(c->mm);
	while (!atomic_load_acquire(&c->go))
		cpu_relax();
	while (!atomic_load_acquire(&c->stop)) {
		u64 v;
		if (probe_read((const volatile void *)TEST_VA, &v))
			break;	/* faulted: the mapping is gone from this TLB */
		c->reads++;
		if (is_poison(v))
			c->poison_reads++;
	}
	switch_mm(NULL);
}

static void rp_fn(void *arg)
{
	struct rp_ctx *c = arg;
	if (smp_processor_id() == 1)
		rp_reader(c);
	if (smp_processor_id() != 0)
		return;
	while (c->reads < 1000)
		cpu_relax();
	vm_munmap(c->mm, TEST_VA, PAGE_SIZE);
	atomic_store_release(&c->stop, 1);
}

KTEST_SMP(tlb, refpage_released_after_shootdown, 2)
{
	if (!page_debug)
		kt_skip("needs page_debug=on (only then are freed pages poisoned)");
	struct tlb_variants saved;
	variants_save(&saved);
	u64 poison = 0;
	for (int proto = 0; proto < 2; proto++) {
		tlb_protocol = proto ? TLB_PROTO_CONCURRENT : TLB_PROTO_SEQUENTIAL;
		for (int i = 0; i < 50; i++) {
			struct rp_ctx *c = &rpctx;
			memset(c, 0, sizeof(*c));
			c->mm = mm_alloc();
			KT_ASSERT(c->mm);
			struct refpage *ref = refpage_create(0x1122334455667788ULL);
			KT_ASSERT(ref);
			KT_ASSERT(vm_mmap(c->mm, TEST_VA, PAGE_SIZE, VM_READ, VM_REFPAGE, ref) == (long)TEST_VA);
			refpage_put(ref);	/* the region holds the last reference now */
			atomic_store_release(&c->go, 1);
			cpumask_t two;
			cpumask_clear(&two);
			cpumask_set_cpu(0, &two);
			cpumask_set_cpu(1, &two);
			smp_run_parallel(&two, rp_fn, c);
			poison += c->poison_reads;
			mm_put(c->mm);
		}
	}
	variants_restore(&saved);
	KT_EXPECT_MSG(poison == 0, "use after free: %llu reads of the freed reference page's poison",
		      (unsigned long long)poison);
}
