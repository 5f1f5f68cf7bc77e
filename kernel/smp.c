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

/*
 * The wait's spin hint. Linux's wait (and so ours, on hardware and KVM) executes `pause`;
 * under round-robin TCG (also every -icount and cost-model boot) `pause` is what hands the
 * host thread to the next vCPU, the one we wait for. Under multi-threaded TCG it hands
 * nothing over and only ends the vCPU's translated-block loop, a host-side exit per turn:
 * there smp_choose_call_wait() rewrites it into the 2-byte NOP 66 90, so the instruction
 * count and code layout stay the same. Each site's address is listed in its own section.
 */
static inline void csd_relax(void)
{
	__asm__ __volatile__("1: pause\n\t"
			     ".pushsection baremm_call_wait_sites, \"a\"\n\t"
			     ".balign 8\n\t"
			     ".quad 1b\n\t"
			     ".popsection" ::: "memory");
}

static void csd_wait(struct csd *c, unsigned target)
{
	u64 t0 = rdtsc();
	while (atomic_load_acquire(&c->locked)) {
		smp_call_queue_drain();	/* serve calls to us while we wait: no deadlock */
		csd_relax();
		if (unlikely(rdtsc() - t0 > watchdog_call_timeout_cycles()))
			watchdog_call_stuck(target, t0);
	}
}

#define CALL_WAIT_LIST(X)                                                                  \
	X(CALL_WAIT_AUTO, "auto", "nop when the vCPUs run in parallel under TCG (multi-threaded, " \
	  "probed at boot), else pause")                                                     \
	X(CALL_WAIT_PAUSE, "pause", "spin with pause, as Linux (round-robin TCG needs it)") \
	X(CALL_WAIT_NOP, "nop", "spin with a 2-byte NOP in its place (under round-robin TCG "   \
	  "each wait then lasts until QEMU's 100 ms round-robin kick)")
enum { CALL_WAIT_LIST(OPTION_ENUM_CONST) };
DEFINE_OPTION_ENUM(opt_call_wait, "call_wait", CALL_WAIT_AUTO,
		   "the spin hint in the cross-CPU call wait", CALL_WAIT_LIST);

extern char __text_start[], __text_end[];
extern const u64 __start_baremm_call_wait_sites[], __stop_baremm_call_wait_sites[];
static bool call_wait_nop;		/* the sites hold 66 90 */
static const char *call_wait_why = "default";

/* -- probe: how does QEMU run the vCPUs? -- */

/*
 * -icount makes the TSC a count of executed instructions: two rdtsc back to back differ by
 * the same few ticks every time (3 at shift=0, 6 at shift=1, 12 at shift=2, with the TSC
 * at ~2 GHz). Without -icount the TSC follows the host's clock, and two rdtsc under TCG
 * are two helper calls that each read it, tens of host cycles or more apart (21 ticks
 * steps on the 2-core host, or 0 from a coarse clock). At least 6 of 8 equal and small
 * (one timer interrupt must not decide); the first pair only translates the code.
 */
static bool tsc_counts_instructions(void)
{
	u64 d[9];
	for (int i = 0; i < 9; i++) {
		u64 t = rdtsc();
		d[i] = rdtsc() - t;
	}
	for (int i = 1; i < 4; i++) {
		int same = 0;
		for (int j = 1; j < 9; j++)
			same += d[j] == d[i];
		if (same >= 6 && d[i] >= 1 && d[i] <= 12)
			return true;
	}
	return false;
}

static volatile u64 probe_count;
static volatile u32 probe_stop;
#define PROBE_BURST 4096

/* Runs on CPU 1 (its call handler) during the probe: bursts of stores, each followed by
 * a pause, where round-robin TCG hands the host thread back to CPU 0. */
static void probe_counter(void *arg)
{
	(void)arg;
	while (!atomic_load_acquire(&probe_stop)) {
		for (int i = 0; i < PROBE_BURST; i++)
			probe_count = probe_count + 1;
		cpu_relax();
	}
}

static void call_noop(void *arg)
{
	(void)arg;
}

/*
 * Two loads of probe_count with register-only work between them, in one straight-line
 * block. Without -icount, round-robin TCG switches vCPUs only between translated blocks,
 * so CPU 1's stores can never land between the two loads; multi-threaded TCG runs CPU 1
 * at the same time, and whenever both threads hold a host core they often do.
 */
static bool probe_pair_differs(void)
{
	u64 a, b, x = 1;
	__asm__ __volatile__("mov %3, %0\n\t"
			     ".rept 16\n\timul $3, %2, %2\n\t.endr\n\t"
			     "mov %3, %1"
			     : "=&r"(a), "=&r"(b), "+r"(x) : "m"(probe_count));
	return a != b;
}

enum vcpu_threads { VCPUS_PARALLEL, VCPUS_ROUND_ROBIN, VCPUS_UNDECIDED };

#define PROBE_PAIRS 256		/* pairs per run (no pause inside a run) */
#define PROBE_HITS 2		/* differing pairs: proof of parallel vCPUs */
#define PROBE_STREAK 16		/* runs in a row with the round-robin signature */
#define PROBE_MAX_MS 2000	/* neither seen: undecided (keep pause) */

/*
 * CPU 0 alternates runs of pairs with a pause. Round-robin signature: CPU 1 makes progress
 * in every pause (its turn) and none during the run. Multi-threaded TCG on a loaded host
 * can time-share both vCPU threads on one host core, which shows neither signal: the
 * probe then waits (up to PROBE_MAX_MS) for a moment when both run.
 */
