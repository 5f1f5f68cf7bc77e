/*
 * Known-answer benchmarks of the cycle-cost model (docs/COSTMODEL.md). Under plain icount
 * they print instructions per operation; under the model (tools/baremm run --model P)
 * their model figures must sit on the profile's plateaus: base_cpi x instructions per op
 * plus the latency of the level that serves the load.
 *
 *   model.pointer_chase  case bytes: a random cyclic permutation of the 64-byte lines of
 *                        a working set in the direct map (buddy blocks of up to 4 MiB);
 *                        one op = one dependent load (lmbench's lat_mem_rd shape)
 *   model.tlb_reach      case pages: one load per 4 KiB page over N pages, in order,
 *                        every page mapping the same physical page (so the data always
 *                        hits L1 and only the TLB moves); steps at the L1 dTLB and STLB
 *                        sizes
 *   model.invlpg_walk    case invlpg 0/1: load one 4 KiB page, with INVLPG of it before
 *                        each load (1) or not (0): INVLPG + load = one page walk
 *   model.cr3_global     case global 0/1: reload CR3, then load a page mapped global (1)
 *                        or not (0): the global entry survives the reload, so no walk
 */
#include "kernel/math.h"
#include "bench/bench.h"
#include "kernel/printk.h"
#include "kernel/string.h"
#include "arch/x86_64/tlb.h"
#include "mm/mm.h"
#include "mm/tlbflush.h"
#include "mm/page_alloc.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/atomic.h"
#include "arch/x86_64/irqflags.h"

/* ---- model.pointer_chase ---- */

#define CHASE_MAX_CHUNKS 64	/* 256 MiB in 4 MiB buddy blocks */

static struct {
	struct page *chunk[CHASE_MAX_CHUNKS];
	unsigned nchunks, order;
	u64 lines, lines_per_chunk;
	u64 cur;		/* where the chase stands between rounds */
} chase;

static inline u64 *chase_line(u64 i)
{
	u64 c = i / chase.lines_per_chunk, o = i % chase.lines_per_chunk;
	return (u64 *)((char *)page_address(chase.chunk[c]) + o * 64);
}

static void chase_teardown(struct bench_ctx *ctx)
{
	(void)ctx;
	for (unsigned c = 0; c < chase.nchunks; c++)
		free_pages(chase.chunk[c], chase.order);
	chase.nchunks = 0;
}

static int chase_setup(struct bench_ctx *ctx)
{
	u64 bytes = ctx->param;
	memset(&chase, 0, sizeof(chase));
	unsigned order = 0;
	while (order < MAX_ORDER && (PAGE_SIZE << order) < bytes)
		order++;
	u64 chunk_bytes = PAGE_SIZE << order;
	if (bytes % chunk_bytes && bytes > chunk_bytes)
		return -1;
	u64 n = bytes > chunk_bytes ? bytes / chunk_bytes : 1;
	if (n > CHASE_MAX_CHUNKS || n * chunk_bytes / PAGE_SIZE + 4096 > nr_free_pages()) {
		printk("bench model.pointer_chase: %llu MiB do not fit; boot with more memory\n",
		       (unsigned long long)(bytes >> 20));
		return -1;
	}
	chase.order = order;
	for (unsigned c = 0; c < n; c++) {
		chase.chunk[c] = alloc_pages(GFP_KERNEL, order);
		if (!chase.chunk[c]) {
			chase_teardown(ctx);
			return -1;
		}
		chase.nchunks++;
	}
	chase.lines = bytes / 64;
	chase.lines_per_chunk = bytes < chunk_bytes ? chase.lines : chunk_bytes / 64;
	/* Sattolo's algorithm in place: line i holds next(i); one cycle through every line */
	for (u64 i = 0; i < chase.lines; i++)
		*chase_line(i) = i;
	u64 seed = 0x9e3779b97f4a7c15ull ^ bytes;
	for (u64 i = chase.lines - 1; i > 0; i--) {
		u64 j = xorshift64(&seed) % i;
		u64 *a = chase_line(i), *b = chase_line(j), t = *a;
		*a = *b;
		*b = t;
	}
	for (u64 i = 0; i < chase.lines; i++)
		*chase_line(i) = (u64)chase_line(*chase_line(i));
	chase.cur = (u64)chase_line(0);
	return 0;
}

