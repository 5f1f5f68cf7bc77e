/*
 * Cross-CPU calls on the host, for code built with BAREMM_HOST (the allocator's host
 * tests and tools/native's panel): there are no IPIs, so a call runs the function at
 * once "as" the target CPU, by switching the thread's host_cpu_id around it.
 */
#include "kernel/smp.h"
#include "kernel/percpu.h"

int smp_call_function_single(unsigned cpu, smp_call_func_t fn, void *info, bool wait)
{
	(void)wait;
	unsigned me = host_cpu_id;
	host_cpu_id = cpu;
	fn(info);
	host_cpu_id = me;
	return 0;
}

void on_each_cpu(smp_call_func_t fn, void *info, bool wait)
{
	for (unsigned c = 0; c < nr_cpu_ids; c++)
		smp_call_function_single(c, fn, info, wait);
}
