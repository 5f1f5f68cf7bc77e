/*
 * TLB shootdown and mmu_gather benchmarks. Figures and commands: docs/TLB.md; the seed
 * experiments that use them: docs/EXPERIMENTS.md.
 *
 *   tlb.shootdown             cost of one flush request of 1, 8, 32, 33, 64, 512 pages and
 *                             of a full flush (case 0), CPU 0 initiating, every other CPU
 *                             taking part (bench_cpus= picks how many: 1 = no remote)
 *                             spinning in the same address space in thread context. Read
 *                             with ab=tlb_protocol:sequential,concurrent or
 *                             ab=tlb_early_ack:off,on. The flush frees nothing (early ack
 *                             applies). A BAREMM-INFO line per case and variant gives the
 *                             empty cross-CPU call round trip to the same CPUs measured in
 *                             the same rounds and the ratio flush / round trip.
 *   tlb.page_fault3_threads   will-it-scale page_fault3 in threads mode: every CPU in
 *                             one address space maps its own shared file-like region, writes
 *                             one byte per page, unmaps. An operation is one page written
 *                             (one fault); the unmap is spread over them. Read with
 *                             ab=rmapbatch:local,multi. Default region 1 MiB per thread
 *                             (tlb_pf3_pages=256; will-it-scale maps 128 MiB = 32768).
 *   tlb.ptfree_loop_vs_bulk   many short-lived address spaces on every CPU at
 *                             once: create, read one byte per 2 MiB of a sparse region (a
 *                             page table per read), destroy. An operation is one address
 *                             space's life. Read with ab=ptfree:loop,bulk.
 *   tlb.ptfree_rcu            a parent with a big sparse region (one byte read per
 *                             2 MiB), fork + exit (dup_mm + mm_put). An operation is one
 *                             fork+exit. Read with ab=ptfree_rcu:off,on. The region is only
 *                             read, as in the seed's test, so it has no private pages and
 *                             fork copies none of its tables (Linux's rule): the child
 *                             builds and frees only its own top-level tables. A BAREMM-INFO
 *                             line gives the tables the copy held, the grace periods, their
 *                             latency and the peak number of table pages waiting for one.
 *                             Default 1 GiB (tlb_rcu_mb=1024).
 */
#include "bench/bench.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/events.h"
#include "kernel/options.h"
#include "kernel/printk.h"
#include "kernel/math.h"
#include "kernel/rcu.h"
#include "kernel/string.h"
#include "arch/x86_64/tsc.h"
#include "mm/mm.h"
#include "mm/filemap.h"
#include "mm/mmu_gather.h"
#include "mm/tlbflush.h"
#include "mm/page_alloc.h"

#define RW (VM_READ | VM_WRITE)
#define BENCH_VA 0x40000000UL

DEFINE_OPTION_UINT(tlb_pf3_pages, "tlb_pf3_pages", 256, 1, 32768,
		   "tlb.page_fault3_threads: pages each thread maps, writes and unmaps per pass");
DEFINE_OPTION_UINT(tlb_ptfree_mb, "tlb_ptfree_mb", 64, 2, 65536,
		   "tlb.ptfree_loop_vs_bulk: MiB of sparse memory per short-lived address space "
		   "(one byte read per 2 MiB: one page table each)");
DEFINE_OPTION_UINT(tlb_rcu_mb, "tlb_rcu_mb", 1024, 2, 1048576,
		   "tlb.ptfree_rcu: MiB of sparse memory in the parent (one byte per 2 MiB)");

static u64 uread64(u64 va) { return *(volatile u64 *)va; }

/* ==== tlb.shootdown ==== */

#define SD_RTT_CALLS 32
#define SD_MAX_ROUNDS 64

static struct {
	struct mm_struct *mm;
	struct bench_ctx *ctx;
	struct bench_sample *s;
	struct smp_barrier bar;
	volatile u32 stop;
	/* per [protocol][early ack], per measured round: cycles per flush, per empty call */
	u64 flush_po[2][2][SD_MAX_ROUNDS], rtt_po[2][2][SD_MAX_ROUNDS];
	unsigned n[2][2];
} sd;

