/*
 * baremm's cycle-cost model, a QEMU TCG plugin (docs/COSTMODEL.md).
 *
 *   qemu-system-x86_64 ... -icount shift=0,sleep=off,align=off \
 *       -plugin build/model/costmodel.so,profile=model/profiles/skylake-sp.cfg[,physmap=0x..][,out=PATH]
 *
 * Per vCPU: clock = instructions x base_cpi + penalties. Instructions are counted by an
 * inline per-vCPU counter; fixed penalties (atomics, serialising instructions, IRET, ...)
 * by inline adds on the same scoreboard; every memory access goes through a callback that
 * prices the TLB lookup (with a page walk through the caches on a miss) and the cache
 * access. Guest marker instructions (nopl 0x4d4dCCCC(%rax)) bracket timed regions and
 * make the plugin print BAREMM-RESULT lines in model cycles.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/qemu_plugin_api.h"
#include "model/model.h"

QPAPI_EXPORT int qemu_plugin_version = BAREMM_QEMU_PLUGIN_VERSION;

/* ---- events ---- */

enum {
	EV_L1D_MISS, EV_L2_MISS, EV_LLC_MISS, EV_DTLB_MISS, EV_STLB_MISS, EV_WALK, EV_WALK_CYCLES,
	EV_ATOMIC, EV_SERIALISE, EV_IRET, EV_REP_LINES, EV_WALK_FAIL, EV_COH_INVAL, EV_INVLPG,
	EV_CR3_WRITE, EV_TLB_FLUSH_ALL, EV_FENCE, EV_PAUSE, EV_HLT, EV_IO, EV_MEM_ACCESS,
	NR_MEV
};
static const char *const ev_names[NR_MEV] = {
	"l1d_miss", "l2_miss", "llc_miss", "dtlb_miss", "stlb_miss", "walk", "walk_cycles",
	"atomic", "serialise", "iret", "rep_lines", "walk_fail", "coh_inval", "invlpg",
	"cr3_write", "tlb_flush_all", "fence", "pause", "hlt", "io", "mem_access",
};

/* Inline-updated per-vCPU counters (the scoreboard element). */
struct sb {
	u64 insns;		/* instructions, rep string instructions excluded */
	u64 pen;		/* fixed penalties, cycles */
	u64 ev[NR_MEV];
};

#define MAX_RUNS 1000
#define MAX_VARIANTS 4

/* Everything else a vCPU owns; touched only from that vCPU's callbacks. */
struct vcpu {
	bool live;
	struct cache l1, l2;
	struct hierarchy h;
	struct tlb tlb;
	u64 cyc;		/* memory cycles */
	u64 rep_execs;		/* rep string instructions (each counted once) */
	u64 ev[NR_MEV];
	u64 last_line;		/* most recent line of the plain path: the L1's MRU line */
	u64 last_page4k;	/* most recent page translated: the L1 dTLB's MRU entry */
	/* rep string state */
	const void *rep_insn;
	u64 rep_mark;
	struct rep_filter rep;
	/* paging state */
	bool cr3_known, cr4_known, cr0_known;
	u64 cr3, cr4, cr0;
	bool paging;		/* CR0.PG and CR4.PAE: 4-level translation is modelled */
	/* timed regions */
	bool in_region;
	u64 r_clock, r_ev[NR_MEV];
	u64 acc_clock, acc_ev[NR_MEV];
};

struct variant_acc {
	unsigned nruns;
	u64 runs[MAX_RUNS];
	u64 ev[NR_MEV];
	u64 ops;
};

static struct profile P;
static struct cache llc;
static struct qemu_plugin_scoreboard *score;
static struct vcpu *vcpus;
static unsigned max_vcpus;
static u64 physmap = 0xffff888000000000ull;
static int out_fd = 1;
static int api_cur;
static bool hello_done;
static GByteArray *regbuf, *membuf;
/* register handles, looked up once (x86_64 gdb names) */
static struct qemu_plugin_register *reg_gpr[16], *reg_cr0, *reg_cr3, *reg_cr4, *reg_fs_base, *reg_gs_base;
static const char *const gpr_names[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};
/* the round being collected and the runs per variant */
static u64 round_sum, round_n, round_ev[NR_MEV], round_ops;
static struct variant_acc variants[MAX_VARIANTS];

