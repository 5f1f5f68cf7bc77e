/* Tests of per-CPU identity, cross-CPU calls, spinlocks and barriers on every CPU. */
#include "kernel/ktest.h"
#include "kernel/smp.h"
#include "kernel/percpu.h"
#include "kernel/spinlock.h"
#include "kernel/events.h"
#include "kernel/string.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/irqflags.h"
#include "arch/x86_64/tsc.h"

static struct {
	volatile u32 seen[NR_CPUS];
	volatile u32 bad[NR_CPUS];
} ident;

static void check_identity(void *arg)
{
	(void)arg;
	unsigned me = smp_processor_id();
	struct percpu *pc = this_cpu();
	u64 gs = rdmsr(MSR_GS_BASE);
	bool ok = pc == per_cpu(me) && pc->self == pc && gs == (u64)pc && pc->cpu == me &&
		  apic_read_id() == pc->apic_id;
	ident.seen[me]++;
	if (!ok)
		ident.bad[me]++;
}

KTEST(smp, percpu_identity)
{
	memset((void *)&ident, 0, sizeof(ident));
	on_each_cpu(check_identity, NULL, true);
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		KT_EXPECT_EQ(ident.seen[c], 1);
		KT_EXPECT_EQ(ident.bad[c], 0);
	}
	KT_EXPECT_EQ(smp_num_online(), nr_cpu_ids);
}

static void record_cpu(void *arg)
{
	*(volatile unsigned *)arg = smp_processor_id();
}

KTEST_SMP(smp, call_single_runs_on_target, 2)
{
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		volatile unsigned where = ~0u;
		KT_EXPECT_EQ(smp_call_function_single(c, record_cpu, (void *)&where, true), 0);
		KT_EXPECT_EQ(where, c);
	}
	KT_EXPECT(smp_call_function_single(nr_cpu_ids, record_cpu, NULL, true) != 0);
}

/*
 * Every CPU calls every other CPU many times, sync and async mixed, all at once. Each call
 * bumps hits[target][initiator] on the target, each initiator counts what it sent: the two
 * must agree exactly. The rounds are bounded by time as well (at least CALL_MIN_ROUNDS):
 * booted by hand with 8 vCPUs on 2 host cores under multi-threaded TCG, every synchronous
 * call waits for the host to schedule its target's thread, and 1000 rounds took 310 s.
 * Round-robin and -icount boots finish all rounds well inside the bound (-icount: the TSC
 * counts instructions).
 */
#define CALLS_PER_PAIR 1000
#define CALL_MIN_ROUNDS 4
#define CALL_SECONDS 3
static volatile u32 hits[NR_CPUS][NR_CPUS];
static volatile u32 sent[NR_CPUS][NR_CPUS];	/* [initiator][target], by the initiator */
static volatile u32 storm_rounds[NR_CPUS];
static u64 storm_deadline;
struct call_arg {
	unsigned from;
};
static struct call_arg call_args[NR_CPUS];
static struct smp_barrier call_barrier;

static void count_hit(void *arg)
{
	struct call_arg *a = arg;
	hits[smp_processor_id()][a->from]++;	/* only the target writes its row */
}

static void storm(void *arg)
{
	(void)arg;
	unsigned me = smp_processor_id();
	int i;
	call_args[me].from = me;
	smp_barrier_wait(&call_barrier);
	for (i = 0; i < CALLS_PER_PAIR && (i < CALL_MIN_ROUNDS || rdtsc() < storm_deadline); i++) {
		for (unsigned t = 0; t < nr_cpu_ids; t++) {
			if (t == me)
				continue;
			/* every 4th call with interrupts off: waiters must still serve their queue */
			unsigned long f = (i & 3) == 0 ? local_irq_save() : 0;
			smp_call_function_single(t, count_hit, &call_args[me], (i & 1) == 0);
			if ((i & 3) == 0)
				local_irq_restore(f);
			sent[me][t]++;
		}
	}
	storm_rounds[me] = (u32)i;
	/* flush outstanding async calls: one more synchronous call per target */
	for (unsigned t = 0; t < nr_cpu_ids; t++)
		if (t != me) {
			smp_call_function_single(t, count_hit, &call_args[me], true);
			sent[me][t]++;
		}
}

