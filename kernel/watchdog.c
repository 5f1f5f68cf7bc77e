#include "kernel/watchdog.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/options.h"
#include "kernel/exit.h"
#include "kernel/atomic.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/tsc.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/desc.h"

DEFINE_OPTION_UINT(opt_timeout, "timeout", 1800, 1, 86400,
		   "seconds after boot when the watchdog ends the run (status watchdog)");
DEFINE_OPTION_UINT(opt_call_timeout, "call_timeout", 20, 1, 3600,
		   "seconds a CPU may wait for a cross-CPU call before the watchdog fires");

static u64 deadline_tsc, boot_tsc;
static u32 timer_ticks_per_100ms;
static u64 tick_tsc;		/* TSC-deadline mode: TSC ticks between watchdog ticks */
static int fired;

u64 watchdog_call_timeout_cycles(void)
{
	return opt_call_timeout * tsc_khz * 1000;
}

static void report_cpus(void)
{
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		struct percpu *pc = per_cpu(c);
		printk("watchdog:   CPU %u (APIC %u) doing: %s, heartbeat %lu\n", c, pc->apic_id,
		       pc->doing ? pc->doing : "-", (unsigned long)pc->heartbeat);
	}
}

void watchdog_call_stuck(unsigned target, u64 since_tsc)
{
	if (atomic_xchg(&fired, 1))
		halt_forever();
	printk("WATCHDOG: CPU %u waited %lu ms for a cross-CPU call to CPU %u, which did not "
	       "answer (it was doing: %s)\n", smp_processor_id(),
	       (unsigned long)cycles_to_ns(rdtsc() - since_tsc) / 1000000, target,
	       per_cpu(target)->doing ? per_cpu(target)->doing : "-");
	report_cpus();
	kernel_exit(EXIT_WATCHDOG);
}

void watchdog_check(void)
{
	if (likely(rdtsc() < deadline_tsc) || !deadline_tsc)
		return;
	if (atomic_xchg(&fired, 1))
		halt_forever();
	printk("WATCHDOG: run exceeded timeout=%lu s (noticed by CPU %u)\n",
	       (unsigned long)opt_timeout, smp_processor_id());
	report_cpus();
	kernel_exit(EXIT_WATCHDOG);
}

static void watchdog_tick(void)
{
	this_cpu()->heartbeat++;
	if (tick_tsc)
		apic_timer_arm_deadline(rdtsc() + tick_tsc);
	watchdog_check();
}

void watchdog_init(void)
{
	boot_tsc = rdtsc();
	deadline_tsc = boot_tsc + opt_timeout * tsc_khz * 1000;
	set_irq_handler(VEC_WATCHDOG, watchdog_tick);
	if (boot_cpu.tsc_deadline) {
		tick_tsc = tsc_khz * 100;	/* 100 ms */
		return;
	}
	u64 hz = apic_timer_calibrate();
	timer_ticks_per_100ms = (u32)MIN(hz / 10, 0xffffffffULL);
	if (!timer_ticks_per_100ms)
		timer_ticks_per_100ms = 100000;
}

void watchdog_cpu_init(void)
{
	if (tick_tsc) {
		apic_timer_deadline_mode(VEC_WATCHDOG);
		apic_timer_arm_deadline(rdtsc() + tick_tsc);
	} else if (timer_ticks_per_100ms) {
		apic_timer_periodic(VEC_WATCHDOG, timer_ticks_per_100ms);
	}
}
