/* Host tests of multiboot2 parsing and memory-map validation, on hand-built info blocks. */
#include "htest.h"
#include "kernel/multiboot2.h"

struct builder {
	unsigned char buf[8192];
	unsigned len;
};

static void start(struct builder *b)
{
	memset(b, 0, sizeof(*b));
	b->len = 8;
}

static void *tag(struct builder *b, unsigned type, unsigned size)
{
	void *t = b->buf + b->len;
	memcpy(b->buf + b->len, &type, 4);
	memcpy(b->buf + b->len + 4, &size, 4);
	b->len += (size + 7) & ~7u;
	return t;
}

static void finish(struct builder *b)
{
	tag(b, 0, 8);
	memcpy(b->buf, &b->len, 4);
}

static void mmap_tag(struct builder *b, const struct mem_range *r, int n)
{
	unsigned size = 16 + 24 * (unsigned)n;
	unsigned char *t = tag(b, 6, size);
	unsigned esz = 24, ver = 0;
	memcpy(t + 8, &esz, 4);
	memcpy(t + 12, &ver, 4);
	for (int i = 0; i < n; i++) {
		memcpy(t + 16 + 24 * i, &r[i].base, 8);
		memcpy(t + 24 + 24 * i, &r[i].size, 8);
		memcpy(t + 32 + 24 * i, &r[i].type, 4);
	}
}

static struct boot_info bi;
static const char *err;

HTEST(typical_bios_map_and_cmdline)
{
	struct builder b;
	start(&b);
	const char *cl = "tests=* timeout=5";
	char *t = tag(&b, 1, 8 + (unsigned)strlen(cl) + 1);
	memcpy(t + 8, cl, strlen(cl) + 1);
	struct mem_range r[] = {
		{ 0, 0x9fc00, 1 }, { 0x9fc00, 0x400, 2 }, { 0xf0000, 0x10000, 2 },
		{ 0x100000, 0x7ee0000, 1 }, { 0x7fe0000, 0x20000, 2 }, { 0xfffc0000, 0x40000, 2 },
		{ 0x100000000ULL, 0x80000000ULL, 1 },
	};
	mmap_tag(&b, r, 7);
	finish(&b);
	HT_ASSERT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) == 0);
	HT_EXPECT(bi.have_cmdline);
	HT_EXPECT(!strcmp(bi.cmdline, cl));
	HT_EXPECT_EQ(bi.nr_ranges, 7);
	u64 usable = 0;
	for (int i = 0; i < bi.nr_ranges; i++)
		if (bi.ranges[i].type == MEM_USABLE)
			usable += bi.ranges[i].size;
	HT_EXPECT_EQ(usable, 0x9fc00 + 0x7ee0000 + 0x80000000ULL);	/* RAM above 4 GiB kept */
	HT_EXPECT_EQ(bi.nr_warnings, 0);
}

static void cmdline_of_len(struct builder *b, unsigned n)
{
	start(b);
	char *t = tag(b, 1, 8 + n + 1);
	memset(t + 8, 'a', n);
	t[8 + n] = 0;
	struct mem_range r[] = { { 0x100000, 0x7ee0000, 1 } };
	mmap_tag(b, r, 1);
	finish(b);
}

/* A line that does not fit is flagged (the kernel refuses it) rather than silently cut */
HTEST(long_cmdline_is_flagged_cut)
{
	static struct builder b;
	cmdline_of_len(&b, MB2_CMDLINE_MAX - 1);
	HT_ASSERT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) == 0);
	HT_EXPECT(!bi.cmdline_cut);
	HT_EXPECT_EQ(strlen(bi.cmdline), MB2_CMDLINE_MAX - 1);
	cmdline_of_len(&b, MB2_CMDLINE_MAX);
	HT_ASSERT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) == 0);
	HT_EXPECT(bi.cmdline_cut);
}

