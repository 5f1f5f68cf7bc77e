/*
 * calibrate: measure this host from user space and print every raw figure as one JSON
 * object on stdout (tools/baremm calibrate turns it into a cost-model profile;
 * docs/COSTMODEL.md, "Calibration").
 *
 *   calibrate [--rounds N] [--mem-mib M] [--quick]   measure, JSON on stdout
 *   calibrate --check PROFILE                        load PROFILE with the plugin's own
 *                                                    parser (model/profile.c); exit 0 if
 *                                                    it is accepted, 1 with the reason
 *
 * Contract of the JSON: every timed figure is a per-round array of TSC ticks per
 * operation (one element per round, rounds interleaved so that a noisy neighbour hits
 * one round of every measurement rather than every sample of one); each round also
 * records its own core-cycles-per-tick, so the reader converts ticks to core cycles
 * with the clock of the same round. Within a round each figure is already the minimum
 * of several samples (a neighbour or an interrupt only ever makes a sample slower).
 * The measuring thread runs on CPU 0; the core-to-core figure uses CPUs 0 and 1.
 */
#include "tools/native/native.h"

#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/model.h"

#define LINE 64
#define CHASE_STEPS 4096
#define CHASE_SAMPLES 16
#define C2C_BATCH 200
#define PROBE_N 16
#define PAGE 4096
#define REP_L1_REPEATS 64	/* one page copied or cleared this many times a window: the L1d */
#define REP_L2_PAGES 32	/* 128 KiB a stream: rep copies from the L2 */
#define HPAGE (2u << 20)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* ---- memory: 2 MiB-aligned anonymous arenas, THP asked for or refused ---- */

static void *arena(size_t bytes, bool huge)
{
	size_t len = bytes + HPAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "calibrate: mmap %zu bytes: %s\n", len, strerror(errno));
		exit(2);
	}
	char *q = (char *)(((uintptr_t)p + HPAGE - 1) & ~(uintptr_t)(HPAGE - 1));
	/* THP is "madvise" on many hosts: ask for it explicitly, or refuse it for the 4 KiB arenas */
	madvise(q, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(q, 0, bytes);
	return q;
}

/* Fraction of [p, p+bytes) the kernel backs with huge pages (AnonHugePages in smaps). */
static double thp_fraction(const void *p, size_t bytes)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	uintptr_t a = (uintptr_t)p;
	bool in = false;
	unsigned long long kb = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = s < a + bytes && e > a;
			continue;
		}
		unsigned long long v;
		if (in && sscanf(line, "AnonHugePages: %llu kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return (double)kb * 1024.0 / (double)bytes;
}

/* ---- pointer chase over a random cyclic permutation (Sattolo) of given slots ---- */

static void link_cycle(char *base, const uint64_t *off, uint32_t *perm, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = rng() % i;
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint64_t i = 0; i < n; i++)
		*(void **)(base + off[perm[i]]) = base + off[perm[(i + 1) % n]];
}

