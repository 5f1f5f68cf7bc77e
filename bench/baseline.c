/*
 * Baseline figures every mm benchmark is read against: the empty cross-CPU call round
 * trip (the floor of any shootdown), the cost of reading the TSC, and the raw cost of the
 * TLB instructions on one CPU.
 */
#include "bench/bench.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "arch/x86_64/tlb.h"
#include "mm/physmem.h"
#include "mm/mm.h"
#include "mm/tlbflush.h"
#include "mm/pgtable.h"
#include "kernel/printk.h"

static void empty_call(void *info)
{
	(void)info;
}

/* min_cpus 2: CPU 1 is always there */
BENCH_OP(call_single_op, ctx)
{
	(void)ctx;
	smp_call_function_single(1, empty_call, NULL, true);
}

DEFINE_BENCH(call_single) {
	.name = "ipi.call_single",
	.desc = "round trip of an empty synchronous cross-CPU call, CPU 0 -> CPU 1",
	.min_cpus = 2, .def_cpus = 2, .warmup = 2, .iters = 2000,
	.metric = "roundtrip", .suite = BENCH_DEFAULT,
	.op = &call_single_op,
};

static cpumask_t call_all_mask;

static int call_all_setup(struct bench_ctx *ctx)
{
	cpumask_first_n(&call_all_mask, ctx->ncpus);
	return 0;
}

BENCH_OP(call_all_op, ctx)
{
	(void)ctx;
	smp_call_function_many(&call_all_mask, empty_call, NULL, true);
}

DEFINE_BENCH(call_all) {
	.name = "ipi.call_all",
	.desc = "round trip of an empty synchronous call to every other CPU at once (one IPI each)",
	.reads = "bench_cpus",
	.min_cpus = 2, .def_cpus = BENCH_ALL_CPUS, .warmup = 2,
	.metric = "roundtrip", .suite = BENCH_DEFAULT,
	.setup = call_all_setup, .op = &call_all_op,
};

BENCH_OP(tsc_op, ctx)
{
	ctx->scratch[0] += rdtsc();	/* keep the reads */
}

DEFINE_BENCH(tsc_read) {
	.name = "time.tsc_read",
	.desc = "cost of one unfenced RDTSC (the timer every figure rests on)",
	.iters = 100000, .metric = "rdtsc", .suite = BENCH_DEFAULT,
	.op = &tsc_op,
};

BENCH_OP(invlpg_op, ctx)
{
	/* a direct-map address of this run's scratch: the entry is live, INVLPG must drop it,
	 * and the next touch walks the tables again */
	volatile u64 *p = &ctx->scratch[1];
	invlpg((u64)p);
	(void)*p;
}

DEFINE_BENCH(invlpg) {
	.name = "tlb.invlpg_local",
	.desc = "INVLPG of one kernel page plus the access that refills it, on one CPU",
	.iters = 20000, .metric = "invlpg", .suite = BENCH_DEFAULT,
	.op = &invlpg_op,
};

/* tlb.cr3_reload: a user page (non-global, so a CR3 reload drops it) in an address space
 * of its own; each operation reloads CR3 and refills that entry with one read. A kernel
 * address would be global: the reload would keep it and the read would only hit. */
static struct mm_struct *cr3_mm;
#define CR3_VA 0x40000000UL

static int cr3_setup(struct bench_ctx *ctx)
{
	(void)ctx;
	cr3_mm = mm_alloc();
	if (!cr3_mm)
		return -1;
	if (vm_mmap(cr3_mm, CR3_VA, PAGE_SIZE, VM_READ | VM_WRITE, VM_ANON, NULL) != (long)CR3_VA)
		return -1;
	switch_mm(cr3_mm);
	*(volatile u64 *)CR3_VA = 1;	/* fault it in: the loop only refills the TLB */
	switch_mm(NULL);
	/* the figure's premise: the entry is present and not global (a CR3 load drops it) */
	u64 *e = pt_lookup(&cr3_mm->pt, CR3_VA, NULL);
	if (!e || !pte_present(*e) || (*e & _PAGE_GLOBAL)) {
		printk("BAREMM-ERROR bench tlb.cr3_reload: the user entry is %s\n",
		       !e || !pte_present(*e) ? "not present" : "global");
		return -1;
	}
	return 0;
}

static void cr3_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	volatile u64 *p = (volatile u64 *)CR3_VA;
	switch_mm(cr3_mm);
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		flush_tlb_local_full();
		(void)*p;
	}
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
	switch_mm(NULL);
}

static void cr3_teardown(struct bench_ctx *ctx)
{
	(void)ctx;
	if (cr3_mm)
		mm_put(cr3_mm);
	cr3_mm = NULL;
}

DEFINE_BENCH(cr3) {
	.name = "tlb.cr3_reload",
	.desc = "full non-global flush by CR3 reload plus the refill of one non-global (user) "
		"entry by one read after it, on one CPU",
	.iters = 20000, .metric = "cr3_reload", .suite = BENCH_DEFAULT,
	.setup = cr3_setup, .run = cr3_run, .teardown = cr3_teardown,
};
