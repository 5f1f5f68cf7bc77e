/*
 * baremm's cycle-cost model, a QEMU TCG plugin (docs/COSTMODEL.md).
 *
 *   qemu-system-x86_64 ... -icount shift=0,sleep=off,align=off \
 *       -plugin build/model/costmodel.so,profile=model/profiles/skylake-sp.cfg[,physmap=0x..][,out=PATH][,causal=off]
 *
 * Per vCPU: clock = instructions x base_cpi + penalties. Instructions and fixed penalties
 * (atomics, serialising instructions, IRET, ...) are summed per translation block at
 * translation time and added by one callback per executed block (QEMU 10.0's inline
 * per-vCPU counters cannot be used: see tb_trans_cb); every memory access goes through a
 * callback that prices the TLB lookup (with a page walk through the caches on a miss) and
 * the cache access. Guest marker instructions (nopl 0x4d4dCCCC(%rax)) bracket timed regions and
 * make the plugin print BAREMM-RESULT lines in model cycles.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "model/qemu_plugin_api.h"
#include "model/model.h"
#include "kernel/math.h"	/* the guest harness's integer statistics */

QPAPI_EXPORT int qemu_plugin_version = BAREMM_QEMU_PLUGIN_VERSION;

/* ---- events ---- */

enum {
	EV_L1D_MISS, EV_L2_MISS, EV_LLC_MISS, EV_DTLB_MISS, EV_STLB_MISS, EV_WALK, EV_WALK_CYCLES,
	EV_ATOMIC, EV_SERIALISE, EV_IRET, EV_REP_LINES, EV_WALK_FAIL, EV_COH_INVAL, EV_INVLPG,
	EV_CR3_WRITE, EV_TLB_FLUSH_ALL, EV_FENCE, EV_PAUSE, EV_HLT, EV_IO, EV_MEM_ACCESS,
	/* across CPUs (docs/COSTMODEL.md, "Across CPUs") */
	EV_C2C, EV_C2C_REMOTE, EV_RFO_INVAL, EV_WAIT, EV_WAIT_CYCLES, EV_IPI_SENT, EV_IPI_WAIT_CYCLES,
	/* where the memory cycles went, so a figure's difference can be taken apart */
	EV_CYC_CACHE, EV_CYC_TLB, EV_CYC_REP,
	/* the clock's other parts, counted outside struct tb_counts' mask: instructions (rep
	 * strings once per execution), fixed penalties, MMIO cycles */
	EV_INSNS, EV_CYC_PEN, EV_CYC_IO,
	/* IPIs that reached a running CPU whose clock was behind send + ipi_latency (take_ipi) */
	EV_IPI_BEHIND, EV_IPI_BEHIND_CYCLES,
	/* a line that only another socket's (CCD's) LLC held */
	EV_LLC_REMOTE,
	NR_MEV
};
static const char *const ev_names[NR_MEV] = {
	"l1d_miss", "l2_miss", "llc_miss", "dtlb_miss", "stlb_miss", "walk", "walk_cycles",
	"atomic", "serialise", "iret", "rep_lines", "walk_fail", "coh_inval", "invlpg",
	"cr3_write", "tlb_flush_all", "fence", "pause", "hlt", "io", "mem_access",
	"c2c_transfer", "c2c_remote", "rfo_inval", "wait", "wait_cycles", "ipi_sent", "ipi_wait_cycles",
	"cyc_cache", "cyc_tlb", "cyc_rep",
	"insns", "cyc_pen", "cyc_io",
	"ipi_behind", "ipi_behind_cycles",
	"llc_remote",
};
_Static_assert(EV_INSNS <= 32, "tb_counts.evmask has 32 bits for the events a block carries");

/* Where a figure's cycles went (the part.* fields of BAREMM-RESULT): per vCPU the clock is
 * exactly the sum of these, x100. The first six follow from the events above, which a
 * wait puts back to their values at its start; the last two are how far waits for other
 * CPUs' stores and IPIs moved the clock beyond that (clock_set). */
enum { PT_INSNS, PT_PEN, PT_CACHE, PT_TLB, PT_REP, PT_IO, PT_WAIT, PT_IPI, NR_PART };
static const char *const part_names[NR_PART] = {
	"insns", "penalties", "cache", "tlb", "rep", "io", "wait", "ipi",
};
/* The events the first six parts come from. */
#define NR_PEV 6
static const int part_ev[NR_PEV] = { EV_INSNS, EV_CYC_PEN, EV_CYC_CACHE, EV_CYC_TLB, EV_CYC_REP, EV_CYC_IO };

/* What one translation block (or the tail of one after a marker) adds when it runs. */
struct tb_counts {
	u32 insns;		/* instructions, rep string instructions excluded */
	u32 evmask;		/* events with a nonzero count below */
	u64 pen;		/* fixed penalties, cycles */
	u16 ev[NR_MEV];
};

struct marker {
	u16 cmd;
	struct tb_counts tail;	/* the block's instructions after the marker */
};

#define MAX_RUNS 1000
#define MAX_VARIANTS 4

