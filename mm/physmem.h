/*
 * Physical <-> kernel-virtual translation through the direct map, which maps all usable
 * RAM at DIRECT_MAP_BASE (2 MiB pages; see mm/direct_map.c). Host builds map "physical"
 * addresses into a test-owned buffer: __va(pa) = pa + host_phys_offset.
 */
#ifndef BAREMM_PHYSMEM_H
#define BAREMM_PHYSMEM_H

#include "kernel/types.h"

#define DIRECT_MAP_BASE 0xffff888000000000UL	/* Linux's page_offset_base, on purpose */
#define KERNEL_VIRT_BASE 0xffffffff80000000UL	/* kernel image: phys + this */

#ifndef BAREMM_HOST
static inline void *__va(phys_addr_t pa) { return (void *)(pa + DIRECT_MAP_BASE); }
static inline phys_addr_t __pa(const void *va)
{
	u64 v = (u64)va;
	return v >= KERNEL_VIRT_BASE ? v - KERNEL_VIRT_BASE : v - DIRECT_MAP_BASE;
}
#else
extern u64 host_phys_offset;
static inline void *__va(phys_addr_t pa) { return (void *)(uintptr_t)(pa + host_phys_offset); }
static inline phys_addr_t __pa(const void *va) { return (u64)(uintptr_t)va - host_phys_offset; }
#endif

#define PFN_DOWN(x) ((x) >> PAGE_SHIFT)
#define PFN_UP(x) (((x) + PAGE_SIZE - 1) >> PAGE_SHIFT)
#define PFN_PHYS(x) ((phys_addr_t)(x) << PAGE_SHIFT)

#endif
