/*
 * In-kernel tests of TLB shootdown and the mmu_gather (suite "tlb"):
 *
 *   stale_remap / stale_downgrade / stale_unmap: remote CPUs read (and, for the downgrade,
 *       write) one mapping in a tight loop in thread context; CPU 0 changes the mapping
 *       and shoots down; once the shootdown has returned no remote read may return the
 *       old page and no remote write may get through the read-only mapping. Every
 *       protocol variant, early ack on/off, INVLPG and full-flush paths. Each test first
 *       runs with tlb_test_skip_remote=on and expects to SEE staleness (the detector's
 *       self-check); if it cannot, the test ends as SKIP with the reason.
 *   stale_with_pcid: the same with PCID on and off (SKIP without PCID, e.g. QEMU TCG).
 *   lazy_cpu_catches_up, flush_ceiling, concurrent_initiators, uaf_poison,
 *   table_fallback_syncs, ptfree_variants, rcu_grace_period.
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

DEFINE_OPTION_UINT(tlb_stress_iters, "tlb_stress_iters", 50, 1, 1000000,
		   "iterations per variant of the tlb.concurrent_initiators test");

#define RW (VM_READ | VM_WRITE)
#define TEST_VA 0x40000000UL

static u64 ev(enum event e) { return event_sum(e); }

static u64 deadline_after_ms(u64 ms) { return rdtsc() + ms * tsc_khz; }

/* Every flush-policy variant, saved and restored around each test. */
struct tlb_variants {
	int proto;
	bool early, lazy, skip, pcid, nobatch, rcu;
	u64 ceiling;
	int ptfree;
};
static void variants_save(struct tlb_variants *v)
{
	*v = (struct tlb_variants){ tlb_protocol, tlb_early_ack, tlb_lazy, tlb_test_skip_remote,
				    opt_pcid, gather_nobatch, ptfree_rcu, tlb_ceiling,
				    ptfree };
}
static void variants_restore(const struct tlb_variants *v)
{
	tlb_protocol = v->proto;
	tlb_early_ack = v->early;
	tlb_lazy = v->lazy;
	tlb_test_skip_remote = v->skip;
	opt_pcid = v->pcid;
	gather_nobatch = v->nobatch;
	ptfree_rcu = v->rcu;
	tlb_ceiling = v->ceiling;
	ptfree = v->ptfree;
}

static u64 raw_pte(struct page *p, bool writable)
{
	return mk_pte(page_to_pfn(p), _PAGE_PRESENT | _PAGE_SPECIAL | pte_nx |
				      (writable ? _PAGE_RW : 0));
}

static void fill64(struct page *p, u64 v)
{
	u64 *w = page_address(p);
	for (unsigned i = 0; i < PAGE_SIZE / 8; i++)
		w[i] = v;
}

/* ==== the stale-TLB detector ==== */

enum stale_mode { STALE_REMAP, STALE_DOWNGRADE, STALE_UNMAP };
static const char *const stale_mode_name[] = { "remap", "downgrade", "unmap" };

#define PAT_A 0xa1a1a1a1a1a1a1a1ULL	/* the old page */
#define PAT_B 0xb2b2b2b2b2b2b2b2ULL	/* the new page (remap) */
#define PAT_PRE 0x5052450000000000ULL	/* remote writes before the downgrade (| round) */
#define PAT_POST 0x504f535400000000ULL	/* remote write attempts after it (| round) */

struct stale_cpu {
	volatile u64 seen;		/* round whose old mapping this CPU has cached */
	volatile u64 done;		/* round whose post-shootdown checks are done */
	u64 stale_reads, stale_writes, post_reads, setup_errors;
} __cacheline_aligned;

struct stale_ctx {
	struct mm_struct *mm;
	u64 va;
	u64 *slot;
	struct page *pa, *pb;
	int mode;
	unsigned rounds;
	volatile u64 round, flushed, stop;
	u64 written_through;		/* downgrade: old page holds a post-shootdown write */
	bool timeout;
	struct stale_cpu cpu[NR_CPUS];
};
static struct stale_ctx sctx;

