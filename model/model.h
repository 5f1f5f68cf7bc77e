/*
 * The cost model's building blocks that do not depend on QEMU: the profile (profile.c),
 * the caches (cache.c), the TLBs (tlb.c), the x86 instruction decoder (decode.c, on Zydis) and
 * the table that tells vCPUs apart, with who a logical IPI reaches (ident.c); the host
 * test test_model.c tests them alone. The rooms built on them have their own headers:
 * clock.h (events, parts, a CPU's clock), coherence.h (across CPUs: directory, waits,
 * IPIs; tested by test_coherence.c), prefetch.h (the L2 stream prefetcher coherence.c
 * drives; tested by test_prefetch.c) and protocol.h (the guest's markers and the output
 * lines). The plugin glue (costmodel.c) wires them all to QEMU.
 */
#ifndef BAREMM_MODEL_H
#define BAREMM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

/* ---- profile (profile.c) ---- */

/* Every value a profile must give. Decimal values (FX) are kept x100. */
struct profile {
	char name[64];
	u64 ghz_x100;		/* FX: core clock, GHz */
	u64 base_cpi_x100;	/* FX: cycles charged per instruction */
	u64 l1d_kib, l1d_ways, l1d_lat;
	u64 l2_kib, l2_ways, l2_lat;
	u64 llc_kib, llc_ways, llc_lat;
	u64 mem_lat;
	u64 dtlb4k_entries, dtlb4k_ways;
	u64 dtlb2m_entries, dtlb2m_ways;
	u64 stlb_entries, stlb_ways, stlb_lat;
	u64 walk_overhead;
	/* the page size, KiB, of the hypervisor's (nested) tables that map this machine's
	 * memory; 0: none modelled (bare metal). A TLB entry then covers at most that size,
	 * and a walk also loads the nested leaf entry of the accessed page (nested_leaf_line()) */
	u64 nested_page_kib;
	u64 atomic, serialise, cpuid, wrmsr, mov_cr, invlpg, fence;
	u64 irq_roundtrip, ipi_latency, pause, hlt;
	/* rep strings, per distinct line of one execution (rep_stream_x100()): FX prices of
	 * a line stored, of a line filled into the L1d from the L2 for a store (fill) or for
	 * a read alone (read), and the same two from the LLC or another CPU's cache; cycles
	 * added per line from memory */
	u64 rep_store_line_x100, rep_fill_line_x100, rep_read_line_x100;
	u64 rep_llc_line_x100, rep_llc_read_line_x100, rep_mem_line;
	/* across CPUs: a line another CPU holds modified, within a socket and across sockets;
	 * CPU n sits on socket (n / cores_per_socket) % sockets */
	u64 c2c_lat, c2c_remote_lat, sockets, cores_per_socket;
	/* the out-of-order core (core.h): widths and window sizes in (fused) uops or entries,
	 * the branch mispredict penalty and execution latencies in cycles, and the L2 stream
	 * prefetcher (lines ahead once a stream is found, 0 = none; streams tracked) */
	u64 core_width, rob_size, load_buffer, store_buffer, fill_buffers, mispredict;
	u64 lat_imul, lat_div, lat_vec, lat_fp, lat_fpdiv;
	u64 prefetch_lines, prefetch_streams;
	u64 page_walkers;	/* page walks in flight at once */
	u64 stores_per_cycle;	/* stores the store buffer writes to the L1d per cycle */
	u64 taken_per_cycle;	/* taken branches the front end follows per cycle */
	u64 loop_branches;	/* taken branches a loop may hold and run at the loop rate (0: none) */
	u64 loop_taken_per_cycle;	/* that rate: taken branches per cycle inside such a loop */
	u64 btb_l0_entries;	/* taken branches the fastest BTB level holds (0: no BTB rule) */
	u64 btb_bubble;		/* cycles the front end loses on a taken branch outside it */
};

/* Parses profile text. 0 on success; else -1 with a message naming file and line in err. */
int profile_parse(const char *text, const char *fname, struct profile *p, char *err, size_t errlen);
/* Reads and parses a file. */
int profile_load(const char *path, struct profile *p, char *err, size_t errlen);
/* One line stating the whole profile (the BAREMM-MODEL line's body, no newline). */
int profile_describe(const struct profile *p, char *buf, size_t len);

