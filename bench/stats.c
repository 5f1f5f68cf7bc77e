#include "bench/stats.h"
#include "kernel/math.h"

void stats_compute(const u64 *v, unsigned n, u64 *tmp, struct stats *out)
{
	out->n = n;
	if (!n) {
		out->median = out->mean = out->stddev = out->min = out->max = out->pstddev = 0;
		return;
	}
	for (unsigned i = 0; i < n; i++)
		tmp[i] = v[i];
	out->median = median_u64(tmp, n);	/* sorts tmp */
	out->min = tmp[0];
	out->max = tmp[n - 1];
	u64 sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += v[i];
	out->mean = sum / n;
	/* sample standard deviation; scale values down so squares cannot overflow */
	u64 scale = 1;
	while (out->max / scale > (1ULL << 31))
		scale *= 2;
	u64 m = out->mean / scale, acc = 0;
	for (unsigned i = 0; i < n; i++) {
		u64 x = v[i] / scale;
		u64 d = x > m ? x - m : m - x;
		acc += d * d;
	}
	out->stddev = n > 1 ? isqrt64(acc / (n - 1)) * scale : 0;
	out->pstddev = out->mean ? out->stddev * 10000 / out->mean : 0;
}