/* ---- output ---- */

static void out_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_line(const char *fmt, ...)
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

/* ---- registers and memory ---- */

static bool read_reg(struct qemu_plugin_register *r, u64 *v)
{
	if (!r)
		return false;
	g_byte_array_set_size(regbuf, 0);
	int n = qemu_plugin_read_register(r, regbuf);
	if (n <= 0 || regbuf->len < (unsigned)n)
		return false;
	u64 x = 0;
	for (int i = n < 8 ? n - 1 : 7; i >= 0; i--)
		x = x << 8 | regbuf->data[i];
	*v = x;
	return true;
}

static bool read_guest(u64 va, void *dst, size_t len)
{
	if (!qemu_plugin_read_memory_vaddr(va, membuf, len) || membuf->len < len)
		return false;
	memcpy(dst, membuf->data, len);
	return true;
}

/* ---- the clock ---- */

static inline struct sb *sb_of(unsigned vi)
{
	return qemu_plugin_scoreboard_find(score, vi);
}

/* x100 */
static u64 clock_of(unsigned vi)
{
	struct sb *s = sb_of(vi);
	struct vcpu *v = &vcpus[vi];
	return (s->insns + v->rep_execs) * P.base_cpi_x100 + (s->pen + v->cyc) * 100;
}

static void events_of(unsigned vi, u64 ev[NR_MEV])
{
	struct sb *s = sb_of(vi);
	for (int e = 0; e < NR_MEV; e++)
		ev[e] = s->ev[e] + vcpus[vi].ev[e];
}

/* ---- memory accesses ---- */

static u64 data_line(struct vcpu *v, unsigned vi, u64 line, bool store, bool count_access);

/* A page walk from CR3; its loads go through this CPU's caches. */
static u64 walk(struct vcpu *v, unsigned vi, u64 va, bool *is_2m, bool *global, bool *ok)
{
	u64 cost = P.walk_overhead;
	*is_2m = false;
	*global = false;
	*ok = false;
	v->ev[EV_WALK]++;
	if (!v->cr3_known) {
		v->ev[EV_WALK_FAIL]++;
		cost += 4 * P.mem_lat;
		v->ev[EV_WALK_CYCLES] += cost;
		return cost;
	}
	u64 table = v->cr3 & 0x000ffffffffff000ull;
	for (int level = 4; level >= 1; level--) {
		u64 pa = table + (((va >> (12 + 9 * (level - 1))) & 511) << 3);
		u64 e;
		if (!read_guest(physmap + pa, &e, 8)) {
			v->ev[EV_WALK_FAIL]++;
			cost += (u64)level * P.mem_lat;
			break;
		}
		cost += data_line(v, vi, pa >> LINE_SHIFT, false, false);
		if (!(e & 1))
			break;	/* not present: the access faulted, nothing to install */
		if (level == 1 || (level <= 3 && (e & 0x80))) {
			*is_2m = level >= 2;
			*global = (e & 0x100) && (!v->cr4_known || (v->cr4 & 0x80));
			*ok = true;
			break;
		}
		table = e & 0x000ffffffffff000ull;
	}
	v->ev[EV_WALK_CYCLES] += cost;
	return cost;
}

static u64 translate(struct vcpu *v, unsigned vi, u64 va)
{
	if (!v->paging)
		return 0;	/* no paging: nothing to translate */
	u64 page = va >> 12;
	if (page == v->last_page4k)
		return 0;	/* the L1 dTLB's MRU entry: a hit that changes no LRU order */
	int r = tlb_lookup(&v->tlb, va);
	u64 cost = 0;
	if (r != TLB_L1_HIT) {
		v->ev[EV_DTLB_MISS]++;
		cost += P.stlb_lat;
		if (r == TLB_MISS) {
			bool is_2m, global, ok;
			v->ev[EV_STLB_MISS]++;
			cost += walk(v, vi, va, &is_2m, &global, &ok);
			/* a failed walk still installs a (4 KiB, non-global) entry: the
			 * access happened, so the CPU did translate it */
			tlb_fill(&v->tlb, va, ok && is_2m, ok && global);
		}
	}
	v->last_page4k = page;
	return cost;
}

