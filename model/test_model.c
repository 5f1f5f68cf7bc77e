/*
 * Host unit test of the cost model's parts (no QEMU): caches, TLBs, the rep string line
 * filter, the instruction classifier, the profile parser and the vCPU identification table.
 * Run by make host-test.
 */
#include <stdio.h>
#include <string.h>
#include "tests/host/htest.h"
#include "model/model.h"

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
	"stlb_entries = 1536\nstlb_ways = 12\nstlb_lat = 9\nwalk_overhead = 10\n"
	"atomic = 18\nserialise = 100\ncpuid = 100\nwrmsr = 150\nmov_cr = 200\ninvlpg = 200\n"
	"fence = 33\nirq_roundtrip = 1000\nipi_latency = 2000\npause = 140\nhlt = 100\n"
	"rep_line = 2\nrep_mem_line = 13\n"
	"c2c_lat = 125\nc2c_remote_lat = 340\nsockets = 2\ncores_per_socket = 28\n"
	"core_width = 4\nrob_size = 224\nload_buffer = 72\nstore_buffer = 56\nfill_buffers = 12\n"
	"mispredict = 16\nlat_imul = 3\nlat_div = 35\nlat_vec = 1\nlat_fp = 4\nlat_fpdiv = 14\n"
	"prefetch_lines = 20\nprefetch_streams = 32\n";

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