/* n dependent loads (n a multiple of 8) from p; returns where the chase stopped */
static u64 chase_run(u64 p, u64 n)
{
	__asm__ __volatile__("1:\n\t"
			     "mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\t"
			     "mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\t"
			     "sub $8, %1\n\t"
			     "jnz 1b"
			     : "+r"(p), "+r"(n) :: "memory", "cc");
	return p;
}

static void chase_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 n = ctx->iters;
	if (ctx->warmup && n < chase.lines)
		n = chase.lines;	/* the warm-up round visits every line once at least */
	n = (n + 7) & ~7ull;
	u64 t0 = bench_start();
	chase.cur = chase_run(chase.cur, n);
	s->cycles = bench_stop(t0);
	s->ops = n;
}

DEFINE_BENCH(model_pointer_chase) {
	.name = "model.pointer_chase",
	.desc = "dependent loads over a random cyclic permutation of the lines of a working set (cost-model known answer)",
	.runs = 3, .iters = 32768,
	BENCH_PARAMS("bytes", 4 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10, 512 << 10, 1 << 20,
		     4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20),
	.metric = "load",
	.setup = chase_setup, .run = chase_body, .teardown = chase_teardown,
};

/* ---- 4 KiB test mappings shared by the TLB benchmarks ---- */

#define TLB_VA 0x200000000ull		/* above MM_MMAP_BASE, 2 MiB aligned */
#define TLB_MAX_PAGES 8192
#define GLOBAL_VA (TLB_VA + ((u64)TLB_MAX_PAGES << PAGE_SHIFT) + (2ull << 20))

static struct {
	struct mm_struct *mm;
	struct page *target;	/* every test page maps this one */
	u64 pages;
} tm;

static int tm_setup(u64 pages)
{
	memset(&tm, 0, sizeof(tm));
	tm.mm = mm_alloc();
	tm.target = alloc_page(__GFP_ZERO);
	if (!tm.mm || !tm.target)
		return -1;
	phys_addr_t pa = page_to_phys(tm.target);
	for (u64 i = 0; i < pages; i++)
		if (pt_map_range(&tm.mm->pt, TLB_VA + (i << PAGE_SHIFT), pa, PAGE_SIZE, _PAGE_RW | _PAGE_NX, 0))
			return -1;
	/* one global page too (a global entry in the lower half is legal) */
	if (pt_map_range(&tm.mm->pt, GLOBAL_VA, pa, PAGE_SIZE, _PAGE_RW | _PAGE_NX | _PAGE_GLOBAL, 0))
		return -1;
	tm.pages = pages;
	return 0;
}

static void tm_teardown(struct bench_ctx *ctx)
{
	(void)ctx;
	if (tm.mm) {
		switch_mm(NULL);
		/* the global entry outlives CR3 writes: drop it before the table goes */
		invlpg(GLOBAL_VA);
		mm_put(tm.mm);
	}
	if (tm.target)
		free_page(tm.target);
	tm.mm = NULL;
	tm.target = NULL;
}

/* ---- model.tlb_reach ---- */

static int reach_setup(struct bench_ctx *ctx)
{
	if (ctx->param > TLB_MAX_PAGES || tm_setup(ctx->param)) {
		tm_teardown(ctx);
		return -1;
	}
	return 0;
}