/* The cache part of one access; a store invalidates the line in the other CPUs' private
 * caches (write-invalidate coherence). Returns cycles. */
static u64 data_line(struct vcpu *v, unsigned vi, u64 line, bool store, bool count_access)
{
	if (count_access)
		v->ev[EV_MEM_ACCESS]++;
	if (store && max_vcpus > 1) {
		for (unsigned o = 0; o < max_vcpus; o++) {
			struct vcpu *w = &vcpus[o];
			if (o == vi || !w->live)
				continue;
			bool a = cache_invalidate(&w->l1, line), b = cache_invalidate(&w->l2, line);
			if (a || b) {
				v->ev[EV_COH_INVAL]++;
				if (w->last_line == line)
					w->last_line = ~0ull;
			}
		}
	}
	if (line == v->last_line)
		return P.l1d_lat;
	int lvl = hier_access(&v->h, line);
	v->last_line = line;
	switch (lvl) {
	case LVL_L1:
		return P.l1d_lat;
	case LVL_L2:
		v->ev[EV_L1D_MISS]++;
		return P.l2_lat;
	case LVL_LLC:
		v->ev[EV_L1D_MISS]++;
		v->ev[EV_L2_MISS]++;
		return P.llc_lat;
	default:
		v->ev[EV_L1D_MISS]++;
		v->ev[EV_L2_MISS]++;
		v->ev[EV_LLC_MISS]++;
		return P.mem_lat;
	}
}

static void mem_cb(unsigned vi, qemu_plugin_meminfo_t info, uint64_t va, void *ud)
{
	(void)ud;
	struct vcpu *v = &vcpus[vi];
	struct qemu_plugin_hwaddr *h = qemu_plugin_get_hwaddr(info, va);
	if (!h || qemu_plugin_hwaddr_is_io(h)) {
		v->ev[EV_IO]++;
		v->cyc += P.mem_lat;
		return;
	}
	u64 pa = qemu_plugin_hwaddr_phys_addr(h);
	u64 c = translate(v, vi, va);
	c += data_line(v, vi, pa >> LINE_SHIFT, qemu_plugin_mem_is_store(info), true);
	v->cyc += c;
}

/* A rep string instruction: counted once per execution (QEMU may run its exec callback
 * once per iteration: iterations leave the inline instruction counter unchanged, any other
 * instruction in between moves it). */
static void rep_exec_cb(unsigned vi, void *ud)
{
	struct vcpu *v = &vcpus[vi];
	u64 n = sb_of(vi)->insns;
	if (v->rep_insn != ud || v->rep_mark != n) {
		v->rep_insn = ud;
		v->rep_mark = n;
		v->rep_execs++;
		rep_filter_reset(&v->rep);
	}
}

/* A rep string access: priced per distinct cache line, not per iteration (the filter in
 * model.h). */
static void rep_mem_cb(unsigned vi, qemu_plugin_meminfo_t info, uint64_t va, void *ud)
{
	(void)ud;
	struct vcpu *v = &vcpus[vi];
	struct qemu_plugin_hwaddr *h = qemu_plugin_get_hwaddr(info, va);
	if (!h || qemu_plugin_hwaddr_is_io(h)) {
		v->ev[EV_IO]++;
		v->cyc += P.mem_lat;
		return;
	}
	u64 line = qemu_plugin_hwaddr_phys_addr(h) >> LINE_SHIFT;
	if (!rep_filter_new(&v->rep, line))
		return;
	v->ev[EV_REP_LINES]++;
	u64 c = translate(v, vi, va);
	u64 lat = data_line(v, vi, line, qemu_plugin_mem_is_store(info), true);
	c += P.rep_line + (lat == P.mem_lat ? P.rep_mem_line : 0);
	v->cyc += c;
}

/* ---- TLB-changing instructions (callbacks with register access) ---- */

struct tlb_insn {
	struct insn_info info;
	u64 va;
};

