/*
 * Host test of the out-of-order core (core.c) on synthetic instruction streams with a
 * small test profile: each expectation fails if the mechanism it names breaks, and every
 * test checks that the parts add up to the clock. Run by make host-test.
 */
#include <stdio.h>
#include <string.h>
#include "tests/host/htest.h"
#include "model/core.h"

#define MISS 200	/* a load that goes to memory in these streams */

static struct core_params test_params(void)
{
	struct profile prof;
	memset(&prof, 0, sizeof(prof));
	prof.core_width = 4;
	prof.rob_size = 224;
	prof.load_buffer = 72;
	prof.store_buffer = 56;
	prof.fill_buffers = 10;
	prof.page_walkers = 2;
	prof.stores_per_cycle = 1;
	prof.taken_per_cycle = 1;
	prof.mispredict = 16;
	prof.l1d_lat = 4;
	prof.lat_imul = 3;
	prof.lat_div = 40;
	prof.lat_vec = 1;
	prof.lat_fp = 4;
	prof.lat_fpdiv = 14;
	return core_params_from_profile(&prof);
}

/* One core per test: struct core is large, keep it off the stack. */
static struct core C;

static void setup(const struct core_params *p)
{
	int r = core_init(&C, p);
	if (r)
		abort();
}

static u64 parts_sum(const struct core *c)
{
	u64 p[NR_CORE_PART], s = 0;
	core_parts(c, p);
	for (int k = 0; k < NR_CORE_PART; k++)
		s += p[k];
	return s;
}

static u64 part(const struct core *c, enum core_part k)
{
	u64 p[NR_CORE_PART];
	core_parts(c, p);
	return p[k];
}

#define R(n) CORE_BIT(CORE_REG_GPR(n))
#define PARTS_ADD_UP() HT_EXPECT_EQ(parts_sum(&C), core_now(&C))

static void alu(u64 rd, u64 wr)
{
	struct core_op op = { .reg_read = rd, .reg_write = wr, .cls = CLS_ALU, .uops = 1 };
	core_insn(&C, &op, NULL, 0, NULL);
}

/* mov (addr_reg), dst: a load of size bytes, `lat` cycles from the hierarchy */
static void load_sz(unsigned addr_reg, unsigned dst, u64 va, u32 size, u32 lat, bool miss)
{
	struct core_op op = { .reg_read = R(addr_reg), .reg_addr = R(addr_reg), .reg_write = R(dst),
			      .cls = CLS_LOAD, .uops = 1 };
	struct core_mem m = { .va = va, .size = size, .cache_lat = lat, .l1_miss = miss };
	core_insn(&C, &op, &m, 1, NULL);
}

static void load(unsigned addr_reg, unsigned dst, u64 va, u32 lat, bool miss)
{
	load_sz(addr_reg, dst, va, 8, lat, miss);
}

/* mov src, (addr_reg) */
static void store(unsigned addr_reg, unsigned src, u64 va, u32 size, u32 lat, bool miss)
{
	struct core_op op = { .reg_read = R(addr_reg) | R(src), .reg_addr = R(addr_reg),
			      .cls = CLS_STORE, .uops = 1 };
	struct core_mem m = { .va = va, .size = size, .is_store = true, .cache_lat = lat, .l1_miss = miss };
	core_insn(&C, &op, &m, 1, NULL);
}

static void cond_branch(u64 pc, bool taken)
{
	struct core_op op = { .reg_read = CORE_BIT(CORE_REG_FLAGS), .cls = CLS_BRANCH_COND, .uops = 1 };
	struct core_branch b = { .pc = pc, .target = pc + 0x40, .next = pc + 2, .taken = taken };
	core_insn(&C, &op, NULL, 0, &b);
}

/* mov (addr_reg), dst whose translation missed the STLB: a page walk of walk_lat first */
static void load_walk(unsigned addr_reg, unsigned dst, u64 va, u32 walk_lat)
{
	struct core_op op = { .reg_read = R(addr_reg), .reg_write = R(dst), .reg_addr = R(addr_reg),
			      .cls = CLS_LOAD, .uops = 1 };
	struct core_mem m = { .va = va, .size = 8, .cache_lat = 4, .tlb_lat = walk_lat, .walk = true };
	core_insn(&C, &op, &m, 1, NULL);
}

/* Independent loads that each walk overlap their walks page_walkers at a time: n walks
 * of W cycles take about n * W / page_walkers, not n * W (no limit) nor W (all at once). */
HTEST(page_walkers_bound_walk_overlap)
{
	const unsigned n = 64, W = 40;
	struct core_params p = test_params();
	for (unsigned walkers = 1; walkers <= 4; walkers *= 2) {
		p.page_walkers = walkers;
		setup(&p);
		for (unsigned i = 0; i < n; i++)
			load_walk(1, 2 + i % 8, 0x1000ull * (i + 1), W);
		u64 t = core_now(&C), want = (u64)n * W / walkers;
		HT_EXPECT(t >= want && t <= want + W + 20);
		HT_EXPECT_EQ(C.st.pw_waits, (u64)(n - walkers));
		PARTS_ADD_UP();
	}
}

HTEST(params_from_profile)
{
	struct core_params p = test_params();
	HT_EXPECT_EQ(p.width, 4);
	HT_EXPECT_EQ(p.rob_size, 224);
	HT_EXPECT_EQ(p.lat[CLS_ALU], 1);
	HT_EXPECT_EQ(p.lat[CLS_ZERO_IDIOM], 0);
	HT_EXPECT_EQ(p.lat[CLS_IMUL], 3);
	HT_EXPECT_EQ(p.lat[CLS_DIV], 40);
	HT_EXPECT_EQ(p.lat[CLS_VEC_FP], 4);
	HT_EXPECT_EQ(p.lat[CLS_FP_DIV], 14);
	HT_EXPECT_EQ(p.lat[CLS_LOAD], 0);
	struct core_params bad = p;
	bad.rob_size = CORE_ROB_MAX + 1;
	HT_EXPECT(core_init(&C, &bad) == -1);
	bad = p;
	bad.width = 0;
	HT_EXPECT(core_init(&C, &bad) == -1);
	/* the profiles in the tree give sizes that fit the rings */
	const char *files[] = { "model/profiles/skylake-sp.cfg", "model/profiles/zen3.cfg" };
	for (unsigned i = 0; i < 2; i++) {
		struct profile prof;
		char err[256];
		HT_ASSERT(profile_load(files[i], &prof, err, sizeof(err)) == 0);
		struct core_params q = core_params_from_profile(&prof);
		HT_EXPECT_EQ(core_init(&C, &q), 0);
	}
}