static u64 uread64(u64 va) { return *(volatile u64 *)va; }

static void stale_remote(struct stale_ctx *c, struct stale_cpu *me)
{
	u64 last = 0;
	while (!atomic_load_acquire(&c->stop)) {
		u64 r = atomic_load_acquire(&c->round);
		if (r == last) {
			cpu_relax();
			continue;
		}
		/* Cache the old translation (writable and dirty for the downgrade). */
		if (c->mode == STALE_DOWNGRADE && probe_write((volatile void *)c->va, PAT_PRE | r))
			me->setup_errors++;
		u64 v = uread64(c->va);
		if (c->mode != STALE_DOWNGRADE && v != PAT_A)
			me->setup_errors++;
		atomic_store_release(&me->seen, r);
		/* Tight loop until the initiator says the shootdown has returned. The read
		 * after the acquire that sees it is the first one that must be fresh. */
		for (;;) {
			u64 f = atomic_load_acquire(&c->flushed);
			v = uread64(c->va);
			if (f >= r || atomic_load_acquire(&c->stop))
				break;
			cpu_relax();	/* `pause`: round-robin TCG hands over the host thread */
		}
		for (unsigned i = 0; i < 64; i++) {
			if (c->mode != STALE_DOWNGRADE && v == PAT_A)
				me->stale_reads++;
			me->post_reads++;
			v = uread64(c->va);
		}
		if (c->mode == STALE_DOWNGRADE && !probe_write((volatile void *)c->va, PAT_POST | r))
			me->stale_writes++;
		atomic_store_release(&me->done, r);
		last = r;
	}
}

static bool wait_all(struct stale_ctx *c, bool done, u64 r)
{
	u64 dl = deadline_after_ms(20000);
	unsigned cpu, me = smp_processor_id();
	for_each_cpu(cpu, &cpu_online_mask) {
		if (cpu == me)
			continue;
		while ((done ? c->cpu[cpu].done : c->cpu[cpu].seen) < r) {
			if (rdtsc() > dl)
				return false;
			smp_call_queue_drain();
			cpu_relax();
		}
	}
	return true;
}

static void stale_initiator(struct stale_ctx *c)
{
	for (u64 r = 1; r <= c->rounds && !c->timeout; r++) {
		fill64(c->pa, PAT_A);
		fill64(c->pb, PAT_B);
		mm_lock(c->mm);
		(void)pt_clear(c->slot);	/* last round's page, or a zero page */
		pt_set(c->slot, raw_pte(c->pa, true));
		mm_unlock(c->mm);
		flush_tlb_all();	/* clean slate, whatever the skip switch left behind */
		atomic_store_release(&c->round, r);
		if (!wait_all(c, false, r)) {
			c->timeout = true;
			break;
		}
		for (unsigned i = 0; i < 100; i++)
			cpu_relax();	/* let them spin on the old translation */
		mm_lock(c->mm);
		switch (c->mode) {
		case STALE_REMAP:
			(void)pt_replace(c->slot, raw_pte(c->pb, true));
			break;
		case STALE_DOWNGRADE:
			(void)pt_modify(c->slot, _PAGE_RW, 0);
			break;
		default:
			(void)pt_clear(c->slot);
			break;
		}
		/* Nothing is freed here (the pages are the test's): early ack may apply. */
		flush_tlb_mm_range_nofree(c->mm, c->va, c->va + PAGE_SIZE, PAGE_SHIFT);
		mm_unlock(c->mm);
		atomic_store_release(&c->flushed, r);
		if (!wait_all(c, true, r)) {
			c->timeout = true;
			break;
		}
		if (c->mode == STALE_DOWNGRADE) {
			u64 *w = page_address(c->pa);
			if ((w[0] & ~0xffffffffULL) == PAT_POST)
				c->written_through++;
		}
	}
	atomic_store_release(&c->stop, 1);
}