/* ---- caches (cache.c): set-associative, 64-byte lines, true LRU ---- */

#define LINE_SHIFT 6

struct cache_way {
	u64 tag;	/* line number + 1; 0 = invalid */
	u64 stamp;	/* last use; the smallest in a set is the LRU way */
};

struct cache {
	u32 sets, ways;
	u64 set_mask;	/* sets - 1 when sets is a power of two, else 0 (modulo) */
	u64 clock;
	struct cache_way *w;
	u8 *mru;	/* per set: the way used last (a hit there changes no LRU order) */
};

int cache_init(struct cache *c, u64 kib, u64 ways);
void cache_free(struct cache *c);
static inline u64 cache_set(const struct cache *c, u64 line)
{
	return c->set_mask ? (line & c->set_mask) : (line % c->sets);
}
/* Looks the line up; a hit makes it MRU; a miss fills it over the LRU way (or an
 * invalid one). Returns true on hit. */
bool cache_access(struct cache *c, u64 line);
bool cache_contains(const struct cache *c, u64 line);
/* Drops the line if present (another CPU's store). Returns true if it was there. */
bool cache_invalidate(struct cache *c, u64 line);

enum { LVL_L1 = 0, LVL_L2, LVL_LLC, LVL_LLC_REMOTE, LVL_MEM };

/* One CPU's view: private L1d and L2, the LLC of its socket (CCD) shared with the CPUs
 * there, and the other sockets' LLCs (llcs[0..nllc), llc among them; none: one LLC).
 * Non-inclusive non-exclusive: a miss fills every level it missed in (its own LLC
 * included); an eviction at one level touches no other level. */
struct hierarchy {
	struct cache *l1, *l2, *llc;
	struct cache *llcs;
	unsigned nllc;
};
/* Returns the level that served the line (LVL_*): LVL_LLC_REMOTE when only another
 * socket's LLC holds it. */
int hier_access(const struct hierarchy *h, u64 line);

/* ---- TLBs (tlb.c) ---- */

struct tlb_way {
	u64 tag;	/* (page number << 1 | is_2m) + 1; 0 = invalid */
	u64 stamp;
	bool global;
};

struct tlb_array {
	u32 sets, ways;
	u64 set_mask;	/* sets - 1 when sets is a power of two (else modulo) */
	u64 clock;
	struct tlb_way *w;
	u16 *mru;	/* per set: the way used last */
};

/* L1 dTLB split by page size, second-level TLB shared by 4 KiB and 2 MiB entries. */
struct tlb {
	struct tlb_array d4k, d2m, stlb;
	bool last_2m;	/* the last L1 hit was a 2 MiB entry: look there first */
};

enum { TLB_L1_HIT = 0, TLB_STLB_HIT, TLB_MISS };

int tlb_init(struct tlb *t, const struct profile *p);
void tlb_free(struct tlb *t);
/* Looks va up: L1 (both sizes), then the STLB (which refills L1). */
int tlb_lookup(struct tlb *t, u64 va);
/* After a walk: installs the translation of va in the STLB and the L1 array of its size. */
void tlb_fill(struct tlb *t, u64 va, bool is_2m, bool global);
/* INVLPG: drops every entry (any size, global or not) that translates va. */
void tlb_invlpg(struct tlb *t, u64 va);
/* CR3 write: drops non-global entries (keep_global) or everything (CR4.PGE toggle). */
void tlb_flush(struct tlb *t, bool keep_global);
unsigned tlb_count(const struct tlb *t, bool global_only);

/*
 * Nested paging (profile nested_page_kib != 0): a hypervisor maps this machine's memory
 * with pages of that size. The TLB caches the combined translation, so an entry covers
 * the smaller of the guest's page and the hypervisor's (a 2 MiB guest page over 4 KiB
 * host pages is 512 entries); and a walk, besides the guest's tables, loads the nested
 * leaf entry of the page it translates. The guest cannot see the hypervisor's tables, so
 * those entries are laid out as a linear table of 8-byte entries, one per host page, at
 * lines beyond any physical address (NESTED_LINE_BASE); the upper nested levels and the
 * nested translations of the guest's own table pages are left to the paging-structure
 * caches (their cost is inside walk_overhead, as calibrated).
 */
