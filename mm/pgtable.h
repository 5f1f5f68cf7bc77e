/*
 * x86_64 page tables of our own: 4-level walk (room for 5), table pages allocated on
 * demand from the page allocator, map / unmap / protect over ranges, 4 KiB leaves and
 * 2 MiB leaves (raw mappings such as the kernel direct map), accessed/dirty read-back.
 *
 * Levels are numbered from the bottom: 1 = page table (entries map 4 KiB), 2 = page
 * middle directory (entries map 2 MiB or point to a level-1 table), 3 = page upper
 * directory (1 GiB), 4 = the top (PML4; 512 GiB per entry). A 5-level root would be
 * level 5; PT_LEVELS is the only thing that would change.
 *
 * Locking: a struct pgtable is protected by its owner's lock (mm->lock, the page-table
 * lock of the address space). Nothing here takes a lock. Hardware may set A/D bits in
 * leaf entries concurrently (other CPUs running in the address space), so every
 * read-modify-write of a present leaf is atomic (xchg / cmpxchg).
 *
 * Table-page bookkeeping: each table page has PG_pgtable set, page->private = its level,
 * page->pt_used = number of present entries (the top table counts only its user half).
 * A table whose count drops to zero during an unmap is unhooked from its parent and
 * handed to the mmu_gather, which frees it after the TLB flush. pt->nr_tables counts the
 * table pages below the top table (the per-mm "page tables" RSS).
 *
 * Leaf accounting: entries with _PAGE_SPECIAL have no struct page bookkeeping (zero page,
 * reference pages, raw physical mappings); every other 4 KiB leaf holds one reference
 * (refcount) and one map count (rmap-lite) on its page, dropped at unmap through the
 * mmu_gather.
 *
 * User mappings are made without _PAGE_USER: baremm touches user-range addresses from
 * CPL0, and a U=1 page would fault under SMAP (data) or SMEP (fetch).
 */
#ifndef BAREMM_PGTABLE_H
#define BAREMM_PGTABLE_H

#include "mm/page.h"
#include "kernel/options.h"

#define _PAGE_PRESENT (1UL << 0)
#define _PAGE_RW (1UL << 1)
#define _PAGE_USER (1UL << 2)
#define _PAGE_PWT (1UL << 3)
#define _PAGE_PCD (1UL << 4)
#define _PAGE_ACCESSED (1UL << 5)
#define _PAGE_DIRTY (1UL << 6)
#define _PAGE_PSE (1UL << 7)	/* in a level-2/3 entry: a 2 MiB / 1 GiB leaf */
#define _PAGE_GLOBAL (1UL << 8)
#define _PAGE_SPECIAL (1UL << 9)	/* software: no refcount/mapcount behind this leaf */
#define _PAGE_NX (1UL << 63)

#define PTE_ADDR_MASK 0x000ffffffffff000UL
/* What a non-leaf entry carries: permissions are decided at the leaf. */
#define _PAGE_TABLE (_PAGE_PRESENT | _PAGE_RW | _PAGE_ACCESSED | _PAGE_DIRTY)
/* Bits a protection change may touch. */
#define _PAGE_PROT_MASK (_PAGE_RW | _PAGE_NX | _PAGE_PWT | _PAGE_PCD | _PAGE_GLOBAL)

#define PT_LEVELS 4
#define PT_ENTRIES 512
#define PT_LEVEL_SHIFT(l) (PAGE_SHIFT + 9 * ((l) - 1))
#define PT_LEVEL_SIZE(l) (1UL << PT_LEVEL_SHIFT(l))
#define PMD_SHIFT 21
#define PMD_SIZE (1UL << PMD_SHIFT)
#define PUD_SHIFT 30
#define PUD_SIZE (1UL << PUD_SHIFT)
#define PGDIR_SHIFT 39
#define PGDIR_SIZE (1UL << PGDIR_SHIFT)

#define USER_VA_END 0x0000800000000000UL	/* user half: [0, USER_VA_END) */
#define PGD_KERNEL_FIRST 256			/* top entries 256..511: kernel, shared */

static inline unsigned pt_index(u64 addr, int level)
{
	return (unsigned)(addr >> PT_LEVEL_SHIFT(level)) & (PT_ENTRIES - 1);
}
static inline bool pte_present(u64 e) { return e & _PAGE_PRESENT; }
static inline bool pte_write(u64 e) { return e & _PAGE_RW; }
static inline bool pte_young(u64 e) { return e & _PAGE_ACCESSED; }
static inline bool pte_dirty(u64 e) { return e & _PAGE_DIRTY; }
static inline bool pte_special(u64 e) { return e & _PAGE_SPECIAL; }
static inline bool pte_huge(u64 e) { return e & _PAGE_PSE; }
static inline u64 pte_pfn(u64 e) { return (e & PTE_ADDR_MASK) >> PAGE_SHIFT; }
static inline u64 pte_phys(u64 e) { return e & PTE_ADDR_MASK; }
static inline u64 mk_pte(u64 pfn, u64 flags) { return (pfn << PAGE_SHIFT) | flags; }
/* Next boundary of a level-@level entry after @addr, clamped to @end. */
static inline u64 pt_level_end(u64 addr, u64 end, int level)
{
	u64 b = (addr + PT_LEVEL_SIZE(level)) & ~(PT_LEVEL_SIZE(level) - 1);
	return (b - 1 < end - 1) ? b : end;
}
/* The table (kernel-virtual) an entry points to. */
static inline u64 *pt_entry_table(u64 e) { return (u64 *)__va(pte_phys(e)); }