/* A dependent chain of loads costs n x the load latency: nothing overlaps. */
HTEST(pointer_chase_is_serial)
{
	struct core_params p = test_params();
	setup(&p);
	const unsigned n = 100;
	for (unsigned i = 0; i < n; i++)
		load(0, 0, 0x1000 + 64 * i, MISS, true);
	HT_EXPECT_EQ(core_now(&C), (u64)n * MISS);
	HT_EXPECT_EQ(part(&C, CORE_PART_CACHE), (u64)n * MISS);
	PARTS_ADD_UP();
	/* with an L1 hit: n x l1d_lat */
	setup(&p);
	for (unsigned i = 0; i < n; i++)
		load(0, 0, 0x1000, 4, false);
	HT_EXPECT_EQ(core_now(&C), (u64)n * 4);
	PARTS_ADD_UP();
}

static u64 chases(unsigned k, unsigned n, unsigned fbs)
{
	struct core_params p = test_params();
	p.fill_buffers = fbs;
	setup(&p);
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < k; j++)
			load(j, j, 0x100000 * (j + 1) + 64 * i, MISS, true);
	return core_now(&C);
}

/* k independent chases overlap (memory-level parallelism), bounded by the fill buffers. */
HTEST(independent_chases_overlap)
{
	const unsigned n = 50;
	u64 one = chases(1, n, 10);
	PARTS_ADD_UP();
	u64 eight = chases(8, n, 10);
	PARTS_ADD_UP();
	/* per load: one chase 200, eight chases >= 5x less */
	HT_EXPECT(one == (u64)n * MISS);
	/* per load: eight / (8n) at least 5x below one / n */
	HT_EXPECT(eight * 5 <= one * 8);
	HT_EXPECT(eight <= (u64)n * MISS + 100);	/* all eight in flight together */
	/* 16 chases with 10 fill buffers: at most 10 misses in flight */
	u64 sixteen = chases(16, n, 10);
	PARTS_ADD_UP();
	HT_EXPECT(sixteen >= (u64)16 * n * MISS / 10);
	HT_EXPECT(C.st.fb_waits > 0);
	/* eight chases with 4 fill buffers: at most 4 in flight */
	u64 four = chases(8, n, 4);
	PARTS_ADD_UP();
	HT_EXPECT(four >= (u64)8 * n * MISS / 4);
	HT_EXPECT(four <= (u64)8 * n * MISS / 4 + 2 * MISS);
}

/* Independent single-uop ALU ops reach core_width per cycle; a dependent chain 1. */
HTEST(alu_throughput_and_chain)
{
	struct core_params p = test_params();
	setup(&p);
	const unsigned n = 4000;
	for (unsigned i = 0; i < n; i++)
		alu(0, R(i % 16));
	HT_EXPECT_EQ(core_now(&C), n / 4);
	HT_EXPECT_EQ(part(&C, CORE_PART_INSNS), n / 4);
	PARTS_ADD_UP();
	p.width = 6;
	setup(&p);
	for (unsigned i = 0; i < 6000; i++)
		alu(0, R(i % 16));
	HT_EXPECT_EQ(core_now(&C), 1000);
	PARTS_ADD_UP();
	/* two-uop instructions: half as many per cycle */
	p.width = 4;
	setup(&p);
	for (unsigned i = 0; i < n; i++) {
		struct core_op op = { .reg_write = R(i % 16), .cls = CLS_ALU, .uops = 2 };
		core_insn(&C, &op, NULL, 0, NULL);
	}
	HT_EXPECT_EQ(core_now(&C), n / 2);
	PARTS_ADD_UP();
	/* a chain behind 400 independent ops starts when it dispatches, at cycle 100: the
	 * dispatch width shows, not only the commit width */
	setup(&p);
	for (unsigned i = 0; i < 400; i++)
		alu(0, R(1 + i % 8));
	for (unsigned i = 0; i < 100; i++)
		alu(R(0), R(0));
	HT_EXPECT_EQ(core_now(&C), 100 + 100);
	PARTS_ADD_UP();
	/* dependent chain */
	setup(&p);
	for (unsigned i = 0; i < n; i++)
		alu(R(3), R(3));
	HT_EXPECT_EQ(core_now(&C), n);
	PARTS_ADD_UP();
	/* imul chain: lat_imul each */
	setup(&p);
	for (unsigned i = 0; i < 100; i++) {
		struct core_op op = { .reg_read = R(0), .reg_write = R(0), .cls = CLS_IMUL, .uops = 1 };
		core_insn(&C, &op, NULL, 0, NULL);
	}
	HT_EXPECT_EQ(core_now(&C), 300);
	PARTS_ADD_UP();
	/* zero idioms and eliminated moves take no latency on a chain */
	setup(&p);
	for (unsigned i = 0; i < 100; i++) {
		struct core_op z = { .reg_read = R(0), .reg_write = R(0), .cls = CLS_ZERO_IDIOM, .uops = 1 };
		struct core_op mv = { .reg_read = R(0), .reg_write = R(1), .cls = CLS_MOVE, .uops = 1,
				      .flags = CORE_OPF_ELIM };
		struct core_op back = { .reg_read = R(1), .reg_write = R(0), .cls = CLS_MOVE, .uops = 1,
					.flags = CORE_OPF_ELIM };
		core_insn(&C, &z, NULL, 0, NULL);
		core_insn(&C, &mv, NULL, 0, NULL);
		core_insn(&C, &back, NULL, 0, NULL);
	}
	HT_EXPECT(core_now(&C) <= 300 / 4 + 1);
	PARTS_ADD_UP();
	setup(&p);
	for (unsigned i = 0; i < 100; i++) {
		struct core_op mv = { .reg_read = R(0), .reg_write = R(1), .cls = CLS_MOVE, .uops = 1 };
		struct core_op back = { .reg_read = R(1), .reg_write = R(0), .cls = CLS_MOVE, .uops = 1 };
		core_insn(&C, &mv, NULL, 0, NULL);
		core_insn(&C, &back, NULL, 0, NULL);
	}
	HT_EXPECT_EQ(core_now(&C), 200);	/* not eliminated: 1 cycle each */
	PARTS_ADD_UP();
}

