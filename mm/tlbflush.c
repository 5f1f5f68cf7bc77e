/*
 * TLB flushing and address-space switching. See mm/tlbflush.h for the model.
 * Policy decisions, all in this file (the pure ones in mm/tlbflush.h):
 *   - which CPUs are asked: tlb_pick_targets() (cpumask, minus the caller, minus lazy
 *     CPUs when tlb_may_skip_lazy() allows, nobody when the test switch says so);
 *   - in what order: the `tlb_protocol` variant in flush_tlb_mm_range_flags();
 *   - when a responder acknowledges: tlb_early_ack_allowed() + the `tlb_early_ack`
 *     variant, in flush_tlb_func_remote();
 *   - what each CPU flushes: tlb_flush_decide() in flush_tlb_func() (the one place
 *     deciding between nothing, INVLPG per stride, and a full flush);
 *   - how an address space is loaded: load_mm_cr3() (PCID slots, no-flush loads).
 */
#include "mm/tlbflush.h"
#include "mm/mm.h"
#include "arch/x86_64/tlb.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/irqflags.h"
#include "kernel/smp.h"
#include "kernel/rcu.h"
#include "kernel/options.h"
#include "kernel/percpu.h"
#include "kernel/events.h"
#include "kernel/assert.h"

/* The shootdown switches only change what happens on other CPUs. */
static const char *needs_remote(u64 v, unsigned ncpus)
{
	(void)v;
	return ncpus == 1 ? "one CPU takes part, so no flush reaches another CPU and every value "
			    "runs the same code" : NULL;
}

static const char *pcid_unusable(u64 v, unsigned ncpus)
{
	(void)ncpus;
	return v && !boot_cpu.pcid ? "the CPU has no PCID (CPUID.01H:ECX bit 17; QEMU TCG offers "
				     "none), so pcid=on would run exactly the pcid=off code" : NULL;
}

DEFINE_VARIANT_UINT(tlb_ceiling, "tlb_ceiling", 33, 0, 1UL << 20,
		    "largest flush (in pages) done with one INVLPG per page; above it a full flush");
DEFINE_VARIANT_ENUM_HW(tlb_protocol, "tlb_protocol", TLB_PROTO_CONCURRENT, needs_remote,
		       "shootdown order", TLB_PROTOCOL_LIST);
DEFINE_VARIANT_BOOL_HW(tlb_early_ack, "tlb_early_ack", false, needs_remote,
		    "responders acknowledge before flushing, for flushes that free nothing "
		    "(no pages, no page tables)");
DEFINE_VARIANT_BOOL_HW(tlb_lazy, "tlb_lazy", true, needs_remote,
		    "flushes that free no page tables skip CPUs holding the mm lazily (they "
		    "catch up through the generation when they switch back)");
DEFINE_VARIANT_BOOL_HW(opt_pcid, "pcid", true, pcid_unusable,
		       "use PCID (dynamic ASIDs, no-flush CR3 loads); on is refused on a CPU "
		       "without PCID, where the default becomes off");
DEFINE_VARIANT_BOOL_HW(tlb_test_skip_remote, "tlb_test_skip_remote", false, needs_remote,
		    "test only: never flush remote CPUs (breaks correctness; the stale-TLB test "
		    "uses it to prove it can see a stale TLB)");

#define CR3_NOFLUSH (1UL << 63)

struct tlb_state cpu_tlbstate[NR_CPUS];

struct flush_info {
	struct mm_struct *mm;
	u64 start, end;
	unsigned stride_shift;
	unsigned flags;		/* TLB_FLUSH_* */
	u64 new_gen;
	bool early_ack;
	u32 acks_left;		/* early ack: responders that have not acknowledged */
};

bool tlb_pcid_active(void)
{
	return READ_ONCE(opt_pcid) && boot_cpu.pcid;
}

bool tlb_cpu_is_lazy(unsigned cpu)
{
	return atomic_load(&cpu_tlbstate[cpu].is_lazy);
}

/* Full flush of this CPU's current context: INVPCID single-context when an ASID is in
 * use and the CPU has INVPCID, else a CR3 reload (which, with PCIDE, flushes the current
 * PCID only). */
