/*
 * The benchmark harness (bench/harness.c). A benchmark is declared once, in its own file,
 * and declares only what differs from the harness's defaults. Most are one op function
 * and one declaration:
 *
 *   BENCH_OP(my_op, ctx)			// one operation; the harness times the loop
 *   {
 *       do_the_thing(ctx->param);
 *   }
 *   DEFINE_BENCH(my_bench) {
 *       .name = "family.name", .desc = "one line", .reads = "opt1,opt2",
 *       .iters = 20000, BENCH_PARAMS("pages", 1, 8, 32), .metric = "flush",
 *       .op = &my_op,
 *   };
 *
 * Defaults (a field left out or 0): runs 10, warmup 1, iters 1000, min_cpus 1,
 * def_cpus 1 (BENCH_ALL_CPUS: every online CPU), one case with param 0, not parallel,
 * metric "op", unit "cycles", suite BENCH_FULL, no setup/teardown. .reads names the
 * options the benchmark reads (comma-separated); every name must be a declared option:
 * the harness checks them at every benchmark boot (BAREMM-ERROR, exit bench_error) and
 * the ktest bench.declarations does too.
 *
 * The body is either .op, made by BENCH_OP: the harness's timed loop, bench_start(),
 * ctx->iters calls of the op, bench_stop(), generated around the op so the op inlines
 * into it as in a hand-written loop; or .run, for a body that is more than that loop:
 *
 *   static void my_run(struct bench_ctx *ctx, struct bench_sample *s)
 *   {
 *       ... untimed preparation ...
 *       u64 t0 = bench_start();
 *       ... ctx->iters operations ...
 *       s->cycles = bench_stop(t0);
 *       s->ops = ctx->iters;
 *   }
 *
 * For every case (param value) the harness calls setup(), then for each of `warmup`
 * unmeasured and `runs` measured rounds runs the body once per variant value (A B A B:
 * interleaved so drift hits every variant alike), then teardown(). The body does
 * ctx->iters operations and fills s->cycles (TSC cycles spent, measured around exactly
 * the operations) and s->ops (operations done). With .parallel the body runs on
 * ctx->ncpus CPUs at once (CPU 0..ncpus-1), started together by a barrier, each filling
 * its own sample; otherwise it runs on CPU 0 only (and may drive other CPUs itself).
 * Events (kernel/events.h) are summed over all CPUs over the timed regions (first
 * bench_start() in to last bench_stop() out) of each measured round and reported per
 * operation.
 *
 * Each figure prints as one BAREMM-RESULT line (docs/OUTPUT.md) with median, mean,
 * stddev, %stddev, min, max of cycles per op over the runs (parallel: the mean over the
 * CPUs of each round), the same median in ns, ops/s per CPU for throughput-shaped
 * benchmarks (.throughput), and ev.<event>=<per op> for every event that moved.
 *
 * Options: bench=<glob>|list|default, runs=, warmup=, iters=, bench_cpus=N (or a list
 * 2,4,8 / range 2-16: each benchmark runs once per count, in that order), cases=<params>
 * (only the cases with these parameters), ab=<variant option>:<v1>,<v2>[,...] (only
 * options declared with DEFINE_VARIANT_*).
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

typedef void bench_body_fn(struct bench_ctx *ctx, struct bench_sample *s);

/* A per-op body: made only by BENCH_OP (the harness's timed loop around one op). */
struct bench_op {
	bench_body_fn *timed_loop;
};

#define BENCH_ALL_CPUS (~0u)	/* .def_cpus: every online CPU */

/* Every field may be left out (0/NULL = the default named here) except name, desc and
 * one of op/run. */
struct bench {
	const char *name;
	const char *desc;
	const char *reads;	/* comma-separated options the benchmark reads (checked) */
	unsigned min_cpus;	/* 1; fewer online: clear error, exit status bench_error */
	unsigned def_cpus;	/* 1, or BENCH_ALL_CPUS; bench_cpus= overrides */
	unsigned runs;		/* 10 measured rounds */
	unsigned warmup;	/* 1 unmeasured round first */
	u64 iters;		/* 1000 operations per round */
	const u64 *params;	/* one case per value: BENCH_PARAMS(); none: one case, 0 */
	unsigned nparams;
	const char *param_name;
	bool parallel;
	bool throughput;	/* also report ops/s per CPU */
	const char *metric;	/* "op" */
	const char *unit;	/* "cycles" */
	enum bench_suite suite;	/* BENCH_FULL */
	int (*setup)(struct bench_ctx *ctx);	/* nonzero: case skipped with a message */
	const struct bench_op *op;		/* the body: BENCH_OP ... */
	bench_body_fn *run;			/* ... or a hand-written one */
	void (*teardown)(struct bench_ctx *ctx);
} __aligned(16);

#define BENCH_DEFAULT_RUNS 10
#define BENCH_DEFAULT_WARMUP 1
#define BENCH_DEFAULT_ITERS 1000

#define DEFINE_BENCH(id) \
	static struct bench __bench_##id __attribute__((used, section("baremm_benches"), aligned(16))) =

/* The cases: BENCH_PARAMS("pages", 1, 8, 32) sets params, their count and their name. */
#define BENCH_PARAMS(name_, ...)                                                           \
	.params = (const u64[]){ __VA_ARGS__ },                                            \
	.nparams = (unsigned)(sizeof((const u64[]){ __VA_ARGS__ }) / sizeof(u64)),         \
	.param_name = (name_)

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

/*
 * BENCH_OP(name, ctx) { one operation on ctx } defines the op and `name`, the harness's
 * timed loop around it, for `.op = &name`. The loop (bench_time_ops) is instantiated
 * where BENCH_OP is used, so the op inlines into it: the figure is the op's cost, not an
 * indirect call's.
 */
static inline __attribute__((always_inline)) void
bench_time_ops(struct bench_ctx *ctx, struct bench_sample *s, void (*op)(struct bench_ctx *ctx))
{
	u64 t0 = bench_start();
	for (u64 i = 0; i < ctx->iters; i++)
		op(ctx);
	s->cycles = bench_stop(t0);
	s->ops = ctx->iters;
}

#define BENCH_OP(name_, ctx_)                                                              \
	static inline void name_##_one(struct bench_ctx *ctx_);                              \
	static void name_##_timed_loop(struct bench_ctx *ctx, struct bench_sample *s)         \
	{                                                                                    \
		bench_time_ops(ctx, s, name_##_one);                                         \
	}                                                                                    \
	static const struct bench_op name_ = { .timed_loop = name_##_timed_loop };           \
	static inline void name_##_one(struct bench_ctx *ctx_)

/* Check every declaration (.reads names declared options, one body, ...); prints a
 * BAREMM-ERROR line per problem and returns their number. */
unsigned bench_check_declarations(void);

/* Run the benchmarks matching @glob ("default" = the default suite). */
int bench_run_selected(const char *glob);

#endif
