/*
 * The out-of-order core (core.c, docs/COSTMODEL.md "The out-of-order core"): a per-vCPU
 * window-centric dataflow timing model, driven one instruction at a time in program
 * order. QEMU-free; host-tested by model/test_core.c.
 *
 * Contract for the caller (the plugin, or a test):
 *   - One struct core per vCPU, touched only from that vCPU's callbacks. core_init() once
 *     (it sets the clock to 0); no allocation ever (every ring is inside struct core).
 *   - For every executed instruction, in program order, one core_insn() call AFTER its
 *     memory accesses were priced by the hierarchy: the caller passes each access with
 *     its cache and TLB latency (what the in-order model would have charged for it) and
 *     whether it missed the L1d, and for a branch its actual outcome. The core prices
 *     the instruction's timing from them and its own state.
 *   - Work the plugin prices as a whole (rep strings per line, pause, hlt, MMIO, IRET's
 *     interrupt round trip) goes through core_fixed() instead, with its part.
 *   - core_now() is the vCPU's clock, in whole cycles: the commit time of the last
 *     instruction. (x100 for the plugin: core_now() * 100.)
 *   - core_advance_to() when something outside the core moves the clock forward (a wait
 *     for another CPU, an IPI), core_drain() at an interrupt or exception (the pipeline
 *     flushes). Neither ever moves the clock backwards.
 *   - core_parts(): where the cycles went; the parts always add up to core_now() exactly.
 * Everything is integer and deterministic: the same calls give the same clock.
 */
#ifndef BAREMM_MODEL_CORE_H
#define BAREMM_MODEL_CORE_H

#include "model/model.h"

/* ---- the register space of core_op's masks (shared with the decoder) ---- */

#define CORE_REG_GPR(n) (n)		/* 0..15: rax rcx rdx rbx rsp rbp rsi rdi r8..r15 */
#define CORE_REG_FLAGS 16		/* RFLAGS, one register */
#define CORE_REG_VEC(n) (17 + (n))	/* 0..31: xmm/ymm/zmm n (aliases are one register) */
#define CORE_REG_OTHER 49		/* everything else (segment, control, x87, MSR state) */
#define CORE_NREGS 50
#define CORE_BIT(r) (1ull << (r))

/* ---- execution classes: what latency an instruction has (core_params.lat) ---- */

enum core_cls {
	CLS_ALU,		/* add sub and or xor cmp test inc dec neg not ...: 1 */
	CLS_SHIFT,		/* shifts and rotates: 1 */
	CLS_LEA,		/* lea: 1 */
	CLS_MOVE,		/* register moves, movzx/movsx, mov imm: 1, or 0 with CORE_OPF_ELIM */
	CLS_ZERO_IDIOM,		/* xor r,r / sub r,r / pxor x,x: 0, reads nothing */
	CLS_IMUL,		/* imul/mul: lat_imul */
	CLS_DIV,		/* div/idiv: lat_div */
	CLS_BITCNT,		/* popcnt lzcnt tzcnt bsf bsr: lat_imul (the multi-cycle port) */
	CLS_CMOV,		/* cmovcc: 1 */
	CLS_SETCC,		/* setcc: 1 */
	CLS_LOAD,		/* a plain load into a register: its access's latency, no more */
	CLS_STORE,		/* a plain store: 1 (address and data into the store buffer) */
	CLS_BRANCH_COND,	/* jcc, loop, jrcxz: 1, predicted by the direction predictor */
	CLS_JMP_DIRECT,		/* jmp rel: 1, always predicted */
	CLS_JMP_INDIRECT,	/* jmp r/m: 1, predicted by the last-target table */
	CLS_CALL_DIRECT,	/* call rel: 1, always predicted, pushes the return stack */
	CLS_CALL_INDIRECT,	/* call r/m: 1, last-target table, pushes the return stack */
	CLS_RET,		/* ret: 1, predicted by the return stack */
	CLS_VEC_INT,		/* SIMD integer and logic: lat_vec */
	CLS_VEC_FP,		/* SIMD/scalar FP add, mul, fma, convert: lat_fp */
	CLS_FP_DIV,		/* divss/divsd/sqrt...: lat_fpdiv */
	CLS_NOP,		/* nop, endbr, prefetch hints: 0 */
	CLS_SERIALISING,	/* cpuid wrmsr mov-to-CR iret lgdt... invlpg invpcid: drains */
	CLS_FENCE_M,		/* mfence */
	CLS_FENCE_L,		/* lfence */
	CLS_FENCE_S,		/* sfence: stores drain in order anyway, so 0 */
	CLS_ATOMIC,		/* lock-prefixed, xchg with memory */
	CLS_STRING,		/* one non-rep string instruction: 1 (rep ones: core_fixed) */
	CLS_OTHER,		/* anything else: 1 */
	NR_CLS
};

