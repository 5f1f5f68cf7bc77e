/*
 * The benchmark harness: selection, CPU checks, warm-up, interleaved variants, parallel
 * start, statistics, event deltas, output (contract in bench/bench.h, format in
 * docs/OUTPUT.md).
 */
#include "bench/bench.h"
#include "bench/stats.h"
#include "kernel/boot.h"
#include "kernel/options.h"
#include "kernel/printk.h"
#include "kernel/string.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/events.h"
#include "kernel/exit.h"
#include "kernel/ktest.h"
#include "kernel/panic.h"
#include "kernel/spinlock.h"
#include "arch/x86_64/tsc.h"
#include "arch/x86_64/pmu.h"
#include "arch/x86_64/costmodel.h"

DEFINE_OPTION_STRING(opt_bench, "bench", NULL,
		     "run the benchmarks matching this glob ('list' lists them, 'default' = make run's suite)");
DEFINE_OPTION_UINT(opt_runs, "runs", 0, 0, 1000, "measured runs per figure (0 = the benchmark's default)");
DEFINE_OPTION_UINT(opt_warmup, "warmup", 1000, 0, 1000,
		   "unmeasured runs first (1000 = the benchmark's default)");
DEFINE_OPTION_UINT(opt_iters, "iters", 0, 0, 1ULL << 32, "operations per run (0 = the benchmark's default)");
DEFINE_OPTION_STRING(opt_bench_cpus, "bench_cpus", NULL,
		     "CPUs taking part in multi-CPU benchmarks (0 or none = the benchmark's "
		     "default); a list (2,4,8) or range (2-16) runs each benchmark once per count");
DEFINE_OPTION_STRING(opt_cases, "cases", NULL,
		     "run only the cases whose parameter is in this list (e.g. 1,0 for "
		     "tlb.shootdown's 1-page and full flush); none = every case");
DEFINE_OPTION_STRING(opt_ab, "ab", NULL,
		     "compare values of a variant option in one boot, interleaved: ab=<option>:<v1>,<v2>[,...]");

#define MAX_RUNS MODEL_MAX_RUNS	/* the plugin sizes its tables by it */
#define MAX_COUNTS 64	/* bench_cpus= values and cases= values */
static bool bench_skipped;	/* run_bench: nothing measured, the reason printed */
#define MAX_VARIANTS MODEL_MAX_VARIANTS
#define MAX_SUMMARY 256

struct variant_set {
	struct option_desc *opt;	/* NULL: no ab= */
	unsigned n;
	char values[MAX_VARIANTS][32];
	char original[32];
};

static u64 samples[MAX_VARIANTS][MAX_RUNS];
static u64 tput[MAX_VARIANTS][MAX_RUNS];
static u64 ev_delta[MAX_VARIANTS][NR_EVENTS];
static u64 ops_total[MAX_VARIANTS];
static u64 sort_tmp[MAX_RUNS];
static struct bench_sample cpu_samples[NR_CPUS];
static u64 percpu_sum[MAX_VARIANTS][NR_CPUS];	/* per-op cost x100 summed over runs */
static struct pmu_snapshot pmu_delta[NR_CPUS];	/* this round, per CPU */
static u64 pmu_total[MAX_VARIANTS][2];		/* instructions, cycles over the runs */

struct summary {
	const char *bench;
	char kase[40];
	char variant[48];
	unsigned cpus;
	struct stats st;
	u64 ns;
	const char *unit;
};
static struct summary summary[MAX_SUMMARY];
static unsigned nsummary;

static void print_fx(char *buf, size_t len, u64 x100)
{
	snprintf(buf, len, "%lu.%02lu", (unsigned long)(x100 / 100), (unsigned long)(x100 % 100));
}

/* ---- a declaration's fields with the defaults filled in (bench/bench.h) ---- */

static unsigned bench_min_cpus(const struct bench *b) { return b->min_cpus ? b->min_cpus : 1; }
/* 0: every online CPU */
static unsigned bench_def_cpus(const struct bench *b)
{
	return b->def_cpus == BENCH_ALL_CPUS ? 0 : b->def_cpus ? b->def_cpus : 1;
}
static const char *bench_metric(const struct bench *b) { return b->metric ? b->metric : "op"; }
static const char *bench_unit(const struct bench *b) { return b->unit ? b->unit : "cycles"; }
static bench_body_fn *bench_body(const struct bench *b) { return b->op ? b->op->timed_loop : b->run; }

