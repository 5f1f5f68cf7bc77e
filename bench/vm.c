/*
 * Virtual-memory benchmarks: how fast address spaces are faulted in, copied and torn
 * down. Results and commands: docs/RESULTS.md; the seed experiments that use them:
 * docs/EXPERIMENTS.md.
 *
 *   vm.page_fault1/2/3    will-it-scale's page_fault shapes, every CPU at once: map a
 *                         region, write one byte per 4 KiB page (one fault each), unmap;
 *                         an operation is one page fault, the map/unmap cost is spread
 *                         over the faults of its region. 1 = private anonymous,
 *                         2 = private mapping of a file-like object (copy on write of the
 *                         cache page), 3 = shared mapping of a file-like object (the page
 *                         becomes dirty; its unmap goes through delayed rmap).
 *                         Every CPU has its own file object, as every will-it-scale task
 *                         has its own file. `vm_mode` picks processes (each CPU its own
 *                         address space) or threads (all CPUs in one address space, so
 *                         every unmap shoots down the other CPUs' TLBs).
 *   vm.sparse_tables      a big region with one byte read per 2 MiB, so every
 *                         touch needs its own page table, and one byte written in the
 *                         first 2 MiB, which gives the region private pages: fork copies
 *                         the page tables only of such regions, as Linux's does (a
 *                         read-only region would be skipped whole). Then fork + exit
 *                         (dup_mm + mm_put of the copy). An operation is one table page
 *                         built by the copy and freed by the exit.
 *   vm.sparse_tables_munmap  the same region built by faults and torn down by munmap
 *                         (the "big mapping, touch one page per table, unmap" worst case).
 *                         An operation is one table page.
 *   vm.refpage            map N bytes of reference-page-backed
 *                         memory, give it its initial contents the `refpage_init` way,
 *                         write one word per 4 KiB page up to M bytes, unmap. An operation
 *                         is one map/initialise/touch/unmap cycle; pages allocated per
 *                         cycle are the alloc_* and fault_* events per operation.
 *
 * All user-range work happens in thread context (smp_run_parallel bodies or CPU 0's
 * harness thread), never inside a cross-CPU call, as docs/VM.md requires.
 */
#include "bench/bench.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/events.h"
#include "kernel/options.h"
#include "kernel/printk.h"
#include "kernel/panic.h"
#include "mm/mm.h"
#include "mm/filemap.h"
#include "mm/refpage.h"
#include "mm/tlbflush.h"
#include "mm/page_alloc.h"

#define RW (VM_READ | VM_WRITE)

#define VM_MODE_LIST(X)                                                                     \
	X(VM_MODE_PROCESSES, "processes", "every CPU faults in its own address space")       \
	X(VM_MODE_THREADS, "threads",                                                       \
	  "every CPU faults in one shared address space (unmaps shoot down the other CPUs)")
enum { VM_MODE_LIST(OPTION_ENUM_CONST) };

DEFINE_VARIANT_ENUM(vm_mode, "vm_mode", VM_MODE_PROCESSES, "vm.page_fault* benchmarks",
		    VM_MODE_LIST);
DEFINE_OPTION_UINT(vm_pf_mb, "vm_pf_mb", 8, 1, 1000,
		   "vm.page_fault* benchmarks: MiB each CPU maps, touches and unmaps per pass");
DEFINE_OPTION_UINT(vm_refpage_mb, "vm_refpage_mb", 4, 1, 4096,
		   "vm.refpage: MiB mapped per cycle (N; the touched part M is the case's "
		   "touch_permille of it)");
DEFINE_VARIANT_BOOL(vm_refpage_eager, "vm_refpage_eager", true,
		    "vm.refpage with refpage_init=memset: first-access every page of the N bytes "
		    "before touching (an allocator's eager memset of the whole allocation); "
		    "false: pages are filled lazily at their first touch only");

#define SPARSE_SLOT_LIST(X)                                                                 \
	X(SPARSE_SLOT_0, "0", "the first")                                                  \
	X(SPARSE_SLOT_511, "511", "the last")                                               \
	X(SPARSE_SLOT_SPREAD, "spread",                                                     \
	  "slot (i * 97) mod 512 for the i-th 2 MiB: every slot once per GiB")
