/*
 * Micro workloads of the native panel: they isolate one core mechanism each (load-to-use
 * latency per level, memory-level parallelism, prefetch, branch prediction, stores,
 * atomics, fast strings). The timed loops are inline assembly so the compiler cannot
 * change their shape (vectorise, turn a branch into cmov) between the two sides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "panel.h"

#define LINE 64

/* ---- pointer chase ---- */

struct chase {
	uint64_t *buf;
	uint64_t lines;		/* lines in the cycle */
	uint64_t start[8];	/* where each chain starts */
};

/*
 * A random cyclic order of @n lines: one line per @stride bytes, at a random line offset
 * inside each stride (so lines spread over the whole buffer and no page holds two). Each
 * line's first word holds the address of the next.
 */
static int chase_build(struct chase *c, uint64_t bytes, uint64_t n, uint64_t seed)
{
	uint64_t stride = bytes / n;
	c->buf = panel_alloc(bytes);
	if (!c->buf)
		return -1;
	uint64_t *ord = malloc(n * sizeof(*ord));
	if (!ord)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off = stride > LINE ? (panel_rand(&seed) % (stride / LINE)) * LINE : 0;
		ord[i] = i * stride + off;
	}
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = panel_rand(&seed) % (i + 1), t = ord[i];
		ord[i] = ord[j];
		ord[j] = t;
	}
	char *b = (char *)c->buf;
	for (uint64_t i = 0; i < n; i++)
		*(uint64_t *)(b + ord[i]) = (uint64_t)(uintptr_t)(b + ord[(i + 1) % n]);
	for (int k = 0; k < 8; k++)
		c->start[k] = (uint64_t)(uintptr_t)(b + ord[(k * n) / 8]);
	c->lines = n;
	free(ord);
	return 0;
}

/* @n dependent loads from @p; returns where it ended. */
static inline uint64_t chase1(uint64_t p, uint64_t n)
{
	__asm__ __volatile__("1:\n\tmov (%0), %0\n\tdec %1\n\tjnz 1b" : "+r"(p), "+r"(n)::"memory");
	return p;
}

static int chase_setup(struct panel_wl *w)
{
	/* rows of the same size share one cycle (chase_1g and chase8_1g) */
	static struct chase *built[8];
	static uint64_t built_size[8];
	for (int i = 0; i < 8 && built[i]; i++)
		if (built_size[i] == w->param) {
			w->priv = built[i];
			return 0;
		}
	struct chase *c = calloc(1, sizeof(*c));
	w->priv = c;
	for (int i = 0; i < 8; i++)
		if (!built[i]) {
			built[i] = c;
			built_size[i] = w->param;
			break;
		}
	/* small sets: every line of the buffer; large ones: 64 Ki lines spread over it */
	uint64_t lines = w->param / LINE;
	if (lines > 65536)
		lines = 65536;
	return chase_build(c, w->param, lines, 0x5eed0000 + w->param);
}

/*
 * Passes over the cycle that warm it before the timed pass. One is not enough on an LLC
 * that decides on insertion whether a line is worth keeping (Intel's adaptive insertion
 * since Ivy Bridge): after chase_1g's pass, which reuses nothing within the LLC, the
 * lines of chase_64m's single warm pass were not kept, and its timed pass cost 395-522
 * cycles a load on a Granite Rapids VM against 213 when run alone; with two or more warm
 * passes it costs 213-215 in either order (docs/COSTMODEL.md, "The native panel").
 */
#define CHASE_WARM_PASSES 4

/* CHASE_WARM_PASSES passes warm the cycle (caches and TLB hold what they can), then one
 * pass timed. */
static uint64_t chase_run(struct panel_wl *w, uint64_t *ops)
{
	struct chase *c = w->priv;
	uint64_t reps = c->lines >= 65536 ? 1 : 65536 / c->lines;
	uint64_t p = chase1(c->start[0], c->lines * CHASE_WARM_PASSES);
	uint64_t t0 = panel_tstart();
	p = chase1(p, c->lines * reps);
	uint64_t t = panel_tstop(t0);
	__asm__ __volatile__("" ::"r"(p));
	*ops = c->lines * reps;
	return t;
}

/* Eight chains through the same cycle, each starting 1/8 of the way further: the loads of
 * one step are independent of each other (memory-level parallelism). */