/* ---- declaration checks ---- */

/* Problems of one declaration, each printed as a BAREMM-ERROR line when @report. */
static unsigned bench_check_one(const struct bench *b, bool report)
{
	unsigned bad = 0;
	const char *name = b->name ? b->name : "(unnamed)";
	if (!b->name || !b->desc) {
		if (report)
			printk("BAREMM-ERROR bench %s: declaration without .name or .desc\n", name);
		bad++;
	}
	if (!b->op == !b->run) {
		if (report)
			printk("BAREMM-ERROR bench %s: declares %s; give one body, .op (BENCH_OP) or .run\n",
			       name, b->op ? "both .op and .run" : "neither .op nor .run");
		bad++;
	}
	if (!b->nparams != !b->params) {
		if (report)
			printk("BAREMM-ERROR bench %s: .params and .nparams disagree (use BENCH_PARAMS)\n", name);
		bad++;
	}
	for (const char *p = b->reads ? b->reads : ""; *p;) {
		const char *e = p;
		while (*e && *e != ',')
			e++;
		if (!option_find(p, (size_t)(e - p))) {
			if (report)
				printk("BAREMM-ERROR bench %s: .reads names '%.*s', which is no declared "
				       "option (boot with 'help' for the list)\n", name, (int)(e - p), p);
			bad++;
		}
		p = *e ? e + 1 : e;
	}
	return bad;
}

unsigned bench_check_declarations(void)
{
	unsigned bad = 0;
	for (struct bench *b = __start_baremm_benches; b < __stop_baremm_benches; b++)
		bad += bench_check_one(b, true);
	return bad;
}

static void unused_body(struct bench_ctx *ctx, struct bench_sample *s)
{
	(void)ctx;
	(void)s;
}

KTEST(bench, declarations)
{
	KT_EXPECT_EQ(bench_check_declarations(), 0);
	/* the check itself finds what it is for */
	static const struct bench_op op = { NULL };
	struct bench good = { .name = "t.good", .desc = "d", .reads = "runs,bench_cpus", .op = &op };
	KT_EXPECT_EQ(bench_check_one(&good, false), 0);
	struct bench typo = good;
	typo.reads = "runs,bench_cpu,nosuch";
	KT_EXPECT_EQ(bench_check_one(&typo, false), 2);
	struct bench empty_name = good;
	empty_name.reads = "runs,,warmup";
	KT_EXPECT_EQ(bench_check_one(&empty_name, false), 1);
	struct bench two_bodies = good;
	two_bodies.run = unused_body;
	KT_EXPECT_EQ(bench_check_one(&two_bodies, false), 1);
	struct bench no_body = good;
	no_body.op = NULL;
	KT_EXPECT_EQ(bench_check_one(&no_body, false), 1);
	struct bench counts = good;
	counts.nparams = 3;
	KT_EXPECT_EQ(bench_check_one(&counts, false), 1);
}

/* ---- events of the timed regions ---- */

static DEFINE_SPINLOCK(region_lock);
static unsigned region_depth;		/* CPUs between bench_start and bench_stop */
static unsigned region_count;		/* regions closed this round */
static u64 region_before[NR_EVENTS], region_after[NR_EVENTS], region_acc[NR_EVENTS];

/* The snapshots happen outside the TSC reads, and the lock makes a CPU entering a
 * region wait for the first one's snapshot, so no timed work is missed. */
/* Every online CPU's row, row by row: cheaper than events_snapshot()'s walk over all
 * NR_CPUS rows per event, which matters for bodies that time many short regions. */
static void region_snapshot(u64 *out)
{
	memset(out, 0, sizeof(u64) * NR_EVENTS);
	for (unsigned c = 0; c < nr_cpu_ids && c < NR_CPUS; c++)
		for (int e = 0; e < NR_EVENTS; e++)
			out[e] += READ_ONCE(event_counts[c].v[e]);
}

