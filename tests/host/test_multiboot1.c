/* Host tests of multiboot (v1) info parsing: info blocks built in a fake physical window,
 * as QEMU's -kernel loader lays them out, and the ways a loader can get them wrong. */
#include "htest.h"
#include "kernel/multiboot1.h"

#define WIN_BASE 0x10000u
#define WIN_SIZE 0x4000u
#define INFO WIN_BASE
#define MMAP (WIN_BASE + 0x100)
#define CMDLINE (WIN_BASE + 0x800)
#define LOADER (WIN_BASE + 0x1800)

static unsigned char win[WIN_SIZE];
static struct boot_info bi;
static const char *err;

/* Only [WIN_BASE, WIN_BASE + WIN_SIZE) is readable; anything else is out of reach. */
static const void *phys(u64 pa, u64 len, void *ctx)
{
	(void)ctx;
	if (pa < WIN_BASE || pa - WIN_BASE > WIN_SIZE || len > WIN_SIZE - (pa - WIN_BASE))
		return NULL;
	return win + (pa - WIN_BASE);
}

static void put32(u32 pa, u32 v)
{
	memcpy(win + (pa - WIN_BASE), &v, 4);
}

static void put64(u32 pa, u64 v)
{
	memcpy(win + (pa - WIN_BASE), &v, 8);
}

static void put_str(u32 pa, const char *s)
{
	memcpy(win + (pa - WIN_BASE), s, strlen(s) + 1);
}

/* An entry of @size (20 = base, length, type; more = a loader's own fields) at @pa. */
static u32 mmap_entry(u32 pa, u32 size, u64 base, u64 len, u32 type)
{
	put32(pa, size);
	put64(pa + 4, base);
	put64(pa + 12, len);
	put32(pa + 20, type);
	return pa + 4 + size;
}

/* QEMU's block: memory counts, command line (image path first), map, loader name. */
static void qemu_like(const char *cmdline)
{
	memset(win, 0, sizeof(win));
	put32(INFO, (1u << 0) | (1u << 2) | (1u << 6) | (1u << 9));
	put32(INFO + 4, 639);
	put32(INFO + 8, 523136);
	put32(INFO + 16, CMDLINE);
	put_str(CMDLINE, cmdline);
	u32 e = mmap_entry(MMAP, 20, 0, 0x9fc00, 1);
	e = mmap_entry(e, 20, 0x9fc00, 0x400, 2);
	e = mmap_entry(e, 20, 0xf0000, 0x10000, 2);
	e = mmap_entry(e, 20, 0x100000, 0x1fee0000, 1);
	e = mmap_entry(e, 20, 0xfffc0000, 0x40000, 2);
	put32(INFO + 44, e - MMAP);
	put32(INFO + 48, MMAP);
	put32(INFO + 64, LOADER);
	put_str(LOADER, "qemu");
}

static u64 usable_bytes(void)
{
	u64 n = 0;
	for (int i = 0; i < bi.nr_ranges; i++)
		if (bi.ranges[i].type == MEM_USABLE)
			n += bi.ranges[i].size;
	return n;
}

HTEST(qemu_block_map_cmdline_without_path_and_loader)
{
	qemu_like("baremm.bin tests=* timeout=5");
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT(bi.have_cmdline);
	HT_EXPECT(!strcmp(bi.cmdline, "tests=* timeout=5"));
	HT_EXPECT(!strcmp(bi.loader, "qemu"));
	HT_EXPECT_EQ(bi.nr_ranges, 5);
	HT_EXPECT_EQ(usable_bytes(), 0x9fc00 + 0x1fee0000ULL);
	HT_EXPECT_EQ(bi.rsdp_len, 0);	/* ACPI finds the RSDP in the BIOS areas */
	HT_EXPECT(!bi.fb.present);
	HT_EXPECT(!bi.efi);
	HT_EXPECT_EQ(bi.nr_warnings, 0);
}

HTEST(path_alone_is_an_empty_line)
{
	qemu_like("baremm.bin");
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT(bi.have_cmdline);
	HT_EXPECT_EQ(strlen(bi.cmdline), 0);
	qemu_like("baremm.bin   help");
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT(!strcmp(bi.cmdline, "help"));
}