#define NESTED_LINE_BASE (1ull << 46)	/* line numbers of 52-bit physical addresses end here */

static inline bool nested_allows_2m(const struct profile *p)
{
	return p->nested_page_kib == 0 || p->nested_page_kib >= 2048;
}

/*
 * Where the host put a guest line, for the caches' set index. Under nested paging the
 * caches are indexed by host-physical addresses, and a hypervisor hands a VM its frames
 * in no order the guest sees: contiguous guest memory lands on scattered host frames, so
 * a working set near a cache's size overflows some sets (page colours) long before it
 * fills the cache (calibrate's chase through a 2 MiB-page buffer on the Granite Rapids
 * VM: L2 latency to 1024 KiB, then 29-46 cycles at 1536 KiB and 72-92 at 2048 KiB, the
 * L2's size, as frames spread at random over its 32 colours predict). Each nested page
 * of guest memory (nested_page_kib) is given a host frame by a fixed bijective scramble
 * of its frame number; the offset within it is kept (a prefetch stream stays inside its
 * 4 KiB page either way). Bare metal (nested_page_kib 0) and the nested leaf lines:
 * unchanged.
 */
static inline u64 host_frame_scramble(u64 f, unsigned bits)
{
	const u64 mask = (1ull << bits) - 1;
	/* two rounds of multiply by an odd constant and xor-shift: each step is a bijection
	 * of bits-bit numbers, so no two guest frames share a host frame */
	f = (f * 0x9e3779b97f4a7c15ull) & mask;
	f ^= f >> (bits / 2);
	f = (f * 0xbf58476d1ce4e5b9ull) & mask;
	f ^= f >> (bits / 2);
	return f;
}

static inline u64 host_line(const struct profile *p, u64 line)
{
	if (!p->nested_page_kib || line >= NESTED_LINE_BASE)
		return line;
	/* lines per nested page: 64 (4 KiB), 32768 (2 MiB), 2^24 (1 GiB) */
	unsigned shift = p->nested_page_kib >= (1u << 20) ? 24 : p->nested_page_kib >= 2048 ? 15 : 6;
	/* frames of the line space below NESTED_LINE_BASE (2^46 lines) stay inside it */
	return host_frame_scramble(line >> shift, 46 - shift) << shift | (line & ((1ull << shift) - 1));
}

/* The line holding the nested leaf entry of guest-physical address gpa. */
static inline u64 nested_leaf_line(const struct profile *p, u64 gpa)
{
	unsigned shift = p->nested_page_kib >= (1u << 20) ? 30 : p->nested_page_kib >= 2048 ? 21 : 12;
	return NESTED_LINE_BASE + ((gpa >> shift) >> 3);	/* 8 entries of 8 bytes a line */
}

/* ---- which vCPU is running (ident.c): per-CPU kernel GS base -> slot ---- */

#define IDENT_MAX 256

struct ident {
	unsigned n;		/* slots (vCPUs), at most IDENT_MAX */
	u64 base[IDENT_MAX];	/* per slot: its kernel GS base, 0 = unclaimed */
	u64 last_base;		/* the base of the last block that had one (~0: none yet) ... */
	unsigned last_slot;	/* ... its slot ... */
	bool last_only;		/* ... and no block of another CPU since, by QEMU's index */
	u64 unclaimed;		/* lookups of a base for which no slot was free */
};

void ident_init(struct ident *id, unsigned n);
/* The slot of a kernel GS base (nonzero). A base seen for the first time claims slot
 * hint (QEMU's vCPU index) if that is free, else the lowest free slot, and sets *claimed.
 * Returns n when every slot belongs to another base. */