static void update_paging(struct vcpu *v)
{
	bool on = v->cr0_known && (v->cr0 & (1ull << 31)) && v->cr4_known && (v->cr4 & (1ull << 5));
	if (on != v->paging) {
		tlb_flush(&v->tlb, false);
		v->last_page4k = ~0ull;
	}
	v->paging = on;
}

static void refresh_paging(struct vcpu *v)
{
	u64 x;
	if (read_reg(reg_cr0, &x)) {
		v->cr0 = x;
		v->cr0_known = true;
	}
	if (read_reg(reg_cr3, &x)) {
		v->cr3 = x;
		v->cr3_known = true;
	}
	if (read_reg(reg_cr4, &x)) {
		v->cr4 = x;
		v->cr4_known = true;
	}
	update_paging(v);
}

static void tlb_insn_cb(unsigned vi, void *ud)
{
	struct tlb_insn *ti = ud;
	struct vcpu *v = &vcpus[vi];
	refresh_paging(v);	/* the values before this instruction */
	if (ti->info.kind == INSN_MOV_CR) {
		u64 nv;
		if (ti->info.gpr < 0 || !read_reg(reg_gpr[ti->info.gpr], &nv))
			return;
		if (ti->info.cr == 3) {
			v->ev[EV_CR3_WRITE]++;
			bool noflush = v->cr4_known && (v->cr4 & (1ull << 17)) && (nv >> 63);
			if (!noflush)
				tlb_flush(&v->tlb, true);
			v->cr3 = nv & ~(1ull << 63);
			v->cr3_known = true;
		} else if (ti->info.cr == 4) {
			u64 old = v->cr4;
			if (!v->cr4_known || ((old ^ nv) & 0x80) || ((old ^ nv) & (1ull << 17))) {
				v->ev[EV_TLB_FLUSH_ALL]++;
				tlb_flush(&v->tlb, false);
			}
			v->cr4 = nv;
			v->cr4_known = true;
		} else if (ti->info.cr == 0) {
			v->cr0 = nv;
			v->cr0_known = true;
		}
		update_paging(v);
		v->last_page4k = ~0ull;
		return;
	}
	if (ti->info.kind == INSN_INVLPG && ti->info.has_mem) {
		u64 regs[16] = { 0 }, fs = 0, gs = 0;
		const struct mem_operand *m = &ti->info.mem;
		if (m->base >= 0 && !read_reg(reg_gpr[m->base], &regs[m->base]))
			return;
		if (m->index >= 0 && !read_reg(reg_gpr[m->index], &regs[m->index]))
			return;
		if (m->seg == SEG_FS)
			read_reg(reg_fs_base, &fs);
		if (m->seg == SEG_GS)
			read_reg(reg_gs_base, &gs);
		u64 a = mem_operand_addr(m, regs, ti->va, ti->info.len, fs, gs);
		tlb_invlpg(&v->tlb, a);
		v->last_page4k = ~0ull;
	}
}

/* ---- the guest protocol ---- */

enum { CMD_REGION_BEGIN = 1, CMD_REGION_END, CMD_SAMPLE, CMD_ROUND, CMD_FIGURE, CMD_HELLO };

static void stats_and_print(const char *key, unsigned vidx)
{
	struct variant_acc *va = &variants[vidx];
	unsigned n = va->nruns;
	u64 tmp[MAX_RUNS];
	memcpy(tmp, va->runs, n * sizeof(u64));
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) {
			u64 t = tmp[j];
			tmp[j] = tmp[j - 1];
			tmp[j - 1] = t;
		}
	u64 mn = tmp[0], mx = tmp[n - 1];
	u64 med = n & 1 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
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
	if (n > 1) {
		u64 x = acc / (n - 1), r = 0, bit = 1ull << 62;
		while (bit > x)
			bit >>= 2;
		while (bit) {
			if (x >= r + bit) {
				x -= r + bit;
				r = (r >> 1) + bit;
			} else {
				r >>= 1;
			}
			bit >>= 2;
		}
		sd = r * scale;
	}
	u64 psd = mean ? sd * 10000 / mean : 0;
	u64 ns = med * 100 / P.ghz_x100;
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
	out_line("%s", line);
	len = snprintf(line, sizeof(line), "BAREMM-SAMPLES %s values=", key);
	for (unsigned r = 0; r < n && len < (int)sizeof(line) - 32; r++) {
		len += snprintf(line + len, sizeof(line) - (size_t)len, "%s", r ? "," : "");
		len += fx(line + len, sizeof(line) - (size_t)len, va->runs[r]);
	}
	out_line("%s", line);
}

