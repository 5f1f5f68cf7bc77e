/*
 * Host test environment for the page allocator: a simulated physical memory map backed
 * by an anonymous mapping (__va(pa) = pa + host_phys_offset), memblock ranges, option
 * resets and a fake multi-CPU world (host_cpu_id); cross-CPU calls are tests/host/host_call.c.
 */
#ifndef TEST_PAGE_ENV_H
#define TEST_PAGE_ENV_H

#include <sys/mman.h>
#include "htest.h"
#include "mm/page_alloc_internal.h"
#include "mm/memblock.h"
#include "kernel/smp.h"

static void *env_mem;
static size_t env_mem_size;

static __unused void env_reset_options(void)
{
	opt_pcp = true;
	opt_pcp_high = 0;
	opt_pcp_batch = 0;
	pcp_mt = PCP_MT_LOOKUP;
	page_debug = false;
	page_debug_nopanic = false;
	page_debug_errors = 0;
	min_free_kbytes = 0;
}

struct env_range {
	u64 base, size;
};

/*
 * Build a machine: RAM ranges @mem, reserved ranges @res (may be NULL), @ncpus CPUs.
 * Calls page_alloc_init and page_alloc_init_pcp. Options are reset unless @keep_opts.
 */
static __unused void env_setup_ranges(const struct env_range *mem, int nmem, const struct env_range *res,
			     int nres, unsigned ncpus, bool keep_opts)
{
	if (!keep_opts)
		env_reset_options();
	memblock_reset();
	u64 end = 0;
	for (int i = 0; i < nmem; i++) {
		memblock_add(mem[i].base, mem[i].size);
		end = MAX(end, mem[i].base + mem[i].size);
	}
	for (int i = 0; i < nres; i++)
		memblock_reserve(res[i].base, res[i].size);
	if (env_mem)
		munmap(env_mem, env_mem_size);
	env_mem_size = end;
	env_mem = mmap(NULL, env_mem_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (env_mem == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	host_phys_offset = (u64)(uintptr_t)env_mem;
	host_cpu_id = 0;
	nr_cpu_ids = ncpus;
	memset(event_counts, 0, sizeof(event_counts));
	page_alloc_init();
	page_alloc_init_pcp();
}

/* The default small machine: @mib MiB of RAM from 1 MiB, kernel reserved at 1..2 MiB. */
static __unused void env_setup(u64 mib, unsigned ncpus)
{
	struct env_range mem[] = { { 0x100000, mib << 20 } };
	struct env_range res[] = { { 0x100000, 0x100000 } };
	env_setup_ranges(mem, 1, res, 1, ncpus, false);
}

static __unused u64 ev(enum event e)
{
	return event_sum(e);
}

static __unused unsigned env_check(void)
{
	struct page_check_result r;
	unsigned e = page_alloc_check_report(&r);
	if (e)
		printf("    # check: %u errors, first: %s at pfn 0x%llx\n", e, r.first_error,
		       (unsigned long long)r.first_bad_pfn);
	return e;
}

/* Allocate order-0 pages of @gfp until failure onto @list (pcp state as configured). */
static __unused u64 env_exhaust(gfp_t gfp, struct list_head *list)
{
	u64 n = 0;
	struct page *p;
	while ((p = alloc_pages(gfp, 0))) {
		list_add_tail(&p->lru, list);
		n++;
	}
	return n;
}

static __unused void env_free_list(struct list_head *list)
{
	while (!list_empty(list)) {
		struct page *p = list_first_entry(list, struct page, lru);
		list_del(&p->lru);
		free_pages(p, 0);
	}
}

#endif