static void empty_fn(void *info) { (void)info; }

static void sd_thread(void *arg)
{
	(void)arg;
	unsigned me = smp_processor_id();
	struct bench_ctx *ctx = sd.ctx;
	switch_mm(sd.mm);
	smp_barrier_wait(&sd.bar);
	if (me != 0) {
		while (!atomic_load_acquire(&sd.stop))
			cpu_relax();
		switch_mm(NULL);
		return;
	}
	cpumask_t remotes;
	cpumask_first_n(&remotes, ctx->ncpus);
	cpumask_clear_cpu(0, &remotes);
	u64 rtt = 0;
	if (!cpumask_empty(&remotes)) {
		/* a reference, not the figure: timed without bench_start() so neither its
		 * IPIs nor its cost enter the flush figure's region */
		u64 t0 = rdtsc_ordered();
		for (unsigned i = 0; i < SD_RTT_CALLS; i++)
			smp_call_function_many(&remotes, empty_fn, NULL, true);
		rtt = rdtsc_ordered() - t0;
	}
	u64 end = ctx->param ? BENCH_VA + ctx->param * PAGE_SIZE : TLB_FLUSH_ALL;
	u64 start = ctx->param ? BENCH_VA : 0;
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++)
		flush_tlb_mm_range_nofree(sd.mm, start, end, PAGE_SHIFT);
	sd.s->cycles = bench_stop(t0);
	sd.s->ops = ctx->iters;
	atomic_store_release(&sd.stop, 1);
	int p = READ_ONCE(tlb_protocol) ? 1 : 0, e = READ_ONCE(tlb_early_ack) ? 1 : 0;
	if (!ctx->warmup && sd.n[p][e] < SD_MAX_ROUNDS) {
		sd.flush_po[p][e][sd.n[p][e]] = sd.s->cycles / (ctx->iters ? ctx->iters : 1);
		sd.rtt_po[p][e][sd.n[p][e]] = rtt / SD_RTT_CALLS;
		sd.n[p][e]++;
	}
	switch_mm(NULL);
}

static int sd_setup(struct bench_ctx *ctx)
{
	(void)ctx;
	memset(&sd, 0, sizeof(sd));
	sd.mm = mm_alloc();
	return sd.mm ? 0 : -1;
}

static void sd_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	cpumask_t all;
	cpumask_first_n(&all, ctx->ncpus);
	sd.ctx = ctx;
	sd.s = s;
	sd.stop = 0;
	smp_barrier_init(&sd.bar, ctx->ncpus);
	smp_run_parallel(&all, sd_thread, NULL);
}

static void sd_teardown(struct bench_ctx *ctx)
{
	for (int p = 0; p < 2; p++) {
		for (int e = 0; e < 2; e++) {
			if (!sd.n[p][e])
				continue;
			u64 fl = median_u64(sd.flush_po[p][e], sd.n[p][e]);
			u64 rtt = median_u64(sd.rtt_po[p][e], sd.n[p][e]);
			u64 ratio100 = rtt ? fl * 100 / rtt : 0;
			printk("BAREMM-INFO bench=tlb.shootdown case=%llu tlb_protocol=%s tlb_early_ack=%s "
			       "remotes=%u flush_cycles_median=%llu empty_call_rtt_cycles_median=%llu "
			       "ratio=%llu.%02llu\n", (unsigned long long)ctx->param,
			       tlb_protocol_names[p], e ? "on" : "off", ctx->ncpus - 1,
			       (unsigned long long)fl, (unsigned long long)rtt,
			       (unsigned long long)(ratio100 / 100), (unsigned long long)(ratio100 % 100));
		}
	}
	mm_put(sd.mm);
	sd.mm = NULL;
}