static void flush_local_full(struct tlb_state *ts)
{
	if (ts->cur_asid != TLB_ASID_NONE && boot_cpu.invpcid)
		invpcid(INVPCID_SINGLE_CTX, ts->cur_asid + 1u, 0);
	else
		flush_tlb_local_full();
}

static void save_asid_gen(struct tlb_state *ts)
{
	if (ts->cur_asid != TLB_ASID_NONE)
		ts->asids[ts->cur_asid].gen = ts->loaded_gen;
}

/* Interrupts off. Load the kernel-only root (PCID 0, flushed) and leave the old mm. */
static void leave_mm_local(struct tlb_state *ts, unsigned cpu)
{
	assert_irqs_disabled();
	struct mm_struct *prev = ts->loaded_mm;
	if (!prev)
		return;
	save_asid_gen(ts);
	write_cr3(__pa(kernel_pml4));
	count_event(EV_TLB_FULL_FLUSH);
	ts->cur_asid = TLB_ASID_NONE;
	ts->loaded_mm = NULL;
	ts->loaded_gen = 0;
	atomic_store(&ts->is_lazy, false);
	cpumask_clear_cpu_atomic(cpu, &prev->cpumask);
}

static void tlb_pcid_enable_local(struct tlb_state *ts)
{
	/* CR4.PCIDE may only be set while CR3's PCID field is 0 (it is: never used yet). */
	if (read_cr3() & 0xfffUL)
		return;
	for (unsigned i = 0; i < TLB_NR_DYN_ASIDS; i++)
		ts->asids[i].mm_id = 0;
	write_cr4(read_cr4() | CR4_PCIDE);
	ts->pcide = true;
}

/* Interrupts off. Load @next's root; @gen was read after joining its cpumask. */
static void load_mm_cr3(struct tlb_state *ts, struct mm_struct *next, u64 gen)
{
	assert_irqs_disabled();
	u64 root = __pa(next->pt.pgd);
	save_asid_gen(ts);
	if (tlb_pcid_active()) {
		if (!ts->pcide)
			tlb_pcid_enable_local(ts);
		if (ts->pcide) {
			struct tlb_asid_pick p = tlb_asid_choose(ts->asids, TLB_NR_DYN_ASIDS, next->id,
								 gen, &ts->next_asid);
			ts->asids[p.slot].mm_id = next->id;
			ts->asids[p.slot].gen = gen;
			ts->cur_asid = (u16)p.slot;
			if (p.flush) {
				write_cr3(root | (p.slot + 1));
				count_event(EV_TLB_FULL_FLUSH);
			} else {
				write_cr3(root | (p.slot + 1) | CR3_NOFLUSH);
				count_event(EV_TLB_PCID_NOFLUSH);
			}
			ts->loaded_gen = gen;
			return;
		}
	}
	ts->cur_asid = TLB_ASID_NONE;
	write_cr3(root);	/* PCID 0 (or no PCID): flushes every non-global entry of it */
	count_event(EV_TLB_FULL_FLUSH);
	ts->loaded_gen = gen;
}

/* Runs on a CPU with interrupts off (locally or inside a cross-CPU call). */
static void flush_tlb_func(const struct flush_info *f)
{
	assert_irqs_disabled();
	unsigned cpu = smp_processor_id();
	struct tlb_state *ts = &cpu_tlbstate[cpu];

	/* Switched away since the cpumask was read: its next load catches up. */
	if (ts->loaded_mm != f->mm)
		return;
	/* Lazy and still asked (tables freed, or skipping is off): stop holding the mm,
	 * so no speculative walk can reach its tables and later flushes leave us alone. */
	if (ts->is_lazy) {
		leave_mm_local(ts, cpu);
		count_event(EV_TLB_LAZY_LEAVE);
		return;
	}
	u64 mm_gen = atomic_load(&f->mm->tlb_gen);
	switch (tlb_flush_decide(ts->loaded_gen, mm_gen, f->new_gen, f->start, f->end,
				 f->stride_shift, READ_ONCE(tlb_ceiling))) {
	case TLB_KIND_SKIP:
		count_event(EV_TLB_SKIP_UPTODATE);
		return;
	case TLB_KIND_RANGE:
		for (u64 a = f->start; a < f->end; a += 1UL << f->stride_shift)
			invlpg(a);
		break;
	case TLB_KIND_FULL:
		flush_local_full(ts);
		break;
	}
	ts->loaded_gen = mm_gen;
}