/* Same, slots k*64 for k < n, without an offset table (the 1 GiB memory arena). */
static void link_lines(char *base, uint64_t n)
{
	uint32_t *perm = malloc(sizeof(uint32_t) * n);
	for (uint64_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = rng() % i;
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (uint64_t i = 0; i < n; i++)
		*(void **)(base + (uint64_t)perm[i] * LINE) = base + (uint64_t)perm[(i + 1) % n] * LINE;
	free(perm);
}

#define STEP "mov (%0), %0\n\t"
/* @steps dependent loads from *@pp (steps a multiple of 16); returns ticks, moves *pp on. */
static uint64_t chase(void **pp, uint64_t steps)
{
	void *p = *pp;
	uint64_t t0 = native_tsc();
	for (uint64_t i = 0; i < steps; i += 16)
		__asm__ __volatile__(STEP STEP STEP STEP STEP STEP STEP STEP
				     STEP STEP STEP STEP STEP STEP STEP STEP : "+r"(p)::"memory");
	uint64_t t = native_tsc() - t0;
	*pp = p;
	return t;
}

static uint64_t round16(uint64_t v) { return (v + 15) & ~15ull; }

/*
 * Ticks per load on a cycle of @n slots: one full lap to warm the caches, then the best
 * of @samples short runs of @steps loads. Short runs, because on a shared host a long
 * one is almost always cut by a preemption; several, because a lucky short run is only
 * a fraction of a percent faster than the steady state, a preempted one is far slower.
 */
static double chase_sample(void *start, uint64_t n, uint64_t steps, int samples)
{
	void *p = start;
	uint64_t best = ~0ull;
	steps = round16(steps);
	chase(&p, round16(n));
	for (int s = 0; s < samples; s++) {
		uint64_t t = chase(&p, steps);
		best = t < best ? t : best;
	}
	return (double)best / (double)steps;
}

/*
 * Ticks per load over whole laps of a cycle of @n slots (at least CHASE_STEPS loads), best
 * of two after a warm lap. Where the cycle is larger than a cache the short runs above
 * find the luckiest stretch of it (the lines a non-LRU cache happened to keep); a lap
 * pays for every line once, as a program walking that much memory does.
 */
static double chase_lap(void *start, uint64_t n)
{
	uint64_t steps = round16(n < CHASE_STEPS ? CHASE_STEPS : n);
	return chase_sample(start, n, steps, 2);
}

/* ---- the individual measurements (each returns ticks per operation, best of samples) ---- */

static uint64_t tsc_overhead(void)
{
	uint64_t best = ~0ull;
	for (int i = 0; i < 1000; i++) {
		uint64_t t0 = native_tsc(), t1 = native_tsc();
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	return best;
}

static double best_of(uint64_t (*fn)(uint64_t), uint64_t n, int samples, uint64_t ovh)
{
	uint64_t best = ~0ull;
	for (int s = 0; s < samples; s++) {
		uint64_t t = fn(n);
		if (t < best)
			best = t;
	}
	return (double)(best > ovh ? best - ovh : 0) / (double)n;
}

static uint64_t priv_line[16] __attribute__((aligned(128)));

#define X8(s) s s s s s s s s
/* A timed loop of @n copies of one instruction, eight per iteration; @outs and @ins are
 * its asm operands (%0 = v, %1 = m, a private line). */
#define TIMED_CHAIN(name, insn, outs, ins)                                                  \
	static uint64_t name(uint64_t n)                                                    \
	{                                                                                   \
		uint64_t v = 1, *m = &priv_line[0];                                         \
		(void)v;                                                                    \
		(void)m;                                                                    \
		uint64_t t0 = native_tsc();                                                 \
		for (uint64_t i = 0; i < n; i += 8)                                         \
			__asm__ __volatile__(X8(insn "\n\t") : outs : ins : "memory");        \
		return native_tsc() - t0;                                                   \
	}

TIMED_CHAIN(lock_xadd_chain, "lock xaddq %0, (%1)", "+r"(v), "r"(m))
TIMED_CHAIN(xchg_chain, "xchgq %0, (%1)", "+r"(v), "r"(m))
TIMED_CHAIN(mfence_chain, "mfence", , )
TIMED_CHAIN(lfence_chain, "lfence", , )
TIMED_CHAIN(pause_chain, "pause", , )

static uint64_t cpuid_one(uint64_t n)
{
	uint64_t t0 = native_tsc();
	for (uint64_t i = 0; i < n; i++) {
		unsigned a, b, c, d;
		__cpuid_count(0, 0, a, b, c, d);
		__asm__ __volatile__("" ::"r"(a), "r"(b), "r"(c), "r"(d));
	}
	return native_tsc() - t0;
}

/*
 * Branch on one bit of each byte of @buf: bit 0 is random, bit 7 is always clear. Both
 * paths do the same add, so the two loops differ only in how predictable the jump is.
 */
static uint8_t *branch_buf;
#define BRANCH_N (1u << 16)
static uint64_t branch_loop(uint64_t mask)
{
	uint64_t sum = 0;
	uint64_t t0 = native_tsc();
	for (uint64_t i = 0; i < BRANCH_N; i++) {
		uint64_t v = branch_buf[i];
		/* a real conditional jump: the compiler may not turn it into a cmov */
		__asm__ __volatile__("test %2, %1\n\tjz 1f\n\tadd %1, %0\n\tjmp 2f\n1:\tadd %1, %0\n2:"
				     : "+r"(sum) : "r"(v), "r"(mask));
	}
	uint64_t t = native_tsc() - t0;
	__asm__ __volatile__("" ::"r"(sum));
	return t;
}

/* The q forms, as kernel/string.c copies and clears whole words: the string ops baremm
 * and the native panel run. n is in bytes, a multiple of 8. Untimed: a series of them is
 * timed as a whole between rep_tsc() calls. */
static void rep_movsq(void *dst, const void *src, size_t n)
{
	size_t w = n / 8;
	__asm__ __volatile__("rep movsq" : "+D"(dst), "+S"(src), "+c"(w)::"memory");
}

static void rep_stosq(void *dst, size_t n)
{
	size_t w = n / 8;
	__asm__ __volatile__("rep stosq" : "+D"(dst), "+c"(w) : "a"(0) : "memory");
}

/*
 * The TSC once every earlier store is globally visible (mfence, then lfence so rdtsc
 * waits for it). A rep string retires with its stores still in the store buffer and the
 * fill buffers, so native_tsc() after one leaves its drain outside the window: a page
 * timed alone that way looks up to twice as fast as a series of pages in one window.
 */
static inline uint64_t rep_tsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("mfence\n\tlfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Ticks per page of a copy of @pages pages from @src to @dst and of a clear of the
 * @clr_pages pages at @clr, each series in one window (rep_tsc()), best of @passes after
 * one untimed pass that brings the pages to the level their sizes pick. */
static void rep_series(char *dst, const char *src, int pages, char *clr, int clr_pages, int passes,
		       double *copy, double *clear)
{
	uint64_t bc = ~0ull, bs = ~0ull;
	for (int s = 0; s <= passes; s++) {
		uint64_t t0 = rep_tsc();
		for (int i = 0; i < pages; i++)
			rep_movsq(dst + (size_t)i * PAGE, src + (size_t)i * PAGE, PAGE);
		uint64_t t1 = rep_tsc();
		for (int i = 0; i < clr_pages; i++)
			rep_stosq(clr + (size_t)i * PAGE, PAGE);
		uint64_t t2 = rep_tsc();
		if (s) {
			bc = t1 - t0 < bc ? t1 - t0 : bc;
			bs = t2 - t1 < bs ? t2 - t1 : bs;
		}
	}
	*copy = (double)bc / pages;
	*clear = (double)bs / clr_pages;
}

static void flush(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i += LINE)
		__asm__ __volatile__("clflush (%0)" ::"r"(p + i) : "memory");
	__asm__ __volatile__("mfence" ::: "memory");
}

/* ---- out-of-order core: width, latencies, window sizes, memory-level parallelism ---- */

/*
 * Width: a loop of WIDTH_OPS single-uop instructions with no dependence between them
 * (plus the loop's fused dec+jnz, counted as one more slot). Three kinds, because each
 * has another limit besides allocation: 4-byte nops use no execution port; adds of an
 * immediate to 12 registers need an ALU each; xor-zeroing idioms are resolved at rename.
 */
#define WIDTH_OPS 96
#define WIDTH_SLOTS (WIDTH_OPS + 1)
#define ADD12 "add $1, %%r8\n\tadd $1, %%r9\n\tadd $1, %%r10\n\tadd $1, %%r11\n\t"      \
	      "add $1, %%r12\n\tadd $1, %%r13\n\tadd $1, %%r14\n\tadd $1, %%r15\n\t"    \
	      "add $1, %%rax\n\tadd $1, %%rcx\n\tadd $1, %%rdx\n\tadd $1, %%rsi\n\t"
#define XOR12 "xor %%r8d, %%r8d\n\txor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\t"           \
	      "xor %%r11d, %%r11d\n\txor %%r12d, %%r12d\n\txor %%r13d, %%r13d\n\t"      \
	      "xor %%r14d, %%r14d\n\txor %%r15d, %%r15d\n\txor %%eax, %%eax\n\t"        \
	      "xor %%ecx, %%ecx\n\txor %%edx, %%edx\n\txor %%esi, %%esi\n\t"
#define WIDTH_LOOP(name, body)                                                              \
	static uint64_t name(uint64_t iters)                                                \
	{                                                                                   \
		uint64_t t0 = native_tsc();                                                 \
		__asm__ __volatile__("1:\n\t" body "dec %0\n\tjnz 1b"                       \
				     : "+r"(iters)::"rax", "rcx", "rdx", "rsi", "r8", "r9", \
				       "r10", "r11", "r12", "r13", "r14", "r15", "cc");     \
		return native_tsc() - t0;                                                   \
	}
WIDTH_LOOP(width_nop, ".rept 96\n\tnopl 0x40(%%rax)\n\t.endr\n\t")
WIDTH_LOOP(width_add, ".rept 8\n\t" ADD12 ".endr\n\t")
WIDTH_LOOP(width_xor, ".rept 8\n\t" XOR12 ".endr\n\t")

/*
 * Taken-branch throughput: loops of k conditional branches, each always taken over one nop
 * to the next 16-byte-aligned block (so no fetch block holds two of them), plus the taken
 * loop branch (k + 1 taken branches an iteration). With enough width left over, what bounds
 * them is how many taken branches the front end follows per cycle: TAKEN_N of them give the
 * general rate; the small ones show whether the front end replays small loops (a loop
 * buffer, a zero-bubble BTB) faster, and up to which size.
 */
#define TAKEN_N 32
#define TAKEN_LOOP(k)                                                                        \
	static uint64_t taken_loop_##k(uint64_t iters)                                       \
	{                                                                                    \
		uint64_t five = 5;                                                           \
		uint64_t t0 = native_tsc();                                                  \
		__asm__ __volatile__(".p2align 6\n1:\n\t"                                    \
				     ".rept " #k "\n\tcmp $1, %1\n\tjae 2f\n\tnop\n\t.p2align 4\n2:\n\t.endr\n\t" \
				     "dec %0\n\tjnz 1b"                                       \
				     : "+r"(iters)                                           \
				     : "r"(five)                                             \
				     : "cc");                                                \
		return native_tsc() - t0;                                                    \
	}
TAKEN_LOOP(32)
TAKEN_LOOP(1) TAKEN_LOOP(3) TAKEN_LOOP(5) TAKEN_LOOP(7) TAKEN_LOOP(9) TAKEN_LOOP(11)
TAKEN_LOOP(13) TAKEN_LOOP(15) TAKEN_LOOP(17) TAKEN_LOOP(19) TAKEN_LOOP(23) TAKEN_LOOP(27)
static uint64_t (*const taken_loop_fn[])(uint64_t) = {
	taken_loop_1, taken_loop_3, taken_loop_5, taken_loop_7, taken_loop_9, taken_loop_11,
	taken_loop_13, taken_loop_15, taken_loop_17, taken_loop_19, taken_loop_23, taken_loop_27,
};
static const int taken_loop_k[] = { 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 23, 27 };
#define NTAKEN_LOOPS ((int)(sizeof(taken_loop_k) / sizeof(taken_loop_k[0])))

/* Ticks per taken branch of @fn (k taken branches and the loop branch an iteration), best
 * of @samples runs of @iters iterations after a short warm-up run. */
static double taken_sample(uint64_t (*fn)(uint64_t), int k, uint64_t iters, int samples)
{
	uint64_t best = ~0ull;
	fn(iters / 8 + 1);
	for (int s = 0; s < samples; s++) {
		uint64_t t = fn(iters);
		best = t < best ? t : best;
	}
	return (double)best / (double)(iters * (uint64_t)(k + 1));
}

/*
 * The BTB's levels: chains of K blocks, each `add $1, %rax; cmp $1, %rsi; jae` to the next
 * 16-byte block (always taken), run round a loop, for K from 32 to 2048 distinct taken
 * branches (at most 32 KiB of code and a few bytes of loop: within the 32-64 KiB L1i of
 * the cores in calibrate's table, so the instruction cache is not what is timed). While the fastest BTB level holds the chain, the front end follows
 * taken_per_cycle of them a cycle; beyond it each costs the slower level's bubble more.
 * Generated code: the chain's length is a run-time choice.
 */
#define BTB_SPACING 16
static const unsigned btb_k[] = { 32, 64, 128, 256, 384, 512, 1024, 2048 };
#define NBTB ((int)(sizeof(btb_k) / sizeof(btb_k[0])))
typedef uint64_t (*btb_fn)(uint64_t iters);

static size_t btb_size(unsigned k) { return 64 + (size_t)k * BTB_SPACING + 16; }

static void btb_emit(uint8_t *m, unsigned k)
{
	uint8_t *p = m;
	*p++ = 0x48, *p++ = 0x89, *p++ = 0xf9;                 /* mov %rdi, %rcx */
	*p++ = 0xbe, *p++ = 5, *p++ = 0, *p++ = 0, *p++ = 0;   /* mov $5, %esi */
	while ((p - m) % 64)
		*p++ = 0x90;
	uint8_t *loop = p;
	for (unsigned i = 0; i < k; i++) {
		uint8_t *b = loop + (size_t)i * BTB_SPACING, *next = b + BTB_SPACING;
		p = b;
		*p++ = 0x48, *p++ = 0x83, *p++ = 0xc0, *p++ = 1;     /* add $1, %rax */
		*p++ = 0x48, *p++ = 0x83, *p++ = 0xfe, *p++ = 1;     /* cmp $1, %rsi */
		int32_t rel = (int32_t)(next - (p + 6));
		*p++ = 0x0f, *p++ = 0x83;                            /* jae next */
		memcpy(p, &rel, 4), p += 4;
		while (p < next)
			*p++ = 0xcc;
	}
	*p++ = 0x48, *p++ = 0xff, *p++ = 0xc9;                 /* dec %rcx */
	int32_t rel = (int32_t)(loop - (p + 6));
	*p++ = 0x0f, *p++ = 0x85;                              /* jnz loop */
	memcpy(p, &rel, 4), p += 4;
	*p++ = 0xc3;                                           /* ret */
}

/* Generated code: writable pages for *len bytes (rounded up to whole pages), then sealed
 * read-only and executable. NULL / -1 (unmapped) when the kernel refuses. */
static uint8_t *code_map(size_t *len)
{
	*len = (*len + PAGE - 1) & ~(size_t)(PAGE - 1);
	uint8_t *m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static int code_seal(uint8_t *m, size_t len)
{
	if (mprotect(m, len, PROT_READ | PROT_EXEC)) {
		munmap(m, len);
		return -1;
	}
	return 0;
}

#define CODE_ALIGN(n) (((n) + 63) & ~(size_t)63)	/* each function on its own lines */

struct btb_code {
	uint8_t *mem;
	size_t len;
	btb_fn fn[NBTB];
};

/* Every chain of btb_k[]; 0, or -1 when the kernel refuses executable memory. */
static int btb_build(struct btb_code *c)
{
	size_t len = 0, off = 0;
	for (int i = 0; i < NBTB; i++)
		len += CODE_ALIGN(btb_size(btb_k[i]));
	uint8_t *m = code_map(&len);
	if (!m)
		return -1;
	for (int i = 0; i < NBTB; i++) {
		c->fn[i] = (btb_fn)(void *)(m + off);
		btb_emit(m + off, btb_k[i]);
		off += CODE_ALIGN(btb_size(btb_k[i]));
	}
	if (code_seal(m, len))
		return -1;
	c->mem = m;
	c->len = len;
	return 0;
}

/* Ticks per taken branch of the chain of k (k + 1 taken branches a lap), best of
 * @samples runs of about 2^20 taken branches after a warm-up run. */
static double btb_sample(btb_fn fn, unsigned k, int samples)
{
	uint64_t laps = (1u << 20) / (k + 1) + 1, best = ~0ull;
	fn(laps / 4 + 1);
	for (int s = 0; s < samples; s++) {
		uint64_t t0 = native_tsc();
		fn(laps);
		uint64_t t = native_tsc() - t0;
		best = t < best ? t : best;
	}
	return (double)best / (double)(laps * (k + 1));
}

/* Ticks per slot of a width loop, best of @samples runs of @iters iterations. */
static double width_sample(uint64_t (*fn)(uint64_t), uint64_t iters, int samples)
{
	uint64_t best = ~0ull;
	fn(iters / 8 + 1); /* code and frequency warm-up */
	for (int s = 0; s < samples; s++) {
		uint64_t t = fn(iters);
		best = t < best ? t : best;
	}
	return (double)best / (double)(iters * WIDTH_SLOTS);
}

/*
 * Dependent chains, one result feeding the next. add is the 1-cycle reference that
 * lat_imul is read against (the clock itself assumes imul = 3, so the imul chain in
 * core cycles would only return that assumption). The divisions: rax = s + rdx (the
 * remainder) after each div by 7 with rdx zeroed, so one step is div + a 1-cycle lea;
 * s = 1000 gives an 8-bit quotient, s = 0xF000... a 61-bit one. div_128 divides
 * rdx:rax (remainder:quotient of the previous step) by a 33-bit divisor: a 128-bit
 * dividend every time, still a valid division because the remainder is below the divisor.
 */
TIMED_CHAIN(add_chain, "add %1, %0", "+r"(v), "r"(m))

static uint64_t div_lea_chain(uint64_t n, uint64_t s)
{
	uint64_t a = s, d = 0, c = 7;
	uint64_t t0 = native_tsc();
	for (uint64_t i = 0; i < n; i += 8)
		__asm__ __volatile__(X8("div %2\n\tlea (%3,%%rdx), %%rax\n\txor %%edx, %%edx\n\t")
				     : "+a"(a), "+d"(d) : "r"(c), "r"(s) : "cc");
	return native_tsc() - t0;
}
static uint64_t div_small_chain(uint64_t n) { return div_lea_chain(n, 1000); }
static uint64_t div_large_chain(uint64_t n) { return div_lea_chain(n, 0xF000000000000000ull); }
static uint64_t div128_chain(uint64_t n)
{
	uint64_t a = 0, d = 1, c = 0x100000007ull;
	uint64_t t0 = native_tsc();
	for (uint64_t i = 0; i < n; i += 8)
		__asm__ __volatile__(X8("div %2\n\t") : "+a"(a), "+d"(d) : "r"(c) : "cc");
	return native_tsc() - t0;
}

#define FP_CHAIN(name, insn, start, operand)                                                \
	static uint64_t name(uint64_t n)                                                    \
	{                                                                                   \
		double x = (start), y = (operand);                                          \
		uint64_t t0 = native_tsc();                                                 \
		for (uint64_t i = 0; i < n; i += 8)                                         \
			__asm__ __volatile__(X8(insn " %1, %0\n\t") : "+x"(x) : "x"(y));    \
		uint64_t t = native_tsc() - t0;                                             \
		__asm__ __volatile__("" ::"x"(x));                                          \
		return t;                                                                   \
	}
/* operands keep the values normal (no denormal or infinity slow paths) */
FP_CHAIN(addsd_chain, "addsd", 0.0, 1.0)
FP_CHAIN(mulsd_chain, "mulsd", 1.0, 1.0)
FP_CHAIN(divsd_chain, "divsd", 1.0, 1.0000001)
FP_CHAIN(paddq_chain, "paddq", 0.0, 1e-300)

/*
 * Window sizes (Henry Wong's method): a loop of [load A; N fillers; load B; N fillers],
 * A and B each the next step of its own pointer chase through the 1 GiB arena, so both
 * miss every cache. While the window holds A, the fillers and B, the two misses overlap
 * and an iteration costs one memory latency; once the fillers exhaust the structure
 * under test, B waits for A to retire and the iteration costs two. The fillers choose
 * the structure: nops take a reorder-buffer entry only, stores a store-buffer entry,
 * loads (L1 hits) a load-buffer entry.
 *
 * The loops are generated as machine code for each N, because N is the variable.
 * Generated function: uint64_t fn(void *a, void *b, uint64_t iters, void **out)
 * (System V: rdi, rsi, rdx, rcx); it leaves both chains' positions in out[0], out[1];
 * fillers address out + 64 (a private line).
 */
enum wong_kind { WONG_ROB, WONG_STORE, WONG_LOAD, WONG_KINDS };
static const char *const wong_name[WONG_KINDS] = { "rob_size", "store_buffer", "load_buffer" };
static const char *const wong_filler[WONG_KINDS] = { "nopl 0x40(%rax)", "mov %eax, 0x40(%rcx)",
						     "mov 0x40(%rcx), %eax" };
static const uint8_t wong_bytes[WONG_KINDS][4] = { { 0x0f, 0x1f, 0x40, 0x40 },
						   { 0x89, 0x41, 0x40 },
						   { 0x8b, 0x41, 0x40 } };
static const unsigned wong_len[WONG_KINDS] = { 4, 3, 3 };
/* coarse grids: up to about twice the largest published size of the structure */
static const unsigned wong_max[WONG_KINDS] = { 1024, 256, 384 };
static const unsigned wong_step[WONG_KINDS] = { 32, 8, 12 };
#define WONG_MAXP 96
#define WONG_ITERS 1024

typedef uint64_t (*wong_fn)(void *, void *, uint64_t, void **);

static size_t wong_size(enum wong_kind k, unsigned n) { return 32 + 2 * (size_t)n * wong_len[k]; }

static uint8_t *wong_emit(uint8_t *p, enum wong_kind k, unsigned n)
{
	static const uint8_t load_a[] = { 0x48, 0x8b, 0x3f }, load_b[] = { 0x48, 0x8b, 0x36 };
	uint8_t *top = p;
	memcpy(p, load_a, 3), p += 3;              /* mov (%rdi), %rdi */
	for (unsigned i = 0; i < n; i++)
		memcpy(p, wong_bytes[k], wong_len[k]), p += wong_len[k];
	memcpy(p, load_b, 3), p += 3;              /* mov (%rsi), %rsi */
	for (unsigned i = 0; i < n; i++)
		memcpy(p, wong_bytes[k], wong_len[k]), p += wong_len[k];
	*p++ = 0x48, *p++ = 0xff, *p++ = 0xca;     /* dec %rdx */
	int32_t rel = (int32_t)(top - (p + 6));
	*p++ = 0x0f, *p++ = 0x85;                  /* jnz top */
	memcpy(p, &rel, 4), p += 4;
	*p++ = 0x48, *p++ = 0x89, *p++ = 0x39;     /* mov %rdi, (%rcx) */
	*p++ = 0x48, *p++ = 0x89, *p++ = 0x71, *p++ = 0x08; /* mov %rsi, 8(%rcx) */
	*p++ = 0xc3;                               /* ret */
	return p;
}

struct wong_code {
	uint8_t *mem;
	size_t len;
	wong_fn fn[WONG_MAXP];
};

/* Machine code for every N of @ns; 0, or -1 with errno when the kernel refuses it. */
static int wong_build(struct wong_code *c, enum wong_kind k, const unsigned *ns, int count)
{
	size_t len = 0, off = 0;
	for (int i = 0; i < count; i++)
		len += CODE_ALIGN(wong_size(k, ns[i]));
	uint8_t *m = code_map(&len);
	if (!m)
		return -1;
	for (int i = 0; i < count; i++) {
		c->fn[i] = (wong_fn)(void *)(m + off);
		wong_emit(m + off, k, ns[i]);
		off += CODE_ALIGN(wong_size(k, ns[i]));
	}
	if (code_seal(m, len))
		return -1;
	c->mem = m;
	c->len = len;
	return 0;
}

static void *wong_out[16] __attribute__((aligned(128)));
static void *wong_a, *wong_b;

/* Ticks per iteration, best of @samples runs; the chases continue from run to run. */
static double wong_sample(wong_fn fn, int samples)
{
	uint64_t best = ~0ull;
	for (int s = 0; s < samples; s++) {
		uint64_t t0 = native_tsc();
		fn(wong_a, wong_b, WONG_ITERS, wong_out);
		uint64_t t = native_tsc() - t0;
		wong_a = wong_out[0];
		wong_b = wong_out[1];
		best = t < best ? t : best;
	}
	return (double)best / WONG_ITERS;
}

struct wong {
	int n;
	unsigned fillers[WONG_MAXP];
	struct wong_code code;
	const char *error;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median3(const double *t)
{
	double v[3] = { t[0], t[1], t[2] };
	qsort(v, 3, sizeof(double), cmp_double);
	return v[1];
}

/*
 * The step of a curve @t[0..n): the split index i (t[<i] low, t[>=i] high) with the
 * fewest points on the wrong side of the midpoint between the medians of the first
 * and the last three points; -1 when the last three are not 1.3x the first three
 * (no step). tools/baremm_lib/calibrate.py (wong_step) applies the same rule to the
 * minima over rounds; this one only places the fine grid.
 */
static int step_index(const double *t, int n)
{
	if (n < 6)
		return -1;
	double lo = median3(t), hi = median3(t + n - 3), mid = (lo + hi) / 2;
	if (hi < 1.3 * lo)
		return -1;
	int best = -1, bestbad = n + 1;
	for (int i = 1; i < n; i++) {
		int bad = 0;
		for (int j = 0; j < n; j++)
			bad += j < i ? t[j] > mid : t[j] < mid;
		if (bad < bestbad)
			best = i, bestbad = bad;
	}
	return best;
}

/*
 * The grid of one structure: the coarse grid, refined in steps of 2 between the two
 * coarse points around the step of one pilot pass (3 samples per point). The grid is
 * fixed before the rounds, so every round measures the same Ns.
 */
static void wong_plan(struct wong *w, enum wong_kind k)
{
	unsigned coarse[WONG_MAXP];
	int nc = 0;
	for (unsigned n = 0; n <= wong_max[k] && nc < WONG_MAXP; n += wong_step[k])
		coarse[nc++] = n;
	struct wong_code pilot;
	w->n = 0;
	if (wong_build(&pilot, k, coarse, nc)) {
		w->error = "cannot map generated code executable (mmap/mprotect refused)";
		return;
	}
	double t[WONG_MAXP];
	for (int i = 0; i < nc; i++)
		t[i] = wong_sample(pilot.fn[i], 3);
	munmap(pilot.mem, pilot.len);
	int at = step_index(t, nc);
	for (int i = 0; i < nc; i++) {
		w->fillers[w->n++] = coarse[i];
		if (i + 1 == at)
			for (unsigned n = coarse[i] + 2; n < coarse[i + 1] && w->n < WONG_MAXP - (nc - i); n += 2)
				w->fillers[w->n++] = n;
	}
	if (wong_build(&w->code, k, w->fillers, w->n)) {
		w->n = 0;
		w->error = "cannot map generated code executable (mmap/mprotect refused)";
	}
}

/*
 * Memory-level parallelism: @k independent pointer chases through the 1 GiB arena,
 * advanced in turn; ticks per load. The time per load falls as 1/k until the misses
 * in flight hit a limit (fill buffers, or anything smaller on the way to memory).
 */
#define MLP_MAXK 32
static void *mlp_p[MLP_MAXK];
static const unsigned mlp_k[] = { 1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 18, 20, 24, 28, 32 };
#define MLP_NK (int)(sizeof(mlp_k) / sizeof(mlp_k[0]))
#define MLP_LOADS 8192

static uint64_t mlp_run(void **p, unsigned k, uint64_t steps)
{
	uint64_t t0 = native_tsc();
	for (uint64_t s = 0; s < steps; s++)
		for (unsigned j = 0; j < k; j++)
			p[j] = *(void *volatile *)p[j];
	return native_tsc() - t0;
}

static double mlp_sample(unsigned k, int samples)
{
	uint64_t steps = MLP_LOADS / k, best = ~0ull;
	for (int s = 0; s < samples; s++) {
		uint64_t t = mlp_run(mlp_p, k, steps);
		best = t < best ? t : best;
	}
	return (double)best / (double)(steps * k);
}

/*
 * Prefetch: a pointer chase through lines in address order against one through the
 * same number of lines in random order, every line of the run clflushed first, so
 * neither finds its lines in any cache; a hardware stream prefetcher makes the first
 * far cheaper per line.
 */
#define PF_LINES 4096
static void *pf_addr[PF_LINES];

static double pf_sample(void **pp, int samples)
{
	uint64_t best = ~0ull;
	for (int s = 0; s < samples; s++) {
		void *p = *pp;
		for (int i = 0; i < PF_LINES; i++) {
			pf_addr[i] = p;
			p = *(void **)p;
		}
		for (int i = 0; i < PF_LINES; i++)
			__asm__ __volatile__("clflush (%0)" ::"r"(pf_addr[i]) : "memory");
		__asm__ __volatile__("mfence" ::: "memory");
		p = *pp;
		uint64_t t = chase(&p, PF_LINES);
		*pp = p;
		best = t < best ? t : best;
	}
	return (double)best / PF_LINES;
}

/* ---- core to core: CAS ping-pong on one line, CPU 0 <-> CPU 1 ---- */

static struct {
	uint64_t v __attribute__((aligned(128)));
	char pad[120];
	volatile int go __attribute__((aligned(128)));
	uint64_t n;
	int cpu;
} pp;

static void *ponger(void *arg)
{
	(void)arg;
	if (native_pin(pp.cpu))
		return (void *)1;
	pp.go = 1;
	for (uint64_t k = 1; k < 2 * pp.n; k += 2) {
		uint64_t e = k;
		while (!__atomic_compare_exchange_n(&pp.v, &e, k + 1, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST))
			e = k;
	}
	return NULL;
}

/* Ticks per round trip (two transfers of the line), best of @samples batches of @n. */
static double c2c_roundtrip(int cpu, uint64_t n, int samples)
{
	double best = 1e30;
	for (int s = 0; s < samples; s++) {
		pthread_t th;
		pp.v = 0;
		pp.go = 0;
		pp.n = n;
		pp.cpu = cpu;
		if (pthread_create(&th, NULL, ponger, NULL))
			return -1;
		while (!pp.go)
			__asm__ __volatile__("pause");
		uint64_t t0 = native_tsc();
		for (uint64_t k = 0; k < 2 * n; k += 2) {
			uint64_t e = k;
			while (!__atomic_compare_exchange_n(&pp.v, &e, k + 1, false, __ATOMIC_SEQ_CST,
							    __ATOMIC_SEQ_CST))
				e = k;
		}
		uint64_t e = 2 * n; /* the ponger's last move */
		while (__atomic_load_n(&pp.v, __ATOMIC_ACQUIRE) != e)
			__asm__ __volatile__("" ::: "memory");
		uint64_t t = native_tsc() - t0;
		void *ret;
		pthread_join(th, &ret);
		if (ret)
			return -1;
		if ((double)t / (double)n < best)
			best = (double)t / (double)n;
	}
	return best;
}

/* ---- JSON output ---- */

static void jarr(const char *key, const double *v, int n, bool comma)
{
	printf("\"%s\": [", key);
	for (int i = 0; i < n; i++)
		printf("%s%.4f", i ? ", " : "", v[i]);
	printf("]%s\n", comma ? "," : "");
}

static void jmat(const char *key, double *const *v, int rows, int cols, bool comma)
{
	printf("\"%s\": [", key);
	for (int r = 0; r < rows; r++) {
		printf("%s[", r ? ", " : "");
		for (int c = 0; c < cols; c++)
			printf("%s%.4f", c ? ", " : "", v[r][c]);
		printf("]");
	}
	printf("]%s\n", comma ? "," : "");
}

static void jints(const char *key, const uint64_t *v, int n, bool comma)
{
	printf("\"%s\": [", key);
	for (int i = 0; i < n; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	printf("]%s\n", comma ? "," : "");
}

/* The CPUID leaf of the deterministic cache parameters: leaf 4 on Intel; AMD has the same
 * layout in leaf 0x8000001D (with TOPOEXT, CPUID 0x80000001 ECX bit 22) and reserves
 * leaf 4. 0: neither. */
static unsigned cache_leaf_id(void)
{
	unsigned a, b, c, d;
	char vendor[13] = { 0 };
	__cpuid(0, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	if (a >= 4 && !strcmp(vendor, "GenuineIntel"))
		return 4;
	__cpuid(0x80000000, a, b, c, d);
	if (!strcmp(vendor, "AuthenticAMD") && a >= 0x8000001D) {
		__cpuid(0x80000001, a, b, c, d);
		if ((c >> 22) & 1)
			return 0x8000001D;
	}
	return 0;
}

/* KiB of the data or unified cache of @level as that leaf gives it; 0 if none. */
static unsigned cache_kib(unsigned level)
{
	unsigned leaf = cache_leaf_id(), a, b, c, d;
	for (unsigned s = 0; leaf && s < 16; s++) {
		__cpuid_count(leaf, s, a, b, c, d);
		unsigned type = a & 31;
		if (!type)
			break;
		if (((a >> 5) & 7) == level && type != 2)
			return ((b >> 22) + 1) * (((b >> 12) & 1023) + 1) * ((b & 4095) + 1) * (c + 1) / 1024;
	}
	return 0;
}

static void print_cpuid(void)
{
	unsigned a, b, c, d;
	char vendor[13] = { 0 }, brand[49] = { 0 }, hv[13] = { 0 };
	__cpuid(0, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	unsigned maxleaf = a;
	__cpuid(1, a, b, c, d);
	unsigned fam = (a >> 8) & 15, mod = (a >> 4) & 15, step = a & 15;
	if (fam == 15)
		fam += (a >> 20) & 255;
	if (fam == 6 || fam >= 15)
		mod += ((a >> 16) & 15) << 4;
	bool hyper = (c >> 31) & 1;
	__cpuid(0x80000000, a, b, c, d);
	if (a >= 0x80000004)
		for (unsigned l = 0; l < 3; l++) {
			unsigned r[4];
			__cpuid(0x80000002 + l, r[0], r[1], r[2], r[3]);
			memcpy(brand + 16 * l, r, 16);
		}
	for (char *s = brand; *s; s++)
		if (*s == '"' || *s == '\\')
			*s = ' ';
	if (hyper) {
		__cpuid(0x40000000, a, b, c, d);
		memcpy(hv, &b, 4);
		memcpy(hv + 4, &c, 4);
		memcpy(hv + 8, &d, 4);
		for (char *s = hv; s < hv + 12; s++)
			if (*s < 32 || *s > 126 || *s == '"' || *s == '\\')
				*s = ' ';
	}
	printf("\"cpuid\": {\"vendor\": \"%s\", \"brand\": \"%s\", \"family\": %u, \"model\": %u, "
	       "\"stepping\": %u, \"hypervisor\": \"%s\", \"leaf4\": [",
	       vendor, brand, fam, mod, step, hv);
	unsigned cache_leaf = cache_leaf_id();
	bool first = true;
	if (cache_leaf)
		for (unsigned s = 0; s < 16; s++) {
			__cpuid_count(cache_leaf, s, a, b, c, d);
			unsigned type = a & 31;
			if (!type)
				break;
			unsigned ways = (b >> 22) + 1, parts = ((b >> 12) & 1023) + 1, line = (b & 4095) + 1,
				 sets = c + 1;
			printf("%s{\"level\": %u, \"type\": \"%s\", \"ways\": %u, \"sets\": %u, \"line\": %u, "
			       "\"kib\": %u}",
			       first ? "" : ", ", (a >> 5) & 7,
			       type == 1 ? "data" : type == 2 ? "instruction" : "unified", ways, sets, line,
			       ways * parts * line * sets / 1024);
			first = false;
		}
	/* leaf 0x18 (deterministic address translation): the TLB geometry, when exposed */
	printf("], \"cache_leaf\": %u, \"leaf18\": [", cache_leaf);
	first = true;
	if (maxleaf >= 0x18 && !strcmp(vendor, "GenuineIntel")) {
		__cpuid_count(0x18, 0, a, b, c, d);
		unsigned maxsub = a;
		for (unsigned s = 0; s <= maxsub && s < 32; s++) {
			__cpuid_count(0x18, s, a, b, c, d);
			if (!(d & 31))
				continue;
			printf("%s{\"pages\": %u, \"ways\": %u, \"sets\": %u, \"type\": %u, \"level\": %u, "
			       "\"full\": %u}",
			       first ? "" : ", ", b & 15, b >> 16, c, d & 31, (d >> 5) & 7, (d >> 8) & 1);
			first = false;
		}
	}
	printf("]},\n");
}

/* ---- main ---- */

static const unsigned ws_kib_full[] = { 8, 16, 24, 32, 40, 48, 64, 96, 128, 192, 256, 384, 512, 768,
					1024, 1536, 2048, 3072, 4096, 6144, 8192, 16384, 32768, 65536 };
static const unsigned tlb_pages_full[] = { 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 256, 384, 512,
					   768, 1024, 1536, 1792, 2048, 2304, 2560, 3072, 4096, 8192,
					   16384, 32768 };

static int check(const char *path)
{
	struct profile p;
	char err[512], d[1024];
	if (profile_load(path, &p, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	profile_describe(&p, d, sizeof(d));
	printf("%s\n", d);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = 7;
	unsigned mem_mib = 1024;
	bool quick = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--check") && i + 1 < argc)
			return check(argv[i + 1]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mem-mib") && i + 1 < argc)
			mem_mib = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else {
			fprintf(stderr, "usage: calibrate [--rounds N] [--mem-mib M] [--quick] | --check PROFILE\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > 100 || mem_mib < 8) {
		fprintf(stderr, "calibrate: --rounds 1..100, --mem-mib >= 8\n");
		return 2;
	}
	uint64_t start_ns = native_ns();
	if (native_pin(0)) {
		fprintf(stderr, "calibrate: cannot pin to CPU 0: %s\n", strerror(errno));
		return 2;
	}
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	/* hugetlb needs pages reserved by root; THP (madvise) is what the arenas use */
	bool hugetlb = false;
	{
		void *h = mmap(NULL, HPAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (h != MAP_FAILED) {
			hugetlb = true;
			munmap(h, HPAGE);
		}
	}
	int nws = quick ? 8 : (int)(sizeof(ws_kib_full) / sizeof(ws_kib_full[0]));
	const unsigned *ws_kib = ws_kib_full;
	static const unsigned ws_quick[] = { 16, 32, 64, 256, 1024, 4096, 16384, 32768 };
	if (quick)
		ws_kib = ws_quick;
	int ntlb = quick ? 6 : (int)(sizeof(tlb_pages_full) / sizeof(tlb_pages_full[0]));
	static const unsigned tlb_quick[] = { 32, 128, 512, 2048, 8192, 16384 };
	const unsigned *tlb_pages = quick ? tlb_quick : tlb_pages_full;
	if (quick)
		mem_mib = mem_mib < 64 ? mem_mib : 64;

	/* arenas: the memory one first, so that building its cycle has left the LLC by the
	 * time anything else is measured */
	size_t mem_bytes = (size_t)mem_mib << 20;
	char *mem = arena(mem_bytes, true);
	link_lines(mem, mem_bytes / LINE);
	double mem_thp = thp_fraction(mem, mem_bytes);

	size_t ws_total = 0;
	for (int w = 0; w < nws; w++)
		ws_total += ((size_t)ws_kib[w] << 10);
	char *ws2m = arena(ws_total, true), *ws4k = arena(ws_total, false);
	double ws2m_thp = thp_fraction(ws2m, ws_total), ws4k_thp = thp_fraction(ws4k, ws_total);
	void *start2m[32], *start4k[32];
	{
		size_t off = 0;
		for (int w = 0; w < nws; w++) {
			uint64_t n = ((uint64_t)ws_kib[w] << 10) / LINE;
			link_lines(ws2m + off, n);
			link_lines(ws4k + off, n);
			start2m[w] = ws2m + off;
			start4k[w] = ws4k + off;
			off += (size_t)ws_kib[w] << 10;
		}
	}

	unsigned maxpages = tlb_pages[ntlb - 1];
	size_t tlb_bytes = (size_t)maxpages * PAGE;
	char *tlb2m = arena(tlb_bytes, true), *tlb4k = arena(tlb_bytes, false);
	double tlb2m_thp = thp_fraction(tlb2m, tlb_bytes), tlb4k_thp = thp_fraction(tlb4k, tlb_bytes);
	/* one line per page, at a random line of the page so that the lines spread over all
	 * cache sets; the same layout in both arenas, so only the page size differs */
	uint64_t *tlb_off = malloc(sizeof(uint64_t) * maxpages);
	uint32_t *perm = malloc(sizeof(uint32_t) * maxpages);
	for (unsigned i = 0; i < maxpages; i++)
		tlb_off[i] = (uint64_t)i * PAGE + (rng() % (PAGE / LINE)) * LINE;

	/*
	 * Page-size probe: PROBE_N lines, one per 2 MiB of the THP arena, against PROBE_N
	 * lines one per 4 KiB. All are L1-resident; if the TLB held 2 MiB entries both would
	 * cost an L1 hit, but 4 KiB entries at a 2 MiB stride fall into one L1 dTLB set and
	 * miss it (the signature of a hypervisor that maps guest memory with 4 KiB pages).
	 */
	uint64_t probe_off[PROBE_N], probe_off4[PROBE_N];
	uint32_t probe_perm[PROBE_N];
	bool probe_ok = tlb_bytes >= (size_t)PROBE_N * HPAGE;
	for (unsigned i = 0; i < PROBE_N; i++) {
		probe_off[i] = (uint64_t)i * HPAGE + (rng() % (PAGE / LINE)) * LINE;
		probe_off4[i] = (uint64_t)i * PAGE + (probe_off[i] % PAGE);
	}

	/* the out-of-order core's figures: chase starts spread over the 1 GiB arena, the
	 * window-size grids planned by one pilot pass, the prefetch arenas linked */
	uint64_t mem_lines = mem_bytes / LINE;
	wong_a = mem + (rng() % mem_lines) * LINE;
	wong_b = mem + (rng() % mem_lines) * LINE;
	for (int j = 0; j < MLP_MAXK; j++)
		mlp_p[j] = mem + (rng() % mem_lines) * LINE;
	struct wong wong[WONG_KINDS];
	for (int k = 0; k < WONG_KINDS; k++) {
		memset(&wong[k], 0, sizeof(wong[k]));
		wong_plan(&wong[k], (enum wong_kind)k);
	}
	struct btb_code btb;
	const char *btb_error = btb_build(&btb) ? "cannot map generated code executable "
						  "(mmap/mprotect refused)" : NULL;
	size_t pf_bytes = (size_t)8 << 20;
	char *pf_seq = arena(pf_bytes, false), *pf_rnd = arena(pf_bytes, false);
	for (size_t i = 0; i < pf_bytes; i += LINE)
		*(void **)(pf_seq + i) = pf_seq + (i + LINE) % pf_bytes;
	link_lines(pf_rnd, pf_bytes / LINE);
	void *pf_seq_p = pf_seq, *pf_rnd_p = pf_rnd;

	branch_buf = malloc(BRANCH_N);
	for (unsigned i = 0; i < BRANCH_N; i++)
		branch_buf[i] = (uint8_t)(rng() & 0x7f);
	char *rep_src = arena(64 << 10, false), *rep_dst = arena(64 << 10, false);
	/* page copies through a source and a destination of REP_L2_PAGES pages each: larger
	 * than any L1d, within any L2, so both streams are filled from the L2 */
	char *rep_l2 = arena(2 * REP_L2_PAGES * PAGE, false);
	/* the same from the LLC: a copy from one L2's worth of pages into another and a clear
	 * of both, 2 x the L2 in all, so every line of the stream comes from beyond the L2
	 * (CPUID's size; 2 MiB when it gives none, which the derivation refuses) */
	unsigned l2_kib = cache_kib(2);
	int llc_half = (int)((l2_kib ? l2_kib : 2048) / 4);
	if (llc_half > 8192)
		llc_half = 8192;
	char *rep_llc = arena((size_t)2 * llc_half * PAGE, false);

	/* per-round results */
	double *tsc_ghz = calloc((size_t)rounds, sizeof(double));
	double *cpt = calloc((size_t)rounds, sizeof(double));
	uint64_t *ovh = calloc((size_t)rounds, sizeof(uint64_t));
	double *c2m[100], *c4k[100], *t2m[100], *t4k[100], *l2m[100], *l4k[100];
	double *memlat = calloc((size_t)rounds, sizeof(double));
	double *xadd = calloc((size_t)rounds, sizeof(double)), *xchg = calloc((size_t)rounds, sizeof(double));
	double *mfence = calloc((size_t)rounds, sizeof(double)), *lfence = calloc((size_t)rounds, sizeof(double));
	double *pause8 = calloc((size_t)rounds, sizeof(double)), *pause4k = calloc((size_t)rounds, sizeof(double));
	double *cpuid = calloc((size_t)rounds, sizeof(double));
	double *br_pred = calloc((size_t)rounds, sizeof(double)), *br_rand = calloc((size_t)rounds, sizeof(double));
	double *movs_l1 = calloc((size_t)rounds, sizeof(double)), *stos_l1 = calloc((size_t)rounds, sizeof(double));
	double *movs_mem = calloc((size_t)rounds, sizeof(double)), *stos_mem = calloc((size_t)rounds, sizeof(double));
	double *movs_l2 = calloc((size_t)rounds, sizeof(double)), *stos_l2 = calloc((size_t)rounds, sizeof(double));
	double *movs_llc = calloc((size_t)rounds, sizeof(double)), *stos_llc = calloc((size_t)rounds, sizeof(double));
	double *c2c = calloc((size_t)rounds, sizeof(double));
	double *probe2m = calloc((size_t)rounds, sizeof(double)), *probe4k = calloc((size_t)rounds, sizeof(double));
	enum { W_NOP, W_ADD, W_XOR, NWIDTH };
	static const char *const width_name[NWIDTH] = { "nop4", "add_imm", "xor_zero" };
	static uint64_t (*const width_fn[NWIDTH])(uint64_t) = { width_nop, width_add, width_xor };
	enum { L_ADD, L_IMUL, L_DIVS, L_DIVL, L_DIV128, L_ADDSD, L_MULSD, L_PADDQ, L_DIVSD, NLAT };
	static const char *const lat_name[NLAT] = { "add", "imul", "div_small", "div_large", "div_128",
						    "addsd", "mulsd", "paddq", "divsd" };
	static uint64_t (*const lat_fn[NLAT])(uint64_t) = {
		add_chain, native_imul_chain, div_small_chain, div_large_chain, div128_chain,
		addsd_chain, mulsd_chain, paddq_chain, divsd_chain };
	double *width[NWIDTH], *lat[NLAT], *wt[WONG_KINDS][100], *mlp[100];
	for (int i = 0; i < NWIDTH; i++)
		width[i] = calloc((size_t)rounds, sizeof(double));
	for (int i = 0; i < NLAT; i++)
		lat[i] = calloc((size_t)rounds, sizeof(double));
	double *pf_s = calloc((size_t)rounds, sizeof(double)), *pf_r = calloc((size_t)rounds, sizeof(double));
	double *taken = calloc((size_t)rounds, sizeof(double));
	double **tloops = calloc((size_t)rounds, sizeof(double *));
	double **btbt = calloc((size_t)rounds, sizeof(double *));

	for (int r = 0; r < rounds; r++) {
		tsc_ghz[r] = native_tsc_ghz(20);
		cpt[r] = native_core_per_tsc(20);
		ovh[r] = tsc_overhead();
		c2m[r] = calloc((size_t)nws, sizeof(double));
		c4k[r] = calloc((size_t)nws, sizeof(double));
		l2m[r] = calloc((size_t)nws, sizeof(double));
		l4k[r] = calloc((size_t)nws, sizeof(double));
		t2m[r] = calloc((size_t)ntlb, sizeof(double));
		t4k[r] = calloc((size_t)ntlb, sizeof(double));
		for (int w = 0; w < nws; w++) {
			uint64_t n = ((uint64_t)ws_kib[w] << 10) / LINE;
			c2m[r][w] = chase_sample(start2m[w], n, CHASE_STEPS, CHASE_SAMPLES);
			c4k[r][w] = chase_sample(start4k[w], n, CHASE_STEPS, CHASE_SAMPLES);
		}
		for (int w = 0; w < nws; w++) {
			uint64_t n = ((uint64_t)ws_kib[w] << 10) / LINE;
			l2m[r][w] = chase_lap(start2m[w], n);
			l4k[r][w] = chase_lap(start4k[w], n);
		}
		for (int t = 0; t < ntlb; t++) {
			uint64_t n = tlb_pages[t];
			link_cycle(tlb2m, tlb_off, perm, n);
			t2m[r][t] = chase_sample(tlb2m + tlb_off[0], n, CHASE_STEPS, CHASE_SAMPLES);
			link_cycle(tlb4k, tlb_off, perm, n);
			t4k[r][t] = chase_sample(tlb4k + tlb_off[0], n, CHASE_STEPS, CHASE_SAMPLES);
		}
		if (probe_ok) {
			link_cycle(tlb2m, probe_off, probe_perm, PROBE_N);
			probe2m[r] = chase_sample(tlb2m + probe_off[0], PROBE_N, CHASE_STEPS, CHASE_SAMPLES);
			link_cycle(tlb2m, probe_off4, probe_perm, PROBE_N);
			probe4k[r] = chase_sample(tlb2m + probe_off4[0], PROBE_N, CHASE_STEPS, CHASE_SAMPLES);
		}
		{
			/* no warm-up lap: the point is that the line is not in any cache */
			void *p = mem + (rng() % (mem_bytes / LINE)) * LINE;
			uint64_t best = ~0ull;
			for (int s = 0; s < CHASE_SAMPLES; s++) {
				uint64_t t = chase(&p, CHASE_STEPS);
				best = t < best ? t : best;
			}
			memlat[r] = (double)best / CHASE_STEPS;
		}
		xadd[r] = best_of(lock_xadd_chain, 1 << 14, 5, ovh[r]);
		xchg[r] = best_of(xchg_chain, 1 << 14, 5, ovh[r]);
		mfence[r] = best_of(mfence_chain, 1 << 14, 5, ovh[r]);
		lfence[r] = best_of(lfence_chain, 1 << 14, 5, ovh[r]);
		/* short bursts stay under KVM's pause-loop-exit window; the long loop may not */
		pause8[r] = best_of(pause_chain, 8, 200, ovh[r]);
		pause4k[r] = best_of(pause_chain, 4096, 5, ovh[r]);
		cpuid[r] = best_of(cpuid_one, 1, 200, ovh[r]);
		{
			uint64_t bp = ~0ull, bq = ~0ull;
			for (int s = 0; s < 3; s++) {
				uint64_t a = branch_loop(0x80), b = branch_loop(0x01);
				bp = a < bp ? a : bp;
				bq = b < bq ? b : bq;
			}
			br_pred[r] = (double)bp / BRANCH_N;
			br_rand[r] = (double)bq / BRANCH_N;
		}
		{
			/* a page within the L1d: copied, then cleared, REP_L1_REPEATS times a window */
			uint64_t a = ~0ull, b = ~0ull, c = ~0ull, d = ~0ull;
			for (int s = 0; s < 20; s++) {
				uint64_t t0 = rep_tsc();
				for (int k = 0; k < REP_L1_REPEATS; k++)
					rep_movsq(rep_dst, rep_src, PAGE);
				uint64_t t1 = rep_tsc();
				for (int k = 0; k < REP_L1_REPEATS; k++)
					rep_stosq(rep_dst, PAGE);
				uint64_t t2 = rep_tsc();
				a = t1 - t0 < a ? t1 - t0 : a;
				b = t2 - t1 < b ? t2 - t1 : b;
			}
			for (int s = 0; s < 8; s++) {
				/* flushed lines come from memory (clflush evicts every level) */
				flush(rep_src, 64 << 10);
				rep_stosq(rep_dst, 64 << 10);
				uint64_t t0 = rep_tsc();
				rep_movsq(rep_dst, rep_src, 64 << 10);
				uint64_t x = rep_tsc() - t0;
				c = x < c ? x : c;
				flush(rep_src, 64 << 10);
				t0 = rep_tsc();
				rep_stosq(rep_src, 64 << 10);
				uint64_t y = rep_tsc() - t0;
				d = y < d ? y : d;
			}
			rep_series(rep_l2, rep_l2 + (size_t)REP_L2_PAGES * PAGE, REP_L2_PAGES, rep_l2,
				   REP_L2_PAGES, 8, &movs_l2[r], &stos_l2[r]);
			rep_series(rep_llc + (size_t)llc_half * PAGE, rep_llc, llc_half, rep_llc,
				   2 * llc_half, 4, &movs_llc[r], &stos_llc[r]);
			movs_l1[r] = (double)a / REP_L1_REPEATS;
			stos_l1[r] = (double)b / REP_L1_REPEATS;
			movs_mem[r] = (double)(c - ovh[r]);
			stos_mem[r] = (double)(d - ovh[r]);
		}
		c2c[r] = ncpu >= 2 ? c2c_roundtrip(1, C2C_BATCH, quick ? 5 : 20) : -1;
		for (int i = 0; i < NWIDTH; i++)
			width[i][r] = width_sample(width_fn[i], 1 << 12, 5);
		taken[r] = taken_sample(taken_loop_32, TAKEN_N, 1 << 16, 5);
		tloops[r] = calloc(NTAKEN_LOOPS, sizeof(double));
		for (int i = 0; i < NTAKEN_LOOPS; i++)
			tloops[r][i] = taken_sample(taken_loop_fn[i], taken_loop_k[i], 1 << 15, 5);
		btbt[r] = calloc(NBTB, sizeof(double));
		for (int i = 0; i < NBTB && !btb_error; i++)
			btbt[r][i] = btb_sample(btb.fn[i], btb_k[i], 5);
		for (int i = 0; i < NLAT; i++)
			lat[i][r] = best_of(lat_fn[i], 1 << 14, 5, ovh[r]);
		for (int k = 0; k < WONG_KINDS; k++) {
			wt[k][r] = calloc((size_t)wong[k].n + 1, sizeof(double));
			for (int i = 0; i < wong[k].n; i++)
				wt[k][r][i] = wong_sample(wong[k].code.fn[i], 3);
		}
		mlp[r] = calloc(MLP_NK, sizeof(double));
		for (int i = 0; i < MLP_NK; i++)
			mlp[r][i] = mlp_sample(mlp_k[i], 3);
		pf_s[r] = pf_sample(&pf_seq_p, 3);
		pf_r[r] = pf_sample(&pf_rnd_p, 3);
	}

	printf("{\n\"schema\": \"baremm-calibrate-raw/6\",\n");
	print_cpuid();
	printf("\"cpus_online\": %ld,\n\"rounds\": %d,\n\"quick\": %s,\n", ncpu, rounds, quick ? "true" : "false");
	jarr("tsc_ghz", tsc_ghz, rounds, true);
	jarr("core_per_tsc", cpt, rounds, true);
	jints("tsc_overhead_ticks", ovh, rounds, true);
	printf("\"hugetlb_2m\": %s,\n", hugetlb ? "true" : "false");
	printf("\"thp_fraction\": {\"mem\": %.3f, \"chase_2m\": %.3f, \"chase_4k\": %.3f, "
	       "\"tlb_2m\": %.3f, \"tlb_4k\": %.3f},\n",
	       mem_thp, ws2m_thp, ws4k_thp, tlb2m_thp, tlb4k_thp);
	printf("\"chase\": {\"ws_kib\": [");
	for (int w = 0; w < nws; w++)
		printf("%s%u", w ? ", " : "", ws_kib[w]);
	printf("],\n");
	jmat("ticks_2m", c2m, rounds, nws, true);
	jmat("ticks_4k", c4k, rounds, nws, true);
	jmat("lap_ticks_2m", l2m, rounds, nws, true);
	jmat("lap_ticks_4k", l4k, rounds, nws, false);
	printf("},\n\"tlb\": {\"pages\": [");
	for (int t = 0; t < ntlb; t++)
		printf("%s%u", t ? ", " : "", tlb_pages[t]);
	printf("],\n");
	jmat("ticks_2m", t2m, rounds, ntlb, true);
	jmat("ticks_4k", t4k, rounds, ntlb, false);
	printf("},\n\"page_probe\": {\"lines\": %d, ", probe_ok ? PROBE_N : 0);
	jarr("stride_2m", probe2m, rounds, true);
	jarr("stride_4k", probe4k, rounds, false);
	printf("},\n\"mem\": {\"ws_mib\": %u, ", mem_mib);
	jarr("ticks", memlat, rounds, false);
	printf("},\n");
	jarr("lock_xadd", xadd, rounds, true);
	jarr("xchg", xchg, rounds, true);
	jarr("mfence", mfence, rounds, true);
	jarr("lfence", lfence, rounds, true);
	jarr("pause_burst8", pause8, rounds, true);
	jarr("pause_loop4096", pause4k, rounds, true);
	jarr("cpuid_leaf0", cpuid, rounds, true);
	printf("\"branch\": {\"n\": %u, ", BRANCH_N);
	jarr("predictable", br_pred, rounds, true);
	jarr("random", br_rand, rounds, false);
	printf("},\n\"rep\": {");
	printf("\"form\": \"q\", ");
	jarr("movs_4k_l1", movs_l1, rounds, true);
	jarr("stos_4k_l1", stos_l1, rounds, true);
	jarr("movs_64k_from_mem", movs_mem, rounds, true);
	jarr("stos_64k_to_mem", stos_mem, rounds, true);
	printf("\"timing\": \"window\", \"l1_repeats\": %d, \"l2_pages\": %d, ", REP_L1_REPEATS, REP_L2_PAGES);
	jarr("movs_4k_l2", movs_l2, rounds, true);
	jarr("stos_4k_l2", stos_l2, rounds, true);
	printf("\"llc_pages\": %d, \"l2_kib_cpuid\": %u, ", llc_half, l2_kib);
	jarr("movs_4k_llc", movs_llc, rounds, true);
	jarr("stos_4k_llc", stos_llc, rounds, false);
	printf("},\n\"c2c\": {\"cpus\": [0, 1], \"batch\": %d, ", C2C_BATCH);
	jarr("roundtrip", c2c, rounds, false);
	printf("},\n\"core\": {\"width\": {\"ops_per_iter\": %d, \"slots_per_iter\": %d, ",
	       WIDTH_OPS, WIDTH_SLOTS);
	for (int i = 0; i < NWIDTH; i++)
		jarr(width_name[i], width[i], rounds, i + 1 < NWIDTH);
	printf("},\n\"taken\": {\"branches_per_iter\": %d, ", TAKEN_N + 1);
	jarr("ticks", taken, rounds, false);
	printf("},\n\"taken_loops\": {\"branches_per_iter\": [");
	for (int i = 0; i < NTAKEN_LOOPS; i++)
		printf("%s%d", i ? ", " : "", taken_loop_k[i] + 1);
	printf("], ");
	jmat("ticks", tloops, rounds, NTAKEN_LOOPS, false);
	printf("},\n\"btb\": {\"spacing\": %d, ", BTB_SPACING);
	if (btb_error)
		printf("\"error\": \"%s\", ", btb_error);
	printf("\"branches_per_lap\": [");
	for (int i = 0; i < NBTB; i++)
		printf("%s%u", i ? ", " : "", btb_k[i] + 1);
	printf("], ");
	jmat("ticks", btbt, rounds, NBTB, false);
	printf("},\n\"lat\": {");
	for (int i = 0; i < NLAT; i++)
		jarr(lat_name[i], lat[i], rounds, i + 1 < NLAT);
	printf("},\n\"wong\": {\"iters\": %d,\n", WONG_ITERS);
	for (int k = 0; k < WONG_KINDS; k++) {
		printf("\"%s\": {\"filler\": \"%s\", ", wong_name[k], wong_filler[k]);
		if (wong[k].error)
			printf("\"error\": \"%s\", ", wong[k].error);
		printf("\"fillers\": [");
		for (int i = 0; i < wong[k].n; i++)
			printf("%s%u", i ? ", " : "", wong[k].fillers[i]);
		printf("],\n");
		jmat("ticks", wt[k], rounds, wong[k].n, false);
		printf("}%s\n", k + 1 < WONG_KINDS ? "," : "");
	}
	printf("},\n\"mlp\": {\"loads\": %d, \"k\": [", MLP_LOADS);
	for (int i = 0; i < MLP_NK; i++)
		printf("%s%u", i ? ", " : "", mlp_k[i]);
	printf("],\n");
	jmat("ticks", mlp, rounds, MLP_NK, false);
	printf("},\n\"prefetch\": {\"lines\": %d, \"arena_mib\": %zu, ", PF_LINES, pf_bytes >> 20);
	jarr("sequential", pf_s, rounds, true);
	jarr("random", pf_r, rounds, false);
	printf("}},\n\"elapsed_s\": %.2f\n}\n", (double)(native_ns() - start_ns) / 1e9);
	return 0;
}
