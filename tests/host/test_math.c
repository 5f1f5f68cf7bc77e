/* Host tests of kernel/math.h: integer square root, sort, median. */
#include "htest.h"
#include "kernel/math.h"

HTEST(isqrt64_is_the_floor_of_the_root)
{
	HT_EXPECT_EQ(isqrt64(0), 0);
	HT_EXPECT_EQ(isqrt64(1), 1);
	HT_EXPECT_EQ(isqrt64(3), 1);
	HT_EXPECT_EQ(isqrt64(4), 2);
	HT_EXPECT_EQ(isqrt64(16ULL * 1048576), 4096);	/* min_free_kbytes of a 1 GiB machine */
	HT_EXPECT_EQ(isqrt64(~0ULL), 0xffffffffULL);
	for (u64 r = 1; r < 100000; r += 7) {
		HT_EXPECT_EQ(isqrt64(r * r), r);
		HT_EXPECT_EQ(isqrt64(r * r - 1), r - 1);
		HT_EXPECT_EQ(isqrt64(r * r + 2 * r), r);
	}
}

HTEST(median_sorts_and_takes_the_middle)
{
	u64 odd[] = { 9, 1, 5, 7, 3 };
	HT_EXPECT_EQ(median_u64(odd, 5), 5);
	for (unsigned i = 0; i < 5; i++)
		HT_EXPECT_EQ(odd[i], 2 * i + 1);
	u64 even[] = { 10, 40, 20, 30 };
	HT_EXPECT_EQ(median_u64(even, 4), 25);
	u64 one[] = { 42 };
	HT_EXPECT_EQ(median_u64(one, 1), 42);
	HT_EXPECT_EQ(median_u64(NULL, 0), 0);
}

int main(void)
{
	return htest_main("math");
}