void bench_region_enter(void)
{
	spin_lock(&region_lock);
	if (region_depth++ == 0)
		region_snapshot(region_before);
	spin_unlock(&region_lock);
}

void bench_region_exit(void)
{
	spin_lock(&region_lock);
	if (region_depth && --region_depth == 0) {
		region_snapshot(region_after);
		for (int e = 0; e < NR_EVENTS; e++)
			region_acc[e] += region_after[e] - region_before[e];
		region_count++;
	}
	spin_unlock(&region_lock);
}

static void region_reset(void)
{
	region_depth = region_count = 0;
	memset(region_acc, 0, sizeof(region_acc));
}

/* ---- parallel rounds ---- */

struct par_round {
	struct bench_ctx *ctx;
	struct smp_barrier start, end;
	u64 ev_before[NR_EVENTS], ev_after[NR_EVENTS];
};

static void par_body(void *arg)
{
	struct par_round *pr = arg;
	unsigned me = smp_processor_id();
	smp_barrier_wait(&pr->start);
	if (me == 0)
		events_snapshot(pr->ev_before);
	smp_barrier_wait(&pr->start);
	set_doing(pr->ctx->b->name);
	cpu_samples[me].cycles = cpu_samples[me].ops = 0;
	struct pmu_snapshot p0, p1;
	pmu_read(&p0);
	bench_body(pr->ctx->b)(pr->ctx, &cpu_samples[me]);
	pmu_read(&p1);
	pmu_delta[me].instructions = p1.instructions - p0.instructions;
	pmu_delta[me].cycles = p1.cycles - p0.cycles;
	model_sample(cpu_samples[me].ops);
	smp_barrier_wait(&pr->end);
	if (me == 0)
		events_snapshot(pr->ev_after);
}

/* One round: returns per-op cycles x100 (mean over CPUs), ops/s per CPU, event deltas. */
static void run_round(struct bench_ctx *ctx, u64 *per_op, u64 *ops_per_s, u64 *ev, u64 *ops)
{
	static struct par_round pr;
	const struct bench *b = ctx->b;
	unsigned n = b->parallel ? ctx->ncpus : 1;
	region_reset();
	if (b->parallel) {
		cpumask_t mask;
		cpumask_first_n(&mask, n);
		pr.ctx = ctx;
		smp_barrier_init(&pr.start, n);
		smp_barrier_init(&pr.end, n);
		smp_run_parallel(&mask, par_body, &pr);
	} else {
		events_snapshot(pr.ev_before);
		cpu_samples[0].cycles = cpu_samples[0].ops = 0;
		set_doing(b->name);
		struct pmu_snapshot p0, p1;
		pmu_read(&p0);
		bench_body(b)(ctx, &cpu_samples[0]);
		pmu_read(&p1);
		pmu_delta[0].instructions = p1.instructions - p0.instructions;
		pmu_delta[0].cycles = p1.cycles - p0.cycles;
		model_sample(cpu_samples[0].ops);
		events_snapshot(pr.ev_after);
	}
	u64 sum = 0, tsum = 0, osum = 0;
	for (unsigned c = 0; c < n; c++) {
		struct bench_sample *s = &cpu_samples[c];
		u64 o = s->ops ? s->ops : 1;
		sum += s->cycles * 100 / o;
		tsum += s->cycles ? s->ops * tsc_khz * 1000 / s->cycles : 0;
		osum += s->ops;
	}
	*per_op = sum / n;
	*ops_per_s = tsum / n;
	*ops = osum;
	/* the timed regions' events; a body that times nothing reports the whole round's */
	for (int e = 0; e < NR_EVENTS; e++)
		ev[e] = region_count ? region_acc[e] : pr.ev_after[e] - pr.ev_before[e];
}

/* ---- bench_cpus= and cases= lists ---- */

static unsigned ncounts, ncase_sel;
static u64 counts[MAX_COUNTS];	/* bench_cpus= values in order; none: the default */
static u64 case_sel[MAX_COUNTS];	/* cases= values */

/* "N", "A,B,C", "A-B" (inclusive, ascending) or a mix, each value in lo..hi. Returns
 * the number of values (0 for a lone "0" when zero_is_default), or -1 after a
 * BAREMM-ERROR line naming the option. */
