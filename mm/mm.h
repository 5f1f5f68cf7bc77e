/*
 * Address spaces (struct mm_struct): a page-table root whose kernel half (top entries
 * 256..511) is copied from the boot root and never changes, a sorted array of regions
 * ("vmas"), the cpumask of CPUs that have it loaded, a TLB generation, RSS counters and
 * a reference count.
 *
 * Locking (who locks what):
 *   mm->lock      the page-table lock of this address space: its page tables, its regions
 *                 and its RSS counters. Taken with mm_lock(), which serves cross-CPU calls
 *                 while it spins (a holder may be waiting for a TLB-flush acknowledgement
 *                 from the spinner). Held across a whole fault, munmap, teardown or fork
 *                 copy, including the mmu_gather flushes inside them. Never held while
 *                 touching user addresses (a fault would deadlock on it: reported).
 *   mm->cpumask   atomic bit operations by the CPU switching in or out (mm/tlbflush.c).
 *   mm->tlb_gen   atomic increments by flushers (mm/tlbflush.c).
 *   mm->users     atomic.
 *   Lock order: mm->lock of a parent before the child's (dup_mm), then a file object's
 *   lock (mm/filemap.h). The page allocator may be called under any of them.
 *
 * Region kinds:
 *   VM_ANON          private anonymous: a read maps the shared zero page, a write a fresh
 *                    zeroed page (and sets the region's anon_vma); copy on write after
 *                    dup_mm.
 *   VM_FILE_SHARED   shared file-like (obj = struct file_obj *): every mapper maps the
 *                    object's pages; a write makes them dirty (counted, tracked).
 *   VM_FILE_PRIVATE  private file-like: reads map the object's page read-only, a write
 *                    copies it into a private page.
 *   VM_REFPAGE       reference-page-backed anonymous memory (obj = struct refpage *,
 *                    or NULL for the default pattern); how new pages get their
 *                    contents is the `refpage_init` variant (mm/fault.c).
 *
 * Addresses: user regions live in [MM_USER_MIN, USER_VA_END); the kernel touches them
 * directly at CPL0 once switch_mm() has loaded the address space (PTEs without the U bit,
 * see mm/pgtable.h).
 *
 * mm_struct occupies one page from the page allocator (no slab here), which bounds the
 * number of regions (MM_MAX_REGIONS).
 */
#ifndef BAREMM_MM_H
#define BAREMM_MM_H

#include "mm/pgtable.h"
#include "kernel/spinlock.h"
#include "kernel/cpumask.h"
#include "kernel/percpu.h"
#include "kernel/assert.h"

enum vm_kind { VM_ANON, VM_FILE_SHARED, VM_FILE_PRIVATE, VM_REFPAGE, NR_VM_KINDS };

#define VM_READ 0x1u
#define VM_WRITE 0x2u
#define VM_EXEC 0x4u

/* Error returns (negative). */
#define VM_EINVAL 22
#define VM_ENOMEM 12
#define VM_EEXIST 17

#define MM_USER_MIN 0x10000UL		/* nothing is mapped below (NULL dereferences fault) */
#define MM_MMAP_BASE 0x100000000UL	/* vm_mmap(start = 0) places regions from here up */

struct vm_region {
	u64 start, end;		/* [start, end), page aligned */
	u32 prot;		/* VM_READ | VM_WRITE | VM_EXEC */
	u32 kind;		/* enum vm_kind */
	void *obj;		/* struct file_obj * / struct refpage * / NULL */
	u64 pgoff;		/* object page index mapped at start */
	/* Private pages may be mapped here (Linux: vma->anon_vma set). Set by the first
	 * fault that maps a private page (a write, a copy on write, a filled refpage);
	 * never by a read that maps the zero page, a reference page or a file page.
	 * Kept by fork and by splits; dup_mm copies page tables only of regions with it. */
	bool anon_vma;
};

