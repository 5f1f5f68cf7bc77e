#include "mm/direct_map.h"
#include "mm/memblock.h"
#include "mm/physmem.h"
#include "mm/pgtable.h"
#include "kernel/string.h"
#include "kernel/panic.h"
#include "kernel/printk.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/tlb.h"

#define P (1ULL << 0)
#define RW (1ULL << 1)
#define PS (1ULL << 7)
#define G (1ULL << 8)
#define PWT (1ULL << 3)
#define PCD (1ULL << 4)
#define NX (1ULL << 63)
#define ADDR_MASK 0x000ffffffffff000ULL

u64 *kernel_pml4;
phys_addr_t kernel_pml4_pa;
static bool tables_live;	/* after the switch, tables are reached through the direct map */
static u64 global_bit;

extern char __text_start[], __text_end[], __rodata_start[], __rodata_end[];
extern char __data_start[], __kernel_end[];

static void *table_va(phys_addr_t pa)
{
	/* before the switch the boot tables identity-map 0..4 GiB */
	return tables_live ? __va(pa) : (void *)pa;
}

static phys_addr_t alloc_table(void)
{
	phys_addr_t pa = memblock_alloc(PAGE_SIZE, PAGE_SIZE);
	if (!pa)
		panic("direct map: out of early memory for page tables");
	memset(table_va(pa), 0, PAGE_SIZE);
	return pa;
}

static u64 *next_level(u64 *table, unsigned idx)
{
	if (!(table[idx] & P))
		table[idx] = alloc_table() | P | RW;
	BUG_ON(table[idx] & PS);
	return table_va(table[idx] & ADDR_MASK);
}

static void map_4k(u64 va, phys_addr_t pa, u64 flags)
{
	u64 *pdpt = next_level(kernel_pml4, pt_index(va, 4));
	u64 *pd = next_level(pdpt, pt_index(va, 3));
	u64 *pt = next_level(pd, pt_index(va, 2));
	pt[pt_index(va, 1)] = pa | flags | P | global_bit;
}

static void map_2m(u64 va, phys_addr_t pa, u64 flags)
{
	u64 *pdpt = next_level(kernel_pml4, pt_index(va, 4));
	u64 *pd = next_level(pdpt, pt_index(va, 3));
	pd[pt_index(va, 2)] = pa | flags | P | PS | global_bit;
}

/* MMIO the direct map must also cover (a framebuffer above 4 GiB), mapped by
 * direct_map_init with the RAM. */
static struct { phys_addr_t base, end; } mmio[4];
static int nr_mmio;

int direct_map_add_mmio(phys_addr_t base, u64 size)
{
	if (tables_live || nr_mmio == (int)ARRAY_SIZE(mmio) || !size || base + size < base ||
	    base + size > DIRECT_MAP_MAX_PHYS)
		return -1;
	mmio[nr_mmio].base = base;
	mmio[nr_mmio].end = base + size;
	nr_mmio++;
	return 0;
}

void *direct_map_va(phys_addr_t pa, u64 size)
{
	if (tables_live)
		return __va(pa);
	return pa + size <= (1ULL << 32) ? (void *)pa : NULL;	/* boot identity map */
}

/*
 * The direct map's alias of the kernel image's text and rodata is read-only, as the
 * kernel mapping is: otherwise a stray write through __va() patches code (a write through
 * the alias did not fault). The 2 MiB pages covering [pa_start, pa_end) are split into
 * 4 KiB pages with the same attributes, and RW is taken off the pages in the range.
 */
static void protect_direct_alias(phys_addr_t pa_start, phys_addr_t pa_end)
{
	for (phys_addr_t big = ALIGN_DOWN(pa_start, 1ULL << 21); big < pa_end; big += 1ULL << 21) {
		u64 va = DIRECT_MAP_BASE + big;
		u64 *pdpt = next_level(kernel_pml4, (va >> 39) & 511);
		u64 *pd = next_level(pdpt, (va >> 30) & 511);
		u64 *pde = &pd[(va >> 21) & 511];
		BUG_ON(!(*pde & P) || !(*pde & PS) || (*pde & (1ULL << 12)));	/* PAT bit unused */
		u64 flags = *pde & (NX | 0xfffULL) & ~PS;
		phys_addr_t pt_pa = alloc_table();
		u64 *pt = table_va(pt_pa);
		for (unsigned i = 0; i < 512; i++) {
			phys_addr_t pa = big + ((u64)i << 12);
			pt[i] = pa | flags;
			if (pa >= pa_start && pa < pa_end)
				pt[i] &= ~RW;
		}
		*pde = pt_pa | P | RW;
	}
}

static void map_kernel_range(char *start, char *end, u64 flags)
{
	for (u64 va = (u64)start; va < (u64)end; va += PAGE_SIZE)
		map_4k(va, va - KERNEL_VIRT_BASE, flags);
}

