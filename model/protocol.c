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
#include "kernel/math.h"		/* the guest harness's integer statistics */
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

struct variant_acc {
	unsigned nruns;
	u64 runs[MAX_RUNS];
	u64 ev[NR_MEV];
	u64 ops;
	int64_t part[MAX_RUNS][NR_PART];	/* x10000: each run's parts, per op */
};

static u64 ghz_x100;
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
	ghz_x100 = p->ghz_x100;
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

static void stats_and_print(const char *key, unsigned vidx)
{
	struct variant_acc *va = &variants[vidx];
	unsigned n = va->nruns;
	u64 tmp[MAX_RUNS];
	memcpy(tmp, va->runs, n * sizeof(u64));
	u64 med = median_u64(tmp, n);	/* sorts tmp */
	u64 mn = tmp[0], mx = tmp[n - 1];
	u64 sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += va->runs[i];
	u64 mean = sum / n;
	/* sample stddev in integers, as the guest's harness computes it */
	u64 scale = 1;
	while (mx / scale > (1ull << 31))
		scale *= 2;
	u64 m = mean / scale, acc = 0;
	for (unsigned i = 0; i < n; i++) {
		u64 x = va->runs[i] / scale, d = x > m ? x - m : m - x;
		acc += d * d;
	}
	u64 sd = 0;
	if (n > 1)
		sd = isqrt64(acc / (n - 1)) * scale;
	u64 psd = mean ? sd * 10000 / mean : 0;
	u64 ns = med * 100 / ghz_x100;
	char b[7][32];
	fx(b[0], 32, med), fx(b[1], 32, mean), fx(b[2], 32, sd), fx(b[3], 32, psd);
	fx(b[4], 32, mn), fx(b[5], 32, mx), fx(b[6], 32, ns);
	char line[4096];
	int len = snprintf(line, sizeof(line),
			   "BAREMM-RESULT %s unit=model_cycles runs=%u median=%s mean=%s stddev=%s pstddev=%s "
			   "min=%s max=%s median_ns=%s ops=%llu",
			   key, n, b[0], b[1], b[2], b[3], b[4], b[5], b[6], (unsigned long long)(va->ops / n));
	u64 ops = va->ops ? va->ops : 1;
	for (int e = 0; e < NR_MEV && len < (int)sizeof(line) - 64; e++) {
		u64 x = va->ev[e] * 10000 / ops;
		len += snprintf(line + len, sizeof(line) - (size_t)len, " ev.model_%s=%llu.%04llu", ev_names[e],
				(unsigned long long)(x / 10000), (unsigned long long)(x % 10000));
	}
	/* the parts of the median run (of the two middle runs' mean when n is even), so that
	 * they add up to the median */
	unsigned idx[MAX_RUNS];
	for (unsigned i = 0; i < n; i++) {
		unsigned j = i;
		for (; j > 0 && va->runs[idx[j - 1]] > va->runs[i]; j--)
			idx[j] = idx[j - 1];
		idx[j] = i;
	}
	for (int k = 0; k < (int)nr_part_shown && len < (int)sizeof(line) - 64; k++) {
		int64_t x = n & 1 ? va->part[idx[n / 2]][k]
				  : (va->part[idx[n / 2 - 1]][k] + va->part[idx[n / 2]][k]) / 2;
		u64 a = (u64)(x < 0 ? -x : x);
		len += snprintf(line + len, sizeof(line) - (size_t)len, " part.%s=%s%llu.%04llu", part_names[k],
				x < 0 ? "-" : "", (unsigned long long)(a / 10000), (unsigned long long)(a % 10000));
	}
	out_line("%s", line);
	len = snprintf(line, sizeof(line), "BAREMM-SAMPLES %s values=", key);
	for (unsigned r = 0; r < n && len < (int)sizeof(line) - 32; r++) {
		len += snprintf(line + len, sizeof(line) - (size_t)len, "%s", r ? "," : "");
		len += fx(line + len, sizeof(line) - (size_t)len, va->runs[r]);
	}
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
				va->runs[va->nruns++] = round_sum / round_n;
			}
			va->ops += round_ops;
			for (int e = 0; e < NR_MEV; e++)
				va->ev[e] += round_ev[e];
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
		stats_and_print(key, (unsigned)a2);
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
	for (int e = 0; e < NR_MEV && len < (int)sizeof(line) - 48; e++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " ev.model_%s=%llu", ev_names[e],
				(unsigned long long)ev[e]);
	out_line("%s", line);
}
