/*
 * The stale-TLB detector (suite "tlb"): remote CPUs read (and, for the downgrade, write)
 * one mapping in a tight loop in thread context; CPU 0 changes the mapping and shoots
 * down; once the shootdown has returned no remote read may return the old page and no
 * remote write may get through the read-only mapping.
 *
 *   stale_remap / stale_downgrade / stale_unmap: every protocol variant, early ack on/off,
 *       INVLPG and full-flush paths. Each test first runs with tlb_test_skip_remote=on and
 *       expects to SEE staleness (the detector's self-check); if it cannot, the test ends
 *       as SKIP with the reason (under QEMU TCG, where a stale TLB is always visible, as
 *       a failure).
 *   stale_with_pcid: the same with PCID on and off (SKIP without PCID, e.g. QEMU TCG).
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

/* ==== the stale-TLB detector ==== */

enum stale_mode { STALE_REMAP, STALE_DOWNGRADE, STALE_UNMAP };
static const char *const stale_mode_name[] = { "remap", "downgrade", "unmap" };

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
	unsigned rounds, rounds_done;
	u64 deadline;			/* after STALE_MIN_ROUNDS, no round starts past it */
	volatile u64 round, flushed, stop;
	u64 written_through;		/* downgrade: old page holds a post-shootdown write */
	bool timeout;
	struct stale_cpu cpu[NR_CPUS];
};
static struct stale_ctx sctx;

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

/*
 * Rounds are bounded by time as well (at least STALE_MIN_ROUNDS per run): booted by hand
 * with 8 vCPUs on 2 host cores under multi-threaded TCG, each round waits twice for the
 * host to schedule every remote vCPU thread, and 24 rounds of 8 variants took 37 s per
 * test. Round-robin and -icount boots run every round inside the bound.
 */
#define STALE_MIN_ROUNDS 4
#define STALE_RUN_MS 1000

static void stale_initiator(struct stale_ctx *c)
{
	for (u64 r = 1; r <= c->rounds && !c->timeout &&
			(r <= STALE_MIN_ROUNDS || rdtsc() < c->deadline); r++) {
		c->rounds_done = (unsigned)r;
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
	unsigned rounds;
	bool timeout, setup_failed;
};

static struct stale_result stale_run(int mode, unsigned rounds)
{
	struct stale_result res = { 0 };
	struct stale_ctx *c = &sctx;
	memset(c, 0, sizeof(*c));
	c->mode = mode;
	c->rounds = rounds;
	c->deadline = deadline_after_ms(STALE_RUN_MS);
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
	res.rounds = c->rounds_done;

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
	       sc.rounds, smp_num_online() - 1,
	       visible ? "the detector sees a stale TLB" : "NOT observable");
	KT_EXPECT(!sc.timeout && !sc.setup_failed);

	unsigned rmin = rounds, rmax = 0;
	for (int proto = 0; proto < 2; proto++) {
		for (int early = 0; early < 2; early++) {
			for (int full = 0; full < 2; full++) {
				tlb_protocol = proto;
				tlb_early_ack = early;
				tlb_ceiling = full ? 0 : 33;
				u64 ea0 = ev(EV_TLB_EARLY_ACK), rf0 = ev(EV_TLB_REMOTE_FLUSH);
				struct stale_result r = stale_run(mode, rounds);
				const char *pn = tlb_protocol_names[proto];
				rmin = MIN(rmin, r.rounds);
				rmax = MAX(rmax, r.rounds);
				KT_EXPECT(r.rounds >= MIN(rounds, STALE_MIN_ROUNDS));
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
	printk("# %s%s: %u..%u rounds per variant of %u (%u ms bound per variant)\n", mname, tag,
	       rmin, rmax, rounds, STALE_RUN_MS);
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