static bool range_has_ram(phys_addr_t base, u64 size)
{
	for (int i = 0; i < memblock.memory.cnt; i++) {
		const struct memblock_region *r = &memblock.memory.r[i];
		if (r->base < base + size && base < r->base + r->size)
			return true;
	}
	return false;
}

void direct_map_init(void)
{
	if (boot_cpu.pge) {
		write_cr4(read_cr4() | CR4_PGE);
		global_bit = G;
	}
	/* Early allocations must be reachable through the boot identity map (< 4 GiB). */
	memblock.alloc_limit = 1ULL << 32;
	kernel_pml4_pa = alloc_table();
	kernel_pml4 = table_va(kernel_pml4_pa);
	/* Pre-create every kernel-half PDPT so PML4 entries 256..511 never change again and
	 * can be copied into each address space once. */
	for (unsigned i = 256; i < 512; i++)
		next_level(kernel_pml4, i);

	u64 nx = boot_cpu.nx ? NX : 0;
	phys_addr_t top = ALIGN_UP(MAX(memblock_end_of_ram(), 1ULL << 32), 1ULL << 21);
	/* 0..4 GiB holds the MMIO holes (local APIC, framebuffer, firmware): a 2 MiB page
	 * with no usable RAM in it is mapped uncached (PCD|PWT, PAT entry 3), as device
	 * memory must be on a real machine; pages with RAM stay write-back. */
	for (phys_addr_t pa = 0; pa < (1ULL << 32); pa += 1ULL << 21)
		map_2m(DIRECT_MAP_BASE + pa, pa, RW | nx | (range_has_ram(pa, 1ULL << 21) ? 0 : PCD | PWT));
	for (int i = 0; i < memblock.memory.cnt; i++) {
		phys_addr_t b = ALIGN_DOWN(memblock.memory.r[i].base, 1ULL << 21);
		phys_addr_t e = ALIGN_UP(memblock.memory.r[i].base + memblock.memory.r[i].size, 1ULL << 21);
		for (phys_addr_t pa = MAX(b, 1ULL << 32); pa < e && pa < top; pa += 1ULL << 21)
			map_2m(DIRECT_MAP_BASE + pa, pa, RW | nx);
	}

	for (int i = 0; i < nr_mmio; i++)	/* the part above 4 GiB; RW, NX, uncached */
		for (phys_addr_t pa = MAX(ALIGN_DOWN(mmio[i].base, 1ULL << 21), 1ULL << 32);
		     pa < ALIGN_UP(mmio[i].end, 1ULL << 21); pa += 1ULL << 21)
			map_2m(DIRECT_MAP_BASE + pa, pa,
			       RW | nx | (range_has_ram(pa, 1ULL << 21) ? 0 : PCD | PWT));

	protect_direct_alias((u64)__text_start - KERNEL_VIRT_BASE, (u64)__rodata_end - KERNEL_VIRT_BASE);
	map_kernel_range(__text_start, __text_end, 0);
	map_kernel_range(__rodata_start, __rodata_end, nx);
	map_kernel_range(__data_start, __kernel_end, RW | nx);

	write_cr3(kernel_pml4_pa);
	tables_live = true;
	/* All RAM is in the direct map now: early allocations (mem_map, stacks) may come
	 * from anywhere, above 4 GiB included. */
	memblock.alloc_limit = ~0ULL;
	kernel_pml4 = __va(kernel_pml4_pa);
}

u64 map_cpu_stacks(unsigned cpu, u64 ist_tops[3])
{
	/* slot: [guard][kernel stack][guard][DF][guard][NMI][guard][MC] */
	u64 va = STACK_AREA_BASE + cpu * STACK_SLOT_SIZE;
	u64 nx = boot_cpu.nx ? NX : 0;
	u64 sizes[4] = { KSTACK_SIZE, ISTACK_SIZE, ISTACK_SIZE, ISTACK_SIZE };
	u64 tops[4];
	for (int s = 0; s < 4; s++) {
		va += PAGE_SIZE;	/* guard page: left unmapped */
		phys_addr_t pa = memblock_alloc(sizes[s], PAGE_SIZE);
		if (!pa)
			panic("no memory for CPU %u stacks", cpu);
		for (u64 off = 0; off < sizes[s]; off += PAGE_SIZE)
			map_4k(va + off, pa + off, RW | nx);
		va += sizes[s];
		tops[s] = va;
	}
	ist_tops[0] = tops[1];
	ist_tops[1] = tops[2];
	ist_tops[2] = tops[3];
	return tops[0];
}

u64 cpu_stack_guard(unsigned cpu)
{
	return STACK_AREA_BASE + cpu * STACK_SLOT_SIZE;
}
