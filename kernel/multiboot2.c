#include "kernel/multiboot2.h"
#include "kernel/string.h"

#define TAG_END 0
#define TAG_CMDLINE 1
#define TAG_LOADER 2
#define TAG_MMAP 6
#define TAG_FRAMEBUFFER 8
#define TAG_EFI64 12
#define EFI_PAGE_SHIFT 12	/* UEFI memory descriptors count 4 KiB pages, whatever the kernel's */
#define TAG_ACPI_OLD 14
#define TAG_ACPI_NEW 15
#define TAG_EFI_MMAP 17

#define PHYS_LIMIT (1ULL << 52)

void boot_info_warn(struct boot_info *bi, const char *w)
{
	if (bi->nr_warnings < MB2_MAX_WARNINGS)
		bi->warnings[bi->nr_warnings++] = w;
}


static u32 rank(u32 type)
{
	/* higher rank wins an overlap: usable RAM is the weakest claim */
	switch (type) {
	case MEM_USABLE: return 0;
	case MEM_ACPI_RECLAIM: return 1;
	case MEM_ACPI_NVS: return 2;
	case MEM_RESERVED: return 3;
	default: return 4;
	}
}

int mem_ranges_normalize(struct mem_range *r, int n, int max, struct boot_info *bi)
{
	/* 1. drop empty, wrapping and out-of-range entries; clip the ones crossing 2^52 */
	int k = 0;
	for (int i = 0; i < n; i++) {
		u64 b = r[i].base, s = r[i].size;
		if (s == 0) {
			boot_info_warn(bi, "memory map: zero-length entry dropped");
			continue;
		}
		if (b + s < b || b >= PHYS_LIMIT) {
			boot_info_warn(bi, "memory map: entry beyond the physical address limit dropped");
			continue;
		}
		if (b + s > PHYS_LIMIT) {
			boot_info_warn(bi, "memory map: entry clipped at the physical address limit");
			s = PHYS_LIMIT - b;
		}
		if (r[i].type < MEM_USABLE || r[i].type > MEM_BAD)
			r[i].type = MEM_RESERVED;
		r[k].base = b;
		r[k].size = s;
		r[k].type = r[i].type;
		k++;
	}
	n = k;

	/* 2. cut points: every boundary; for each elementary interval take the strongest
	 * type among the entries covering it. O(n^2) on at most MB2_MAX_RANGES entries. */
	u64 pts[2 * MB2_MAX_RANGES];
	int np = 0;
	for (int i = 0; i < n; i++) {
		pts[np++] = r[i].base;
		pts[np++] = r[i].base + r[i].size;
	}
	for (int i = 1; i < np; i++)	/* insertion sort */
		for (int j = i; j > 0 && pts[j - 1] > pts[j]; j--) {
			u64 t = pts[j];
			pts[j] = pts[j - 1];
			pts[j - 1] = t;
		}
	bool overlap_warned = false;
	struct mem_range out[MB2_MAX_RANGES];
	int no = 0;
	for (int p = 0; p + 1 < np; p++) {
		u64 lo = pts[p], hi = pts[p + 1];
		if (lo == hi)
			continue;
		int best = -1, covering = 0;
		for (int i = 0; i < n; i++) {
			if (r[i].base <= lo && r[i].base + r[i].size >= hi) {
				covering++;
				if (best < 0 || rank(r[i].type) > rank(r[best].type))
					best = i;
			}
		}
		if (best < 0)
			continue;
		if (covering > 1 && !overlap_warned) {
			boot_info_warn(bi, "memory map: overlapping entries (the more restrictive type wins)");
			overlap_warned = true;
		}
		u32 t = r[best].type;
		if (no && out[no - 1].type == t && out[no - 1].base + out[no - 1].size == lo) {
			out[no - 1].size += hi - lo;
		} else if (no < max) {
			out[no].base = lo;
			out[no].size = hi - lo;
			out[no].type = t;
			no++;
		} else {
			boot_info_warn(bi, "memory map: too many entries, the rest ignored");
			break;
		}
	}
	memcpy(r, out, sizeof(out[0]) * (size_t)no);
	return no;
}

static u32 efi_type(u32 t)
{
	switch (t) {
	case 1: case 2: case 3: case 4: case 7:	/* loader/boot-services code+data, conventional */
		return MEM_USABLE;
	case 9: return MEM_ACPI_RECLAIM;
	case 10: return MEM_ACPI_NVS;
	case 8: return MEM_BAD;
	default: return MEM_RESERVED;
	}
}

