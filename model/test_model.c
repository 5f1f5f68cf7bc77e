/*
 * Host unit test of the cost model's parts (no QEMU): caches, TLBs, the rep string line
 * filter, the instruction decoder, the profile parser and the vCPU identification table.
 * Run by make host-test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/host/htest.h"
#include "model/model.h"
#include "model/clock.h"
#include "model/core.h"

/* ---- caches ---- */

HTEST(cache_lru_eviction_order)
{
	struct cache c;
	HT_ASSERT(!cache_init(&c, 1, 4));	/* 16 lines: 4 sets x 4 ways */
	HT_EXPECT_EQ(c.sets, 4);
	/* lines 0, 4, 8, 12 share set 0 */
	for (u64 l = 0; l < 16; l += 4)
		HT_EXPECT(!cache_access(&c, l));
	HT_EXPECT(cache_access(&c, 0));		/* 0 becomes MRU; LRU is now 4 */
	HT_EXPECT(!cache_access(&c, 16));	/* evicts 4 */
	HT_EXPECT(!cache_contains(&c, 4));
	HT_EXPECT(cache_contains(&c, 0) && cache_contains(&c, 8) && cache_contains(&c, 12));
	HT_EXPECT(!cache_access(&c, 20));	/* then 8 */
	HT_EXPECT(!cache_contains(&c, 8));
	HT_EXPECT(cache_contains(&c, 12));
	/* other sets untouched */
	HT_EXPECT(!cache_contains(&c, 1));
	cache_free(&c);
}

HTEST(cache_set_indexing)
{
	struct cache c;
	HT_ASSERT(!cache_init(&c, 32, 8));	/* 512 lines, 64 sets: mask */
	HT_EXPECT_EQ(c.set_mask, 63);
	HT_EXPECT_EQ(cache_set(&c, 65), 1);
	cache_free(&c);
	HT_ASSERT(!cache_init(&c, 11, 11));	/* 176 lines, 16 sets */
	HT_EXPECT_EQ(c.sets, 16);
	cache_free(&c);
	HT_ASSERT(!cache_init(&c, 3, 4));	/* 48 lines, 12 sets: modulo */
	HT_EXPECT_EQ(c.sets, 12);
	HT_EXPECT_EQ(c.set_mask, 0);
	HT_EXPECT_EQ(cache_set(&c, 12), 0);
	HT_EXPECT_EQ(cache_set(&c, 25), 1);
	/* 5 lines of one set (0, 12, 24, 36, 48) in 4 ways: the first goes */
	for (u64 l = 0; l <= 48; l += 12)
		cache_access(&c, l);
	HT_EXPECT(!cache_contains(&c, 0));
	HT_EXPECT(cache_contains(&c, 48));
	HT_EXPECT(cache_init(&c, 1, 5) != 0);	/* 16 lines do not split into 5 ways */
	cache_free(&c);
}

HTEST(hierarchy_non_inclusive)
{
	struct cache l1, l2, llc;
	HT_ASSERT(!cache_init(&l1, 1, 2) && !cache_init(&l2, 2, 2) && !cache_init(&llc, 4, 4));
	struct hierarchy h = { &l1, &l2, &llc, NULL, 0 };
	HT_EXPECT_EQ(hier_access(&h, 0), LVL_MEM);
	HT_EXPECT_EQ(hier_access(&h, 0), LVL_L1);
	/* lines 0, 16, 32 map to L2 set 0 (16 sets x 2 ways); 0 is L1 MRU until 8 and 24
	 * push it out of L1 (L1: 8 sets x 2 ways, 0/8/16/24/32 share L1 set 0) */
	hier_access(&h, 16);
	hier_access(&h, 32);	/* L2 set 0 holds 16, 32: 0 evicted from L2 ... */
	HT_EXPECT(!cache_contains(&l2, 0));
	HT_EXPECT(cache_contains(&l1, 0) || cache_contains(&l1, 32));
	/* ... but not back-invalidated from L1 (not inclusive): L1 set 0 holds 16, 32 now */
	HT_EXPECT(cache_contains(&llc, 0));
	HT_EXPECT_EQ(hier_access(&h, 0), LVL_LLC);	/* LLC still has it (not exclusive) */
	HT_EXPECT(cache_contains(&l1, 0) && cache_contains(&l2, 0));	/* filled on the way */
	/* an L1 eviction leaves the L2 copy */
	struct cache a, b, c;
	HT_ASSERT(!cache_init(&a, 1, 1) && !cache_init(&b, 4, 4) && !cache_init(&c, 8, 8));
	struct hierarchy g = { &a, &b, &c, NULL, 0 };
	hier_access(&g, 0);
	hier_access(&g, 16);	/* same L1 set (16 sets x 1 way): 0 leaves L1 */
	HT_EXPECT(!cache_contains(&a, 0));
	HT_EXPECT_EQ(hier_access(&g, 0), LVL_L2);
	/* a line kept only in L1 still hits there after L2 and LLC lost it */
	cache_invalidate(&b, 0);
	cache_invalidate(&c, 0);
	HT_EXPECT_EQ(hier_access(&g, 0), LVL_L1);
	cache_free(&l1), cache_free(&l2), cache_free(&llc), cache_free(&a), cache_free(&b), cache_free(&c);
}

HTEST(hierarchy_llc_per_socket)
{
	/* two sockets (CCDs), one CPU on each: a line only the other socket's LLC holds is
	 * LVL_LLC_REMOTE (it then fills this socket's LLC too); a line neither holds is memory */
	struct cache l1[2], l2[2], llcs[2];
	for (int i = 0; i < 2; i++)
		HT_ASSERT(!cache_init(&l1[i], 1, 2) && !cache_init(&l2[i], 2, 2) && !cache_init(&llcs[i], 8, 4));
	struct hierarchy h0 = { &l1[0], &l2[0], &llcs[0], llcs, 2 };
	struct hierarchy h1 = { &l1[1], &l2[1], &llcs[1], llcs, 2 };
	HT_EXPECT_EQ(hier_access(&h1, 5), LVL_MEM);
	HT_EXPECT(cache_contains(&llcs[1], 5) && !cache_contains(&llcs[0], 5));
	HT_EXPECT_EQ(hier_access(&h0, 5), LVL_LLC_REMOTE);
	HT_EXPECT(cache_contains(&llcs[0], 5) && cache_contains(&llcs[1], 5));
	cache_invalidate(&l1[0], 5), cache_invalidate(&l2[0], 5);
	HT_EXPECT_EQ(hier_access(&h0, 5), LVL_LLC);	/* its own copy now */
	/* one LLC (no list): never remote */
	struct hierarchy one = { &l1[1], &l2[1], &llcs[1], NULL, 0 };
	cache_invalidate(&l1[1], 6), cache_invalidate(&l2[1], 6);
	hier_access(&h0, 6);
	cache_invalidate(&l1[1], 6);
	HT_EXPECT_EQ(hier_access(&one, 6), LVL_MEM);
	for (int i = 0; i < 2; i++)
		cache_free(&l1[i]), cache_free(&l2[i]), cache_free(&llcs[i]);
}

/* ---- TLBs ---- */

static struct profile tiny_profile(void)
{
	struct profile p;
	memset(&p, 0, sizeof(p));
	p.dtlb4k_entries = 4, p.dtlb4k_ways = 2;	/* 2 sets */
	p.dtlb2m_entries = 2, p.dtlb2m_ways = 2;
	p.stlb_entries = 8, p.stlb_ways = 4;
	return p;
}

HTEST(tlb_global_survives_cr3)
{
	struct profile p = tiny_profile();
	struct tlb t;
	HT_ASSERT(!tlb_init(&t, &p));
	u64 g = 0xffff888000001000ull, ng = 0x400000000ull;
	HT_EXPECT_EQ(tlb_lookup(&t, g), TLB_MISS);
	tlb_fill(&t, g, false, true);
	tlb_fill(&t, ng, false, false);
	HT_EXPECT_EQ(tlb_lookup(&t, g), TLB_L1_HIT);
	HT_EXPECT_EQ(tlb_lookup(&t, ng), TLB_L1_HIT);
	tlb_flush(&t, true);	/* CR3 write */
	HT_EXPECT_EQ(tlb_lookup(&t, g), TLB_L1_HIT);
	HT_EXPECT_EQ(tlb_lookup(&t, ng), TLB_MISS);
	HT_EXPECT_EQ(tlb_count(&t, false), tlb_count(&t, true));
	tlb_flush(&t, false);	/* CR4.PGE toggle */
	HT_EXPECT_EQ(tlb_lookup(&t, g), TLB_MISS);
	HT_EXPECT_EQ(tlb_count(&t, false), 0);
	tlb_free(&t);
}