static void stale_fn(void *arg)
{
	struct stale_ctx *c = arg;
	unsigned me = smp_processor_id();
	switch_mm(c->mm);
	if (me == 0)
		stale_initiator(c);
	else
		stale_remote(c, &c->cpu[me]);
	switch_mm(NULL);
}

struct stale_result {
	u64 stale_reads, stale_writes, written_through, post_reads, setup_errors;
	bool timeout, setup_failed;
};

static struct stale_result stale_run(int mode, unsigned rounds)
{
	struct stale_result res = { 0 };
	struct stale_ctx *c = &sctx;
	memset(c, 0, sizeof(*c));
	c->mode = mode;
	c->rounds = rounds;
	c->va = TEST_VA;
	c->mm = mm_alloc();
	c->pa = alloc_page(0);
	c->pb = alloc_page(0);
	struct page *anchor = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!c->mm || !c->pa || !c->pb || !anchor) {
		res.setup_failed = true;
		return res;
	}
	/* A read-only anonymous region: a write that faults is a bad fault (reported and
	 * caught by probe_write); a read of an unmapped page maps the zero page. The
	 * anchor keeps the page table alive so only the leaf changes. */
	if (vm_mmap(c->mm, c->va, 2 * PAGE_SIZE, VM_READ, VM_ANON, NULL) != (long)c->va) {
		res.setup_failed = true;
		return res;
	}
	mm_lock(c->mm);
	c->slot = pt_alloc_slot(&c->mm->pt, c->va);
	u64 *aslot = pt_alloc_slot(&c->mm->pt, c->va + PAGE_SIZE);
	if (c->slot && aslot)
		pt_set(aslot, raw_pte(anchor, false));
	mm_unlock(c->mm);
	if (!c->slot || !aslot) {
		res.setup_failed = true;
		return res;
	}

	smp_run_parallel(&cpu_online_mask, stale_fn, c);

	unsigned cpu;
	for_each_cpu(cpu, &cpu_online_mask) {
		res.stale_reads += c->cpu[cpu].stale_reads;
		res.stale_writes += c->cpu[cpu].stale_writes;
		res.post_reads += c->cpu[cpu].post_reads;
		res.setup_errors += c->cpu[cpu].setup_errors;
	}
	res.written_through = c->written_through;
	res.timeout = c->timeout;

	mm_lock(c->mm);
	(void)pt_clear(c->slot);
	(void)pt_clear(aslot);
	mm_unlock(c->mm);
	flush_tlb_all();	/* no CPU keeps a translation of the test pages */
	mm_put(c->mm);
	free_page(c->pa);
	free_page(c->pb);
	free_page(anchor);
	return res;
}

static bool stale_seen(int mode, const struct stale_result *r)
{
	return mode == STALE_DOWNGRADE ? r->stale_writes != 0 : r->stale_reads != 0;
}

#define SELFCHECK_ROUNDS 8

/* Runs the detector's self-check, then every variant. Returns false when the self-check
 * could not see a stale TLB (the caller SKIPs); failures are recorded in @kt. */