/* Everything else a vCPU owns; touched only from that vCPU's callbacks. */
struct vcpu {
	bool live;
	u64 insns;		/* instructions, rep string instructions excluded */
	u64 pen;		/* fixed penalties, cycles */
	struct cache l1, l2;
	struct hierarchy h;
	struct tlb tlb;
	u64 cyc;		/* memory cycles */
	u64 rep_execs;		/* rep string instructions (each counted once) */
	u64 ev[NR_MEV];
	u64 last_line;		/* most recent line of the plain path: the L1's MRU line */
	u64 inval_line, inval_epoch;	/* last line this CPU's store invalidated elsewhere */
	u64 last_page4k;	/* most recent page translated: the L1 dTLB's MRU entry */
	u64 last_page2m;	/* ... and its 2 MiB page when that entry is a 2 MiB one */
	/* QEMU's translations of recent pages (virtual page -> physical page | is_io), kept
	 * like a TLB: emptied by every CR0/CR3/CR4 write, INVLPG and INVPCID, used only
	 * with paging on. Saves asking QEMU for the physical address of every access. */
	u64 pac_v[64], pac_p[64];
	/* rep string state */
	const void *rep_insn;
	u64 rep_mark;
	struct rep_filter rep;
	/* paging state */
	bool cr3_known, cr4_known, cr0_known;
	u64 cr3, cr4, cr0;
	bool paging;		/* CR0.PG and CR4.PAE: 4-level translation is modelled */
	/* across CPUs (multi only) */
	int64_t adj;		/* clock correction x100: waits and IPIs move the clock, see wake_to() */
	bool waiting;		/* after a pause: nothing is charged until wake_to() */
	u64 wait_clock;		/* x100: the clock at the last load before the pause */
	u64 wait_seq;		/* store_seq at that load: stores after it wake the CPU */
	u64 wait_ev[NR_MEV];	/* events at the wait's start (restored at the wake) */
	u64 ld_clock, ld_seq;	/* clock x100 and store_seq at this CPU's latest load */
	u64 ld_pev[NR_PEV];	/* and the part events then (a wait that starts there restores them) */
	bool ipi_pending;	/* an IPI was sent to this CPU and not taken yet */
	u32 xapic_icr_hi;	/* the last value this CPU stored to the xAPIC ICR high */
	u32 xapic_ldr, xapic_dfr;	/* its xAPIC logical destination and destination format */
	u64 ipi_at;		/* x100: its earliest start (send + ipi_latency) */
	bool halted;		/* its last instruction was a HLT (cleared by its next block) */
	u64 ipi_shift;		/* x100: until its IRET, how far behind the IPI it took it ran */
	int64_t part_wait, part_ipi;	/* x100: PT_WAIT and PT_IPI */
	/* timed regions */
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

static struct profile P;
static struct cache *llcs;	/* one LLC per socket (CCD) that has vCPUs */
static unsigned nllc;
static struct vcpu *vcpus;
static unsigned max_vcpus;
static u64 physmap = 0xffff888000000000ull;
static int out_fd = 1;
static bool causal = true;	/* a load cannot see a store from its future (data_line_multi); causal=off drops it */
static int api_cur;
static bool hello_done;
static GByteArray *regbuf, *membuf;
/* register handles, looked up once (x86_64 gdb names) */
static struct qemu_plugin_register *reg_gpr[16], *reg_cr0, *reg_cr3, *reg_cr4, *reg_fs_base, *reg_gs_base,
	*reg_k_gs_base;
static const char *const gpr_names[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};
/* the round being collected and the runs per variant */
static u64 round_sum, round_n, round_ev[NR_MEV], round_ops;
static int64_t round_part[NR_PART];	/* x10000 */
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
	regbuf->len = 0;	/* empty it (what g_byte_array_set_size(.., 0) does) */
	int n = qemu_plugin_read_register(r, regbuf);
	if (n <= 0 || regbuf->len < (unsigned)n)
		return false;
	u64 x = 0;
	memcpy(&x, regbuf->data, n < 8 ? (size_t)n : 8);	/* x86: little endian */
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

/* ---- which vCPU is running ----
 *
 * Under round-robin TCG with several vCPUs (always the case with -icount), QEMU 10.0
 * passes callbacks the index of the vCPU that *translated* the block, and blocks are
 * shared: vCPU 1 running code first translated by vCPU 0 is reported as vCPU 0. So with
 * more than one vCPU the model identifies the running CPU itself, at the start of every
 * block (vCPUs only switch between blocks): by its per-CPU kernel GS base (gs_base in
 * the kernel, k_gs_base while a Linux CPU is in user mode), which baremm and Linux set
 * to a distinct per-CPU area on every CPU. The first block seen with a new base claims
 * the slot QEMU named if that slot is still free, else the lowest free one; with CPUs
 * brought up in order (baremm, Linux) slots match logical CPU numbers. A CPU that moves
 * its base with a GS_BASE WRMSR keeps its slot (wrmsr_cb, ident.c): Linux's boot CPU
 * starts on a boot-time per-CPU area and moves to its real one, and the stale base must
 * not hold the slot the second CPU needs. Before a CPU has set its GS base (firmware,
 * early boot), or if more bases than slots appear, QEMU's index is used.
 */
static bool multi;		/* more than one vCPU: identify the running one */
static unsigned running;	/* slot of the running vCPU (multi) */
static u64 switches;		/* times the running slot changed */
static struct ident ident;
static bool trace_ident;	/* trace=ident: print each claim and move of a base (prints only) */

/* The running CPU's kernel GS base: gs_base in the kernel, k_gs_base in user mode; 0 if
 * neither is a kernel address yet. */
static u64 kernel_gs(void)
{
	u64 g;
	if (!read_reg(reg_gs_base, &g))
		return 0;
	if (!(g >> 63) && (!read_reg(reg_k_gs_base, &g) || !(g >> 63)))
		return 0;
	return g;
}

static unsigned identify(unsigned hint)
{
	u64 g = kernel_gs();
	if (!g) {
		ident_nobase(&ident, hint);
		return hint;	/* no per-CPU kernel base yet */
	}
	if (g == ident.last_base) {	/* the common case, without a call */
		ident.last_only = true;
		return ident.last_slot;
	}
	bool claimed;
	u64 unclaimed = ident.unclaimed;
	unsigned slot = ident_slot(&ident, g, hint, &claimed);
	if (trace_ident && claimed)
		out_line("BAREMM-MODEL-TRACE ident claim slot=%u base=0x%llx qemu=%u", slot, (unsigned long long)g,
			 hint);
	if (slot < ident.n)
		return slot;
	if (!unclaimed)	/* the first time only: it misattributes work from here on */
		fprintf(stderr, "costmodel: warning: GS base 0x%llx found no free vCPU slot; QEMU's index is "
			"used for it\n", (unsigned long long)g);
	return hint;	/* more bases than CPUs; keep QEMU's */
}

/* The slot a callback's work belongs to. */
static inline unsigned cur(unsigned vi)
{
	return multi ? running : vi;
}

/* ---- the clock ---- */

static void take_ipi(unsigned vi);

static void tb_exec_cb(unsigned vi, void *ud)
{
	const struct tb_counts *c = ud;
	if (multi) {
		unsigned r = identify(vi);
		if (r != running) {
			running = r;
			switches++;
		}
		vi = r;
		if (vcpus[vi].ipi_pending)
			take_ipi(vi);
		vcpus[vi].halted = false;
	}
	struct vcpu *v = &vcpus[vi];
	v->insns += c->insns;
	v->pen += c->pen;
	v->ev[EV_INSNS] += c->insns;
	v->ev[EV_CYC_PEN] += c->pen;
	for (u32 m = c->evmask; m; m &= m - 1) {
		int e = __builtin_ctz(m);
		v->ev[e] += c->ev[e];
	}
}

/* The clock x100, less what the rest of the running block (tail) has already added. */
static u64 clock_of(unsigned vi, const struct tb_counts *tail)
{
	struct vcpu *v = &vcpus[vi];
	u64 insns = v->insns + v->rep_execs, pen = v->pen;
	if (tail) {
		insns -= tail->insns;
		pen -= tail->pen;
	}
	return insns * P.base_cpi_x100 + (pen + v->cyc) * 100 + (u64)v->adj;
}

static void events_of(unsigned vi, u64 ev[NR_MEV], const struct tb_counts *tail)
{
	for (int e = 0; e < NR_MEV; e++)
		ev[e] = vcpus[vi].ev[e] - (tail ? tail->ev[e] : 0);
	if (tail) {
		ev[EV_INSNS] -= tail->insns;
		ev[EV_CYC_PEN] -= tail->pen;
	}
}

/* The clock's parts (x100), less the rest of the running block (tail). */
static void parts_of(unsigned vi, int64_t p[NR_PART], const struct tb_counts *tail)
{
	u64 ev[NR_MEV];
	events_of(vi, ev, tail);
	p[PT_INSNS] = (int64_t)(ev[EV_INSNS] * P.base_cpi_x100);
	p[PT_PEN] = (int64_t)ev[EV_CYC_PEN] * 100;
	p[PT_CACHE] = (int64_t)ev[EV_CYC_CACHE] * 100;
	p[PT_TLB] = (int64_t)ev[EV_CYC_TLB] * 100;
	p[PT_REP] = (int64_t)ev[EV_CYC_REP] * 100;
	p[PT_IO] = (int64_t)ev[EV_CYC_IO] * 100;
	p[PT_WAIT] = vcpus[vi].part_wait;
	p[PT_IPI] = vcpus[vi].part_ipi;
}

/* ---- memory accesses ---- */

static u64 data_line(struct vcpu *v, unsigned vi, u64 line, bool store, bool count_access, bool rmw);

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
		cost += data_line(v, vi, pa >> LINE_SHIFT, false, false, false);
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
	if (page == v->last_page4k || (va >> 21) == v->last_page2m)
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
	v->last_page2m = r == TLB_L1_HIT && v->tlb.last_2m ? va >> 21 : ~0ull;
	return cost;
}

