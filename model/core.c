/*
 * The out-of-order core: per instruction, in program order, its dispatch, issue,
 * completion and commit times follow from older instructions' times and the window's
 * resources (docs/COSTMODEL.md, "The out-of-order core", has the equations). All of an
 * instruction's inputs are known when it is called (the hierarchy priced its accesses
 * already), so each time is computed once, eagerly; nothing is simulated cycle by cycle.
 */
#include <string.h>
#include "model/core.h"

static const char *const part_names[NR_CORE_PART] = {
	"insns", "penalties", "cache", "tlb", "rep", "io", "wait", "ipi", "branch",
};

const char *core_part_name(enum core_part p)
{
	return (unsigned)p < NR_CORE_PART ? part_names[p] : "?";
}

struct core_params core_params_from_profile(const struct profile *prof)
{
	struct core_params p;
	memset(&p, 0, sizeof(p));
	p.width = (u32)prof->core_width;
	p.rob_size = (u32)prof->rob_size;
	p.load_buffer = (u32)prof->load_buffer;
	p.store_buffer = (u32)prof->store_buffer;
	p.fill_buffers = (u32)prof->fill_buffers;
	p.page_walkers = (u32)prof->page_walkers;
	p.stores_per_cycle = prof->stores_per_cycle ? (u32)prof->stores_per_cycle : 1;
	p.taken_per_cycle = (u32)prof->taken_per_cycle;
	p.loop_branches = (u32)prof->loop_branches;
	p.loop_taken_per_cycle = (u32)prof->loop_taken_per_cycle;
	p.btb_l0_entries = (u32)prof->btb_l0_entries;
	p.btb_bubble = (u32)prof->btb_bubble;
	p.mispredict = (u32)prof->mispredict;
	p.l1d_lat = (u32)prof->l1d_lat;
	for (unsigned k = 0; k < NR_CLS; k++)
		p.lat[k] = 1;
	p.lat[CLS_ZERO_IDIOM] = 0;
	p.lat[CLS_LOAD] = 0;		/* the access is its latency */
	p.lat[CLS_NOP] = 0;
	p.lat[CLS_SERIALISING] = 0;	/* these cost their profile price (core_op.pen) */
	p.lat[CLS_FENCE_M] = 0;
	p.lat[CLS_FENCE_L] = 0;
	p.lat[CLS_FENCE_S] = 0;
	p.lat[CLS_IMUL] = (u32)prof->lat_imul;
	p.lat[CLS_BITCNT] = (u32)prof->lat_imul;
	p.lat[CLS_DIV] = (u32)prof->lat_div;
	p.lat[CLS_VEC_INT] = (u32)prof->lat_vec;
	p.lat[CLS_VEC_FP] = (u32)prof->lat_fp;
	p.lat[CLS_FP_DIV] = (u32)prof->lat_fpdiv;
	return p;
}

int core_init(struct core *c, const struct core_params *p)
{
	if (!p->width || !p->rob_size || p->rob_size > CORE_ROB_MAX || !p->load_buffer ||
	    p->load_buffer > CORE_LB_MAX || !p->store_buffer || p->store_buffer > CORE_SB_MAX ||
	    !p->fill_buffers || p->fill_buffers > CORE_FB_MAX || !p->page_walkers ||
	    p->page_walkers > CORE_PW_MAX || !p->taken_per_cycle ||
	    p->loop_branches > CORE_LOOP_BRANCHES || (p->loop_branches && !p->loop_taken_per_cycle))
		return -1;
	if (!core_btb_geometry_ok(p->btb_l0_entries))
		return -1;
	const u32 sets = p->btb_l0_entries / CORE_BTB_WAYS;
	memset(c, 0, sizeof(*c));
	c->p = *p;
	c->rob_mask = CORE_ROB_MAX - 1;
	c->lb_mask = CORE_LB_MAX - 1;
	c->sb_mask = CORE_SB_MAX - 1;
	memset(c->pht, 1, sizeof(c->pht));	/* weakly not taken */
	c->btb_set_mask = sets ? sets - 1 : 0;
	return 0;
}

