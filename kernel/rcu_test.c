/*
 * In-kernel test of the grace-period mechanism (kernel/rcu.c, suite "rcu"): a callback
 * queued while another CPU sits in a read-side section (interrupts off) must not run
 * until that CPU has left it; synchronize_rcu completes a grace period.
 */
#include "kernel/rcu.h"
#include "kernel/ktest.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/events.h"
#include "kernel/printk.h"
#include "kernel/string.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/irqflags.h"
#include "arch/x86_64/tsc.h"

struct rcu_ctx {
	volatile u32 holding, release, cb_ran;
	volatile u32 ran_early;
	struct rcu_head head;
};
static struct rcu_ctx rctx;

static void rcu_test_cb(struct rcu_head *h)
{
	(void)h;
	rctx.cb_ran = 1;
}

static void rcu_fn(void *arg)
{
	struct rcu_ctx *c = arg;
	if (smp_processor_id() == 1) {
		/* a read-side section: interrupts off, no call served */
		local_irq_disable();
		atomic_store_release(&c->holding, 1);
		while (!atomic_load_acquire(&c->release))
			cpu_relax();
		local_irq_enable();
		return;
	}
	if (smp_processor_id() != 0)
		return;
	while (!atomic_load_acquire(&c->holding))
		cpu_relax();
	call_rcu(&c->head, rcu_test_cb);
	u64 dl = rdtsc() + 20 * tsc_khz;	/* 20 ms */
	while (rdtsc() < dl) {
		(void)rcu_poll();
		cpu_relax();
	}
	c->ran_early = c->cb_ran;
	atomic_store_release(&c->release, 1);
	rcu_barrier();
}

KTEST_SMP(rcu, grace_period, 2)
{
	struct rcu_stats st0, st1;
	rcu_get_stats(&st0);
	u64 gp0 = event_sum(EV_RCU_GP);
	synchronize_rcu();
	KT_EXPECT(event_sum(EV_RCU_GP) > gp0);
	memset(&rctx, 0, sizeof(rctx));
	smp_run_parallel(&cpu_online_mask, rcu_fn, &rctx);
	KT_EXPECT_MSG(!rctx.ran_early, "callback ran while CPU 1 was in a read-side section");
	KT_EXPECT(rctx.cb_ran);
	rcu_get_stats(&st1);
	u64 n = st1.gp_completed - st0.gp_completed;
	KT_EXPECT(n >= 2);
	printk("# %llu grace periods, mean latency %llu cycles, max %llu (the max includes "
	       "the 20 ms read-side section)\n", (unsigned long long)n,
	       (unsigned long long)(n ? (st1.lat_sum - st0.lat_sum) / n : 0),
	       (unsigned long long)st1.lat_max);
}