int mb2_parse(const void *mbi, size_t avail, struct boot_info *bi, const char **err)
{
	const u8 *p = mbi;
	memset(bi, 0, sizeof(*bi));
	if (avail < 16) {
		*err = "multiboot2 info smaller than its header";
		return -1;
	}
	u32 total = mb_rd32(p);
	if (total < 16 || total > avail) {
		*err = "multiboot2 info total_size is absurd (or larger than the copy)";
		return -1;
	}
	struct mem_range efi_ranges[MB2_MAX_RANGES];
	int nefi = 0;
	bool have_mmap = false, end_seen = false;
	u32 off = 8;
	/* Bounds are checked as "x <= limit - offset", never "offset + x <= limit": a
	 * firmware size near 2^32 must not wrap the sum past the check. */
	while (8 <= total - off) {
		u32 type = mb_rd32(p + off), size = mb_rd32(p + off + 4);
		if (size < 8 || size > total - off) {
			boot_info_warn(bi, "multiboot2: truncated tag, parsing stopped");
			break;
		}
		const u8 *t = p + off;
		switch (type) {
		case TAG_END:
			end_seen = true;
			break;
		case TAG_CMDLINE:
		case TAG_LOADER: {
			char *dst = type == TAG_CMDLINE ? bi->cmdline : bi->loader;
			size_t cap = type == TAG_CMDLINE ? sizeof(bi->cmdline) : sizeof(bi->loader);
			size_t n = 0;
			while (8 + n < size && t[8 + n] && n + 1 < cap) {
				dst[n] = (char)t[8 + n];
				n++;
			}
			dst[n] = 0;
			if (type == TAG_CMDLINE) {
				bi->have_cmdline = true;
				if (8 + n < size && t[8 + n] && n + 1 == cap) {
					boot_info_warn(bi, "multiboot2: command line too long, truncated");
					bi->cmdline_cut = true;
				}
			}
			break;
		}
		case TAG_MMAP: {
			if (size < 16)
				break;
			u32 esz = mb_rd32(t + 8);
			if (esz < 24) {
				boot_info_warn(bi, "multiboot2: memory map entry size too small, map ignored");
				break;
			}
			have_mmap = true;
			for (u32 e = 16; e <= size && esz <= size - e; e += esz) {
				if (bi->nr_ranges == MB2_MAX_RANGES) {
					boot_info_warn(bi, "multiboot2: memory map has too many entries, rest ignored");
					break;
				}
				struct mem_range *r = &bi->ranges[bi->nr_ranges++];
				r->base = mb_rd64(t + e);
				r->size = mb_rd64(t + e + 8);
				r->type = mb_rd32(t + e + 16);
			}
			break;
		}
		case TAG_EFI_MMAP: {
			bi->efi = true;
			if (size < 16)
				break;
			u32 dsz = mb_rd32(t + 8);
			if (dsz < 40)
				break;
			for (u32 e = 16; e <= size && dsz <= size - e && nefi < MB2_MAX_RANGES; e += dsz) {
				u64 pages = mb_rd64(t + e + 24);
				if (pages > (PHYS_LIMIT >> EFI_PAGE_SHIFT)) {	/* the shift would wrap */
					boot_info_warn(bi, "multiboot2: EFI map entry with an absurd page count dropped");
					continue;
				}
				efi_ranges[nefi].type = efi_type(mb_rd32(t + e));
				efi_ranges[nefi].base = mb_rd64(t + e + 8);
				efi_ranges[nefi].size = pages << EFI_PAGE_SHIFT;
				nefi++;
			}
			break;
		}
		case TAG_EFI64:
			bi->efi = true;
			break;
		case TAG_ACPI_OLD:
		case TAG_ACPI_NEW: {
			int len = (int)size - 8;
			int want = type == TAG_ACPI_NEW ? 36 : 20;
			if (len < want) {
				boot_info_warn(bi, "multiboot2: ACPI RSDP tag too short, ignored");
				break;
			}
			/* prefer the v2 RSDP when both are given */
			if (type == TAG_ACPI_NEW || bi->rsdp_len == 0) {
				memcpy(bi->rsdp, t + 8, (size_t)want);
				bi->rsdp_len = want;
			}
			break;
		}
		case TAG_FRAMEBUFFER:
			if (size >= 31) {
				bi->fb.addr = mb_rd64(t + 8);
				bi->fb.pitch = mb_rd32(t + 16);
				bi->fb.width = mb_rd32(t + 20);
				bi->fb.height = mb_rd32(t + 24);
				bi->fb.bpp = t[28];
				bi->fb.type = t[29];
				bi->fb.present = true;
			}
			break;
		default:
			break;
		}
		if (end_seen)
			break;
		off += (size + 7) & ~7u;
	}
	if (!end_seen)
		boot_info_warn(bi, "multiboot2: no end tag");
	if (!have_mmap && nefi) {
		memcpy(bi->ranges, efi_ranges, sizeof(efi_ranges[0]) * (size_t)nefi);
		bi->nr_ranges = nefi;
		bi->mmap_from_efi = true;
	}
	if (bi->nr_ranges == 0) {
		*err = "multiboot2: no memory map";
		return -1;
	}
	bi->nr_ranges = mem_ranges_normalize(bi->ranges, bi->nr_ranges, MB2_MAX_RANGES, bi);
	return 0;
}