static void hello(void)
{
	if (hello_done)
		return;
	hello_done = true;
	char d[2048];
	profile_describe(&P, d, sizeof(d));
	out_line("BAREMM-MODEL %s plugin_api=%d physmap=0x%llx", d, api_cur, (unsigned long long)physmap);
}

static void marker_cb(unsigned vi, void *ud)
{
	unsigned cmd = (unsigned)(uintptr_t)ud;
	struct vcpu *v = &vcpus[vi];
	u64 a0 = 0, a1 = 0, a2 = 0, ev[NR_MEV];
	switch (cmd) {
	case CMD_REGION_BEGIN:
		v->in_region = true;
		v->r_clock = clock_of(vi);
		events_of(vi, v->r_ev);
		return;
	case CMD_REGION_END:
		if (!v->in_region) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=region_end_without_begin", vi);
			return;
		}
		v->in_region = false;
		v->acc_clock += clock_of(vi) - v->r_clock;
		events_of(vi, ev);
		for (int e = 0; e < NR_MEV; e++)
			v->acc_ev[e] += ev[e] - v->r_ev[e];
		return;
	case CMD_SAMPLE: {
		if (!read_reg(reg_gpr[7], &a0)) {
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
		v->acc_clock = 0;
		return;
	}
	case CMD_ROUND:
		if (!read_reg(reg_gpr[7], &a0) || !read_reg(reg_gpr[6], &a1)) {
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
			if (va->nruns < MAX_RUNS)
				va->runs[va->nruns++] = round_sum / round_n;
			va->ops += round_ops;
			for (int e = 0; e < NR_MEV; e++)
				va->ev[e] += round_ev[e];
		}
		round_sum = round_n = round_ops = 0;
		memset(round_ev, 0, sizeof(round_ev));
		return;
	case CMD_FIGURE: {
		if (!read_reg(reg_gpr[7], &a0) || !read_reg(reg_gpr[6], &a1) || !read_reg(reg_gpr[2], &a2)) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=cannot_read_registers", vi);
			return;
		}
		char key[520];
		if (a1 == 0 || a1 > 512 || !read_guest(a0, key, (size_t)a1)) {
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
	case CMD_HELLO:
		refresh_paging(v);
		hello();
		return;
	default:
		out_line("BAREMM-MODEL-ERROR vcpu=%u reason=unknown_command command=%u", vi, cmd);
		return;
	}
}

/* ---- translation ---- */

static qemu_plugin_u64 sb_entry(size_t off)
{
	return (qemu_plugin_u64){ .score = score, .offset = off };
}

static void add_penalty(struct qemu_plugin_insn *insn, u64 cycles, int ev)
{
	if (cycles)
		qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn, QEMU_PLUGIN_INLINE_ADD_U64,
								    sb_entry(offsetof(struct sb, pen)), cycles);
	if (ev >= 0)
		qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
			insn, QEMU_PLUGIN_INLINE_ADD_U64, sb_entry(offsetof(struct sb, ev) + (size_t)ev * sizeof(u64)), 1);
}