enum { SPARSE_SLOT_LIST(OPTION_ENUM_CONST) };
DEFINE_VARIANT_ENUM(vm_sparse_slot, "vm_sparse_slot", SPARSE_SLOT_0,
		    "vm.sparse_tables*: which 4 KiB slot of each 2 MiB the one read touches "
		    "(tools/linux-ref's sparse cases use the same)", SPARSE_SLOT_LIST);

static inline u8 uread8(u64 va) { return *(volatile u8 *)va; }
static inline void uwrite8(u64 va, u8 v) { *(volatile u8 *)va = v; }
static inline u64 uread64(u64 va) { return *(volatile u64 *)va; }
static inline void uwrite64(u64 va, u64 v) { *(volatile u64 *)va = v; }

static u64 bench_mmap(struct mm_struct *mm, u64 len, enum vm_kind kind, void *obj)
{
	long a = vm_mmap(mm, 0, len, RW, kind, obj);
	if (a < 0)
		panic("bench vm: vm_mmap of %llu KiB (kind %d) failed: %ld",
		      (unsigned long long)(len >> 10), (int)kind, a);
	return (u64)a;
}

static void bench_munmap(struct mm_struct *mm, u64 a, u64 len)
{
	int err = vm_munmap(mm, a, len);
	if (err)
		panic("bench vm: vm_munmap(%#llx, %llu KiB) failed: %d", (unsigned long long)a,
		      (unsigned long long)(len >> 10), err);
}

/* ---- vm.page_fault1/2/3 ---- */

struct pf_state {
	enum vm_kind kind;
	u64 region_pages;
	struct mm_struct *shared;		/* threads mode */
	struct mm_struct *own[NR_CPUS];		/* processes mode */
	struct file_obj *file[NR_CPUS];		/* page_fault2/3: one per CPU */
	struct smp_barrier start, end;
};

static struct pf_state pf_state;

static int pf_setup_kind(struct bench_ctx *ctx, enum vm_kind kind)
{
	struct pf_state *st = &pf_state;
	*st = (struct pf_state){ .kind = kind, .region_pages = vm_pf_mb << (20 - PAGE_SHIFT) };
	u64 need = (u64)ctx->ncpus * st->region_pages * (kind == VM_ANON ? 1 : 2) + 1024;
	if (need > nr_free_pages()) {
		printk("bench vm: %u CPUs x %llu MiB need ~%llu pages, %llu free: lower vm_pf_mb\n",
		       ctx->ncpus, (unsigned long long)vm_pf_mb, (unsigned long long)need,
		       (unsigned long long)nr_free_pages());
		return -1;
	}
	st->shared = mm_alloc();
	if (!st->shared)
		return -1;
	for (unsigned c = 0; c < ctx->ncpus; c++) {
		st->own[c] = mm_alloc();
		if (!st->own[c])
			return -1;
		if (kind != VM_ANON) {
			st->file[c] = file_obj_create(st->region_pages << PAGE_SHIFT);
			if (!st->file[c])
				return -1;
		}
	}
	smp_barrier_init(&st->start, ctx->ncpus);
	smp_barrier_init(&st->end, ctx->ncpus);
	ctx->priv = st;
	return 0;
}

static int pf1_setup(struct bench_ctx *ctx) { return pf_setup_kind(ctx, VM_ANON); }
static int pf2_setup(struct bench_ctx *ctx) { return pf_setup_kind(ctx, VM_FILE_PRIVATE); }
static int pf3_setup(struct bench_ctx *ctx) { return pf_setup_kind(ctx, VM_FILE_SHARED); }

static void pf_teardown(struct bench_ctx *ctx)
{
	struct pf_state *st = &pf_state;
	(void)ctx;
	if (st->shared)
		mm_put(st->shared);
	for (unsigned c = 0; c < NR_CPUS; c++) {
		if (st->own[c])
			mm_put(st->own[c]);
		if (st->file[c])
			file_obj_put(st->file[c]);
	}
	*st = (struct pf_state){ 0 };
}