HTEST(tlb_invlpg_and_2m)
{
	struct profile p = tiny_profile();
	struct tlb t;
	HT_ASSERT(!tlb_init(&t, &p));
	u64 big = 0x40000000ull, small = 0x80001000ull;
	tlb_fill(&t, big, true, false);
	tlb_fill(&t, small, false, false);
	HT_EXPECT_EQ(tlb_lookup(&t, big + 0x1ff000), TLB_L1_HIT);	/* same 2 MiB page */
	HT_EXPECT_EQ(tlb_lookup(&t, big + 0x200000), TLB_MISS);
	HT_EXPECT_EQ(tlb_lookup(&t, small + 0xfff), TLB_L1_HIT);
	HT_EXPECT_EQ(tlb_lookup(&t, small + 0x1000), TLB_MISS);
	tlb_invlpg(&t, big + 0x123456);	/* any address in the 2 MiB page drops it */
	HT_EXPECT_EQ(tlb_lookup(&t, big), TLB_MISS);
	HT_EXPECT_EQ(tlb_lookup(&t, small), TLB_L1_HIT);
	tlb_invlpg(&t, small);
	HT_EXPECT_EQ(tlb_lookup(&t, small), TLB_MISS);
	/* INVLPG drops global entries too */
	tlb_fill(&t, small, false, true);
	tlb_invlpg(&t, small);
	HT_EXPECT_EQ(tlb_lookup(&t, small), TLB_MISS);
	tlb_free(&t);
}

HTEST(tlb_stlb_refills_l1)
{
	struct profile p = tiny_profile();
	struct tlb t;
	HT_ASSERT(!tlb_init(&t, &p));
	/* pages 0, 2, 4 share L1 4K set 0 (2 ways): 0 leaves L1 but stays in the STLB */
	tlb_fill(&t, 0x0000, false, false);
	tlb_fill(&t, 0x2000, false, false);
	tlb_fill(&t, 0x4000, false, false);
	HT_EXPECT_EQ(tlb_lookup(&t, 0x0000), TLB_STLB_HIT);
	HT_EXPECT_EQ(tlb_lookup(&t, 0x0000), TLB_L1_HIT);
	/* a 4K and a 2M entry with the same page-number bits do not alias */
	tlb_fill(&t, 1ull << 21, true, false);	/* 2M page number 1 */
	HT_EXPECT_EQ(tlb_lookup(&t, 0x1000), TLB_MISS);	/* 4K page number 1 */
	tlb_free(&t);
}

/* ---- rep strings ---- */

HTEST(rep_string_counts_lines)
{
	struct rep_filter f;
	/* rep movsq of 4096 bytes: source and destination accesses alternate */
	rep_filter_reset(&f);
	unsigned n = 0;
	u64 src = 0x10000, dst = 0x20020;	/* destination not line aligned: 65 lines */
	for (u64 i = 0; i < 4096; i += 8) {
		n += rep_filter_new(&f, (src + i) >> 6);
		n += rep_filter_new(&f, (dst + i) >> 6);
	}
	HT_EXPECT_EQ(n, 64 + 65);
	/* rep stosq of a page, backwards (DF=1) */
	rep_filter_reset(&f);
	n = 0;
	for (u64 i = 4096; i > 0; i -= 8)
		n += rep_filter_new(&f, (0x30000 + i - 8) >> 6);
	HT_EXPECT_EQ(n, 64);
	/* byte-wise: still one per line, not one per iteration */
	rep_filter_reset(&f);
	n = 0;
	for (u64 i = 0; i < 256; i++)
		n += rep_filter_new(&f, (0x40000 + i) >> 6);
	HT_EXPECT_EQ(n, 4);
}

/* A copy of a page within the L1d is bound by its 64 stored lines; the same copy with
 * both streams from the L2 by its fills when they cost more than its stores; the price
 * never falls as lines come in. */
HTEST(rep_stream_is_bound_by_stores_or_fills)
{
	HT_EXPECT_EQ(rep_stream_x100(64, 0, 172), 64 * 172);
	HT_EXPECT_EQ(rep_stream_x100(64, 64 * 400 + 64 * 90, 172), 64 * 400 + 64 * 90);
	HT_EXPECT_EQ(rep_stream_x100(64, 128 * 90, 230), 64 * 230);
	HT_EXPECT_EQ(rep_stream_x100(64, 0, 0), 0);
	u64 last = 0;
	for (u64 n = 1; n <= 64; n++) {
		u64 a = rep_stream_x100(n, (2 * n - 1) * 120, 230), b = rep_stream_x100(n, 2 * n * 120, 230);
		HT_EXPECT(a >= last && b >= a);
		last = b;
	}
}

/* ---- a figure's events ---- */

/* The out-of-order core's own counts are a figure's events under core=ooo (read from the
 * core, so the interval between two markers holds the branches and mispredicts between
 * them) and are not shown under the in-order core, whose lines keep their events. */
HTEST(core_counts_are_events_under_ooo_only)
{
	struct profile p;
	memset(&p, 0, sizeof(p));
	p.base_cpi_x100 = 100;
	clock_init(&p, false);
	HT_EXPECT_EQ(nr_ev_shown, EV_BRANCHES);
	HT_EXPECT_EQ(strcmp(ev_names[EV_PREFETCH], "prefetch"), 0);
	HT_EXPECT_EQ(strcmp(ev_names[EV_MISPREDICTS], "mispredicts"), 0);
	HT_EXPECT_EQ(strcmp(ev_names[NR_MEV - 1], "btb_misses"), 0);
	struct cpu_acct a;
	memset(&a, 0, sizeof(a));
	u64 ev[NR_MEV];
	acct_events(&a, ev, NULL);
	HT_EXPECT_EQ(ev[EV_BRANCHES] + ev[EV_MISPREDICTS], 0);
	clock_init(&p, true);
	HT_EXPECT_EQ(nr_ev_shown, NR_MEV);
	struct core *c = calloc(1, sizeof(*c));
	HT_ASSERT(c != NULL);
	c->st.branches = 1000;
	c->st.mispredicts = 17;
	c->st.rob_stalls = 3;
	c->st.lb_stalls = 4;
	c->st.sb_stalls = 5;
	c->st.fb_waits = 6;
	c->st.forwards = 7;
	c->st.taken = 300;
	c->st.btb_misses = 9;
	a.core = c;
	acct_events(&a, ev, NULL);
	HT_EXPECT_EQ(ev[EV_BRANCHES], 1000);
	HT_EXPECT_EQ(ev[EV_MISPREDICTS], 17);
	HT_EXPECT_EQ(ev[EV_ROB_STALLS] + ev[EV_LB_STALLS] + ev[EV_SB_STALLS], 12);
	HT_EXPECT_EQ(ev[EV_FB_WAITS] + ev[EV_FORWARDS], 13);
	HT_EXPECT_EQ(ev[EV_TAKEN], 300);
	HT_EXPECT_EQ(ev[EV_BTB_MISSES], 9);
	free(c);
	clock_init(&p, false);
}

/* Nested paging: a TLB entry covers at most the hypervisor's page, and the nested leaf
 * entries are one 8-byte entry per host page, eight to a line, above every physical
 * line number. */
static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;
	return x < y ? -1 : x > y;
}

/* Under nested paging the caches see host frames: a bijective scramble of the guest frame
 * at the nested page's size, the offset inside kept; bare metal and the nested leaf
 * lines are left alone. Contiguous guest frames spread over the L2's colours. */
HTEST(host_line_scrambles_frames_under_nested_paging)
{
	struct profile p;
	memset(&p, 0, sizeof(p));
	HT_EXPECT_EQ(host_line(&p, 12345), 12345);
	p.nested_page_kib = 4;
	HT_EXPECT_EQ(host_line(&p, NESTED_LINE_BASE + 7), NESTED_LINE_BASE + 7);
	/* 4 KiB host pages: the line's offset in its page (6 bits) is kept, 8192 frames
	 * land on 8192 distinct frames below NESTED_LINE_BASE */
	static u64 seen[8192];
	unsigned colours[32] = { 0 };
	for (u64 f = 0; f < 8192; f++) {
		u64 l = host_line(&p, (0x100000 + f) << 6 | 5);
		HT_EXPECT_EQ(l & 63, 5);
		HT_EXPECT(l < NESTED_LINE_BASE);
		seen[f] = l >> 6;
		if (f < 512)
			colours[(l >> 6) & 31]++;	/* the 2 MiB 16-way L2's 32 colours */
	}
	qsort(seen, 8192, sizeof(seen[0]), cmp_u64);
	for (unsigned i = 1; i < 8192; i++)
		HT_EXPECT(seen[i] != seen[i - 1]);
	/* 512 contiguous frames (2 MiB): not 16 a colour as in guest order, spread unevenly */
	unsigned over = 0;
	for (unsigned c = 0; c < 32; c++)
		over += colours[c] > 16;
	HT_EXPECT(over >= 4 && over <= 28);
	/* 2 MiB host pages: whole 2 MiB frames move, everything inside stays in order */
	p.nested_page_kib = 2048;
	u64 a = host_line(&p, 0x4000000), z = host_line(&p, 0x4000000 + 32767);
	HT_EXPECT_EQ(z - a, 32767);
	HT_EXPECT_EQ(a & 32767, 0);
	HT_EXPECT(a != 0x4000000);	/* the 2 MiB frame itself moved */
	HT_EXPECT(a < NESTED_LINE_BASE);
	/* 1 GiB host pages: 2^24 lines each, kept in order, the frame moved */
	p.nested_page_kib = 1u << 20;
	u64 g = host_line(&p, 3ull << 24 | 12345);
	HT_EXPECT_EQ(g & ((1ull << 24) - 1), 12345);
	HT_EXPECT(g >> 24 != 3 && g < NESTED_LINE_BASE);
}