/* ---- parts: where the cycles went (costmodel's part.* names, plus branch) ---- */

enum core_part {
	CORE_PART_INSNS,	/* dispatch/commit bandwidth and execution latencies */
	CORE_PART_PEN,		/* fixed penalties of the profile (atomic, fence, serialising) */
	CORE_PART_CACHE,	/* memory access latency the hierarchy priced, fill-buffer waits */
	CORE_PART_TLB,		/* TLB misses and walks */
	CORE_PART_REP,		/* rep strings (core_fixed) */
	CORE_PART_IO,		/* MMIO (core_fixed) */
	CORE_PART_WAIT,		/* waits for other CPUs (core_advance_to) */
	CORE_PART_IPI,		/* IPI delivery (core_advance_to) */
	CORE_PART_BRANCH,	/* mispredicted branches: the refill after the branch resolved */
	NR_CORE_PART
};

/* ---- per instruction input ---- */

#define CORE_OPF_ELIM 0x01	/* a register move the renamer eliminates: latency 0 */

struct core_op {
	u64 reg_read;		/* registers read (address registers included) */
	u64 reg_write;		/* registers written */
	u64 reg_addr;		/* registers read only to form a memory address (subset of reg_read) */
	u8 cls;			/* enum core_cls */
	u8 uops;		/* fused-domain uops (0 counts as 1) */
	u8 flags;		/* CORE_OPF_* */
	u32 pen;		/* the profile's fixed price of this instruction (atomic, fence,
				 * serialising ones), added to its latency as part penalties */
};

struct core_mem {
	u64 va;			/* for store-to-load forwarding */
	u32 size;		/* bytes */
	bool is_store;
	bool l1_miss;		/* missed the L1d: holds a fill buffer for cache_lat */
	bool walk;		/* missed the STLB: a page walker is busy for tlb_lat */
	u32 cache_lat;		/* the hierarchy's price of the line (l1d_lat on a hit) */
	u32 tlb_lat;		/* the TLB's price (0 on an L1 dTLB hit; STLB, walk) */
};

/* A branch's actual outcome. */
struct core_branch {
	u64 pc;			/* the branch instruction's address */
	u64 target;		/* where it went (taken target; for ret, the return address) */
	u64 next;		/* the next instruction's address (a call's return address) */
	bool taken;		/* conditional branches; ignored for the others */
};

/* ---- parameters ---- */

struct core_params {
	u32 width;		/* dispatch and commit: uops per cycle */
	u32 rob_size, load_buffer, store_buffer, fill_buffers;
	u32 page_walkers;	/* page walks in flight at once */
	u32 stores_per_cycle;	/* stores written from the store buffer to the L1d per cycle */
	u32 mispredict;		/* cycles from a mispredicted branch's completion to the
				 * dispatch of the next instruction */
	u32 taken_per_cycle;	/* taken branches one dispatch cycle may hold: the one that
				 * uses up the budget ends the cycle (the front end redirects) */
	u32 loop_branches;	/* a taken branch seen again within this many taken branches is
				 * in a loop the front end replays (a loop buffer, a zero-bubble
				 * BTB): its budget is loop_taken_per_cycle; 0: no such loops */
	u32 loop_taken_per_cycle;
	u32 btb_l0_entries;	/* taken branches the zero-bubble BTB level holds: a multiple of
				 * CORE_BTB_WAYS whose set count is a power of two; 0: no rule */
	u32 btb_bubble;		/* front-end cycles lost on a taken branch it does not hold */
	u32 l1d_lat;		/* the latency of a forwarded load */
	u32 lat[NR_CLS];	/* execution latency per class */
};

