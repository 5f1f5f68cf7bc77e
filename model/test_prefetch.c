/*
 * Host unit test of the L2 stream prefetcher (prefetch.c) alone and as coherence.c drives
 * it (prefetch on): the exact levels a scan's accesses are served from, on one CPU and
 * across CPUs. Run by make host-test.
 */
#include <string.h>
#include "tests/host/htest.h"
#include "model/coherence.h"

#define NCPU 2
enum { L1 = 4, L2 = 12, LLC = 40, MEM = 200, C2C = 70, AHEAD = 20, STREAMS = 4 };

/* the first line of 4 KiB page n */
static u64 pg(u64 n)
{
	return n * PF_PAGE_LINES;
}

/* ---- the detector alone ---- */

HTEST(pf_two_consecutive_misses_make_a_stream_that_fetches_ahead_once)
{
	struct prefetcher pf;
	u64 out[PF_PAGE_LINES];
	HT_ASSERT(!pf_init(&pf, STREAMS, AHEAD));
	u64 b = pg(7);
	HT_EXPECT_EQ(pf_observe(&pf, b + 3, out), 0);
	HT_EXPECT_EQ(pf_observe(&pf, b + 4, out), AHEAD);	/* the second miss: a stream */
	HT_EXPECT_EQ(out[0], b + 5);
	HT_EXPECT_EQ(out[AHEAD - 1], b + 4 + AHEAD);
	HT_EXPECT_EQ(pf_observe(&pf, b + 5, out), 1);	/* only the one line not asked for yet */
	HT_EXPECT_EQ(out[0], b + 5 + AHEAD);
	HT_EXPECT_EQ(pf_observe(&pf, b + 5, out), 0);	/* the same line again */
	HT_EXPECT_EQ(pf_observe(&pf, b + 7, out), 2);	/* a line skipped (it hit the L1d) */
	HT_EXPECT_EQ(out[0], b + 6 + AHEAD);
	HT_EXPECT_EQ(out[1], b + 7 + AHEAD);
	/* a jump further than the distance ends the stream; a step back starts one backwards */
	HT_EXPECT_EQ(pf_observe(&pf, b + 8 + AHEAD, out), 0);
	HT_EXPECT_EQ(pf_observe(&pf, b + 7 + AHEAD, out), AHEAD);
	HT_EXPECT_EQ(out[0], b + 6 + AHEAD);
	HT_EXPECT_EQ(out[AHEAD - 1], b + 7);
	pf_free(&pf);
}

HTEST(pf_streams_stop_at_the_page_edge)
{
	struct prefetcher pf;
	u64 out[PF_PAGE_LINES];
	HT_ASSERT(!pf_init(&pf, STREAMS, AHEAD));
	u64 b = pg(3);
	unsigned total = 0;
	for (u64 i = 0; i < 2 * PF_PAGE_LINES; i++) {
		unsigned n = pf_observe(&pf, b + i, out);
		for (unsigned k = 0; k < n; k++)
			HT_EXPECT(out[k] / PF_PAGE_LINES == (b + i) / PF_PAGE_LINES);
		HT_EXPECT_EQ(n, i % PF_PAGE_LINES == 0 ? 0 : i % PF_PAGE_LINES == 1 ? AHEAD
			     : i % PF_PAGE_LINES + AHEAD < PF_PAGE_LINES ? 1 : 0);
		total += n;
	}
	HT_EXPECT_EQ(total, 2 * (PF_PAGE_LINES - 2));	/* each page: all but its first two lines */
	/* backwards from the top of a page: never below its first line */
	b = pg(9);
	total = 0;
	for (int64_t i = PF_PAGE_LINES - 1; i >= 0; i--) {
		unsigned n = pf_observe(&pf, b + (u64)i, out);
		for (unsigned k = 0; k < n; k++)
			HT_EXPECT(out[k] >= b && out[k] < b + (u64)i);
		total += n;
	}
	HT_EXPECT_EQ(total, PF_PAGE_LINES - 2);
	/* a stream that ends at the edge asks for nothing past it */
	b = pg(11);
	HT_EXPECT_EQ(pf_observe(&pf, b + PF_PAGE_LINES - 3, out), 0);
	HT_EXPECT_EQ(pf_observe(&pf, b + PF_PAGE_LINES - 2, out), 1);
	HT_EXPECT_EQ(out[0], b + PF_PAGE_LINES - 1);
	HT_EXPECT_EQ(pf_observe(&pf, b + PF_PAGE_LINES - 1, out), 0);
	pf_free(&pf);
}