unsigned ident_slot(struct ident *id, u64 base, unsigned hint, bool *claimed);
/* A block without a kernel GS base ran on the vCPU QEMU calls hint. */
static inline void ident_nobase(struct ident *id, unsigned hint)
{
	if (hint != id->last_slot)
		id->last_only = false;
}
/* A CPU whose GS base is old (0: none, see ident.c) writes base: the slot of old, if any,
 * becomes base's. Returns that slot, or n when nothing changed. */
unsigned ident_rebase(struct ident *id, u64 old, u64 base);
/* Whether an IPI to logical destination dest (ICR bit 11 set) reaches the CPU with APIC
 * ID apic_id (x2APIC: its logical ID follows from it) or, under xAPIC, with logical
 * destination register ldr and destination format register dfr. */
bool apic_logical_hit(bool x2, unsigned apic_id, u32 ldr, u32 dfr, u32 dest);

/* ---- rep string line filter ---- */

/* A rep string instruction is priced per distinct 64-byte line it touches, not per
 * iteration. The filter remembers the last two lines (movs and cmps alternate between a
 * source and a destination stream); rep_filter_new() says whether a line is new. */
struct rep_filter {
	u64 line[2];
	int mru;
};

static inline void rep_filter_reset(struct rep_filter *f)
{
	f->line[0] = f->line[1] = ~0ull;
	f->mru = 0;
}

/* The fill price, x100, of one line of a rep string execution that the cache hierarchy
 * served in @lat cycles: 0 from the L1d or from memory (priced on top, rep_mem_line), else
 * by where it came from (the L2, or the LLC and another CPU's cache beyond it) and whether
 * the string stores to it (a store's fill also writes a dirty L1d victim back: it costs
 * more than a read's). */
static inline u64 rep_fill_x100(const struct profile *p, u64 lat, bool store)
{
	if (lat <= p->l1d_lat || lat >= p->mem_lat)
		return 0;
	if (lat <= p->l2_lat)
		return store ? p->rep_fill_line_x100 : p->rep_read_line_x100;
	return store ? p->rep_llc_line_x100 : p->rep_llc_read_line_x100;
}

/* The price, x100, of the lines one rep string execution has streamed so far: @lines
 * the larger of its distinct lines written and read (a copy writes as many as it reads;
 * cmps/scas/lods write none), @fill_x100 the sum of its lines' fill prices
 * (rep_fill_x100()). The store stream and the fill path run at once, so the slower of the
 * two bounds the stream; lines from memory are priced on top (rep_mem_line), one by one. */
static inline u64 rep_stream_x100(u64 lines, u64 fill_x100, u64 store_x100)
{
	u64 s = lines * store_x100;
	return s > fill_x100 ? s : fill_x100;
}

static inline bool rep_filter_new(struct rep_filter *f, u64 line)
{
	if (line == f->line[0] || line == f->line[1]) {
		f->mru = line == f->line[1];
		return false;
	}
	f->mru ^= 1;	/* replace the slot that was not used last */
	f->line[f->mru] = line;
	return true;
}

/* ---- instruction decoding (decode.c, on the Zydis decoder library) ---- */

/* The classes the plugin prices with a fixed penalty or a callback; everything else is
 * INSN_PLAIN (the out-of-order core prices it by its insn_cls below). */
enum insn_kind {
	INSN_PLAIN = 0,
	INSN_MARKER,		/* exactly nopl 0x4d4dCCCC(%rax), no prefix: a guest -> model command */
	INSN_ATOMIC,		/* lock-prefixed, or xchg with a memory operand */
	INSN_CPUID,
	INSN_WRMSR,
	INSN_MOV_CR,		/* mov %reg, %crN */
	INSN_IRET,
	INSN_DESC_LOAD,		/* lgdt, lidt, lldt, ltr */
	INSN_INVLPG,
	INSN_FENCE,		/* mfence, lfence (sfence is not priced: INSN_PLAIN, INSN_CLS_FENCE_S) */
	INSN_HLT,
	INSN_PAUSE,
	INSN_REP_STRING,	/* rep/repe/repne movs, stos, cmps, scas, lods */
	INSN_INVPCID,		/* invpcid: type in a register, descriptor in memory */
};

