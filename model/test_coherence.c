/*
 * Host unit test of the cross-CPU model (coherence.c) with the real clock (clock.c), on
 * synthetic access streams: the exact cycles a small profile gives transfers, RFOs,
 * atomics, causal reads, waits and IPIs. Run by make host-test.
 */
#include <string.h>
#include "tests/host/htest.h"
#include "model/coherence.h"

#define NCPU 4
/* lines in distinct cache sets */
enum { LA = 1, LB, LC, LF, LG, LH, LX, LY };

/* the test profile: 1 cycle per instruction; two CPUs per socket */
enum { L1 = 4, L2 = 12, LLC = 40, MEM = 200, C2C = 70, C2C_REMOTE = 150, IPI = 1000 };

static struct cpu_acct acct[NCPU];
static struct cache l1[NCPU], l2[NCPU];
static unsigned ncpu, last_run;

static u64 t_now(unsigned cpu)
{
	return acct_clock(&acct[cpu], NULL);
}

static void t_set(unsigned cpu, u64 t, int part)
{
	acct_clock_set(&acct[cpu], t, part);
}

static const struct coh_clock t_clock = { t_now, t_set, NULL };

/* A core with a store buffer (coh_clock.store_floor): from clock t_floor_from on, its
 * older stores drain by t_floor. */
static u64 t_floor, t_floor_from;
static u64 t_store_floor(unsigned cpu)
{
	return t_now(cpu) >= t_floor_from ? t_floor : 0;
}
static const struct coh_clock t_clock_sb = { t_now, t_set, t_store_floor };
static const struct coh_clock *t_clk = &t_clock;

static struct profile test_profile(void)
{
	struct profile p;
	memset(&p, 0, sizeof(p));
	p.ghz_x100 = 200, p.base_cpi_x100 = 100;
	p.l1d_kib = 1, p.l1d_ways = 2, p.l1d_lat = L1;
	p.l2_kib = 2, p.l2_ways = 2, p.l2_lat = L2;
	p.llc_kib = 4, p.llc_ways = 4, p.llc_lat = LLC;
	p.mem_lat = MEM;
	p.c2c_lat = C2C, p.c2c_remote_lat = C2C_REMOTE, p.sockets = 2, p.cores_per_socket = 2;
	p.ipi_latency = IPI;
	return p;
}

static int setup(unsigned n, bool causal)
{
	struct profile p = test_profile();
	clock_init(&p, false);
	memset(acct, 0, sizeof(acct));
	if (coh_init(&p, n, causal, false, t_clk))
		return -1;
	for (unsigned c = 0; c < n; c++) {
		if (cache_init(&l1[c], p.l1d_kib, p.l1d_ways) || cache_init(&l2[c], p.l2_kib, p.l2_ways))
			return -1;
		coh_cpu_init(c, &l1[c], &l2[c], acct[c].ev);
	}
	ncpu = n;
	last_run = ~0u;
	return 0;
}

static void teardown(void)
{
	for (unsigned c = 0; c < ncpu; c++)
		cache_free(&l1[c]), cache_free(&l2[c]);
	coh_free();
	t_clk = &t_clock;	/* a test that set the store-buffer clock and failed early */
}

/* A block of n instructions runs on cpu, as the glue's block callback runs it. */
static void run(unsigned cpu, u32 insns)
{
	if (cpu != last_run) {
		last_run = cpu;
		coh_switched();
	}
	coh_block_start(cpu);
	struct tb_counts tc;
	memset(&tc, 0, sizeof(tc));
	tc.insns = insns;
	acct_add_block(&acct[cpu], &tc);
}

/* An access of the running cpu, booked as the glue's memory callback books it. */
static u64 access(unsigned cpu, u64 line, bool store, bool rmw)
{
	acct[cpu].ev[EV_MEM_ACCESS]++;
	u64 d = coh_access(cpu, line, store, rmw);
	acct[cpu].ev[EV_CYC_CACHE] += d;
	acct[cpu].cyc += d;
	return d;
}
#define LOAD(c, l) access(c, l, false, false)
#define STORE(c, l) access(c, l, true, false)