HTEST(nested_leaf_entries_and_entry_size)
{
	struct profile p = { 0 };
	HT_EXPECT(nested_allows_2m(&p));	/* bare metal */
	p.nested_page_kib = 4;
	HT_EXPECT(!nested_allows_2m(&p));
	HT_EXPECT_EQ(nested_leaf_line(&p, 0), NESTED_LINE_BASE);
	HT_EXPECT_EQ(nested_leaf_line(&p, 7 * 4096 + 4095), NESTED_LINE_BASE);
	HT_EXPECT_EQ(nested_leaf_line(&p, 8 * 4096), NESTED_LINE_BASE + 1);
	/* the highest physical address's entry is still beyond every data line */
	u64 top = (1ull << 52) - 1;
	HT_EXPECT(nested_leaf_line(&p, top) > top >> LINE_SHIFT);
	p.nested_page_kib = 2048;
	HT_EXPECT(nested_allows_2m(&p));
	HT_EXPECT_EQ(nested_leaf_line(&p, 8ull << 21), NESTED_LINE_BASE + 1);
	HT_EXPECT_EQ(nested_leaf_line(&p, (8ull << 21) - 1), NESTED_LINE_BASE);
	p.nested_page_kib = 1 << 20;
	HT_EXPECT_EQ(nested_leaf_line(&p, 8ull << 30), NESTED_LINE_BASE + 1);
}

/* A line's fill price follows where the hierarchy served it from (its latency) and
 * whether the string stores to it: the L1d and memory add no fill (memory is priced on
 * top), the L2 and the LLC (or another CPU's cache, beyond the L2's latency) have a price
 * for a store and one for a read each. */
HTEST(rep_fill_price_by_level_and_kind)
{
	struct profile p = { 0 };
	p.l1d_lat = 5;
	p.l2_lat = 16;
	p.llc_lat = 80;
	p.c2c_lat = 120;
	p.mem_lat = 300;
	p.rep_fill_line_x100 = 401;
	p.rep_read_line_x100 = 88;
	p.rep_llc_line_x100 = 810;
	p.rep_llc_read_line_x100 = 706;
	HT_EXPECT_EQ(rep_fill_x100(&p, p.l1d_lat, true), 0);
	HT_EXPECT_EQ(rep_fill_x100(&p, p.l1d_lat, false), 0);
	HT_EXPECT_EQ(rep_fill_x100(&p, p.l2_lat, true), 401);
	HT_EXPECT_EQ(rep_fill_x100(&p, p.l2_lat, false), 88);
	HT_EXPECT_EQ(rep_fill_x100(&p, p.llc_lat, true), 810);
	HT_EXPECT_EQ(rep_fill_x100(&p, p.llc_lat, false), 706);
	HT_EXPECT_EQ(rep_fill_x100(&p, p.c2c_lat, true), 810);
	HT_EXPECT_EQ(rep_fill_x100(&p, p.mem_lat, true), 0);
	HT_EXPECT_EQ(rep_fill_x100(&p, p.mem_lat + 50, false), 0);
	/* a page cleared from the L2 is bound by its fills, copied from the L2 by its
	 * stored lines' fills plus its read lines' */
	u64 clear = 0, copy = 0;
	for (int i = 0; i < 64; i++) {
		clear += rep_fill_x100(&p, p.l2_lat, true);
		copy += rep_fill_x100(&p, p.l2_lat, true) + rep_fill_x100(&p, p.l2_lat, false);
	}
	HT_EXPECT_EQ(rep_stream_x100(64, clear, 104), 64 * 401);
	HT_EXPECT_EQ(rep_stream_x100(64, copy, 104), 64 * (401 + 88));
}

/* ---- decoder ---- */

static struct insn_info dec(const u8 *b, size_t n)
{
	struct insn_info i;
	decode_insn(b, n, &i);
	return i;
}
#define DEC(...) dec((const u8[]){ __VA_ARGS__ }, sizeof((const u8[]){ __VA_ARGS__ }))

HTEST(decode_marker_and_classes)
{
	struct insn_info i = DEC(0x0f, 0x1f, 0x80, 0x05, 0x00, 0x4d, 0x4d);
	HT_EXPECT_EQ(i.kind, INSN_MARKER);
	HT_EXPECT_EQ(i.marker_cmd, 5);
	HT_EXPECT_EQ(DEC(0x0f, 0x1f, 0x80, 0x05, 0x00, 0x4d, 0x4c).kind, INSN_PLAIN);	/* other nopl */
	HT_EXPECT_EQ(DEC(0x0f, 0x1f, 0x80, 0x05, 0x00).kind, INSN_PLAIN);		/* truncated */
	HT_EXPECT_EQ(DEC(0xf0, 0x48, 0x01, 0x07).kind, INSN_ATOMIC);		/* lock add %rax,(%rdi) */
	HT_EXPECT_EQ(DEC(0x48, 0x87, 0x07).kind, INSN_ATOMIC);			/* xchg %rax,(%rdi) */
	HT_EXPECT_EQ(DEC(0x48, 0x87, 0xc7).kind, INSN_PLAIN);			/* xchg %rax,%rdi */
	HT_EXPECT_EQ(DEC(0x0f, 0xa2).kind, INSN_CPUID);
	HT_EXPECT_EQ(DEC(0x0f, 0x30).kind, INSN_WRMSR);
	HT_EXPECT_EQ(DEC(0x0f, 0x32).kind, INSN_PLAIN);				/* rdmsr */
	HT_EXPECT_EQ(DEC(0x48, 0xcf).kind, INSN_IRET);
	HT_EXPECT_EQ(DEC(0xf4).kind, INSN_HLT);
	HT_EXPECT_EQ(DEC(0xf3, 0x90).kind, INSN_PAUSE);
	HT_EXPECT_EQ(DEC(0x90).kind, INSN_PLAIN);
	HT_EXPECT_EQ(DEC(0xf3, 0x48, 0xab).kind, INSN_REP_STRING);		/* rep stosq */
	HT_EXPECT_EQ(DEC(0xf3, 0xa4).kind, INSN_REP_STRING);			/* rep movsb */
	HT_EXPECT_EQ(DEC(0xf2, 0xae).kind, INSN_REP_STRING);			/* repne scasb */
	HT_EXPECT_EQ(DEC(0xa4).kind, INSN_PLAIN);				/* movsb, no rep */
	HT_EXPECT_EQ(DEC(0x0f, 0xae, 0xe8).kind, INSN_FENCE);			/* lfence */
	HT_EXPECT_EQ(DEC(0x0f, 0xae, 0xf0).kind, INSN_FENCE);			/* mfence */
	HT_EXPECT_EQ(DEC(0x0f, 0xae, 0xf8).kind, INSN_PLAIN);			/* sfence */
	HT_EXPECT_EQ(DEC(0x0f, 0x01, 0x10).kind, INSN_DESC_LOAD);		/* lgdt (%rax) */
	HT_EXPECT_EQ(DEC(0x0f, 0x01, 0x18).kind, INSN_DESC_LOAD);		/* lidt (%rax) */
	HT_EXPECT_EQ(DEC(0x0f, 0x00, 0xd8).kind, INSN_DESC_LOAD);		/* ltr %ax */
	HT_EXPECT_EQ(DEC(0x0f, 0x01, 0xf8).kind, INSN_PLAIN);			/* swapgs */
	HT_EXPECT_EQ(DEC(0x0f, 0x01, 0xf9).kind, INSN_PLAIN);			/* rdtscp */
}

HTEST(decode_mov_cr)
{
	struct insn_info i = DEC(0x0f, 0x22, 0xd8);	/* mov %rax,%cr3 */
	HT_EXPECT_EQ(i.kind, INSN_MOV_CR);
	HT_EXPECT_EQ(i.cr, 3);
	HT_EXPECT_EQ(i.gpr, 0);
	i = DEC(0x41, 0x0f, 0x22, 0xd8);		/* mov %r8,%cr3 */
	HT_EXPECT_EQ(i.gpr, 8);
	HT_EXPECT_EQ(i.cr, 3);
	i = DEC(0x0f, 0x22, 0xe7);			/* mov %rdi,%cr4 */
	HT_EXPECT_EQ(i.cr, 4);
	HT_EXPECT_EQ(i.gpr, 7);
	HT_EXPECT_EQ(DEC(0x0f, 0x20, 0xd8).kind, INSN_PLAIN);	/* mov %cr3,%rax: a read */
}

