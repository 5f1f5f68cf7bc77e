#include "arch/x86_64/acpi.h"
#include "kernel/string.h"
#include "kernel/printk.h"
#include "mm/physmem.h"

struct sdt_header {
	char sig[4];
	u32 length;
	u8 revision, checksum;
	char oem[6], oem_table[8];
	u32 oem_rev, creator, creator_rev;
} __packed;

static const struct sdt_header *root;	/* RSDT or XSDT */
static bool root_is_xsdt;
int acpi_revision;

static bool checksum_ok(const void *p, size_t n)
{
	u8 s = 0;
	for (size_t i = 0; i < n; i++)
		s += ((const u8 *)p)[i];
	return s == 0;
}

static const u8 *scan_rsdp(u64 start, u64 len)
{
	for (u64 a = start; a + 20 <= start + len; a += 16) {
		const u8 *p = __va(a);
		if (!memcmp(p, "RSD PTR ", 8) && checksum_ok(p, 20))
			return p;
	}
	return NULL;
}

int acpi_init(const u8 *rsdp, int rsdp_len, const char **err)
{
	if (!rsdp || rsdp_len < 20) {
		u64 ebda = (u64)(*(const u16 *)__va(0x40e)) << 4;
		rsdp = ebda ? scan_rsdp(ebda, 1024) : NULL;
		if (!rsdp)
			rsdp = scan_rsdp(0xe0000, 0x20000);
		rsdp_len = rsdp ? (rsdp[15] >= 2 ? 36 : 20) : 0;
	}
	if (!rsdp) {
		*err = "ACPI: no RSDP (neither from the boot loader nor in the BIOS areas)";
		return -1;
	}
	if (memcmp(rsdp, "RSD PTR ", 8) || !checksum_ok(rsdp, 20)) {
		*err = "ACPI: RSDP signature or checksum bad";
		return -1;
	}
	acpi_revision = rsdp[15];
	u32 rsdt;
	memcpy(&rsdt, rsdp + 16, 4);
	u64 xsdt = 0;
	if (acpi_revision >= 2 && rsdp_len >= 36) {
		if (checksum_ok(rsdp, 36))
			memcpy(&xsdt, rsdp + 24, 8);
		else
			printk("ACPI: RSDP v2 extended checksum bad, using the RSDT\n");
	}
	u64 pa = xsdt ? xsdt : rsdt;
	root = __va(pa);
	root_is_xsdt = xsdt != 0;
	if (memcmp(root->sig, root_is_xsdt ? "XSDT" : "RSDT", 4) || root->length < sizeof(*root) ||
	    root->length > (1u << 20) || !checksum_ok(root, root->length)) {
		root = NULL;
		*err = "ACPI: RSDT/XSDT signature, length or checksum bad";
		return -1;
	}
	return 0;
}

const void *acpi_find_table(const char sig[4])
{
	if (!root)
		return NULL;
	size_t esz = root_is_xsdt ? 8 : 4;
	size_t n = (root->length - sizeof(*root)) / esz;
	const u8 *ents = (const u8 *)(root + 1);
	for (size_t i = 0; i < n; i++) {
		u64 pa = 0;
		memcpy(&pa, ents + i * esz, esz);
		if (!pa)
			continue;
		const struct sdt_header *h = __va(pa);
		if (memcmp(h->sig, sig, 4))
			continue;
		if (h->length < sizeof(*h) || h->length > (1u << 20) || !checksum_ok(h, h->length)) {
			printk("ACPI: table %.4s at %#lx has a bad length or checksum, ignored\n", sig, pa);
			continue;
		}
		return h;
	}
	return NULL;
}

int acpi_parse_madt(struct madt_info *out, const char **err)
{
	const struct sdt_header *madt = acpi_find_table("APIC");
	memset(out, 0, sizeof(*out));
	if (!madt) {
		*err = "ACPI: no MADT (APIC table): cannot enumerate CPUs";
		return -1;
	}
	const u8 *p = (const u8 *)madt;
	u32 lapic;
	memcpy(&lapic, p + sizeof(*madt), 4);
	out->lapic_addr = lapic;
	for (u32 off = sizeof(*madt) + 8; off + 2 <= madt->length;) {
		u8 type = p[off], len = p[off + 1];
		if (len < 2 || off + len > madt->length)
			break;
		u32 id = ~0u, flags = 0;
		if (type == 0 && len >= 8) {		/* processor local APIC */
			id = p[off + 3];
			memcpy(&flags, p + off + 4, 4);
		} else if (type == 9 && len >= 16) {	/* processor local x2APIC */
			memcpy(&id, p + off + 4, 4);
			memcpy(&flags, p + off + 8, 4);
		} else if (type == 5 && len >= 12) {	/* 64-bit local APIC address override */
			memcpy(&out->lapic_addr, p + off + 4, 8);
		}
		if (id != ~0u) {
			out->nr_listed++;
			/* bit 0 enabled, bit 1 online capable; skip duplicates (type 0 and 9 both) */
			bool dup = false;
			for (unsigned i = 0; i < out->nr_cpus; i++)
				dup |= out->apic_ids[i] == id;
			if ((flags & 3) && !dup && out->nr_cpus < MAX_MADT_CPUS)
				out->apic_ids[out->nr_cpus++] = id;
		}
		off += len;
	}
	if (!out->nr_cpus) {
		*err = "ACPI: MADT lists no usable processor";
		return -1;
	}
	return 0;
}
