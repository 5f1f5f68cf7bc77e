/*
 * mm workloads of the native panel: baremm's own page allocator (mm/page_alloc.c,
 * mm/pcp.c), built for user space as tests/host builds it (BAREMM_HOST: "physical"
 * memory is an anonymous mapping, __va(pa) = pa + host_phys_offset) but with the
 * kernel's code generation flags and no sanitizers. The shapes are the kernel's
 * benchmarks': alloc.bulk10k (seed 003, both pcp_mt values) and alloc.free_bulk_vs_loop
 * (seed 000). The two-CPU zone-lock row is in panel_smp.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "panel.h"
#include "panel_mm.h"
#include "mm/page_alloc_internal.h"
#include "mm/memblock.h"
#include "mm/pcp.h"
#include "kernel/smp.h"
#include "kernel/list.h"

static int zone_ready;

/* One zone of PANEL_RAM from 1 MiB, two CPUs (the smp rows use the second), pcp on,
 * high and batch as the kernel computes them for this zone. */
int panel_zone_init(void)
{
	if (zone_ready)
		return 0;
	const u64 base = 1 << 20, size = PANEL_RAM;
	void *mem = mmap(NULL, base + size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return -1;
	host_phys_offset = (u64)(uintptr_t)mem;
	host_cpu_id = 0;
	nr_cpu_ids = 2;
	cpu_online_mask.bits[0] = 3;
	memblock_reset();
	memblock_add(base, size);
	page_alloc_init();
	page_alloc_init_pcp();
	zone_ready = 1;
	printf("PANEL-INFO zone_pages=%llu pcp_high=%u pcp_batch=%u\n",
	       (unsigned long long)nr_free_pages(), pcp_high(0), pcp_cpu[0].batch);
	return 0;
}

void panel_alloc_n(u64 n, struct list_head *list)
{
	for (u64 i = 0; i < n; i++) {
		struct page *p = alloc_page(GFP_USER);
		if (!p) {
			fprintf(stderr, "panel: alloc_page failed after %llu pages\n", (unsigned long long)i);
			exit(3);
		}
		list_add_tail(&p->lru, list);
	}
}

void panel_free_loop(struct list_head *list)
{
	while (!list_empty(list)) {
		struct page *p = list_first_entry(list, struct page, lru);
		list_del(&p->lru);
		free_page(p);
	}
}

/* ---- alloc.bulk10k: alloc_page x N then free_page x N; op = one batch ---- */

/* One untimed batch first: the pcp list and the buddy lists are in the steady state the
 * kernel benchmark's warm-up rounds leave. */
uint64_t panel_bulk_batch(uint64_t pages, int timed)
{
	struct list_head list;
	INIT_LIST_HEAD(&list);
	uint64_t t0 = timed ? panel_tstart() : 0;
	panel_alloc_n(pages, &list);
	panel_free_loop(&list);
	return timed ? panel_tstop(t0) : 0;
}

static int bulk_setup(struct panel_wl *w)
{
	(void)w;
	return panel_zone_init();
}

static uint64_t bulk_run(struct panel_wl *w, uint64_t *ops)
{
	pcp_mt = (enum pcp_mt)(uintptr_t)w->priv;
	drain_all_pages();
	u64 before = nr_free_pages();
	panel_bulk_batch(w->param, 0);
	uint64_t t = panel_bulk_batch(w->param, 1);
	drain_all_pages();
	if (nr_free_pages() != before) {
		fprintf(stderr, "panel: %s leaked pages\n", w->name);
		exit(3);
	}
	pcp_mt = PCP_MT_LOOKUP;
	*ops = 1;
	return t;
}

/* ---- alloc.free_bulk_vs_loop: free N gathered pages; op = one page ---- */

static uint64_t free_run(struct panel_wl *w, uint64_t *ops)
{
	int bulk = (int)(uintptr_t)w->priv;
	struct list_head list;
	INIT_LIST_HEAD(&list);
	drain_all_pages();
	panel_alloc_n(w->param, &list);	/* untimed, as mmu_gather collected them */
	uint64_t t0 = panel_tstart();
	if (bulk)
		free_pages_bulk(&list);
	else
		panel_free_loop(&list);
	uint64_t t = panel_tstop(t0);
	*ops = w->param;
	return t;
}

struct panel_wl panel_mm[] = {
	{ "alloc_cached", "mm", "alloc.bulk10k: alloc_page x 10000 then free_page x 10000, pcp_mt=cached; op = one batch",
	  1, bulk_setup, bulk_run, 10000, (void *)(uintptr_t)PCP_MT_CACHED },
	{ "alloc_lookup", "mm", "the same batch, pcp_mt=lookup; op = one batch",
	  1, bulk_setup, bulk_run, 10000, (void *)(uintptr_t)PCP_MT_LOOKUP },
	{ "free_loop", "mm", "alloc.free_bulk_vs_loop: free 510 gathered pages, one free_page each; op = one page",
	  1, bulk_setup, free_run, 510, (void *)0 },
	{ "free_bulk", "mm", "the same 510 pages, one free_pages_bulk pass; op = one page",
	  1, bulk_setup, free_run, 510, (void *)1 },
	{ 0 },
};
