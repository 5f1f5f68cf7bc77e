/*
 * Cross-CPU function calls: the transport TLB shootdowns ride on.
 *
 * Each CPU owns a lock-free queue of pending calls (a multi-producer stack drained whole
 * by the owner). An initiator pushes one call descriptor per target and sends one IPI to
 * each target whose queue was empty before the push (a non-empty queue already has an
 * IPI in flight), then, when @wait, spins until every target has run the function.
 * There is no global lock: several CPUs may initiate at once. A CPU waiting for
 * acknowledgements (interrupts on or off) keeps draining its own queue, so two CPUs
 * calling each other cannot deadlock.
 *
 * Functions run in interrupt context on the target with interrupts disabled; they must
 * not block or initiate a waiting call themselves. @info must stay valid until the call
 * completes (for wait=false calls: owned by the callee or static).
 * Callable from any CPU once smp_init() has run; the caller is never among the targets
 * of *_many (use the local path yourself), smp_call_function_single to self runs inline.
 */
#ifndef BAREMM_SMP_H
#define BAREMM_SMP_H

#include "kernel/cpumask.h"

typedef void (*smp_call_func_t)(void *info);

int smp_call_function_single(unsigned cpu, smp_call_func_t func, void *info, bool wait);
/* Run on every CPU in @mask except the caller. */
void smp_call_function_many(const cpumask_t *mask, smp_call_func_t func, void *info, bool wait);
/* Run on every other online CPU. */
void smp_call_function(smp_call_func_t func, void *info, bool wait);
/* Run on every online CPU, the caller included (locally with interrupts disabled). */
void on_each_cpu(smp_call_func_t func, void *info, bool wait);
/* Drain this CPU's queue (called from the IPI handler and from wait loops). */
void smp_call_queue_drain(void);

/* Variants of smp_call_function_many for shootdown protocols (mm/tlbflush.c):
 * send without waiting, then wait for the returned handle. */
struct smp_call_batch;
struct smp_call_batch *smp_call_send_many(const cpumask_t *mask, smp_call_func_t func, void *info);
void smp_call_wait(struct smp_call_batch *b);

/*
 * Run fn(arg) on every CPU in @mask at once in thread context (interrupts enabled, free
 * to make waiting cross-CPU calls), the caller included when it is in @mask; returns when
 * all are done. The other CPUs must be idle (in cpu_idle_loop). Boot CPU only.
 */
void smp_run_parallel(const cpumask_t *mask, void (*fn)(void *arg), void *arg);

/* Sense-reversing barrier for @n CPUs (benchmarks start every CPU together). */
struct smp_barrier {
	volatile u32 count;
	volatile u32 sense;
	u32 n;
};
void smp_barrier_init(struct smp_barrier *b, u32 n);
void smp_barrier_wait(struct smp_barrier *b);

struct madt_info;
/* Boot CPU, in order: assign logical ids from the MADT and map every CPU's stacks
 * (before the page allocator owns memory); install the call IPI handler; start the APs. */
void smp_prepare_cpus(const struct madt_info *madt, u32 bsp_apic_id);
void smp_init_calls(void);
void smp_boot_aps(const struct madt_info *madt);
void cpu_init_common(unsigned cpu);
__noreturn void cpu_idle_loop(void);

/* After smp_boot_aps: choose the cross-CPU call wait's spin hint (call_wait=; auto: probe
 * whether the vCPUs run in parallel under TCG) and patch it in. */
void smp_choose_call_wait(void);
const char *smp_call_wait_name(void);		/* "pause" or "nop": what the wait runs */
const char *smp_call_wait_reason(void);		/* why: forced, not-tcg, tcg-parallel, ... */
/* Every site holds the chosen instruction and lies in kernel text; *nsites = how many. */
bool smp_call_wait_site_check(unsigned *nsites);
unsigned smp_num_online(void);

#endif