/*
 * How an instruction executes, for the out-of-order core, which maps a class to a latency
 * from the profile (the decoder gives no latencies). The same members, in the same order,
 * as the core's enum core_cls.
 */
enum insn_cls {
	INSN_CLS_ALU = 0,	/* integer add/sub/logic/compare/inc/neg/bt/bswap/xchg r,r, mov $imm,r,
				 * movzx/movsx r,r, 8/16-bit mov r,r, cmps, scas, and any of these
				 * with a memory source or as rmw */
	INSN_CLS_SHIFT,		/* shifts and rotates (shl, sar, rol, shld, shlx, rorx ...) */
	INSN_CLS_LEA,		/* lea: address arithmetic, no memory access */
	INSN_CLS_MOVE,		/* full-width reg-reg moves (mov, movaps, movdqa ...): eliminable */
	INSN_CLS_ZERO_IDIOM,	/* xor/sub r,r (32/64-bit), pxor/xorps/psub/pcmpgt x,x: reads nothing */
	INSN_CLS_IMUL,		/* imul, mul, mulx (all widths) */
	INSN_CLS_DIV,		/* div, idiv (all widths) */
	INSN_CLS_BITCNT,	/* bsf, bsr, popcnt, lzcnt, tzcnt */
	INSN_CLS_CMOV,		/* cmovcc */
	INSN_CLS_SETCC,		/* setcc */
	INSN_CLS_LOAD,		/* pure loads: mov/movzx/movsx/vector moves from memory, pop, lods */
	INSN_CLS_STORE,		/* pure stores: mov/vector moves to memory, movnti, push, pushf,
				 * stos, movs (push (m) and movs also load) */
	INSN_CLS_BRANCH_COND,	/* jcc, jrcxz, loop */
	INSN_CLS_JMP_DIRECT,	/* jmp rel */
	INSN_CLS_JMP_INDIRECT,	/* jmp r/m */
	INSN_CLS_CALL_DIRECT,	/* call rel */
	INSN_CLS_CALL_INDIRECT,	/* call r/m */
	INSN_CLS_RET,		/* near ret */
	INSN_CLS_VEC_INT,	/* SSE/AVX integer and shuffle ops, movd/movq between files */
	INSN_CLS_VEC_FP,	/* SSE/AVX floating point (add, mul, fma, compare, convert ...) */
	INSN_CLS_FP_DIV,	/* SSE/AVX divide and square root */
	INSN_CLS_NOP,		/* nop, nopl (the marker too), endbr, prefetch: no effect on data */
	INSN_CLS_SERIALISING,	/* cpuid, wrmsr, mov to cr (not cr8) or dr, iret, lgdt/lidt/lldt/ltr,
				 * invlpg, invpcid, wbinvd, invd, serialize */
	INSN_CLS_FENCE_M,	/* mfence */
	INSN_CLS_FENCE_L,	/* lfence */
	INSN_CLS_FENCE_S,	/* sfence */
	INSN_CLS_ATOMIC,	/* INSN_ATOMIC: lock-prefixed, xchg with memory */
	INSN_CLS_STRING,	/* INSN_REP_STRING (non-rep string ops are ALU, LOAD or STORE) */
	INSN_CLS_OTHER,		/* the rest: system (rdmsr, mov from cr, mov to cr8, in/out, cli,
				 * swapgs, pause, hlt, popf ...), far transfers, syscall/int,
				 * clflush, x87, xsave, undecodable */
	NR_INSN_CLS
};

/*
 * Register space of reg_read/reg_write/reg_addr (the layout the core uses): bits 0-15 the
 * GPRs rax rcx rdx rbx rsp rbp rsi rdi r8..r15 (x86 order), bit 16 RFLAGS (all flags as
 * one; a write of some flags counts as a write of all: the core keeps no flag merge),
 * bits 17-48 vector registers 0-31 (xmm, ymm and zmm alias), bit 49 any other register
 * (segment, control, debug, mask, x87, mxcsr, descriptor-table registers). rip is not in
 * it (branches are described by the branch fields).
 */