/* On every CPU at once: map, write one byte per page, unmap, until ctx->iters faults. */
static void pf_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	struct pf_state *st = ctx->priv;
	unsigned cpu = smp_processor_id();
	struct mm_struct *mm = READ_ONCE(vm_mode) == VM_MODE_THREADS ? st->shared : st->own[cpu];
	void *obj = st->file[cpu];
	u64 done = 0;

	switch_mm(mm);
	smp_barrier_wait(&st->start);	/* threads: everyone is in the mm before the clock */
	u64 t0 = bench_start();
	while (done < ctx->iters) {
		u64 n = MIN(st->region_pages, ctx->iters - done);
		u64 a = bench_mmap(mm, n << PAGE_SHIFT, st->kind, obj);
		for (u64 i = 0; i < n; i++)
			uwrite8(a + (i << PAGE_SHIFT), 1);
		bench_munmap(mm, a, n << PAGE_SHIFT);
		done += n;
	}
	s->cycles = bench_stop(t0);
	s->ops = done;
	smp_barrier_wait(&st->end);	/* threads: nobody leaves while others still unmap */
	switch_mm(NULL);
}

#define PF_COMMON                                                                          \
	.reads = "vm_mode,vm_pf_mb,bench_cpus,rmapbatch,tlb_ceiling",                      \
	.def_cpus = BENCH_ALL_CPUS, .runs = 8, .iters = 2048, .parallel = true,            \
	.throughput = true, .metric = "fault", .run = pf_run, .teardown = pf_teardown

DEFINE_BENCH(vm_page_fault1) {
	.name = "vm.page_fault1",
	.desc = "will-it-scale page_fault1: every CPU maps private anonymous memory, writes "
		"one byte per 4 KiB page, unmaps (op = one fault, map/unmap amortised; "
		"vm_pf_mb per pass, default 8, will-it-scale 128)",
	PF_COMMON, .setup = pf1_setup, .suite = BENCH_DEFAULT,
};

DEFINE_BENCH(vm_page_fault2) {
	.name = "vm.page_fault2",
	.desc = "will-it-scale page_fault2: every CPU maps its own file-like object privately, "
		"writes one byte per page (copy of the cache page), unmaps (op = one fault; "
		"vm_pf_mb per pass, default 8, will-it-scale 128)",
	PF_COMMON, .setup = pf2_setup,
};

DEFINE_BENCH(vm_page_fault3) {
	.name = "vm.page_fault3",
	.desc = "will-it-scale page_fault3: every CPU maps its own file-like object shared, "
		"writes one byte per page (dirty shared page; unmap uses delayed rmap, seed 001), "
		"unmaps (op = one fault; vm_pf_mb per pass, default 8, will-it-scale 128)",
	PF_COMMON, .setup = pf3_setup,
};

/* ---- vm.sparse_tables ---- */

struct sparse_state {
	struct mm_struct *mm;
	u64 base, len;
	int built_slot;		/* vm_sparse_slot the parent's region was touched with */
};

static struct sparse_state sparse_state;

/* Offset in the i-th 2 MiB of the page vm_sparse_slot reads. */
static inline u64 sparse_slot_off(int mode, u64 i)
{
	u64 slot = mode == SPARSE_SLOT_0 ? 0 : mode == SPARSE_SLOT_511 ? 511 : (i * 97) % 512;
	return slot << PAGE_SHIFT;
}

/* One read per 2 MiB: each maps the zero page and needs a page table of its own. */
static void sparse_touch(u64 base, u64 len)
{
	int mode = READ_ONCE(vm_sparse_slot);
	for (u64 off = 0, i = 0; off < len; off += PMD_SIZE, i++) {
		u64 va = base + off + sparse_slot_off(mode, i);
		if (uread8(va) != 0)
			panic("bench vm: sparse region not zero at %#llx", (unsigned long long)va);
	}
}

/* The fork benchmark's parent: reads as above, then one write to the first slot, the
 * same single write tools/linux-ref's sparse fork makes (without it fork copies nothing). */
