/*
 * The kernel half of every address space, built once at boot by the boot CPU:
 *   DIRECT_MAP_BASE + pa   all of 0..4 GiB and all RAM above it, 2 MiB pages, RW, NX
 *                          (and MMIO given to direct_map_add_mmio, e.g. a framebuffer);
 *                          the alias of the kernel's text and rodata is read-only
 *                          (4 KiB pages there), so no writable alias of code exists
 *   KERNEL_VIRT_BASE + pa  the kernel image with 4 KiB pages: text RX, rodata R+NX,
 *                          data/bss RW+NX
 *   STACK_AREA_BASE        per-CPU kernel and IST stacks, each with an unmapped guard
 *                          page below it, so an overflow faults instead of corrupting
 * Kernel mappings are global (CR4.PGE) when the CPU supports it. PML4 entries 256..511
 * never change after boot, so every mm copies them.
 */
#ifndef BAREMM_DIRECT_MAP_H
#define BAREMM_DIRECT_MAP_H

#include "kernel/types.h"

#define STACK_AREA_BASE 0xffffc90000000000UL
#define STACK_SLOT_SIZE (128UL * 1024)
#define KSTACK_SIZE (32UL * 1024)
#define ISTACK_SIZE (8UL * 1024)

extern u64 *kernel_pml4;	/* kernel-virtual pointer to the kernel PML4 */
extern phys_addr_t kernel_pml4_pa;

#define DIRECT_MAP_MAX_PHYS (1ULL << 46)	/* 64 TiB of direct map below STACK_AREA_BASE */

/* Before direct_map_init: have it also map [base, base+size) (MMIO such as a framebuffer
 * above 4 GiB; below 4 GiB everything is mapped anyway). 0, or -1 when too late/full. */
int direct_map_add_mmio(phys_addr_t base, u64 size);
/* A pointer to physical [pa, pa+size) usable now: the boot identity map before the switch
 * (NULL above 4 GiB), the direct map after it (the range must be RAM, < 4 GiB or added). */
void *direct_map_va(phys_addr_t pa, u64 size);
/* Build the tables (page-table pages and stacks come from memblock) and load them. */
void direct_map_init(void);
/* Map stacks for @cpu; returns the kernel stack top and fills the IST tops. */
u64 map_cpu_stacks(unsigned cpu, u64 ist_tops[3]);
/* Guard page address below @cpu's kernel stack (tests). */
u64 cpu_stack_guard(unsigned cpu);

#endif