enum { MM_RSS_ANON, MM_RSS_SHARED, MM_RSS_PGTABLES, MM_NR_RSS };

#define MM_MAX_REGIONS 64

struct mm_struct {
	spinlock_t lock;
	volatile s32 lock_cpu;		/* CPU holding lock, -1: none (diagnostics, mm_assert_locked) */
	s32 users;
	u32 id;
	struct pgtable pt;
	/* CPUs that have it loaded; written by switching CPUs, read by flushers */
	cpumask_t cpumask __cacheline_aligned;
	u64 tlb_gen;
	long rss[2] __cacheline_aligned;	/* MM_RSS_ANON, MM_RSS_SHARED (pages) */
	unsigned nr_regions;
	struct vm_region regions[MM_MAX_REGIONS];	/* sorted by start, disjoint */
};

/* The boot root (kernel-virtual), whose entries 256..511 every mm shares (mm/direct_map.h). */
extern u64 *kernel_pml4;
/* The shared zero page (PG_zero; mapped read-only with _PAGE_SPECIAL). */
extern struct page *zero_page;

/* Allocate the zero page and the default reference page (idempotent; mm_alloc calls it). */
void mm_subsys_init(void);

struct mm_struct *mm_alloc(void);
void mm_get(struct mm_struct *mm);
/* Drop a reference; the last one tears the address space down (mm_destroy). */
void mm_put(struct mm_struct *mm);
/* Tear down now: unmap everything through a full-mm gather, free every table page and
 * the root. No other CPU may have it loaded (panics naming them); the calling CPU is
 * switched to the kernel root if it has. */
void mm_destroy(struct mm_struct *mm);
/* fork: a new mm with the same regions; private pages shared copy-on-write, shared pages
 * shared. As Linux's fork, only regions with anon_vma have their page tables copied;
 * the child faults the others in again (zero page, reference page, file pages). NULL when
 * out of memory. */
struct mm_struct *dup_mm(struct mm_struct *parent);

/* Map a region: start = 0 picks a free, 2 MiB aligned address at or above MM_MMAP_BASE.
 * Returns the start address, or -VM_EINVAL / -VM_ENOMEM / -VM_EEXIST (overlap). Takes a
 * reference on @obj. */
long vm_mmap(struct mm_struct *mm, u64 start, u64 len, u32 prot, enum vm_kind kind, void *obj);
/* Unmap [start, start+len): pages and emptied page tables go through an mmu_gather; a
 * region partly covered is trimmed or split. Returns 0 or -VM_EINVAL / -VM_ENOMEM (no
 * region slot for a split; nothing changed). */
int vm_munmap(struct mm_struct *mm, u64 start, u64 len);

/* Region containing @addr, or NULL (mm->lock held). */
struct vm_region *mm_find_region(struct mm_struct *mm, u64 addr);
long mm_rss(const struct mm_struct *mm, int which);

void mm_lock(struct mm_struct *mm);
void mm_unlock(struct mm_struct *mm);

/* Contract (kernel/assert.h, checked in DEBUG_CONTRACTS builds): this CPU holds
 * mm->lock. mm_lock() records the holder in lock_cpu. */
#define mm_assert_locked(mm)                                                                \
	contract_msg(READ_ONCE((mm)->lock_cpu) == (s32)smp_processor_id(), "mm->lock held",  \
		     "mm %u, lock held by CPU %d (-1: nobody)", (mm)->id,                 \
		     (int)READ_ONCE((mm)->lock_cpu))

/* mm/tlbflush.c: load @next on this CPU (NULL: the kernel-only root). */
void switch_mm(struct mm_struct *next);
struct mm_struct *current_mm(void);

/* mm/fault.c: resolve a fault at @addr in @mm (flags: PF_* from mm/fault.h). Returns 0
 * when resolved, or -1 after printing the report (no region / protection violation /
 * out of memory). Takes mm->lock. */
int handle_mm_fault(struct mm_struct *mm, u64 addr, unsigned flags);

#endif