static void sparse_build_parent(struct sparse_state *st)
{
	st->built_slot = READ_ONCE(vm_sparse_slot);
	switch_mm(st->mm);
	sparse_touch(st->base, st->len);
	uwrite8(st->base + sparse_slot_off(st->built_slot, 0), 1);
	switch_mm(NULL);
}

static int sparse_setup_common(struct bench_ctx *ctx, bool build)
{
	struct sparse_state *st = &sparse_state;
	st->len = ctx->param << 30;
	/* a PT per 2 MiB, a PMD per GiB, a few above: 4 KiB each, twice (parent + copy) */
	u64 tables = (st->len >> 21) + (st->len >> 30) + 4;
	if (2 * tables + 1024 > nr_free_pages()) {
		printk("bench vm: %llu GiB sparse needs ~%llu table pages, %llu free\n",
		       (unsigned long long)ctx->param, (unsigned long long)(2 * tables),
		       (unsigned long long)nr_free_pages());
		return -1;
	}
	st->mm = mm_alloc();
	if (!st->mm)
		return -1;
	if (build) {
		st->base = bench_mmap(st->mm, st->len, VM_ANON, NULL);
		sparse_build_parent(st);
	}
	ctx->priv = st;
	return 0;
}

static int sparse_fork_setup(struct bench_ctx *ctx) { return sparse_setup_common(ctx, true); }
static int sparse_munmap_setup(struct bench_ctx *ctx) { return sparse_setup_common(ctx, false); }

static void sparse_teardown(struct bench_ctx *ctx)
{
	(void)ctx;
	if (sparse_state.mm)
		mm_put(sparse_state.mm);
	sparse_state = (struct sparse_state){ 0 };
}

/* fork + exit of the sparse address space, ctx->iters times. */
static void sparse_fork_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	struct sparse_state *st = ctx->priv;
	u64 tables = 0;
	if (st->built_slot != READ_ONCE(vm_sparse_slot)) {
		/* ab=vm_sparse_slot: rebuild the parent with this round's slots, untimed */
		bench_munmap(st->mm, st->base, st->len);
		st->base = bench_mmap(st->mm, st->len, VM_ANON, NULL);
		sparse_build_parent(st);
	}
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		struct mm_struct *child = dup_mm(st->mm);
		if (!child)
			panic("bench vm: dup_mm of the sparse address space failed (out of memory)");
		tables += (u64)READ_ONCE(child->pt.nr_tables);
		mm_put(child);
	}
	s->cycles = bench_stop(t0);
	s->ops = tables;
}

/* map, one read per 2 MiB (tables built by faults), unmap (emptied tables freed). */
static void sparse_munmap_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	struct sparse_state *st = ctx->priv;
	u64 tables = 0;
	switch_mm(st->mm);
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++) {
		u64 a = bench_mmap(st->mm, st->len, VM_ANON, NULL);
		sparse_touch(a, st->len);
		tables += (u64)READ_ONCE(st->mm->pt.nr_tables);
		bench_munmap(st->mm, a, st->len);
	}
	s->cycles = bench_stop(t0);
	s->ops = tables;
	switch_mm(NULL);
}

DEFINE_BENCH(vm_sparse_tables) {
	.name = "vm.sparse_tables",
	.desc = "seed 002: address space with one byte read per 2 MiB of a GiB-sized region "
		"(a page table per touch) and one byte written (so fork copies its tables, as "
		"tools/linux-ref's), then fork+exit (dup_mm + mm_put); op = one table page "
		"built by the copy and freed by the exit (seed: 4096 GiB, ~2M tables, reads "
		"only); the read slot per vm_sparse_slot, table scans per pt_scan",
	.reads = "vm_sparse_slot,pt_scan",
	.runs = 8, .iters = 1, BENCH_PARAMS("gib", 1, 16), .metric = "table",
	.setup = sparse_fork_setup, .run = sparse_fork_run, .teardown = sparse_teardown,
};

