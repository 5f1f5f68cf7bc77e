#include "arch/x86_64/pmu.h"
#include "arch/x86_64/cpu.h"
#include "kernel/string.h"

#define MSR_FIXED_CTR_CTRL 0x38d
#define MSR_PERF_GLOBAL_CTRL 0x38f

bool pmu_usable;

void pmu_init_cpu(void)
{
	/* Intel architectural PMU v2+ with at least two fixed counters; AMD's counters are
	 * programmed differently and are not used yet. */
	if (strcmp(boot_cpu.vendor, "GenuineIntel") || boot_cpu.pmu_version < 2)
		return;
	if ((cpuid(0xa, 0).edx & 0x1f) < 2)
		return;
	wrmsr(MSR_FIXED_CTR_CTRL, 0x33);	/* counters 0 and 1: ring 0 and 3 */
	wrmsr(MSR_PERF_GLOBAL_CTRL, (1ULL << 32) | (1ULL << 33));
	pmu_usable = true;
}