static bool stale_suite(struct ktest_ctx *kt, int mode, unsigned rounds, const char *tag)
{
	struct tlb_variants saved;
	variants_save(&saved);
	const char *mname = stale_mode_name[mode];

	/* Self-check: remote flushes skipped, the detector must fire. */
	tlb_test_skip_remote = true;
	tlb_protocol = TLB_PROTO_CONCURRENT;
	tlb_early_ack = false;
	struct stale_result sc = stale_run(mode, SELFCHECK_ROUNDS);
	/* The asserted runs use the boot's value: tlb_test_skip_remote=on must make them
	 * fail, which shows the assertions below can fail. */
	tlb_test_skip_remote = saved.skip;
	if (saved.skip)
		printk("# %s%s: tlb_test_skip_remote=on: every run below skips the remote flush and "
		       "must fail\n", mname, tag);
	bool visible = stale_seen(mode, &sc);
	printk("# %s%s self-check (remote flush skipped): %llu stale reads, %llu writes through "
	       "read-only, in %u rounds on %u remote CPUs -> %s\n", mname, tag,
	       (unsigned long long)sc.stale_reads, (unsigned long long)sc.stale_writes,
	       SELFCHECK_ROUNDS, smp_num_online() - 1,
	       visible ? "the detector sees a stale TLB" : "NOT observable");
	KT_EXPECT(!sc.timeout && !sc.setup_failed);

	for (int proto = 0; proto < 2; proto++) {
		for (int early = 0; early < 2; early++) {
			for (int full = 0; full < 2; full++) {
				tlb_protocol = proto;
				tlb_early_ack = early;
				tlb_ceiling = full ? 0 : 33;
				u64 ea0 = ev(EV_TLB_EARLY_ACK), rf0 = ev(EV_TLB_REMOTE_FLUSH);
				struct stale_result r = stale_run(mode, rounds);
				const char *pn = tlb_protocol_names[proto];
				KT_EXPECT_MSG(!r.setup_failed && !r.timeout && !r.setup_errors,
					      "%s %s early_ack=%d ceiling=%d: setup failed=%d "
					      "timeout=%d setup_errors=%llu", mname, pn, early,
					      full ? 0 : 33, r.setup_failed, r.timeout,
					      (unsigned long long)r.setup_errors);
				KT_EXPECT_MSG(r.stale_reads == 0 && r.stale_writes == 0 &&
						      r.written_through == 0,
					      "%s%s %s early_ack=%d ceiling=%d: STALE TLB: %llu "
					      "reads of the old page, %llu writes through read-only "
					      "(%llu landed)", mname, tag, pn, early, full ? 0 : 33,
					      (unsigned long long)r.stale_reads,
					      (unsigned long long)r.stale_writes,
					      (unsigned long long)r.written_through);
				KT_EXPECT(ev(EV_TLB_REMOTE_FLUSH) > rf0);
				if (early)
					KT_EXPECT(ev(EV_TLB_EARLY_ACK) > ea0);
				else
					KT_EXPECT_EQ(ev(EV_TLB_EARLY_ACK), ea0);
			}
		}
	}
	variants_restore(&saved);
	return visible;
}

/* Under QEMU TCG a translation stays cached until a flush reaches that vCPU (its soft
 * TLB is per vCPU and only flushed on request), so a self-check that sees nothing there
 * means the detector is broken, not that the machine hides staleness. */
static bool staleness_known_visible(void)
{
	return boot_cpu.hypervisor && !strcmp(boot_cpu.hv_vendor, "TCGTCGTCGTCG");
}

static void stale_not_observable(struct ktest_ctx *kt)
{
	KT_EXPECT_MSG(!staleness_known_visible(),
		      "QEMU TCG keeps every translation until it is flushed, yet the self-check "
		      "with the remote flush skipped saw no stale access: the detector is broken");
	if (!kt->failures)
		kt_skip("a stale TLB could not be observed here even with the remote flush "
			"skipped (the CPU refilled the TLB): the variant runs above prove nothing");
}

#define STALE_TEST(mode_, rounds_)                                                          \
	do {                                                                                \
		if (!stale_suite(kt, mode_, rounds_, ""))                                   \
			stale_not_observable(kt);                                           \
	} while (0)

KTEST_SMP(tlb, stale_remap, 2)
{
	STALE_TEST(STALE_REMAP, 24);
}

KTEST_SMP(tlb, stale_downgrade, 2)
{
	/* Few rounds: each correct round makes every remote take one reported fault. */
	STALE_TEST(STALE_DOWNGRADE, 3);
}

KTEST_SMP(tlb, stale_unmap, 2)
{
	STALE_TEST(STALE_UNMAP, 24);
}