void core_parts(const struct core *c, u64 out[NR_CORE_PART])
{
	memcpy(out, c->part, sizeof(c->part));
}

/* t = max(t, v), remembering the cause of the later one. */
static inline void bump(u64 *t, u8 *cause, u64 v, u8 vc)
{
	if (v > *t) {
		*t = v;
		*cause = vc;
	}
}

/* An instruction's timeline for the parts: before `start` the cause c0 (what it waited
 * for), then four segments back to back up to its completion: TLB, cache (fill-buffer
 * wait included), execution latency (insns), and x (its fixed price, part xpart). */
struct tl {
	u64 start;
	u32 tlb, cache, lat, x;
	u8 c0, xpart;
};

static inline u64 tl_end(const struct tl *t)
{
	return t->start + t->tlb + t->cache + t->lat + t->x;
}

/* The cause of a value produced at the timeline's end: its last nonempty segment. */
static inline u8 tl_cause(const struct tl *t)
{
	return t->x ? t->xpart : t->lat ? CORE_PART_INSNS : t->cache ? CORE_PART_CACHE
		: t->tlb ? CORE_PART_TLB : t->c0;
}

/* The commit clock moves from c->r_last to R for an instruction completing at C with
 * timeline t: the part of the advance past C is commit bandwidth (insns); the part
 * before C goes to whichever segment of the timeline it falls in. */
static inline __attribute__((always_inline)) void charge(struct core *c, const struct tl *t, u64 C, u64 R)
{
	u64 lo = c->r_last, hi = R;
	if (hi <= lo)
		return;
	if (hi > C) {
		c->part[CORE_PART_INSNS] += hi - (C > lo ? C : lo);
		if (C <= lo)
			return;
		hi = C;
	}
	u64 end = C;
	/* the overlap of (lo, hi] with the segment (end - len, end]; hi <= end throughout */
#define SEG(len, p)                                            \
	do {                                                   \
		u64 s_ = end - (len);                          \
		if (hi > s_) {                                 \
			u64 a_ = s_ > lo ? s_ : lo;            \
			c->part[p] += hi - a_;                 \
			hi = a_;                               \
		}                                              \
		end = s_;                                      \
	} while (0)
	SEG(t->x, t->xpart);
	SEG(t->lat, CORE_PART_INSNS);
	SEG(t->cache, CORE_PART_CACHE);
	SEG(t->tlb, CORE_PART_TLB);
#undef SEG
	if (hi > lo)
		c->part[t->c0] += hi - lo;
}

/* Dispatch of u uops (nld loads, nsb store-buffer entries): in order, at most width per
 * cycle, after the floor, with room in the ROB and the load and store buffers; `drain`
 * (serialising) also waits for every older instruction and the store buffer. */
static inline __attribute__((always_inline)) u64 dispatch(struct core *c, unsigned u, unsigned nld,
							 unsigned nsb, bool drain, u8 *cause)
{
	const struct core_params *P = &c->p;
	u64 t = c->floor;
	u8 tc = c->floor_cause;
	if (c->nuops + u > P->rob_size) {
		u64 f = c->rob[(c->nuops + u - 1 - P->rob_size) & c->rob_mask];
		if (f > t && f > c->d_cyc)
			c->st.rob_stalls++;
		bump(&t, &tc, f, CORE_PART_INSNS);
	}
	if (nld && c->nloads + nld > P->load_buffer) {
		u64 f = c->lb[(c->nloads + nld - 1 - P->load_buffer) & c->lb_mask];
		if (f > t && f > c->d_cyc)
			c->st.lb_stalls++;
		bump(&t, &tc, f, CORE_PART_INSNS);
	}
	if (nsb && c->nstores + nsb > P->store_buffer) {
		const struct core_store *e = &c->sb[(c->nstores + nsb - 1 - P->store_buffer) & c->sb_mask];
		if (e->drain > t && e->drain > c->d_cyc)
			c->st.sb_stalls++;
		bump(&t, &tc, e->drain, e->drain_cause);
	}
	if (drain) {
		bump(&t, &tc, c->max_c, c->max_c_cause);
		bump(&t, &tc, c->sb_last_drain, c->sb_last_cause);
	}
	const u32 W = P->width;
	if (t > c->d_cyc) {
		c->d_cyc = t;
		c->d_used = 0;
	} else {
		tc = CORE_PART_INSNS;	/* in order behind older dispatches */
	}
	if (c->d_used && c->d_used + u > W) {
		c->d_cyc++;
		c->d_used = 0;
		tc = CORE_PART_INSNS;
	}
	if (u > W) {
		c->d_cyc += (u - 1) / W;
		c->d_used = (u - 1) % W + 1;
		tc = CORE_PART_INSNS;
	} else {
		c->d_used += u;
	}
	*cause = tc;
	return c->d_cyc;
}