KTEST_SMP(smp, concurrent_initiators_exactly_once, 2)
{
	memset((void *)hits, 0, sizeof(hits));
	memset((void *)sent, 0, sizeof(sent));
	u64 ran0 = event_sum(EV_SMP_CALL_RUN);
	smp_barrier_init(&call_barrier, nr_cpu_ids);
	storm_deadline = deadline_after_ms(1000 * CALL_SECONDS);
	smp_run_parallel(&cpu_online_mask, storm, NULL);
	u64 total = 0;
	u32 rmin = CALLS_PER_PAIR, rmax = 0;
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		rmin = MIN(rmin, storm_rounds[c]);
		rmax = MAX(rmax, storm_rounds[c]);
	}
	printk("# concurrent_initiators_exactly_once: %u..%u rounds per CPU of %u (%u s bound)\n",
	       rmin, rmax, CALLS_PER_PAIR, CALL_SECONDS);
	for (unsigned t = 0; t < nr_cpu_ids; t++)
		for (unsigned f = 0; f < nr_cpu_ids; f++) {
			if (t == f)
				continue;
			KT_EXPECT_MSG(hits[t][f] == sent[f][t] && sent[f][t] >= CALL_MIN_ROUNDS + 1,
				      "CPU %u ran %u calls from CPU %u, which sent %u (at least %u)", t,
				      hits[t][f], f, sent[f][t], CALL_MIN_ROUNDS + 1);
			total += hits[t][f];
		}
	KT_EXPECT(event_sum(EV_SMP_CALL_RUN) - ran0 >= total);
}

static void nop(void *arg)
{
	(void)arg;
}

KTEST_SMP(smp, call_many_and_ipi_elision, 2)
{
	u64 q0 = event_sum(EV_SMP_CALL_QUEUED), r0 = event_sum(EV_SMP_CALL_RUN);
	u64 s0 = event_sum(EV_IPI_SENT);
	for (int i = 0; i < 100; i++)
		smp_call_function(nop, NULL, true);
	u64 n = 100ULL * (nr_cpu_ids - 1);
	KT_EXPECT_EQ(event_sum(EV_SMP_CALL_QUEUED) - q0, n);
	KT_EXPECT_EQ(event_sum(EV_SMP_CALL_RUN) - r0, n);
	/* one IPI per call at most: elision may only lower it */
	KT_EXPECT(event_sum(EV_IPI_SENT) - s0 <= n);
	KT_EXPECT(event_sum(EV_IPI_SENT) - s0 > 0);
}

static DEFINE_SPINLOCK(test_lock);
static volatile u64 unlocked_counter;
static volatile u32 inside;
static volatile u32 overlap;
static struct smp_barrier lock_barrier;
#define LOCK_ROUNDS 20000
#define LOCK_MIN_ROUNDS 100	/* every CPU contends at least this often */
#define LOCK_SECONDS 2		/* then stop early: see below */
static volatile u64 lock_rounds[NR_CPUS];
static u64 lock_deadline;

/*
 * The work is bounded by time as well as by rounds: with more vCPUs than host threads
 * (a hand boot under multi-threaded TCG), each hand-off of a FIFO ticket lock waits for
 * the host to schedule the next ticket's vCPU thread, and 20000 rounds on 8 vCPUs took
 * longer than 600 s. Mutual exclusion is checked on whatever rounds ran.
 */
static void lock_hammer(void *arg)
{
	(void)arg;
	u64 n = 0;
	smp_barrier_wait(&lock_barrier);
	for (int i = 0; i < LOCK_ROUNDS && (i < LOCK_MIN_ROUNDS || rdtsc() < lock_deadline); i++) {
		spin_lock(&test_lock);
		if (atomic_add_return(&inside, 1) != 1)
			overlap++;
		unlocked_counter = unlocked_counter + 1;	/* plain RMW: only safe under the lock */
		atomic_sub_return(&inside, 1);
		spin_unlock(&test_lock);
		n++;
	}
	lock_rounds[smp_processor_id()] = n;
}

KTEST_SMP(spinlock, mutual_exclusion, 2)
{
	unlocked_counter = 0;
	overlap = 0;
	for (unsigned c = 0; c < nr_cpu_ids; c++)
		lock_rounds[c] = 0;
	lock_deadline = deadline_after_ms(1000 * LOCK_SECONDS);
	smp_barrier_init(&lock_barrier, nr_cpu_ids);
	smp_run_parallel(&cpu_online_mask, lock_hammer, NULL);
	u64 total = 0;
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		KT_EXPECT_MSG(lock_rounds[c] >= LOCK_MIN_ROUNDS, "CPU %u took the lock %lu times", c,
			      (unsigned long)lock_rounds[c]);
		total += lock_rounds[c];
	}
	KT_EXPECT_EQ(unlocked_counter, total);
	KT_EXPECT_EQ(overlap, 0);
	KT_EXPECT(!spin_is_locked(&test_lock));
}

