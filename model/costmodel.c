/*
 * baremm's cycle-cost model, a QEMU TCG plugin (docs/COSTMODEL.md): the QEMU glue.
 *
 *   qemu-system-x86_64 ... -icount shift=0,sleep=off,align=off \
 *       -plugin build/model/costmodel.so,profile=model/profiles/skylake-sp.cfg[,physmap=0x..][,out=PATH][,causal=off][,prefetch=on]
 *
 * Per vCPU: clock = instructions x base_cpi + penalties (clock.c). Instructions and fixed
 * penalties (atomics, serialising instructions, IRET, ...) are summed per translation
 * block at translation time and added by one callback per executed block (QEMU 10.0's
 * inline per-vCPU counters cannot be used: see tb_trans_cb); every memory access goes
 * through a callback that prices the TLB lookup (with a page walk through the caches on a
 * miss) and the cache access (coherence.c, which also prices what other CPUs do to the
 * line). Guest marker instructions (nopl 0x4d4dCCCC(%rax)) bracket timed regions and make
 * the protocol (protocol.c) print BAREMM-RESULT lines in model cycles.
 *
 * This file holds what needs QEMU: the callbacks, register and memory reads, and which
 * vCPU is running; it calls the other rooms from the running vCPU's callbacks only.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/qemu_plugin_api.h"
#include "arch/x86_64/costmodel.h"	/* the marker commands */
#include "model/model.h"
#include "model/clock.h"
#include "model/coherence.h"
#include "model/protocol.h"
#include "model/core.h"

QPAPI_EXPORT int qemu_plugin_version = BAREMM_QEMU_PLUGIN_VERSION;

/* One translated instruction as the out-of-order core sees it (core=ooo), and as the
 * callbacks of its accesses and of the instruction itself find it (their userdata). */
struct tb_insn {
	struct core_op op;
	u64 va;
	u64 target;		/* a direct branch's destination (has_target) */
	u16 idx;		/* its place in the block */
	u8 len;
	u8 kind;		/* enum insn_kind */
	bool atomic;		/* its accesses are an atomic's (the load half reads for ownership) */
	bool is_branch, is_cond, has_target;
};

/* What a translation block carries to its exec callback. */
struct tb_data {
	struct tb_counts c;	/* counts and penalties, added when it runs */
	u64 pc;			/* its first instruction's address */
	u32 n;			/* instructions in ins[] */
	struct tb_insn ins[];
};

struct marker {
	u16 cmd;
	const struct tb_insn *at;	/* the marker instruction */
	struct tb_counts tail;	/* the block's instructions after the marker */
};

/* An instruction's accesses, kept until the core is given the instruction (core=ooo). */
#define MAX_INSN_ACC 8

/* What the glue keeps of a vCPU; touched only from that vCPU's callbacks. Its coherence
 * state is coh.cpu[slot] (coherence.h). */
struct vcpu {
	struct cpu_acct a;	/* the clock's terms and the events (clock.h) */
	struct cache l1, l2;	/* private; its LLC is coherence's */
	struct tlb tlb;
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
	u64 rep_stored, rep_read;	/* distinct lines of this execution */
	u64 rep_fill_x100;	/* the fill prices of its lines (rep_fill_x100()) */
	u64 rep_priced;		/* cycles charged for its stream so far */
	/* paging state */
	bool cr3_known, cr4_known, cr0_known;
	u64 cr3, cr4, cr0;
	bool paging;		/* CR0.PG and CR4.PAE: 4-level translation is modelled */
	/* core=ooo: the block running, how far the core has been given it, and the
	 * accesses (and rep string and MMIO cycles) of the instruction not yet given */
	struct core *core;
	const struct tb_data *pend;
	unsigned pend_next;
	unsigned nacc;
	struct core_mem acc[MAX_INSN_ACC];
	u64 rep_tlb, rep_cyc, io_cyc;
	bool rep_open;		/* a rep string instruction was given and may still iterate */
};

static struct profile P;
static struct vcpu *vcpus;
static unsigned max_vcpus;
static u64 physmap = 0xffff888000000000ull;
static bool causal = true;	/* a load cannot see a store from its future (coherence.c); causal=off drops it */
static bool prefetch;		/* the L2 stream prefetchers (prefetch.c) fill lines ahead: prefetch=on,
				 * or by default under core=ooo (the in-order core's figures predate it) */