HTEST(overlap_reserved_wins_and_unsorted_input)
{
	struct builder b;
	start(&b);
	struct mem_range r[] = {
		{ 0x200000, 0x1000000, 1 },	/* 2..18 MiB usable */
		{ 0x100000, 0x100000, 1 },	/* 1..2 MiB usable (out of order, adjacent) */
		{ 0x800000, 0x100000, 2 },	/* 8..9 MiB reserved inside the usable range */
	};
	mmap_tag(&b, r, 3);
	finish(&b);
	HT_ASSERT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) == 0);
	HT_ASSERT(bi.nr_ranges == 3);
	HT_EXPECT_EQ(bi.ranges[0].base, 0x100000);
	HT_EXPECT_EQ(bi.ranges[0].size, 0x700000);	/* merged 1..8 MiB */
	HT_EXPECT_EQ(bi.ranges[1].type, MEM_RESERVED);
	HT_EXPECT_EQ(bi.ranges[2].base, 0x900000);
	HT_EXPECT_EQ(bi.ranges[2].base + bi.ranges[2].size, 0x1200000);
	HT_EXPECT(bi.nr_warnings >= 1);
}

HTEST(absurd_entries_dropped_or_clipped)
{
	struct builder b;
	start(&b);
	struct mem_range r[] = {
		{ 0x100000, 0, 1 },				/* zero length */
		{ 0xfffffffffffff000ULL, 0x2000, 1 },		/* wraps */
		{ 0x000ffffffff00000ULL, 0x200000, 1 },		/* crosses 2^52 */
		{ 0x100000, 0x100000, 77 },			/* unknown type -> reserved */
		{ 0x1000000, 0x1000000, 1 },
	};
	mmap_tag(&b, r, 5);
	finish(&b);
	HT_ASSERT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) == 0);
	HT_EXPECT_EQ(bi.nr_ranges, 3);
	HT_EXPECT_EQ(bi.ranges[0].type, MEM_RESERVED);
	HT_EXPECT_EQ(bi.ranges[2].base + bi.ranges[2].size, 1ULL << 52);
	HT_EXPECT(bi.nr_warnings >= 3);
}

HTEST(efi_map_used_when_no_legacy_map_and_rsdp_v2_preferred)
{
	struct builder b;
	start(&b);
	unsigned char *t = tag(&b, 17, 16 + 48 * 2);
	unsigned dsz = 48;
	memcpy(t + 8, &dsz, 4);
	u32 ty = 7;	/* conventional */
	u64 base = 0x100000, pages = 0x800;
	memcpy(t + 16, &ty, 4);
	memcpy(t + 24, &base, 8);
	memcpy(t + 40, &pages, 8);
	ty = 0;		/* reserved */
	base = 0x900000;
	pages = 0x10;
	memcpy(t + 64, &ty, 4);
	memcpy(t + 72, &base, 8);
	memcpy(t + 88, &pages, 8);
	unsigned char *a1 = tag(&b, 14, 8 + 20);
	memcpy(a1 + 8, "RSD PTR v1", 10);
	unsigned char *a2 = tag(&b, 15, 8 + 36);
	memcpy(a2 + 8, "RSD PTR v2", 10);
	finish(&b);
	HT_ASSERT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) == 0);
	HT_EXPECT(bi.mmap_from_efi);
	HT_EXPECT(bi.efi);
	HT_EXPECT_EQ(bi.nr_ranges, 2);
	HT_EXPECT_EQ(bi.ranges[0].size, 0x800000);
	HT_EXPECT_EQ(bi.rsdp_len, 36);
	HT_EXPECT(!memcmp(bi.rsdp, "RSD PTR v2", 10));
}

HTEST(truncated_and_missing)
{
	struct builder b;
	start(&b);
	finish(&b);
	HT_EXPECT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) != 0);	/* no memory map */
	HT_EXPECT(strstr(err, "memory map") != NULL);
	HT_EXPECT(mb2_parse(b.buf, 4, &bi, &err) != 0);
	/* a tag whose size runs past the total */
	start(&b);
	struct mem_range r[] = { { 0x100000, 0x1000000, 1 } };
	mmap_tag(&b, r, 1);
	unsigned bad = 4000;
	memcpy(b.buf + b.len + 4, &bad, 4);
	b.len += 8;
	memcpy(b.buf, &b.len, 4);
	HT_ASSERT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) == 0);
	HT_EXPECT(bi.nr_warnings >= 1);
	HT_EXPECT_EQ(bi.nr_ranges, 1);
	unsigned huge = 1u << 30;
	memcpy(b.buf, &huge, 4);
	HT_EXPECT(mb2_parse(b.buf, sizeof(b.buf), &bi, &err) != 0);
}