KTEST(spinlock, trylock)
{
	spinlock_t l = SPINLOCK_INIT;
	KT_EXPECT(spin_trylock(&l));
	KT_EXPECT(spin_is_locked(&l));
	KT_EXPECT(!spin_trylock(&l));
	spin_unlock(&l);
	KT_EXPECT(!spin_is_locked(&l));
	KT_EXPECT(!spin_lock_and_test_contended(&l));
	spin_unlock(&l);
}

static volatile u32 barrier_phase[NR_CPUS];
static volatile u32 barrier_err;
static volatile u32 barrier_stop, barrier_rounds_done;
static struct smp_barrier phase_barrier;
#define BARRIER_ROUNDS 200
#define BARRIER_MIN_ROUNDS 10
#define BARRIER_SECONDS 3	/* the bound that matters for 8 vCPUs on 2 host cores */
static u64 barrier_deadline;

static void barrier_rounds(void *arg)
{
	(void)arg;
	unsigned me = smp_processor_id();
	for (u32 r = 1;; r++) {
		barrier_phase[me] = r;
		smp_barrier_wait(&phase_barrier);
		for (unsigned c = 0; c < nr_cpu_ids; c++)
			if (barrier_phase[c] < r)
				barrier_err++;
		/* one CPU decides between the two barriers; all read it after the second, before
		 * anyone can reach the next round's decision */
		if (me == 0) {
			barrier_stop = r >= BARRIER_ROUNDS ||
				       (r >= BARRIER_MIN_ROUNDS && rdtsc() > barrier_deadline);
			barrier_rounds_done = r;
		}
		smp_barrier_wait(&phase_barrier);
		if (barrier_stop)
			break;
	}
}

KTEST_SMP(smp, barrier_holds_everyone, 2)
{
	barrier_err = 0;
	barrier_stop = 0;
	barrier_deadline = deadline_after_ms(1000 * BARRIER_SECONDS);
	smp_barrier_init(&phase_barrier, nr_cpu_ids);
	smp_run_parallel(&cpu_online_mask, barrier_rounds, NULL);
	printk("# barrier_holds_everyone: %u rounds of %u (%u s bound)\n", barrier_rounds_done,
	       BARRIER_ROUNDS, BARRIER_SECONDS);
	KT_EXPECT(barrier_rounds_done >= BARRIER_MIN_ROUNDS);
	KT_EXPECT_EQ(barrier_err, 0);
}

/* The x2APIC ICR write must be ordered after earlier stores: MFENCE then LFENCE before
 * the WRMSR (no other WRMSR in between). Checks the compiled instructions, so it fails
 * if the fence is dropped or moved after the write. */
KTEST(smp, x2apic_icr_write_is_fenced)
{
	static const u8 mfence[] = { 0x0f, 0xae, 0xf0 }, lfence[] = { 0x0f, 0xae, 0xe8 };
	const u8 *code = (const u8 *)(u64)&x2apic_write_icr;
	int at_mfence = -1, at_lfence = -1, at_wrmsr = -1;
	for (int i = 0; i < 64 && at_wrmsr < 0; i++) {
		if (at_mfence < 0 && !memcmp(code + i, mfence, 3))
			at_mfence = i;
		else if (at_mfence >= 0 && at_lfence < 0 && !memcmp(code + i, lfence, 3))
			at_lfence = i;
		else if (code[i] == 0x0f && code[i + 1] == 0x30)
			at_wrmsr = i;
	}
	KT_EXPECT_MSG(at_mfence >= 0 && at_lfence > at_mfence && at_wrmsr > at_lfence,
		      "x2apic_write_icr: mfence at %d, lfence at %d, wrmsr at %d (want mfence < "
		      "lfence < wrmsr)", at_mfence, at_lfence, at_wrmsr);
}


/* The cross-CPU call wait's spin hint, at every site, is the one the MACHINE line reports
 * (call_wait=): fails if a site was missed or patched wrong, or the report lies. */
KTEST(smp, call_wait_sites_hold_reported_hint)
{
	unsigned n = 0;
	bool ok = smp_call_wait_site_check(&n);
	KT_EXPECT_MSG(ok, "%u call-wait sites; want each to hold %s (%s) inside kernel text", n,
		      smp_call_wait_name(), !strcmp(smp_call_wait_name(), "nop") ? "66 90" : "f3 90");
}