/* L1-hit loads hide behind independent work: the clock is the uop count / width. */
HTEST(l1_hits_hidden)
{
	struct core_params p = test_params();
	setup(&p);
	const unsigned n = 1000;
	for (unsigned i = 0; i < n; i++) {
		load(15, (i % 4) + 4, 0x2000 + 8 * (i % 64), 4, false);
		alu(R((i % 4) + 4), R((i % 4) + 4));	/* uses the loaded value */
		alu(0, R(8 + i % 4));
		alu(0, R(12 + i % 2));
	}
	HT_EXPECT(core_now(&C) <= 4 * n / 4 + 4 + 1);
	HT_EXPECT(core_now(&C) >= 4 * n / 4);
	/* the in-order sum would be n x (4 + 3) */
	HT_EXPECT(core_now(&C) * 5 < (u64)n * 7 * 1);
	PARTS_ADD_UP();
}

/* Henry Wong's ROB test: two independent misses separated by N fillers overlap while
 * N fits in the ROB and serialise once it does not. */
static u64 rob_pair(unsigned rob, unsigned fill)
{
	struct core_params p = test_params();
	p.rob_size = rob;
	setup(&p);
	load(15, 0, 0x10000, MISS, true);
	for (unsigned i = 0; i < fill; i++) {
		struct core_op nop = { .cls = CLS_NOP, .uops = 1 };
		core_insn(&C, &nop, NULL, 0, NULL);
	}
	load(14, 1, 0x20000, MISS, true);
	return core_now(&C);
}

HTEST(rob_bounds_the_window)
{
	u64 in = rob_pair(224, 200);
	PARTS_ADD_UP();
	u64 out = rob_pair(224, 260);
	PARTS_ADD_UP();
	HT_EXPECT(C.st.rob_stalls > 0);
	HT_EXPECT(in <= MISS + 200 / 4 + 2);	/* the second miss ran under the first */
	HT_EXPECT(out >= 2 * MISS);		/* it waited for the first to commit */
	/* a bigger ROB takes the same stream in one window */
	u64 big = rob_pair(512, 260);
	PARTS_ADD_UP();
	HT_EXPECT(big <= MISS + 260 / 4 + 2);
	/* independent work behind a miss stalls once the ROB is full: 224 fillers commit
	 * after the miss, the rest dispatch as entries free */
	struct core_params p = test_params();
	setup(&p);
	load(15, 0, 0x10000, MISS, true);
	for (unsigned i = 0; i < 1000; i++)
		alu(0, R(1 + i % 8));
	HT_EXPECT(core_now(&C) >= MISS + 1000 / 4);
	HT_EXPECT(core_now(&C) <= MISS + 1000 / 4 + 3);
	HT_EXPECT(C.st.rob_stalls > 0);
	HT_EXPECT(part(&C, CORE_PART_CACHE) == MISS);
	PARTS_ADD_UP();
}

/* Missing stores retire into the store buffer and cost nothing until it is full. */
HTEST(store_buffer)
{
	struct core_params p = test_params();
	setup(&p);
	const unsigned k = 40;	/* < store_buffer */
	for (unsigned i = 0; i < k; i++) {
		store(15, 1, 0x40000 + 64 * i, 8, MISS, true);
		alu(0, R(2));
		alu(0, R(3));
		alu(0, R(4));
	}
	HT_EXPECT(core_now(&C) <= 4 * k / 4 + 2);
	HT_EXPECT_EQ(C.st.sb_stalls, 0);
	PARTS_ADD_UP();
	/* many more: the buffer fills; misses drain fill_buffers at a time */
	setup(&p);
	const unsigned m = 400;
	for (unsigned i = 0; i < m; i++) {
		store(15, 1, 0x40000 + 64 * i, 8, MISS, true);
		alu(0, R(2));
	}
	HT_EXPECT(C.st.sb_stalls > 0);
	HT_EXPECT(core_now(&C) >= (u64)(m - 56) * MISS / 10);
	HT_EXPECT(part(&C, CORE_PART_CACHE) > core_now(&C) / 2);
	PARTS_ADD_UP();
	/* L1-hit stores drain one per cycle: one every fourth uop never fills the buffer,
	 * one every other uop (two per cycle) runs at the drain rate once it is full */
	setup(&p);
	for (unsigned i = 0; i < m; i++) {
		store(15, 1, 0x40000 + 8 * (i % 8), 8, 4, false);
		alu(0, R(2));
		alu(0, R(3));
		alu(0, R(5));
	}
	HT_EXPECT(core_now(&C) <= 4 * m / 4 + 6);
	HT_EXPECT_EQ(C.st.sb_stalls, 0);
	PARTS_ADD_UP();
	setup(&p);
	for (unsigned i = 0; i < m; i++) {
		store(15, 1, 0x40000 + 8 * (i % 8), 8, 4, false);
		alu(0, R(2));
	}
	HT_EXPECT(core_now(&C) >= m - 56);
	HT_EXPECT(core_now(&C) <= m + 6);
	HT_EXPECT(C.st.sb_stalls > 0);
	PARTS_ADD_UP();
}

