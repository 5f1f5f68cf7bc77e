/*
 * Helpers shared by the in-kernel TLB tests (mm/tlb_test.c, mm/tlb_stale_test.c): the
 * test address, a save/restore of every flush-policy variant, raw PTEs and page fills.
 */
#ifndef BAREMM_TLB_TEST_H
#define BAREMM_TLB_TEST_H

#include "kernel/events.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/tsc.h"
#include "mm/mm.h"
#include "mm/tlbflush.h"
#include "mm/mmu_gather.h"

#define RW (VM_READ | VM_WRITE)
#define TEST_VA 0x40000000UL
#define PAT_A 0xa1a1a1a1a1a1a1a1ULL	/* the old page */
#define PAT_B 0xb2b2b2b2b2b2b2b2ULL	/* the new page (remap) */

static inline u64 ev(enum event e) { return event_sum(e); }

/* Every flush-policy variant, saved and restored around each test. */
struct tlb_variants {
	int proto;
	bool early, lazy, skip, pcid, nobatch, rcu;
	u64 ceiling;
	int ptfree;
};
static inline void variants_save(struct tlb_variants *v)
{
	*v = (struct tlb_variants){ tlb_protocol, tlb_early_ack, tlb_lazy, tlb_test_skip_remote,
				    opt_pcid, gather_nobatch, ptfree_rcu, tlb_ceiling,
				    ptfree };
}
static inline void variants_restore(const struct tlb_variants *v)
{
	tlb_protocol = v->proto;
	tlb_early_ack = v->early;
	tlb_lazy = v->lazy;
	tlb_test_skip_remote = v->skip;
	opt_pcid = v->pcid;
	gather_nobatch = v->nobatch;
	ptfree_rcu = v->rcu;
	tlb_ceiling = v->ceiling;
	ptfree = v->ptfree;
}

static inline u64 raw_pte(struct page *p, bool writable)
{
	return mk_pte(page_to_pfn(p), _PAGE_PRESENT | _PAGE_SPECIAL | pte_nx |
				      (writable ? _PAGE_RW : 0));
}

static inline void fill64(struct page *p, u64 v)
{
	u64 *w = page_address(p);
	for (unsigned i = 0; i < PAGE_SIZE / 8; i++)
		w[i] = v;
}

static inline u64 uread64(u64 va) { return *(volatile u64 *)va; }

#endif
