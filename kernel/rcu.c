/*
 * Grace periods and deferred callbacks. See kernel/rcu.h for the model.
 *
 * State: gp_started / gp_done (a period s is running while gp_started == s > gp_done),
 * rcu_qs[cpu].seen = the newest period number CPU cpu has reported a quiescent point for.
 * Period s is complete when every online CPU has seen >= s; the completing CPU moves
 * gp_done from s - 1 to s after claiming the completion with a compare-and-swap on gp_claimed, so exactly one CPU records it.
 *
 * A callback queued while period s runs may have been unhooked after some CPUs already
 * reported for s, so it waits for s + 1; one queued while no period runs starts s + 1 and
 * waits for it. Tags never decrease along the FIFO.
 */
#include "kernel/rcu.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/spinlock.h"
#include "kernel/events.h"
#include "arch/x86_64/cpu.h"

struct rcu_cpu {
	u64 seen;
} __cacheline_aligned;

static struct rcu_cpu rcu_qs[NR_CPUS];

static struct {
	spinlock_t lock;		/* the callback FIFO and starting periods */
	u64 gp_started;
	u64 gp_done;
	u64 gp_claimed;		/* completion claimed by one CPU (gp_done follows) */
	u64 gp_start_tsc;
	struct rcu_head *head;
	struct rcu_head **tail;
	u64 nr_cbs;
	u64 in_flight;			/* callbacks dequeued by rcu_poll, not yet run */
	struct rcu_stats st;
} rcu = { .lock = SPINLOCK_INIT };

static void rcu_try_complete(u64 s)
{
	if (atomic_load(&rcu.gp_done) >= s)
		return;
	unsigned cpu;
	for_each_cpu(cpu, &cpu_online_mask)
		if (atomic_load(&rcu_qs[cpu].seen) < s)
			return;
	u64 expect = s - 1;
	u64 t = rdtsc();
	/* One CPU claims the completion, accounts for it, then publishes it: a waiter that
	 * sees gp_done == s also sees the period counted. */
	if (atomic_cmpxchg(&rcu.gp_claimed, &expect, s)) {
		u64 lat = t - atomic_load(&rcu.gp_start_tsc);
		/* the lock keeps rcu_get_stats/rcu_reset_stats from tearing the figures; it is
		 * never held across a wait, so taking it here (maybe in a kick IRQ) is safe */
		unsigned long f = spin_lock_irqsave(&rcu.lock);
		rcu.st.gp_completed++;
		rcu.st.lat_sum += lat;
		rcu.st.lat_last = lat;
		if (lat > rcu.st.lat_max)
			rcu.st.lat_max = lat;
		spin_unlock_irqrestore(&rcu.lock, f);
		count_event(EV_RCU_GP);
		atomic_store_release(&rcu.gp_done, s);
	}
}

void rcu_quiescent_state(void)
{
	/* Interrupts off: a kick taken between the load and the store could report a newer
	 * period, which the store would then move back (and that period would never end). */
	unsigned long f = local_irq_save();
	u64 s = atomic_load(&rcu.gp_started);
	struct rcu_cpu *me = &rcu_qs[smp_processor_id()];
	if (atomic_load_relaxed(&me->seen) < s) {
		atomic_store(&me->seen, s);
		rcu_try_complete(s);
	}
	local_irq_restore(f);
}

static void rcu_kick_fn(void *info)
{
	(void)info;
	rcu_quiescent_state();
}

/* Lock held: start period gp_done + 1 when none runs and @want or a callback needs one.
 * Returns the number of the period started (0: none). */
static u64 rcu_start_locked(u64 want)
{
	if (rcu.gp_started != rcu.gp_done)
		return 0;
	bool needed = want > rcu.gp_done || (rcu.head && rcu.head->gp > rcu.gp_done);
	if (!needed)
		return 0;
	u64 s = rcu.gp_done + 1;
	atomic_store(&rcu.gp_start_tsc, rdtsc());
	atomic_store(&rcu.gp_started, s);	/* after every unhook the callers made */
	return s;
}

/* Outside the lock: ask every CPU that has not reported for @s to report, report for
 * ourselves. */