KTEST_SMP(tlb, stale_with_pcid, 2)
{
	if (!boot_cpu.pcid)
		kt_skip("the CPU has no PCID (QEMU TCG emulates neither PCID nor INVPCID): "
			"the PCID paths are not exercised on this machine");
	struct tlb_variants saved;
	variants_save(&saved);
	bool visible = true;
	for (int p = 1; p >= 0; p--) {
		opt_pcid = p;
		printk("# pcid=%s invpcid=%s\n", p ? "on" : "off", boot_cpu.invpcid ? "yes" : "no");
		visible &= stale_suite(kt, STALE_REMAP, 16, p ? " pcid=on" : " pcid=off");
		visible &= stale_suite(kt, STALE_UNMAP, 16, p ? " pcid=on" : " pcid=off");
	}
	variants_restore(&saved);
	if (!visible)
		stale_not_observable(kt);
}

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

struct conc_ctx {
	struct mm_struct *mm;
	u64 iters;
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
	for (u64 i = 0; i < c->iters; i++) {
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
		       (unsigned long long)c->iters, (unsigned long long)(dt / tsc_khz),
		       (unsigned long long)(ev(EV_TLB_FLUSH_REQ) - req0),
		       (unsigned long long)(ev(EV_TLB_REMOTE_FLUSH) - rf0),
		       (unsigned long long)(ev(EV_TLB_SKIP_UPTODATE) - sk0),
		       (unsigned long long)(ev(EV_TLB_EARLY_ACK) - ea0));
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

/* ==== the grace period ==== */

struct rcu_ctx {
	volatile u32 holding, release, cb_ran;
	volatile u32 ran_early;
	struct rcu_head head;
};
static struct rcu_ctx rctx;

static void rcu_test_cb(struct rcu_head *h)
{
	(void)h;
	rctx.cb_ran = 1;
}

static void rcu_fn(void *arg)
{
	struct rcu_ctx *c = arg;
	if (smp_processor_id() == 1) {
		/* a read-side section: interrupts off, no call served */
		local_irq_disable();
		atomic_store_release(&c->holding, 1);
		while (!atomic_load_acquire(&c->release))
			cpu_relax();
		local_irq_enable();
		return;
	}
	if (smp_processor_id() != 0)
		return;
	while (!atomic_load_acquire(&c->holding))
		cpu_relax();
	call_rcu(&c->head, rcu_test_cb);
	u64 dl = deadline_after_ms(20);
	while (rdtsc() < dl) {
		(void)rcu_poll();
		cpu_relax();
	}
	c->ran_early = c->cb_ran;
	atomic_store_release(&c->release, 1);
	rcu_barrier();
}

KTEST_SMP(tlb, rcu_grace_period, 2)
{
	struct rcu_stats st0, st1;
	rcu_get_stats(&st0);
	u64 gp0 = ev(EV_RCU_GP);
	synchronize_rcu();
	KT_EXPECT(ev(EV_RCU_GP) > gp0);
	memset(&rctx, 0, sizeof(rctx));
	smp_run_parallel(&cpu_online_mask, rcu_fn, &rctx);
	KT_EXPECT_MSG(!rctx.ran_early, "callback ran while CPU 1 was in a read-side section");
	KT_EXPECT(rctx.cb_ran);
	rcu_get_stats(&st1);
	u64 n = st1.gp_completed - st0.gp_completed;
	KT_EXPECT(n >= 2);
	printk("# %llu grace periods, mean latency %llu cycles, max %llu (the max includes "
	       "the 20 ms read-side section)\n", (unsigned long long)n,
	       (unsigned long long)(n ? (st1.lat_sum - st0.lat_sum) / n : 0),
	       (unsigned long long)st1.lat_max);
}

/*
 * Unmapping a reference-page region: the reference page is mapped by special entries the
 * gather does not hold, and the region's reference may be the last one. It must be
 * released only after every TLB forgot it (found in review: vm_munmap used to drop it
 * before the shootdown, and CPU 1 read the freed page's poison through its TLB).
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