static u64 clk(unsigned cpu)
{
	return acct_clock(&acct[cpu], NULL);
}

static bool parts_add_up(unsigned cpu)
{
	int64_t p[NR_PART], sum = 0;
	acct_parts(&acct[cpu], p, NULL);
	for (int k = 0; k < NR_PART; k++)
		sum += p[k];
	return sum == (int64_t)clk(cpu);
}

HTEST(coh_load_of_modified_line_is_a_transfer_and_shares_it)
{
	HT_ASSERT(!setup(4, true));
	run(0, 100);
	HT_EXPECT_EQ(STORE(0, LA), MEM);
	HT_EXPECT_EQ(coh_owner(LA), 0);
	run(1, 1000);	/* past the store in time: no wait */
	HT_EXPECT_EQ(LOAD(1, LA), C2C);
	HT_EXPECT_EQ(acct[1].ev[EV_C2C], 1);
	HT_EXPECT_EQ(acct[1].ev[EV_C2C_REMOTE], 0);
	HT_EXPECT_EQ(acct[1].ev[EV_WAIT], 0);
	HT_EXPECT_EQ(coh_owner(LA), -1);	/* shared now: the next reader pays no transfer */
	run(2, 1000);
	HT_EXPECT_EQ(LOAD(2, LA), C2C_REMOTE);	/* socket 0's LLC, no transfer */
	HT_EXPECT_EQ(acct[2].ev[EV_C2C], 0);
	HT_EXPECT_EQ(acct[2].ev[EV_LLC_REMOTE], 1);
	/* across sockets: CPU 2 holds LB modified */
	STORE(2, LB);
	run(0, 3000);
	HT_EXPECT_EQ(LOAD(0, LB), C2C_REMOTE);
	HT_EXPECT_EQ(acct[0].ev[EV_C2C], 1);
	HT_EXPECT_EQ(acct[0].ev[EV_C2C_REMOTE], 1);
	for (unsigned c = 0; c < 4; c++)
		HT_EXPECT(parts_add_up(c));
	teardown();
}

HTEST(coh_store_to_shared_line_is_an_rfo_that_invalidates)
{
	HT_ASSERT(!setup(4, true));
	run(0, 10);
	HT_EXPECT_EQ(LOAD(0, LA), MEM);
	run(1, 10);
	HT_EXPECT_EQ(LOAD(1, LA), LLC);
	run(2, 10);
	HT_EXPECT_EQ(LOAD(2, LA), C2C_REMOTE);
	run(0, 10);
	u64 c = STORE(0, LA);	/* an L1 hit for CPU 0 alone */
	HT_EXPECT(c >= LLC);
	HT_EXPECT_EQ(c, LLC);
	HT_EXPECT_EQ(acct[0].ev[EV_RFO_INVAL], 1);
	HT_EXPECT_EQ(acct[0].ev[EV_COH_INVAL], 2);
	HT_EXPECT_EQ(acct[0].ev[EV_C2C], 0);
	for (unsigned k = 1; k <= 2; k++)
		HT_EXPECT(!cache_contains(&l1[k], LA) && !cache_contains(&l2[k], LA));
	HT_EXPECT(!cache_contains(&coh.llcs[1], LA));	/* the other socket's LLC too */
	HT_EXPECT_EQ(coh_owner(LA), 0);
	/* a second store with no other CPU run in between finds nothing to invalidate */
	HT_EXPECT_EQ(STORE(0, LA), L1);
	HT_EXPECT_EQ(acct[0].ev[EV_RFO_INVAL], 1);
	HT_EXPECT(parts_add_up(0));
	teardown();
}