/* An atomic waits for the store buffer to drain; younger loads wait for the atomic. */
HTEST(atomic_drains_store_buffer)
{
	struct core_params p = test_params();
	setup(&p);
	for (unsigned i = 0; i < 20; i++)
		store(15, 1, 0x40000 + 64 * i, 8, MISS, true);
	u64 before = core_now(&C);
	HT_EXPECT(before < 20);
	/* 20 misses through 10 fill buffers: the last drains at >= 2 x MISS */
	struct core_op at = { .reg_read = R(14) | R(2), .reg_addr = R(14), .reg_write = R(2),
			      .cls = CLS_ATOMIC, .uops = 3, .pen = 18 };
	struct core_mem am[2] = {
		{ .va = 0x90000, .size = 8, .cache_lat = 4 },
		{ .va = 0x90000, .size = 8, .is_store = true, .cache_lat = 4 },
	};
	core_insn(&C, &at, am, 2, NULL);
	u64 after = core_now(&C);
	HT_EXPECT(after >= 2 * MISS + 4 + 1 + 18);
	HT_EXPECT(part(&C, CORE_PART_PEN) == 18);
	PARTS_ADD_UP();
	/* an independent load after it issues only once it completed */
	load(13, 5, 0xa0000, 4, false);
	HT_EXPECT_EQ(core_now(&C), after + 4);
	/* without the atomic, the same load is not held up */
	setup(&p);
	for (unsigned i = 0; i < 20; i++)
		store(15, 1, 0x40000 + 64 * i, 8, MISS, true);
	load(13, 5, 0xa0000, 4, false);
	HT_EXPECT(core_now(&C) < 20);
	/* mfence waits for the buffer too and holds younger loads */
	struct core_op mf = { .cls = CLS_FENCE_M, .uops = 1, .pen = 33 };
	core_insn(&C, &mf, NULL, 0, NULL);
	u64 fenced = core_now(&C);
	HT_EXPECT(fenced >= 2 * MISS + 33);
	load(12, 6, 0xb0000, 4, false);
	HT_EXPECT_EQ(core_now(&C), fenced + 4);
	PARTS_ADD_UP();
}

/* A load of bytes an in-flight store wrote gets them from the store. */
HTEST(store_to_load_forwarding)
{
	struct core_params p = test_params();
	setup(&p);
	/* the store's data comes from a 40-cycle div; its line misses */
	struct core_op dv = { .reg_read = R(1), .reg_write = R(1), .cls = CLS_DIV, .uops = 1 };
	core_insn(&C, &dv, NULL, 0, NULL);
	store(15, 1, 0x5000, 8, MISS, true);
	/* the hierarchy says MISS for the load: the store buffer serves it */
	load(14, 2, 0x5000, MISS, true);
	HT_EXPECT_EQ(C.st.forwards, 1);
	u64 t = core_now(&C);
	HT_EXPECT_EQ(t, 40 + 1 + 4);	/* div, then the store's data, then l1d_lat */
	PARTS_ADD_UP();
	/* a contained smaller load forwards too */
	load_sz(14, 3, 0x5004, 4, MISS, true);
	HT_EXPECT_EQ(C.st.forwards, 2);
	/* a load straddling the store's end overlaps it only partly */
	load(14, 3, 0x5004, 4, false);
	HT_EXPECT_EQ(C.st.fwd_blocked, 1);
	/* a load of another line goes to the hierarchy */
	load(14, 4, 0x5040, MISS, true);
	HT_EXPECT_EQ(C.st.forwards, 2);
	HT_EXPECT(core_now(&C) >= MISS);
	PARTS_ADD_UP();
	/* partial overlap (8-byte load over a 4-byte store): waits for the store's drain */
	setup(&p);
	store(15, 1, 0x6000, 4, MISS, true);
	load(14, 2, 0x6000, 4, false);
	HT_EXPECT_EQ(C.st.fwd_blocked, 1);
	HT_EXPECT(core_now(&C) >= MISS + 4);
	PARTS_ADD_UP();
	/* a store that has drained no longer forwards */
	setup(&p);
	store(15, 1, 0x7000, 8, 4, false);
	for (unsigned i = 0; i < 40; i++)
		alu(R(3), R(3));
	load(3, 2, 0x7000, 4, false);
	HT_EXPECT_EQ(C.st.forwards, 0);
	PARTS_ADD_UP();
}