/* Commit of u uops completing at C: in order, at most width per cycle. Charges the
 * advance and returns the new commit time (the caller stores it). */
static inline __attribute__((always_inline)) u64 commit(struct core *c, const struct tl *t, u64 C,
							 unsigned u)
{
	const u32 W = c->p.width;
	u64 R = c->r_last;
	u32 used = c->r_used;
	if (C > R) {
		R = C;
		used = 0;
	}
	if (used && used + u > W) {
		R++;
		used = 0;
	}
	if (u > W) {
		R += (u - 1) / W;
		used = (u - 1) % W + 1;
	} else {
		used += u;
	}
	charge(c, t, C, R);
	c->r_last = R;
	c->r_used = used;
	for (unsigned k = 0; k < u; k++)
		c->rob[(c->nuops + k) & c->rob_mask] = R;
	c->nuops += u;
	return R;
}

/* A fill buffer for a miss that wants one at t and holds it for lat: the one free
 * first. Buffers are taken in program order (a younger miss never takes a buffer during
 * a gap before an older miss's turn). Returns when the miss starts. */
static u64 fb_take(struct core *c, u64 t, u64 lat)
{
	unsigned best = 0;
	for (unsigned k = 1; k < c->p.fill_buffers; k++)
		if (c->fb[k] < c->fb[best])
			best = k;
	if (c->fb[best] > t) {
		t = c->fb[best];
		c->st.fb_waits++;
	}
	c->fb[best] = t + lat;
	return t;
}

/* A page walker for a walk that wants one at t and lasts lat: the one free first (in
 * program order, like the fill buffers). Returns when the walk starts. */
static u64 pw_take(struct core *c, u64 t, u64 lat)
{
	unsigned best = 0;
	for (unsigned k = 1; k < c->p.page_walkers; k++)
		if (c->pw[k] < c->pw[best])
			best = k;
	if (c->pw[best] > t) {
		t = c->pw[best];
		c->st.pw_waits++;
	}
	c->pw[best] = t + lat;
	return t;
}

/* The youngest in-flight store (not drained by t) that overlaps [va, va+size), or NULL. */
static const struct core_store *fwd_find(const struct core *c, u64 va, u32 size, u64 t)
{
	const struct core_store *best = NULL;
	u64 last = va + (size ? size : 1) - 1;
	u64 g[2] = { va >> 3, last >> 3 };
	for (unsigned i = 0; i < (g[0] == g[1] ? 1u : 2u); i++) {
		u64 v = c->fwd[g[i] & (CORE_FWD - 1)];
		if (!v)
			continue;
		u64 seq = v - 1;
		if (c->nstores - seq > CORE_SB_MAX)
			continue;
		const struct core_store *e = &c->sb[seq & c->sb_mask];
		if (e->seq != seq || e->drain <= t || e->va > last || e->va + e->size <= va)
			continue;
		if (!best || e->seq > best->seq)
			best = e;
	}
	return best;
}

static inline u32 hash_pc(u64 pc)
{
	return (u32)(pc ^ (pc >> 16) ^ (pc >> 32));
}

/* The tagged tables' history lengths: geometric, the first above gshare's 16 bits. */
/* Whether the zero-bubble BTB level holds the taken branch at pc; it holds it afterwards
 * (the least recently used of its set makes room). */