HTEST(decode_invlpg_operands)
{
	u64 regs[16] = { 0 };
	regs[0] = 0x1000;	/* rax */
	regs[1] = 3;		/* rcx */
	regs[3] = 0x200000;	/* rbx */
	regs[13] = 0x5000;	/* r13 */
	struct insn_info i = DEC(0x0f, 0x01, 0x38);	/* invlpg (%rax) */
	HT_EXPECT_EQ(i.kind, INSN_INVLPG);
	HT_EXPECT_EQ(i.len, 3);
	HT_EXPECT_EQ(mem_operand_addr(&i.mem, regs, 0, i.len, 0, 0), 0x1000);
	i = DEC(0x0f, 0x01, 0x7c, 0xcb, 0x10);		/* invlpg 0x10(%rbx,%rcx,8) */
	HT_EXPECT_EQ(i.kind, INSN_INVLPG);
	HT_EXPECT_EQ(i.mem.base, 3);
	HT_EXPECT_EQ(i.mem.index, 1);
	HT_EXPECT_EQ(i.mem.scale, 8);
	HT_EXPECT_EQ(mem_operand_addr(&i.mem, regs, 0, i.len, 0, 0), 0x200000 + 24 + 0x10);
	i = DEC(0x41, 0x0f, 0x01, 0x7d, 0xf0);		/* invlpg -0x10(%r13): mod 1, rm 5 + REX.B */
	HT_EXPECT_EQ(i.mem.base, 13);
	HT_EXPECT_EQ(mem_operand_addr(&i.mem, regs, 0, i.len, 0, 0), 0x5000 - 0x10);
	i = DEC(0x0f, 0x01, 0x3d, 0x00, 0x10, 0x00, 0x00);	/* invlpg 0x1000(%rip) */
	HT_EXPECT(i.mem.rip_relative);
	HT_EXPECT_EQ(i.len, 7);
	HT_EXPECT_EQ(mem_operand_addr(&i.mem, regs, 0xffffffff80001000ull, i.len, 0, 0),
		     0xffffffff80001000ull + 7 + 0x1000);
	i = DEC(0x0f, 0x01, 0x3c, 0x25, 0x00, 0x20, 0x00, 0x00);	/* invlpg 0x2000 (SIB, no base) */
	HT_EXPECT_EQ(i.mem.base, -1);
	HT_EXPECT_EQ(i.mem.index, -1);
	HT_EXPECT_EQ(mem_operand_addr(&i.mem, regs, 0, i.len, 0, 0), 0x2000);
	i = DEC(0x66, 0x0f, 0x38, 0x82, 0x0f);	/* invpcid (%rdi),%rcx */
	HT_EXPECT_EQ(i.kind, INSN_INVPCID);
	HT_EXPECT_EQ(i.gpr, 1);
	HT_EXPECT_EQ(i.mem.base, 7);
	HT_EXPECT_EQ(DEC(0x66, 0x0f, 0x38, 0x80, 0x0f).kind, INSN_PLAIN);	/* invept */
	i = DEC(0x65, 0x0f, 0x01, 0x38);		/* invlpg %gs:(%rax) */
	HT_EXPECT_EQ(i.mem.seg, SEG_GS);
	HT_EXPECT_EQ(mem_operand_addr(&i.mem, regs, 0, i.len, 0, 0x7000000), 0x7001000);
}

/* The decoder's fields for the out-of-order core, on hand-assembled instructions (bytes
 * from GNU as; the comment is the AT&T source). */
#define RAX REG_GPR(0)
#define RCX REG_GPR(1)
#define RDX REG_GPR(2)
#define RBX REG_GPR(3)
#define RSP REG_GPR(4)
#define RBP REG_GPR(5)
#define RSI REG_GPR(6)
#define RDI REG_GPR(7)
#define R(n) REG_GPR(n)
#define FL REG_FLAGS
#define V(n) REG_VEC(n)
#define OT REG_OTHER
#define B(...) .b = { __VA_ARGS__ }, .n = sizeof((const u8[]){ __VA_ARGS__ })
#define M1(acc, sz) .nmem = 1, .m = { { sz, acc } }
#define M2(a0, s0, a1, s1) .nmem = 2, .m = { { s0, a0 }, { s1, a1 } }
#define RD MEM_READ
#define WR MEM_WRITE
#define RW (MEM_READ | MEM_WRITE)

struct dcase {
	const char *what;
	u8 b[15], n;
	u8 cls, kind, uops;
	u64 rd, wr, ad;
	u8 nmem;
	struct insn_mem m[2];
	bool rmw;
};