static void reach_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 base = TLB_VA, end = TLB_VA + (tm.pages << PAGE_SHIFT);
	u64 n = ctx->iters;
	if (ctx->warmup && n < 2 * tm.pages)
		n = 2 * tm.pages;
	switch_mm(tm.mm);
	u64 p = base, x, cnt = n;
	u64 t0 = bench_start();
	__asm__ __volatile__("1:\n\t"
			     "mov (%[p]), %[x]\n\t"
			     "add $4096, %[p]\n\t"
			     "cmp %[end], %[p]\n\t"
			     "jne 2f\n\t"
			     "mov %[base], %[p]\n"
			     "2:\n\t"
			     "dec %[n]\n\t"
			     "jnz 1b"
			     : [p] "+&r"(p), [x] "=&r"(x), [n] "+&r"(cnt)
			     : [end] "r"(end), [base] "r"(base)
			     : "memory", "cc");
	s->cycles = bench_stop(t0);
	s->ops = n;
	switch_mm(NULL);
}

DEFINE_BENCH(model_tlb_reach) {
	.name = "model.tlb_reach",
	.desc = "one load per 4 KiB page over N pages, in order (all on one physical page): TLB reach steps",
	.runs = 3, .iters = 16384,
	BENCH_PARAMS("pages", 16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 4096, 8192),
	.metric = "load",
	.setup = reach_setup, .run = reach_body, .teardown = tm_teardown,
};

/* ---- model.invlpg_walk ---- */

static int one_page_setup(struct bench_ctx *ctx)
{
	if (tm_setup(1)) {
		tm_teardown(ctx);
		return -1;
	}
	return 0;
}

static void invlpg_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 va = TLB_VA, x = 0;
	switch_mm(tm.mm);
	x += *(volatile u64 *)va;
	u64 t0 = bench_start();
	if (ctx->param) {
		for (u64 i = 0; i < ctx->iters; i++) {
			__invlpg(va);
			x += *(volatile u64 *)va;
		}
	} else {
		for (u64 i = 0; i < ctx->iters; i++) {
			__asm__ __volatile__("" ::: "memory");	/* same loop shape, no INVLPG */
			x += *(volatile u64 *)va;
		}
	}
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
	ctx->scratch[0] = x;
	switch_mm(NULL);
}

DEFINE_BENCH(model_invlpg_walk) {
	.name = "model.invlpg_walk",
	.desc = "load of one 4 KiB page, with (invlpg:1) or without (invlpg:0) INVLPG of it first: one walk per op",
	.runs = 3, .iters = 4096, BENCH_PARAMS("invlpg", 0, 1), .metric = "load",
	.setup = one_page_setup, .run = invlpg_body, .teardown = tm_teardown,
};

/* ---- model.cr3_global ---- */

static void cr3_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 va = ctx->param ? GLOBAL_VA : TLB_VA, x = 0;
	switch_mm(tm.mm);
	x += *(volatile u64 *)va;
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		write_cr3(read_cr3());
		x += *(volatile u64 *)va;
	}
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
	ctx->scratch[0] = x;
	switch_mm(NULL);
}

DEFINE_BENCH(model_cr3_global) {
	.name = "model.cr3_global",
	.desc = "CR3 reload then a load of a global (global:1) or non-global (global:0) page: only the latter walks",
	.runs = 3, .iters = 4096, BENCH_PARAMS("global", 0, 1), .metric = "load",
	.setup = one_page_setup, .run = cr3_body, .teardown = tm_teardown,
};