static bool btb_hit(struct core *c, u64 pc)
{
	const u64 key = pc + 1;	/* 0 is an empty way */
	/* a multiplicative hash: branches at any spacing spread over the sets (calibrate
	 * finds the same capacity with 16-byte and 64-byte spacing) */
	const u32 set = (u32)((pc * 0x9e3779b97f4a7c15ull) >> 40) & c->btb_set_mask;
	u64 *tag = &c->btb_pc[set * CORE_BTB_WAYS];
	u64 *used = &c->btb_used[tag - c->btb_pc];
	unsigned victim = 0;
	for (unsigned w = 0; w < CORE_BTB_WAYS; w++) {
		if (tag[w] == key) {
			used[w] = c->st.taken;
			return true;
		}
		if (tag[victim] && (!tag[w] || used[w] < used[victim]))
			victim = w;	/* the first empty way, else the least recently used */
	}
	tag[victim] = key;
	used[victim] = c->st.taken;
	return false;
}

static const u32 tage_hist[CORE_TAGE_TABLES] = { 24, 40, 64, 112, 192 };

/* Folds a history of len bits into w bits as it shifts (a circular shift register):
 * the new outcome comes in at bit 0, the one len outcomes old leaves at bit len % w. */
static inline u32 fold_push(u32 f, unsigned w, unsigned len, unsigned in, unsigned out)
{
	f = (f << 1) | in;
	f ^= out << (len % w);
	f ^= f >> w;
	return f & ((1u << w) - 1);
}

static void tage_push(struct core *c, bool taken)
{
	c->hptr = (c->hptr + 1) & (CORE_TAGE_HIST_MAX - 1);
	c->hist[c->hptr] = taken;
	for (unsigned i = 0; i < CORE_TAGE_TABLES; i++) {
		const u32 len = tage_hist[i];
		unsigned out = c->hist[(c->hptr - len) & (CORE_TAGE_HIST_MAX - 1)];
		c->fold_idx[i] = fold_push(c->fold_idx[i], CORE_TAGE_BITS, len, taken, out);
		c->fold_tag[i][0] = fold_push(c->fold_tag[i][0], CORE_TAGE_TAG, len, taken, out);
		c->fold_tag[i][1] = fold_push(c->fold_tag[i][1], CORE_TAGE_TAG - 1, len, taken, out);
	}
}

