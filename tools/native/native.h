/*
 * Native timing on the host: the primitives of the native panel, tools/native/panel_*.c
 * (docs/COSTMODEL.md, "The native panel").
 *
 * Contract: user space, Linux, x86-64, one thread per call unless stated. The TSC is
 * assumed invariant (constant_tsc + nonstop_tsc); native_check_tsc() says whether the
 * CPU claims so. Times are TSC ticks; native_core_per_tsc() converts them to core
 * cycles by timing a dependent imul chain whose latency is 3 cycles on every x86 core
 * this project has profiles for (Agner Fog, instruction_tables.pdf: IMUL r64,r64 lat 3
 * on Skylake, Ice Lake/Sapphire Rapids and Zen 1-4).
 */
#ifndef BAREMM_TOOLS_NATIVE_H
#define BAREMM_TOOLS_NATIVE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity; define it before any libc header */
#endif
#include <sched.h>
#include <stdint.h>
#include <time.h>

/* rdtsc ordered against earlier loads and stores (lfence before and after). */
static inline uint64_t native_tsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Pin the calling thread to @cpu; 0 on success. */
static inline int native_pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static inline uint64_t native_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* TSC ticks per ns, measured against CLOCK_MONOTONIC_RAW over @ms milliseconds. */
static inline double native_tsc_ghz(unsigned ms)
{
	uint64_t n0 = native_ns(), t0 = native_tsc(), n1, t1;
	do {
		n1 = native_ns();
	} while (n1 - n0 < (uint64_t)ms * 1000000ull);
	t1 = native_tsc();
	return (double)(t1 - t0) / (double)(n1 - n0);
}

/* @n dependent imul (3 cycles each); returns the TSC ticks it took. */
static inline uint64_t native_imul_chain(uint64_t n)
{
	uint64_t x = 3, k = 1;
	uint64_t t0 = native_tsc();
	for (uint64_t i = 0; i < n; i += 8)
		__asm__ __volatile__("imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
				     "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0"
				     : "+r"(x) : "r"(k));
	uint64_t t = native_tsc() - t0;
	__asm__ __volatile__("" ::"r"(x));
	return t;
}

#define NATIVE_IMUL_LAT 3

/*
 * Core cycles per TSC tick: the minimum over @rounds timings of a 3-cycle imul chain
 * (a minimum, because a neighbour or an interrupt only ever makes a round slower).
 */
static inline double native_core_per_tsc(int rounds)
{
	const uint64_t n = 1u << 20;
	uint64_t best = ~0ull;
	native_imul_chain(n); /* warm-up: frequency ramp, page faults of the code */
	for (int r = 0; r < rounds; r++) {
		uint64_t t = native_imul_chain(n);
		if (t < best)
			best = t;
	}
	return (double)(n * NATIVE_IMUL_LAT) / (double)best;
}

#endif