HTEST(coh_atomic_on_modified_line_is_one_transfer)
{
	HT_ASSERT(!setup(2, true));
	run(0, 10);
	STORE(0, LA);
	STORE(0, LB);
	run(1, 1000);
	/* lock-prefixed read-modify-write: the load half takes the line exclusive */
	HT_EXPECT_EQ(access(1, LA, false, true), C2C);
	HT_EXPECT_EQ(access(1, LA, true, false), L1);
	HT_EXPECT_EQ(acct[1].ev[EV_C2C], 1);
	HT_EXPECT_EQ(acct[1].ev[EV_RFO_INVAL], 0);
	HT_EXPECT_EQ(coh_owner(LA), 1);
	HT_EXPECT(!cache_contains(&l1[0], LA) && !cache_contains(&l2[0], LA));
	/* a plain load then store of such a line: a transfer, then an RFO */
	HT_EXPECT_EQ(LOAD(1, LB), C2C);
	HT_EXPECT_EQ(STORE(1, LB), LLC);
	HT_EXPECT_EQ(acct[1].ev[EV_RFO_INVAL], 1);
	HT_EXPECT(parts_add_up(1));
	teardown();
}

HTEST(coh_causal_read_waits_for_a_store_in_its_future)
{
	for (int causal = 1; causal >= 0; causal--) {
		HT_ASSERT(!setup(2, causal));
		run(0, 10000);
		u64 w = clk(0);	/* the store happens at this clock */
		STORE(0, LC);
		run(1, 100);
		u64 before = clk(1);
		u64 c = LOAD(1, LC);
		if (causal) {
			HT_EXPECT_EQ(c, 0);	/* in the clock already */
			HT_EXPECT_EQ(clk(1), w + C2C * 100);
			HT_EXPECT_EQ(acct[1].ev[EV_WAIT], 1);
			HT_EXPECT_EQ(acct[1].ev[EV_WAIT_CYCLES], (w + C2C * 100 - before) / 100);
			HT_EXPECT(acct[1].part_wait > 0);
		} else {
			HT_EXPECT_EQ(c, C2C);	/* the read sees the future */
			HT_EXPECT_EQ(clk(1), before + C2C * 100);
			HT_EXPECT_EQ(acct[1].ev[EV_WAIT], 0);
		}
		HT_EXPECT_EQ(acct[1].ev[EV_C2C], 1);
		HT_EXPECT(parts_add_up(1));
		teardown();
	}
}

/* CPU 1 spins on LF (a load, a pause, more rounds) until CPU 0 stores to it at store_at
 * instructions; returns CPU 1's clock at the load the wait starts at. */
static u64 spin_until_store(int *ht_failures, u32 store_at, u64 *w)
{
	run(0, 100);
	STORE(0, LF);
	run(1, 1000);
	u64 ld_at = clk(1);
	HT_EXPECT_EQ(LOAD(1, LF), C2C);
	coh_pause(1);
	HT_EXPECT(coh.cpu[1].waiting);
	for (int i = 0; i < 5; i++) {	/* the spin: charged nothing in the end */
		run(1, 20);
		HT_EXPECT_EQ(LOAD(1, LF), L1);
		coh_pause(1);
	}
	run(0, store_at);
	*w = clk(0);
	HT_EXPECT_EQ(STORE(0, LF), LLC);	/* an RFO: CPU 1 shares it */
	run(1, 20);
	HT_EXPECT_EQ(LOAD(1, LF), 0);	/* wakes: the transfer is in the clock */
	HT_EXPECT(!coh.cpu[1].waiting);
	return ld_at;
}

