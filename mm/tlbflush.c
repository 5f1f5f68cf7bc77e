/*
 * TLB flushing and address-space switching, first version. See mm/tlbflush.h.
 * Policy decisions, all here:
 *   - tlb_flush_wants_full(): INVLPG per page up to tlb_ceiling pages, else CR3 reload;
 *   - which CPUs are asked: every CPU in mm->cpumask except the initiator;
 *   - order: local flush first (interrupts off), then the remote calls, waiting for all.
 */
#include "mm/tlbflush.h"
#include "mm/mm.h"
#include "arch/x86_64/tlb.h"
#include "arch/x86_64/irqflags.h"
#include "kernel/smp.h"
#include "kernel/options.h"
#include "kernel/percpu.h"
#include "kernel/events.h"

DEFINE_OPTION_UINT(tlb_ceiling, "tlb_ceiling", 33, 0, 1UL << 20,
		   "largest flush (in pages) done with one INVLPG per page; above it a CR3 reload");

struct tlb_state cpu_tlbstate[NR_CPUS];

struct flush_info {
	struct mm_struct *mm;
	u64 start, end;
	unsigned stride_shift;
	bool freed_tables;
	u64 new_gen;
	unsigned initiator;
};

/* Runs on a CPU with interrupts off (locally or as a cross-CPU call). */
static void flush_tlb_func(void *arg)
{
	const struct flush_info *f = arg;
	unsigned cpu = smp_processor_id();
	struct tlb_state *ts = &cpu_tlbstate[cpu];

	if (cpu != f->initiator)
		count_event(EV_TLB_REMOTE_FLUSH);
	/* Switched away since the cpumask was read: the CR3 load flushed it all. */
	if (ts->loaded_mm != f->mm)
		return;
	u64 mm_gen = atomic_load(&f->mm->tlb_gen);
	u64 local_gen = ts->loaded_gen;
	if (local_gen >= mm_gen) {
		count_event(EV_TLB_SKIP_UPTODATE);
		return;
	}
	/* The range alone suffices only when this request is the one pending. */
	bool partial = f->new_gen == local_gen + 1 && f->new_gen == mm_gen &&
		       !tlb_flush_wants_full(f->start, f->end, f->stride_shift, READ_ONCE(tlb_ceiling));
	if (partial) {
		for (u64 a = f->start; a < f->end; a += 1UL << f->stride_shift)
			invlpg(a);
	} else {
		flush_tlb_local_full();
	}
	ts->loaded_gen = mm_gen;
}

void flush_tlb_mm_range(struct mm_struct *mm, u64 start, u64 end, unsigned stride_shift,
			bool freed_tables)
{
	struct flush_info f = {
		.mm = mm, .start = start, .end = end, .stride_shift = stride_shift,
		.freed_tables = freed_tables,
	};
	count_event(EV_TLB_FLUSH_REQ);
	/* Page-table changes are visible before the generation moves (seq_cst). */
	f.new_gen = atomic_add_return(&mm->tlb_gen, 1);

	unsigned long flags = local_irq_save();
	unsigned cpu = smp_processor_id();
	f.initiator = cpu;
	flush_tlb_func(&f);

	/* Snapshot the CPUs to ask; a CPU joining later loads the new tables itself. */
	cpumask_t mask;
	for (int i = 0; i < CPUMASK_WORDS; i++)
		mask.bits[i] = atomic_load(&mm->cpumask.bits[i]);
	cpumask_clear_cpu(cpu, &mask);
	local_irq_restore(flags);
	if (!cpumask_empty(&mask)) {
		count_events(EV_TLB_REMOTE_IPI, cpumask_weight(&mask));
		smp_call_function_many(&mask, flush_tlb_func, &f, true);
	}
}

void flush_tlb_one_local(u64 addr)
{
	invlpg(addr);
}

struct mm_struct *current_mm(void)
{
	return cpu_tlbstate[smp_processor_id()].loaded_mm;
}

void switch_mm(struct mm_struct *next)
{
	unsigned long flags = local_irq_save();
	unsigned cpu = smp_processor_id();
	struct tlb_state *ts = &cpu_tlbstate[cpu];
	struct mm_struct *prev = ts->loaded_mm;

	if (prev == next) {
		local_irq_restore(flags);
		return;
	}
	if (next) {
		/* Join first, then read the generation: a flusher that bumped the
		 * generation after our read sees us in the mask (both are seq_cst). */
		cpumask_set_cpu_atomic(cpu, &next->cpumask);
		u64 gen = atomic_load(&next->tlb_gen);
		write_cr3(__pa(next->pt.pgd));
		ts->loaded_gen = gen;
	} else {
		write_cr3(__pa(kernel_pml4));
		ts->loaded_gen = 0;
	}
	count_event(EV_TLB_FULL_FLUSH);
	ts->loaded_mm = next;
	if (prev)
		cpumask_clear_cpu_atomic(cpu, &prev->cpumask);
	local_irq_restore(flags);
}