HTEST(pf_lines_without_a_sequential_step_make_no_stream)
{
	struct prefetcher pf;
	u64 out[PF_PAGE_LINES];
	HT_ASSERT(!pf_init(&pf, STREAMS, AHEAD));
	/* pseudo-random lines over 8 pages; a line one step from its page's previous one is
	 * left out, so no two misses in a page are consecutive */
	u64 last[8], x = 12345;
	for (int p = 0; p < 8; p++)
		last[p] = ~0ull;
	unsigned used = 0, n = 0;
	for (int i = 0; i < 20000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		u64 line = (x >> 33) % (8 * PF_PAGE_LINES), p = line / PF_PAGE_LINES;
		if (line + 1 == last[p] || line == last[p] + 1)
			continue;
		last[p] = line;
		used++;
		n += pf_observe(&pf, line, out);
	}
	HT_EXPECT(used > 15000);
	HT_EXPECT_EQ(n, 0);
	pf_free(&pf);
}

HTEST(pf_streams_bounds_the_pages_tracked_least_recently_used_first)
{
	struct prefetcher pf;
	u64 out[PF_PAGE_LINES];
	/* three interleaved scans: with three entries each becomes a stream ... */
	HT_ASSERT(!pf_init(&pf, 3, AHEAD));
	unsigned n = 0;
	for (u64 i = 0; i < 8; i++)
		for (u64 p = 0; p < 3; p++)
			n += pf_observe(&pf, pg(p) + i, out);
	HT_EXPECT_EQ(n, 3 * (AHEAD + 6));
	pf_free(&pf);
	/* ... with two, each page's entry is gone before its next line comes */
	HT_ASSERT(!pf_init(&pf, 2, AHEAD));
	n = 0;
	for (u64 i = 0; i < 8; i++)
		for (u64 p = 0; p < 3; p++)
			n += pf_observe(&pf, pg(p) + i, out);
	HT_EXPECT_EQ(n, 0);
	/* the least recently used entry goes, not the oldest: A, B, A's stream, then C
	 * replaces B, so A's stream goes on and B starts over */
	u64 a = pg(20), b = pg(21), c = pg(22);
	HT_EXPECT_EQ(pf_observe(&pf, a, out), 0);
	HT_EXPECT_EQ(pf_observe(&pf, b, out), 0);
	HT_EXPECT_EQ(pf_observe(&pf, a + 1, out), AHEAD);
	HT_EXPECT_EQ(pf_observe(&pf, c, out), 0);
	HT_EXPECT_EQ(pf_observe(&pf, a + 2, out), 1);
	HT_EXPECT_EQ(pf_observe(&pf, b + 1, out), 0);
	pf_free(&pf);
	/* no streams or no distance: never a prefetch */
	HT_ASSERT(!pf_init(&pf, 0, AHEAD));
	HT_EXPECT_EQ(pf_observe(&pf, a, out) + pf_observe(&pf, a + 1, out), 0);
	pf_free(&pf);
	HT_ASSERT(!pf_init(&pf, STREAMS, 0));
	HT_EXPECT_EQ(pf_observe(&pf, a, out) + pf_observe(&pf, a + 1, out), 0);
	pf_free(&pf);
}

/* ---- through coherence.c (coh_access), one CPU and two ---- */

static struct cpu_acct acct[NCPU];
static struct cache l1[NCPU], l2[NCPU];
static unsigned ncpu;

static u64 t_now(unsigned cpu)
{
	return acct_clock(&acct[cpu], NULL);
}

static void t_set(unsigned cpu, u64 t, int part)
{
	acct_clock_set(&acct[cpu], t, part);
}

static const struct coh_clock t_clock = { t_now, t_set, NULL };

/* L1d 16 lines, L2 256 (a page fits), LLC 1024; both CPUs on one socket */
static int setup(unsigned n, bool prefetch)
{
	struct profile p;
	memset(&p, 0, sizeof(p));
	p.ghz_x100 = 200, p.base_cpi_x100 = 100;
	p.l1d_kib = 1, p.l1d_ways = 2, p.l1d_lat = L1;
	p.l2_kib = 16, p.l2_ways = 4, p.l2_lat = L2;
	p.llc_kib = 64, p.llc_ways = 8, p.llc_lat = LLC;
	p.mem_lat = MEM;
	p.c2c_lat = C2C, p.c2c_remote_lat = 2 * C2C, p.sockets = 1, p.cores_per_socket = 2;
	p.prefetch_lines = AHEAD, p.prefetch_streams = STREAMS;
	clock_init(&p, false);
	memset(acct, 0, sizeof(acct));
	if (coh_init(&p, n, true, prefetch, &t_clock))
		return -1;
	for (unsigned c = 0; c < n; c++) {
		if (cache_init(&l1[c], p.l1d_kib, p.l1d_ways) || cache_init(&l2[c], p.l2_kib, p.l2_ways))
			return -1;
		coh_cpu_init(c, &l1[c], &l2[c], acct[c].ev);
	}
	ncpu = n;
	return 0;
}

