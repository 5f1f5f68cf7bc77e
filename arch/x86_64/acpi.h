/*
 * ACPI table discovery: RSDP (from the boot loader's copy, else the BIOS areas), RSDT or
 * XSDT, and the MADT's processor entries (types 0 and 9). Checksums are verified; a
 * table that fails is reported and ignored. Tables are read through the direct map.
 */
#ifndef BAREMM_ACPI_H
#define BAREMM_ACPI_H

#include "kernel/types.h"

#define MAX_MADT_CPUS 1024

struct madt_info {
	u32 apic_ids[MAX_MADT_CPUS];
	unsigned nr_cpus;	/* enabled (or online-capable) processors, BSP included */
	unsigned nr_listed;	/* every processor entry, disabled ones too */
	u64 lapic_addr;
};

/* @rsdp: the RSDP copy from multiboot2 (or NULL). Returns 0 or -1 with *err. */
int acpi_init(const u8 *rsdp, int rsdp_len, const char **err);
int acpi_parse_madt(struct madt_info *out, const char **err);
/* Find a table by signature (first match); NULL if absent. */
const void *acpi_find_table(const char sig[4]);
extern int acpi_revision;

#endif
