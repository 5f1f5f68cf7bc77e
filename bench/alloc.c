/*
 * Page-allocator benchmarks. Results and the commands behind them: the "Page allocator"
 * section of docs/RESULTS.md; the allocator itself: docs/PAGE_ALLOC.md; the seed
 * experiments that use them: docs/EXPERIMENTS.md.
 *
 *   alloc.order0_pair      one order-0 alloc_page + free_page pair per operation. With the
 *                          pcp on, the pair stays on this CPU's list (the hit path); with
 *                          `pcp=off` both halves take the zone lock. Compare in one boot
 *                          with ab=pcp:on,off. Parallel, one CPU by default: bench_cpus=N
 *                          runs N independent pair loops at once (scaling of the lock).
 *   alloc.bulk10k          every CPU allocates a batch of pages one at a time
 *                          (alloc_page) and then frees them one at a time (free_page);
 *                          an operation is one whole batch (alloc + free of all its
 *                          pages). Case pages:10000 is far above `high`, so the free half
 *                          overflows the pcp list and bulk-frees a batch at a time, and
 *                          the alloc half refills. Compare ab=pcp_mt:cached,lookup.
 *   alloc.bulk_resident    the same shape with a batch of high/2 pages (read at run time
 *                          from this CPU's effective `high`): after the first batch the
 *                          pages never leave the pcp list, so the zone lock and the bulk
 *                          free are out of the picture.
 *   alloc.free_bulk_vs_loop  freeing N gathered order-0 pages (allocated beforehand,
 *                          untimed, as mmu_gather collects them): one free_page per page
 *                          (free_mode=loop) or one free_pages_bulk pass over the list
 *                          (free_mode=bulk). An operation is one page freed.
 *
 * All allocations are GFP_USER (movable), the type every pageblock starts with, so no
 * pageblock changes type during a run and pb_lookup counts only the mechanism under test.
 * Every case drains all pcp lists first and checks, after its last round, that the free
 * page count is back where it started (a leak is a bug: panic).
 */
#include "bench/bench.h"
#include "kernel/events.h"
#include "kernel/list.h"
#include "kernel/options.h"
#include "kernel/panic.h"
#include "kernel/printk.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "mm/page_alloc.h"
#include "mm/pcp.h"

#define FREE_MODE_LIST(X)                                                                   \
	X(FREE_MODE_LOOP, "loop", "one free_page per page")                                 \
	X(FREE_MODE_BULK, "bulk", "one free_pages_bulk pass")
enum { FREE_MODE_LIST(OPTION_ENUM_CONST) };

DEFINE_VARIANT_ENUM(free_mode, "free_mode", FREE_MODE_LOOP,
		    "alloc.free_bulk_vs_loop: how the gathered pages are freed", FREE_MODE_LIST);

static u64 free_before;

static int alloc_setup(struct bench_ctx *ctx)
{
	(void)ctx;
	drain_all_pages();
	free_before = nr_free_pages();
	return 0;
}

static void alloc_teardown(struct bench_ctx *ctx)
{
	u64 now = nr_free_pages();
	if (now != free_before)
		panic("bench %s: free pages %llu after the case, %llu before (leak or double count)",
		      ctx->b->name, (unsigned long long)now, (unsigned long long)free_before);
	drain_all_pages();
}

/* Allocate @n order-0 pages one by one onto @list; panics when memory runs out (the
 * benchmark's sizes are chosen to fit; a failure means the machine is too small). */
static void alloc_n(struct bench_ctx *ctx, u64 n, struct list_head *list)
{
	for (u64 i = 0; i < n; i++) {
		struct page *p = alloc_page(GFP_USER);
		if (!p)
			panic("bench %s: alloc_page failed after %llu of %llu pages on cpu %u "
			      "(boot with more memory or a smaller batch)", ctx->b->name,
			      (unsigned long long)i, (unsigned long long)n, smp_processor_id());
		list_add_tail(&p->lru, list);
	}
}

static void free_loop(struct list_head *list)
{
	while (!list_empty(list)) {
		struct page *p = list_first_entry(list, struct page, lru);
		list_del(&p->lru);
		free_page(p);
	}
}

/* ---- alloc.order0_pair ---- */

/*
 * Setup puts CPU 0 in the steady state each variant's op measures, whatever fragments the
 * boot left in the buddy: its pcp list filled (pcp=on pairs hit the list), and a free
 * order-0 buddy page whose buddy is held until teardown (pcp=off pairs take and return
 * it without a split or a merge). Left to chance, the refill could empty the order-0
 * free list, and pcp=off pairs then cost three splits and three merges more in some
 * kernel images than in others. A pcp=off round leaves the pcp list as it was.
 */
static struct page *order0_held;