#define REG_GPR(n)	(1ull << (n))
#define REG_FLAGS	(1ull << 16)
#define REG_VEC(n)	(1ull << (17 + (n)))
#define REG_OTHER	(1ull << 49)
#define REG_ALL_GPR	0xffffull
#define REG_ALL_VEC	(0xffffffffull << 17)

/* A ModRM memory operand: address = base + index * scale + disp (+ the address of the next
 * instruction when rip_relative) (+ the fs or gs base with a segment prefix). Register
 * numbers 0..15 in x86 order (rax rcx rdx rbx rsp rbp rsi rdi r8..r15), -1 = none. */
enum { SEG_NONE = 0, SEG_FS, SEG_GS };
struct mem_operand {
	int8_t base, index;
	u8 scale;
	bool rip_relative;
	bool addr32;		/* 0x67 prefix: the address is truncated to 32 bits */
	u8 seg;
	int64_t disp;
};

/* A data access the instruction makes (implicit ones included: push, pop, call, ret,
 * string ops). lea, nop, prefetch, invlpg, clflush name an address but move no data: none. */
enum { MEM_READ = 1, MEM_WRITE = 2 };	/* access bits; both = read-modify-write */
struct insn_mem {
	u16 size;		/* bytes (lgdt 10, a zmm 64, xsave/fxsave: the area's nominal size) */
	u8 access;		/* MEM_READ | MEM_WRITE; conditional accesses (cmpxchg, rep) count */
};

/*
 * One decoded instruction (stored per translated instruction by the plugin: keep it
 * small). kind, marker_cmd, cr, gpr, has_mem and mem serve the plugin's fixed-cost
 * classes; the rest serves the out-of-order core.
 */
struct insn_info {
	enum insn_kind kind;
	u8 len;			/* the instruction's length; on undecodable bytes what was looked at */
	u16 marker_cmd;		/* INSN_MARKER */
	u8 cr;			/* INSN_MOV_CR: the control register written */
	int8_t gpr;		/* INSN_MOV_CR: the source register; INSN_INVPCID: the type; else -1 */
	bool has_mem;		/* INSN_INVLPG, INSN_INVPCID: the operand below is valid */
	u8 cls;			/* enum insn_cls */
	u8 uops;		/* fused-domain uop estimate (decode.c says where each rule is from) */
	u8 nmem;		/* accesses in memop[0..nmem) */
	bool is_branch : 1;	/* near jmp/jcc/call/ret/loop: the predictor's business */
	bool is_cond : 1;	/* conditional (jcc, jrcxz, loop) */
	bool is_indirect : 1;	/* target from a register or memory (ret included) */
	bool has_target : 1;	/* target below is the absolute direct target (decode_insn_at) */
	bool rmw : 1;		/* a memory operand both read and written (add %r,(m), xchg, lock) */
	bool decoded : 1;	/* the library decoded it; false: undecodable or truncated bytes */
	struct insn_mem memop[2];
	struct mem_operand mem;
	u64 reg_read;		/* registers read (data and address), see REG_* */
	u64 reg_write;		/* registers written; a partial (8/16-bit) GPR write also reads */
	u64 reg_addr;		/* the subset of reg_read only used to form memory addresses */
	u64 target;		/* has_target: the direct branch's destination */
};

/* Decodes the instruction in b[0..n) (64-bit mode). Undecodable or truncated encodings are
 * INSN_PLAIN, INSN_CLS_OTHER with no registers and no accesses. Thread-safe. */
void decode_insn(const u8 *b, size_t n, struct insn_info *out);
/* The same, with the instruction's address: also gives a direct branch's target. */
void decode_insn_at(const u8 *b, size_t n, u64 insn_va, struct insn_info *out);
/* The operand's address given the register file (regs[0..15]), the instruction's address
 * and the fs/gs bases. */
u64 mem_operand_addr(const struct mem_operand *m, const u64 regs[16], u64 insn_va, u8 insn_len,
		     u64 fs_base, u64 gs_base);
const char *insn_kind_name(enum insn_kind k);
const char *insn_cls_name(unsigned cls);

#endif