static uint64_t chase8_run(struct panel_wl *w, uint64_t *ops)
{
	struct chase *c = w->priv;
	uint64_t p[8];
	memcpy(p, c->start, sizeof(p));
	uint64_t n = c->lines / 8;
	uint64_t t0 = panel_tstart();
	__asm__ __volatile__("1:\n\t"
			     "mov (%0), %0\n\tmov (%1), %1\n\tmov (%2), %2\n\tmov (%3), %3\n\t"
			     "mov (%4), %4\n\tmov (%5), %5\n\tmov (%6), %6\n\tmov (%7), %7\n\t"
			     "dec %8\n\tjnz 1b"
			     : "+r"(p[0]), "+r"(p[1]), "+r"(p[2]), "+r"(p[3]), "+r"(p[4]), "+r"(p[5]),
			       "+r"(p[6]), "+r"(p[7]), "+r"(n)::"memory");
	uint64_t t = panel_tstop(t0);
	*ops = (c->lines / 8) * 8;
	return t;
}

/* ---- sequential scan of 4 KiB tables ---- */

/* Every 8-byte slot of each table read in order and tested, as a zap scans a page table
 * (most slots empty): the hardware prefetcher sees a sequential stream. */
static int scan_setup(struct panel_wl *w)
{
	uint64_t *b = panel_alloc(w->param);
	if (!b)
		return -1;
	uint64_t seed = 7;
	for (uint64_t i = 0; i < w->param / 8; i += 512)
		b[i + panel_rand(&seed) % 512] = 1;	/* one present entry per table */
	w->priv = b;
	return 0;
}

static uint64_t scan_run(struct panel_wl *w, uint64_t *ops)
{
	uint64_t *b = w->priv, n = w->param / 8, found = 0, i = 0;
	uint64_t t0 = panel_tstart();
	__asm__ __volatile__("1:\n\tcmpq $0, (%2,%1,8)\n\tje 2f\n\tinc %0\n"
			     "2:\n\tinc %1\n\tcmp %3, %1\n\tjb 1b"
			     : "+r"(found), "+r"(i) : "r"(b), "r"(n) : "memory", "cc");
	uint64_t t = panel_tstop(t0);
	if (found != n / 512)
		fprintf(stderr, "panel: scan found %llu of %llu\n", (unsigned long long)found,
			(unsigned long long)(n / 512));
	*ops = n / 512;
	return t;
}

/* ---- branches ---- */

/* One loop over @param bytes, a conditional branch per byte on (byte < 128). The
 * predictable row's bytes are all below; the random row's are random (a mispredict on
 * about half of them). Same instructions, other data. */
struct branch {
	unsigned char *data;
	int random;
};

static int branch_setup(struct panel_wl *w)
{
	struct branch *br = w->priv;
	br->data = panel_alloc(w->param);
	if (!br->data)
		return -1;
	uint64_t seed = 11;
	for (uint64_t i = 0; i < w->param; i++)
		br->data[i] = br->random ? (unsigned char)panel_rand(&seed) : (unsigned char)(i & 63);
	return 0;
}

static uint64_t branch_run(struct panel_wl *w, uint64_t *ops)
{
	struct branch *br = w->priv;
	uint64_t n = w->param, i = 0, acc = 0, tmp;
	uint64_t t0 = panel_tstart();
	__asm__ __volatile__("1:\n\tmovzbl (%3,%1), %k2\n\tcmp $128, %k2\n\tjb 2f\n\tadd %1, %0\n"
			     "2:\n\tinc %1\n\tcmp %4, %1\n\tjb 1b"
			     : "+r"(acc), "+r"(i), "=&r"(tmp) : "r"(br->data), "r"(n) : "memory", "cc");
	uint64_t t = panel_tstop(t0);
	__asm__ __volatile__("" ::"r"(acc));
	*ops = n;
	return t;
}

static struct branch br_pred = { 0, 0 }, br_rand = { 0, 1 };

/* ---- stores ---- */

/* 8-byte stores to consecutive addresses of an L1-resident buffer, four per iteration,
 * 32 passes over it. */
#define STORE_PASSES 32
static int buf_setup(struct panel_wl *w)
{
	w->priv = panel_alloc(w->param < 4096 ? 4096 : w->param);
	return w->priv ? 0 : -1;
}

static uint64_t store_run(struct panel_wl *w, uint64_t *ops)
{
	uint64_t *b = w->priv, n = w->param / 32;
	for (uint64_t i = 0; i < w->param / 8; i++)	/* warm: lines in L1, modified */
		b[i] = i;
	uint64_t t0 = panel_tstart();
	for (int r = 0; r < STORE_PASSES; r++) {
		uint64_t *p = b, k = n;
		__asm__ __volatile__("1:\n\tmov %1, (%0)\n\tmov %1, 8(%0)\n\tmov %1, 16(%0)\n\t"
				     "mov %1, 24(%0)\n\tadd $32, %0\n\tdec %1\n\tjnz 1b"
				     : "+r"(p), "+r"(k)::"memory");
	}
	uint64_t t = panel_tstop(t0);
	*ops = n * 4 * STORE_PASSES;
	return t;
}

