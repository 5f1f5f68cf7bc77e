/*
 * What the kernel provides to mm/ and kernel/ logic, for host unit tests: printk to
 * stdout, panic() aborts (so sanitizers print the stack), a thread-local CPU id, and the
 * "physical memory" offset used by __va/__pa.
 */
#include <stdio.h>
#include <stdlib.h>
#include "kernel/printk.h"
#include "kernel/panic.h"
#include "kernel/percpu.h"

__thread unsigned host_cpu_id;
unsigned nr_cpu_ids = 1;
cpumask_t cpu_online_mask = { { 1 } };
u64 host_phys_offset;

int vprintk(const char *fmt, va_list ap)
{
	return vprintf(fmt, ap);
}

int printk(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

void panic(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "PANIC: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}
