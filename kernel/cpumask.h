/*
 * Fixed-size CPU bitmaps (NR_CPUS bits). Plain ops are not atomic; the atomic ones are
 * for masks that several CPUs update concurrently (an mm's cpumask).
 */
#ifndef BAREMM_CPUMASK_H
#define BAREMM_CPUMASK_H

#include "kernel/atomic.h"

#define NR_CPUS 256
#define CPUMASK_WORDS (NR_CPUS / 64)

typedef struct {
	u64 bits[CPUMASK_WORDS];
} cpumask_t;

static inline void cpumask_clear(cpumask_t *m)
{
	for (int i = 0; i < CPUMASK_WORDS; i++)
		m->bits[i] = 0;
}
static inline void cpumask_set_cpu(unsigned cpu, cpumask_t *m) { m->bits[cpu / 64] |= 1ULL << (cpu % 64); }
/* @m = CPUs 0..n-1 (the CPUs a benchmark or test takes part with). */
static inline void cpumask_first_n(cpumask_t *m, unsigned n)
{
	cpumask_clear(m);
	for (unsigned c = 0; c < n && c < NR_CPUS; c++)
		cpumask_set_cpu(c, m);
}
static inline void cpumask_clear_cpu(unsigned cpu, cpumask_t *m) { m->bits[cpu / 64] &= ~(1ULL << (cpu % 64)); }
static inline bool cpumask_test_cpu(unsigned cpu, const cpumask_t *m)
{
	return (__atomic_load_n(&m->bits[cpu / 64], __ATOMIC_RELAXED) >> (cpu % 64)) & 1;
}
static inline void cpumask_set_cpu_atomic(unsigned cpu, cpumask_t *m)
{
	__atomic_fetch_or(&m->bits[cpu / 64], 1ULL << (cpu % 64), __ATOMIC_SEQ_CST);
}
static inline void cpumask_clear_cpu_atomic(unsigned cpu, cpumask_t *m)
{
	__atomic_fetch_and(&m->bits[cpu / 64], ~(1ULL << (cpu % 64)), __ATOMIC_SEQ_CST);
}
/* Bit count without libgcc (kernel code is built without POPCNT). */
static inline unsigned popcount64(u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (unsigned)((x * 0x0101010101010101ULL) >> 56);
}
static inline unsigned cpumask_weight(const cpumask_t *m)
{
	unsigned n = 0;
	for (int i = 0; i < CPUMASK_WORDS; i++)
		n += popcount64(__atomic_load_n(&m->bits[i], __ATOMIC_RELAXED));
	return n;
}
static inline bool cpumask_empty(const cpumask_t *m) { return cpumask_weight(m) == 0; }
/* Next set CPU at or after @cpu, or NR_CPUS. */
static inline unsigned cpumask_next(unsigned cpu, const cpumask_t *m)
{
	while (cpu < NR_CPUS) {
		u64 w = __atomic_load_n(&m->bits[cpu / 64], __ATOMIC_RELAXED) >> (cpu % 64);
		if (w)
			return cpu + (unsigned)__builtin_ctzll(w);
		cpu = (cpu / 64 + 1) * 64;
	}
	return NR_CPUS;
}
#define for_each_cpu(cpu, mask) \
	for ((cpu) = cpumask_next(0, (mask)); (cpu) < NR_CPUS; (cpu) = cpumask_next((cpu) + 1, (mask)))

#endif