static void teardown(void)
{
	for (unsigned c = 0; c < ncpu; c++)
		cache_free(&l1[c]), cache_free(&l2[c]);
	coh_free();
}

/* A block of cpu starts, as the glue's block callback starts it (a switch is counted). */
static void run(unsigned cpu)
{
	static unsigned last = ~0u;
	if (cpu != last) {
		last = cpu;
		coh_switched();
	}
	coh_block_start(cpu);
}

#define LOAD(c, l) coh_access(c, l, false, false)
#define STORE(c, l) coh_access(c, l, true, false)

HTEST(pf_sequential_scan_hits_l2_after_two_misses)
{
	for (int desc = 0; desc <= 1; desc++) {
		HT_ASSERT(!setup(1, true));
		u64 b = pg(5), mem = 0, l2hit = 0, other = 0;
		for (u64 i = 0; i < PF_PAGE_LINES; i++) {
			u64 c = LOAD(0, desc ? b + PF_PAGE_LINES - 1 - i : b + i);
			if (c == MEM)
				mem++;
			else if (c == L2)
				l2hit++;
			else
				other++;
			if (i < 2)
				HT_EXPECT_EQ(c, MEM);
		}
		HT_EXPECT_EQ(mem, 2);
		HT_EXPECT_EQ(l2hit, PF_PAGE_LINES - 2);
		HT_EXPECT_EQ(other, 0);
		HT_EXPECT_EQ(acct[0].ev[EV_PREFETCH], PF_PAGE_LINES - 2);
		HT_EXPECT_EQ(acct[0].ev[EV_L1D_MISS], PF_PAGE_LINES);
		HT_EXPECT_EQ(acct[0].ev[EV_L2_MISS], 2);
		HT_EXPECT_EQ(acct[0].ev[EV_LLC_MISS], 2);
		/* the prefetches filled the LLC too; the next page was not touched */
		for (u64 i = 0; i < PF_PAGE_LINES; i++)
			HT_EXPECT(cache_contains(coh.cpu[0].h.llc, b + i));
		HT_EXPECT(!cache_contains(&l2[0], desc ? b - 1 : b + PF_PAGE_LINES));
		HT_EXPECT(!cache_contains(coh.cpu[0].h.llc, desc ? b - 1 : b + PF_PAGE_LINES));
		/* a second scan finds the page in the L2 (the L1d holds 16 lines): the stream
		 * forms again but fetches nothing, the lines being there */
		for (u64 i = 0; i < PF_PAGE_LINES; i++)
			HT_EXPECT_EQ(LOAD(0, desc ? b + PF_PAGE_LINES - 1 - i : b + i), L2);
		HT_EXPECT_EQ(acct[0].ev[EV_PREFETCH], PF_PAGE_LINES - 2);
		/* the next page starts its own stream with two misses */
		u64 n = desc ? b - PF_PAGE_LINES : b + PF_PAGE_LINES;
		HT_EXPECT_EQ(LOAD(0, desc ? n + PF_PAGE_LINES - 1 : n), MEM);
		HT_EXPECT_EQ(LOAD(0, desc ? n + PF_PAGE_LINES - 2 : n + 1), MEM);
		HT_EXPECT_EQ(LOAD(0, desc ? n + PF_PAGE_LINES - 3 : n + 2), L2);
		teardown();
	}
}

/* A rep string's lines do not train the streamer: a page cleared from memory costs a
 * memory access a line (its calibrated price per line from there applies), and a load
 * stream after it still forms from its own two misses. */
