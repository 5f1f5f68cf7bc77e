/*
 * Two-CPU workloads of the native panel and the worker thread they run on. The worker is
 * pinned to CPU 1 and sleeps on a condition variable between runs (in the guest its CPU
 * idles in hlt while one-CPU rows run); a run lines both CPUs up with a spinning barrier
 * before the timed part. Each CPU brackets its own timed region and reports its own
 * operations to the model (model_sample), as baremm's harness does on every CPU.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "panel.h"
#include "panel_mm.h"
#include "kernel/percpu.h"
#include "kernel/spinlock.h"

static pthread_mutex_t job_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_cv = PTHREAD_COND_INITIALIZER;
static void (*job_fn)(void *);
static void *job_arg;
static int job_pending, job_done;

static void *worker(void *unused)
{
	(void)unused;
	native_pin(1);
	host_cpu_id = 1;
	for (;;) {
		pthread_mutex_lock(&job_mu);
		while (!job_pending)
			pthread_cond_wait(&job_cv, &job_mu);
		void (*fn)(void *) = job_fn;
		void *arg = job_arg;
		job_pending = 0;
		pthread_mutex_unlock(&job_mu);
		fn(arg);
		pthread_mutex_lock(&job_mu);
		job_done = 1;
		pthread_cond_broadcast(&job_cv);
		pthread_mutex_unlock(&job_mu);
	}
	return NULL;
}

void panel_smp_start(void)
{
	static int started;
	if (started)
		return;
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL)) {
		fprintf(stderr, "panel: cannot start the CPU 1 worker\n");
		exit(3);
	}
	started = 1;
}

void panel_smp_call(void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&job_mu);
	job_fn = fn;
	job_arg = arg;
	job_done = 0;
	job_pending = 1;
	pthread_cond_broadcast(&job_cv);
	pthread_mutex_unlock(&job_mu);
}

void panel_smp_join(void)
{
	pthread_mutex_lock(&job_mu);
	while (!job_done)
		pthread_cond_wait(&job_cv, &job_mu);
	pthread_mutex_unlock(&job_mu);
}

/* Sense-reversing barrier for two. */
static volatile int bar_count, bar_sense;
static __thread int my_sense;

void panel_barrier(void)
{
	my_sense = !my_sense;
	if (__atomic_add_fetch(&bar_count, 1, __ATOMIC_ACQ_REL) == 2) {
		bar_count = 0;
		__atomic_store_n(&bar_sense, my_sense, __ATOMIC_RELEASE);
	} else {
		while (__atomic_load_n(&bar_sense, __ATOMIC_ACQUIRE) != my_sense)
			__asm__ __volatile__("pause");
	}
}

/* ---- CAS ping-pong on one line: op = one round trip (two hand-offs) ---- */

static uint64_t pp_line[8] __attribute__((aligned(64)));

/* Wait until the line holds @from, then swap in @to; @n times. The spin has `pause`, as
 * the kernel's spins do: under round-robin TCG it hands the host thread to the other
 * vCPU (a plain spin would hold it for a whole time slice per hand-off), and natively
 * it costs what it costs there too. */
static void pp_side(uint64_t from, uint64_t to, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t e;
		do {
			while (__atomic_load_n(&pp_line[0], __ATOMIC_RELAXED) != from)
				__asm__ __volatile__("pause");
			e = from;
		} while (!__atomic_compare_exchange_n(&pp_line[0], &e, to, false, __ATOMIC_ACQ_REL,
						      __ATOMIC_RELAXED));
	}
}

struct smp_arg {
	struct panel_wl *w;
};

static void pp_remote(void *a)
{
	struct panel_wl *w = ((struct smp_arg *)a)->w;
	panel_barrier();
	model_region_begin();
	pp_side(1, 0, w->param);
	model_region_end();
	model_sample(w->param);
}

static uint64_t pp_run(struct panel_wl *w, uint64_t *ops)
{
	struct smp_arg a = { w };
	pp_line[0] = 0;
	panel_smp_call(pp_remote, &a);
	panel_barrier();
	uint64_t t0 = panel_tstart();
	pp_side(0, 1, w->param);
	uint64_t t = panel_tstop(t0);
	panel_smp_join();
	*ops = w->param;
	return t;
}

/* ---- ticket-lock hand-off: both CPUs take and release one kernel spinlock ---- */

static spinlock_t hand_lock __attribute__((aligned(64)));
static uint64_t hand_count, hand_overs, hand_last, hand_total __attribute__((aligned(64)));

