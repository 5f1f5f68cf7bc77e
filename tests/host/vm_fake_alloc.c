/* Host fakes for the VM tests: see vm_fake_alloc.h. */
#include <stdlib.h>
#include <string.h>
#include "vm_fake_alloc.h"
#include "mm/tlbflush.h"
#include "mm/mm.h"
#include "kernel/smp.h"
#include "kernel/events.h"
#include "kernel/panic.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define PG_FAKE_FREE PG_buddy

struct page *mem_map;
u64 max_pfn;
u64 *kernel_pml4;
long fake_fail_after = -1;
bool fake_fail_nowarn;
u64 fake_allocs, fake_frees;
struct fake_flush fake_flush_log[FAKE_FLUSH_LOG];
u64 fake_nr_flushes;
void (*fake_flush_hook)(const struct fake_flush *f);

static void *membuf;
static u64 *free_stack;
static u64 nr_free, nr_managed;
static u64 kernel_root[512] __attribute__((aligned(PAGE_SIZE)));

void fake_mem_fini(void)
{
	if (membuf) {
		UNPOISON(membuf, nr_managed * PAGE_SIZE);
		free(membuf);
	}
	free(mem_map);
	free(free_stack);
	membuf = NULL;
	mem_map = NULL;
	free_stack = NULL;
}

void fake_mem_init(u64 npages)
{
	fake_mem_fini();
	membuf = aligned_alloc(PAGE_SIZE, npages * PAGE_SIZE);
	if (!membuf)
		abort();
	host_phys_offset = (u64)(uintptr_t)membuf - FAKE_PHYS_BASE;
	u64 first = FAKE_PHYS_BASE >> PAGE_SHIFT;
	max_pfn = first + npages;
	mem_map = calloc(max_pfn, sizeof(struct page));
	free_stack = calloc(npages, sizeof(u64));
	for (u64 pfn = 0; pfn < first; pfn++)
		mem_map[pfn].flags = PG_reserved;
	nr_free = 0;
	for (u64 pfn = max_pfn; pfn-- > first;) {
		mem_map[pfn].flags = PG_FAKE_FREE;
		free_stack[nr_free++] = pfn;
	}
	nr_managed = npages;
	POISON(membuf, npages * PAGE_SIZE);
	fake_fail_after = -1;
	fake_fail_nowarn = false;
	fake_allocs = fake_frees = 0;
	fake_nr_flushes = 0;
	fake_nr_calls = 0;
	fake_flush_hook = NULL;
	/* a recognisable kernel half */
	for (unsigned i = 256; i < 512; i++)
		kernel_root[i] = 0x8000000000000003ULL | ((u64)i << 12);
	kernel_pml4 = kernel_root;
	memset(event_counts, 0, sizeof(struct event_row) * NR_CPUS);
}

struct page *alloc_pages(gfp_t gfp, unsigned order)
{
	if (order != 0)
		panic("fake alloc: order %u not supported", order);
	if ((fake_fail_nowarn && (gfp & __GFP_NOWARN)) || fake_fail_after == 0 || !nr_free) {
		count_event(EV_PGALLOC_FAIL);
		return NULL;
	}
	if (fake_fail_after > 0)
		fake_fail_after--;
	u64 pfn = free_stack[--nr_free];
	struct page *p = pfn_to_page(pfn);
	if (!(p->flags & PG_FAKE_FREE))
		panic("fake alloc: pfn %#llx on the free stack is not free", (unsigned long long)pfn);
	memset(p, 0, sizeof(*p));
	p->refcount = 1;
	void *va = page_address(p);
	UNPOISON(va, PAGE_SIZE);
	memset(va, (gfp & __GFP_ZERO) ? 0 : 0xcc, PAGE_SIZE);
	fake_allocs++;
	return p;
}

void free_pages(struct page *p, unsigned order)
{
	if (order != 0)
		panic("fake free: order %u", order);
	u64 pfn = page_to_pfn(p);
	if (!pfn_valid(pfn) || (p->flags & (PG_FAKE_FREE | PG_reserved)))
		panic("fake free: bad or double free of pfn %#llx (flags %#x)", (unsigned long long)pfn,
		      p->flags);
	if (p->refcount > 1 || p->refcount < 0 || p->mapcount != 0)
		panic("fake free: pfn %#llx still referenced (ref %d) or mapped (map %d)",
		      (unsigned long long)pfn, p->refcount, p->mapcount);
	if (p->flags & (PG_pgtable | PG_zero | PG_shared))
		panic("fake free: pfn %#llx freed with flags %#x", (unsigned long long)pfn, p->flags);
	p->flags = PG_FAKE_FREE;
	p->refcount = 0;
	memset(page_address(p), 0x6b, PAGE_SIZE);
	POISON(page_address(p), PAGE_SIZE);
	free_stack[nr_free++] = pfn;
	fake_frees++;
}

unsigned alloc_pages_bulk(gfp_t gfp, unsigned nr, struct list_head *list)
{
	unsigned n = 0;
	for (; n < nr; n++) {
		struct page *p = alloc_pages(gfp, 0);
		if (!p)
			break;
		list_add_tail(&p->lru, list);
	}
	return n;
}

void free_pages_bulk(struct list_head *list)
{
	while (!list_empty(list)) {
		struct page *p = list_first_entry(list, struct page, lru);
		list_del(&p->lru);
		free_pages(p, 0);
	}
}

u64 nr_free_pages(void) { return nr_free; }
u64 nr_managed_pages(void) { return nr_managed; }

/* ---- kernel stubs ---- */

void flush_tlb_mm_range_flags(struct mm_struct *mm, u64 start, u64 end, unsigned stride_shift,
			      unsigned flags)
{
	bool freed_tables = flags & TLB_FLUSH_FREED_TABLES;
	struct fake_flush *f = &fake_flush_log[fake_nr_flushes++ % FAKE_FLUSH_LOG];
	f->mm = mm;
	f->start = start;
	f->end = end;
	f->stride_shift = stride_shift;
	f->freed_tables = freed_tables;
	f->flags = flags;
	count_event(EV_TLB_FLUSH_REQ);
	if (mm)
		atomic_add(&mm->tlb_gen, 1);
	if (fake_flush_hook)
		fake_flush_hook(f);
}

void flush_tlb_one_local(u64 addr) { (void)addr; }
void smp_call_queue_drain(void) {}

/* One CPU online: "every other CPU" is nobody; count the requests. */
u64 fake_nr_calls;
void smp_call_function_many(const cpumask_t *mask, smp_call_func_t func, void *info, bool wait)
{
	(void)mask; (void)func; (void)info; (void)wait;
	fake_nr_calls++;
}
void smp_call_function(smp_call_func_t func, void *info, bool wait)
{
	smp_call_function_many(&cpu_online_mask, func, info, wait);
}

void tlb_mm_release(struct mm_struct *mm)
{
	if (current_mm() == mm)
		switch_mm(NULL);
}

static struct mm_struct *host_loaded[NR_CPUS];

struct mm_struct *current_mm(void) { return host_loaded[smp_processor_id()]; }

void switch_mm(struct mm_struct *next)
{
	unsigned cpu = smp_processor_id();
	struct mm_struct *prev = host_loaded[cpu];
	if (prev == next)
		return;
	if (next)
		cpumask_set_cpu_atomic(cpu, &next->cpumask);
	host_loaded[cpu] = next;
	if (prev)
		cpumask_clear_cpu_atomic(cpu, &prev->cpumask);
}