static const struct dcase dcases[] = {
	/* registers: partial writes read the full register, 32-bit writes do not */
	{ "add %rbx,%rax", B(0x48, 0x01, 0xd8), INSN_CLS_ALU, 0, 1, RAX | RBX, RAX | FL, 0 },
	{ "add %cl,%al", B(0x00, 0xc8), INSN_CLS_ALU, 0, 1, RAX | RCX, RAX | FL, 0 },
	{ "add %cx,%ax", B(0x66, 0x01, 0xc8), INSN_CLS_ALU, 0, 1, RAX | RCX, RAX | FL, 0 },
	{ "mov %ah,%bl", B(0x88, 0xe3), INSN_CLS_ALU, 0, 1, RAX | RBX, RBX, 0 },
	{ "mov %esi,%edi", B(0x89, 0xf7), INSN_CLS_MOVE, 0, 1, RSI, RDI, 0 },
	{ "mov %rsi,%rdi", B(0x48, 0x89, 0xf7), INSN_CLS_MOVE, 0, 1, RSI, RDI, 0 },
	{ "movzbl %al,%ecx", B(0x0f, 0xb6, 0xc8), INSN_CLS_ALU, 0, 1, RAX, RCX, 0 },
	{ "mov $5,%eax", B(0xb8, 0x05, 0x00, 0x00, 0x00), INSN_CLS_ALU, 0, 1, 0, RAX, 0 },
	{ "cqto", B(0x48, 0x99), INSN_CLS_ALU, 0, 1, RAX, RDX, 0 },
	/* zero idioms write, read nothing; the 8-bit form is not one */
	{ "xor %eax,%eax", B(0x31, 0xc0), INSN_CLS_ZERO_IDIOM, 0, 1, 0, RAX | FL, 0 },
	{ "xor %r9,%r9", B(0x4d, 0x31, 0xc9), INSN_CLS_ZERO_IDIOM, 0, 1, 0, R(9) | FL, 0 },
	{ "sub %rdx,%rdx", B(0x48, 0x29, 0xd2), INSN_CLS_ZERO_IDIOM, 0, 1, 0, RDX | FL, 0 },
	{ "xor %al,%al", B(0x30, 0xc0), INSN_CLS_ALU, 0, 1, RAX, RAX | FL, 0 },
	{ "xor %ecx,%eax", B(0x31, 0xc8), INSN_CLS_ALU, 0, 1, RAX | RCX, RAX | FL, 0 },
	{ "pxor %xmm3,%xmm3", B(0x66, 0x0f, 0xef, 0xdb), INSN_CLS_ZERO_IDIOM, 0, 1, 0, V(3), 0 },
	{ "vxorps %xmm1,%xmm1,%xmm2", B(0xc5, 0xf0, 0x57, 0xd1), INSN_CLS_ZERO_IDIOM, 0, 1, 0, V(2), 0 },
	/* memory operands: address registers apart; rip-relative, segment, 0x67, REX.X/B */
	{ "mov (%rdi),%rax", B(0x48, 0x8b, 0x07), INSN_CLS_LOAD, 0, 1, RDI, RAX, RDI, M1(RD, 8) },
	{ "mov %rax,8(%rsp)", B(0x48, 0x89, 0x44, 0x24, 0x08), INSN_CLS_STORE, 0, 1, RAX | RSP, 0, RSP,
	  M1(WR, 8) },
	{ "mov %gs:0x28,%rax", B(0x65, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00), INSN_CLS_LOAD, 0,
	  1, 0, RAX, 0, M1(RD, 8) },
	{ "mov %fs:(%rbx),%ecx", B(0x64, 0x8b, 0x0b), INSN_CLS_LOAD, 0, 1, RBX, RCX, RBX, M1(RD, 4) },
	{ "mov 0x10(%rip),%rdx", B(0x48, 0x8b, 0x15, 0x10, 0x00, 0x00, 0x00), INSN_CLS_LOAD, 0, 1, 0, RDX,
	  0, M1(RD, 8) },
	{ "mov (%eax),%rax", B(0x67, 0x48, 0x8b, 0x00), INSN_CLS_LOAD, 0, 1, RAX, RAX, RAX, M1(RD, 8) },
	{ "mov (%r12,%r13,8),%r14", B(0x4f, 0x8b, 0x34, 0xec), INSN_CLS_LOAD, 0, 1, R(12) | R(13), R(14),
	  R(12) | R(13), M1(RD, 8) },
	{ "mov %rax,(%rax)", B(0x48, 0x89, 0x00), INSN_CLS_STORE, 0, 1, RAX, 0, 0, M1(WR, 8) },
	{ "movabs 0x1122334455667788,%al", B(0xa0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11),
	  INSN_CLS_LOAD, 0, 1, RAX, RAX, 0, M1(RD, 1) },
	{ "add %rax,(%rdi)", B(0x48, 0x01, 0x07), INSN_CLS_ALU, 0, 2, RAX | RDI, FL, RDI, M1(RW, 8), true },
	{ "addl $1,(%rdi)", B(0x83, 0x07, 0x01), INSN_CLS_ALU, 0, 2, RDI, FL, RDI, M1(RW, 4), true },
	{ "cmp %rax,(%rdi)", B(0x48, 0x39, 0x07), INSN_CLS_ALU, 0, 1, RAX | RDI, FL, RDI, M1(RD, 8) },
	{ "lea (%rax,%rcx,4),%rax", B(0x48, 0x8d, 0x04, 0x88), INSN_CLS_LEA, 0, 1, RAX | RCX, RAX, 0 },
	{ "lea 0x10(%rip),%rsi", B(0x48, 0x8d, 0x35, 0x10, 0x00, 0x00, 0x00), INSN_CLS_LEA, 0, 1, 0, RSI,
	  0 },
	/* the stack: implicit rsp and accesses */
	{ "push %rbp", B(0x55), INSN_CLS_STORE, 0, 1, RSP | RBP, RSP, 0, M1(WR, 8) },
	{ "pop %r15", B(0x41, 0x5f), INSN_CLS_LOAD, 0, 1, RSP, RSP | R(15), 0, M1(RD, 8) },
	{ "push (%rax)", B(0xff, 0x30), INSN_CLS_STORE, 0, 2, RAX | RSP, RSP, RAX, M2(RD, 8, WR, 8) },
	{ "pushfq", B(0x9c), INSN_CLS_STORE, 0, 1, RSP | FL, RSP, 0, M1(WR, 8) },
	{ "popfq", B(0x9d), INSN_CLS_OTHER, 0, 4, RSP | FL, RSP | FL, 0, M1(RD, 8) },
	/* branches */
	{ "call .+5", B(0xe8, 0x00, 0x00, 0x00, 0x00), INSN_CLS_CALL_DIRECT, 0, 2, RSP, RSP, 0,
	  M1(WR, 8) },
	{ "call *%rax", B(0xff, 0xd0), INSN_CLS_CALL_INDIRECT, 0, 2, RAX | RSP, RSP, 0, M1(WR, 8) },
	{ "call *8(%rdi)", B(0xff, 0x57, 0x08), INSN_CLS_CALL_INDIRECT, 0, 3, RDI | RSP, RSP, RDI,
	  M2(RD, 8, WR, 8) },
	{ "ret", B(0xc3), INSN_CLS_RET, 0, 2, RSP, RSP, 0, M1(RD, 8) },
	{ "jmp .+2", B(0xeb, 0x00), INSN_CLS_JMP_DIRECT, 0, 1, 0, 0, 0 },
	{ "jmp *%rcx", B(0xff, 0xe1), INSN_CLS_JMP_INDIRECT, 0, 1, RCX, 0, 0 },
	{ "jmp *0(%rip)", B(0xff, 0x25, 0x00, 0x00, 0x00, 0x00), INSN_CLS_JMP_INDIRECT, 0, 1, 0, 0, 0,
	  M1(RD, 8) },
	{ "jne .+0x10", B(0x75, 0x0e), INSN_CLS_BRANCH_COND, 0, 1, FL, 0, 0 },
	{ "loop .", B(0xe2, 0xfe), INSN_CLS_BRANCH_COND, 0, 1, RCX, RCX, 0 },
	{ "jrcxz .", B(0xe3, 0xfe), INSN_CLS_BRANCH_COND, 0, 1, RCX, 0, 0 },
	/* multiply, divide (rdx:rax), bit counts, cmov, setcc, shifts */
	{ "imul %rcx,%rax", B(0x48, 0x0f, 0xaf, 0xc1), INSN_CLS_IMUL, 0, 1, RAX | RCX, RAX | FL, 0 },
	{ "imul $7,%rdx,%rax", B(0x48, 0x6b, 0xc2, 0x07), INSN_CLS_IMUL, 0, 1, RDX, RAX | FL, 0 },
	{ "mul %rcx", B(0x48, 0xf7, 0xe1), INSN_CLS_IMUL, 0, 2, RAX | RCX, RAX | RDX | FL, 0 },
	{ "mulx %rcx,%rax,%rbx", B(0xc4, 0xe2, 0xfb, 0xf6, 0xd9), INSN_CLS_IMUL, 0, 2, RCX | RDX,
	  RAX | RBX, 0 },
	{ "div %rcx", B(0x48, 0xf7, 0xf1), INSN_CLS_DIV, 0, 4, RAX | RCX | RDX, RAX | RDX | FL, 0 },
	{ "idivl (%rsi)", B(0xf7, 0x3e), INSN_CLS_DIV, 0, 4, RAX | RDX | RSI, RAX | RDX | FL, RSI,
	  M1(RD, 4) },
	{ "div %cl", B(0xf6, 0xf1), INSN_CLS_DIV, 0, 4, RAX | RCX, RAX | FL, 0 },
	{ "bsf %rcx,%rax", B(0x48, 0x0f, 0xbc, 0xc1), INSN_CLS_BITCNT, 0, 1, RCX, RAX | FL, 0 },
	{ "popcnt %rcx,%rax", B(0xf3, 0x48, 0x0f, 0xb8, 0xc1), INSN_CLS_BITCNT, 0, 1, RCX, RAX | FL, 0 },
	{ "tzcnt %rcx,%rax", B(0xf3, 0x48, 0x0f, 0xbc, 0xc1), INSN_CLS_BITCNT, 0, 1, RCX, RAX | FL, 0 },
	{ "cmove %rcx,%rax", B(0x48, 0x0f, 0x44, 0xc1), INSN_CLS_CMOV, 0, 1, RAX | RCX | FL, RAX, 0 },
	{ "setne %al", B(0x0f, 0x95, 0xc0), INSN_CLS_SETCC, 0, 1, RAX | FL, RAX, 0 },
	{ "shl $3,%rax", B(0x48, 0xc1, 0xe0, 0x03), INSN_CLS_SHIFT, 0, 1, RAX, RAX | FL, 0 },
	{ "shl %cl,%rax", B(0x48, 0xd3, 0xe0), INSN_CLS_SHIFT, 0, 1, RAX | RCX | FL, RAX | FL, 0 },
	{ "sarx %rcx,%rax,%rbx", B(0xc4, 0xe2, 0xf2, 0xf7, 0xd8), INSN_CLS_SHIFT, 0, 1, RAX | RCX, RBX,
	  0 },
	{ "xchg %rbx,%rcx", B(0x48, 0x87, 0xd9), INSN_CLS_ALU, 0, 3, RBX | RCX, RBX | RCX, 0 },
	/* nops touch nothing */
	{ "nop", B(0x90), INSN_CLS_NOP, 0, 1, 0, 0, 0 },
	{ "nopl (%rax)", B(0x0f, 0x1f, 0x00), INSN_CLS_NOP, 0, 1, 0, 0, 0 },
	{ "prefetcht0 (%rax)", B(0x0f, 0x18, 0x08), INSN_CLS_NOP, 0, 1, 0, 0, 0 },
	{ "endbr64", B(0xf3, 0x0f, 0x1e, 0xfa), INSN_CLS_NOP, 0, 1, 0, 0, 0 },
	{ "marker", B(0x0f, 0x1f, 0x80, 0x05, 0x00, 0x4d, 0x4d), INSN_CLS_NOP, INSN_MARKER, 1, 0, 0, 0 },
	/* vectors */
	{ "movdqu (%rax),%xmm0", B(0xf3, 0x0f, 0x6f, 0x00), INSN_CLS_LOAD, 0, 1, RAX, V(0), RAX,
	  M1(RD, 16) },
	{ "movups %xmm1,(%rdi)", B(0x0f, 0x11, 0x0f), INSN_CLS_STORE, 0, 1, V(1) | RDI, 0, RDI,
	  M1(WR, 16) },
	{ "movsd (%rcx),%xmm0", B(0xf2, 0x0f, 0x10, 0x01), INSN_CLS_LOAD, 0, 1, RCX, V(0), RCX,
	  M1(RD, 8) },
	{ "movaps %xmm1,%xmm2", B(0x0f, 0x28, 0xd1), INSN_CLS_MOVE, 0, 1, V(1), V(2), 0 },
	{ "paddd %xmm1,%xmm2", B(0x66, 0x0f, 0xfe, 0xd1), INSN_CLS_VEC_INT, 0, 1, V(1) | V(2), V(2), 0 },
	{ "addps %xmm1,%xmm2", B(0x0f, 0x58, 0xd1), INSN_CLS_VEC_FP, 0, 1, V(1) | V(2), V(2), 0 },
	{ "divsd %xmm1,%xmm0", B(0xf2, 0x0f, 0x5e, 0xc1), INSN_CLS_FP_DIV, 0, 1, V(0) | V(1), V(0), 0 },
	{ "vsqrtpd %ymm1,%ymm2", B(0xc5, 0xfd, 0x51, 0xd1), INSN_CLS_FP_DIV, 0, 1, V(1), V(2), 0 },
	{ "vfmadd231ps %zmm1,%zmm2,%zmm3", B(0x62, 0xf2, 0x6d, 0x48, 0xb8, 0xd9), INSN_CLS_VEC_FP, 0, 1,
	  V(1) | V(2) | V(3), V(3), 0 },
	{ "movq %rax,%xmm0", B(0x66, 0x48, 0x0f, 0x6e, 0xc0), INSN_CLS_VEC_INT, 0, 1, RAX, V(0), 0 },
	/* the plugin's kinds; implicit registers */
	{ "cpuid", B(0x0f, 0xa2), INSN_CLS_SERIALISING, INSN_CPUID, 4, RAX | RCX, RAX | RBX | RCX | RDX,
	  0 },
	{ "wrmsr", B(0x0f, 0x30), INSN_CLS_SERIALISING, INSN_WRMSR, 4, RAX | RCX | RDX, 0, 0 },
	{ "rdmsr", B(0x0f, 0x32), INSN_CLS_OTHER, 0, 1, RCX, RAX | RDX, 0 },
	{ "mov %rax,%cr3", B(0x0f, 0x22, 0xd8), INSN_CLS_SERIALISING, INSN_MOV_CR, 4, RAX, OT, 0 },
	{ "mov %r8,%cr8", B(0x45, 0x0f, 0x22, 0xc0), INSN_CLS_OTHER, INSN_MOV_CR, 1, R(8), OT, 0 },
	{ "mov %cr3,%rax", B(0x0f, 0x20, 0xd8), INSN_CLS_OTHER, 0, 1, OT, RAX, 0 },
	{ "iretq", B(0x48, 0xcf), INSN_CLS_SERIALISING, INSN_IRET, 4, RSP | FL, RSP | FL, 0, M1(RD, 40) },
	{ "lgdt (%rax)", B(0x0f, 0x01, 0x10), INSN_CLS_SERIALISING, INSN_DESC_LOAD, 4, RAX, OT, RAX,
	  M1(RD, 10) },
	{ "ltr %ax", B(0x0f, 0x00, 0xd8), INSN_CLS_SERIALISING, INSN_DESC_LOAD, 4, RAX, OT, 0 },
	{ "invlpg (%rax)", B(0x0f, 0x01, 0x38), INSN_CLS_SERIALISING, INSN_INVLPG, 4, RAX, 0, RAX },
	{ "invpcid (%rdi),%rcx", B(0x66, 0x0f, 0x38, 0x82, 0x0f), INSN_CLS_SERIALISING, INSN_INVPCID, 4,
	  RCX | RDI, 0, RDI, M1(RD, 16) },
	{ "mfence", B(0x0f, 0xae, 0xf0), INSN_CLS_FENCE_M, INSN_FENCE, 1, 0, 0, 0 },
	{ "lfence", B(0x0f, 0xae, 0xe8), INSN_CLS_FENCE_L, INSN_FENCE, 1, 0, 0, 0 },
	{ "sfence", B(0x0f, 0xae, 0xf8), INSN_CLS_FENCE_S, INSN_PLAIN, 1, 0, 0, 0 },
	{ "hlt", B(0xf4), INSN_CLS_OTHER, INSN_HLT, 1, 0, 0, 0 },
	{ "pause", B(0xf3, 0x90), INSN_CLS_OTHER, INSN_PAUSE, 1, 0, 0, 0 },
	{ "clflush (%rax)", B(0x0f, 0xae, 0x38), INSN_CLS_OTHER, 0, 1, RAX, 0, RAX },
	{ "rdtsc", B(0x0f, 0x31), INSN_CLS_OTHER, 0, 1, 0, RAX | RDX, 0 },
	{ "xchg %rbx,(%rsi)", B(0x48, 0x87, 0x1e), INSN_CLS_ATOMIC, INSN_ATOMIC, 4, RBX | RSI, RBX, RSI,
	  M1(RW, 8), true },
	{ "lock cmpxchg %rdx,(%rcx)", B(0xf0, 0x48, 0x0f, 0xb1, 0x11), INSN_CLS_ATOMIC, INSN_ATOMIC, 4,
	  RAX | RCX | RDX, RAX | FL, RCX, M1(RW, 8), true },
	{ "lock xadd %eax,(%rdx)", B(0xf0, 0x0f, 0xc1, 0x02), INSN_CLS_ATOMIC, INSN_ATOMIC, 4, RAX | RDX,
	  RAX | FL, RDX, M1(RW, 4), true },
	/* strings: rcx, rsi, rdi, the direction flag */
	{ "rep movsb", B(0xf3, 0xa4), INSN_CLS_STRING, INSN_REP_STRING, 4, RCX | RSI | RDI | FL,
	  RCX | RSI | RDI, 0, M2(WR, 1, RD, 1) },
	{ "rep stosq", B(0xf3, 0x48, 0xab), INSN_CLS_STRING, INSN_REP_STRING, 4, RAX | RCX | RDI | FL,
	  RCX | RDI, 0, M1(WR, 8) },
	{ "repne scasb", B(0xf2, 0xae), INSN_CLS_STRING, INSN_REP_STRING, 4, RAX | RCX | RDI | FL,
	  RCX | RDI | FL, 0, M1(RD, 1) },
	{ "movsq", B(0x48, 0xa5), INSN_CLS_STORE, 0, 2, RSI | RDI | FL, RSI | RDI, 0, M2(WR, 8, RD, 8) },
	{ "cmpsb", B(0xa6), INSN_CLS_ALU, 0, 2, RSI | RDI | FL, RSI | RDI | FL, 0, M2(RD, 1, RD, 1) },
	{ "lodsb", B(0xac), INSN_CLS_LOAD, 0, 1, RAX | RSI | FL, RAX | RSI, 0, M1(RD, 1) },
	{ "stosl", B(0xab), INSN_CLS_STORE, 0, 1, RAX | RDI | FL, RDI, 0, M1(WR, 4) },
};