/*
 * Early acknowledgement (Amit et al., EuroSys 2020): the responder copies the request,
 * acknowledges, then flushes. The initiator may return while the responder is still in
 * its interrupt handler; the interrupted code on the responder cannot run before the
 * flush completes, so it never uses an old translation after the initiator returned.
 * It is allowed only when the initiator frees nothing afterwards (tlb_early_ack_allowed):
 *   - a freed page could be reallocated and written by its new owner while the
 *     responder's TLB still maps it (hardware may still set A/D bits or prefetch through
 *     the stale entry), breaking unhook -> invalidate -> free;
 *   - a freed page-table page could be reused while the responder's paging-structure
 *     caches still point into it: a speculative walk would load translations from
 *     whatever the new owner wrote there, and could write A/D bits into it.
 */
static void flush_tlb_func_remote(void *arg)
{
	struct flush_info *f = arg;
	count_event(EV_TLB_REMOTE_FLUSH);
	rcu_quiescent_state();
	if (f->early_ack) {
		struct flush_info mine = *f;
		/* After this decrement the initiator may return: @f is gone. */
		(void)atomic_sub_return(&f->acks_left, 1);
		count_event(EV_TLB_EARLY_ACK);
		flush_tlb_func(&mine);
		return;
	}
	flush_tlb_func(f);
}

/* Interrupts off. The CPUs to ask; returns their number. */
static unsigned tlb_pick_targets(struct mm_struct *mm, unsigned self, unsigned flags,
				 cpumask_t *mask)
{
	assert_irqs_disabled();
	cpumask_and_online(mask, &mm->cpumask);
	cpumask_clear_cpu(self, mask);
	if (tlb_may_skip_lazy(flags, READ_ONCE(tlb_lazy))) {
		unsigned cpu, skipped = 0;
		for_each_cpu(cpu, mask) {
			if (atomic_load(&cpu_tlbstate[cpu].is_lazy)) {
				cpumask_clear_cpu(cpu, mask);
				skipped++;
			}
		}
		if (skipped)
			count_events(EV_TLB_SKIP_LAZY, skipped);
	}
	unsigned n = cpumask_weight(mask);
	if (n && READ_ONCE(tlb_test_skip_remote)) {
		count_events(EV_TLB_TEST_SKIP, n);
		cpumask_clear(mask);
		n = 0;
	}
	return n;
}

static void tlb_wait_remote(struct flush_info *f, struct smp_call_batch *b)
{
	if (!f->early_ack) {
		smp_call_wait(b);
		return;
	}
	while (atomic_load_acquire(&f->acks_left)) {
		smp_call_queue_drain();
		cpu_relax();
	}
}

void flush_tlb_mm_range_flags(struct mm_struct *mm, u64 start, u64 end, unsigned stride_shift,
			      unsigned flags)
{
	struct flush_info f = {
		.mm = mm, .start = start, .end = end, .stride_shift = stride_shift,
		.flags = flags,
	};
	count_event(EV_TLB_FLUSH_REQ);
	/* Page-table changes are visible before the generation moves (seq_cst), and the
	 * generation moves before we read the cpumask and the lazy flags. */
	f.new_gen = atomic_add_return(&mm->tlb_gen, 1);

	unsigned long irq = local_irq_save();
	unsigned cpu = smp_processor_id();
	cpumask_t mask;
	unsigned n = tlb_pick_targets(mm, cpu, flags, &mask);
	if (!n) {
		flush_tlb_func(&f);
		local_irq_restore(irq);
		return;
	}
	count_events(EV_TLB_REMOTE_IPI, n);
	f.early_ack = tlb_early_ack_allowed(flags, READ_ONCE(tlb_early_ack));
	f.acks_left = n;
	struct smp_call_batch *b;
	if (READ_ONCE(tlb_protocol) == TLB_PROTO_CONCURRENT) {
		count_event(EV_TLB_FLUSH_CONC);
		b = smp_call_send_many(&mask, flush_tlb_func_remote, &f);
		flush_tlb_func(&f);
		local_irq_restore(irq);
	} else {
		count_event(EV_TLB_FLUSH_SEQ);
		flush_tlb_func(&f);
		local_irq_restore(irq);
		b = smp_call_send_many(&mask, flush_tlb_func_remote, &f);
	}
	tlb_wait_remote(&f, b);
}