HTEST(coh_pause_wait_woken_by_a_later_store)
{
	HT_ASSERT(!setup(2, true));
	u64 w;
	u64 ld_at = spin_until_store(ht_failures, 5000, &w);	/* the store is after the wait began */
	HT_EXPECT(w > ld_at);
	HT_EXPECT_EQ(clk(1), w + C2C * 100);
	HT_EXPECT_EQ(acct[1].ev[EV_INSNS], 1000);	/* the spin's instructions are put back */
	HT_EXPECT_EQ(acct[1].ev[EV_MEM_ACCESS], 1);	/* the check (the load that woke was counted in the spin) */
	HT_EXPECT_EQ(acct[1].ev[EV_C2C], 2);
	HT_EXPECT_EQ(acct[1].ev[EV_WAIT], 1);
	HT_EXPECT_EQ(acct[1].ev[EV_WAIT_CYCLES], (w + C2C * 100 - ld_at) / 100);
	HT_EXPECT(parts_add_up(1));
	teardown();
}

HTEST(coh_pause_wait_woken_by_an_earlier_store)
{
	HT_ASSERT(!setup(2, true));
	u64 w;
	u64 ld_at = spin_until_store(ht_failures, 100, &w);	/* CPU 0 is behind the wait's start */
	HT_EXPECT(w < ld_at);
	HT_EXPECT_EQ(clk(1), ld_at + C2C * 100);
	HT_EXPECT_EQ(acct[1].ev[EV_INSNS], 1000);
	HT_EXPECT_EQ(acct[1].ev[EV_WAIT_CYCLES], C2C);
	HT_EXPECT(parts_add_up(1));
	teardown();
}

/* With a store buffer a store is visible when it drains: after its own read for ownership
 * (CPU 1 shares the line: an RFO at the LLC's latency), and not before the CPU's older
 * stores have drained. */
HTEST(coh_store_visible_when_it_drains)
{
	t_clk = &t_clock_sb;
	t_floor = t_floor_from = 0;
	HT_ASSERT(!setup(2, true));
	u64 w;
	spin_until_store(ht_failures, 5000, &w);
	HT_EXPECT_EQ(clk(1), w + (LLC + C2C) * 100);
	HT_EXPECT(parts_add_up(1));
	teardown();
	/* an older store drains later than this one's RFO: the line waits for it */
	t_clk = &t_clock_sb;
	HT_ASSERT(!setup(2, true));
	t_floor = 5100 * 100 + 1000 * 100, t_floor_from = 5000 * 100;	/* the second store */
	spin_until_store(ht_failures, 5000, &w);
	HT_EXPECT(t_floor > w + LLC * 100);
	HT_EXPECT_EQ(clk(1), t_floor + C2C * 100);
	HT_EXPECT(parts_add_up(1));
	teardown();
	/* stores drain in program order: an L1-hit store is visible no earlier than the CPU's
	 * previous store, whose RFO is dear. The core does not wait for either (the raw
	 * coh_access calls leave CPU 0's clock where it is, as an out-of-order core's commit
	 * does), so both start at w. */
	t_clk = &t_clock_sb;
	HT_ASSERT(!setup(3, true));
	t_floor = t_floor_from = 0;
	run(0, 10);
	STORE(0, LF);	/* CPU 0 holds LF modified: its next store there is an L1 hit */
	run(2, 10);
	LOAD(2, LG);	/* CPU 2 shares LG: CPU 0's store there is a read for ownership */
	run(1, 100);
	u64 ld = clk(1);
	LOAD(1, LH);
	coh_pause(1);
	run(0, 5000);
	w = clk(0);
	HT_EXPECT_EQ(coh_access(0, LG, true, false), MEM);
	HT_EXPECT_EQ(coh_access(0, LF, true, false), L1);
	run(1, 20);
	HT_EXPECT_EQ(LOAD(1, LF), 0);	/* wakes on LF, which CPU 0 stored after the wait began */
	HT_EXPECT(w > ld);
	HT_EXPECT_EQ(clk(1), w + (MEM + C2C) * 100);	/* not w + (L1 + C2C) */
	teardown();
	t_clk = &t_clock;
}

