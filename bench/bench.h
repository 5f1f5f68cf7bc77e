/*
 * The benchmark harness (bench/harness.c). A benchmark is declared once, in its own file:
 *
 *   static void my_run(struct bench_ctx *ctx, struct bench_sample *s) { ... }
 *   DEFINE_BENCH(my_bench) {
 *       .name = "family.name", .desc = "one line", .reads = "opt1,opt2",
 *       .min_cpus = 1, .def_cpus = 1, .runs = 10, .warmup = 2, .iters = 1000,
 *       .params = (const u64[]){ 1, 8, 32 }, .nparams = 3, .param_name = "pages",
 *       .parallel = false, .run = my_run, .setup = ..., .teardown = ...,
 *       .metric = "flush", .unit = "cycles", .suite = BENCH_DEFAULT,
 *   };
 *
 * For every case (param value) the harness calls setup(), then for each of `warmup`
 * unmeasured and `runs` measured rounds runs the body once per variant value (A B A B:
 * interleaved so drift hits every variant alike), then teardown(). The body does
 * ctx->iters operations and fills s->cycles (TSC cycles spent, measured by the body
 * around exactly the operations) and s->ops (operations done). With .parallel the body
 * runs on ctx->ncpus CPUs at once (CPU 0..ncpus-1), started together by a barrier, each
 * filling its own sample; otherwise it runs on CPU 0 only (and may drive other CPUs
 * itself). Events (kernel/events.h) are summed over all CPUs over the timed regions
 * (first bench_start() in to last bench_stop() out) of each measured round and
 * reported per operation.
 *
 * Each figure prints as one BAREMM-RESULT line (docs/OUTPUT.md) with median, mean,
 * stddev, %stddev, min, max of cycles per op over the runs (parallel: the mean over the
 * CPUs of each round), the same median in ns, ops/s per CPU for throughput-shaped
 * benchmarks (.throughput), and ev.<event>=<per op> for every event that moved.
 *
 * Options: bench=<glob>|list|default, runs=, warmup=, iters=, bench_cpus=,
 * ab=<variant option>:<v1>,<v2>[,...] (only options declared with DEFINE_VARIANT_*).
 */
#ifndef BAREMM_BENCH_H
#define BAREMM_BENCH_H

#include "kernel/types.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/costmodel.h"

enum bench_suite {
	BENCH_FULL = 0,		/* only in bench=* / make bench */
	BENCH_DEFAULT = 1,	/* also in bench=default (make run) */
};

struct bench_sample {
	u64 cycles;	/* TSC cycles spent on the operations */
	u64 ops;	/* operations done */
};

struct bench;
struct bench_ctx {
	const struct bench *b;
	unsigned ncpus;		/* CPUs taking part: 0..ncpus-1 */
	unsigned case_idx;
	u64 param;		/* current case's parameter (0 when none) */
	u64 iters;		/* operations the body should do */
	bool warmup;		/* this round is not measured */
	void *priv;		/* benchmark state from setup */
	u64 scratch[8];		/* free for the benchmark */
};

struct bench {
	const char *name;
	const char *desc;
	const char *reads;	/* comma-separated options the benchmark reads */
	unsigned min_cpus;	/* fewer online: clear error, exit status bench_error */
	unsigned def_cpus;	/* 0 = every online CPU; bench_cpus= overrides */
	unsigned runs, warmup;
	u64 iters;
	const u64 *params;
	unsigned nparams;
	const char *param_name;
	bool parallel;
	bool throughput;	/* also report ops/s per CPU */
	const char *metric;	/* default "op" */
	const char *unit;	/* default "cycles" */
	enum bench_suite suite;
	int (*setup)(struct bench_ctx *ctx);	/* nonzero: case skipped with a message */
	void (*run)(struct bench_ctx *ctx, struct bench_sample *s);
	void (*teardown)(struct bench_ctx *ctx);
} __aligned(16);

#define DEFINE_BENCH(id) \
	static struct bench __bench_##id __attribute__((used, section("baremm_benches"), aligned(16))) =

extern struct bench __start_baremm_benches[], __stop_baremm_benches[];

/* Event counting follows the timed regions (bench/harness.c): the first CPU to enter
 * snapshots every CPU's events, the last to leave snapshots them again, outside the
 * TSC reads; a round reports the events of its timed regions only. */
void bench_region_enter(void);
void bench_region_exit(void);

/*
 * Time a region: t0 = bench_start(); ...; s->cycles = bench_stop(t0). Fenced TSC reads.
 * The same pair brackets the region for the cycle-cost model (arch/x86_64/costmodel.h)
 * and for the event counts; both sit outside the TSC reads, so they never count in the
 * TSC figure. A body may time several regions per round (their sum is its sample). A
 * sub-measurement that is not the figure (e.g. a reference round trip) reads the TSC
 * itself (rdtsc_ordered()), so its events and model cycles stay out of the figure's.
 */
static inline u64 bench_start(void)
{
	bench_region_enter();
	model_region_begin();
	return rdtsc_ordered();
}
static inline u64 bench_stop(u64 t0)
{
	u64 t = rdtsc_ordered() - t0;
	model_region_end();
	bench_region_exit();
	return t;
}

/* Run the benchmarks matching @glob ("default" = the default suite). */
int bench_run_selected(const char *glob);

#endif