static void tb_trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		u8 bytes[16];
		size_t len = qemu_plugin_insn_data(insn, bytes, sizeof(bytes));
		struct insn_info info;
		decode_insn(bytes, len, &info);
		if (info.kind == INSN_REP_STRING) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, rep_exec_cb, QEMU_PLUGIN_CB_NO_REGS, insn);
			qemu_plugin_register_vcpu_mem_cb(insn, rep_mem_cb, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
			continue;
		}
		qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn, QEMU_PLUGIN_INLINE_ADD_U64,
								    sb_entry(offsetof(struct sb, insns)), 1);
		qemu_plugin_register_vcpu_mem_cb(insn, mem_cb, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
		switch (info.kind) {
		case INSN_MARKER:
			qemu_plugin_register_vcpu_insn_exec_cb(insn, marker_cb, QEMU_PLUGIN_CB_R_REGS,
							       (void *)(uintptr_t)info.marker_cmd);
			break;
		case INSN_ATOMIC:
			add_penalty(insn, P.atomic, EV_ATOMIC);
			break;
		case INSN_CPUID:
			add_penalty(insn, P.cpuid, EV_SERIALISE);
			break;
		case INSN_WRMSR:
			add_penalty(insn, P.wrmsr, EV_SERIALISE);
			break;
		case INSN_DESC_LOAD:
			add_penalty(insn, P.serialise, EV_SERIALISE);
			break;
		case INSN_IRET:
			add_penalty(insn, P.irq_roundtrip, EV_IRET);
			break;
		case INSN_FENCE:
			add_penalty(insn, P.fence, EV_FENCE);
			break;
		case INSN_HLT:
			add_penalty(insn, P.hlt, EV_HLT);
			break;
		case INSN_PAUSE:
			add_penalty(insn, P.pause, EV_PAUSE);
			break;
		case INSN_MOV_CR:
		case INSN_INVLPG: {
			add_penalty(insn, info.kind == INSN_MOV_CR ? P.mov_cr : P.invlpg, EV_SERIALISE);
			if (info.kind == INSN_INVLPG)
				add_penalty(insn, 0, EV_INVLPG);
			/* translations are kept for the whole run: this small record lives as long */
			struct tlb_insn *ti = malloc(sizeof(*ti));
			if (!ti)
				abort();
			ti->info = info;
			ti->va = qemu_plugin_insn_vaddr(insn);
			qemu_plugin_register_vcpu_insn_exec_cb(insn, tlb_insn_cb, QEMU_PLUGIN_CB_R_REGS, ti);
			break;
		}
		default:
			break;
		}
	}
}

/* ---- set-up and exit ---- */

static void vcpu_init_cb(qemu_plugin_id_t id, unsigned vi)
{
	(void)id;
	if (vi >= max_vcpus) {
		fprintf(stderr, "costmodel: vCPU %u beyond the %u expected\n", vi, max_vcpus);
		abort();
	}
	if (!reg_gpr[0]) {
		GArray *regs = qemu_plugin_get_registers();
		const qemu_plugin_reg_descriptor *d = (const qemu_plugin_reg_descriptor *)regs->data;
		for (unsigned i = 0; i < regs->len; i++) {
			for (int g = 0; g < 16; g++)
				if (!strcmp(d[i].name, gpr_names[g]))
					reg_gpr[g] = d[i].handle;
			if (!strcmp(d[i].name, "cr0"))
				reg_cr0 = d[i].handle;
			else if (!strcmp(d[i].name, "cr3"))
				reg_cr3 = d[i].handle;
			else if (!strcmp(d[i].name, "cr4"))
				reg_cr4 = d[i].handle;
			else if (!strcmp(d[i].name, "fs_base"))
				reg_fs_base = d[i].handle;
			else if (!strcmp(d[i].name, "gs_base"))
				reg_gs_base = d[i].handle;
		}
		g_array_free(regs, 1);
		for (int g = 0; g < 16; g++)
			if (!reg_gpr[g]) {
				fprintf(stderr, "costmodel: QEMU offers no register '%s' to plugins\n", gpr_names[g]);
				abort();
			}
		if (!reg_cr0 || !reg_cr3 || !reg_cr4)
			fprintf(stderr, "costmodel: warning: no cr0/cr3/cr4 register for plugins; paging is "
				"tracked from the first mov to cr0/cr3/cr4\n");
	}
	struct vcpu *v = &vcpus[vi];
	if (v->live)
		return;
	if (cache_init(&v->l1, P.l1d_kib, P.l1d_ways) || cache_init(&v->l2, P.l2_kib, P.l2_ways) ||
	    tlb_init(&v->tlb, &P)) {
		fprintf(stderr, "costmodel: out of memory for vCPU %u\n", vi);
		abort();
	}
	v->h = (struct hierarchy){ &v->l1, &v->l2, &llc };
	v->last_line = v->last_page4k = ~0ull;
	rep_filter_reset(&v->rep);
	v->live = true;
}

