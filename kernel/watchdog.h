/*
 * Watchdog: nothing may hang. Every CPU runs a 10 Hz APIC timer tick; any CPU that sees
 * the run's deadline (`timeout=` seconds after boot) passed reports what every CPU was
 * doing (percpu->doing, heartbeat) and ends the run with the WATCHDOG status. A CPU
 * waiting for a cross-CPU call that is not answered within `call_timeout=` seconds ends
 * the run the same way, naming the silent CPU.
 */
#ifndef BAREMM_WATCHDOG_H
#define BAREMM_WATCHDOG_H

#include "kernel/types.h"

void watchdog_init(void);	/* boot CPU, after TSC and APIC: calibrate, set deadline */
void watchdog_cpu_init(void);	/* every CPU: start its tick */
u64 watchdog_call_timeout_cycles(void);
__noreturn void watchdog_call_stuck(unsigned target, u64 since_tsc);
void watchdog_check(void);	/* may be called from long loops with interrupts off */

#endif