/* Predicts the branch, learns its outcome; true when it was mispredicted. */
static bool predict(struct core *c, unsigned cls, const struct core_branch *br)
{
	const u32 hmask = (1u << CORE_PHT_BITS) - 1;
	switch (cls) {
	case CLS_BRANCH_COND: {
		u8 *ctr = &c->pht[(hash_pc(br->pc) ^ c->ghist) & hmask];
		const bool base = *ctr >= 2;
		/* TAGE: the longest history whose tagged entry matches provides the prediction,
		 * the next shorter-history match (or the base) is the alternative */
		const u32 pcx = hash_pc(br->pc), tmask = (1u << CORE_TAGE_BITS) - 1;
		u32 idx[CORE_TAGE_TABLES];
		u16 tag[CORE_TAGE_TABLES];
		int prov = -1, alt = -1;
		for (int i = CORE_TAGE_TABLES - 1; i >= 0; i--) {
			idx[i] = (pcx ^ (pcx >> CORE_TAGE_BITS) ^ c->fold_idx[i] ^ (u32)i * 0x2f3u) & tmask;
			u16 t = (u16)((pcx ^ c->fold_tag[i][0] ^ (c->fold_tag[i][1] << 1)) &
				      ((1u << CORE_TAGE_TAG) - 1));
			tag[i] = t ? t : 1;
			if (c->tage[i][idx[i]].tag == tag[i]) {
				if (prov < 0)
					prov = i;
				else if (alt < 0)
					alt = i;
			}
		}
		const bool altp = alt >= 0 ? c->tage[alt][idx[alt]].ctr >= 0 : base;
		const bool tpred = prov >= 0 ? c->tage[prov][idx[prov]].ctr >= 0 : base;
		bool pred = tpred;
		if (prov >= 0)
			c->st.tage_provided++;
		/* the loop predictor: runs of one direction whose length repeats (a loop's
		 * body, then its exit) are predicted to end after that length again */
		struct core_loop *l = &c->loop[hash_pc(br->pc) & (CORE_LOOP - 1)];
		bool o = br->taken;
		if (l->pc == br->pc) {
			unsigned x = l->last;
			if (l->conf[x] >= 2) {
				pred = l->cur >= l->trip[x] ? !x : x;
				c->st.loop_predicted++;
				/* a confident run length that was wrong is no longer trusted (as
				 * L-TAGE frees the entry): the run goes on under TAGE, and a run
				 * longer than the learnt one costs one mispredict, not one per
				 * execution past the old length */
				if (pred != o)
					l->conf[x] = 0;
			}
			if (o == l->last) {
				l->cur++;
			} else {
				if (l->trip[x] == l->cur) {
					if (l->conf[x] < 3)
						l->conf[x]++;
				} else {
					l->trip[x] = l->cur;
					l->conf[x] = 0;
				}
				l->last = o;
				l->cur = 1;
			}
		} else if (pred != o) {	/* TAGE got it wrong: track the branch here */
			*l = (struct core_loop){ .pc = br->pc, .trip = { ~0u, ~0u }, .cur = 1, .last = o };
		}
		/* TAGE's update: the provider's counter (else the base's), its usefulness when
		 * it differed from the alternative, and on a wrong prediction a new entry in a
		 * longer table (the first whose entry is not useful; else all of them age) */
		if (prov >= 0) {
			struct core_tage *e = &c->tage[prov][idx[prov]];
			if (o && e->ctr < 3)
				e->ctr++;
			else if (!o && e->ctr > -4)
				e->ctr--;
			if (tpred != altp) {
				if (tpred == o && e->u < 3)
					e->u++;
				else if (tpred != o && e->u > 0)
					e->u--;
			}
		}
		if (prov < 0) {
			if (o && *ctr < 3)
				(*ctr)++;
			else if (!o && *ctr > 0)
				(*ctr)--;
		}
		if (tpred != o && prov < CORE_TAGE_TABLES - 1) {
			int j = prov + 1;
			while (j < CORE_TAGE_TABLES && c->tage[j][idx[j]].u)
				j++;
			if (j < CORE_TAGE_TABLES)
				c->tage[j][idx[j]] = (struct core_tage){ .tag = tag[j], .ctr = o ? 0 : -1 };
			else
				for (j = prov + 1; j < CORE_TAGE_TABLES; j++)
					c->tage[j][idx[j]].u--;
		}
		if (++c->tage_tick >= CORE_TAGE_AGE) {
			c->tage_tick = 0;
			for (unsigned i = 0; i < CORE_TAGE_TABLES; i++)
				for (unsigned k = 0; k <= tmask; k++)
					c->tage[i][k].u >>= 1;
		}
		c->ghist = ((c->ghist << 1) | o) & hmask;
		tage_push(c, o);
		return pred != o;
	}
	case CLS_CALL_DIRECT:
		c->ras[c->ras_top++ % CORE_RAS] = br->next;
		return false;
	case CLS_CALL_INDIRECT:
		c->ras[c->ras_top++ % CORE_RAS] = br->next;
		__attribute__((fallthrough));	/* the target as for an indirect jump */
	case CLS_JMP_INDIRECT: {
		u64 *slot = &c->itt[hash_pc(br->pc) & (CORE_ITT - 1)];
		bool mis = *slot != br->target;
		*slot = br->target;
		return mis;
	}
	case CLS_RET:
		if (!c->ras_top)
			return true;
		return c->ras[--c->ras_top % CORE_RAS] != br->target;
	default:
		return false;	/* direct jumps: the target is in the instruction */
	}
}

