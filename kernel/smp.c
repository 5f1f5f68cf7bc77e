/*
 * CPU bring-up (ACPI MADT -> INIT-SIPI-SIPI through boot/trampoline.asm) and cross-CPU
 * function calls (contract in kernel/smp.h).
 *
 * Call descriptors: csd[initiator][target], one slot per ordered pair of CPUs. A slot is
 * owned by its initiator from the moment it is locked until the target marks it done, so
 * a synchronous call needs no allocation, and an asynchronous call first waits for the
 * slot's previous call to finish. Each CPU's queue is a lock-free LIFO of pending slots;
 * the owner takes the whole list with one exchange and runs it oldest first.
 */
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/events.h"
#include "kernel/printk.h"
#include "kernel/panic.h"
#include "kernel/string.h"
#include "kernel/exit.h"
#include "kernel/options.h"
#include "kernel/watchdog.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/irqflags.h"
#include "arch/x86_64/acpi.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/desc.h"
#include "arch/x86_64/tsc.h"
#include "arch/x86_64/tlb.h"
#include "arch/x86_64/pmu.h"
#include "mm/direct_map.h"
#include "mm/physmem.h"

DEFINE_OPTION_UINT(opt_maxcpus, "maxcpus", 0, 0, NR_CPUS,
		   "bring up at most this many CPUs (0 = every CPU the MADT lists)");

struct percpu percpu_areas[NR_CPUS];
unsigned nr_cpu_ids = 1;
cpumask_t cpu_online_mask;

struct csd {
	struct csd *next;
	smp_call_func_t func;
	void *info;
	volatile u32 locked;	/* 1 from enqueue until the target ran it */
} __aligned(32);

static struct csd csd_slots[NR_CPUS][NR_CPUS];
static struct csd *volatile call_queue[NR_CPUS] __cacheline_aligned;

struct smp_call_batch {
	cpumask_t targets;
} __cacheline_aligned;
static struct smp_call_batch call_batches[NR_CPUS];

static void csd_wait(struct csd *c, unsigned target)
{
	u64 t0 = rdtsc();
	while (atomic_load_acquire(&c->locked)) {
		smp_call_queue_drain();	/* serve calls to us while we wait: no deadlock */
		cpu_relax();
		if (unlikely(rdtsc() - t0 > watchdog_call_timeout_cycles()))
			watchdog_call_stuck(target, t0);
	}
}