DEFINE_BENCH(tlb_shootdown) {
	.name = "tlb.shootdown",
	.desc = "one flush request (pages; 0 = full flush) from CPU 0 to every other CPU "
		"spinning in the same mm; frees nothing; INFO lines give the empty cross-CPU "
		"call round trip and the ratio; compare ab=tlb_protocol:sequential,concurrent "
		"or ab=tlb_early_ack:off,on",
	.reads = "tlb_protocol,tlb_early_ack,tlb_ceiling,pcid",
	.def_cpus = BENCH_ALL_CPUS, .runs = 7, .iters = 200,
	BENCH_PARAMS("pages", 1, 8, 32, 33, 64, 512, 0), .metric = "flush",
	.setup = sd_setup, .run = sd_run, .teardown = sd_teardown,
};

/* ==== tlb.page_fault3_threads ==== */

static struct {
	struct mm_struct *mm;
	struct file_obj *f[NR_CPUS];
	struct smp_barrier start, end;
} pf3;

static int pf3_setup(struct bench_ctx *ctx)
{
	memset(&pf3, 0, sizeof(pf3));
	pf3.mm = mm_alloc();
	if (!pf3.mm)
		return -1;
	for (unsigned c = 0; c < ctx->ncpus; c++) {
		pf3.f[c] = file_obj_create(tlb_pf3_pages * PAGE_SIZE);
		if (!pf3.f[c])
			return -1;
	}
	smp_barrier_init(&pf3.start, ctx->ncpus);
	smp_barrier_init(&pf3.end, ctx->ncpus);
	return 0;
}

static void pf3_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	unsigned me = smp_processor_id();
	u64 len = tlb_pf3_pages * PAGE_SIZE;
	switch_mm(pf3.mm);
	smp_barrier_wait(&pf3.start);	/* every thread is in the mm before the clock */
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		long a = vm_mmap(pf3.mm, 0, len, RW, VM_FILE_SHARED, pf3.f[me]);
		if (a < 0)
			break;
		for (u64 p = 0; p < tlb_pf3_pages; p++)
			*(volatile u8 *)((u64)a + p * PAGE_SIZE) = 1;
		vm_munmap(pf3.mm, (u64)a, len);
		s->ops += tlb_pf3_pages;
	}
	s->cycles = bench_stop(t0);
	/* Nobody leaves (goes lazy) while another thread still unmaps: a lazy CPU would be
	 * skipped by the others' shootdowns and understate the remote flush cost. */
	smp_barrier_wait(&pf3.end);
	switch_mm(NULL);
}

static void pf3_teardown(struct bench_ctx *ctx)
{
	mm_put(pf3.mm);
	for (unsigned c = 0; c < ctx->ncpus; c++)
		if (pf3.f[c])
			file_obj_put(pf3.f[c]);
}

DEFINE_BENCH(tlb_page_fault3_threads) {
	.name = "tlb.page_fault3_threads",
	.desc = "seed 001: every CPU a thread of one mm: map its own shared file-like region "
		"(tlb_pf3_pages, default 256 = 1 MiB; the seed used 128 MiB), write one byte per "
		"page, unmap; op = one page written; compare ab=rmapbatch:local,multi",
	.reads = "rmapbatch,tlb_pf3_pages,tlb_protocol,tlb_lazy,tlb_ceiling",
	.def_cpus = BENCH_ALL_CPUS, .runs = 5, .iters = 6, .parallel = true, .throughput = true,
	.metric = "fault", .setup = pf3_setup, .run = pf3_run, .teardown = pf3_teardown,
};

/* ==== tlb.ptfree_loop_vs_bulk ==== */

static void ptl_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 len = tlb_ptfree_mb << 20;
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		struct mm_struct *mm = mm_alloc();
		if (!mm)
			break;
		if (vm_mmap(mm, BENCH_VA, len, VM_READ, VM_ANON, NULL) != (long)BENCH_VA) {
			mm_put(mm);
			break;
		}
		switch_mm(mm);
		for (u64 off = 0; off < len; off += PMD_SIZE)
			(void)uread64(BENCH_VA + off);
		switch_mm(NULL);
		mm_put(mm);
		s->ops++;
	}
	s->cycles = bench_stop(t0);
}