static void rcu_kick(u64 s)
{
	cpumask_t mask;
	unsigned cpu, me = smp_processor_id();
	cpumask_clear(&mask);
	for_each_cpu(cpu, &cpu_online_mask)
		if (cpu != me && atomic_load(&rcu_qs[cpu].seen) < s)
			cpumask_set_cpu(cpu, &mask);
	if (!cpumask_empty(&mask))
		smp_call_function_many(&mask, rcu_kick_fn, NULL, false);
	rcu_quiescent_state();
}

static void rcu_advance(u64 want)
{
	unsigned long f = spin_lock_irqsave(&rcu.lock);
	u64 s = rcu_start_locked(want);
	spin_unlock_irqrestore(&rcu.lock, f);
	if (s)
		rcu_kick(s);
}

void call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head))
{
	head->func = func;
	head->next = NULL;
	unsigned long f = spin_lock_irqsave(&rcu.lock);
	if (!rcu.tail)
		rcu.tail = &rcu.head;
	head->gp = rcu.gp_started + 1;
	*rcu.tail = head;
	rcu.tail = &head->next;
	if (++rcu.nr_cbs > rcu.st.cbs_peak)
		rcu.st.cbs_peak = rcu.nr_cbs;
	u64 s = rcu_start_locked(0);
	spin_unlock_irqrestore(&rcu.lock, f);
	if (s)
		rcu_kick(s);
}

unsigned rcu_poll(void)
{
	struct rcu_head *ready = NULL, **rtail = &ready;
	unsigned n = 0;
	rcu_quiescent_state();
	unsigned long f = spin_lock_irqsave(&rcu.lock);
	u64 done = atomic_load(&rcu.gp_done);
	while (rcu.head && rcu.head->gp <= done) {
		struct rcu_head *h = rcu.head;
		rcu.head = h->next;
		if (!rcu.head)
			rcu.tail = &rcu.head;
		*rtail = h;
		rtail = &h->next;
		rcu.nr_cbs--;
		n++;
	}
	*rtail = NULL;
	rcu.in_flight += n;
	u64 s = rcu_start_locked(0);
	spin_unlock_irqrestore(&rcu.lock, f);
	if (s)
		rcu_kick(s);
	while (ready) {
		struct rcu_head *nx = ready->next;
		ready->func(ready);
		ready = nx;
	}
	if (n)
		atomic_sub_return(&rcu.in_flight, n);	/* rcu_barrier waits for this */
	return n;
}

static void rcu_wait_for(u64 target)
{
	while (atomic_load(&rcu.gp_done) < target) {
		rcu_advance(target);
		smp_call_queue_drain();
		rcu_quiescent_state();
		cpu_relax();
	}
}

void synchronize_rcu(void)
{
	unsigned long f = spin_lock_irqsave(&rcu.lock);
	/* A period already running may have reports from before our call: need the next. */
	u64 target = rcu.gp_started + 1;
	spin_unlock_irqrestore(&rcu.lock, f);
	rcu_wait_for(target);
	rcu_poll();
}

void rcu_barrier(void)
{
	for (;;) {
		unsigned long f = spin_lock_irqsave(&rcu.lock);
		u64 target = 0;
		if (rcu.head)
			target = container_of(rcu.tail, struct rcu_head, next)->gp;
		spin_unlock_irqrestore(&rcu.lock, f);
		if (!target)
			break;
		rcu_wait_for(target);
		rcu_poll();
	}
	/* Callbacks another CPU's rcu_poll took off the queue may still be running. */
	while (atomic_load(&rcu.in_flight)) {
		smp_call_queue_drain();
		cpu_relax();
	}
}

void rcu_get_stats(struct rcu_stats *out)
{
	unsigned long f = spin_lock_irqsave(&rcu.lock);
	*out = rcu.st;
	out->cbs_waiting = rcu.nr_cbs;
	spin_unlock_irqrestore(&rcu.lock, f);
}

void rcu_reset_stats(void)
{
	unsigned long f = spin_lock_irqsave(&rcu.lock);
	rcu.st.gp_completed = rcu.st.lat_sum = rcu.st.lat_max = rcu.st.lat_last = 0;
	rcu.st.cbs_peak = rcu.nr_cbs;
	spin_unlock_irqrestore(&rcu.lock, f);
}