static int parse_list(const char *name, const char *s, u64 lo, u64 hi, bool zero_is_default,
		      u64 *out)
{
	unsigned n = 0;
	if (zero_is_default && !strcmp(s, "0"))
		return 0;
	for (const char *p = s;;) {
		u64 a = 0, b;
		const char *q = p;
		while (*q >= '0' && *q <= '9' && a <= hi)
			a = a * 10 + (u64)(*q++ - '0');
		b = a;
		bool ok = q != p;
		if (ok && *q == '-') {
			const char *r = ++q;
			b = 0;
			while (*q >= '0' && *q <= '9' && b <= hi)
				b = b * 10 + (u64)(*q++ - '0');
			ok = q != r && b >= a;
		}
		if (!ok || (*q && *q != ',') || a < lo || b > hi) {
			printk("BAREMM-ERROR option: %s: expected numbers %lu..%lu, ranges A-B (A <= B) "
			       "and commas, as in %s=2,4 or %s=2-16 (got '%s')\n", name, (unsigned long)lo,
			       (unsigned long)hi, name, name, s);
			return -1;
		}
		for (u64 x = a; x <= b; x++) {
			if (n == MAX_COUNTS) {
				printk("BAREMM-ERROR option: %s: at most %d values (got more in '%s')\n",
				       name, MAX_COUNTS, s);
				return -1;
			}
			out[n++] = x;
		}
		if (!*q)
			return (int)n;
		p = q + 1;
	}
}

static int parse_lists(void)
{
	int n = opt_bench_cpus ? parse_list("bench_cpus", opt_bench_cpus, 1, NR_CPUS, true, counts) : 0;
	if (n < 0)
		return -1;
	ncounts = (unsigned)n;
	n = opt_cases ? parse_list("cases", opt_cases, 0, ~0ull >> 8, false, case_sel) : 0;
	if (n < 0)
		return -1;
	ncase_sel = (unsigned)n;
	return 0;
}

static bool case_selected(u64 param)
{
	if (!ncase_sel)
		return true;
	for (unsigned i = 0; i < ncase_sel; i++)
		if (case_sel[i] == param)
			return true;
	return false;
}

/* ---- variants ---- */

static int parse_ab(struct variant_set *vs)
{
	memset(vs, 0, sizeof(*vs));
	if (!opt_ab)
		return 0;
	const char *colon = opt_ab;
	while (*colon && *colon != ':')
		colon++;
	if (!*colon || colon == opt_ab) {
		printk("BAREMM-ERROR option: ab: expected ab=<option>:<v1>,<v2> (got '%s')\n", opt_ab);
		return -1;
	}
	vs->opt = option_find(opt_ab, (size_t)(colon - opt_ab));
	if (!vs->opt) {
		printk("BAREMM-ERROR option: ab: unknown option '%.*s'\n", (int)(colon - opt_ab), opt_ab);
		return -1;
	}
	if (!vs->opt->variant) {
		printk("BAREMM-ERROR option: ab: option %s cannot switch at run time (not a variant); "
		       "compare it with one boot per value (tools/baremm run --variants)\n", vs->opt->name);
		return -1;
	}
	option_format_value(vs->opt, vs->original, sizeof(vs->original));
	const char *p = colon + 1;
	while (*p) {
		const char *e = p;
		while (*e && *e != ',')
			e++;
		if (e == p) {
			printk("BAREMM-ERROR option: ab: empty value at column %u of '%s' (give "
			       "<option>:<v1>,<v2>)\n", (unsigned)(p - opt_ab) + 1, opt_ab);
			return -1;
		}
		if (vs->n == MAX_VARIANTS) {
			printk("BAREMM-ERROR option: ab: at most %d values (got more in '%s')\n",
			       MAX_VARIANTS, opt_ab);
			return -1;
		}
		if ((size_t)(e - p) >= sizeof(vs->values[0])) {
			printk("BAREMM-ERROR option: ab: value '%.*s' is longer than %u characters\n",
			       (int)(e - p), p, (unsigned)sizeof(vs->values[0]) - 1);
			return -1;
		}
		char err[OPT_ERRLEN];
		bool was_set = vs->opt->set;
		if (option_set(vs->opt, p, (size_t)(e - p), err, sizeof(err))) {
			printk("BAREMM-ERROR option: ab: %s\n", err);
			return -1;
		}
		vs->opt->set = was_set;
		memcpy(vs->values[vs->n], p, (size_t)(e - p));
		vs->values[vs->n][e - p] = 0;
		vs->n++;
		p = *e ? e + 1 : e;
	}
	if (vs->n < 2) {
		printk("BAREMM-ERROR option: ab: give at least two values\n");
		return -1;
	}
	return 0;
}

