/*
 * The guest protocol (protocol.h): marker commands, timed regions, the runs of each
 * variant, and the result lines in model cycles.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "arch/x86_64/costmodel.h"	/* the marker commands and the harness's limits */
#include "model/protocol.h"

#define MAX_RUNS MODEL_MAX_RUNS
#define MAX_VARIANTS MODEL_MAX_VARIANTS

/* One CPU's timed regions: the one open and the sum of the closed ones since its last
 * sample. */
struct region {
	bool in_region;
	u64 r_clock, r_ev[NR_MEV];
	u64 acc_clock, acc_ev[NR_MEV];
	int64_t r_part[NR_PART], acc_part[NR_PART];	/* x100 */
};

/* The runs of one variant: each run's cost per op and parts (x100, x10000), its ops; the
 * events and ops summed over the runs. */
struct variant_acc {
	unsigned nruns;
	bool overflow;			/* a run beyond MAX_RUNS came (reported once) */
	u64 runs[MAX_RUNS];
	u64 run_ops[MAX_RUNS];
	u64 ev[NR_MEV];
	u64 ops;
	int64_t part[MAX_RUNS][NR_PART];
};

static int out_fd = 1;
static struct region *regions;
static char hello_line[2560];
static bool hello_done;
/* the round being collected and the runs per variant */
static u64 round_sum, round_n, round_ev[NR_MEV], round_ops;
static int64_t round_part[NR_PART];	/* x10000 */
static struct variant_acc variants[MAX_VARIANTS];

int proto_init(unsigned n, const struct profile *p, int fd, const char *hello_tail)
{
	free(regions);
	regions = calloc(n, sizeof(*regions));
	if (!regions)
		return -1;
	out_fd = fd;
	char d[2048];
	profile_describe(p, d, sizeof(d));
	snprintf(hello_line, sizeof(hello_line), "BAREMM-MODEL %s%s", d, hello_tail);
	hello_done = false;
	round_sum = round_n = round_ops = 0;
	memset(round_ev, 0, sizeof(round_ev));
	memset(round_part, 0, sizeof(round_part));
	memset(variants, 0, sizeof(variants));
	return 0;
}

/* ---- output ---- */

void out_line(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	const char *p = buf;
	while (n > 0) {	/* one write for the whole line; loop only on a short write */
		ssize_t w = write(out_fd, p, (size_t)n);
		if (w <= 0)
			return;
		p += w;
		n -= (int)w;
	}
}

static int fx(char *b, size_t l, u64 x100)
{
	return snprintf(b, l, "%llu.%02llu", (unsigned long long)(x100 / 100), (unsigned long long)(x100 % 100));
}

/* A signed x10000 value with four decimals. */
static int fx4(char *b, size_t l, int64_t x)
{
	u64 a = (u64)(x < 0 ? -x : x);
	return snprintf(b, l, "%s%llu.%04llu", x < 0 ? "-" : "", (unsigned long long)(a / 10000),
			(unsigned long long)(a % 10000));
}

/* The figure's raw runs, one line each, then its totals. The statistics (median, spread,
 * the median run's parts, events per op) are the host's (tools/baremm_lib/logparse.py):
 * the plugin prints what it measured and computes nothing across runs. */
static void print_runs(const char *key, unsigned vidx)
{
	struct variant_acc *va = &variants[vidx];
	char line[4096];
	for (unsigned r = 0; r < va->nruns; r++) {
		int len = snprintf(line, sizeof(line), "BAREMM-MODEL-RUN %s run=%u ops=%llu cycles=", key, r,
				   (unsigned long long)va->run_ops[r]);
		len += fx(line + len, sizeof(line) - (size_t)len, va->runs[r]);
		for (int k = 0; k < (int)nr_part_shown && len < (int)sizeof(line) - 64; k++) {
			len += snprintf(line + len, sizeof(line) - (size_t)len, " part.%s=", part_names[k]);
			len += fx4(line + len, sizeof(line) - (size_t)len, va->part[r][k]);
		}
		out_line("%s", line);
	}
	int len = snprintf(line, sizeof(line), "BAREMM-MODEL-FIGURE %s unit=model_cycles runs=%u ops=%llu", key,
			   va->nruns, (unsigned long long)va->ops);
	for (int e = 0; e < (int)nr_ev_shown && len < (int)sizeof(line) - 64; e++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " ev.model_%s=%llu", ev_names[e],
				(unsigned long long)va->ev[e]);
	out_line("%s", line);
}