HTEST(decode_core_fields)
{
	for (size_t k = 0; k < sizeof(dcases) / sizeof(dcases[0]); k++) {
		const struct dcase *c = &dcases[k];
		struct insn_info i;
		decode_insn(c->b, c->n, &i);
		bool ok = i.decoded && i.len == c->n && i.cls == c->cls && i.kind == c->kind &&
			  i.uops == c->uops && i.reg_read == c->rd && i.reg_write == c->wr &&
			  i.reg_addr == c->ad && i.nmem == c->nmem && i.rmw == c->rmw &&
			  (i.reg_addr & ~i.reg_read) == 0;
		for (unsigned a = 0; ok && a < c->nmem; a++)
			ok = i.memop[a].size == c->m[a].size && i.memop[a].access == c->m[a].access;
		if (!ok)
			htest_fail(ht_failures, __FILE__, __LINE__,
				   "%s: len %u cls %s kind %s uops %u rd %#llx wr %#llx addr %#llx nmem %u "
				   "(%u:%u %u:%u) rmw %d", c->what, i.len, insn_cls_name(i.cls),
				   insn_kind_name(i.kind), i.uops, (unsigned long long)i.reg_read,
				   (unsigned long long)i.reg_write, (unsigned long long)i.reg_addr, i.nmem,
				   i.memop[0].access, i.memop[0].size, i.memop[1].access, i.memop[1].size,
				   i.rmw);
	}
}

HTEST(decode_branches)
{
	struct insn_info i;
	const u64 va = 0xffffffff80201000ull;
	decode_insn_at((const u8[]){ 0xe8, 0x10, 0x00, 0x00, 0x00 }, 5, va, &i);	/* call .+0x15 */
	HT_EXPECT(i.is_branch && !i.is_cond && !i.is_indirect && i.has_target);
	HT_EXPECT_EQ(i.target, va + 5 + 0x10);
	decode_insn_at((const u8[]){ 0x75, 0xfe }, 2, va, &i);	/* jne . */
	HT_EXPECT(i.is_branch && i.is_cond && !i.is_indirect && i.has_target);
	HT_EXPECT_EQ(i.target, va);
	decode_insn_at((const u8[]){ 0x0f, 0x84, 0x00, 0xf0, 0xff, 0xff }, 6, va, &i);	/* je rel32 */
	HT_EXPECT(i.is_cond && i.has_target);
	HT_EXPECT_EQ(i.target, va + 6 - 0x1000);
	decode_insn_at((const u8[]){ 0xe9, 0x00, 0x00, 0x00, 0x80 }, 5, va, &i);	/* jmp back 2 GiB */
	HT_EXPECT_EQ(i.cls, INSN_CLS_JMP_DIRECT);
	HT_EXPECT_EQ(i.target, va + 5 - 0x80000000ull);
	decode_insn((const u8[]){ 0x75, 0xfe }, 2, &i);	/* no address: no target */
	HT_EXPECT(i.is_branch && !i.has_target && i.target == 0);
	decode_insn_at((const u8[]){ 0xff, 0xd0 }, 2, va, &i);	/* call *%rax */
	HT_EXPECT(i.is_branch && i.is_indirect && !i.has_target);
	decode_insn_at((const u8[]){ 0xc3 }, 1, va, &i);
	HT_EXPECT(i.is_branch && i.is_indirect && !i.is_cond);
	/* not the predictor's: far, interrupts, syscall, iret */
	const u8 *nb[] = { (const u8[]){ 0x0f, 0x05 }, (const u8[]){ 0xcd, 0x80 },
			   (const u8[]){ 0x48, 0xcf }, (const u8[]){ 0x48, 0xcb } };
	for (int k = 0; k < 4; k++) {
		decode_insn_at(nb[k], 2, va, &i);
		HT_EXPECT(i.decoded && !i.is_branch && !i.has_target);
	}
	decode_insn_at((const u8[]){ 0x48, 0x01, 0xd8 }, 3, va, &i);	/* add: none */
	HT_EXPECT(!i.is_branch && !i.has_target);
}