static void set_variant(struct variant_set *vs, const char *val)
{
	char err[OPT_ERRLEN];
	bool was_set = vs->opt->set;
	if (option_set(vs->opt, val, strlen(val), err, sizeof(err)))
		panic("ab: %s", err);
	vs->opt->set = was_set;
}

/* Early in boot, for every command line: a malformed ab=, bench_cpus= or cases= is a bad
 * option even when no benchmark would read it (tests=, bench=list). Leaves ab='s option
 * at its boot value. */
int bench_check_options(void)
{
	struct variant_set vs;
	if (parse_lists() || parse_ab(&vs))
		return -1;
	if (vs.opt)
		set_variant(&vs, vs.original);
	return 0;
}

/* ---- output ---- */

/* One token naming the figure uniquely in a boot, for line-matching CI (LAVA): bench,
 * metric, case, variant, cpus in [A-Za-z0-9._-] (':' -> '-', ',' -> '.'). */
static void figure_id(char *buf, size_t len, const struct bench *b, const struct bench_ctx *ctx,
		      const char *variant)
{
	char kase[48] = "";
	if (b->nparams)
		snprintf(kase, sizeof(kase), ".%s-%lu", b->param_name ? b->param_name : "param",
			 (unsigned long)ctx->param);
	snprintf(buf, len, "%s.%s%s.%s.cpus%u", b->name, bench_metric(b), kase, variant,
		 ctx->ncpus);
	for (char *p = buf; *p; p++) {
		char c = *p;
		if (c == ':')
			*p = '-';
		else if (c == ',')
			*p = '.';
		else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   c == '.' || c == '_' || c == '-'))
			*p = '_';
	}
}