static u64 level_lat(struct vcpu *v, int lvl)
{
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
	case LVL_LLC_REMOTE:	/* the same link as a transfer from a core there */
		v->ev[EV_L1D_MISS]++;
		v->ev[EV_L2_MISS]++;
		v->ev[EV_LLC_REMOTE]++;
		return P.c2c_remote_lat;
	default:
		v->ev[EV_L1D_MISS]++;
		v->ev[EV_L2_MISS]++;
		v->ev[EV_LLC_MISS]++;
		return P.mem_lat;
	}
}

/* ---- across CPUs: a directory of modified lines, waits, IPIs (docs/COSTMODEL.md) ----
 *
 * Per line the directory keeps its modified owner (the last CPU that stored it, until
 * another CPU reads it or the owner's private caches drop it) and the last store: which
 * CPU, its clock then, and the store's place in the global order of stores (store_seq).
 * Sharers are the CPUs whose private L1d/L2 hold the line. The table is direct-mapped by
 * a hash of the line number: a line whose slot another line took is treated as modified
 * nowhere (deterministic, and rare among the few hot shared lines).
 */
struct dent {
	u64 tag;	/* line + 1; 0 = empty */
	u64 wclock;	/* x100: the writer's clock at the last store */
	u64 seq;	/* store_seq of the last store */
	u16 owner;	/* modified owner's slot + 1; 0 = clean (shared or nowhere) */
	u16 writer;	/* slot of the last store's CPU */
	/* A speed aid that prices nothing: bit (slot % 32) is set for every slot whose L1d or
	 * L2 may hold the line (a superset; all bits while unknown, i.e. since the entry was
	 * made). A store then looks only in those CPUs' caches for copies to invalidate. */
	u32 sharers;
};
_Static_assert(sizeof(struct dent) == 32, "two directory entries per host cache line");
#define DIR_BITS 22
static struct dent *dir;
static u64 store_seq;

/* The directory is 128 MiB touched at random: on 2 MiB host pages its lookups miss the
 * host's TLB far less (zeroed like calloc's memory; NULL when out of memory). */
