/*
 * Architectural performance counters (CPUID leaf 0xA), used by the benchmark harness when
 * the machine has them (real hardware, KVM with a vPMU): fixed counter 0 counts retired
 * instructions, fixed counter 1 unhalted core cycles. Under TCG there is no PMU and the
 * harness says pmu=none. Each CPU enables its own counters (pmu_init_cpu).
 */
#ifndef BAREMM_PMU_H
#define BAREMM_PMU_H

#include "kernel/types.h"

extern bool pmu_usable;

void pmu_init_cpu(void);
struct pmu_snapshot {
	u64 instructions, cycles;
};
static inline void pmu_read(struct pmu_snapshot *s)
{
	if (!pmu_usable) {
		s->instructions = s->cycles = 0;
		return;
	}
	u32 lo, hi;
	__asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"((1u << 30) | 0));
	s->instructions = ((u64)hi << 32) | lo;
	__asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"((1u << 30) | 1));
	s->cycles = ((u64)hi << 32) | lo;
}

#endif