/* ---- atomics ---- */

/* lock xadd on one private line, each on the previous one's result (a dependent chain, as
 * a reference count taken and dropped in a loop). */
static uint64_t atomic_run(struct panel_wl *w, uint64_t *ops)
{
	uint64_t *b = w->priv, n = w->param, v = 1;
	b[0] = 0;
	uint64_t t0 = panel_tstart();
	__asm__ __volatile__("1:\n\tlock xadd %0, (%2)\n\tand $1, %0\n\tor $1, %0\n\tdec %1\n\tjnz 1b"
			     : "+r"(v), "+r"(n) : "r"(b) : "memory", "cc");
	uint64_t t = panel_tstop(t0);
	*ops = w->param;
	return t;
}

/* ---- rep stos / rep movs of a page ---- */

/* Eight pages (32 KiB, L1/L2 resident) cleared or copied page by page, as clear_page and
 * copy_page do with rep stosq / rep movsq. */
#define REP_PAGES 8

static uint64_t rep_stos_run(struct panel_wl *w, uint64_t *ops)
{
	char *b = w->priv;
	memset(b, 1, REP_PAGES * 4096);
	uint64_t t0 = panel_tstart();
	for (uint64_t r = 0; r < w->param; r++)
		for (int i = 0; i < REP_PAGES; i++) {
			void *d = b + i * 4096;
			uint64_t c = 512;
			__asm__ __volatile__("rep stosq" : "+D"(d), "+c"(c) : "a"(0UL) : "memory");
		}
	uint64_t t = panel_tstop(t0);
	*ops = w->param * REP_PAGES;
	return t;
}

static uint64_t rep_movs_run(struct panel_wl *w, uint64_t *ops)
{
	char *b = w->priv;
	memset(b, 1, 2 * REP_PAGES * 4096);
	uint64_t t0 = panel_tstart();
	for (uint64_t r = 0; r < w->param; r++)
		for (int i = 0; i < REP_PAGES; i++) {
			void *d = b + i * 4096;
			const void *s = b + (REP_PAGES + i) * 4096;
			uint64_t c = 512;
			__asm__ __volatile__("rep movsq" : "+D"(d), "+S"(s), "+c"(c)::"memory");
		}
	uint64_t t = panel_tstop(t0);
	*ops = w->param * REP_PAGES;
	return t;
}

struct panel_wl panel_micro[] = {
	{ "chase_16k", "micro", "dependent pointer chase, 16 KiB (L1); op = one load", 1,
	  chase_setup, chase_run, 16 << 10, 0 },
	{ "chase_1m", "micro", "dependent pointer chase, 1 MiB (L2); op = one load", 1,
	  chase_setup, chase_run, 1 << 20, 0 },
	{ "chase_64m", "micro", "dependent pointer chase, 64 Ki lines over 64 MiB (LLC); op = one load", 1,
	  chase_setup, chase_run, 64 << 20, 0 },
	{ "chase_1g", "micro", "dependent pointer chase, 64 Ki lines over 1 GiB (DRAM); op = one load", 1,
	  chase_setup, chase_run, 1ull << 30, 0 },
	{ "chase8_1g", "micro", "8 independent chases through the chase_1g cycle; op = one load", 1,
	  chase_setup, chase8_run, 1ull << 30, 0 },
	{ "scan_tables", "micro", "sequential scan of 4 KiB tables (8-byte slots, one present), 32 MiB; op = one table",
	  1, scan_setup, scan_run, 32 << 20, 0 },
	{ "branch_pred", "micro", "loop with a predictable conditional branch, 64 KiB of data; op = one iteration", 1,
	  branch_setup, branch_run, 64 << 10, &br_pred },
	{ "branch_rand", "micro", "the same loop, random data (half the branches mispredict); op = one iteration", 1,
	  branch_setup, branch_run, 64 << 10, &br_rand },
	{ "store_l1", "micro", "8-byte stores over 16 KiB (L1), 4 per iteration; op = one store", 1,
	  buf_setup, store_run, 16 << 10, 0 },
	{ "atomic_xadd", "micro", "dependent lock xadd on a private line; op = one atomic", 1,
	  buf_setup, atomic_run, 20000, 0 },
	{ "rep_stos_page", "micro", "rep stosq of a 4 KiB page, 8 pages in turn; op = one page", 1,
	  buf_setup, rep_stos_run, 200, 0 },
	{ "rep_movs_page", "micro", "rep movsq of a 4 KiB page, 8 pages in turn; op = one page", 1,
	  buf_setup, rep_movs_run, 200, 0 },
	{ 0 },
};