HTEST(decode_undecodable_and_compact)
{
	struct insn_info i;
	decode_insn((const u8[]){ 0x06 }, 1, &i);	/* push %es: invalid in 64-bit mode */
	HT_EXPECT(!i.decoded);
	HT_EXPECT_EQ(i.kind, INSN_PLAIN);
	HT_EXPECT_EQ(i.cls, INSN_CLS_OTHER);
	HT_EXPECT_EQ(i.reg_read | i.reg_write | i.nmem, 0);
	decode_insn((const u8[]){ 0x48, 0x8b }, 2, &i);	/* truncated mov */
	HT_EXPECT(!i.decoded);
	HT_EXPECT_EQ(i.gpr, -1);
	decode_insn((const u8[]){ 0xf0, 0x48, 0x01, 0xc0 }, 4, &i);	/* lock on a register: #UD */
	HT_EXPECT(!i.decoded);
	HT_EXPECT_EQ(i.kind, INSN_PLAIN);
	/* stored per translated instruction: keep it within 72 bytes */
	HT_EXPECT(sizeof(struct insn_info) <= 72);
	/* the same 29 members, in order, as the core's enum core_cls */
	HT_EXPECT_EQ(NR_INSN_CLS, 29);
	HT_EXPECT_EQ(INSN_CLS_SERIALISING, 22);
	for (unsigned c = 0; c < NR_INSN_CLS; c++)
		HT_EXPECT(strcmp(insn_cls_name(c), "?") != 0);
	HT_EXPECT_EQ(strcmp(insn_cls_name(INSN_CLS_OTHER), "other"), 0);
}

/*
 * Equivalence with the reference classifier (decode_ref.c) on the kernel corpus: wherever
 * the reference recognises a class, the same kind, marker command, cr, gpr and memory
 * operand, and the same length except for INSN_ATOMIC (the reference stopped after the
 * opcode there; nothing reads an atomic's length). Where it says INSN_PLAIN, so must
 * decode_insn(). Every corpus instruction decodes, to the length objdump found.
 */
#include "model/decode_ref.h"
#include "model/decode_corpus.h"

HTEST(decode_matches_reference_on_kernel)
{
	size_t n = 0, classified = 0;
	for (size_t off = 0; off < sizeof(decode_corpus); off += 1 + decode_corpus[off], n++) {
		const u8 *b = &decode_corpus[off + 1];
		u8 len = decode_corpus[off];
		struct insn_info o, x;
		decode_insn_ref(b, len, &o);
		decode_insn(b, len, &x);
		bool ok = x.decoded && x.len == len && x.kind == o.kind;
		if (o.kind != INSN_PLAIN) {
			classified++;
			ok = ok && x.marker_cmd == o.marker_cmd && x.cr == o.cr && x.gpr == o.gpr &&
			     x.has_mem == o.has_mem && (o.kind == INSN_ATOMIC || x.len == o.len);
			if (o.has_mem)
				ok = ok && x.mem.base == o.mem.base && x.mem.index == o.mem.index &&
				     x.mem.scale == o.mem.scale && x.mem.rip_relative == o.mem.rip_relative &&
				     x.mem.addr32 == o.mem.addr32 && x.mem.seg == o.mem.seg &&
				     x.mem.disp == o.mem.disp;
		}
		if (!ok) {
			char hex[48] = "";
			for (unsigned k = 0; k < len && k < 15; k++)
				snprintf(hex + 3 * k, sizeof(hex) - 3 * k, "%02x ", b[k]);
			htest_fail(ht_failures, __FILE__, __LINE__,
				   "%s: reference %s len %u, decode_insn %s len %u decoded %d", hex,
				   insn_kind_name(o.kind), o.len, insn_kind_name(x.kind), x.len, x.decoded);
		}
	}
	HT_EXPECT(n > 1000);
	HT_EXPECT(classified > 100);	/* the corpus does hold the classes */
}

/* ---- profile parser ---- */

static const char good[] =
	"# comment line\n"
	"name = test-cpu\n"
	"ghz = 2.5  # source\n"
	"base_cpi = 1.00\n"
	"l1d_kib = 32\nl1d_ways = 8\nl1d_lat = 4\n"
	"l2_kib = 1024\nl2_ways = 16\nl2_lat = 14\n"
	"llc_kib = 39424\nllc_ways = 11\nllc_lat = 77\n"
	"mem_lat = 240\n"
	"dtlb4k_entries = 64\ndtlb4k_ways = 4\ndtlb2m_entries = 32\ndtlb2m_ways = 4\n"
	"stlb_entries = 1536\nstlb_ways = 12\nstlb_lat = 9\nwalk_overhead = 10\nnested_page_kib = 2048\n"
	"atomic = 18\nserialise = 100\ncpuid = 100\nwrmsr = 150\nmov_cr = 200\ninvlpg = 200\n"
	"fence = 33\nirq_roundtrip = 1000\nipi_latency = 2000\npause = 140\nhlt = 100\n"
	"rep_store_line = 1.72\nrep_fill_line = 2\nrep_read_line = 0.5\nrep_llc_line = 4\n"
	"rep_llc_read_line = 3.5\nrep_mem_line = 13\n"
	"c2c_lat = 125\nc2c_remote_lat = 340\nsockets = 2\ncores_per_socket = 28\n"
	"core_width = 4\nrob_size = 224\nload_buffer = 72\nstore_buffer = 56\nfill_buffers = 12\n"
	"mispredict = 16\nlat_imul = 3\nlat_div = 35\nlat_vec = 1\nlat_fp = 4\nlat_fpdiv = 14\n"
	"prefetch_lines = 20\nprefetch_streams = 32\npage_walkers = 2\nstores_per_cycle = 1\n"
	"taken_per_cycle = 1\nloop_branches = 0\nloop_taken_per_cycle = 1\n"
	"btb_l0_entries = 0\nbtb_bubble = 0\n";

static int parse_with(const char *text, char *err)
{
	struct profile p;
	return profile_parse(text, "t.cfg", &p, err, 256);
}

HTEST(profile_parses_and_rejects)
{
	struct profile p;
	char err[256], buf[4096];
	HT_ASSERT(profile_parse(good, "t.cfg", &p, err, sizeof(err)) == 0);
	HT_EXPECT_EQ(p.ghz_x100, 250);
	HT_EXPECT_EQ(p.rep_store_line_x100, 172);
	HT_EXPECT_EQ(p.rep_fill_line_x100, 200);
	HT_EXPECT_EQ(p.rep_read_line_x100, 50);
	HT_EXPECT_EQ(p.rep_llc_line_x100, 400);
	HT_EXPECT_EQ(p.rep_llc_read_line_x100, 350);
	HT_EXPECT_EQ(p.nested_page_kib, 2048);
	/* nested pages come in the sizes x86 pages have */
	snprintf(buf, sizeof(buf), "%s", good);
	char *np = strstr(buf, "nested_page_kib = 2048");
	memcpy(np, "nested_page_kib = 8   ", 22);
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "nested_page_kib") && strstr(err, "x86 page size"));
	/* a BTB level the core's 4-way sets cannot hold */
	{
		static const char *const bad[] = { "9", "12", "100" }, *const ok[] = { "8", "256", "1024" };
		const char *at = strstr(good, "btb_l0_entries = 0\n");
		HT_ASSERT(at != NULL);
		char b2[4096];
		for (unsigned i = 0; i < 3; i++) {
			snprintf(b2, sizeof(b2), "%.*sbtb_l0_entries = %s\n%s", (int)(at - good), good, bad[i],
				 at + strlen("btb_l0_entries = 0\n"));
			HT_EXPECT(parse_with(b2, err) == -1 && strstr(err, "btb_l0_entries") && strstr(err, "power"));
			snprintf(b2, sizeof(b2), "%.*sbtb_l0_entries = %s\n%s", (int)(at - good), good, ok[i],
				 at + strlen("btb_l0_entries = 0\n"));
			HT_EXPECT(parse_with(b2, err) == 0);
		}
	}
	memcpy(np, "nested_page_kib = 4   ", 22);
	HT_EXPECT(parse_with(buf, err) == 0);
	/* the key of a per-line-touched price the model no longer has is refused by name */
	snprintf(buf, sizeof(buf), "%s", good);
	char *old = strstr(buf, "rep_store_line");
	memcpy(old, "rep_line      ", 14);
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "rep_line"));
	HT_EXPECT_EQ(p.base_cpi_x100, 100);
	HT_EXPECT_EQ(p.llc_ways, 11);
	HT_EXPECT(!strcmp(p.name, "test-cpu"));
	/* unknown key */
	snprintf(buf, sizeof(buf), "%sbogus = 1\n", good);
	unsigned nl = 0;
	for (const char *q = good; *q; q++)
		nl += *q == '\n';
	char where[32];
	snprintf(where, sizeof(where), "t.cfg:%u:", nl + 1);
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "unknown key 'bogus'") && strstr(err, where));
	/* repeated key */
	snprintf(buf, sizeof(buf), "%satomic = 3\n", good);
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "given twice"));
	/* missing key */
	const char *cut = strstr(good, "rep_mem_line");
	snprintf(buf, sizeof(buf), "%.*s", (int)(cut - good), good);
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "missing key 'rep_mem_line'"));
	/* malformed numbers */
	snprintf(buf, sizeof(buf), "%s", good);
	char *g = strstr(buf, "ghz = 2.5");
	memcpy(g, "ghz = 2.555", 11);	/* overwrites "  # source" partly: 3 decimals */
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "ghz"));
	snprintf(buf, sizeof(buf), "%s", good);
	char *a = strstr(buf, "atomic = 18");
	a[9] = 'x';
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "atomic"));
	/* geometry that does not split into sets */
	snprintf(buf, sizeof(buf), "%s", good);
	char *w = strstr(buf, "l1d_ways = 8");
	w[11] = '7';
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "l1d"));
	/* a line without '=' */
	snprintf(buf, sizeof(buf), "%sjust words\n", good);
	HT_EXPECT(parse_with(buf, err) == -1 && strstr(err, "expected 'key = value'"));
}