/*
 * A FIFO hand-off at every release, by construction: the holder keeps the lock until the
 * other CPU has taken its ticket (queued behind it), then releases, so the lock always
 * goes to the waiter, whatever the host's or QEMU's scheduling. The last holder has no
 * one to wait for. The critical section counts the hand-offs it sees (the previous holder
 * was the other CPU) as a check: every acquisition but the first is one.
 */
static void hand_side(uint64_t n, uint64_t me)
{
	for (uint64_t i = 0; i < n; i++) {
		spin_lock(&hand_lock);
		hand_count++;
		if (hand_last != me)
			hand_overs++;
		hand_last = me;
		while (hand_count < hand_total &&
		       (u16)(__atomic_load_n(&hand_lock.next, __ATOMIC_RELAXED) - hand_lock.owner) < 2)
			__asm__ __volatile__("pause");
		spin_unlock(&hand_lock);
	}
}

static void hand_remote(void *a)
{
	struct panel_wl *w = ((struct smp_arg *)a)->w;
	panel_barrier();
	model_region_begin();
	hand_side(w->param, 1);
	model_region_end();
	model_sample(w->param);
}

static uint64_t hand_run(struct panel_wl *w, uint64_t *ops)
{
	struct smp_arg a = { w };
	spin_lock_init(&hand_lock);
	hand_count = hand_overs = 0;
	hand_last = 2;
	hand_total = 2 * w->param;
	panel_smp_call(hand_remote, &a);
	panel_barrier();
	uint64_t t0 = panel_tstart();
	hand_side(w->param, 0);
	uint64_t t = panel_tstop(t0);
	panel_smp_join();
	if (hand_count != hand_total || hand_overs < hand_total - 1) {
		fprintf(stderr, "panel: ticket lock: %llu acquisitions, %llu hand-offs\n",
			(unsigned long long)hand_count, (unsigned long long)hand_overs);
		exit(3);
	}
	*ops = w->param;
	return t;
}

/* ---- zone lock: alloc.bulk10k on both CPUs at once; op = one batch per CPU ---- */

static uint64_t zone_remote_start, zone_remote_end;

static void zone_remote(void *a)
{
	struct panel_wl *w = ((struct smp_arg *)a)->w;
	panel_bulk_batch(w->param, 0);
	panel_barrier();
	zone_remote_start = native_tsc();
	panel_bulk_batch(w->param, 1);
	zone_remote_end = native_tsc();
	model_sample(1);
}

/*
 * The two batches must run at the same time to contend: natively, a round in which the
 * host ran them one after the other (less than 80 % overlap) is run again, up to 4 times.
 * Under the model there is one try: both vCPUs advance together, and a timed region run
 * twice would add up in the model's figure.
 */
static uint64_t zone_run(struct panel_wl *w, uint64_t *ops)
{
	struct smp_arg a = { w };
	uint64_t t = 0;
	for (int tries = 0; tries < (panel_model ? 1 : 4); tries++) {
		panel_smp_call(zone_remote, &a);
		panel_bulk_batch(w->param, 0);
		panel_barrier();
		uint64_t s0 = native_tsc();
		t = panel_bulk_batch(w->param, 1);
		uint64_t e0 = native_tsc();
		panel_smp_join();
		uint64_t lo = s0 > zone_remote_start ? s0 : zone_remote_start;
		uint64_t hi = e0 < zone_remote_end ? e0 : zone_remote_end;
		uint64_t span = (e0 - s0) > (zone_remote_end - zone_remote_start) ? e0 - s0
										 : zone_remote_end - zone_remote_start;
		if (hi > lo && (hi - lo) * 5 >= span * 4)
			break;
	}
	*ops = 1;
	return t;
}

static int smp_setup(struct panel_wl *w)
{
	(void)w;
	panel_smp_start();
	return 0;
}

static int zone_setup(struct panel_wl *w)
{
	(void)w;
	panel_smp_start();
	return panel_zone_init();
}

struct panel_wl panel_smp[] = {
	{ "pingpong_cas", "smp", "CAS ping-pong on one line between CPU 0 and 1, pause in the spin; op = one round trip",
	  2, smp_setup, pp_run, 5000, 0 },
	{ "ticket_handoff", "smp", "one ticket spinlock (kernel/spinlock.h) handed from CPU to CPU at every release; op = one acquisition (one hand-off)",
	  2, smp_setup, hand_run, 5000, 0 },
	{ "zone_lock2", "smp", "alloc.bulk10k on CPU 0 and 1 at once, one zone lock; op = one batch per CPU", 2,
	  zone_setup, zone_run, 10000, 0 },
	{ 0 },
};