/* The rings' capacities: a profile's sizes must fit (profile.c's key bounds). */
#define CORE_ROB_MAX 1024
#define CORE_LB_MAX 256
#define CORE_SB_MAX 256
#define CORE_FB_MAX 128
#define CORE_PW_MAX 16
/* The branch predictor's fixed geometry (docs/COSTMODEL.md): a TAGE predictor (Seznec
 * and Michaud) whose base is gshare with 2^16 2-bit counters and 16 bits of global
 * history, and CORE_TAGE_TABLES tagged tables of 2^CORE_TAGE_BITS entries indexed by
 * the pc and tage_hist[] (core.c) bits of global history; beside a 256-entry loop predictor
 * that takes over a conditional branch while its current run's direction has had the
 * same run length three times in a row (a loop's body and exit); a 16-entry
 * return stack, a 1024-entry last-target table for indirect jumps and calls. */
#define CORE_PHT_BITS 16
#define CORE_TAGE_TABLES 5
#define CORE_TAGE_BITS 10
#define CORE_TAGE_TAG 10
#define CORE_TAGE_HIST_MAX 256	/* the history ring, >= the longest history + 1 */
#define CORE_TAGE_AGE (1u << 18)	/* conditional branches between halvings of u */
#define CORE_LOOP 256
#define CORE_RAS 16
#define CORE_ITT 1024
/* the recent taken branches the loop rule looks back over: loop_branches' bound */
#define CORE_LOOP_BRANCHES 64
/* the zero-bubble BTB level: CORE_BTB_WAYS-way sets, LRU within a set; at most this many
 * entries (btb_l0_entries' bound) */
#define CORE_BTB_WAYS 4
#define CORE_BTB_MAX 4096

/* Whether that level can hold btb_l0_entries entries: 0 (no level), or CORE_BTB_WAYS
 * ways times a power of two of sets, at most CORE_BTB_MAX (profile.c and core_init()). */
static inline bool core_btb_geometry_ok(u64 entries)
{
	const u64 sets = entries / CORE_BTB_WAYS;
	return entries <= CORE_BTB_MAX && entries % CORE_BTB_WAYS == 0 && !(sets & (sets - 1));
}
/* store-to-load forwarding index: 8-byte granules hashed into this many slots */
#define CORE_FWD 256

struct core_store {
	u64 seq;		/* which store (index into the ring + wrap count) */
	u64 va;
	u32 size;
	u8 data_cause, drain_cause;
	u64 data;		/* when its data is ready (forwarding) */
	u64 drain;		/* when it leaves the store buffer (written to the L1d) */
};

struct core_stats {
	u64 insns, uops, loads, stores;
	u64 branches, mispredicts;
	u64 loop_predicted;	/* conditional branches the loop predictor decided */
	u64 tage_provided;	/* conditional branches a tagged table predicted */
	u64 forwards;		/* loads served by an in-flight store */
	u64 fwd_blocked;	/* loads that overlapped one partly and waited for its drain */
	u64 rob_stalls;		/* dispatches delayed by a full ROB */
	u64 lb_stalls, sb_stalls;	/* ... by a full load / store buffer */
	u64 fb_waits;		/* misses that waited for a free fill buffer */
	u64 pw_waits;		/* walks that waited for a free page walker */
	u64 taken;		/* branches that went elsewhere than the next instruction */
	u64 taken_stops;	/* dispatch cycles a taken branch ended early (fetch redirect) */
	u64 loop_taken;		/* taken branches followed at the loop rate (loop_branches) */
	u64 btb_misses;		/* taken branches the zero-bubble BTB level did not hold */
};

