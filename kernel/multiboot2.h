/*
 * Multiboot2 boot information, parsed and validated. The parser works on a copy of the
 * info block (GRUB may leave it in low memory we reuse) and never trusts firmware data:
 * truncated tags, zero-length or wrapping ranges, overlapping entries of different types
 * (reserved wins), and RAM above the 52-bit physical limit are reported and dropped or
 * clamped. Pure logic: also compiled for the host unit tests.
 */
#ifndef BAREMM_MULTIBOOT2_H
#define BAREMM_MULTIBOOT2_H

#include "kernel/string.h"
#include "kernel/types.h"

#define MB2_BOOTLOADER_MAGIC 0x36d76289

#define MB2_MAX_RANGES 128
#define MB2_CMDLINE_MAX 1024
#define MB2_MAX_WARNINGS 16

enum mem_type { MEM_USABLE = 1, MEM_RESERVED = 2, MEM_ACPI_RECLAIM = 3, MEM_ACPI_NVS = 4, MEM_BAD = 5 };

struct mem_range {
	u64 base, size;
	u32 type;
};

struct boot_info {
	char cmdline[MB2_CMDLINE_MAX];
	bool have_cmdline;
	bool cmdline_cut;		/* longer than MB2_CMDLINE_MAX - 1: the boot refuses it */
	char loader[64];
	struct mem_range ranges[MB2_MAX_RANGES];	/* sorted, non-overlapping */
	int nr_ranges;
	bool mmap_from_efi;	/* no legacy map: converted from the EFI memory map */
	bool efi;		/* booted through UEFI (EFI system table tag or EFI mmap) */
	u8 rsdp[36];		/* copy of the ACPI RSDP (v1: 20 bytes, v2: 36) */
	int rsdp_len;		/* 0 = none */
	struct {
		u64 addr;
		u32 pitch, width, height;
		u8 bpp, type;	/* type 2 = EGA text */
		bool present;
	} fb;
	const char *warnings[MB2_MAX_WARNINGS];
	int nr_warnings;
};

/* Little-endian fields at any alignment, as boot loaders lay them out (both parsers). */
static inline u32 mb_rd32(const u8 *p)
{
	u32 v;
	memcpy(&v, p, 4);
	return v;
}

static inline u64 mb_rd64(const u8 *p)
{
	u64 v;
	memcpy(&v, p, 8);
	return v;
}

/* Record a finding about the loader's data in @bi (kept until MB2_MAX_WARNINGS). */
void boot_info_warn(struct boot_info *bi, const char *w);

/* Parse the info block at @mbi (total size in its first u32). Returns 0, or -1 with
 * *err set when the block is unusable (no memory map at all, bad sizes). */
int mb2_parse(const void *mbi, size_t avail, struct boot_info *bi, const char **err);

/* Normalise a list of ranges: drop empty/wrapping ones, clip to 2^52, split overlaps so
 * the most restrictive type wins (anything non-usable beats usable), sort, merge equal
 * neighbours. Returns the new count. Exposed for tests. */
int mem_ranges_normalize(struct mem_range *r, int n, int max, struct boot_info *bi);

#endif