static int order0_setup(struct bench_ctx *ctx)
{
	alloc_setup(ctx);
	/* (under ab=pcp:..., opt_pcp holds whichever value; the rounds set their own) */
	bool pcp_was = READ_ONCE(opt_pcp);
	WRITE_ONCE(opt_pcp, true);
	struct page *p = alloc_page(GFP_USER);	/* refills this CPU's list */
	if (p)
		free_page(p);
	/* Two buddy pages, the first given back: either it had a free buddy before and the
	 * second took it, or the second split a block and left its own buddy free. */
	WRITE_ONCE(opt_pcp, false);
	struct page *x = alloc_page(GFP_USER);
	order0_held = alloc_page(GFP_USER);
	if (x)
		free_page(x);
	WRITE_ONCE(opt_pcp, pcp_was);
	return p && order0_held ? 0 : -1;
}

static void order0_teardown(struct bench_ctx *ctx)
{
	if (order0_held)
		free_page(order0_held);
	order0_held = NULL;
	alloc_teardown(ctx);
}

BENCH_OP(order0_pair_op, ctx)
{
	(void)ctx;
	struct page *p = alloc_page(GFP_USER);
	if (unlikely(!p))
		panic("bench alloc.order0_pair: alloc_page failed");
	free_page(p);
}

DEFINE_BENCH(order0_pair) {
	.name = "alloc.order0_pair",
	.desc = "order-0 alloc_page+free_page pair per CPU (pcp hit path; ab=pcp:on,off for buddy only)",
	.reads = "pcp,pcp_high,pcp_batch,bench_cpus",
	.warmup = 2, .iters = 20000, .parallel = true, .throughput = true, .metric = "pair",
	.setup = order0_setup, .op = &order0_pair_op, .teardown = order0_teardown,
};

/* ---- alloc.bulk10k / alloc.bulk_resident ---- */

static void batch_run(struct bench_ctx *ctx, struct bench_sample *s, u64 n)
{
	struct list_head list;
	INIT_LIST_HEAD(&list);
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		alloc_n(ctx, n, &list);
		free_loop(&list);
	}
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
}

static void bulk10k_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	batch_run(ctx, s, ctx->param);
}

DEFINE_BENCH(bulk10k) {
	.name = "alloc.bulk10k",
	.desc = "seed 003: every CPU allocs then frees a batch of 10000 order-0 pages one by one; op = one batch",
	.reads = "pcp_mt,pcp,pcp_high,pcp_batch,bench_cpus",
	.def_cpus = BENCH_ALL_CPUS, .warmup = 2, .iters = 4, BENCH_PARAMS("pages", 10000),
	.parallel = true, .metric = "batch",
	.setup = alloc_setup, .run = bulk10k_run, .teardown = alloc_teardown,
};

static void resident_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 n = pcp_high(smp_processor_id()) / 2;
	batch_run(ctx, s, n ? n : 1);
}

static int resident_setup(struct bench_ctx *ctx)
{
	printk("BAREMM-INFO bench=alloc.bulk_resident batch_pages=%u pcp_high=%u pcp_batch=%u cpu=0\n",
	       pcp_high(0) / 2, pcp_high(0), pcp_batch(0));
	return alloc_setup(ctx);
}

DEFINE_BENCH(bulk_resident) {
	.name = "alloc.bulk_resident",
	.desc = "alloc.bulk10k with a batch of high/2 pages: stays on the pcp list; op = one batch",
	.reads = "pcp_mt,pcp,pcp_high,pcp_batch,bench_cpus",
	.def_cpus = BENCH_ALL_CPUS, .warmup = 2, .iters = 40, .parallel = true, .metric = "batch",
	.setup = resident_setup, .run = resident_run, .teardown = alloc_teardown,
};

/* ---- alloc.free_bulk_vs_loop ---- */

static void free_bulk_vs_loop_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	struct list_head list;
	INIT_LIST_HEAD(&list);
	u64 n = ctx->param, cycles = 0;
	int mode = READ_ONCE(free_mode);
	for (u64 i = 0; i < ctx->iters; i++) {
		alloc_n(ctx, n, &list);
		u64 t0 = bench_start();
		if (mode == FREE_MODE_BULK)
			free_pages_bulk(&list);
		else
			free_loop(&list);
		cycles += bench_stop(t0);
	}
	s->cycles = cycles;
	s->ops = ctx->iters * n;
}

DEFINE_BENCH(free_bulk_vs_loop) {
	.name = "alloc.free_bulk_vs_loop",
	.desc = "free N gathered order-0 pages: free_page loop vs one free_pages_bulk (free_mode=); op = one page",
	.reads = "free_mode,pcp,pcp_high,pcp_batch,bench_cpus",
	.warmup = 2, .iters = 20, BENCH_PARAMS("pages", 64, 510, 4096), .parallel = true,
	.metric = "page",
	.setup = alloc_setup, .run = free_bulk_vs_loop_run, .teardown = alloc_teardown,
};