void proto_marker(unsigned vi, struct cpu_acct *a, unsigned cmd, const struct tb_counts *tail,
		  const struct proto_guest *g)
{
	struct region *v = &regions[vi];
	u64 a0 = 0, a1 = 0, a2 = 0, ev[NR_MEV];
	switch (cmd) {
	case MODEL_REGION_BEGIN:
		v->in_region = true;
		v->r_clock = acct_clock(a, tail);
		acct_events(a, v->r_ev, tail);
		acct_parts(a, v->r_part, tail);
		return;
	case MODEL_REGION_END:
		if (!v->in_region) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=region_end_without_begin", vi);
			return;
		}
		v->in_region = false;
		v->acc_clock += acct_clock(a, tail) - v->r_clock;
		acct_events(a, ev, tail);
		for (int e = 0; e < NR_MEV; e++)
			v->acc_ev[e] += ev[e] - v->r_ev[e];
		int64_t pt[NR_PART];
		acct_parts(a, pt, tail);
		for (int k = 0; k < NR_PART; k++)
			v->acc_part[k] += pt[k] - v->r_part[k];
		return;
	case MODEL_SAMPLE: {
		if (!g->reg(7, &a0)) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=cannot_read_registers", vi);
			return;
		}
		u64 ops = a0 ? a0 : 1;
		round_sum += v->acc_clock / ops;	/* clock is x100: per-op cost x100 */
		round_n++;
		round_ops += a0;
		for (int e = 0; e < NR_MEV; e++) {
			round_ev[e] += v->acc_ev[e];
			v->acc_ev[e] = 0;
		}
		for (int k = 0; k < NR_PART; k++) {
			round_part[k] += v->acc_part[k] * 100 / (int64_t)ops;	/* per op, x10000 */
			v->acc_part[k] = 0;
		}
		v->acc_clock = 0;
		return;
	}
	case MODEL_ROUND:
		if (!g->reg(7, &a0) || !g->reg(6, &a1)) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=cannot_read_registers", vi);
			return;
		}
		if (a0 >= MAX_VARIANTS) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=bad_variant variant=%llu", vi, (unsigned long long)a0);
		} else if (!round_n) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=round_without_sample variant=%llu", vi,
				 (unsigned long long)a0);
		} else if (!a1) {
			struct variant_acc *va = &variants[a0];
			if (va->nruns < MAX_RUNS) {
				for (int k = 0; k < NR_PART; k++)
					va->part[va->nruns][k] = round_part[k] / (int64_t)round_n;
				va->run_ops[va->nruns] = round_ops;
				va->runs[va->nruns++] = round_sum / round_n;
				va->ops += round_ops;
				for (int e = 0; e < NR_MEV; e++)
					va->ev[e] += round_ev[e];
			} else if (!va->overflow) {
				/* the guest's harness caps its runs at MODEL_MAX_RUNS: a run past it is
				 * a protocol error, not a sample to drop quietly */
				va->overflow = true;
				out_line("BAREMM-MODEL-ERROR vcpu=%u reason=too_many_runs variant=%llu max=%u", vi,
					 (unsigned long long)a0, MAX_RUNS);
			}
		}
		round_sum = round_n = round_ops = 0;
		memset(round_ev, 0, sizeof(round_ev));
		memset(round_part, 0, sizeof(round_part));
		return;
	case MODEL_FIGURE: {
		if (!g->reg(7, &a0) || !g->reg(6, &a1) || !g->reg(2, &a2)) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=cannot_read_registers", vi);
			return;
		}
		char key[520];
		if (a1 == 0 || a1 > 512 || !g->mem(a0, key, (size_t)a1)) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=bad_figure_key len=%llu", vi, (unsigned long long)a1);
			return;
		}
		size_t kl = 0;
		while (kl < a1 && key[kl] && key[kl] != '\n' && key[kl] != '\r')
			kl++;
		key[kl] = 0;
		if (a2 >= MAX_VARIANTS || !variants[a2].nruns) {
			out_line("BAREMM-MODEL-ERROR %s reason=no_runs variant_index=%llu", key, (unsigned long long)a2);
			if (a2 < MAX_VARIANTS)
				memset(&variants[a2], 0, sizeof(variants[a2]));
			return;
		}
		print_runs(key, (unsigned)a2);
		memset(&variants[a2], 0, sizeof(variants[a2]));
		return;
	}
	case MODEL_HELLO:
		if (!hello_done) {
			hello_done = true;
			out_line("%s", hello_line);
		}
		return;
	default:
		out_line("BAREMM-MODEL-ERROR vcpu=%u reason=unknown_command command=%u", vi, cmd);
		return;
	}
}

void proto_total(unsigned vi, const struct cpu_acct *a)
{
	u64 ev[NR_MEV];
	acct_events(a, ev, NULL);
	char line[2048];
	int len = snprintf(line, sizeof(line), "BAREMM-MODEL-TOTAL vcpu=%u insns=%llu cycles=%llu", vi,
			   (unsigned long long)(a->insns + a->rep_execs), (unsigned long long)(acct_clock(a, NULL) / 100));
	for (int e = 0; e < (int)nr_ev_shown && len < (int)sizeof(line) - 48; e++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " ev.model_%s=%llu", ev_names[e],
				(unsigned long long)ev[e]);
	out_line("%s", line);
}
