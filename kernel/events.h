/*
 * Event counters: per-CPU, always on, one plain increment each (no atomics: a CPU only
 * writes its own row). The harness sums rows and prints per-operation deltas next to every
 * timing, so each figure comes with the events that explain it.
 * To add an event, add one line to EVENT_LIST; the name printed is the lower-case one.
 */
#ifndef BAREMM_EVENTS_H
#define BAREMM_EVENTS_H

#include "kernel/percpu.h"

#define EVENT_LIST(X)                                                              \
	X(IPI_SENT, "ipi_sent")                   /* IPIs written to the APIC */    \
	X(IPI_RECEIVED, "ipi_recv")               /* call-function IPIs taken */     \
	X(SMP_CALL_QUEUED, "call_queued")         /* cross-CPU calls enqueued */     \
	X(SMP_CALL_RUN, "call_run")               /* cross-CPU calls executed */     \
	X(TLB_INVLPG, "invlpg")                   /* single-page local flushes */    \
	X(TLB_FULL_FLUSH, "full_flush")           /* CR3 reload flushes */           \
	X(TLB_INVPCID, "invpcid")                                                   \
	X(TLB_FLUSH_REQ, "flush_req")             /* flush_tlb_mm_range calls */     \
	X(TLB_REMOTE_FLUSH, "remote_flush")       /* flush functions run remotely */ \
	X(TLB_REMOTE_IPI, "flush_ipi")            /* IPIs sent for TLB flushes */    \
	X(TLB_SKIP_LAZY, "skip_lazy")             /* lazy CPUs not interrupted */    \
	X(TLB_SKIP_UPTODATE, "skip_gen")          /* flush skipped: gen caught up */ \
	X(TLB_EARLY_ACK, "early_ack")                                               \
	X(PGALLOC_PCP_HIT, "alloc_pcp")           /* pages taken from pcp lists */   \
	X(PGALLOC_PCP_REFILL, "pcp_refill")       /* bulk refills of a pcp list */   \
	X(PGALLOC_BUDDY, "alloc_buddy")           /* pages allocated from buddy */   \
	X(PGALLOC_FAIL, "alloc_fail")                                               \
	X(PGFREE_PCP, "free_pcp")                 /* pages freed onto pcp lists */   \
	X(PGFREE_BULK, "free_bulk")               /* pages moved pcp -> buddy */     \
	X(PGFREE_BUDDY, "free_buddy")             /* pages freed straight to buddy */\
	X(PCP_DRAIN, "pcp_drain")                                                   \
	X(ZONE_LOCK, "zone_lock")                 /* zone lock acquisitions */       \
	X(ZONE_LOCK_CONTENDED, "zone_contended")  /* acquisitions that spun */       \
	X(BUDDY_MERGE, "buddy_merge")             /* buddy pairs merged at free */   \
	X(BUDDY_SPLIT, "buddy_split")             /* blocks halved at allocation */  \
	X(PAGEBLOCK_LOOKUP, "pb_lookup")          /* pageblock migratetype reads */  \
	X(PAGEBLOCK_STEAL, "pb_steal")            /* pageblocks changing type */     \
	X(PGFAULT, "fault")                       /* all page faults handled */      \
	X(PGFAULT_ZERO, "fault_zero")             /* read mapped the zero page */    \
	X(PGFAULT_ANON, "fault_anon")             /* demand-zero page allocated */   \
	X(PGFAULT_COW, "fault_cow")               /* copy-on-write copies */         \
	X(PGFAULT_SHARED, "fault_shared")         /* shared file-like page mapped */ \
	X(PGFAULT_REFPAGE, "fault_ref")           /* reference-page faults */        \
	X(PGTABLE_ALLOC, "pt_alloc")              /* page-table pages allocated */   \
	X(PGTABLE_FREE, "pt_free")                /* page-table pages freed */       \
	X(RMAP_REMOVE, "rmap_remove")             /* map counts dropped */           \
	X(GATHER_FLUSH, "gather_flush")           /* mmu_gather flush+free passes */ \
	X(GATHER_FORCE_FLUSH, "force_flush")      /* flushes forced mid-unmap */     \
	X(GATHER_BATCH_ALLOC, "batch_alloc")      /* extra gather batches */         \
	X(GATHER_FALLBACK, "gather_fallback")     /* no batch page: sync fallback */ \
	X(RCU_GP, "rcu_gp")                       /* grace periods completed */      \
	X(RCU_TABLES_DEFERRED, "rcu_deferred")    /* table pages freed after a GP */\
	X(TLB_FLUSH_SEQ, "flush_seq")             /* remote flushes, sequential */   \
	X(TLB_FLUSH_CONC, "flush_conc")           /* remote flushes, concurrent */   \
	X(TLB_LAZY_LEAVE, "lazy_leave")           /* lazy CPU left its mm on flush */\
	X(TLB_PCID_NOFLUSH, "pcid_noflush")       /* CR3 loads keeping an ASID */    \
	X(TLB_TEST_SKIP, "test_skip_remote")      /* test: remote flush skipped */   \
	X(TLB_TABLE_SYNC, "table_sync")           /* table fallback: sync all CPUs */\
	X(PTFREE_BULK, "ptfree_bulk")             /* table batches freed in bulk */

enum event {
#define EVENT_ENUM(id, name) EV_##id,
	EVENT_LIST(EVENT_ENUM)
#undef EVENT_ENUM
	NR_EVENTS
};

struct event_row {
	u64 v[NR_EVENTS];
} __cacheline_aligned;

extern struct event_row event_counts[NR_CPUS];
extern const char *const event_names[NR_EVENTS];

static inline void count_events(enum event e, u64 n)
{
	event_counts[smp_processor_id()].v[e] += n;
}
static inline void count_event(enum event e)
{
	count_events(e, 1);
}

/* Sum of one event over all CPUs (racy snapshot; exact when the CPUs are quiet). */
u64 event_sum(enum event e);
/* Snapshot all events summed over CPUs into out[NR_EVENTS]. */
void events_snapshot(u64 *out);

#endif
