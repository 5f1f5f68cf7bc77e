/*
 * Page-table workloads of the native panel: baremm's copy and zap walkers (mm/pgtable.c)
 * and mmu_gather (mm/mmu_gather.c) over a table tree in user memory, with the simple
 * page allocator of tests/host/vm_fake_alloc.c under them (its pages come from a stack,
 * so the rows time the walkers and the gather, not the buddy). A separate binary from
 * the allocator rows because that fake allocator replaces mm/page_alloc.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include "panel.h"
#include "vm_fake_alloc.h"
#include "mm/pgtable.h"
#include "mm/mmu_gather.h"
#include "mm/rmap.h"

#define VM_BASE (1ull << 30)	/* 1 GiB aligned */
#define VM_LEN (1ull << 30)
#define VM_PAGES (1u << 16)	/* fake memory: tables of two trees + the gather's pages */

static struct mm_struct *const PANEL_MM = (struct mm_struct *)0;
static struct pgtable src;

/* Seed 002's shape: one special leaf per 2 MiB over 1 GiB, so every 2 MiB holds a page
 * table of its own (512 last-level tables under one upper table). */
static int sparse_setup(struct panel_wl *w)
{
	(void)w;
	static int done;
	if (done)
		return 0;
	fake_mem_init(VM_PAGES);
	if (pt_init(&src, kernel_pml4))
		return -1;
	for (u64 va = VM_BASE; va < VM_BASE + VM_LEN; va += PMD_SIZE)
		if (pt_map_range(&src, va, 0x100000, PAGE_SIZE, _PAGE_RW, 0))
			return -1;
	done = 1;
	return 0;
}

static void tree_drop(struct pgtable *pt)
{
	struct mmu_gather tlb;
	tlb_gather_mmu_fullmm(&tlb, PANEL_MM);
	pt_unmap_range(pt, VM_BASE, VM_BASE + VM_LEN, &tlb, NULL);
	tlb_finish_mmu(&tlb);
	pt_destroy(pt);
}

static int tree_copy(struct pgtable *dst)
{
	struct pt_zap_stats st = { 0 };
	if (pt_init(dst, kernel_pml4))
		return -1;
	return pt_copy_range(dst, &src, VM_BASE, VM_BASE + VM_LEN, &st);
}

/* fork's copy of the sparse tree (dup_mm's walk); op = one table page built. */
static uint64_t copy_run(struct panel_wl *w, uint64_t *ops)
{
	(void)w;
	struct pgtable dst;
	struct pt_zap_stats st = { 0 };
	if (pt_init(&dst, kernel_pml4))
		exit(3);
	uint64_t t0 = panel_tstart();
	int r = pt_copy_range(&dst, &src, VM_BASE, VM_BASE + VM_LEN, &st);
	uint64_t t = panel_tstop(t0);
	if (r) {
		fprintf(stderr, "panel: pt_copy_range failed\n");
		exit(3);
	}
	*ops = (uint64_t)dst.nr_tables;
	tree_drop(&dst);
	return t;
}

/* exit's zap of the copied tree with a full-mm gather; op = one table page freed. */
static uint64_t zap_run(struct panel_wl *w, uint64_t *ops)
{
	(void)w;
	struct pgtable dst;
	if (tree_copy(&dst))
		exit(3);
	long tables = dst.nr_tables;
	struct mmu_gather tlb;
	uint64_t t0 = panel_tstart();
	tlb_gather_mmu_fullmm(&tlb, PANEL_MM);
	pt_unmap_range(&dst, VM_BASE, VM_BASE + VM_LEN, &tlb, NULL);
	tlb_finish_mmu(&tlb);
	uint64_t t = panel_tstop(t0);
	pt_destroy(&dst);
	*ops = (uint64_t)tables;
	return t;
}

/* munmap of 2 MiB of private pages: the zap hands each page to the gather, which frees
 * them in batches; op = one page. */
static struct pgtable gpt;

static int gather_setup(struct panel_wl *w)
{
	if (sparse_setup(w))
		return -1;
	return pt_init(&gpt, kernel_pml4);
}

static uint64_t gather_run(struct panel_wl *w, uint64_t *ops)
{
	u64 base = 8 * VM_BASE, n = w->param;
	for (u64 i = 0; i < n; i++) {
		struct page *p = alloc_page(0);
		if (!p)
			exit(3);
		page_add_rmap(p);
		pt_set(pt_alloc_slot(&gpt, base + i * PAGE_SIZE),
		       mk_pte(page_to_pfn(p), _PAGE_PRESENT | _PAGE_RW | _PAGE_ACCESSED | _PAGE_DIRTY));
	}
	struct mmu_gather tlb;
	uint64_t t0 = panel_tstart();
	tlb_gather_mmu(&tlb, PANEL_MM);
	pt_unmap_range(&gpt, base, base + n * PAGE_SIZE, &tlb, NULL);
	tlb_finish_mmu(&tlb);
	uint64_t t = panel_tstop(t0);
	*ops = n;
	return t;
}

struct panel_wl panel_vm[] = {
	{ "pt_copy", "mm", "pt_copy_range of a 1 GiB tree with one leaf per 2 MiB (seed 002's fork); op = one table page",
	  1, sparse_setup, copy_run, 0, 0 },
	{ "pt_zap", "mm", "pt_unmap_range + full-mm gather of that tree (exit); op = one table page",
	  1, sparse_setup, zap_run, 0, 0 },
	{ "gather_unmap", "mm", "pt_unmap_range of 512 private pages through mmu_gather (munmap); op = one page",
	  1, gather_setup, gather_run, 512, 0 },
	{ 0 },
};