static void print_figure(const struct bench *b, struct bench_ctx *ctx, const char *variant,
			 unsigned v, unsigned runs)
{
	struct stats st;
	stats_compute(samples[v], runs, sort_tmp, &st);
	char med[24], mean[24], sd[24], psd[24], mn[24], mx[24], ns[24];
	print_fx(med, sizeof(med), st.median);
	print_fx(mean, sizeof(mean), st.mean);
	print_fx(sd, sizeof(sd), st.stddev);
	print_fx(psd, sizeof(psd), st.pstddev);
	print_fx(mn, sizeof(mn), st.min);
	print_fx(mx, sizeof(mx), st.max);
	u64 ns100 = cycles_to_ns(st.median);	/* x100 in, x100 out */
	print_fx(ns, sizeof(ns), ns100);
	char kase[40] = "";
	if (b->nparams)
		snprintf(kase, sizeof(kase), " case=%s:%lu", b->param_name ? b->param_name : "param",
			 (unsigned long)ctx->param);
	/* one figure at a time, on the boot CPU; room for MAX_RUNS samples of 20 digits */
	static char line[MAX_RUNS * 24 + 512];
	char id[192];
	figure_id(id, sizeof(id), b, ctx, variant);
	/* The cost model prints its own figure first, under the same key and its own id. */
	char key[384];
	int klen = snprintf(key, sizeof(key), "id=%s.model bench=%s variant=%s cpus=%u%s metric=%s",
			    id, b->name, variant, ctx->ncpus, kase, bench_metric(b));
	model_figure(key, (size_t)MIN(klen, (int)sizeof(key) - 1), v);
	int n = snprintf(line, sizeof(line),
			 "BAREMM-RESULT id=%s bench=%s variant=%s cpus=%u%s metric=%s unit=%s runs=%u median=%s "
			 "mean=%s stddev=%s pstddev=%s min=%s max=%s median_ns=%s ops=%lu",
			 id, b->name, variant, ctx->ncpus, kase, bench_metric(b),
			 bench_unit(b), runs, med, mean, sd, psd, mn, mx, ns,
			 (unsigned long)(ops_total[v] / runs));
	if (b->throughput) {
		struct stats ts;
		stats_compute(tput[v], runs, sort_tmp, &ts);
		n += snprintf(line + n, sizeof(line) - (size_t)n, " ops_per_s=%lu", (unsigned long)(ts.median / 100));
	}
	if (pmu_usable) {
		/* the body's whole run, setup inside it included: instructions and core cycles */
		u64 o = ops_total[v] ? ops_total[v] : 1;
		n += snprintf(line + n, sizeof(line) - (size_t)n, " pmu.instructions=%lu pmu.cycles=%lu",
			      (unsigned long)(pmu_total[v][0] / o), (unsigned long)(pmu_total[v][1] / o));
	}
	for (int e = 0; e < NR_EVENTS && n < (int)sizeof(line) - 64; e++) {
		if (!ev_delta[v][e])
			continue;
		/* per op with 4 decimals, so an event once per thousands of ops stays visible */
		u64 x = ev_delta[v][e] * 10000 / (ops_total[v] ? ops_total[v] : 1);
		n += snprintf(line + n, sizeof(line) - (size_t)n, " ev.%s=%lu.%04lu", event_names[e],
			      (unsigned long)(x / 10000), (unsigned long)(x % 10000));
	}
	printk("%s\n", line);
	/* raw per-run values for significance tests on the host */
	n = snprintf(line, sizeof(line), "BAREMM-SAMPLES bench=%s variant=%s cpus=%u%s metric=%s values=",
		     b->name, variant, ctx->ncpus, kase, bench_metric(b));
	unsigned r = 0;
	for (; r < runs && n < (int)sizeof(line) - 32; r++) {
		char val[24];
		print_fx(val, sizeof(val), samples[v][r]);
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s", r ? "," : "", val);
	}
	printk("%s\n", line);
	if (r < runs)	/* cannot happen with the buffer above; never silently */
		printk("BAREMM-ERROR bench %s: BAREMM-SAMPLES holds %u of %u values\n", b->name, r, runs);
	if (b->parallel) {
		/* each CPU's own figure: mean over the runs of its cost per op */
		n = snprintf(line, sizeof(line), "BAREMM-INFO bench=%s variant=%s%s percpu_mean=", b->name,
			     variant, kase);
		for (unsigned c = 0; c < ctx->ncpus && n < (int)sizeof(line) - 32; c++) {
			char val[24];
			print_fx(val, sizeof(val), percpu_sum[v][c] / runs);
			n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s", c ? "," : "", val);
		}
		printk("%s\n", line);
	}
	bench_results_printed++;
	if (nsummary < MAX_SUMMARY) {
		struct summary *s = &summary[nsummary++];
		s->bench = b->name;
		snprintf(s->kase, sizeof(s->kase), "%s", kase[0] ? kase + 6 : "-");
		snprintf(s->variant, sizeof(s->variant), "%s", variant);
		s->cpus = ctx->ncpus;
		s->st = st;
		s->ns = ns100;
		s->unit = bench_unit(b);
	}
}

static void print_summary(void)
{
	printk("\n%-28s %-16s %-28s %4s %14s %8s %12s\n", "benchmark", "case", "variant", "cpus",
	       "median", "%stddev", "median ns");
	for (unsigned i = 0; i < nsummary; i++) {
		struct summary *s = &summary[i];
		char med[24], psd[24], ns[24];
		print_fx(med, sizeof(med), s->st.median);
		print_fx(psd, sizeof(psd), s->st.pstddev);
		print_fx(ns, sizeof(ns), s->ns);
		printk("%-28s %-16s %-28s %4u %14s %7s%% %12s\n", s->bench, s->kase, s->variant, s->cpus,
		       med, psd, ns);
	}
}

/* ---- one benchmark ---- */