HTEST(pf_rep_string_lines_do_not_train_the_streamer)
{
	HT_ASSERT(!setup(1, true));
	u64 b = pg(5);
	for (u64 i = 0; i < PF_PAGE_LINES; i++)
		HT_EXPECT_EQ(coh_access_rep(0, b + i, true), MEM);
	HT_EXPECT_EQ(acct[0].ev[EV_PREFETCH], 0);
	HT_EXPECT_EQ(acct[0].ev[EV_L2_MISS], PF_PAGE_LINES);
	/* the same page read by plain loads now: in the L2 (the L1d holds 16 lines) */
	HT_EXPECT_EQ(LOAD(0, b), L2);
	/* the next page: loads make a stream at once, as before */
	u64 n = b + PF_PAGE_LINES;
	HT_EXPECT_EQ(LOAD(0, n), MEM);
	HT_EXPECT_EQ(LOAD(0, n + 1), MEM);
	HT_EXPECT_EQ(LOAD(0, n + 2), L2);
	HT_EXPECT(acct[0].ev[EV_PREFETCH] > 0);
	teardown();
}

HTEST(pf_prefetch_off_leaves_the_hierarchy_alone)
{
	HT_ASSERT(!setup(2, false));
	run(0);
	u64 b = pg(5);
	for (u64 i = 0; i < PF_PAGE_LINES; i++)
		HT_EXPECT_EQ(LOAD(0, b + i), MEM);
	HT_EXPECT_EQ(acct[0].ev[EV_PREFETCH], 0);
	teardown();
}

HTEST(pf_random_lines_are_not_prefetched)
{
	HT_ASSERT(!setup(1, true));
	/* pseudo-random lines of three pages (all tracked); a line that would miss the L1d
	 * one step from its page's previous miss is left out */
	u64 last[3] = { ~0ull, ~0ull, ~0ull }, x = 777, used = 0;
	for (int i = 0; i < 5000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		u64 off = (x >> 33) % (3 * PF_PAGE_LINES), p = off / PF_PAGE_LINES, line = pg(40) + off;
		if (!cache_contains(&l1[0], line) && line != coh.cpu[0].last_line) {
			if (off + 1 == last[p] || off == last[p] + 1)
				continue;
			last[p] = off;
		}
		used++;
		LOAD(0, line);
	}
	HT_EXPECT(used > 4000);
	HT_EXPECT(acct[0].ev[EV_L1D_MISS] > 3000);
	HT_EXPECT_EQ(acct[0].ev[EV_PREFETCH], 0);
	teardown();
}

HTEST(pf_line_modified_elsewhere_is_not_prefetched)
{
	HT_ASSERT(!setup(2, true));
	u64 b = pg(5), m = b + 5;
	run(1);
	HT_EXPECT_EQ(STORE(1, m), MEM);
	HT_EXPECT_EQ(coh_owner(m), 1);
	run(0);
	LOAD(0, b);
	LOAD(0, b + 1);	/* a stream: lines 2..21, but not 5 */
	HT_EXPECT_EQ(acct[0].ev[EV_PREFETCH], AHEAD - 1);
	HT_EXPECT(!cache_contains(&l2[0], m));
	HT_EXPECT(cache_contains(&l2[0], m - 1) && cache_contains(&l2[0], m + 1));
	HT_EXPECT_EQ(coh_owner(m), 1);	/* still modified there */
	HT_EXPECT_EQ(LOAD(0, m - 1), L2);
	HT_EXPECT_EQ(LOAD(0, m), C2C);	/* the demand load takes it from CPU 1 */
	HT_EXPECT_EQ(acct[0].ev[EV_C2C], 1);
	teardown();
}

HTEST(pf_prefetched_line_is_invalidated_by_a_store_elsewhere)
{
	HT_ASSERT(!setup(2, true));
	u64 b = pg(5), s = b + 9;
	/* s has a directory entry that names CPU 1 alone, and nobody holds it modified */
	run(1);
	STORE(1, s);
	run(0);
	run(1);
	cache_invalidate(&l1[1], s);
	cache_invalidate(&l2[1], s);	/* CPU 1's copy is gone: clean in the LLC */
	LOAD(1, b + 40);	/* (and not its L1's MRU line any more) */
	HT_EXPECT_EQ(coh_owner(s), 1);
	run(0);
	LOAD(0, b);
	LOAD(0, b + 1);
	HT_EXPECT(cache_contains(&l2[0], s));	/* prefetched: CPU 1 no longer holds it */
	HT_EXPECT_EQ(acct[0].ev[EV_PREFETCH], AHEAD);
	run(1);
	STORE(1, s);	/* must find CPU 0's prefetched copy */
	HT_EXPECT(!cache_contains(&l2[0], s));
	HT_EXPECT_EQ(acct[1].ev[EV_COH_INVAL], 1);
	run(0);
	HT_EXPECT_EQ(LOAD(0, s), C2C);	/* not a stale L2 hit */
	teardown();
}

int main(void)
{
	return htest_main("prefetch");
}
