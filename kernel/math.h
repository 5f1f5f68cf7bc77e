/*
 * Integer helpers shared by the mm code and the benchmark harness (kernel code has no
 * floating point): integer square root, in-place sort and median of small arrays.
 */
#ifndef BAREMM_MATH_H
#define BAREMM_MATH_H

#include "kernel/types.h"

/* floor(sqrt(x)), bit by bit. */
static inline u64 isqrt64(u64 x)
{
	u64 r = 0, bit = 1ULL << 62;
	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return r;
}

/* Ascending, in place. Insertion sort: the arrays are a few dozen values (runs). */
static inline void sort_u64(u64 *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			u64 t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

/* Median of @n values, sorting @v in place: the middle one, or the mean of the two middle
 * ones for even n (rounded down); 0 for none. */
static inline u64 median_u64(u64 *v, unsigned n)
{
	if (!n)
		return 0;
	sort_u64(v, n);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* xorshift64 (Marsaglia): a fast reproducible sequence for tests and benchmark setup, not
 * for anything that needs good randomness. *state must start nonzero. */
static inline u64 xorshift64(u64 *state)
{
	u64 x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

#endif
