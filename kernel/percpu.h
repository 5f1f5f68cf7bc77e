/*
 * Per-CPU identity. Each CPU's GS base points at its struct percpu, whose first field
 * points at itself, so this_cpu() is one GS-relative load. Rooms that need per-CPU state
 * of their own keep an array indexed by smp_processor_id() (NR_CPUS entries, cacheline
 * aligned) next to their code instead of growing this struct.
 * Host builds (BAREMM_HOST) take the CPU id from a thread-local the test sets.
 */
#ifndef BAREMM_PERCPU_H
#define BAREMM_PERCPU_H

#include "kernel/cpumask.h"

extern unsigned nr_cpu_ids;		/* CPUs brought online (ids 0..nr_cpu_ids-1) */
extern cpumask_t cpu_online_mask;

/* Snapshot: @dst = the online CPUs of @src, whose words are read with sequentially
 * consistent loads (@src may be an mm's cpumask that switching CPUs update meanwhile;
 * the online mask only grows during boot, before anything flushes). */
static inline void cpumask_and_online(cpumask_t *dst, const cpumask_t *src)
{
	for (int i = 0; i < CPUMASK_WORDS; i++)
		dst->bits[i] = atomic_load(&src->bits[i]) & cpu_online_mask.bits[i];
}

#ifndef BAREMM_HOST
struct mm_struct;

struct percpu {
	struct percpu *self;	/* gs:0 */
	u32 cpu;		/* gs:8, logical id 0..nr_cpu_ids-1 */
	u32 apic_id;
	u64 stack_top;		/* top of this CPU's kernel stack */
	u64 ist_top[3];		/* #DF, NMI, #MC stacks */
	u64 tsc_at_online;
	volatile u64 heartbeat;	/* bumped by the CPU's idle/poll loops; read by the watchdog */
	const char *doing;	/* what the CPU is doing, named in a watchdog report */
	u32 irq_depth;		/* > 0 while handling an interrupt */
	u32 preempt_depth;
} __cacheline_aligned;

extern struct percpu percpu_areas[NR_CPUS];

static inline struct percpu *this_cpu(void)
{
	struct percpu *p;
	__asm__ __volatile__("movq %%gs:0, %0" : "=r"(p));
	return p;
}

static inline unsigned smp_processor_id(void)
{
	u32 id;
	__asm__ __volatile__("movl %%gs:8, %0" : "=r"(id));
	return id;
}

static inline struct percpu *per_cpu(unsigned cpu) { return &percpu_areas[cpu]; }
static inline void set_doing(const char *what) { this_cpu()->doing = what; }
#else
extern __thread unsigned host_cpu_id;
static inline unsigned smp_processor_id(void) { return host_cpu_id; }
static inline void set_doing(const char *what) { (void)what; }
#endif

#endif