/* A line that does not fit is flagged (the kernel refuses it), as under multiboot2 */
HTEST(long_cmdline_is_flagged_cut)
{
	static char line[MB2_CMDLINE_MAX + 16];
	memcpy(line, "img ", 4);
	memset(line + 4, 'a', MB2_CMDLINE_MAX - 1);
	line[4 + MB2_CMDLINE_MAX - 1] = 0;
	qemu_like(line);
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT(!bi.cmdline_cut);
	HT_EXPECT_EQ(strlen(bi.cmdline), MB2_CMDLINE_MAX - 1);
	line[4 + MB2_CMDLINE_MAX - 1] = 'a';
	line[4 + MB2_CMDLINE_MAX] = 0;
	qemu_like(line);
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT(bi.cmdline_cut);
}

HTEST(string_running_out_of_reach_is_cut_with_a_warning)
{
	qemu_like("x");
	memset(win + WIN_SIZE - 8, 'b', 8);	/* no NUL before the window ends */
	put32(INFO + 64, WIN_BASE + WIN_SIZE - 8);
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT(!strcmp(bi.loader, "bbbbbbbb"));
	HT_EXPECT(bi.nr_warnings >= 1);
}

/* Entries larger than 20 bytes (a loader's extra fields) are stepped over by their size */
HTEST(larger_entries_follow_their_size)
{
	qemu_like("img");
	u32 e = mmap_entry(MMAP, 28, 0x100000, 0x100000, 1);
	e = mmap_entry(e, 28, 0x300000, 0x100000, 1);
	put32(INFO + 44, e - MMAP);
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT_EQ(bi.nr_ranges, 2);
	HT_EXPECT_EQ(bi.ranges[1].base, 0x300000);
}

HTEST(truncated_or_short_entries_stop_the_map)
{
	qemu_like("img");
	u32 e = mmap_entry(MMAP, 20, 0x100000, 0x100000, 1);
	mmap_entry(e, 12, 0x300000, 0x100000, 1);	/* too small to hold a range */
	put32(INFO + 44, e + 16 - MMAP);
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT_EQ(bi.nr_ranges, 1);
	HT_EXPECT(bi.nr_warnings >= 1);
	/* an entry whose size runs past the map's length: nothing usable; without the
	 * memory counts that is a refusal */
	qemu_like("img");
	mmap_entry(MMAP, 200, 0x100000, 0x100000, 1);
	put32(INFO + 44, 24);
	put32(INFO, 1u << 6);
	err = NULL;
	HT_EXPECT(mb1_parse(INFO, phys, NULL, &bi, &err) != 0);
	HT_EXPECT(err != NULL);
}

HTEST(unreadable_map_falls_back_to_the_memory_counts)
{
	qemu_like("img");
	put32(INFO + 48, 0x7000000);
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT_EQ(bi.nr_ranges, 2);
	HT_EXPECT_EQ(usable_bytes(), (639ULL << 10) + (523136ULL << 10));
	HT_EXPECT(bi.nr_warnings >= 2);
	/* neither a map nor the counts: refused */
	put32(INFO, 1u << 6);
	err = NULL;
	HT_EXPECT(mb1_parse(INFO, phys, NULL, &bi, &err) != 0);
	HT_EXPECT(err != NULL);
}

HTEST(unreadable_block_is_refused)
{
	err = NULL;
	HT_EXPECT(mb1_parse(0x7000000, phys, NULL, &bi, &err) != 0);
	HT_EXPECT(err != NULL);
}

HTEST(fields_without_their_flag_are_not_read)
{
	qemu_like("img tests=*");
	put32(INFO, 1u << 6);	/* map only */
	HT_ASSERT(mb1_parse(INFO, phys, NULL, &bi, &err) == 0);
	HT_EXPECT(!bi.have_cmdline);
	HT_EXPECT_EQ(strlen(bi.loader), 0);
	HT_EXPECT_EQ(bi.nr_ranges, 5);
}

int main(void)
{
	return htest_main("multiboot1");
}