#ifdef CONFIG_DEBUG_CONTRACTS
void tlb_selftest_break_irq_contract(void)
{
	/* An mm this CPU has not loaded: unchecked, the step returns without flushing. */
	struct mm_struct *mm = mm_alloc();
	if (!mm)
		panic("selftest=contract_irqs: no memory for an mm");
	struct flush_info f = { .mm = mm, .end = TLB_FLUSH_ALL, .stride_shift = PAGE_SHIFT };
	local_irq_enable();
	flush_tlb_func(&f);	/* its contract: interrupts off */
	mm_put(mm);
}
#endif

void flush_tlb_one_local(u64 addr)
{
	invlpg(addr);
}

static void flush_all_fn(void *info)
{
	(void)info;
	struct tlb_state *ts = &cpu_tlbstate[smp_processor_id()];
	/* Other ASIDs: forget which mm they held, so the next load of any mm takes a slot
	 * with a flushing CR3 write (a gen of 0 could still match an mm whose tlb_gen is
	 * 0, and flush_tlb_all() covers edits that bump no generation). */
	for (unsigned i = 0; i < TLB_NR_DYN_ASIDS; i++) {
		if (ts->pcide && i == ts->cur_asid)
			continue;	/* the loaded one: flushed below */
		ts->asids[i].mm_id = 0;
		ts->asids[i].gen = 0;
	}
	if (ts->loaded_mm)
		ts->loaded_gen = atomic_load(&ts->loaded_mm->tlb_gen);
	flush_local_full(ts);
}

void flush_tlb_all(void)
{
	on_each_cpu(flush_all_fn, NULL, true);
}

static void release_fn(void *arg)
{
	unsigned cpu = smp_processor_id();
	struct tlb_state *ts = &cpu_tlbstate[cpu];
	if (ts->loaded_mm == arg && ts->is_lazy) {
		leave_mm_local(ts, cpu);
		count_event(EV_TLB_LAZY_LEAVE);
	}
}

void tlb_mm_release(struct mm_struct *mm)
{
	unsigned long irq = local_irq_save();
	unsigned cpu = smp_processor_id();
	struct tlb_state *ts = &cpu_tlbstate[cpu];
	if (ts->loaded_mm == mm)
		leave_mm_local(ts, cpu);
	cpumask_t mask;
	cpumask_and_online(&mask, &mm->cpumask);
	cpumask_clear_cpu(cpu, &mask);
	local_irq_restore(irq);
	if (!cpumask_empty(&mask))
		smp_call_function_many(&mask, release_fn, mm, true);
}

struct mm_struct *current_mm(void)
{
	struct tlb_state *ts = &cpu_tlbstate[smp_processor_id()];
	return ts->is_lazy ? NULL : ts->loaded_mm;
}

void switch_mm(struct mm_struct *next)
{
	unsigned long irq = local_irq_save();
	unsigned cpu = smp_processor_id();
	struct tlb_state *ts = &cpu_tlbstate[cpu];
	struct mm_struct *prev = ts->loaded_mm;

	if (!next) {
		/* Lazy: keep the old root loaded and stay in its cpumask. */
		if (prev && !ts->is_lazy)
			atomic_store(&ts->is_lazy, true);
		local_irq_restore(irq);
		return;
	}
	if (prev == next) {
		if (ts->is_lazy) {
			/* Clear the flag, then read the generation: a flusher that saw us
			 * lazy and skipped us bumped it before reading the flag (seq_cst). */
			atomic_store(&ts->is_lazy, false);
			u64 gen = atomic_load(&next->tlb_gen);
			if (ts->loaded_gen < gen) {
				flush_local_full(ts);
				ts->loaded_gen = gen;
			}
		}
		local_irq_restore(irq);
		return;
	}
	/* Join first, then read the generation: a flusher that bumped the generation after
	 * our read sees us in the mask (both are seq_cst). */
	cpumask_set_cpu_atomic(cpu, &next->cpumask);
	u64 gen = atomic_load(&next->tlb_gen);
	load_mm_cr3(ts, next, gen);
	ts->loaded_mm = next;
	atomic_store(&ts->is_lazy, false);
	if (prev)
		cpumask_clear_cpu_atomic(cpu, &prev->cpumask);
	local_irq_restore(irq);
}