HTEST(coh_wait_abandoned_at_a_marker_charges_nothing)
{
	HT_ASSERT(!setup(2, true));
	run(1, 500);
	LOAD(1, LG);
	run(1, 10);
	u64 before = clk(1), insns = acct[1].ev[EV_INSNS], cache = acct[1].ev[EV_CYC_CACHE];
	HT_EXPECT_EQ(LOAD(1, LH), MEM);
	coh_pause(1);
	for (int i = 0; i < 3; i++) {
		run(1, 50);
		LOAD(1, LH);
		coh_pause(1);
	}
	HT_EXPECT(clk(1) > before);
	coh_wait_abandon(1);
	HT_EXPECT(!coh.cpu[1].waiting);
	HT_EXPECT_EQ(clk(1), before);
	HT_EXPECT_EQ(acct[1].ev[EV_INSNS], insns);
	HT_EXPECT_EQ(acct[1].ev[EV_CYC_CACHE], cache);
	HT_EXPECT_EQ(acct[1].ev[EV_WAIT], 0);
	HT_EXPECT(parts_add_up(1));
	/* a HLT abandons a wait the same way */
	LOAD(1, LG);
	before = clk(1);
	LOAD(1, LH);
	coh_pause(1);
	run(1, 70);
	coh_hlt(1);
	HT_EXPECT_EQ(clk(1), before);
	HT_EXPECT(parts_add_up(1));
	teardown();
}

HTEST(coh_ipi_to_a_halted_or_waiting_cpu_moves_its_clock)
{
	for (int waiting = 0; waiting <= 1; waiting++) {
		HT_ASSERT(!setup(2, true));
		run(1, 1000);
		if (waiting) {
			LOAD(1, LH);
			coh_pause(1);
			run(1, 300);	/* the spin */
		} else {
			coh_hlt(1);
		}
		run(0, 5000);
		u64 send = clk(0);
		coh_send_ipi(0, 0, 1, true);	/* fixed, physical destination 1 */
		HT_EXPECT_EQ(acct[0].ev[EV_IPI_SENT], 1);
		HT_EXPECT(coh.cpu[1].ipi_pending);
		run(1, 0);	/* the handler's first block */
		HT_EXPECT(!coh.cpu[1].ipi_pending);
		HT_EXPECT(!coh.cpu[1].waiting);
		HT_EXPECT_EQ(clk(1), send + IPI * 100);
		HT_EXPECT_EQ(acct[1].ev[EV_IPI_WAIT_CYCLES], (send + IPI * 100 - 1000 * 100) / 100);
		HT_EXPECT_EQ(acct[1].ev[EV_IPI_BEHIND], 0);
		HT_EXPECT_EQ(coh.cpu[1].ipi_shift, 0);
		HT_EXPECT(acct[1].part_ipi > 0);
		HT_EXPECT_EQ(acct[1].ev[EV_INSNS], 1000);	/* a wait's spin is put back */
		HT_EXPECT(parts_add_up(1));
		teardown();
	}
}

HTEST(coh_ipi_to_a_running_cpu_behind_shifts_it_and_leaves_its_clock)
{
	HT_ASSERT(!setup(2, true));
	run(1, 1000);	/* running: neither halted nor waiting */
	run(0, 5000);
	u64 send = clk(0), arrive = send + IPI * 100;
	coh_send_ipi(0, 0, 1, true);
	run(1, 0);
	HT_EXPECT_EQ(clk(1), 1000 * 100);	/* not moved */
	HT_EXPECT_EQ(acct[1].ev[EV_IPI_BEHIND], 1);
	HT_EXPECT_EQ(acct[1].ev[EV_IPI_BEHIND_CYCLES], (arrive - 1000 * 100) / 100);
	HT_EXPECT_EQ(acct[1].ev[EV_IPI_WAIT_CYCLES], 0);
	HT_EXPECT_EQ(acct[1].part_ipi, 0);
	u64 shift = coh.cpu[1].ipi_shift;
	HT_EXPECT_EQ(shift, arrive - 1000 * 100);
	/* the handler's store is seen at the IPI's arrival: CPU 0, before it, waits for it */
	run(1, 10);
	u64 h = clk(1);
	STORE(1, LX);
	run(0, 10);
	HT_EXPECT(clk(0) < h + shift);
	HT_EXPECT_EQ(LOAD(0, LX), 0);
	HT_EXPECT_EQ(clk(0), h + shift + C2C * 100);
	HT_EXPECT_EQ(acct[0].ev[EV_WAIT], 1);
	/* after its IRET it is seen at its own clock again */
	coh_iret(1);
	run(1, 10);
	STORE(1, LY);
	run(0, 10);
	HT_EXPECT_EQ(LOAD(0, LY), C2C);
	HT_EXPECT_EQ(acct[0].ev[EV_WAIT], 1);
	HT_EXPECT(parts_add_up(0) && parts_add_up(1));
	teardown();
}