/* ---- known answers across CPUs (checked by tools/baremm_lib/modelcheck_smp.py) ----
 *
 * Named modelsmp.* (not model.*) so that bench=model.* still runs on one CPU.
 *
 *   modelsmp.line_pingpong   CPUs 0 and 1 (parallel) hand one cache line back and forth:
 *                            CPU 0 stores an odd value and spins (pause) until CPU 1 has
 *                            stored the next even one. One op = one round trip, on each
 *                            CPU. Under the model: per round trip two core-to-core
 *                            transfers (each CPU's load of the line the other stored) and
 *                            two RFOs (each store invalidates the other's shared copy).
 *   modelsmp.xadd_pingpong   the same hand-off by `lock xadd` alone: each CPU spins
 *                            (pause) on an atomic read of a counter (xadd 0) until it
 *                            holds its turn, then adds 1. Each hand-off is an atomic on a
 *                            line the other CPU holds modified: under the model one
 *                            transfer (a read for ownership), so a round trip is two.
 *   modelsmp.llc_remote      CPU 0 loads every line of a 256 KiB buffer that the last CPU
 *                            has just written and then pushed out of its L1d and L2 (by
 *                            reading 4 MiB more): every line is clean in the last CPU's
 *                            LLC only. Under the model each load costs llc_lat when the
 *                            two CPUs share an LLC, the cross-socket (CCD) latency
 *                            c2c_remote_lat when they do not (zen3 from 9 CPUs on).
 *   modelsmp.ipi_roundtrip   CPU 0 sends CPU 1 (halted, idle) an asynchronous call whose
 *                            function sends an asynchronous call back to CPU 0, which
 *                            halts until its own handler has run it. One op = one round
 *                            trip = two IPIs, each with an interrupt entry and exit.
 */

static u64 pp_line[8] __aligned(64);
static u64 pp_calls[2];

static int pp_setup(struct bench_ctx *ctx)
{
	(void)ctx;
	WRITE_ONCE(pp_line[0], 0);
	pp_calls[0] = pp_calls[1] = 0;
	return 0;
}

static void pp_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	unsigned me = smp_processor_id();
	if (me > 1) {	/* only CPUs 0 and 1 take part (bench_cpus=2 is the default) */
		s->cycles = 0;
		s->ops = 0;
		return;
	}
	u64 base = pp_calls[me]++ * 2 * ctx->iters;
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		u64 mine = base + 2 * i + 1 + me, want = me ? mine - 1 : mine + 1;
		if (me) {
			while (READ_ONCE(pp_line[0]) != want)
				cpu_relax();
			WRITE_ONCE(pp_line[0], mine);
		} else {
			WRITE_ONCE(pp_line[0], mine);
			while (READ_ONCE(pp_line[0]) != want)
				cpu_relax();
		}
	}
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
}

DEFINE_BENCH(modelsmp_line_pingpong) {
	.name = "modelsmp.line_pingpong",
	.desc = "two CPUs hand one cache line back and forth (store, spin on the other's store): one op = one round trip",
	.min_cpus = 2, .def_cpus = 2, .runs = 5, .iters = 200, .parallel = true,
	.metric = "roundtrip",
	.setup = pp_setup, .run = pp_body,
};

static u64 xa_line[8] __aligned(64);
static u64 xa_calls[2];

static inline u64 xadd_u64(u64 *p, u64 v)
{
	asm volatile("lock xaddq %0, %1" : "+r"(v), "+m"(*p) : : "memory");
	return v;
}

static int xa_setup(struct bench_ctx *ctx)
{
	(void)ctx;
	WRITE_ONCE(xa_line[0], 0);
	xa_calls[0] = xa_calls[1] = 0;
	return 0;
}

static void xa_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	unsigned me = smp_processor_id();
	if (me > 1) {
		s->cycles = 0;
		s->ops = 0;
		return;
	}
	u64 base = xa_calls[me]++ * 2 * ctx->iters;
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		u64 turn = base + 2 * i + me;	/* CPU 0 moves the counter from even values */
		while (xadd_u64(&xa_line[0], 0) != turn)
			cpu_relax();
		xadd_u64(&xa_line[0], 1);
	}
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
}

DEFINE_BENCH(modelsmp_xadd_pingpong) {
	.name = "modelsmp.xadd_pingpong",
	.desc = "two CPUs hand a counter back and forth by lock xadd (spin on xadd 0, then add 1): one op = one round trip",
	.min_cpus = 2, .def_cpus = 2, .runs = 5, .iters = 200, .parallel = true,
	.metric = "roundtrip",
	.setup = xa_setup, .run = xa_body,
};

