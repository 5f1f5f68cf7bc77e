/*
 * Multiboot (version 1) info parsing (multiboot1.h). Layout from the Multiboot 0.6.96
 * specification: a flags word says which fields are valid; strings and the memory map
 * are physical pointers, 32 bits wide.
 */
#include "kernel/multiboot1.h"
#include "kernel/string.h"

#define MBI_SIZE 88		/* up to and including the VBE fields */
#define MBI_FLAG_MEM (1u << 0)
#define MBI_FLAG_CMDLINE (1u << 2)
#define MBI_FLAG_MMAP (1u << 6)
#define MBI_FLAG_LOADER (1u << 9)
#define MBI_MEM_LOWER 4
#define MBI_MEM_UPPER 8
#define MBI_CMDLINE 16
#define MBI_MMAP_LENGTH 44
#define MBI_MMAP_ADDR 48
#define MBI_LOADER 64
#define MMAP_ENTRY_MIN 20	/* base, length, type after the size word */


/* Copy the NUL-terminated string at @pa into dst[cap]; true when it was cut. */
static bool copy_string(u64 pa, mb1_phys_fn phys, void *ctx, char *dst, size_t cap,
			struct boot_info *bi)
{
	size_t n = 0;
	for (;; n++) {
		const u8 *c = phys(pa + n, 1, ctx);
		if (!c) {
			boot_info_warn(bi, "multiboot: string runs into unreadable memory, cut there");
			break;
		}
		if (!*c)
			break;
		if (n + 1 == cap) {
			dst[n] = 0;
			return true;
		}
		dst[n] = (char)*c;
	}
	dst[n] = 0;
	return false;
}

int mb1_parse(u64 info_pa, mb1_phys_fn phys, void *ctx, struct boot_info *bi, const char **err)
{
	memset(bi, 0, sizeof(*bi));
	const u8 *mbi = phys(info_pa, MBI_SIZE, ctx);
	if (!mbi) {
		*err = "multiboot: info block unreadable";
		return -1;
	}
	u32 flags = mb_rd32(mbi);
	if (flags & MBI_FLAG_LOADER) {
		if (copy_string(mb_rd32(mbi + MBI_LOADER), phys, ctx, bi->loader, sizeof(bi->loader), bi))
			boot_info_warn(bi, "multiboot: boot loader name too long, truncated");
	}
	if (flags & MBI_FLAG_CMDLINE) {
		char line[MB2_CMDLINE_MAX + 256];
		bool cut = copy_string(mb_rd32(mbi + MBI_CMDLINE), phys, ctx, line, sizeof(line), bi);
		/* the first word is the kernel image's path, not an option */
		const char *args = line;
		while (*args && *args != ' ')
			args++;
		while (*args == ' ')
			args++;
		size_t len = strlen(args);
		bi->have_cmdline = true;
		if (cut || len > sizeof(bi->cmdline) - 1) {
			boot_info_warn(bi, "multiboot: command line too long, truncated");
			bi->cmdline_cut = true;
			len = sizeof(bi->cmdline) - 1;
		}
		memcpy(bi->cmdline, args, len);
		bi->cmdline[len] = 0;
	}
	if (flags & MBI_FLAG_MMAP) {
		u32 total = mb_rd32(mbi + MBI_MMAP_LENGTH), base = mb_rd32(mbi + MBI_MMAP_ADDR);
		const u8 *map = total ? phys(base, total, ctx) : NULL;
		if (!map && total)
			boot_info_warn(bi, "multiboot: memory map unreadable, ignored");
		/* each entry: u32 size of what follows, u64 base, u64 length, u32 type */
		for (u32 e = 0; map && e < total && 4 <= total - e;) {
			u32 esz = mb_rd32(map + e);
			if (esz < MMAP_ENTRY_MIN || esz > total - e - 4) {
				boot_info_warn(bi, "multiboot: memory map entry truncated, rest ignored");
				break;
			}
			if (bi->nr_ranges == MB2_MAX_RANGES) {
				boot_info_warn(bi, "multiboot: memory map has too many entries, rest ignored");
				break;
			}
			struct mem_range *r = &bi->ranges[bi->nr_ranges++];
			r->base = mb_rd64(map + e + 4);
			r->size = mb_rd64(map + e + 12);
			r->type = mb_rd32(map + e + 20);
			e += esz + 4;
		}
	}
	if (bi->nr_ranges == 0 && (flags & MBI_FLAG_MEM)) {
		/* no map: the two counts, conventional memory and what follows 1 MiB */
		boot_info_warn(bi, "multiboot: no memory map, using mem_lower/mem_upper");
		bi->ranges[0] = (struct mem_range){ 0, (u64)mb_rd32(mbi + MBI_MEM_LOWER) << 10, MEM_USABLE };
		bi->ranges[1] = (struct mem_range){ 1ULL << 20, (u64)mb_rd32(mbi + MBI_MEM_UPPER) << 10,
						    MEM_USABLE };
		bi->nr_ranges = 2;
	}
	if (bi->nr_ranges == 0) {
		*err = "multiboot: no memory map";
		return -1;
	}
	bi->nr_ranges = mem_ranges_normalize(bi->ranges, bi->nr_ranges, MB2_MAX_RANGES, bi);
	if (bi->nr_ranges == 0) {
		*err = "multiboot: no memory map";
		return -1;
	}
	return 0;
}