DEFINE_BENCH(vm_sparse_tables_munmap) {
	.name = "vm.sparse_tables_munmap",
	.desc = "seed 002 thread's worst case: map a GiB-sized region, read one byte per 2 MiB "
		"(faults build a page table each), munmap (every table freed); op = one table page "
		"built and freed; the read slot per vm_sparse_slot, table scans per pt_scan",
	.reads = "vm_sparse_slot,pt_scan",
	.runs = 8, .iters = 1, BENCH_PARAMS("gib", 1, 16), .metric = "table",
	.setup = sparse_munmap_setup, .run = sparse_munmap_run, .teardown = sparse_teardown,
};

/* ---- vm.refpage ---- */

struct refpage_state {
	struct mm_struct *mm;
	u64 map_pages, touch_pages;
};

static struct refpage_state refpage_state;

static int refpage_setup(struct bench_ctx *ctx)
{
	struct refpage_state *st = &refpage_state;
	st->map_pages = vm_refpage_mb << (20 - PAGE_SHIFT);
	st->touch_pages = st->map_pages * ctx->param / 1000;
	if (st->touch_pages < 1)
		st->touch_pages = 1;
	if (st->map_pages + 1024 > nr_free_pages()) {
		printk("bench vm: vm_refpage_mb=%llu needs %llu pages, %llu free\n",
		       (unsigned long long)vm_refpage_mb, (unsigned long long)st->map_pages,
		       (unsigned long long)nr_free_pages());
		return -1;
	}
	st->mm = mm_alloc();
	if (!st->mm)
		return -1;
	printk("BAREMM-INFO bench=vm.refpage touch_permille=%llu map_pages=%llu touch_pages=%llu\n",
	       (unsigned long long)ctx->param, (unsigned long long)st->map_pages,
	       (unsigned long long)st->touch_pages);
	ctx->priv = st;
	return 0;
}

static void refpage_teardown(struct bench_ctx *ctx)
{
	(void)ctx;
	if (refpage_state.mm)
		mm_put(refpage_state.mm);
	refpage_state = (struct refpage_state){ 0 };
}

static void refpage_run(struct bench_ctx *ctx, struct bench_sample *s)
{
	struct refpage_state *st = ctx->priv;
	int mode = READ_ONCE(refpage_init);
	bool eager = mode == REFPAGE_INIT_MEMSET && READ_ONCE(vm_refpage_eager);
	u64 len = st->map_pages << PAGE_SHIFT;

	switch_mm(st->mm);
	u64 t0 = bench_start();
	for (u64 it = 0; it < ctx->iters; it++) {
		u64 a = bench_mmap(st->mm, len, VM_REFPAGE, NULL);
		if (eager)	/* the allocator's memset: every page gets its pattern now */
			for (u64 i = 0; i < st->map_pages; i++)
				(void)uread64(a + (i << PAGE_SHIFT));
		if (ctx->warmup && it == 0) {
			/* check the variant really gives the initial contents it claims */
			u64 want = mode == REFPAGE_INIT_ZEROPAGE ? 0 : REFPAGE_DEFAULT_PATTERN;
			u64 got = uread64(a);
			if (got != want)
				panic("bench vm: refpage_init=%d: first word %#llx, expected %#llx",
				      mode, (unsigned long long)got, (unsigned long long)want);
		}
		for (u64 i = 0; i < st->touch_pages; i++)
			uwrite64(a + (i << PAGE_SHIFT), i);
		bench_munmap(st->mm, a, len);
	}
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
	switch_mm(NULL);
}

DEFINE_BENCH(vm_refpage) {
	.name = "vm.refpage",
	.desc = "seed 004 microbenchmark: map N = vm_refpage_mb MiB (default 4) of "
		"reference-page memory, initial contents per refpage_init (memset: every page "
		"filled up front when vm_refpage_eager), write one word per 4 KiB up to "
		"M = N * touch_permille / 1000 (0 = one page), unmap; op = one cycle",
	.reads = "refpage_init,vm_refpage_mb,vm_refpage_eager",
	.runs = 8, .iters = 2, BENCH_PARAMS("touch_permille", 0, 500, 1000), .metric = "cycle",
	.setup = refpage_setup, .run = refpage_run, .teardown = refpage_teardown,
};