#define LR_ORDER 6	/* the buffer CPU 0 loads: 256 KiB */
#define LR_EVICT_ORDER 10	/* what the far CPU reads after it: 4 MiB, over any L2 */
static struct page *lr_buf, *lr_evict;

static void lr_teardown(struct bench_ctx *ctx)
{
	(void)ctx;
	if (lr_buf)
		free_pages(lr_buf, LR_ORDER);
	if (lr_evict)
		free_pages(lr_evict, LR_EVICT_ORDER);
	lr_buf = lr_evict = NULL;
}

static int lr_setup(struct bench_ctx *ctx)
{
	lr_buf = alloc_pages(GFP_KERNEL, LR_ORDER);
	lr_evict = alloc_pages(GFP_KERNEL, LR_EVICT_ORDER);
	if (!lr_buf || !lr_evict) {
		lr_teardown(ctx);
		return -1;
	}
	return 0;
}

/* On the far CPU: write every line of the buffer (which drops every other copy), then
 * read enough other lines to push it out of this CPU's L1d and L2. */
static void lr_fill(void *info)
{
	(void)info;
	u64 *b = page_address(lr_buf), *e = page_address(lr_evict), sum = 0;
	for (u64 i = 0; i < (PAGE_SIZE << LR_ORDER) / 8; i += 8)
		WRITE_ONCE(b[i], i);
	for (u64 i = 0; i < (PAGE_SIZE << LR_EVICT_ORDER) / 8; i += 8)
		sum += READ_ONCE(e[i]);
	WRITE_ONCE(e[1], sum);
}

static void lr_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 lines = (PAGE_SIZE << LR_ORDER) / 64, sum = 0;
	const u64 *b = page_address(lr_buf);
	smp_call_function_single(ctx->ncpus - 1, lr_fill, NULL, true);
	u64 t0 = bench_start();
	for (u64 i = 0; i < lines; i++)
		sum += READ_ONCE(b[i * 8]);
	s->cycles = bench_stop(t0);
	s->ops = lines;
	ctx->scratch[0] = sum;
}

DEFINE_BENCH(modelsmp_llc_remote) {
	.name = "modelsmp.llc_remote",
	.desc = "CPU 0 loads lines the last CPU wrote and pushed out to its LLC: one op = one load",
	.min_cpus = 2, .def_cpus = BENCH_ALL_CPUS, .runs = 3, .iters = 1, .metric = "load",
	.setup = lr_setup, .run = lr_body, .teardown = lr_teardown,
};

static volatile u64 ipi_rt_done;

static void ipi_rt_back(void *info)
{
	(void)info;
	WRITE_ONCE(ipi_rt_done, READ_ONCE(ipi_rt_done) + 1);	/* runs on CPU 0, in its handler */
}

static void ipi_rt_there(void *info)
{
	(void)info;
	smp_call_function_single(0, ipi_rt_back, NULL, false);	/* runs on CPU 1 */
}

static void ipi_rt_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		u64 want = READ_ONCE(ipi_rt_done) + 1;
		local_irq_disable();
		smp_call_function_single(1, ipi_rt_there, NULL, false);
		while (READ_ONCE(ipi_rt_done) != want) {
			safe_halt();	/* sti; hlt: the call back wakes us */
			local_irq_disable();
		}
		local_irq_enable();
	}
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
}

DEFINE_BENCH(modelsmp_ipi_roundtrip) {
	.name = "modelsmp.ipi_roundtrip",
	.desc = "CPU 0 -> CPU 1 -> CPU 0 by two asynchronous calls, CPU 0 halted in between: one op = two IPIs",
	.min_cpus = 2, .def_cpus = 2, .runs = 5, .iters = 200, .metric = "roundtrip",
	.run = ipi_rt_body,
};