/* Classes that need more than dataflow: one test on the fast path. */
enum { CF_BRANCH = 1, CF_SERIAL = 2, CF_FENCE_M = 4, CF_FENCE_L = 8, CF_ATOMIC = 16 };
static const u8 cls_flags[NR_CLS] = {
	[CLS_BRANCH_COND] = CF_BRANCH, [CLS_JMP_DIRECT] = CF_BRANCH, [CLS_JMP_INDIRECT] = CF_BRANCH,
	[CLS_CALL_DIRECT] = CF_BRANCH, [CLS_CALL_INDIRECT] = CF_BRANCH, [CLS_RET] = CF_BRANCH,
	[CLS_SERIALISING] = CF_SERIAL, [CLS_FENCE_M] = CF_FENCE_M, [CLS_FENCE_L] = CF_FENCE_L,
	[CLS_ATOMIC] = CF_ATOMIC,
};

#define REG_MASK ((1ull << CORE_NREGS) - 1)

/* The latest ready time (and its cause) over the registers in m, from t on. */
static inline __attribute__((always_inline)) void regs_ready(const struct core *c, u64 m, u64 *t, u8 *cause)
{
	for (; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);
		bump(t, cause, c->ready[r], c->rcause[r]);
	}
}

static inline __attribute__((always_inline)) void regs_write(struct core *c, u64 m, u64 C, u8 cause)
{
	for (m &= REG_MASK; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);
		c->ready[r] = C;
		c->rcause[r] = cause;
	}
}

/* The common case: no memory access, plain dataflow (ALU, moves, multiplies, vector
 * ops, nops): dispatch, wait for the inputs, execute, commit. */
static u64 insn_plain(struct core *c, const struct core_op *op, unsigned cls, unsigned u)
{
	u8 dc;
	const u64 D = dispatch(c, u, 0, 0, false, &dc);
	struct tl t = { .start = D, .c0 = dc, .xpart = CORE_PART_PEN };
	if (cls != CLS_ZERO_IDIOM)
		regs_ready(c, op->reg_read & REG_MASK, &t.start, &t.c0);
	bump(&t.start, &t.c0, c->issue_floor, c->issue_cause);
	t.lat = c->p.lat[cls];
	if (cls == CLS_MOVE && (op->flags & CORE_OPF_ELIM))
		t.lat = 0;
	t.x = op->pen;
	const u64 C = tl_end(&t);
	const u8 wc = tl_cause(&t);
	const u64 R = commit(c, &t, C, u);
	regs_write(c, op->reg_write, C, wc);
	bump(&c->max_c, &c->max_c_cause, C, wc);
	c->st.insns++;
	c->st.uops += u;
	return R;
}