static enum vcpu_threads probe_vcpu_threads(void)
{
	unsigned hits = 0, streak = 0;
	u64 t0 = rdtsc(), limit = ns_to_cycles(PROBE_MAX_MS * 1000000ULL);
	probe_count = 0;
	probe_stop = 0;
	smp_call_function_single(1, probe_counter, NULL, false);
	while (hits < PROBE_HITS && streak < PROBE_STREAK && rdtsc() - t0 < limit) {
		u64 start = probe_count;
		for (int i = 0; i < PROBE_PAIRS; i++)
			hits += probe_pair_differs();
		u64 end = probe_count;
		cpu_relax();	/* round-robin: CPU 1's turn */
		bool rr_like = end == start && probe_count != end;
		streak = rr_like ? streak + 1 : 0;
	}
	atomic_store_release(&probe_stop, 1);
	/* same slot, so this returns once probe_counter has returned */
	smp_call_function_single(1, call_noop, NULL, true);
	return hits >= PROBE_HITS ? VCPUS_PARALLEL
	       : streak >= PROBE_STREAK ? VCPUS_ROUND_ROBIN : VCPUS_UNDECIDED;
}

static bool running_under_tcg(void)
{
	return boot_cpu.hypervisor && !strcmp(boot_cpu.hv_vendor, "TCGTCGTCGTCG");
}

/* Rewrite every call-wait site: pause (F3 90) <-> 2-byte NOP (66 90). Text is read-only,
 * so the boot CPU lifts CR0.WP for the two-byte loop with interrupts off; only the first
 * byte changes, so a CPU running the site sees one instruction or the other. */
static void patch_call_wait(bool nop)
{
	unsigned long f = local_irq_save();
	u64 cr0 = read_cr0();
	write_cr0(cr0 & ~CR0_WP);
	for (const u64 *s = __start_baremm_call_wait_sites; s < __stop_baremm_call_wait_sites; s++) {
		volatile u8 *op = (volatile u8 *)*s;
		BUG_ON(op[1] != 0x90 || (op[0] != 0xf3 && op[0] != 0x66));
		op[0] = nop ? 0x66 : 0xf3;
	}
	write_cr0(cr0);
	local_irq_restore(f);
	/* every other CPU takes an interrupt (and its serialising return) before it runs the
	 * sites again: x86's rule for code another CPU modified */
	smp_call_function(call_noop, NULL, true);
	call_wait_nop = nop;
}

void smp_choose_call_wait(void)
{
	bool nop;
	switch (opt_call_wait) {
	case CALL_WAIT_PAUSE:
		nop = false;
		call_wait_why = "forced";
		break;
	case CALL_WAIT_NOP:
		nop = true;
		call_wait_why = "forced";
		break;
	default:
		if (!running_under_tcg()) {
			nop = false;
			call_wait_why = "not-tcg";
		} else if (nr_cpu_ids < 2) {
			nop = false;
			call_wait_why = "one-cpu";
		} else if (tsc_counts_instructions()) {
			nop = false;	/* -icount: always round-robin (shift 0-2 recognised) */
			call_wait_why = "tcg-icount";
		} else {
			enum vcpu_threads t = probe_vcpu_threads();
			nop = t == VCPUS_PARALLEL;
			call_wait_why = t == VCPUS_PARALLEL ? "tcg-parallel"
					: t == VCPUS_ROUND_ROBIN ? "tcg-round-robin" : "tcg-undecided";
		}
	}
	if (nop)
		patch_call_wait(true);
}

const char *smp_call_wait_name(void)
{
	return call_wait_nop ? "nop" : "pause";
}

const char *smp_call_wait_reason(void)
{
	return call_wait_why;
}

bool smp_call_wait_site_check(unsigned *nsites)
{
	unsigned n = 0;
	bool ok = true;
	for (const u64 *s = __start_baremm_call_wait_sites; s < __stop_baremm_call_wait_sites; s++) {
		const u8 *op = (const u8 *)*s;
		n++;
		ok &= op[0] == (call_wait_nop ? 0x66 : 0xf3) && op[1] == 0x90 &&
		      *s >= (u64)__text_start && *s < (u64)__text_end;
	}
	*nsites = n;
	return ok && n > 0;
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

/*
 * The wait between INIT and the first SIPI, as Linux chooses it: none on Intel family 6
 * and AMD family 0xF and later, which need none; the MP specification's 10 ms on other
 * CPUs. QEMU's TCG `max` CPU says AuthenticAMD family 6, so it waits (under -icount at
 * 16 CPUs that is 150 M guest instructions of pause loops per boot), as Linux would there.
 */
static u64 init_sipi_delay_us(void)
{
	if (!strcmp(boot_cpu.vendor, "GenuineIntel") && boot_cpu.family == 6)
		return 0;
	if (!strcmp(boot_cpu.vendor, "AuthenticAMD") && boot_cpu.family >= 0xf)
		return 0;
	return 10000;
}

static bool start_ap(unsigned cpu, u32 apic_id)
{
	u64 stack = per_cpu(cpu)->stack_top;
	set_param(&tramp_param_cr3, (u64)boot_pml4 - KERNEL_VIRT_BASE);
	set_param(&tramp_param_stack, stack);
	set_param(&tramp_param_entry, (u64)ap_start);
	set_param(&tramp_param_kernel_cr3, kernel_pml4_pa);
	atomic_store_release(&ap_online_flag, cpu << 16);

	/* INIT, (10 ms: init_sipi_delay_us), SIPI, 200 us, SIPI only if the CPU has not
	 * arrived yet */
	apic_send_init(apic_id);
	udelay(init_sipi_delay_us());
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