/* With a store buffer an IPI does not overtake its sender's stores: a store whose RFO is
 * dear (CPU 1 shares the line), made without moving the sender's clock as an out-of-order
 * core's commit does not, holds the IPI back until it is visible. */
HTEST(coh_ipi_leaves_after_the_senders_stores)
{
	t_clk = &t_clock_sb;
	t_floor = t_floor_from = 0;
	HT_ASSERT(!setup(2, true));
	run(1, 1000);
	LOAD(1, LG);
	coh_hlt(1);
	run(0, 5000);
	u64 send = clk(0);
	HT_EXPECT_EQ(coh_access(0, LG, true, false), LLC);	/* an RFO: CPU 1 shares LG */
	coh_send_ipi(0, 0, 1, true);
	run(1, 0);
	HT_EXPECT_EQ(clk(1), send + (LLC + IPI) * 100);	/* not send + IPI */
	teardown();
	t_clk = &t_clock;
}

HTEST(coh_ipi_shorthands_and_logical_destinations)
{
	HT_ASSERT(!setup(4, true));
	run(0, 10);
	coh_send_ipi(0, 3u << 18, 0, true);	/* all but self */
	HT_EXPECT(!coh.cpu[0].ipi_pending && coh.cpu[1].ipi_pending && coh.cpu[2].ipi_pending &&
		  coh.cpu[3].ipi_pending);
	HT_EXPECT_EQ(acct[0].ev[EV_IPI_SENT], 3);
	for (unsigned c = 1; c < 4; c++)
		run(c, 0);
	/* xAPIC flat logical: CPU n's LDR is 1 << (24 + n); mask 0x04 is CPU 2 */
	for (unsigned c = 0; c < 4; c++)
		coh.cpu[c].xapic_ldr = 1u << (24 + c);
	run(0, 10);
	coh_send_ipi(0, 1u << 11, 0x04, false);
	HT_EXPECT(!coh.cpu[1].ipi_pending && coh.cpu[2].ipi_pending && !coh.cpu[3].ipi_pending);
	teardown();
}

HTEST(coh_one_cpu_is_the_hierarchy_alone)
{
	HT_ASSERT(!setup(1, true));
	HT_EXPECT(!coh.dir);
	run(0, 10);
	HT_EXPECT_EQ(STORE(0, LA), MEM);
	HT_EXPECT_EQ(LOAD(0, LA), L1);
	HT_EXPECT_EQ(LOAD(0, LB), MEM);
	HT_EXPECT_EQ(LOAD(0, LA), L1);	/* still in L1: no lookup order changed */
	HT_EXPECT_EQ(acct[0].ev[EV_L1D_MISS], 2);
	HT_EXPECT_EQ(acct[0].ev[EV_LLC_MISS], 2);
	HT_EXPECT_EQ(coh_owner(LA), -1);
	HT_EXPECT(parts_add_up(0));
	teardown();
}

int main(void)
{
	return htest_main("coherence");
}