static u64 lcg(u64 *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* A loop branch the predictor learns costs nothing; a random one ~ mispredict / 2. */
HTEST(branch_prediction)
{
	struct core_params p = test_params();
	const unsigned n = 2000;
	/* baseline: the loop body without its branch */
	setup(&p);
	for (unsigned i = 0; i < n; i++) {
		alu(0, R(1));
		alu(0, R(2));
		alu(0, R(3));
	}
	u64 base = core_now(&C);
	/* with an always-taken loop branch */
	setup(&p);
	for (unsigned i = 0; i < n; i++) {
		alu(0, R(1));
		alu(0, R(2));
		alu(0, R(3) | CORE_BIT(CORE_REG_FLAGS));
		cond_branch(0x401000, true);
	}
	u64 loop = core_now(&C);
	HT_EXPECT(C.st.mispredicts <= 20);	/* warm-up only: the history fills */
	HT_EXPECT(loop <= base + n / 4 + 20 * (16 + 2));	/* its own uop, plus warm-up */
	PARTS_ADD_UP();
	/* a random branch */
	setup(&p);
	u64 s = 42;
	for (unsigned i = 0; i < n; i++) {
		alu(0, R(1));
		alu(0, R(2));
		alu(0, R(3) | CORE_BIT(CORE_REG_FLAGS));
		cond_branch(0x401000, lcg(&s) & 1);
	}
	u64 rnd = core_now(&C);
	HT_EXPECT(C.st.mispredicts >= n * 4 / 10 && C.st.mispredicts <= n * 6 / 10);
	u64 extra = rnd - loop;	/* per branch ~ mispredict / 2 */
	HT_EXPECT(extra >= (u64)n * 16 * 35 / 100);
	HT_EXPECT(extra <= (u64)n * 16 * 70 / 100);
	HT_EXPECT(part(&C, CORE_PART_BRANCH) >= C.st.mispredicts * 15);
	PARTS_ADD_UP();
	/* a pattern gshare learns from the history: taken every other time */
	setup(&p);
	for (unsigned i = 0; i < n; i++) {
		alu(0, R(1) | CORE_BIT(CORE_REG_FLAGS));
		cond_branch(0x402000, i & 1);
	}
	HT_EXPECT(C.st.mispredicts <= 30);
	PARTS_ADD_UP();
}

/* The front end follows taken_per_cycle taken branches per cycle: two taken branches per
 * iteration of a 6-uop loop cost 2 cycles at one per cycle, 1 at two; not-taken ones cost
 * only their uop. */
HTEST(taken_branch_throughput)
{
	struct core_params p = test_params();
	p.width = 8;
	const unsigned n = 1000;
	u64 cyc[3];
	for (unsigned k = 0; k < 3; k++) {
		p.taken_per_cycle = k ? k : 1;
		setup(&p);
		for (unsigned i = 0; i < n; i++) {
			alu(0, R(1) | CORE_BIT(CORE_REG_FLAGS));
			cond_branch(0x401000, k != 0);	/* k = 0: the same loop, falls through */
			alu(0, R(2));
			alu(0, R(3));
			alu(0, R(4) | CORE_BIT(CORE_REG_FLAGS));
			cond_branch(0x401010, k != 0);
		}
		cyc[k] = core_now(&C);
		HT_EXPECT_EQ(C.st.taken, k ? 2 * n : 0);
		PARTS_ADD_UP();
	}
	/* not taken: 6 uops per iteration at width 8 */
	HT_EXPECT(cyc[0] <= n * 6 / 8 + 20);
	/* one taken per cycle: each branch ends its cycle, 2 cycles per iteration; two per
	 * cycle: one (plus the same predictor warm-up in both, a few mispredicts) */
	HT_EXPECT(cyc[1] >= 2 * n && cyc[1] <= 2 * n + 20 * (16 + 2));
	HT_EXPECT(cyc[2] >= n && cyc[2] <= n + 20 * (16 + 2));
	HT_EXPECT(cyc[1] - cyc[2] >= n - 10 && cyc[1] - cyc[2] <= n + 10);
	/* a direct jump is a taken branch too */
	p.taken_per_cycle = 1;
	setup(&p);
	for (unsigned i = 0; i < n; i++) {
		struct core_op op = { .cls = CLS_JMP_DIRECT, .uops = 1 };
		struct core_branch b = { .pc = 0x5000 + 16 * i, .target = 0x5010 + 16 * i, .taken = true };
		core_insn(&C, &op, NULL, 0, &b);
	}
	HT_EXPECT(core_now(&C) >= n - 5);
	HT_EXPECT(C.st.taken_stops >= n - 5);
	PARTS_ADD_UP();
}

/* A loop of at most loop_branches taken branches runs at loop_taken_per_cycle; one with
 * more, or any loop when loop_branches is 0, at taken_per_cycle. */
static u64 loop_of(struct core_params *p, unsigned taken_per_iter, unsigned iters)
{
	setup(p);
	for (unsigned i = 0; i < iters; i++)
		for (unsigned k = 0; k < taken_per_iter; k++) {
			alu(0, R(1 + k % 8) | CORE_BIT(CORE_REG_FLAGS));
			cond_branch(0x402000 + 0x40 * k, true);
		}
	return core_now(&C);
}

/* A taken branch the zero-bubble BTB level holds costs the taken_per_cycle stop alone;
 * one it does not hold (a footprint of more distinct taken branches than it has entries)
 * costs btb_bubble front-end cycles more. */
HTEST(btb_level_bubble)
{
	struct core_params p = test_params();
	p.width = 8;
	p.btb_l0_entries = 64;
	p.btb_bubble = 2;
	const unsigned n = 400;
	/* 8 distinct taken branches an iteration: held after the first lap */
	u64 in8 = loop_of(&p, 8, n);
	HT_EXPECT_EQ(C.st.btb_misses, 8);
	PARTS_ADD_UP();
	p.btb_l0_entries = 0;
	u64 base8 = loop_of(&p, 8, n);
	p.btb_l0_entries = 64;
	/* no more than the first lap's bubbles over no BTB rule at all */
	HT_EXPECT(in8 >= base8 && in8 <= base8 + 8 * 2);
	/* 256 an iteration, more than the level holds: LRU sets miss every one */
	u64 out256 = loop_of(&p, 256, n / 8);
	HT_EXPECT_EQ(C.st.btb_misses, 256 * (n / 8));
	HT_EXPECT(out256 >= 3 * 256 * (n / 8));
	PARTS_ADD_UP();
	/* the same with no BTB rule, or a bubble of 0: one cycle a taken branch */
	p.btb_l0_entries = 0;
	u64 base256 = loop_of(&p, 256, n / 8);
	HT_EXPECT_EQ(C.st.btb_misses, 0);
	/* two cycles more a taken branch, but for those of the first laps, whose bubbles
	 * hide in the refills of the predictor's learning mispredicts */
	HT_EXPECT(out256 - base256 >= 2 * 256 * (n / 8 - 2) && out256 - base256 <= 2 * 256 * (n / 8));
	p.btb_l0_entries = 64;
	p.btb_bubble = 0;
	HT_EXPECT_EQ(loop_of(&p, 256, n / 8), base256);
	HT_EXPECT_EQ(C.st.btb_misses, 256 * (n / 8));
	/* a bubble hides behind a stalled back end: a dependent chain of 40-cycle loads, one
	 * between taken branches, costs the same with and without it */
	u64 chase[2];
	for (unsigned b = 0; b < 2; b++) {
		p.btb_bubble = 2 * b;
		setup(&p);
		for (unsigned i = 0; i < n; i++) {
			load(1, 1, 0x100000 + 64ull * i, 40, true);
			cond_branch(0x402000 + 0x40 * (i % 256), true);
		}
		HT_EXPECT_EQ(C.st.btb_misses, n);
		chase[b] = core_now(&C);
	}
	HT_EXPECT(chase[0] >= 40 * n);
	HT_EXPECT_EQ(chase[1], chase[0]);
	/* LRU, not FIFO: one set of 4 ways (4 entries); A B C D fill it, A again refreshes
	 * A, E then evicts B (the least recently used), so A still hits and B misses */
	p.btb_l0_entries = 4;
	p.btb_bubble = 2;
	setup(&p);
	static const u64 seq[] = { 0xa0, 0xb0, 0xc0, 0xd0, 0xa0, 0xe0, 0xa0, 0xb0 };
	static const u64 misses_after[] = { 1, 2, 3, 4, 4, 5, 5, 6 };
	for (unsigned i = 0; i < 8; i++) {
		cond_branch(0x400000 + seq[i], true);
		HT_EXPECT_EQ(C.st.btb_misses, misses_after[i]);
	}
	/* sizes whose sets are not a power of two, or beyond the arrays, are refused */
	p.btb_l0_entries = 12;
	HT_EXPECT(core_init(&C, &p) != 0);
	p.btb_l0_entries = 18;
	HT_EXPECT(core_init(&C, &p) != 0);
	p.btb_l0_entries = CORE_BTB_MAX * 2;
	HT_EXPECT(core_init(&C, &p) != 0);
	p.btb_l0_entries = CORE_BTB_MAX;
	HT_EXPECT_EQ(core_init(&C, &p), 0);
}

HTEST(loop_taken_rate)
{
	struct core_params p = test_params();
	p.width = 8;
	p.taken_per_cycle = 1;
	p.loop_taken_per_cycle = 2;
	const unsigned n = 500;
	/* no loop rule: one taken branch per cycle whatever the loop */
	p.loop_branches = 0;
	u64 base4 = loop_of(&p, 4, n);
	HT_EXPECT(base4 >= 4 * n);
	HT_EXPECT_EQ(C.st.loop_taken, 0);
	/* 4 taken branches a loop, the rule covers 4: two per cycle once the ring holds them */
	p.loop_branches = 4;
	u64 in4 = loop_of(&p, 4, n);
	HT_EXPECT_EQ(C.st.loop_taken, 4 * n - 4);
	HT_EXPECT(in4 >= 2 * n && in4 <= 2 * n + 20 * (16 + 2));
	HT_EXPECT(base4 - in4 >= 2 * n - 40);
	PARTS_ADD_UP();
	/* 5 taken branches a loop is more than the rule holds: back to one per cycle */
	u64 out5 = loop_of(&p, 5, n);
	HT_EXPECT_EQ(C.st.loop_taken, 0);
	p.loop_branches = 0;
	HT_EXPECT_EQ(loop_of(&p, 5, n), out5);
	/* a profile whose rule is larger than the ring is refused */
	p.loop_branches = CORE_LOOP_BRANCHES + 1;
	HT_EXPECT(core_init(&C, &p) != 0);
}

static void call(u64 pc, u64 target, bool indirect)
{
	struct core_op op = { .reg_read = R(4), .reg_write = R(4), .cls = indirect ? CLS_CALL_INDIRECT : CLS_CALL_DIRECT,
			      .uops = 2 };
	struct core_branch b = { .pc = pc, .target = target, .next = pc + 5, .taken = true };
	core_insn(&C, &op, NULL, 0, &b);
}

static void ret(u64 pc, u64 to)
{
	struct core_op op = { .reg_read = R(4), .reg_write = R(4), .cls = CLS_RET, .uops = 1 };
	struct core_branch b = { .pc = pc, .target = to, .next = pc + 1, .taken = true };
	core_insn(&C, &op, NULL, 0, &b);
}

/* Returns are predicted by the return stack, as deep as it is. */
HTEST(return_stack)
{
	struct core_params p = test_params();
	setup(&p);
	/* nested calls from different sites, depth 8, repeated */
	for (unsigned rep = 0; rep < 10; rep++) {
		for (unsigned d = 0; d < 8; d++)
			call(0x1000 + 0x100 * d, 0x1000 + 0x100 * (d + 1), false);
		for (unsigned d = 8; d-- > 0;)
			ret(0x1000 + 0x100 * (d + 1) + 0x80, 0x1000 + 0x100 * d + 5);
	}
	HT_EXPECT_EQ(C.st.mispredicts, 0);
	PARTS_ADD_UP();
	/* deeper than the stack: the outermost returns are mispredicted */
	setup(&p);
	const unsigned deep = CORE_RAS + 4;
	for (unsigned d = 0; d < deep; d++)
		call(0x1000 + 0x100 * d, 0x1000 + 0x100 * (d + 1), false);
	for (unsigned d = deep; d-- > 0;)
		ret(0x1000 + 0x100 * (d + 1) + 0x80, 0x1000 + 0x100 * d + 5);
	HT_EXPECT_EQ(C.st.mispredicts, 4);
	PARTS_ADD_UP();
	/* an indirect call with one target is learnt; alternating targets are not */
	setup(&p);
	for (unsigned i = 0; i < 100; i++) {
		call(0x3000, 0x8000, true);
		ret(0x8010, 0x3005);
	}
	HT_EXPECT_EQ(C.st.mispredicts, 1);
	setup(&p);
	for (unsigned i = 0; i < 100; i++) {
		call(0x3000, i & 1 ? 0x8000 : 0x9000, true);
		ret(0x8010, 0x3005);
	}
	HT_EXPECT_EQ(C.st.mispredicts, 100);
	PARTS_ADD_UP();
}

/* The clock moved from outside: nothing afterwards starts before it. */
HTEST(advance_to)
{
	struct core_params p = test_params();
	setup(&p);
	for (unsigned i = 0; i < 10; i++)
		alu(R(0), R(0));
	HT_EXPECT_EQ(core_now(&C), 10);
	core_advance_to(&C, 1000, CORE_PART_WAIT);
	HT_EXPECT_EQ(core_now(&C), 1000);
	HT_EXPECT_EQ(part(&C, CORE_PART_WAIT), 990);
	alu(R(5), R(5));	/* a register last written at 0 */
	HT_EXPECT_EQ(core_now(&C), 1001);
	core_advance_to(&C, 500, CORE_PART_IPI);	/* backwards: nothing */
	HT_EXPECT_EQ(core_now(&C), 1001);
	HT_EXPECT_EQ(part(&C, CORE_PART_IPI), 0);
	PARTS_ADD_UP();
	/* a miss in flight past t keeps its time; a younger op starts at t at the earliest */
	setup(&p);
	load(15, 0, 0x1000, MISS, true);
	core_advance_to(&C, 50, CORE_PART_IPI);	/* the load commits at 200, after 50 */
	HT_EXPECT_EQ(core_now(&C), MISS);
	alu(0, R(1));
	HT_EXPECT_EQ(core_now(&C), MISS);
	PARTS_ADD_UP();
}

/* Serialising instructions wait for everything older and hold everything younger. */
HTEST(serialising_drains)
{
	struct core_params p = test_params();
	setup(&p);
	load(15, 0, 0x1000, MISS, true);
	alu(0, R(1));
	u64 no_ser = core_now(&C);
	HT_EXPECT_EQ(no_ser, MISS);	/* the alu ran under the miss */
	setup(&p);
	load(15, 0, 0x1000, MISS, true);
	struct core_op cpuid = { .reg_read = R(0), .reg_write = R(0) | R(1) | R(2) | R(3),
				 .cls = CLS_SERIALISING, .uops = 1, .pen = 100 };
	core_insn(&C, &cpuid, NULL, 0, NULL);
	HT_EXPECT_EQ(core_now(&C), MISS + 100);
	alu(0, R(5));	/* independent, but dispatches after the cpuid completes */
	HT_EXPECT_EQ(core_now(&C), MISS + 100 + 1);
	HT_EXPECT_EQ(part(&C, CORE_PART_PEN), 100);
	PARTS_ADD_UP();
	/* it waits for missing stores to drain */
	setup(&p);
	store(15, 1, 0x2000, 8, MISS, true);
	core_insn(&C, &cpuid, NULL, 0, NULL);
	HT_EXPECT(core_now(&C) >= MISS + 100);
	PARTS_ADD_UP();
	/* lfence: a younger independent load issues once the older miss completed */
	setup(&p);
	load(15, 0, 0x1000, MISS, true);
	struct core_op lf = { .cls = CLS_FENCE_L, .uops = 1, .pen = 4 };
	core_insn(&C, &lf, NULL, 0, NULL);
	load(14, 1, 0x3000, MISS, true);
	HT_EXPECT_EQ(core_now(&C), MISS + 4 + MISS);
	PARTS_ADD_UP();
}

/* Fixed-cost operations block younger dispatch; core_drain flushes. */
HTEST(fixed_and_drain)
{
	struct core_params p = test_params();
	setup(&p);
	core_fixed(&C, 50, CORE_PART_REP, 0);
	alu(0, R(1));
	HT_EXPECT_EQ(core_now(&C), 51);
	HT_EXPECT_EQ(part(&C, CORE_PART_REP), 50);
	PARTS_ADD_UP();
	/* it overlaps an older miss unless told to drain */
	setup(&p);
	load(15, 0, 0x1000, MISS, true);
	core_fixed(&C, 50, CORE_PART_IO, 0);
	HT_EXPECT_EQ(core_now(&C), MISS);
	setup(&p);
	load(15, 0, 0x1000, MISS, true);
	core_fixed(&C, 50, CORE_PART_IO, CORE_FIX_DRAIN);
	HT_EXPECT_EQ(core_now(&C), MISS + 50);
	HT_EXPECT_EQ(part(&C, CORE_PART_IO), 50);
	PARTS_ADD_UP();
	/* drain: after a miss with independent work under it, the next op waits for commit */
	setup(&p);
	load(15, 0, 0x1000, MISS, true);
	alu(0, R(1));
	core_drain(&C);
	alu(0, R(2));
	HT_EXPECT_EQ(core_now(&C), MISS + 1);
	PARTS_ADD_UP();
}

/* A mixed stream, twice: the same clock and parts; the parts add up. */
static void mixed(u64 seed, unsigned n)
{
	u64 s = seed;
	for (unsigned i = 0; i < n; i++) {
		unsigned r = (unsigned)(lcg(&s) % 100);
		unsigned a = (unsigned)(lcg(&s) % 16), b = (unsigned)(lcg(&s) % 16);
		if (r < 50) {
			alu(R(a) | R(b), R(a) | CORE_BIT(CORE_REG_FLAGS));
		} else if (r < 75) {
			bool miss = lcg(&s) % 10 == 0;
			load(a, b, (lcg(&s) % 4096) * 8, miss ? MISS : 4, miss);
		} else if (r < 85) {
			store(a, b, (lcg(&s) % 4096) * 8, 8, 4, false);
		} else if (r < 95) {
			cond_branch(0x400000 + 16 * (lcg(&s) % 64), lcg(&s) % 3 == 0);
		} else if (r < 98) {
			struct core_op op = { .reg_read = R(a), .reg_write = R(a), .cls = CLS_IMUL, .uops = 1 };
			core_insn(&C, &op, NULL, 0, NULL);
		} else {
			core_fixed(&C, 7, CORE_PART_REP, 0);
		}
	}
}

HTEST(deterministic_and_parts_add_up)
{
	struct core_params p = test_params();
	setup(&p);
	mixed(7, 50000);
	u64 t1 = core_now(&C), p1[NR_CORE_PART];
	core_parts(&C, p1);
	PARTS_ADD_UP();
	setup(&p);
	mixed(7, 50000);
	u64 p2[NR_CORE_PART];
	core_parts(&C, p2);
	HT_EXPECT_EQ(core_now(&C), t1);
	HT_EXPECT(!memcmp(p1, p2, sizeof(p1)));
	/* a different stream gives a different clock (the test is not vacuous) */
	setup(&p);
	mixed(8, 50000);
	HT_EXPECT(core_now(&C) != t1);
	PARTS_ADD_UP();
	/* and the clock is far below the in-order sum of the same stream */
	HT_EXPECT(part(&C, CORE_PART_CACHE) > 0 && part(&C, CORE_PART_BRANCH) > 0 &&
		  part(&C, CORE_PART_REP) > 0);
}

int main(void)
{
	return htest_main("core");
}

/* A loop longer than the global history: gshare alone mispredicts its exit every time
 * (the history is all "taken" at the last iterations); the loop predictor learns the trip
 * count and predicts the exit. A loop whose trip count changes every time falls back to
 * gshare. */
HTEST(loop_predictor_learns_long_loops)
{
	struct core_params p = test_params();
	setup(&p);
	const unsigned trips = 40, loops = 50;
	for (unsigned k = 0; k < 10; k++)	/* training: gshare's cold counters, then 3 runs */
		for (unsigned i = 0; i <= trips; i++)
			cond_branch(0x4000, i < trips);
	u64 m0 = C.st.mispredicts, l0 = C.st.loop_predicted;
	for (unsigned k = 0; k < loops; k++)
		for (unsigned i = 0; i <= trips; i++)
			cond_branch(0x4000, i < trips);
	HT_EXPECT_EQ(C.st.mispredicts - m0, 0);
	HT_EXPECT_EQ(C.st.loop_predicted - l0, (u64)loops * (trips + 1));
	PARTS_ADD_UP();
	setup(&p);
	for (unsigned k = 0; k < loops; k++)
		for (unsigned i = 0; i <= trips + k % 7; i++)
			cond_branch(0x4000, i < trips + k % 7);
	/* irregular trip counts: the exits stay mispredicted */
	HT_EXPECT(C.st.mispredicts >= loops / 2);
	PARTS_ADD_UP();
}

/* A learnt loop whose next run is far longer (the pcp's "count >= high" branch: a trip
 * of ~63 frees while the lists cycle, then hundreds of frees that never reach high):
 * the loop predictor's wrong exit costs one mispredict and hands the run back to TAGE,
 * not one mispredict per execution past the learnt length. */
HTEST(loop_predictor_lets_go_of_a_longer_run)
{
	struct core_params p = test_params();
	setup(&p);
	const unsigned trips = 62, longer = 500;
	for (unsigned k = 0; k < 10; k++)
		for (unsigned i = 0; i <= trips; i++)
			cond_branch(0x4000, i < trips);
	u64 m0 = C.st.mispredicts, l0 = C.st.loop_predicted;
	for (unsigned i = 0; i < longer; i++)
		cond_branch(0x4000, true);
	HT_EXPECT(C.st.loop_predicted - l0 >= trips);	/* the entry was confident */
	HT_EXPECT(C.st.mispredicts - m0 <= 2);
	/* and it learns the new length again: three runs of it, then no mispredicts */
	cond_branch(0x4000, false);
	for (unsigned k = 0; k < 4; k++) {
		for (unsigned i = 0; i < longer; i++)
			cond_branch(0x4000, true);
		cond_branch(0x4000, false);
	}
	m0 = C.st.mispredicts;
	for (unsigned k = 0; k < 3; k++) {
		for (unsigned i = 0; i < longer; i++)
			cond_branch(0x4000, true);
		cond_branch(0x4000, false);
	}
	HT_EXPECT_EQ(C.st.mispredicts - m0, 0);
	PARTS_ADD_UP();
}

/* A branch that repeats the outcome of a random branch 30 branches earlier needs more
 * history than gshare's 16 bits: TAGE's tagged tables (histories of 40 and more) learn
 * it, gshare alone would miss half of them. */
HTEST(tage_learns_a_long_history_correlation)
{
	struct core_params p = test_params();
	setup(&p);
	const unsigned n = 4000, gap = 29;
	u64 s = 7, late = 0, late_n = 0;
	for (unsigned i = 0; i < n; i++) {
		bool a = lcg(&s) & 1;
		cond_branch(0x7000, a);	/* random: nothing predicts it */
		for (unsigned k = 0; k < gap; k++)
			cond_branch(0x7100 + 16 * k, true);
		u64 m = C.st.mispredicts;
		cond_branch(0x7800, a);	/* the same outcome, 30 branches later */
		if (i >= n / 2) {
			late += C.st.mispredicts - m;
			late_n++;
		}
	}
	HT_EXPECT(late * 20 <= late_n);	/* under 5 % once trained */
	HT_EXPECT(C.st.tage_provided > 0);
	PARTS_ADD_UP();
}

/* A long run of independent L1-hit stores is bound by how many stores the buffer writes
 * per cycle once it is full: about n cycles at one per cycle, n / 2 at two (with 4-wide
 * dispatch, the stores alone would take n / 4). */
HTEST(stores_per_cycle_bound_a_store_run)
{
	const unsigned n = 2000;
	u64 t[3];
	for (unsigned spc = 1; spc <= 2; spc++) {
		struct core_params p = test_params();
		p.stores_per_cycle = spc;
		setup(&p);
		for (unsigned i = 0; i < n; i++)
			store(1, 2, 0x10000 + 8 * i, 8, 4, false);
		t[spc] = core_now(&C);
		PARTS_ADD_UP();
	}
	/* the clock is the last commit: the buffer's last store_buffer stores are still to drain */
	const unsigned sb = test_params().store_buffer;
	HT_EXPECT(t[1] >= n - sb && t[1] <= n);
	HT_EXPECT(t[2] >= (n - sb) / 2 && t[2] <= n / 2);
}