struct core {
	struct core_params p;
	u32 rob_mask, lb_mask, sb_mask;
	/* dispatch: the cycle being filled and the uops in it; nothing dispatches before floor */
	u64 d_cyc;
	u32 d_used;
	/* taken branches dispatched in cycle tk_cyc */
	u64 tk_cyc;
	u32 tk_used;
	/* the last loop_branches taken branches' pcs, a ring written at lt_n */
	u64 lt_pc[CORE_LOOP_BRANCHES];
	u32 lt_n;
	/* the zero-bubble BTB level: per entry the branch's pc + 1 (0 = empty) and the
	 * taken-branch count at its last use (LRU within the set) */
	u32 btb_set_mask;
	u64 btb_pc[CORE_BTB_MAX];
	u64 btb_used[CORE_BTB_MAX];
	u64 floor;
	u8 floor_cause;
	/* younger instructions (issue_floor) or younger loads (load_floor) issue no earlier */
	u8 issue_cause, load_cause;
	u64 issue_floor, load_floor;
	/* commit: the last commit time (the clock), the cycle being filled and its uops */
	u64 r_last, r_cyc;
	u32 r_used;
	/* latest completion of any instruction so far (lfence, mfence, serialising) */
	u64 max_c;
	u8 max_c_cause;
	/* registers: when each is ready, and the part that made it that late */
	u64 ready[CORE_NREGS];
	u8 rcause[CORE_NREGS];
	/* the window: commit time per uop, per load; the store buffer */
	u64 nuops, nloads, nstores;
	u64 rob[CORE_ROB_MAX];
	u64 lb[CORE_LB_MAX];
	struct core_store sb[CORE_SB_MAX];
	u64 sb_last_drain;
	u32 sb_drain_used;	/* stores written in cycle sb_last_drain */
	u8 sb_last_cause;
	u64 fwd[CORE_FWD];	/* store seq + 1 of the youngest store to a granule, 0 = none */
	/* fill buffers: when each is free */
	u64 fb[CORE_FB_MAX];
	/* page walkers: when each is free */
	u64 pw[CORE_PW_MAX];
	/* branch prediction */
	u32 ghist;
	u32 ras_top;		/* pushes minus pops (the stack wraps: deep recursion overwrites) */
	u64 ras[CORE_RAS];
	u64 itt[CORE_ITT];
	u8 pht[1u << CORE_PHT_BITS];
	/* TAGE: per tagged table, entries and the folded histories (index, two tag folds) */
	struct core_tage {
		u16 tag;	/* 0 = empty (tags are never 0) */
		int8_t ctr;	/* -4..3, taken when >= 0 */
		u8 u;		/* usefulness 0..3 */
	} tage[CORE_TAGE_TABLES][1u << CORE_TAGE_BITS];
	u32 fold_idx[CORE_TAGE_TABLES], fold_tag[CORE_TAGE_TABLES][2];
	u8 hist[CORE_TAGE_HIST_MAX];	/* outcome ring, hist[hptr] the newest */
	u32 hptr, tage_tick;
	struct core_loop {
		u64 pc;		/* the branch; 0 = free */
		u32 trip[2];	/* per direction (not taken, taken): its last run's length */
		u32 cur;	/* the current run's length so far */
		u8 conf[2];	/* runs in a row of that direction that had length trip */
		bool last;	/* the current run's direction */
	} loop[CORE_LOOP];
	/* where the cycles went */
	u64 part[NR_CORE_PART];
	struct core_stats st;
};

/* The parameters a profile gives. */
struct core_params core_params_from_profile(const struct profile *prof);
/* 0, or -1 when a size is 0 or beyond its ring (CORE_*_MAX) or width is 0. */
int core_init(struct core *c, const struct core_params *p);

/* One instruction in program order: op as decoded, its nacc memory accesses (loads and
 * stores, in any order), br its outcome when op->cls is a branch class (NULL: treated as
 * predicted). Returns the clock after it (core_now()). */
u64 core_insn(struct core *c, const struct core_op *op, const struct core_mem *acc, unsigned nacc,
	      const struct core_branch *br);

#define CORE_FIX_DRAIN 0x01	/* wait until every older instruction completed and the
				 * store buffer drained first (uncacheable MMIO, hlt) */
/* A microcoded or blocking operation of `cycles` charged to `part`: it dispatches in
 * order, completes cycles later, and nothing younger dispatches before it completes. */
u64 core_fixed(struct core *c, u64 cycles, enum core_part part, unsigned flags);

/* The clock moves to t from outside (a wait, an IPI), the difference charged to part;
 * afterwards nothing younger dispatches or issues before t. No-op when t <= core_now(). */
void core_advance_to(struct core *c, u64 t, enum core_part part);
/* Interrupt or exception: the pipeline flushes; what comes next dispatches no earlier
 * than the commit of the last instruction. */
void core_drain(struct core *c);

static inline u64 core_now(const struct core *c)
{
	return c->r_last;
}
/* out[0..NR_CORE_PART): cycles per part; their sum is core_now(). */
void core_parts(const struct core *c, u64 out[NR_CORE_PART]);
const char *core_part_name(enum core_part p);

#endif