static bool totals_done;

static void atexit_cb(qemu_plugin_id_t id, void *ud)
{
	(void)id;
	(void)ud;
	if (totals_done || !vcpus)
		return;
	totals_done = true;
	for (unsigned vi = 0; vi < max_vcpus; vi++) {
		if (!vcpus[vi].live)
			continue;
		u64 ev[NR_MEV];
		events_of(vi, ev);
		char line[2048];
		int len = snprintf(line, sizeof(line), "BAREMM-MODEL-TOTAL vcpu=%u insns=%llu cycles=%llu", vi,
				   (unsigned long long)(sb_of(vi)->insns + vcpus[vi].rep_execs),
				   (unsigned long long)(clock_of(vi) / 100));
		for (int e = 0; e < NR_MEV && len < (int)sizeof(line) - 48; e++)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " ev.model_%s=%llu", ev_names[e],
					(unsigned long long)ev[e]);
		out_line("%s", line);
	}
}

QPAPI_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	if (info->version.cur < BAREMM_QEMU_PLUGIN_VERSION || info->version.min > BAREMM_QEMU_PLUGIN_VERSION) {
		fprintf(stderr,
			"costmodel: this QEMU implements plugin API %d (accepts %d..%d); the cost model needs "
			"API %d (QEMU 9.2 or newer)\n",
			info->version.cur, info->version.min, info->version.cur, BAREMM_QEMU_PLUGIN_VERSION);
		return -1;
	}
	if (!info->system_emulation || strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "costmodel: needs qemu-system-x86_64 (got %s%s)\n", info->target_name,
			info->system_emulation ? "" : ", user mode");
		return -1;
	}
	api_cur = info->version.cur;
	const char *profile = NULL, *out = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "profile=", 8)) {
			profile = argv[i] + 8;
		} else if (!strncmp(argv[i], "physmap=", 8)) {
			char *end;
			physmap = strtoull(argv[i] + 8, &end, 0);
			if (*end || end == argv[i] + 8) {
				fprintf(stderr, "costmodel: physmap=%s is not a number\n", argv[i] + 8);
				return -1;
			}
		} else if (!strncmp(argv[i], "out=", 4)) {
			out = argv[i] + 4;
		} else {
			fprintf(stderr, "costmodel: unknown argument '%s' (profile=FILE, physmap=ADDR, out=FILE)\n",
				argv[i]);
			return -1;
		}
	}
	if (!profile) {
		fprintf(stderr, "costmodel: give profile=FILE (model/profiles/*.cfg)\n");
		return -1;
	}
	char err[512];
	if (profile_load(profile, &P, err, sizeof(err))) {
		fprintf(stderr, "costmodel: %s\n", err);
		return -1;
	}
	if (!out) {
		/* QEMU closes its stdio chardev before the exit callbacks run: keep our own fd */
		out_fd = dup(1);
		if (out_fd < 0) {
			fprintf(stderr, "costmodel: cannot duplicate stdout\n");
			return -1;
		}
	} else {
		out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		if (out_fd < 0) {
			fprintf(stderr, "costmodel: cannot open out=%s\n", out);
			return -1;
		}
	}
	max_vcpus = (unsigned)(info->system.max_vcpus > 0 ? info->system.max_vcpus : 1);
	vcpus = calloc(max_vcpus, sizeof(*vcpus));
	if (!vcpus || cache_init(&llc, P.llc_kib, P.llc_ways)) {
		fprintf(stderr, "costmodel: out of memory\n");
		return -1;
	}
	regbuf = g_byte_array_new();
	membuf = g_byte_array_new();
	score = qemu_plugin_scoreboard_new(sizeof(struct sb));
	qemu_plugin_register_vcpu_init_cb(id, vcpu_init_cb);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans_cb);
	qemu_plugin_register_atexit_cb(id, atexit_cb, NULL);
	return 0;
}
