/*
 * How fast the out-of-order core runs: 100M synthetic instructions (a mix like kernel
 * code: ALU ops, loads with some misses, stores, branches, a few multiplies) through
 * core_insn, with the skylake-sp parameters. Prints ns per instruction and the model's
 * IPC. The stream is generated ahead into a ring of ops so that the timing is the core's,
 * not the generator's: 4096 random ops (the host's branch predictor cannot learn them:
 * a pessimistic case) or, with a second argument, a loop body of that many ops.
 * Usage: bench_core [instructions [body]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "model/core.h"

#define NOPS 4096

struct item {
	struct core_op op;
	struct core_mem m;
	struct core_branch b;
	u8 nacc, br;
};

static struct item items[NOPS];
static struct core c;

static u64 lcg(u64 *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

int main(int argc, char **argv)
{
	u64 n = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000000ull;
	unsigned body = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : NOPS;
	if (!body || body > NOPS || (body & (body - 1)))
		body = NOPS;
	struct profile prof = { .core_width = 4, .rob_size = 224, .load_buffer = 72, .store_buffer = 56,
				.fill_buffers = 12, .page_walkers = 2, .stores_per_cycle = 1, .taken_per_cycle = 1, .mispredict = 16, .l1d_lat = 4, .lat_imul = 3,
				.lat_div = 35, .lat_vec = 1, .lat_fp = 4, .lat_fpdiv = 14 };
	struct core_params p = core_params_from_profile(&prof);
	if (core_init(&c, &p))
		return 1;
	u64 s = 1;
	for (unsigned i = 0; i < NOPS; i++) {
		struct item *it = &items[i];
		unsigned r = (unsigned)(lcg(&s) % 100);
		unsigned a = (unsigned)(lcg(&s) % 16), b = (unsigned)(lcg(&s) % 16);
		it->op.uops = 1;
		if (r < 55) {
			it->op = (struct core_op){ .reg_read = CORE_BIT(a) | CORE_BIT(b),
						   .reg_write = CORE_BIT(a) | CORE_BIT(CORE_REG_FLAGS),
						   .cls = CLS_ALU, .uops = 1 };
		} else if (r < 80) {
			bool miss = lcg(&s) % 20 == 0;
			it->op = (struct core_op){ .reg_read = CORE_BIT(a), .reg_addr = CORE_BIT(a),
						   .reg_write = CORE_BIT(b), .cls = CLS_LOAD, .uops = 1 };
			it->m = (struct core_mem){ .va = (lcg(&s) % 65536) * 8, .size = 8,
						   .cache_lat = miss ? 240 : 4, .l1_miss = miss };
			it->nacc = 1;
		} else if (r < 90) {
			it->op = (struct core_op){ .reg_read = CORE_BIT(a) | CORE_BIT(b), .reg_addr = CORE_BIT(a),
						   .cls = CLS_STORE, .uops = 1 };
			it->m = (struct core_mem){ .va = (lcg(&s) % 65536) * 8, .size = 8, .is_store = true,
						   .cache_lat = 4 };
			it->nacc = 1;
		} else if (r < 98) {
			it->op = (struct core_op){ .reg_read = CORE_BIT(CORE_REG_FLAGS), .cls = CLS_BRANCH_COND,
						   .uops = 1 };
			it->b = (struct core_branch){ .pc = 0x400000 + 16 * (lcg(&s) % 256),
						      .taken = lcg(&s) % 8 != 0 };
			it->br = 1;
		} else {
			it->op = (struct core_op){ .reg_read = CORE_BIT(a), .reg_write = CORE_BIT(a),
						   .cls = CLS_IMUL, .uops = 1 };
		}
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (u64 i = 0; i < n; i++) {
		const struct item *it = &items[i & (body - 1)];
		core_insn(&c, &it->op, &it->m, it->nacc, it->br ? &it->b : NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("bench_core: %llu instructions (body %u), %.2f ns/insn, model IPC %.2f, %llu mispredicts\n",
	       (unsigned long long)n, body, ns / (double)n, (double)n / (double)core_now(&c),
	       (unsigned long long)c.st.mispredicts);
	return 0;
}