static bool ooo;		/* core=ooo: the out-of-order core (core.c) is the clock */
static struct core_params CP;
static GByteArray *regbuf, *membuf;
/* register handles, looked up once (x86_64 gdb names) */
static struct qemu_plugin_register *reg_gpr[16], *reg_cr0, *reg_cr3, *reg_cr4, *reg_fs_base, *reg_gs_base,
	*reg_k_gs_base;
static const char *const gpr_names[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

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

/* ---- the out-of-order core's feed (core=ooo) ----
 *
 * The core is given each instruction after it ran, with its accesses as the hierarchy
 * priced them, in program order: the accesses of instruction i arrive in its memory
 * callbacks, so instructions before i are given to the core when i's first access, or
 * any callback that reads the clock at i (a marker, PAUSE, HLT, IRET, WRMSR, a
 * TLB-changing instruction), comes; the last one of a block when the next block starts,
 * which is also when a branch's outcome is known. A CPU in a pause-spin wait gives the
 * core nothing: its clock moves when the wait ends (coherence.c), as the in-order one's
 * does.
 */

/* A rep string instruction runs as one block per iteration (QEMU re-enters it), so the
 * core is given it once per execution, with every iteration's lines, when the execution
 * is over: when anything else is given, a new execution starts, or the clock is read. */
static void flush_rep(struct vcpu *v)
{
	if (!v->rep_open)
		return;
	v->rep_open = false;
	/* microcoded: priced per line as a whole, like the in-order core */
	if (v->rep_tlb)
		core_fixed(v->core, v->rep_tlb, CORE_PART_TLB, 0);
	core_fixed(v->core, v->rep_cyc, CORE_PART_REP, 0);
	v->rep_tlb = v->rep_cyc = 0;
}

static void feed_one(struct vcpu *v, unsigned vi, const struct tb_insn *ti, const struct core_branch *br)
{
	struct core *c = v->core;
	if (multi && coh.cpu[vi].waiting) {
		v->nacc = 0;
		v->rep_tlb = v->rep_cyc = v->io_cyc = 0;
		v->rep_open = false;
		return;
	}
	if (ti->kind == INSN_REP_STRING) {
		v->rep_open = true;
		return;
	}
	flush_rep(v);
	if (v->io_cyc) {	/* uncacheable: in order, after everything older */
		core_fixed(c, v->io_cyc, CORE_PART_IO, CORE_FIX_DRAIN);
		v->io_cyc = 0;
	}
	switch (ti->kind) {
	case INSN_PAUSE:
		core_fixed(c, P.pause, CORE_PART_PEN, 0);
		break;
	case INSN_HLT:
		core_fixed(c, P.hlt, CORE_PART_PEN, CORE_FIX_DRAIN);
		break;
	default:
		core_insn(c, &ti->op, v->acc, v->nacc, br);
		break;
	}
	v->nacc = 0;
}

/* Gives the core the running block's instructions before index upto. */
static inline void catch_up(struct vcpu *v, unsigned vi, unsigned upto)
{
	const struct tb_data *b = v->pend;
	if (!b)
		return;
	while (v->pend_next < upto)
		feed_one(v, vi, &b->ins[v->pend_next++], NULL);
}

/* The running block ends; next_pc is where execution went on. */
static void finish_block(struct vcpu *v, unsigned vi, u64 next_pc)
{
	const struct tb_data *b = v->pend;
	if (!b)
		return;
	if (b->n) {
		catch_up(v, vi, b->n - 1);
		const struct tb_insn *ti = &b->ins[b->n - 1];
		u64 fall = ti->va + ti->len;
		struct core_branch br = { ti->va, next_pc, fall, next_pc != fall };
		/* somewhere a direct branch or straight-line code cannot go: an interrupt or an
		 * exception came between the blocks */
		bool irq = ti->is_branch ? ti->has_target && next_pc != ti->target && next_pc != fall
					 : next_pc != fall;
		bool rep_again = ti->kind == INSN_REP_STRING && next_pc == ti->va;
		if (rep_again)	/* its next iteration, not an interrupt */
			irq = false;
		if (ti->is_branch && ti->has_target && !ti->is_cond)
			br.target = ti->target;
		v->pend_next = b->n;
		feed_one(v, vi, ti, ti->is_branch && !irq ? &br : NULL);
		if (!rep_again)
			flush_rep(v);
		if (irq)
			core_drain(v->core);
	}
	v->pend = NULL;
}

/* ---- the clock ---- */

static void tb_exec_cb(unsigned vi, void *ud)
{
	const struct tb_data *d = ud;
	if (multi) {
		unsigned r = identify(vi);
		if (r != running) {
			running = r;
			coh_switched();
		}
		vi = r;
	}
	struct vcpu *v = &vcpus[vi];
	if (ooo) {
		finish_block(v, vi, d->pc);
		v->pend = d;
		v->pend_next = 0;
	}
	if (multi)
		coh_block_start(vi);
	acct_add_block(&v->a, &d->c);
}

/* The clock interface coherence.c reads and moves a vCPU's clock through. */
static u64 coh_clock_now(unsigned vi)
{
	return acct_clock(&vcpus[vi].a, NULL);
}

static void coh_clock_set(unsigned vi, u64 t, int part)
{
	acct_clock_set(&vcpus[vi].a, t, part);
}

/* The out-of-order core's store buffer: its older stores drain by sb_last_drain. */
static u64 coh_store_floor(unsigned vi)
{
	const struct core *c = vcpus[vi].core;
	return c ? c->sb_last_drain * 100 : 0;
}

static struct coh_clock coh_clock_ops = { coh_clock_now, coh_clock_set, NULL };

/* ---- memory accesses ---- */

/* The cache part of one access (rmw: the load half of an atomic; rep: a rep string's
 * line). Returns cycles. The caches see the line where the host put it (host_line()). */
static inline u64 data_line(struct vcpu *v, unsigned vi, u64 line, bool store, bool count_access,
			    bool rmw, bool rep)
{
	if (count_access)
		v->a.ev[EV_MEM_ACCESS]++;
	line = host_line(&P, line);
	return rep ? coh_access_rep(vi, line, store) : coh_access(vi, line, store, rmw);
}

/* A page walk from CR3; its loads go through this CPU's caches. Under nested paging the
 * walk that finds a page also loads that page's nested leaf entry (model.h). */
static u64 walk(struct vcpu *v, unsigned vi, u64 va, bool *is_2m, bool *global, bool *ok)
{
	u64 cost = P.walk_overhead;
	*is_2m = false;
	*global = false;
	*ok = false;
	v->a.ev[EV_WALK]++;
	if (!v->cr3_known) {
		v->a.ev[EV_WALK_FAIL]++;
		cost += 4 * P.mem_lat;
		v->a.ev[EV_WALK_CYCLES] += cost;
		return cost;
	}
	u64 table = v->cr3 & 0x000ffffffffff000ull;
	for (int level = 4; level >= 1; level--) {
		u64 pa = table + (((va >> (12 + 9 * (level - 1))) & 511) << 3);
		u64 e;
		if (!read_guest(physmap + pa, &e, 8)) {
			v->a.ev[EV_WALK_FAIL]++;
			cost += (u64)level * P.mem_lat;
			break;
		}
		cost += data_line(v, vi, pa >> LINE_SHIFT, false, false, false, false);
		if (!(e & 1))
			break;	/* not present: the access faulted, nothing to install */
		if (level == 1 || (level <= 3 && (e & 0x80))) {
			*is_2m = level >= 2 && nested_allows_2m(&P);
			*global = (e & 0x100) && (!v->cr4_known || (v->cr4 & 0x80));
			*ok = true;
			if (P.nested_page_kib) {
				u64 off = (1ull << (12 + 9 * (level - 1))) - 1;
				u64 gpa = (e & 0x000ffffffffff000ull & ~off) | (va & off);
				cost += data_line(v, vi, nested_leaf_line(&P, gpa), false, false, false, false);
			}
			break;
		}
		table = e & 0x000ffffffffff000ull;
	}
	v->a.ev[EV_WALK_CYCLES] += cost;
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
		v->a.ev[EV_DTLB_MISS]++;
		cost += P.stlb_lat;
		if (r == TLB_MISS) {
			bool is_2m, global, ok;
			v->a.ev[EV_STLB_MISS]++;
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

/* ---- across CPUs: the callbacks that feed coherence.c ---- */

/* PAUSE (multi): the CPU spins (coh_pause). */
/* core=ooo: the core has been given every instruction before ti (the clock is at ti). */
static inline unsigned at_insn(unsigned vi, const void *ti)
{
	vi = cur(vi);
	if (ooo) {
		catch_up(&vcpus[vi], vi, ((const struct tb_insn *)ti)->idx);
		flush_rep(&vcpus[vi]);	/* ti is not a rep string: one before it is over */
	}
	return vi;
}

static void pause_cb(unsigned vi, void *ud)
{
	coh_pause(at_insn(vi, ud));
}

static void hlt_cb(unsigned vi, void *ud)
{
	coh_hlt(at_insn(vi, ud));
}

/* IRET (multi): the end of the handler of an IPI taken while behind. */
static void iret_cb(unsigned vi, void *ud)
{
	coh_iret(at_insn(vi, ud));
}

/* WRMSR (multi): an x2APIC ICR write (MSR 0x830) sends an IPI; the destination's next
 * block (the handler, or the wake from HLT) starts no earlier than now + ipi_latency.
 * Destination: EDX (physical x2APIC ID = slot), or the shorthand in ICR bits 18-19.
 * A GS_BASE write (MSR 0xc0000101) moves the writer's slot to the new base. */
static void wrmsr_cb(unsigned vi, void *ud)
{
	vi = at_insn(vi, ud);
	u64 ecx, eax, edx;
	if (!read_reg(reg_gpr[1], &ecx) || ((u32)ecx != 0x830 && (u32)ecx != 0xc0000101))
		return;
	if (!read_reg(reg_gpr[0], &eax) || !read_reg(reg_gpr[2], &edx))
		return;
	if ((u32)ecx == 0x830) {
		coh_send_ipi(vi, (u32)eax, (u32)edx, true);
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

/* ud: the instruction (struct tb_insn) */
static void mem_cb(unsigned vi, qemu_plugin_meminfo_t info, uint64_t va, void *ud)
{
	const struct tb_insn *ti = ud;
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	if (ooo) {
		catch_up(v, vi, ti->idx);
		flush_rep(v);
	}
	u64 pa = ~0ull;
	if (!phys_of(v, info, va, &pa)) {
		v->a.ev[EV_IO]++;
		v->a.ev[EV_CYC_IO] += P.mem_lat;
		v->a.cyc += P.mem_lat;
		v->io_cyc += P.mem_lat;
		/* xAPIC: a store to ICR high (0xfee00310) holds the destination, one to ICR low
		 * (0xfee00300) sends; LDR (0xd0) and DFR (0xe0) say who a logical one reaches */
		if (multi && (pa & ~0xfffull) == 0xfee00000ull && qemu_plugin_mem_is_store(info)) {
			qemu_plugin_mem_value mv = qemu_plugin_mem_get_value(info);
			u32 x = mv.type == QEMU_PLUGIN_MEM_VALUE_U64 ? (u32)mv.data.u64 : mv.data.u32;
			struct coh_cpu *c = &coh.cpu[vi];
			switch (pa & 0xfff) {
			case 0x310:
				c->xapic_icr_hi = x;
				break;
			case 0x300:
				coh_send_ipi(vi, x, c->xapic_icr_hi >> 24, false);
				break;
			case 0x0d0:
				c->xapic_ldr = x;
				break;
			case 0x0e0:
				c->xapic_dfr = x;
				break;
			}
		}
		return;
	}
	bool store = qemu_plugin_mem_is_store(info);
	u64 walks = v->a.ev[EV_WALK];
	u64 t = translate(v, vi, va);
	u64 d = data_line(v, vi, pa >> LINE_SHIFT, store, true, ti->atomic, false);
	v->a.ev[EV_CYC_TLB] += t;
	v->a.ev[EV_CYC_CACHE] += d;
	v->a.cyc += t + d;
	if (ooo) {
		if (v->nacc == MAX_INSN_ACC)	/* more is microcode (iret, xsave): merged into the last */
			v->nacc--;
		struct core_mem *m = &v->acc[v->nacc++];
		m->va = va;
		m->size = 1u << qemu_plugin_mem_size_shift(info);
		m->is_store = store;
		/* a causal wait returns 0: the line's latency is in the clock already */
		m->l1_miss = d > P.l1d_lat;
		m->cache_lat = (u32)d;
		m->tlb_lat = (u32)t;
		m->walk = v->a.ev[EV_WALK] != walks;
	}
}

/* A rep string instruction: counted once per execution (QEMU may run its exec callback
 * once per iteration: iterations leave the inline instruction counter unchanged, any other
 * instruction in between moves it). */
static void rep_exec_cb(unsigned vi, void *ud)
{
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	if (ooo)
		catch_up(v, vi, ((const struct tb_insn *)ud)->idx);
	u64 n = v->a.insns;
	if (v->rep_insn != ud || v->rep_mark != n) {
		if (ooo)
			flush_rep(v);	/* the previous execution is over */
		v->rep_insn = ud;
		v->rep_mark = n;
		v->a.rep_execs++;
		v->a.ev[EV_INSNS]++;
		rep_filter_reset(&v->rep);
		v->rep_stored = v->rep_read = v->rep_fill_x100 = v->rep_priced = 0;
	}
}

/* A rep string access: priced per distinct cache line, not per iteration (the filter in
 * model.h): each new line raises the execution's stream price (rep_stream_x100()) and
 * this access is charged the rise, so an execution costs its whole price however QEMU
 * splits it into iterations. */
static void rep_mem_cb(unsigned vi, qemu_plugin_meminfo_t info, uint64_t va, void *ud)
{
	(void)ud;
	vi = cur(vi);
	struct vcpu *v = &vcpus[vi];
	u64 pa;
	if (!phys_of(v, info, va, &pa)) {
		v->a.ev[EV_IO]++;
		v->a.ev[EV_CYC_IO] += P.mem_lat;
		v->a.cyc += P.mem_lat;
		v->io_cyc += P.mem_lat;
		return;
	}
	u64 line = pa >> LINE_SHIFT;
	if (!rep_filter_new(&v->rep, line))
		return;
	v->a.ev[EV_REP_LINES]++;
	u64 t = translate(v, vi, va);
	bool store = qemu_plugin_mem_is_store(info);
	u64 lat = data_line(v, vi, line, store, true, false, true);
	u64 r = lat >= P.mem_lat ? P.rep_mem_line : 0;
	v->rep_fill_x100 += rep_fill_x100(&P, lat, store);
	if (store)
		v->rep_stored++;
	else
		v->rep_read++;
	u64 lines = v->rep_stored > v->rep_read ? v->rep_stored : v->rep_read;
	u64 price = rep_stream_x100(lines, v->rep_fill_x100, P.rep_store_line_x100) / 100;
	r += price - v->rep_priced;	/* the price only grows: lines and fills only grow */
	v->rep_priced = price;
	v->a.ev[EV_CYC_TLB] += t;
	v->a.ev[EV_CYC_REP] += r;
	v->a.cyc += t + r;
	v->rep_tlb += t;
	v->rep_cyc += r;
}

/* ---- TLB-changing instructions (callbacks with register access) ---- */

struct tlb_insn {
	struct insn_info info;
	u64 va;
	const struct tb_insn *at;
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
	vi = at_insn(vi, ti->at);
	struct vcpu *v = &vcpus[vi];
	refresh_paging(v);	/* the values before this instruction */
	pac_flush(v);
	if (ti->info.kind == INSN_MOV_CR) {
		u64 nv;
		if (ti->info.gpr < 0 || !read_reg(reg_gpr[ti->info.gpr], &nv))
			return;
		if (ti->info.cr == 3) {
			v->a.ev[EV_CR3_WRITE]++;
			bool noflush = v->cr4_known && (v->cr4 & (1ull << 17)) && (nv >> 63);
			if (!noflush)
				tlb_flush(&v->tlb, true);
			v->cr3 = nv & ~(1ull << 63);
			v->cr3_known = true;
		} else if (ti->info.cr == 4) {
			u64 old = v->cr4;
			if (!v->cr4_known || ((old ^ nv) & 0x80) || ((old ^ nv) & (1ull << 17))) {
				v->a.ev[EV_TLB_FLUSH_ALL]++;
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
				v->a.ev[EV_TLB_FLUSH_ALL]++;
		}
	}
}

/* ---- the guest protocol (protocol.c) ---- */

static bool guest_gpr(int gpr, u64 *v)
{
	return read_reg(reg_gpr[gpr], v);
}

static const struct proto_guest guest = { guest_gpr, read_guest };

static void marker_cb(unsigned vi, void *ud)
{
	const struct marker *mk = ud;
	vi = at_insn(vi, mk->at);
	struct vcpu *v = &vcpus[vi];
	if (multi)
		coh_wait_abandon(vi);
	if (mk->cmd == MODEL_HELLO)
		refresh_paging(v);
	proto_marker(vi, &v->a, mk->cmd, &mk->tail, &guest);
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

_Static_assert((int)NR_INSN_CLS == (int)NR_CLS, "the decoder's classes are the core's");

/* The core's view of a decoded instruction; the fixed prices are the profile's. */
static struct core_op core_op_of(const struct insn_info *in)
{
	struct core_op op = { in->reg_read, in->reg_write, in->reg_addr, in->cls, in->uops, 0, 0 };
	if (in->cls == INSN_CLS_MOVE)
		op.flags |= CORE_OPF_ELIM;	/* full-width register moves are renamed away */
	switch (in->kind) {
	case INSN_ATOMIC:
		op.pen = (u32)P.atomic;
		break;
	case INSN_CPUID:
		op.pen = (u32)P.cpuid;
		break;
	case INSN_WRMSR:
		op.pen = (u32)P.wrmsr;
		break;
	case INSN_DESC_LOAD:
		op.pen = (u32)P.serialise;
		break;
	case INSN_IRET:
		op.pen = (u32)P.irq_roundtrip;
		break;
	case INSN_FENCE:
		op.pen = (u32)P.fence;
		break;
	case INSN_MOV_CR:
		op.pen = (u32)P.mov_cr;
		break;
	case INSN_INVLPG:
	case INSN_INVPCID:
		op.pen = (u32)P.invlpg;
		break;
	default:
		break;
	}
	return op;
}

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
	/* kept as long as QEMU keeps the translation: never freed */
	struct tb_data *data = xmalloc(sizeof(*data) + n * sizeof(data->ins[0]));
	struct tb_counts *total = &data->c;
	data->pc = qemu_plugin_tb_vaddr(tb);
	data->n = (u32)n;
	bool any_marker = false;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		insns[i] = insn;
		u8 bytes[16];
		size_t len = qemu_plugin_insn_data(insn, bytes, sizeof(bytes));
		struct insn_info *info = &infos[i];
		u64 va = qemu_plugin_insn_vaddr(insn);
		decode_insn_at(bytes, len, va, info);
		struct tb_insn *ti = &data->ins[i];
		ti->op = core_op_of(info);
		ti->va = va;
		ti->target = info->target;
		ti->idx = (u16)i;
		ti->len = (u8)qemu_plugin_insn_size(insn);
		ti->kind = (u8)info->kind;
		ti->atomic = info->kind == INSN_ATOMIC;
		ti->is_branch = info->is_branch;
		ti->is_cond = info->is_cond;
		ti->has_target = info->has_target;
		struct tb_counts *c = &per[i];
		memset(c, 0, sizeof(*c));
		if (info->kind == INSN_REP_STRING) {
			/* counted once per execution by rep_exec_cb, priced per line */
			qemu_plugin_register_vcpu_insn_exec_cb(insn, rep_exec_cb, QEMU_PLUGIN_CB_NO_REGS, ti);
			qemu_plugin_register_vcpu_mem_cb(insn, rep_mem_cb, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, ti);
			continue;
		}
		c->insns = 1;
		qemu_plugin_register_vcpu_mem_cb(insn, mem_cb, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, ti);
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
				qemu_plugin_register_vcpu_insn_exec_cb(insn, wrmsr_cb, QEMU_PLUGIN_CB_R_REGS, ti);
			break;
		case INSN_DESC_LOAD:
			count_penalty(c, P.serialise, EV_SERIALISE);
			break;
		case INSN_IRET:
			count_penalty(c, P.irq_roundtrip, EV_IRET);
			if (multi)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, iret_cb, QEMU_PLUGIN_CB_NO_REGS, ti);
			break;
		case INSN_FENCE:
			count_penalty(c, P.fence, EV_FENCE);
			break;
		case INSN_HLT:
			count_penalty(c, P.hlt, EV_HLT);
			if (multi)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, hlt_cb, QEMU_PLUGIN_CB_NO_REGS, ti);
			break;
		case INSN_PAUSE:
			count_penalty(c, P.pause, EV_PAUSE);
			if (multi)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, pause_cb, QEMU_PLUGIN_CB_NO_REGS, ti);
			break;
		case INSN_MOV_CR:
		case INSN_INVLPG:
		case INSN_INVPCID: {
			count_penalty(c, info->kind == INSN_MOV_CR ? P.mov_cr : P.invlpg, EV_SERIALISE);
			if (info->kind != INSN_MOV_CR)
				count_penalty(c, 0, EV_INVLPG);
			/* kept as long as QEMU keeps the translation: never freed */
			struct tlb_insn *tl = xmalloc(sizeof(*tl));
			tl->info = *info;
			tl->va = va;
			tl->at = ti;
			qemu_plugin_register_vcpu_insn_exec_cb(insn, tlb_insn_cb, QEMU_PLUGIN_CB_R_REGS, tl);
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
	/* ooo: every block, so that the core learns where each one ended */
	if (total->insns || total->pen || multi || ooo)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_cb, QEMU_PLUGIN_CB_NO_REGS, data);
	if (!any_marker)
		return;
	/* markers: the counts of the instructions after each one in this block */
	struct tb_counts tail;
	memset(&tail, 0, sizeof(tail));
	for (size_t k = n; k-- > 0;) {
		if (infos[k].kind == INSN_MARKER) {
			struct marker *mk = xmalloc(sizeof(*mk));
			mk->cmd = infos[k].marker_cmd;
			mk->at = &data->ins[k];
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
	if (coh.cpu[vi].live)
		return;
	if (cache_init(&v->l1, P.l1d_kib, P.l1d_ways) || cache_init(&v->l2, P.l2_kib, P.l2_ways) ||
	    tlb_init(&v->tlb, &P)) {
		fprintf(stderr, "costmodel: out of memory for vCPU %u\n", vi);
		abort();
	}
	v->last_page4k = v->last_page2m = ~0ull;
	pac_flush(v);
	rep_filter_reset(&v->rep);
	if (ooo) {
		v->core = malloc(sizeof(*v->core));
		if (!v->core || core_init(v->core, &CP)) {
			fprintf(stderr, "costmodel: cannot set up the out-of-order core of vCPU %u\n", vi);
			abort();
		}
		v->a.core = v->core;
	}
	coh_cpu_init(vi, &v->l1, &v->l2, v->a.ev);
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
		out_line("BAREMM-MODEL-TRACE ident switches=%llu unclaimed=%llu", (unsigned long long)coh.switches,
			 (unsigned long long)ident.unclaimed);
	for (unsigned vi = 0; vi < max_vcpus; vi++) {
		if (coh.cpu[vi].live)
			proto_total(vi, &vcpus[vi].a);
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
	const char *profile = NULL, *out = NULL;
	int prefetch_arg = -1;	/* not given */
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
		} else if (!strcmp(argv[i], "prefetch=on") || !strcmp(argv[i], "prefetch=off")) {
			prefetch_arg = !strcmp(argv[i] + 9, "on");
		} else if (!strcmp(argv[i], "core=ooo") || !strcmp(argv[i], "core=inorder")) {
			ooo = argv[i][5] == 'o';
		} else {
			fprintf(stderr,
				"costmodel: unknown argument '%s' (profile=FILE, physmap=ADDR, out=FILE, causal=on|off, "
				"prefetch=on|off, core=inorder|ooo, trace=ident)\n",
				argv[i]);
			return -1;
		}
	}
	prefetch = prefetch_arg < 0 ? ooo : prefetch_arg;
	if (!profile) {
		fprintf(stderr, "costmodel: give profile=FILE (model/profiles/*.cfg)\n");
		return -1;
	}
	char err[512];
	if (profile_load(profile, &P, err, sizeof(err))) {
		fprintf(stderr, "costmodel: %s\n", err);
		return -1;
	}
	int out_fd;
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
	clock_init(&P, ooo);
	CP = core_params_from_profile(&P);
	char hello_tail[128];
	snprintf(hello_tail, sizeof(hello_tail), " plugin_api=%d physmap=0x%llx%s%s%s", info->version.cur,
		 (unsigned long long)physmap, causal ? "" : " causal=off", ooo ? " core=ooo" : "",
		 prefetch ? " prefetch=on" : "");
	coh_clock_ops.store_floor = ooo ? coh_store_floor : NULL;
	if (!vcpus || coh_init(&P, max_vcpus, causal, prefetch, &coh_clock_ops) ||
	    proto_init(max_vcpus, &P, out_fd, hello_tail)) {
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