HTEST(randomized_normalize_matches_model)
{
	/* model: per-4KiB-page strongest type over a small 1 MiB window */
	unsigned seed = 12345;
	for (int iter = 0; iter < 2000; iter++) {
		struct mem_range r[24];	/* room for the 2n-1 pieces overlaps can produce */
		int n = 1 + (int)(seed % 12);
		unsigned char model[256] = { 0 };	/* 0 = none, else rank+1 */
		for (int i = 0; i < n; i++) {
			seed = seed * 1103515245 + 12345;
			u64 b = (seed >> 8) % 256;
			seed = seed * 1103515245 + 12345;
			u64 len = 1 + (seed >> 8) % 64;
			if (b + len > 256)
				len = 256 - b;
			seed = seed * 1103515245 + 12345;
			u32 ty = 1 + (seed >> 8) % 4;
			r[i].base = b << 12;
			r[i].size = len << 12;
			r[i].type = ty;
			unsigned rank = ty == 1 ? 1 : ty == 3 ? 2 : ty == 4 ? 3 : 4;
			for (u64 p = b; p < b + len; p++)
				if (model[p] < rank)
					model[p] = (unsigned char)rank;
		}
		struct boot_info scratch;
		memset(&scratch, 0, sizeof(scratch));
		int m = mem_ranges_normalize(r, n, 24, &scratch);
		unsigned char got[256] = { 0 };
		for (int i = 0; i < m; i++) {
			if (i)
				HT_ASSERT(r[i - 1].base + r[i - 1].size <= r[i].base);
			unsigned rank = r[i].type == 1 ? 1 : r[i].type == 3 ? 2 : r[i].type == 4 ? 3 : 4;
			for (u64 p = r[i].base >> PAGE_SHIFT; p < (r[i].base + r[i].size) >> PAGE_SHIFT; p++)
				got[p] = (unsigned char)rank;
		}
		HT_ASSERT(memcmp(got, model, sizeof(model)) == 0);
	}
}

/* Parse from a heap copy of exactly the block's size, so ASan sees any read past it. */
static int parse_exact(const struct builder *b)
{
	unsigned char *copy = malloc(b->len);
	memcpy(copy, b->buf, b->len);
	int r = mb2_parse(copy, b->len, &bi, &err);
	free(copy);
	return r;
}

HTEST(sizes_near_2_32_do_not_wrap_the_bounds_checks)
{
	/* a tag whose size wraps off + size to a small number */
	struct builder b;
	start(&b);
	struct mem_range r[] = { { 0x100000, 0x1000000, 1 } };
	mmap_tag(&b, r, 1);
	unsigned char *t = b.buf + b.len;
	unsigned type = 6, size = 0xfffffff8u;
	memcpy(t, &type, 4);
	memcpy(t + 4, &size, 4);
	b.len += 8;
	memcpy(b.buf, &b.len, 4);
	HT_ASSERT(parse_exact(&b) == 0);	/* ASan: no read past the block */
	HT_EXPECT_EQ(bi.nr_ranges, 1);
	HT_EXPECT(bi.nr_warnings >= 1);
	/* an mmap tag whose entry size wraps e + esz */
	start(&b);
	unsigned char *m = tag(&b, 6, 24);
	unsigned esz = 0xfffffff8u;
	memcpy(m + 8, &esz, 4);
	mmap_tag(&b, r, 1);
	finish(&b);
	HT_ASSERT(parse_exact(&b) == 0);
	HT_EXPECT_EQ(bi.nr_ranges, 1);
	/* an EFI entry whose page count would wrap when shifted */
	start(&b);
	unsigned char *e = tag(&b, 17, 16 + 48 * 2);
	unsigned dsz = 48;
	memcpy(e + 8, &dsz, 4);
	u32 ty = 7;
	u64 base = 0x100000, pages = 0x800, huge = 1ULL << 60;
	memcpy(e + 16, &ty, 4);
	memcpy(e + 24, &base, 8);
	memcpy(e + 40, &huge, 8);
	memcpy(e + 64, &ty, 4);
	memcpy(e + 72, &base, 8);
	memcpy(e + 88, &pages, 8);
	finish(&b);
	HT_ASSERT(parse_exact(&b) == 0);
	HT_EXPECT_EQ(bi.nr_ranges, 1);
	HT_EXPECT_EQ(bi.ranges[0].size, 0x800000);
}

int main(void)
{
	return htest_main("multiboot2");
}