u64 core_insn(struct core *c, const struct core_op *op, const struct core_mem *acc, unsigned nacc,
	      const struct core_branch *br)
{
	const struct core_params *P = &c->p;
	unsigned cls = op->cls < NR_CLS ? op->cls : CLS_OTHER;
	unsigned u = op->uops ? op->uops : 1;
	if (u > P->rob_size)
		u = P->rob_size;
	const unsigned cf = cls_flags[cls];
	if (!nacc && !cf)
		return insn_plain(c, op, cls, u);
	const bool atomic = cf & CF_ATOMIC;
	unsigned nld = 0, nst = 0;
	for (unsigned i = 0; i < nacc; i++) {
		if (acc[i].is_store)
			nst++;
		else
			nld++;
	}
	/* an atomic's store half is part of its locked execution, not a store-buffer entry */
	const unsigned nsb = atomic ? 0 : nst;

	u8 dc;
	const u64 D = dispatch(c, u, nld, nsb, cls == CLS_SERIALISING, &dc);

	/* issue: address registers gate the accesses, the other reads the operation */
	u64 Ia = D, Id = D;
	u8 ca = dc, cd = dc;
	u64 rd = cls == CLS_ZERO_IDIOM ? 0 : op->reg_read & REG_MASK;
	u64 addr = nacc ? (op->reg_addr & rd) : 0;
	regs_ready(c, rd & ~addr, &Id, &cd);
	regs_ready(c, addr, &Ia, &ca);
	bump(&Ia, &ca, c->issue_floor, c->issue_cause);
	bump(&Id, &cd, c->issue_floor, c->issue_cause);
	if (nld || atomic)
		bump(&Ia, &ca, c->load_floor, c->load_cause);
	if (atomic || cls == CLS_FENCE_M) {
		bump(&Ia, &ca, c->sb_last_drain, c->sb_last_cause);
		bump(&Id, &cd, c->sb_last_drain, c->sb_last_cause);
	}
	if (cls == CLS_FENCE_M || cls == CLS_FENCE_L)
		bump(&Id, &cd, c->max_c, c->max_c_cause);

	/* loads (and an atomic's whole access): the one that completes last sets the pace */
	struct tl t;
	u64 Lc = 0;
	bool any_ld = false;
	for (unsigned i = 0; i < nacc; i++) {
		const struct core_mem *a = &acc[i];
		if (a->is_store && !atomic)
			continue;
		struct tl lt = { .start = Ia, .c0 = ca, .xpart = CORE_PART_PEN };
		const struct core_store *e = a->is_store ? NULL : fwd_find(c, a->va, a->size, Ia);
		if (e && e->va <= a->va && a->va + a->size <= e->va + e->size) {
			/* forwarded from the store buffer, whatever the hierarchy said */
			bump(&lt.start, &lt.c0, e->data, e->data_cause);
			lt.cache = P->l1d_lat;
			c->st.forwards++;
		} else {
			if (e) {	/* partly overlapped: it waits until that store is written */
				bump(&lt.start, &lt.c0, e->drain, e->drain_cause);
				c->st.fwd_blocked++;
			}
			lt.tlb = a->tlb_lat;
			if (a->walk)	/* waiting for a walker is TLB time too */
				lt.tlb += (u32)(pw_take(c, lt.start, a->tlb_lat) - lt.start);
			lt.cache = a->cache_lat;
			if (a->l1_miss) {
				u64 cs = lt.start + lt.tlb;
				lt.cache += (u32)(fb_take(c, cs, a->cache_lat) - cs);
			}
		}
		u64 done = tl_end(&lt);
		if (!any_ld || done > Lc) {
			Lc = done;
			t = lt;
			any_ld = true;
		}
	}
	/* the operation starts when its data inputs and its loads are there */
	if (!any_ld || Lc < Id) {
		if (!any_ld)
			bump(&Id, &cd, Ia, ca);	/* a store needs its address too */
		t = (struct tl){ .start = Id, .c0 = cd };
	}
	t.lat = P->lat[cls];
	if (cls == CLS_MOVE && (op->flags & CORE_OPF_ELIM))
		t.lat = 0;
	t.x = op->pen;
	t.xpart = CORE_PART_PEN;
	const u64 C = tl_end(&t);
	const u8 wc = tl_cause(&t);

	const u64 R = commit(c, &t, C, u);

	for (unsigned i = 0; i < nld; i++)
		c->lb[(c->nloads + i) & c->lb_mask] = R;
	c->nloads += nld;
	regs_write(c, op->reg_write, C, wc);
	bump(&c->max_c, &c->max_c_cause, C, wc);

	/* stores: into the store buffer; written to the L1d in order, one per cycle at
	 * best, after commit and after the line is owned (the RFO starts at issue) */
	if (nsb) {
		for (unsigned i = 0; i < nacc; i++) {
			const struct core_mem *a = &acc[i];
			if (!a->is_store)
				continue;
			u64 rs = Ia;
			if (a->walk)
				rs = pw_take(c, rs, a->tlb_lat);
			rs += a->tlb_lat;
			if (a->l1_miss)
				rs = fb_take(c, rs, a->cache_lat);
			u64 rfo = rs + a->cache_lat;
			/* in order, stores_per_cycle per cycle at best */
			u64 dr = c->sb_last_drain + (c->sb_drain_used >= c->p.stores_per_cycle);
			u8 dcause = CORE_PART_INSNS;
			if (R > dr)
				dr = R;
			if (rfo > dr) {
				dr = rfo;
				dcause = a->tlb_lat > a->cache_lat ? CORE_PART_TLB : CORE_PART_CACHE;
			}
			u64 seq = c->nstores++;
			struct core_store *e = &c->sb[seq & c->sb_mask];
			e->seq = seq;
			e->va = a->va;
			e->size = a->size ? a->size : 1;
			e->data = C;
			e->data_cause = wc;
			e->drain = dr;
			e->drain_cause = dcause;
			u64 g0 = a->va >> 3, g1 = (a->va + e->size - 1) >> 3;
			if (g1 - g0 > 7)
				g1 = g0 + 7;
			for (u64 g = g0; g <= g1; g++)
				c->fwd[g & (CORE_FWD - 1)] = seq + 1;
			c->sb_drain_used = dr == c->sb_last_drain ? c->sb_drain_used + 1 : 1;
			c->sb_last_drain = dr;
			c->sb_last_cause = dcause;
		}
	}

	/* what younger instructions must wait for */
	if (cls == CLS_SERIALISING)
		bump(&c->floor, &c->floor_cause, C, wc);
	else if (atomic || cls == CLS_FENCE_M)
		bump(&c->load_floor, &c->load_cause, C, wc);
	else if (cls == CLS_FENCE_L)
		bump(&c->issue_floor, &c->issue_cause, C, wc);
	if ((cf & CF_BRANCH) && br) {
		c->st.branches++;
		if (predict(c, cls, br)) {
			c->st.mispredicts++;
			bump(&c->floor, &c->floor_cause, C + P->mispredict, CORE_PART_BRANCH);
		}
		/* the front end follows taken_per_cycle taken branches per cycle, or
		 * loop_taken_per_cycle inside a loop of at most loop_branches taken branches:
		 * the one that uses up the budget is the last instruction of its dispatch cycle */
		if (cls != CLS_BRANCH_COND || br->taken) {
			c->st.taken++;
			u32 budget = P->taken_per_cycle;
			if (P->loop_branches) {
				for (u32 i = 0; i < P->loop_branches; i++)
					if (c->lt_pc[i] == br->pc + 1) {
						budget = P->loop_taken_per_cycle;
						c->st.loop_taken++;
						break;
					}
				c->lt_pc[c->lt_n] = br->pc + 1;	/* + 1: 0 is an empty slot */
				c->lt_n = c->lt_n + 1 == P->loop_branches ? 0 : c->lt_n + 1;
			}
			if (c->tk_cyc != D) {
				c->tk_cyc = D;
				c->tk_used = 0;
			}
			if (++c->tk_used >= budget && c->d_cyc == D && c->d_used < P->width) {
				c->d_used = P->width;
				c->st.taken_stops++;
			}
			/* a taken branch the zero-bubble BTB level does not hold: its target
			 * comes from a slower level, and the front end delivers nothing for
			 * btb_bubble cycles after the branch's dispatch cycle */
			if (P->btb_l0_entries && !btb_hit(c, br->pc)) {
				c->st.btb_misses++;
				if (P->btb_bubble) {	/* d_cyc is D: nothing moved it since */
					c->d_cyc = D + P->btb_bubble;
					c->d_used = P->width;
				}
			}
		}
	}
	c->st.insns++;
	c->st.uops += u;
	c->st.loads += nld;
	c->st.stores += nst;
	return R;
}

u64 core_fixed(struct core *c, u64 cycles, enum core_part part, unsigned flags)
{
	u8 dc;
	u64 D = dispatch(c, 1, 0, 0, flags & CORE_FIX_DRAIN, &dc);
	struct tl t = { .start = D, .c0 = dc, .x = (u32)cycles, .xpart = (u8)part };
	bump(&t.start, &t.c0, c->issue_floor, c->issue_cause);
	u64 C = tl_end(&t);
	u64 R = commit(c, &t, C, 1);
	u8 wc = tl_cause(&t);
	bump(&c->max_c, &c->max_c_cause, C, wc);
	bump(&c->floor, &c->floor_cause, C, wc);
	c->st.insns++;
	c->st.uops++;
	return R;
}

void core_advance_to(struct core *c, u64 t, enum core_part part)
{
	if (t > c->r_last) {
		c->part[part] += t - c->r_last;
		c->r_last = t;
		c->r_used = 0;
	}
	bump(&c->floor, &c->floor_cause, t, (u8)part);
}

void core_drain(struct core *c)
{
	bump(&c->floor, &c->floor_cause, c->r_last, CORE_PART_INSNS);
}