/* cpus: this run's bench_cpus= value, 0 = none given */
static enum exit_status run_bench(const struct bench *b, struct variant_set *vs, unsigned cpus)
{
	static struct bench_ctx ctx;
	unsigned def = bench_def_cpus(b), min = bench_min_cpus(b);
	unsigned want = cpus ? cpus : def ? def : nr_cpu_ids;
	if (!b->parallel && !cpus)
		want = def ? MIN(def, nr_cpu_ids) : nr_cpu_ids;
	if (!b->parallel && def == 1)
		want = 1;	/* a one-CPU body: bench_cpus= would only mislabel the figure */
	if (cpus && want < min) {
		printk("BAREMM-ERROR bench %s: bench_cpus=%u is below its minimum of %u CPUs\n", b->name,
		       want, min);
		return EXIT_BENCH_ERROR;
	}
	if (want > nr_cpu_ids || nr_cpu_ids < min || want < min) {
		printk("BAREMM-ERROR bench %s: needs %u CPUs (at least %u), %u online; boot with more "
		       "CPUs (-smp) or set bench_cpus=\n", b->name, MAX(want, min), min, nr_cpu_ids);
		return EXIT_BENCH_ERROR;
	}
	for (unsigned v = 0; vs->opt && v < vs->n; v++) {
		const char *why = option_value_unusable(vs->opt, vs->values[v], strlen(vs->values[v]),
							 want);
		if (why) {
			/* a variant this run cannot exercise would print identical figures */
			printk("BAREMM-INFO bench=%s skipped=\"ab=%s:%s with %u CPUs: %s\"\n", b->name,
			       vs->opt->name, vs->values[v], want, why);
			bench_skipped = true;
			return EXIT_PASS;
		}
	}
	unsigned runs = opt_runs ? (unsigned)opt_runs : b->runs ? b->runs : BENCH_DEFAULT_RUNS;
	unsigned warm = opt_warmup != 1000 ? (unsigned)opt_warmup
			: b->warmup ? b->warmup : BENCH_DEFAULT_WARMUP;
	unsigned nvar = vs->opt ? vs->n : 1;
	unsigned ncases = b->nparams ? b->nparams : 1, nsel = 0;
	for (unsigned c = 0; c < ncases; c++)
		nsel += case_selected(b->nparams ? b->params[c] : 0);
	if (!nsel) {
		printk("BAREMM-INFO bench=%s skipped=\"cases=%s selects none of its cases\"\n",
		       b->name, opt_cases);
		bench_skipped = true;
		return EXIT_PASS;
	}
	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	printk("BAREMM-INFO bench=%s desc=\"%s\" reads=\"%s\" runs=%u warmup=%u cases=%u variants=%u\n",
	       b->name, b->desc, b->reads ? b->reads : "", runs, warm, nsel, nvar);
	for (unsigned c = 0; c < ncases; c++) {
		if (!case_selected(b->nparams ? b->params[c] : 0))
			continue;
		memset(&ctx, 0, sizeof(ctx));
		ctx.b = b;
		ctx.ncpus = want;
		ctx.case_idx = c;
		ctx.param = b->nparams ? b->params[c] : 0;
		ctx.iters = opt_iters ? opt_iters : b->iters ? b->iters : BENCH_DEFAULT_ITERS;
		if (b->setup && b->setup(&ctx)) {
			printk("BAREMM-INFO bench=%s case=%lu skipped=setup_failed\n", b->name,
			       (unsigned long)ctx.param);
			continue;
		}
		memset(ev_delta, 0, sizeof(ev_delta));
		memset(ops_total, 0, sizeof(ops_total));
		memset(percpu_sum, 0, sizeof(percpu_sum));
		memset(pmu_total, 0, sizeof(pmu_total));
		for (unsigned r = 0; r < warm + runs; r++) {
			for (unsigned v = 0; v < nvar; v++) {
				if (vs->opt)
					set_variant(vs, vs->values[v]);
				ctx.warmup = r < warm;
				u64 per_op, ops_s, ops, ev[NR_EVENTS];
				run_round(&ctx, &per_op, &ops_s, ev, &ops);
				model_round(v, ctx.warmup);
				if (ctx.warmup)
					continue;
				samples[v][r - warm] = per_op;
				for (unsigned c = 0; b->parallel && c < ctx.ncpus; c++)
					percpu_sum[v][c] += cpu_samples[c].cycles * 100 /
							    (cpu_samples[c].ops ? cpu_samples[c].ops : 1);
				tput[v][r - warm] = ops_s * 100;
				ops_total[v] += ops;
				for (unsigned c = 0; c < (b->parallel ? ctx.ncpus : 1); c++) {
					pmu_total[v][0] += pmu_delta[c].instructions;
					pmu_total[v][1] += pmu_delta[c].cycles;
				}
				for (int e = 0; e < NR_EVENTS; e++)
					ev_delta[v][e] += ev[e];
			}
		}
		if (b->teardown)
			b->teardown(&ctx);
		for (unsigned v = 0; v < nvar; v++) {
			char variant[48];
			if (vs->opt)
				snprintf(variant, sizeof(variant), "%s:%s", vs->opt->name, vs->values[v]);
			else
				snprintf(variant, sizeof(variant), "default");
			print_figure(b, &ctx, variant, v, runs);
		}
	}
	if (vs->opt)
		set_variant(vs, vs->original);
	return EXIT_PASS;
}