/* Queue @c on @target; returns true when an IPI must be sent (queue was empty). */
static bool csd_enqueue(struct csd *c, unsigned target)
{
	struct csd *head = atomic_load_relaxed(&call_queue[target]);
	do {
		c->next = head;
	} while (!__atomic_compare_exchange_n(&call_queue[target], &head, c, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	count_event(EV_SMP_CALL_QUEUED);
	return head == NULL;
}

static void send_call_ipi(unsigned target)
{
	apic_send_ipi(per_cpu(target)->apic_id, VEC_CALL_FUNCTION);
	count_event(EV_IPI_SENT);
}

static struct csd *csd_prepare(unsigned target, smp_call_func_t func, void *info)
{
	struct csd *c = &csd_slots[smp_processor_id()][target];
	csd_wait(c, target);	/* previous async call through this slot still pending */
	c->func = func;
	c->info = info;
	c->locked = 1;
	return c;
}

void smp_call_queue_drain(void)
{
	unsigned me = smp_processor_id();
	if (!READ_ONCE(call_queue[me]))
		return;
	unsigned long f = local_irq_save();
	struct csd *list = __atomic_exchange_n(&call_queue[me], NULL, __ATOMIC_ACQUIRE);
	/* LIFO -> FIFO so calls from one initiator run in the order they were made */
	struct csd *fifo = NULL;
	while (list) {
		struct csd *n = list->next;
		list->next = fifo;
		fifo = list;
		list = n;
	}
	while (fifo) {
		struct csd *n = fifo->next;	/* read before the slot is released */
		fifo->func(fifo->info);
		count_event(EV_SMP_CALL_RUN);
		atomic_store_release(&fifo->locked, 0);
		fifo = n;
	}
	local_irq_restore(f);
}

static void call_function_interrupt(void)
{
	count_event(EV_IPI_RECEIVED);
	smp_call_queue_drain();
}

int smp_call_function_single(unsigned cpu, smp_call_func_t func, void *info, bool wait)
{
	if (cpu >= nr_cpu_ids || !cpumask_test_cpu(cpu, &cpu_online_mask))
		return -1;
	if (cpu == smp_processor_id()) {
		unsigned long f = local_irq_save();
		func(info);
		local_irq_restore(f);
		return 0;
	}
	struct csd *c = csd_prepare(cpu, func, info);
	if (csd_enqueue(c, cpu))
		send_call_ipi(cpu);
	if (wait)
		csd_wait(c, cpu);
	return 0;
}

struct smp_call_batch *smp_call_send_many(const cpumask_t *mask, smp_call_func_t func, void *info)
{
	unsigned me = smp_processor_id(), cpu;
	struct smp_call_batch *b = &call_batches[me];
	cpumask_clear(&b->targets);
	for_each_cpu(cpu, mask) {
		if (cpu == me || !cpumask_test_cpu(cpu, &cpu_online_mask))
			continue;
		struct csd *c = csd_prepare(cpu, func, info);
		cpumask_set_cpu(cpu, &b->targets);
		if (csd_enqueue(c, cpu))
			send_call_ipi(cpu);
	}
	return b;
}

void smp_call_wait(struct smp_call_batch *b)
{
	unsigned me = smp_processor_id(), cpu;
	for_each_cpu(cpu, &b->targets)
		csd_wait(&csd_slots[me][cpu], cpu);
}

void smp_call_function_many(const cpumask_t *mask, smp_call_func_t func, void *info, bool wait)
{
	struct smp_call_batch *b = smp_call_send_many(mask, func, info);
	if (wait)
		smp_call_wait(b);
}

void smp_call_function(smp_call_func_t func, void *info, bool wait)
{
	smp_call_function_many(&cpu_online_mask, func, info, wait);
}

void on_each_cpu(smp_call_func_t func, void *info, bool wait)
{
	struct smp_call_batch *b = smp_call_send_many(&cpu_online_mask, func, info);
	unsigned long f = local_irq_save();
	func(info);
	local_irq_restore(f);
	if (wait)
		smp_call_wait(b);
}

unsigned smp_num_online(void)
{
	return cpumask_weight(&cpu_online_mask);
}

/* ---- bring-up ---- */

extern u8 trampoline_start[], trampoline_end[];
extern u64 tramp_param_cr3, tramp_param_stack, tramp_param_entry, tramp_param_kernel_cr3;
extern u8 boot_pml4[];
#define TRAMP_BASE 0x8000

static volatile u32 ap_online_flag;
static __noreturn void ap_start(void)
{
	unsigned cpu = READ_ONCE(ap_online_flag) >> 16;	/* passed in the high half */
	cpu_init_common(cpu);
	cpumask_set_cpu_atomic(cpu, &cpu_online_mask);
	atomic_store_release(&ap_online_flag, 1);
	cpu_idle_loop();
}

static void set_param(u64 *param, u64 v)
{
	*(volatile u64 *)__va(TRAMP_BASE + ((u8 *)param - trampoline_start)) = v;
}

static bool wait_online(u64 us)
{
	u64 t0 = rdtsc(), n = us * tsc_khz / 1000;
	while (rdtsc() - t0 < n) {
		if (atomic_load_acquire(&ap_online_flag) == 1)
			return true;
		cpu_relax();
	}
	return false;
}

static bool start_ap(unsigned cpu, u32 apic_id)
{
	u64 stack = per_cpu(cpu)->stack_top;
	set_param(&tramp_param_cr3, (u64)boot_pml4 - KERNEL_VIRT_BASE);
	set_param(&tramp_param_stack, stack);
	set_param(&tramp_param_entry, (u64)ap_start);
	set_param(&tramp_param_kernel_cr3, kernel_pml4_pa);
	atomic_store_release(&ap_online_flag, cpu << 16);

	/* INIT, 10 ms, SIPI, 200 us, SIPI only if the CPU has not arrived yet */
	apic_send_init(apic_id);
	udelay(10000);
	apic_send_sipi(apic_id, TRAMP_BASE >> PAGE_SHIFT);
	if (wait_online(200))
		return true;
	apic_send_sipi(apic_id, TRAMP_BASE >> PAGE_SHIFT);
	return wait_online(1000000);	/* TCG with many vCPUs can be slow to schedule */
}

void smp_boot_aps(const struct madt_info *madt)
{
	memcpy(__va(TRAMP_BASE), trampoline_start, (size_t)(trampoline_end - trampoline_start));
	for (unsigned cpu = 1; cpu < nr_cpu_ids; cpu++) {
		struct percpu *pc = per_cpu(cpu);
		if (!start_ap(cpu, pc->apic_id))
			panic("CPU %u (APIC id %u) did not come online after INIT-SIPI-SIPI", cpu,
			      pc->apic_id);
	}
	(void)madt;
}

/* Assign logical ids from the MADT (boot CPU = 0) and map every CPU's stacks. Runs on
 * the boot CPU before the page allocator takes over memory. */
void smp_prepare_cpus(const struct madt_info *madt, u32 bsp_apic_id)
{
	unsigned n = madt->nr_cpus;
	if (n > NR_CPUS) {
		printk("SMP: the MADT lists %u CPUs; baremm is built for at most %u (NR_CPUS): "
		       "using the first %u\n", n, NR_CPUS, NR_CPUS);
		n = NR_CPUS;
	}
	if (opt_maxcpus && opt_maxcpus < n)
		n = (unsigned)opt_maxcpus;
	per_cpu(0)->apic_id = bsp_apic_id;
	unsigned next = 1;
	for (unsigned i = 0; i < madt->nr_cpus && next < n; i++) {
		if (madt->apic_ids[i] == bsp_apic_id)
			continue;
		per_cpu(next++)->apic_id = madt->apic_ids[i];
	}
	nr_cpu_ids = next;
	for (unsigned cpu = 0; cpu < nr_cpu_ids; cpu++) {
		u64 ist[3];
		per_cpu(cpu)->stack_top = map_cpu_stacks(cpu, ist);
		per_cpu(cpu)->ist_top[0] = ist[0];
		per_cpu(cpu)->ist_top[1] = ist[1];
		per_cpu(cpu)->ist_top[2] = ist[2];
	}
}

/* Per-CPU setup common to the boot CPU and the APs: GS, descriptors, APIC, PGE. */
void cpu_init_common(unsigned cpu)
{
	struct percpu *pc = per_cpu(cpu);
	pc->self = pc;
	pc->cpu = cpu;
	wrmsr(MSR_GS_BASE, (u64)pc);
	if (boot_cpu.pge)
		write_cr4(read_cr4() | CR4_PGE);
	cpu_load_descriptors(cpu, pc->ist_top);
	apic_init_cpu();
	if (cpu != 0 && apic_read_id() != pc->apic_id)
		panic("CPU %u: APIC id %u, expected %u", cpu, apic_read_id(), pc->apic_id);
	pc->tsc_at_online = rdtsc();
	pmu_init_cpu();
	watchdog_cpu_init();
}

void smp_init_calls(void)
{
	set_irq_handler(VEC_CALL_FUNCTION, call_function_interrupt);
}

/* ---- thread-context work on idle CPUs ---- */

struct cpu_work {
	void (*fn)(void *arg);
	void *arg;
	volatile u32 pending;
} __cacheline_aligned;
static struct cpu_work cpu_work[NR_CPUS];

static void wake_noop(void *info)
{
	(void)info;
}

void smp_run_parallel(const cpumask_t *mask, void (*fn)(void *arg), void *arg)
{
	unsigned me = smp_processor_id(), cpu;
	for_each_cpu(cpu, mask) {
		if (cpu == me || !cpumask_test_cpu(cpu, &cpu_online_mask))
			continue;
		struct cpu_work *w = &cpu_work[cpu];
		BUG_ON(w->pending);
		w->fn = fn;
		w->arg = arg;
		atomic_store_release(&w->pending, 1);
		smp_call_function_single(cpu, wake_noop, NULL, false);
	}
	if (cpumask_test_cpu(me, mask))
		fn(arg);
	for_each_cpu(cpu, mask) {
		if (cpu == me || !cpumask_test_cpu(cpu, &cpu_online_mask))
			continue;
		while (atomic_load_acquire(&cpu_work[cpu].pending)) {
			smp_call_queue_drain();
			cpu_relax();
		}
	}
}

void smp_barrier_init(struct smp_barrier *b, u32 n)
{
	b->count = 0;
	b->sense = 0;
	b->n = n;
}

void smp_barrier_wait(struct smp_barrier *b)
{
	u32 sense = atomic_load_acquire(&b->sense);
	if (atomic_add_return(&b->count, 1) == b->n) {
		atomic_store_relaxed(&b->count, 0);
		atomic_store_release(&b->sense, sense ^ 1);
		return;
	}
	while (atomic_load_acquire(&b->sense) == sense) {
		smp_call_queue_drain();
		cpu_relax();
	}
}

/* Idle: sleep until an interrupt (a cross-CPU call or the watchdog tick), serve it, and
 * run thread-context work handed over by smp_run_parallel. */
__noreturn void cpu_idle_loop(void)
{
	struct percpu *pc = this_cpu();
	struct cpu_work *w = &cpu_work[pc->cpu];
	for (;;) {
		pc->doing = "idle";
		__asm__ __volatile__("cli");
		if (!READ_ONCE(call_queue[pc->cpu]) && !atomic_load_acquire(&w->pending))
			safe_halt();	/* sti; hlt: no lost wake-up between the check and the halt */
		else
			local_irq_enable();
		smp_call_queue_drain();
		if (atomic_load_acquire(&w->pending)) {
			pc->doing = "parallel work";
			w->fn(w->arg);
			atomic_store_release(&w->pending, 0);
		}
		pc->heartbeat++;
	}
}
