/*
 * memblock: the boot-time view of physical memory, before the page allocator exists.
 * `memory` holds usable RAM ranges (sorted, merged, page-aligned, validated by the boot
 * code); `reserved` holds ranges in use (kernel image, boot data, early allocations,
 * the struct page array). memblock_alloc() carves early allocations out of memory minus
 * reserved. Single-threaded: used only by the boot CPU before the APs start.
 */
#ifndef BAREMM_MEMBLOCK_H
#define BAREMM_MEMBLOCK_H

#include "kernel/types.h"

#define MEMBLOCK_MAX 128

struct memblock_region {
	phys_addr_t base;
	u64 size;
};

struct memblock_type {
	int cnt;
	struct memblock_region r[MEMBLOCK_MAX];
};

struct memblock {
	struct memblock_type memory;
	struct memblock_type reserved;
	phys_addr_t alloc_limit;	/* early allocations stay below this address */
};

extern struct memblock memblock;

void memblock_reset(void);
/* Add a range (merged with neighbours/overlaps). Returns -1 when the table is full. */
int memblock_add(phys_addr_t base, u64 size);
int memblock_reserve(phys_addr_t base, u64 size);
/* Remove a range from memory (e.g. a range firmware reported twice with other types). */
int memblock_remove(phys_addr_t base, u64 size);
/* Allocate size bytes aligned to align from memory not reserved, below alloc_limit,
 * highest address first; returns 0 when nothing fits. The range is reserved. */
phys_addr_t memblock_alloc(u64 size, u64 align);
bool memblock_is_reserved(phys_addr_t addr);
bool memblock_is_memory(phys_addr_t addr);
u64 memblock_total(const struct memblock_type *t);
phys_addr_t memblock_end_of_ram(void);

#endif
