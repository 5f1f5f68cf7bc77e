/* Host tests of memblock: merging, removal, reservation-aware top-down allocation. */
#include "htest.h"
#include "mm/memblock.h"

HTEST(add_merges_overlaps_and_neighbours)
{
	memblock_reset();
	memblock_add(0x1000, 0x1000);
	memblock_add(0x3000, 0x1000);
	memblock_add(0x2000, 0x1000);	/* bridges both */
	HT_EXPECT_EQ(memblock.memory.cnt, 1);
	HT_EXPECT_EQ(memblock.memory.r[0].base, 0x1000);
	HT_EXPECT_EQ(memblock.memory.r[0].size, 0x3000);
	memblock_add(0x10000, 0x1000);
	memblock_add(0x800, 0x1000);
	HT_EXPECT_EQ(memblock.memory.cnt, 2);
	HT_EXPECT_EQ(memblock.memory.r[0].base, 0x800);
	HT_EXPECT_EQ(memblock_total(&memblock.memory), 0x3800 + 0x1000);
}

HTEST(remove_splits)
{
	memblock_reset();
	memblock_add(0, 0x10000);
	memblock_remove(0x4000, 0x2000);
	HT_EXPECT_EQ(memblock.memory.cnt, 2);
	HT_EXPECT(memblock_is_memory(0x3fff));
	HT_EXPECT(!memblock_is_memory(0x4000));
	HT_EXPECT(memblock_is_memory(0x6000));
	HT_EXPECT_EQ(memblock_end_of_ram(), 0x10000);
}

HTEST(alloc_top_down_skips_reserved_and_respects_limit)
{
	memblock_reset();
	memblock_add(0x100000, 0x100000);	/* 1..2 MiB */
	memblock_add(0x400000, 0x100000);	/* 4..5 MiB */
	memblock_reserve(0x4ff000, 0x1000);
	u64 a = memblock_alloc(0x1000, 0x1000);
	HT_EXPECT_EQ(a, 0x4fe000);
	HT_EXPECT(memblock_is_reserved(a));
	u64 big = memblock_alloc(0x100000, 0x1000);	/* does not fit in 4..5 anymore */
	HT_EXPECT_EQ(big, 0x100000);
	HT_EXPECT_EQ(memblock_alloc(0x200000, 0x1000), 0);
	memblock.alloc_limit = 0x480000;
	u64 c = memblock_alloc(0x1000, 0x10000);
	HT_EXPECT(c < 0x480000 && c >= 0x400000 && (c & 0xffff) == 0);
	HT_EXPECT_EQ(memblock_alloc(0x1000, 3), 0);	/* bad alignment */
}

HTEST(randomized_alloc_never_overlaps)
{
	memblock_reset();
	memblock_add(0x100000, 0x4000000);
	unsigned seed = 7;
	u64 got[200][2];
	int n = 0;
	for (int i = 0; i < 200; i++) {
		seed = seed * 1103515245 + 12345;
		u64 size = ((seed >> 8) % 16 + 1) * 0x1000;
		u64 align = 0x1000ULL << ((seed >> 20) % 4);
		u64 a = memblock_alloc(size, align);
		if (!a)
			continue;
		HT_EXPECT_EQ(a % align, 0);
		for (int j = 0; j < n; j++)
			HT_ASSERT(a + size <= got[j][0] || a >= got[j][0] + got[j][1]);
		got[n][0] = a;
		got[n][1] = size;
		n++;
	}
	HT_EXPECT(n > 150);
}

int main(void)
{
	return htest_main("memblock");
}