DEFINE_BENCH(tlb_ptfree_loop_vs_bulk) {
	.name = "tlb.ptfree_loop_vs_bulk",
	.desc = "seed 000: short-lived address spaces on every CPU at once: create, read one "
		"byte per 2 MiB of tlb_ptfree_mb MiB (a page table each), destroy; op = one "
		"address space; compare ab=ptfree:loop,bulk",
	.reads = "ptfree,ptfree_rcu,tlb_ptfree_mb",
	.def_cpus = BENCH_ALL_CPUS, .runs = 7, .iters = 20, .parallel = true, .throughput = true,
	.metric = "mm_lifetime", .run = ptl_run,
};

/* ==== tlb.ptfree_rcu ==== */

static struct mm_struct *rcu_parent;
static u64 rcu_forks, rcu_tables_copied;	/* over every round, for the INFO line */

static int ptr_setup(struct bench_ctx *ctx)
{
	(void)ctx;
	u64 len = tlb_rcu_mb << 20;
	rcu_parent = mm_alloc();
	if (!rcu_parent)
		return -1;
	if (vm_mmap(rcu_parent, BENCH_VA, len, VM_READ, VM_ANON, NULL) != (long)BENCH_VA)
		return -1;
	switch_mm(rcu_parent);
	for (u64 off = 0; off < len; off += PMD_SIZE)
		(void)uread64(BENCH_VA + off);
	switch_mm(NULL);
	rcu_barrier();
	rcu_reset_stats();
	gather_tables_waiting_peak = gather_tables_waiting;
	rcu_forks = rcu_tables_copied = 0;
	return 0;
}

static void ptr_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		struct mm_struct *child = dup_mm(rcu_parent);
		if (!child)
			break;
		rcu_tables_copied += (u64)READ_ONCE(child->pt.nr_tables);
		mm_put(child);
		s->ops++;
	}
	/* The round pays for every table it deferred (one barrier amortised over the
	 * round's fork+exits), so rounds are self-contained and ab=ptfree_rcu:off,on can
	 * interleave them: no `off` round frees an `on` round's tables. */
	rcu_barrier();
	s->cycles = bench_stop(t0);
	rcu_forks += s->ops;
}

static void ptr_teardown(struct bench_ctx *ctx)
{
	(void)ctx;
	struct rcu_stats st;
	rcu_barrier();
	rcu_get_stats(&st);
	u64 mean = st.gp_completed ? st.lat_sum / st.gp_completed : 0;
	printk("BAREMM-INFO bench=tlb.ptfree_rcu tables_per_op=%ld copied_tables_per_op=%llu "
	       "grace_periods=%llu "
	       "gp_latency_mean_cycles=%llu gp_latency_mean_ns=%llu gp_latency_max_cycles=%llu "
	       "peak_tables_waiting=%llu peak_callbacks=%llu\n",
	       mm_rss(rcu_parent, MM_RSS_PGTABLES),
	       (unsigned long long)(rcu_forks ? rcu_tables_copied / rcu_forks : 0),
	       (unsigned long long)st.gp_completed,
	       (unsigned long long)mean, (unsigned long long)cycles_to_ns(mean),
	       (unsigned long long)st.lat_max, (unsigned long long)gather_tables_waiting_peak,
	       (unsigned long long)st.cbs_peak);
	mm_put(rcu_parent);
	rcu_parent = NULL;
}

DEFINE_BENCH(tlb_ptfree_rcu) {
	.name = "tlb.ptfree_rcu",
	.desc = "seed 002: parent with tlb_rcu_mb MiB (default 1024; the seed used 4 TiB) "
		"sparse, one byte read per 2 MiB; op = fork + exit (dup_mm + mm_put); compare "
		"ab=ptfree_rcu:off,on; INFO gives grace periods, their latency, peak tables "
		"waiting",
	.reads = "ptfree_rcu,ptfree,tlb_rcu_mb",
	.runs = 7, .iters = 5, .metric = "fork_exit",
	.setup = ptr_setup, .run = ptr_run, .teardown = ptr_teardown,
};