HTEST(profile_files_in_tree)
{
	const char *files[] = { "model/profiles/skylake-sp.cfg", "model/profiles/zen3.cfg" };
	for (unsigned i = 0; i < 2; i++) {
		struct profile p;
		char err[256];
		int r = profile_load(files[i], &p, err, sizeof(err));
		if (r)
			printf("# %s\n", err);
		HT_EXPECT_EQ(r, 0);
		struct tlb t;
		struct cache c;
		HT_EXPECT_EQ(tlb_init(&t, &p), 0);
		tlb_free(&t);
		HT_EXPECT_EQ(cache_init(&c, p.llc_kib, p.llc_ways), 0);
		cache_free(&c);
	}
	struct profile p;
	char err[256];
	HT_EXPECT(profile_load("model/profiles/does-not-exist.cfg", &p, err, sizeof(err)) == -1);
}

/* ---- which vCPU is running ---- */

/* The bases Linux 6.1 showed under QEMU -smp 2: the boot CPU starts on its boot-time
 * per-CPU area (in the kernel image) and moves to its real one before CPU 1 comes up. */
#define BSP_BOOT 0xffffffff83044000ull
#define BSP_REAL 0xffff88801f400000ull
#define AP_REAL 0xffff88801f500000ull

HTEST(ident_claims_hint_then_lowest_free)
{
	struct ident id;
	bool c;
	ident_init(&id, 4);
	HT_EXPECT_EQ(ident_slot(&id, 0xffff800000001000ull, 2, &c), 2);
	HT_EXPECT(c);
	HT_EXPECT_EQ(ident_slot(&id, 0xffff800000001000ull, 0, &c), 2);	/* known: the hint is ignored */
	HT_EXPECT(!c);
	HT_EXPECT_EQ(ident_slot(&id, 0xffff800000002000ull, 2, &c), 0);	/* hint taken: lowest free */
	HT_EXPECT(c);
	HT_EXPECT_EQ(ident_slot(&id, 0xffff800000003000ull, 9, &c), 1);	/* hint out of range */
	HT_EXPECT_EQ(ident_slot(&id, 0xffff800000004000ull, 0, &c), 3);
	HT_EXPECT_EQ(ident_slot(&id, 0xffff800000005000ull, 0, &c), 4);	/* none free: n */
	HT_EXPECT(!c);
	HT_EXPECT_EQ(id.unclaimed, 1);
	HT_EXPECT_EQ(ident_slot(&id, 0xffff800000002000ull, 3, &c), 0);
}

/* Without the move, the boot CPU's two bases would take both slots of a 2-CPU guest,
 * CPU 1's base would find none, and its work would go to whichever vCPU QEMU named (the
 * one that translated the block). */
HTEST(ident_moved_base_keeps_its_slot)
{
	struct ident id;
	bool c;
	ident_init(&id, 2);
	HT_EXPECT_EQ(ident_slot(&id, BSP_BOOT, 0, &c), 0);
	HT_EXPECT_EQ(ident_rebase(&id, BSP_BOOT, BSP_REAL), 0);	/* wrmsr GS_BASE on CPU 0 */
	HT_EXPECT_EQ(ident_slot(&id, BSP_REAL, 0, &c), 0);
	HT_EXPECT(!c);
	/* CPU 1, in a block CPU 0 translated: QEMU says 0, the free slot is 1 */
	HT_EXPECT_EQ(ident_slot(&id, AP_REAL, 0, &c), 1);
	HT_EXPECT(c);
	HT_EXPECT_EQ(ident_slot(&id, BSP_REAL, 1, &c), 0);
	HT_EXPECT_EQ(ident_slot(&id, AP_REAL, 0, &c), 1);
	HT_EXPECT_EQ(id.unclaimed, 0);
	/* the stale base is nobody's now: it would claim nothing that is taken */
	HT_EXPECT_EQ(ident_slot(&id, BSP_BOOT, 0, &c), 2);
}

/* What Linux 6.1 does: a null GS selector load (the base reads 0 under QEMU) in one
 * block, the GS_BASE write in a later one. */
HTEST(ident_move_after_null_selector)
{
	struct ident id;
	bool c;
	ident_init(&id, 2);
	HT_EXPECT_EQ(ident_slot(&id, BSP_BOOT, 0, &c), 0);
	ident_nobase(&id, 0);	/* blocks after the null load, QEMU's index 0 */
	ident_nobase(&id, 0);
	HT_EXPECT_EQ(ident_rebase(&id, 0, BSP_REAL), 0);
	HT_EXPECT_EQ(ident_slot(&id, BSP_REAL, 0, &c), 0);
	HT_EXPECT(!c);
	HT_EXPECT_EQ(ident_slot(&id, AP_REAL, 0, &c), 1);
	HT_EXPECT(c);
}

/* baremm's shape: CPU 1 writes its first base while CPU 0's is the last one seen; its
 * start-up blocks are its own translations (QEMU's index 1), so nothing moves. */
HTEST(ident_first_base_of_another_cpu_moves_nothing)
{
	struct ident id;
	bool c;
	ident_init(&id, 2);
	HT_EXPECT_EQ(ident_rebase(&id, 0, BSP_REAL), 2);	/* CPU 0's first write: no base yet */
	HT_EXPECT_EQ(ident_slot(&id, BSP_REAL, 0, &c), 0);
	ident_nobase(&id, 1);	/* CPU 1's trampoline */
	ident_nobase(&id, 0);	/* then code CPU 0 translated */
	HT_EXPECT_EQ(ident_rebase(&id, 0, AP_REAL), 2);
	HT_EXPECT_EQ(ident_slot(&id, AP_REAL, 0, &c), 1);
	HT_EXPECT(c);
	HT_EXPECT_EQ(ident_slot(&id, BSP_REAL, 1, &c), 0);
	/* an unknown CPU's block (a base with no slot) breaks the chain as well */
	HT_EXPECT_EQ(ident_slot(&id, 0xffff800000009000ull, 0, &c), 2);
	HT_EXPECT_EQ(ident_rebase(&id, 0, 0xffff80000000a000ull), 2);
}

HTEST(ident_rebase_changes_nothing_else)
{
	struct ident id;
	bool c;
	ident_init(&id, 2);
	HT_EXPECT_EQ(ident_rebase(&id, BSP_BOOT, BSP_REAL), 2);	/* old base unknown */
	HT_EXPECT_EQ(ident_slot(&id, BSP_BOOT, 0, &c), 0);
	HT_EXPECT_EQ(ident_slot(&id, AP_REAL, 1, &c), 1);
	HT_EXPECT_EQ(ident_rebase(&id, BSP_BOOT, BSP_BOOT), 2);	/* the same value again */
	HT_EXPECT_EQ(ident_rebase(&id, BSP_BOOT, AP_REAL), 2);	/* another slot's base */
	HT_EXPECT_EQ(ident_slot(&id, BSP_BOOT, 1, &c), 0);
	HT_EXPECT_EQ(ident_slot(&id, AP_REAL, 0, &c), 1);
	/* the last lookup (of AP_REAL) stays; the moved slot answers to its new base */
	HT_EXPECT_EQ(ident_rebase(&id, BSP_BOOT, BSP_REAL), 0);
	HT_EXPECT_EQ(id.last_base, AP_REAL);
	HT_EXPECT_EQ(ident_slot(&id, BSP_REAL, 1, &c), 0);
	HT_EXPECT(!c);
}

/* Linux without x2APIC sends its IPIs in xAPIC flat logical mode: CPU n's LDR is
 * 1 << (24 + n). The plugin once read the 8-bit mask as an APIC ID: an IPI to CPU 1
 * (mask 0x02) went to a CPU 2 that did not exist, one to CPU 0 (0x01) to CPU 1. */
HTEST(apic_logical_destinations)
{
	const u32 flat = 0xffffffffu;
	HT_EXPECT(apic_logical_hit(false, 1, 0x02000000, flat, 0x02));
	HT_EXPECT(!apic_logical_hit(false, 0, 0x01000000, flat, 0x02));
	HT_EXPECT(apic_logical_hit(false, 0, 0x01000000, flat, 0x03));
	HT_EXPECT(!apic_logical_hit(false, 2, 0x00000000, flat, 0xff));	/* LDR never set */
	/* cluster model: cluster 1, member bit 1 */
	const u32 cluster = 0x0fffffffu;
	HT_EXPECT(apic_logical_hit(false, 5, 0x12000000, cluster, 0x12));
	HT_EXPECT(apic_logical_hit(false, 5, 0x12000000, cluster, 0xf2));
	HT_EXPECT(!apic_logical_hit(false, 5, 0x12000000, cluster, 0x22));
	HT_EXPECT(!apic_logical_hit(false, 5, 0x12000000, cluster, 0x11));
	/* x2APIC: APIC ID 17 is cluster 1, bit 1; the LDR/DFR arguments do not matter */
	HT_EXPECT(apic_logical_hit(true, 17, 0, 0, 0x00010002));
	HT_EXPECT(!apic_logical_hit(true, 17, 0, 0, 0x00000002));
	HT_EXPECT(!apic_logical_hit(true, 17, 0, 0, 0x00010001));
	HT_EXPECT(apic_logical_hit(true, 0, 0, 0, 0x00000001));
}

int main(void)
{
	return htest_main("costmodel");
}