static bool has_wildcard(const char *g)
{
	for (; *g; g++)
		if (*g == '*' || *g == '?')
			return true;
	return false;
}

static void bench_list(void)
{
	for (struct bench *b = __start_baremm_benches; b < __stop_baremm_benches; b++)
		printk("bench %-28s cpus>=%u%s%s reads=%s : %s\n", b->name, bench_min_cpus(b),
		       b->parallel ? " parallel" : "", b->suite == BENCH_DEFAULT ? " default" : "",
		       b->reads ? b->reads : "-", b->desc);
}

int bench_run_selected(const char *glob)
{
	if (bench_check_declarations())
		return EXIT_BENCH_ERROR;
	if (!strcmp(glob, "list")) {
		bench_list();
		return EXIT_PASS;
	}
	struct variant_set vs;
	if (parse_lists() || parse_ab(&vs))
		return EXIT_BAD_OPTION;
	bool deflt = !strcmp(glob, "default");
	bool group = has_wildcard(glob) || deflt;
	unsigned matched = 0;
	enum exit_status st = EXIT_PASS;
	nsummary = 0;
	for (struct bench *b = __start_baremm_benches; b < __stop_baremm_benches; b++) {
		bool sel = deflt ? b->suite == BENCH_DEFAULT : glob_match(glob, b->name);
		if (!sel)
			continue;
		matched++;
		/* one run per bench_cpus= value, in the order given (a sweep in one boot) */
		for (unsigned i = 0; i < (ncounts ? ncounts : 1); i++) {
			unsigned cpus = ncounts ? (unsigned)counts[i] : 0;
			if (group) {
				/* a group selection skips what this machine cannot run, and says so */
				unsigned want = cpus ? cpus : bench_def_cpus(b);
				if (nr_cpu_ids < bench_min_cpus(b) || want > nr_cpu_ids) {
					printk("BAREMM-INFO bench=%s skipped=\"needs %u CPUs, %u online\"\n",
					       b->name, MAX(bench_min_cpus(b), want), nr_cpu_ids);
					continue;
				}
			}
			bench_skipped = false;
			enum exit_status s = run_bench(b, &vs, cpus);
			if (bench_skipped) {
				if (group)
					continue;
				printk("BAREMM-ERROR bench %s: %s cannot be exercised here (see the "
				       "skipped line above)\n", b->name,
				       ncase_sel && opt_cases ? "the cases= selection or the ab= variant" :
				       "the ab= variant");
				s = EXIT_BENCH_ERROR;
			}
			if (s != EXIT_PASS)
				st = s;
			if (s == EXIT_BENCH_ERROR && !group)
				break;
		}
		if (st == EXIT_BENCH_ERROR && !group)
			break;
	}
	if (!matched) {
		printk("BAREMM-ERROR option: bench: no benchmark matches '%s' (bench=list lists them)\n", glob);
		return EXIT_BAD_OPTION;
	}
	print_summary();
	return st;
}

enum exit_status boot_default_run(void)
{
	if (opt_bench)
		return bench_run_selected(opt_bench);
	return bench_run_selected("default");
}
