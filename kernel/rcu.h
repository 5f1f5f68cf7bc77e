/*
 * A small RCU-like grace-period mechanism (used by mm/mmu_gather.c for the
 * variant `ptfree_rcu=on`: page-table pages freed only after a grace period).
 *
 * Model ("RCU-sched"): a read-side critical section is a stretch of code that runs with
 * interrupts disabled and does not serve cross-CPU calls. A CPU passes a quiescent point
 * when it runs a cross-CPU call function (the IPI handler, or a wait loop draining its
 * queue) or calls rcu_quiescent_state() itself. A grace period completes when every
 * online CPU has passed a quiescent point after the period started; anything unhooked
 * before the start can then no longer be referenced by a reader.
 *
 * Grace periods are numbered 1, 2, ...; at most one runs at a time. Starting one sends an
 * empty asynchronous cross-CPU call to every other online CPU ("kick"), so an idle
 * (halted) CPU reports at once instead of at its next interrupt. The CPU that records the
 * last report completes the period (any context, interrupts on or off) and records its
 * latency (TSC cycles from start to completion).
 *
 * Callbacks (call_rcu) are queued in one FIFO with the number of the grace period they
 * wait for; they run in thread context from rcu_poll() (called by the mmu_gather at each
 * deferral and at the end of each gather), synchronize_rcu() and rcu_barrier(), never
 * from interrupt context. Callbacks run with no lock held and may free pages.
 *
 * Callable from any CPU in thread context, interrupts on or off (waits drain this CPU's
 * call queue), except rcu_quiescent_state() which is also fine in interrupt context.
 * Software walkers that rely on RCU must keep interrupts disabled and must not wait for
 * cross-CPU calls inside their critical section. baremm has no lockless page-table walker
 * today: hardware walks are covered by the TLB shootdown (mm/tlbflush.c), so the grace
 * period here is the cost Linux pays for its lockless walkers, measured, not a need.
 */
#ifndef BAREMM_RCU_H
#define BAREMM_RCU_H

#include "kernel/types.h"

struct rcu_head {
	struct rcu_head *next;
	void (*func)(struct rcu_head *head);
	u64 gp;			/* grace period that must complete before func runs */
};

/* Queue @func(@head) to run after a full grace period from now. */
void call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head));
/* Wait until a full grace period has passed since the call (then run ready callbacks). */
void synchronize_rcu(void);
/* Wait until every callback queued before the call has run. */
void rcu_barrier(void);
/* This CPU is at a quiescent point (no reader state carried across it). */
void rcu_quiescent_state(void);
/* Run the callbacks whose grace period has completed; start the next period if
 * callbacks still wait. Returns the number run. */
unsigned rcu_poll(void);

struct rcu_stats {
	u64 gp_completed;	/* grace periods completed */
	u64 lat_sum;		/* sum of their latencies (TSC cycles) */
	u64 lat_max;
	u64 lat_last;
	u64 cbs_waiting;	/* callbacks queued now */
	u64 cbs_peak;		/* most callbacks queued at once since the last reset */
};
void rcu_get_stats(struct rcu_stats *out);
void rcu_reset_stats(void);	/* zero the latency sums and the peak (benchmarks) */

#endif
