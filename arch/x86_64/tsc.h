/*
 * TSC frequency: from CPUID 0x15 (crystal ratio) or 0x16 (base MHz) when the CPU states
 * it, else calibrated against PIT channel 2. Under TCG the guest TSC follows host time
 * (or, with -icount shift=0, counts one tick per guest instruction).
 */
#ifndef BAREMM_TSC_H
#define BAREMM_TSC_H

#include "kernel/types.h"
#include "arch/x86_64/cpu.h"

extern u64 tsc_khz;
extern const char *tsc_source;	/* "cpuid15", "cpuid16", "pit" */

void tsc_init(void);
static inline u64 cycles_to_ns(u64 c) { return tsc_khz ? c * 1000000ULL / tsc_khz : 0; }
/* Exact for values below ~1.8e13 ns-kHz; callers use it for intervals, not absolute time */
static inline u64 ns_to_cycles(u64 ns) { return ns * tsc_khz / 1000000ULL; }
/* The TSC value ms milliseconds from now: a time bound for loops that wait on other CPUs */
static inline u64 deadline_after_ms(u64 ms) { return rdtsc() + ms * tsc_khz; }
void udelay(u64 us);
void pit_stop(void);	/* PIT channel 0 off: no firmware-phase timer under -icount */

#endif