/* _PAGE_NX when EFER.NXE is on (bit 63 is reserved otherwise), else 0: what leaf entries
 * use for "no execute". Set by pgtable_init_nx() (mm_subsys_init). */
extern u64 pte_nx;
void pgtable_init_nx(void);

struct pgtable {
	u64 *pgd;		/* top table, kernel-virtual */
	long nr_tables;		/* table pages below the top (levels 1..PT_LEVELS-1) */
};

/* What an unmap took away, for the owner's RSS counters. */
struct pt_zap_stats {
	long anon;		/* private pages unmapped */
	long shared;		/* shared file-like pages unmapped */
	long special;		/* special leaves cleared (zero page, reference page, raw) */
};

struct mmu_gather;

/* Allocate the top table; copy entries PGD_KERNEL_FIRST..511 from @kernel_top when
 * not NULL. Returns 0, or -1 when no page could be had. */
int pt_init(struct pgtable *pt, const u64 *kernel_top);
/* Free the top table. Every user-half table must already be gone (BUG otherwise). */
void pt_destroy(struct pgtable *pt);

/* Table pages: allocation/free with PG_pgtable, level, counting (EV_PGTABLE_*). */
struct page *pt_table_alloc(int level);
void pt_table_free(struct page *table);
/* The checks and bookkeeping of pt_table_free() without the free (the caller frees the
 * page, e.g. in a bulk pass). */
void pt_table_dtor(struct page *table);

/* The present leaf entry mapping @addr (level-1 PTE or a level-2/3 huge entry) and its
 * level in *level, or NULL when nothing maps @addr. */
u64 *pt_lookup(const struct pgtable *pt, u64 addr, int *level);
/* The level-1 slot for @addr (present or not), or NULL when its table does not exist or
 * a huge leaf covers @addr. */
u64 *pt_lookup_slot(const struct pgtable *pt, u64 addr);
/* Like pt_lookup_slot, allocating missing tables. NULL when out of memory or when a
 * huge leaf covers @addr. */
u64 *pt_alloc_slot(struct pgtable *pt, u64 addr);

/* Install @val in an empty slot / clear a slot, keeping the table's pt_used count.
 * pt_clear returns the old entry (atomically, so A/D bits set by the MMU are kept). */
void pt_set(u64 *slot, u64 val);
u64 pt_clear(u64 *slot);
/* Replace a present leaf by another present leaf (returns the old one). */
u64 pt_replace(u64 *slot, u64 val);
/* Atomically clear @clear and set @set in a present leaf; returns the old entry. */
u64 pt_modify(u64 *slot, u64 clear, u64 set);

/* pt_scan= (variant): how copy and zap scan a last-level table. */
#define PT_SCAN_LIST(X)                                                                     \
	X(PT_SCAN_FULL, "full", "read every slot of the range, as Linux")                   \
	X(PT_SCAN_USED, "used", "stop after the table's present entries (pt_used)")
enum { PT_SCAN_LIST(OPTION_ENUM_CONST) };
DECLARE_OPTION_ENUM(pt_scan);

#define PT_MAP_HUGE 0x1u	/* use 2 MiB leaves where va, pa and length allow */

/* Raw mapping of [va, va+len) to [pa, pa+len) with leaf @flags (_PAGE_PRESENT is added,
 * _PAGE_SPECIAL too: no page bookkeeping). Every page must be unmapped before; returns
 * 0, -1 when out of memory (partially mapped; unmap to undo), -2 when something is
 * already mapped there. */
int pt_map_range(struct pgtable *pt, u64 va, phys_addr_t pa, u64 len, u64 flags, unsigned mflags);

/*
 * Unmap [start, end): clear every leaf, hand each page (non-special 4 KiB leaf) to the
 * gather (dirty shared pages with a delayed rmap), split a partially covered 2 MiB leaf,
 * and unhook + hand to the gather every table that became empty. Adds what was removed
 * to *st when not NULL. Called with the owner's lock held; the gather may flush on the
 * way (batches full) and flushes delayed rmaps at the end of every level-1 table.
 */
void pt_unmap_range(struct pgtable *pt, u64 start, u64 end, struct mmu_gather *tlb,
		    struct pt_zap_stats *st);

/* Clear @clear and set @set in every present leaf of [start, end), recording the range
 * in @tlb (the caller flushes by finishing the gather). Returns the number of leaves
 * changed, or -1 when a 2 MiB leaf had to be split and no page could be had. */
long pt_protect_range(struct pgtable *pt, u64 start, u64 end, u64 clear, u64 set,
		      struct mmu_gather *tlb);

/*
 * fork-style copy of the leaves of [start, end) from @src to @dst: special leaves are
 * copied as they are; shared file-like pages (PG_shared) get one more reference and map
 * count and keep their permissions; every other page is write-protected in both (copy on
 * write) and gets one more reference and map count. The caller flushes @src's TLB.
 * Returns 0, or -1 when out of memory for tables (the copy is partial: tear @dst down).
 * Adds the pages now mapped in @dst to *st.
 */
int pt_copy_range(struct pgtable *dst, struct pgtable *src, u64 start, u64 end,
		  struct pt_zap_stats *st);

/* Test and clear the accessed bit of @addr's leaf (false when not mapped). */
bool pt_test_and_clear_young(struct pgtable *pt, u64 addr);
/* The leaf entry for @addr (0 when not mapped). */
u64 pt_get(const struct pgtable *pt, u64 addr);
/* Count table pages by walking (tests: must equal nr_tables). */
long pt_count_tables(const struct pgtable *pt);

#endif
