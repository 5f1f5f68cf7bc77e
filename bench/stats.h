/*
 * Integer statistics for the harness (kernel code has no floating point). Values are
 * fixed point with two decimals (x100) so sub-cycle per-op costs survive.
 */
#ifndef BAREMM_BENCH_STATS_H
#define BAREMM_BENCH_STATS_H

#include "kernel/types.h"

struct stats {
	unsigned n;
	u64 median, mean, stddev, min, max;	/* x100 */
	u64 pstddev;				/* %stddev x100 */
};

/* Summarise @n values (x100); @tmp has room for n values (sorted copy). */
void stats_compute(const u64 *v, unsigned n, u64 *tmp, struct stats *out);

#endif