static struct dent *dir_alloc(void)
{
	size_t len = sizeof(struct dent) << DIR_BITS, huge = (size_t)2 << 20;
	u8 *p = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	u8 *a = (u8 *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
	madvise(a, len, MADV_HUGEPAGE);	/* advice only: without it the table still works */
#endif
	return (struct dent *)a;
}

static inline u32 sharer_bit(unsigned slot)
{
	return 1u << (slot & 31);
}

static inline struct dent *dir_get(u64 line, bool create)
{
	struct dent *d = &dir[(line * 0x9E3779B97F4A7C15ull) >> (64 - DIR_BITS)];
	if (d->tag == line + 1)
		return d;
	if (!create)
		return NULL;
	memset(d, 0, sizeof(*d));
	d->tag = line + 1;
	d->sharers = ~0u;	/* CPUs may hold the line from before the entry existed */
	return d;
}

static inline unsigned socket_of(unsigned slot)
{
	return (unsigned)((slot / P.cores_per_socket) % P.sockets);
}

/* A line another CPU (o) holds modified, brought to CPU vi. */
static u64 c2c_price(struct vcpu *v, unsigned vi, unsigned o)
{
	v->ev[EV_C2C]++;
	if (socket_of(vi) != socket_of(o)) {
		v->ev[EV_C2C_REMOTE]++;
		return P.c2c_remote_lat;
	}
	return P.c2c_lat;
}

static inline bool holds(unsigned o, u64 line)
{
	struct vcpu *w = &vcpus[o];
	return w->live && (w->last_line == line || cache_contains(&w->l1, line) || cache_contains(&w->l2, line));
}

/* The clock other CPUs see a CPU's actions at: while it waits, the clock at the wait's
 * start; in the handler of an IPI it took while behind, shifted to the IPI's arrival. */
static inline u64 eff_clock(unsigned vi)
{
	struct vcpu *v = &vcpus[vi];
	return (v->waiting ? v->wait_clock : clock_of(vi, NULL)) + v->ipi_shift;
}

/* Sets the clock (x100) to t from now on, through the correction term, and books what
 * the clock's other parts do not explain (a wait puts the events back to its start) in
 * *part: the vCPU's part_wait or part_ipi. */
static void clock_set(unsigned vi, u64 t, int64_t *part)
{
	vcpus[vi].adj += (int64_t)t - (int64_t)clock_of(vi, NULL);
	int64_t p[NR_PART], sum = 0;
	parts_of(vi, p, NULL);
	for (int k = 0; k < NR_PART; k++)
		sum += p[k];
	*part += (int64_t)t - sum;
}

/* Ends a wait, first step: the events go back to their values at the wait's start (the
 * spin's own instructions, accesses and pauses are not counted). */
static inline void wait_events_back(struct vcpu *v)
{
	memcpy(v->ev, v->wait_ev, sizeof(v->ev));
	v->waiting = false;
}

/* Ends a wait, second step: the clock becomes max(clock at the wait, t) + cost. */
static void wake_to(unsigned vi, u64 t, u64 cost)
{
	struct vcpu *v = &vcpus[vi];
	t = t > v->ipi_shift ? t - v->ipi_shift : 0;	/* into this CPU's own clock */
	u64 c = (t > v->wait_clock ? t : v->wait_clock) + cost * 100;
	v->ev[EV_WAIT]++;
	v->ev[EV_WAIT_CYCLES] += (c - v->wait_clock) / 100;
	clock_set(vi, c, &v->part_wait);
}

/* The running CPU takes the interrupt of an IPI sent to it, which cannot start before the
 * sender's ICR write + ipi_latency. A halted CPU (its clock has not moved since its HLT)
 * and a waiting one (its clock stands at its wait's start) idled until then: their clocks
 * move there. A CPU that was running did not wait: its clock stays, and until its IRET
 * what it does is seen by the others as if it had started at the IPI's arrival
 * (ipi_shift, in eff_clock); counted as ipi_behind. */
static void take_ipi(unsigned vi)
{
	struct vcpu *v = &vcpus[vi];
	v->ipi_pending = false;
	u64 now;
	bool idle = v->halted || v->waiting;
	if (v->waiting) {
		wait_events_back(v);
		now = v->wait_clock;
		clock_set(vi, now, &v->part_wait);
	} else {
		now = clock_of(vi, NULL);
	}
	u64 seen = now + v->ipi_shift;
	if (v->ipi_at <= seen)
		return;
	if (idle) {
		v->ev[EV_IPI_WAIT_CYCLES] += (v->ipi_at - seen) / 100;
		clock_set(vi, v->ipi_at - v->ipi_shift, &v->part_ipi);
	} else {
		v->ev[EV_IPI_BEHIND]++;
		v->ev[EV_IPI_BEHIND_CYCLES] += (v->ipi_at - seen) / 100;
		v->ipi_shift = v->ipi_at - now;
	}
}

/* Drops every other CPU's copy of the line (a store or an atomic takes it). Returns true
 * if another CPU's L1d or L2 held one. */
static bool inval_others(struct vcpu *v, unsigned vi, u64 line, struct dent *d)
{
	bool shared = false;
	/* no other CPU ran since this CPU's last store to the same line: nobody can have it */
	if (line != v->inval_line || switches != v->inval_epoch) {
		v->inval_line = line;
		v->inval_epoch = switches;
		/* only the CPUs the entry names can hold a copy: the others would find none */
		for (u32 m = d->sharers; m; m &= m - 1) {
			for (unsigned k = (unsigned)__builtin_ctz(m); k < max_vcpus; k += 32) {
				struct vcpu *w = &vcpus[k];
				if (k == vi || !w->live)
					continue;
				bool a = cache_invalidate(&w->l1, line), b = cache_invalidate(&w->l2, line);
				if (a || b || w->last_line == line) {
					shared = true;
					v->ev[EV_COH_INVAL]++;
					if (w->last_line == line)
						w->last_line = ~0ull;
				}
			}
		}
		d->sharers = 0;	/* every other copy is gone */
		for (unsigned i = 0; i < nllc; i++)	/* other sockets' LLCs too */
			if (&llcs[i] != v->h.llc)
				cache_invalidate(&llcs[i], line);
	}
	d->sharers |= sharer_bit(vi);
	return shared;
}

/* A load starts here: remember the clock, the store count and the parts, so that a spin
 * whose check this load was can start its wait at it (pause_cb). */
static inline void note_load(struct vcpu *v, unsigned vi)
{
	if (v->waiting)
		return;
	v->ld_clock = clock_of(vi, NULL);
	v->ld_seq = store_seq;
	for (int k = 0; k < NR_PEV; k++)
		v->ld_pev[k] = v->ev[part_ev[k]];
}

/* This CPU's own hierarchy: the level that holds @line, or -1 for the line of the
 * previous access (an L1 hit without a lookup). */
static inline int hier_level(struct vcpu *v, u64 line)
{
	if (line == v->last_line)
		return -1;
	v->last_line = line;
	return hier_access(&v->h, line);
}

/* The latency of that level, counting its misses (so after a wait's events are undone). */
static inline u64 hier_lat(struct vcpu *v, int lvl)
{
	return lvl < 0 ? P.l1d_lat : level_lat(v, lvl);
}

/* Taking @line for ownership (a store, an atomic's read for ownership) on top of @cost,
 * the own hierarchy's: a transfer from @o when it held the line modified, an RFO (at least
 * the LLC's latency) when other CPUs only shared it. */
static inline u64 ownership_cost(struct vcpu *v, unsigned vi, unsigned o, bool remote_m,
				 bool shared, u64 cost)
{
	if (remote_m)
		return c2c_price(v, vi, o);
	if (shared) {
		v->ev[EV_RFO_INVAL]++;
		if (cost < P.llc_lat)
			cost = P.llc_lat;
	}
	return cost;
}

/* QEMU ran the writer first, but its store comes later in modelled time: the access
 * returns no earlier than that store + the transfer (counted as a wait), as on hardware,
 * where the reader would have spun until then. causal=off (the model before this rule)
 * lets the read see the future: docs/COSTMODEL.md. Returns 0 (the cost is in the clock). */
static inline u64 causal_wait(struct vcpu *v, unsigned vi, const struct dent *d, u64 cost)
{
	u64 t = d->wclock + cost * 100;
	v->ev[EV_WAIT]++;
	v->ev[EV_WAIT_CYCLES] += (t - eff_clock(vi)) / 100;
	clock_set(vi, t - v->ipi_shift, &v->part_wait);
	return 0;
}

/* The load half of an atomic (lock prefix, xchg): a read for ownership. It takes the line
 * exclusive in one transaction: a line another CPU holds modified costs one transfer, a
 * line others share an RFO, and every other copy is gone, so the store half that follows
 * is an L1 hit. Otherwise a load: it ends a wait and reads causally like one. */
static u64 rmw_load_multi(struct vcpu *v, unsigned vi, u64 line)
{
	note_load(v, vi);
	struct dent *d = dir_get(line, true);
	unsigned o = d->owner ? d->owner - 1u : vi;
	bool remote_m = o != vi && holds(o, line);
	bool wake = v->waiting && d->writer != vi && d->seq > v->wait_seq;
	bool shared = inval_others(v, vi, line, d);
	if (wake)
		wait_events_back(v);
	u64 cost = ownership_cost(v, vi, o, remote_m, shared, hier_lat(v, hier_level(v, line)));
	d->owner = (u16)(vi + 1);	/* exclusive now; the store half makes it modified */
	if (wake) {
		wake_to(vi, d->wclock, cost);
		return 0;	/* the transfer is in the clock already */
	}
	if (v->waiting && (remote_m || shared)) {
		/* an atomic on a line other CPUs hold: the CPU has stopped spinning */
		wait_events_back(v);
		wake_to(vi, 0, 0);
	} else if (causal && !v->waiting && remote_m && d->wclock > eff_clock(vi)) {
		return causal_wait(v, vi, d, cost);	/* a store from this CPU's future */
	}
	return cost;
}

/* The cache part of one access with several vCPUs: MESI-like through the directory. A
 * load of a line another CPU holds modified pays a core-to-core transfer and leaves the
 * line shared; a store invalidates the other copies, paying the transfer when another
 * CPU held the line modified, an RFO (at least the LLC's latency) when others only shared
 * it. A waiting CPU wakes at a load of a line another CPU stored after the wait began. */
static u64 data_line_multi(struct vcpu *v, unsigned vi, u64 line, bool store)
{
	if (!store) {
		note_load(v, vi);
		int lvl = hier_level(v, line);
		struct dent *d = lvl >= LVL_LLC ? dir_get(line, false) : NULL;
		if (!d)
			return hier_lat(v, lvl);
		/* a fill into this CPU's L1d/L2 (an L2 hit was such a fill before) */
		d->sharers |= sharer_bit(vi);
		bool wake = v->waiting && d->writer != vi && d->seq > v->wait_seq;
		if (wake)
			wait_events_back(v);
		u64 cost = hier_lat(v, lvl);
		unsigned o = d->owner ? d->owner - 1u : vi;
		bool c2c = o != vi && holds(o, line);
		if (c2c)
			cost = c2c_price(v, vi, o);
		d->owner = 0;	/* shared now (the owner keeps its copy) */
		if (causal && !wake && !v->waiting && c2c && d->wclock > eff_clock(vi))
			return causal_wait(v, vi, d, cost);
		if (!wake)
			return cost;
		wake_to(vi, d->wclock, cost);
		return 0;	/* the transfer is in the clock already */
	}
	struct dent *d = dir_get(line, true);
	unsigned o = d->owner ? d->owner - 1u : vi;
	bool remote_m = o != vi && holds(o, line);
	bool shared = inval_others(v, vi, line, d);
	if (v->waiting && (remote_m || shared)) {
		/* a store to a line other CPUs hold: the CPU has stopped spinning */
		wait_events_back(v);
		wake_to(vi, 0, 0);
	}
	u64 cost = ownership_cost(v, vi, o, remote_m, shared, hier_lat(v, hier_level(v, line)));
	d->owner = (u16)(vi + 1);
	d->writer = (u16)vi;
	d->seq = ++store_seq;
	d->wclock = eff_clock(vi);
	return cost;
}

/* The cache part of one access (rmw: the load half of an atomic); with one vCPU just the
 * hierarchy. Returns cycles. */
static u64 data_line(struct vcpu *v, unsigned vi, u64 line, bool store, bool count_access, bool rmw)
{
	if (count_access)
		v->ev[EV_MEM_ACCESS]++;
	if (multi)
		return rmw && !store ? rmw_load_multi(v, vi, line) : data_line_multi(v, vi, line, store);
	return hier_lat(v, hier_level(v, line));
}

/* A wait that ends with no load that explains it (a marker, a HLT): nothing of the spin is
 * charged. */
static void wait_abandon(unsigned vi)
{
	struct vcpu *v = &vcpus[vi];
	if (!v->waiting)
		return;
	wait_events_back(v);
	clock_set(vi, v->wait_clock, &v->part_wait);
}

/* PAUSE (multi): the CPU spins. Its wait starts at its last load before the pause (the
 * check that failed), so a figure does not depend on how many rounds of the spin QEMU's
 * round-robin happened to run; a load that long ago (more than 2000 cycles: a pause that
 * is no spin on memory) is not used. */
static void pause_cb(unsigned vi, void *ud)
{
	(void)ud;
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	if (v->waiting)
		return;
	u64 now = clock_of(vi, NULL);
	v->waiting = true;
	v->wait_clock = now - v->ld_clock <= 2000 * 100 ? v->ld_clock : now;
	v->wait_seq = v->ld_seq;
	memcpy(v->wait_ev, v->ev, sizeof(v->ev));
	if (v->wait_clock == v->ld_clock)	/* the clock's parts as they were at that load */
		for (int k = 0; k < NR_PEV; k++)
			v->wait_ev[part_ev[k]] = v->ld_pev[k];
}

static void hlt_cb(unsigned vi, void *ud)
{
	(void)ud;
	vi = cur(vi);
	wait_abandon(vi);
	vcpus[vi].halted = true;
}

/* IRET (multi): the end of the handler of an IPI taken while behind (take_ipi). */
static void iret_cb(unsigned vi, void *ud)
{
	(void)ud;
	vcpus[cur(vi)].ipi_shift = 0;
}

/* WRMSR (multi): an x2APIC ICR write (MSR 0x830) sends an IPI; the destination's next
 * block (the handler, or the wake from HLT) starts no earlier than now + ipi_latency.
 * Destination: EDX (physical x2APIC ID = slot), or the shorthand in ICR bits 18-19.
 * A GS_BASE write (MSR 0xc0000101) moves the writer's slot to the new base. */
static void send_ipi(unsigned vi, u32 icr_lo, u32 dest, bool x2);

static void wrmsr_cb(unsigned vi, void *ud)
{
	(void)ud;
	vi = cur(vi);
	u64 ecx, eax, edx;
	if (!read_reg(reg_gpr[1], &ecx) || ((u32)ecx != 0x830 && (u32)ecx != 0xc0000101))
		return;
	if (!read_reg(reg_gpr[0], &eax) || !read_reg(reg_gpr[2], &edx))
		return;
	if ((u32)ecx == 0x830) {
		send_ipi(vi, (u32)eax, (u32)edx, true);
		return;
	}
	/* runs before the instruction: gs_base still holds the old base, if any */
	u64 nb = (edx << 32) | (u32)eax, old;
	if (!(nb >> 63) || !read_reg(reg_gs_base, &old))
		return;
	unsigned s = ident_rebase(&ident, old >> 63 ? old : 0, nb);
	if (trace_ident && s < ident.n)
		out_line("BAREMM-MODEL-TRACE ident move slot=%u base=0x%llx from=0x%llx", s, (unsigned long long)nb,
			 (unsigned long long)old);
}

/* An ICR write by CPU vi: icr_lo's bits 18-19 are the shorthand, dest the destination
 * when there is none: the APIC ID (= slot), or logical IDs when ICR bit 11 says so. */
static void send_ipi(unsigned vi, u32 icr_lo, u32 dest, bool x2)
{
	u64 at = eff_clock(vi) + P.ipi_latency * 100;
	unsigned sh = (icr_lo >> 18) & 3;
	bool logical = icr_lo & (1u << 11);
	for (unsigned t = 0; t < max_vcpus; t++) {
		bool hit;
		if (sh == 0)
			hit = logical ? apic_logical_hit(x2, t, vcpus[t].xapic_ldr, vcpus[t].xapic_dfr, dest) : t == dest;
		else
			hit = sh == 1 ? t == vi : sh == 2 ? true : t != vi;
		if (!hit || !vcpus[t].live)
			continue;
		struct vcpu *w = &vcpus[t];
		if (!w->ipi_pending || at < w->ipi_at)
			w->ipi_at = at;
		w->ipi_pending = true;
		vcpus[vi].ev[EV_IPI_SENT]++;
	}
}

static void pac_flush(struct vcpu *v)
{
	memset(v->pac_v, 0xff, sizeof(v->pac_v));
}

/* The physical address of an access; false for I/O (MMIO) */
static inline bool phys_of(struct vcpu *v, qemu_plugin_meminfo_t info, u64 va, u64 *pa)
{
	u64 key = va >> 12;
	unsigned i = key & 63;
	if (v->paging && v->pac_v[i] == key) {
		u64 e = v->pac_p[i];
		*pa = (e & ~0xfffull) | (va & 0xfff);
		return !(e & 1);
	}
	struct qemu_plugin_hwaddr *h = qemu_plugin_get_hwaddr(info, va);
	if (!h)
		return false;
	bool io = qemu_plugin_hwaddr_is_io(h);
	*pa = qemu_plugin_hwaddr_phys_addr(h);
	if (v->paging) {
		v->pac_v[i] = key;
		v->pac_p[i] = (*pa & ~0xfffull) | io;
	}
	return !io;
}

/* ud: non-NULL for an atomic instruction's accesses */
static void mem_cb(unsigned vi, qemu_plugin_meminfo_t info, uint64_t va, void *ud)
{
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	u64 pa = ~0ull;
	if (!phys_of(v, info, va, &pa)) {
		v->ev[EV_IO]++;
		v->ev[EV_CYC_IO] += P.mem_lat;
		v->cyc += P.mem_lat;
		/* xAPIC: a store to ICR high (0xfee00310) holds the destination, one to ICR low
		 * (0xfee00300) sends; LDR (0xd0) and DFR (0xe0) say who a logical one reaches */
		if (multi && (pa & ~0xfffull) == 0xfee00000ull && qemu_plugin_mem_is_store(info)) {
			qemu_plugin_mem_value mv = qemu_plugin_mem_get_value(info);
			u32 x = mv.type == QEMU_PLUGIN_MEM_VALUE_U64 ? (u32)mv.data.u64 : mv.data.u32;
			switch (pa & 0xfff) {
			case 0x310:
				v->xapic_icr_hi = x;
				break;
			case 0x300:
				send_ipi(vi, x, v->xapic_icr_hi >> 24, false);
				break;
			case 0x0d0:
				v->xapic_ldr = x;
				break;
			case 0x0e0:
				v->xapic_dfr = x;
				break;
			}
		}
		return;
	}
	u64 t = translate(v, vi, va);
	u64 d = data_line(v, vi, pa >> LINE_SHIFT, qemu_plugin_mem_is_store(info), true, ud != NULL);
	v->ev[EV_CYC_TLB] += t;
	v->ev[EV_CYC_CACHE] += d;
	v->cyc += t + d;
}

/* A rep string instruction: counted once per execution (QEMU may run its exec callback
 * once per iteration: iterations leave the inline instruction counter unchanged, any other
 * instruction in between moves it). */
static void rep_exec_cb(unsigned vi, void *ud)
{
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	u64 n = v->insns;
	if (v->rep_insn != ud || v->rep_mark != n) {
		v->rep_insn = ud;
		v->rep_mark = n;
		v->rep_execs++;
		v->ev[EV_INSNS]++;
		rep_filter_reset(&v->rep);
	}
}

/* A rep string access: priced per distinct cache line, not per iteration (the filter in
 * model.h). */
static void rep_mem_cb(unsigned vi, qemu_plugin_meminfo_t info, uint64_t va, void *ud)
{
	(void)ud;
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	u64 pa;
	if (!phys_of(v, info, va, &pa)) {
		v->ev[EV_IO]++;
		v->ev[EV_CYC_IO] += P.mem_lat;
		v->cyc += P.mem_lat;
		return;
	}
	u64 line = pa >> LINE_SHIFT;
	if (!rep_filter_new(&v->rep, line))
		return;
	v->ev[EV_REP_LINES]++;
	u64 t = translate(v, vi, va);
	u64 lat = data_line(v, vi, line, qemu_plugin_mem_is_store(info), true, false);
	u64 r = P.rep_line + (lat == P.mem_lat ? P.rep_mem_line : 0);
	v->ev[EV_CYC_TLB] += t;
	v->ev[EV_CYC_REP] += r;
	v->cyc += t + r;
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
		pac_flush(v);
		v->last_page4k = v->last_page2m = ~0ull;
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
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	refresh_paging(v);	/* the values before this instruction */
	pac_flush(v);
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
		v->last_page4k = v->last_page2m = ~0ull;
		return;
	}
	if ((ti->info.kind == INSN_INVLPG || ti->info.kind == INSN_INVPCID) && ti->info.has_mem) {
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
		v->last_page4k = v->last_page2m = ~0ull;
		if (ti->info.kind == INSN_INVLPG) {
			tlb_invlpg(&v->tlb, a);
			return;
		}
		/* INVPCID (PCIDs are not modelled: every type acts on the one address space) */
		u64 type, desc[2];
		if (ti->info.gpr < 0 || !read_reg(reg_gpr[ti->info.gpr], &type))
			return;
		if (type == 0) {
			if (read_guest(a, desc, sizeof(desc)))
				tlb_invlpg(&v->tlb, desc[1]);
			else
				tlb_flush(&v->tlb, true);
		} else {
			tlb_flush(&v->tlb, type != 2);
			if (type == 2)
				v->ev[EV_TLB_FLUSH_ALL]++;
		}
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
	/* the parts of the median run (of the two middle runs' mean when n is even), so that
	 * they add up to the median */
	unsigned idx[MAX_RUNS];
	for (unsigned i = 0; i < n; i++) {
		unsigned j = i;
		for (; j > 0 && va->runs[idx[j - 1]] > va->runs[i]; j--)
			idx[j] = idx[j - 1];
		idx[j] = i;
	}
	for (int k = 0; k < NR_PART && len < (int)sizeof(line) - 64; k++) {
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

static void hello(void)
{
	if (hello_done)
		return;
	hello_done = true;
	char d[2048];
	profile_describe(&P, d, sizeof(d));
	out_line("BAREMM-MODEL %s plugin_api=%d physmap=0x%llx%s", d, api_cur, (unsigned long long)physmap,
		 causal ? "" : " causal=off");
}

static void marker_cb(unsigned vi, void *ud)
{
	const struct marker *mk = ud;
	unsigned cmd = mk->cmd;
	const struct tb_counts *tail = &mk->tail;
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	u64 a0 = 0, a1 = 0, a2 = 0, ev[NR_MEV];
	if (multi)
		wait_abandon(vi);
	switch (cmd) {
	case CMD_REGION_BEGIN:
		v->in_region = true;
		v->r_clock = clock_of(vi, tail);
		events_of(vi, v->r_ev, tail);
		parts_of(vi, v->r_part, tail);
		return;
	case CMD_REGION_END:
		if (!v->in_region) {
			out_line("BAREMM-MODEL-ERROR vcpu=%u reason=region_end_without_begin", vi);
			return;
		}
		v->in_region = false;
		v->acc_clock += clock_of(vi, tail) - v->r_clock;
		events_of(vi, ev, tail);
		for (int e = 0; e < NR_MEV; e++)
			v->acc_ev[e] += ev[e] - v->r_ev[e];
		int64_t pt[NR_PART];
		parts_of(vi, pt, tail);
		for (int k = 0; k < NR_PART; k++)
			v->acc_part[k] += pt[k] - v->r_part[k];
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
		for (int k = 0; k < NR_PART; k++) {
			round_part[k] += v->acc_part[k] * 100 / (int64_t)ops;	/* per op, x10000 */
			v->acc_part[k] = 0;
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

static void count_penalty(struct tb_counts *c, u64 cycles, int ev)
{
	c->pen += cycles;
	if (ev >= 0) {
		c->ev[ev]++;
		c->evmask |= 1u << ev;
	}
}

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n);
	if (!p) {
		fprintf(stderr, "costmodel: out of memory\n");
		abort();
	}
	return p;
}

#define MAX_TB_INSNS 512

/*
 * Prices the block's instructions once, at translation. Counts and fixed penalties are
 * added by one callback when the block runs (an exception in the middle of a block
 * therefore counts the rest of it too; a marker subtracts the part of its block that
 * follows it). Inline per-vCPU counters would be cheaper, but QEMU 10.0 generates wrong
 * scoreboard addresses for them when several vCPUs share one thread (round-robin TCG,
 * which -icount implies): a 2-vCPU guest crashes in generated code.
 */
static void tb_trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	if (n > MAX_TB_INSNS)
		n = MAX_TB_INSNS;
	struct tb_counts per[MAX_TB_INSNS];
	struct insn_info infos[MAX_TB_INSNS];
	struct qemu_plugin_insn *insns[MAX_TB_INSNS];
	struct tb_counts *total = xmalloc(sizeof(*total));
	bool any_marker = false;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		insns[i] = insn;
		u8 bytes[16];
		size_t len = qemu_plugin_insn_data(insn, bytes, sizeof(bytes));
		struct insn_info *info = &infos[i];
		decode_insn(bytes, len, info);
		struct tb_counts *c = &per[i];
		memset(c, 0, sizeof(*c));
		if (info->kind == INSN_REP_STRING) {
			/* counted once per execution by rep_exec_cb, priced per line */
			qemu_plugin_register_vcpu_insn_exec_cb(insn, rep_exec_cb, QEMU_PLUGIN_CB_NO_REGS, insn);
			qemu_plugin_register_vcpu_mem_cb(insn, rep_mem_cb, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
			continue;
		}
		c->insns = 1;
		static char atomic_tag;	/* mem_cb's userdata for an atomic's accesses */
		qemu_plugin_register_vcpu_mem_cb(insn, mem_cb, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
						 info->kind == INSN_ATOMIC ? &atomic_tag : NULL);
		switch (info->kind) {
		case INSN_MARKER:
			any_marker = true;
			break;
		case INSN_ATOMIC:
			count_penalty(c, P.atomic, EV_ATOMIC);
			break;
		case INSN_CPUID:
			count_penalty(c, P.cpuid, EV_SERIALISE);
			break;
		case INSN_WRMSR:
			count_penalty(c, P.wrmsr, EV_SERIALISE);
			if (multi)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, wrmsr_cb, QEMU_PLUGIN_CB_R_REGS, NULL);
			break;
		case INSN_DESC_LOAD:
			count_penalty(c, P.serialise, EV_SERIALISE);
			break;
		case INSN_IRET:
			count_penalty(c, P.irq_roundtrip, EV_IRET);
			if (multi)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, iret_cb, QEMU_PLUGIN_CB_NO_REGS, NULL);
			break;
		case INSN_FENCE:
			count_penalty(c, P.fence, EV_FENCE);
			break;
		case INSN_HLT:
			count_penalty(c, P.hlt, EV_HLT);
			if (multi)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, hlt_cb, QEMU_PLUGIN_CB_NO_REGS, NULL);
			break;
		case INSN_PAUSE:
			count_penalty(c, P.pause, EV_PAUSE);
			if (multi)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, pause_cb, QEMU_PLUGIN_CB_NO_REGS, NULL);
			break;
		case INSN_MOV_CR:
		case INSN_INVLPG:
		case INSN_INVPCID: {
			count_penalty(c, info->kind == INSN_MOV_CR ? P.mov_cr : P.invlpg, EV_SERIALISE);
			if (info->kind != INSN_MOV_CR)
				count_penalty(c, 0, EV_INVLPG);
			/* kept as long as QEMU keeps the translation: never freed */
			struct tlb_insn *ti = xmalloc(sizeof(*ti));
			ti->info = *info;
			ti->va = qemu_plugin_insn_vaddr(insn);
			qemu_plugin_register_vcpu_insn_exec_cb(insn, tlb_insn_cb, QEMU_PLUGIN_CB_R_REGS, ti);
			break;
		}
		default:
			break;
		}
	}
	for (size_t i = 0; i < n; i++) {
		total->insns += per[i].insns;
		total->pen += per[i].pen;
		total->evmask |= per[i].evmask;
		for (int e = 0; e < NR_MEV; e++)
			total->ev[e] = (u16)(total->ev[e] + per[i].ev[e]);
	}
	if (total->insns || total->pen || multi)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_cb, QEMU_PLUGIN_CB_NO_REGS, total);
	else
		free(total);
	if (!any_marker)
		return;
	/* markers: the counts of the instructions after each one in this block */
	struct tb_counts tail;
	memset(&tail, 0, sizeof(tail));
	for (size_t k = n; k-- > 0;) {
		if (infos[k].kind == INSN_MARKER) {
			struct marker *mk = xmalloc(sizeof(*mk));
			mk->cmd = infos[k].marker_cmd;
			mk->tail = tail;
			qemu_plugin_register_vcpu_insn_exec_cb(insns[k], marker_cb, QEMU_PLUGIN_CB_R_REGS, mk);
		}
		tail.insns += per[k].insns;
		tail.pen += per[k].pen;
		for (int e = 0; e < NR_MEV; e++)
			tail.ev[e] = (u16)(tail.ev[e] + per[k].ev[e]);
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
			else if (!strcmp(d[i].name, "k_gs_base"))
				reg_k_gs_base = d[i].handle;
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
	v->h = (struct hierarchy){ &v->l1, &v->l2, &llcs[nllc > 1 ? socket_of(vi) : 0], llcs, nllc };
	v->last_line = v->last_page4k = v->last_page2m = ~0ull;
	v->inval_line = ~0ull;
	v->xapic_dfr = ~0u;	/* the xAPIC's reset value: flat model */
	pac_flush(v);
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
	if (trace_ident)
		out_line("BAREMM-MODEL-TRACE ident switches=%llu unclaimed=%llu", (unsigned long long)switches,
			 (unsigned long long)ident.unclaimed);
	for (unsigned vi = 0; vi < max_vcpus; vi++) {
		if (!vcpus[vi].live)
			continue;
		u64 ev[NR_MEV];
		events_of(vi, ev, NULL);
		char line[2048];
		int len = snprintf(line, sizeof(line), "BAREMM-MODEL-TOTAL vcpu=%u insns=%llu cycles=%llu", vi,
				   (unsigned long long)(vcpus[vi].insns + vcpus[vi].rep_execs),
				   (unsigned long long)(clock_of(vi, NULL) / 100));
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
		} else if (!strcmp(argv[i], "trace=ident")) {
			trace_ident = true;
		} else if (!strcmp(argv[i], "causal=on") || !strcmp(argv[i], "causal=off")) {
			causal = argv[i][7] == 'o' && argv[i][8] == 'n';
		} else {
			fprintf(stderr,
				"costmodel: unknown argument '%s' (profile=FILE, physmap=ADDR, out=FILE, causal=on|off, "
				"trace=ident)\n",
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
	if (max_vcpus > 256) {
		fprintf(stderr, "costmodel: at most 256 vCPUs\n");
		return -1;
	}
	multi = max_vcpus > 1;
	ident_init(&ident, max_vcpus);
	vcpus = calloc(max_vcpus, sizeof(*vcpus));
	if (multi)
		dir = dir_alloc();
	/* an LLC per socket (CCD) with vCPUs: CPU n uses socket_of(n)'s */
	u64 used = (max_vcpus + P.cores_per_socket - 1) / P.cores_per_socket;
	nllc = (unsigned)(used < P.sockets ? used : P.sockets);
	llcs = calloc(nllc, sizeof(*llcs));
	bool llc_ok = llcs != NULL;
	for (unsigned i = 0; llc_ok && i < nllc; i++)
		llc_ok = !cache_init(&llcs[i], P.llc_kib, P.llc_ways);
	if (!vcpus || (multi && !dir) || !llc_ok) {
		fprintf(stderr, "costmodel: out of memory\n");
		return -1;
	}
	regbuf = g_byte_array_new();
	membuf = g_byte_array_new();
	qemu_plugin_register_vcpu_init_cb(id, vcpu_init_cb);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans_cb);
	qemu_plugin_register_atexit_cb(id, atexit_cb, NULL);
	return 0;
}
