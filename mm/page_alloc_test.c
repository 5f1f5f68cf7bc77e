/*
 * In-kernel tests of the page allocator (KTAP suite "page_alloc"): every CPU allocates and
 * frees at once with random orders over the pcp and buddy paths, local and remote drains;
 * afterwards the full consistency check must pass, no page may have been handed out twice
 * (each allocation's CPU/sequence stamp is kept in the descriptor and in the page itself
 * and verified at free), and the free count must return to its value before the test.
 */
#include "kernel/math.h"
#include "mm/page_alloc_internal.h"
#include "mm/pcp.h"
#include "kernel/ktest.h"
#include "kernel/smp.h"
#include "kernel/atomic.h"
#include "kernel/string.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/tsc.h"

struct held_block {
	struct page *page;
	u64 stamp;
	u32 order;
};

#define HELD_ORDER 2	/* per-CPU bookkeeping: one order-2 block */
#define HELD_MAX ((PAGE_SIZE << HELD_ORDER) / sizeof(struct held_block))

struct stress_ctx {
	u64 ops;			/* operations per CPU */
	u64 seed;			/* random seed of the operation mix (per CPU: mixed with the id) */
	bool poll_calls;		/* serve queued cross-CPU calls between operations */
	bool wide_orders;		/* orders up to MAX_ORDER (else <= 3) */
	u64 errors;			/* atomic */
	u64 allocs, fails, frees;	/* atomic sums */
	u64 ops_done;			/* atomic sum */
	u64 done;			/* CPUs finished (atomic) */
	u64 min_ops, deadline;		/* stop after min_ops once the TSC passes deadline (0: never) */
	u64 min_drains;			/* keep going until this many remote drains were issued */
	u64 drains_issued;		/* by the draining CPU (atomic) */
	u64 first_bad_pfn;
	const char *first_error;
};

static void stress_err(struct stress_ctx *c, struct page *p, const char *what)
{
	if (atomic_fetch_add(&c->errors, 1) == 0) {
		c->first_bad_pfn = p ? page_to_pfn(p) : ~0ULL;
		c->first_error = what;
	}
}

static unsigned stress_order(struct stress_ctx *c, u64 *s)
{
	u64 x = xorshift64(s) % 1000;
	if (x < 600)
		return 0;
	if (x < 900 || !c->wide_orders)
		return 1 + (unsigned)(xorshift64(s) % 3);
	if (x < 990)
		return 4 + (unsigned)(xorshift64(s) % 4);
	return 8 + (unsigned)(xorshift64(s) % 3);
}

static gfp_t stress_gfp(u64 *s)
{
	static const gfp_t types[] = { GFP_KERNEL, GFP_USER, __GFP_RECLAIMABLE };
	gfp_t g = types[xorshift64(s) % 3];
	if (xorshift64(s) % 8 == 0)
		g |= __GFP_NOPCP;
	return g;
}

static void release(struct stress_ctx *c, struct held_block *h)
{
	if (h->page->stamp != h->stamp || *(u64 *)page_address(h->page) != h->stamp)
		stress_err(c, h->page, "stamp changed while held: page handed out twice");
	free_pages(h->page, h->order);
}

static void stress_fn(void *info)
{
	struct stress_ctx *c = info;
	unsigned cpu = smp_processor_id();
	u64 s = c->seed ^ (0x9e3779b97f4a7c15ULL * (cpu + 1));
	u64 allocs = 0, fails = 0, frees = 0, last_seq = 0, i = 0;
	struct page *hp = alloc_pages(GFP_KERNEL | __GFP_NOPCP, HELD_ORDER);

	if (!hp) {
		stress_err(c, NULL, "no memory for the per-CPU bookkeeping");
		goto out;
	}
	struct held_block *held = page_address(hp);
	unsigned n = 0;
	/* Under round-robin TCG the draining CPU may not run at all during c->ops
	 * operations: keep going until it has issued its drains, so they overlap. */
	for (i = 0; (i < c->ops && (i < c->min_ops || !c->deadline || rdtsc() < c->deadline)) ||
		    atomic_load(&c->drains_issued) < c->min_drains; i++) {
		u64 r = xorshift64(&s) % 100;
		if (r < 50 && n < HELD_MAX) {
			unsigned order = stress_order(c, &s);
			struct page *p = alloc_pages(stress_gfp(&s), order);
			if (!p) {
				fails++;
				continue;
			}
			allocs++;
			u64 pfn = page_to_pfn(p);
			if (!IS_ALIGNED(pfn, 1ULL << order))
				stress_err(c, p, "misaligned block");
			if ((p->stamp >> 48) != cpu || (p->stamp & ((1ULL << 48) - 1)) <= last_seq)
				stress_err(c, p, "bad allocation stamp");
			last_seq = p->stamp & ((1ULL << 48) - 1);
			if (order && (!(p->flags & PG_head) || p->order != order))
				stress_err(c, p, "order > 0 block without PG_head/order");
			*(u64 *)page_address(p) = p->stamp;
			held[n++] = (struct held_block){ p, p->stamp, order };
		} else if (r < 97 && n) {
			unsigned k = (unsigned)(xorshift64(&s) % n);
			struct held_block h = held[k];
			held[k] = held[--n];
			release(c, &h);
			frees++;
		} else if (r < 99) {
			drain_local_pages();
		}
		if (c->poll_calls && (i & 31) == 0)
			smp_call_queue_drain();
	}
	while (n) {
		release(c, &held[--n]);
		frees++;
	}
	free_pages(hp, HELD_ORDER);
out:
	atomic_add(&c->ops_done, i);
	atomic_add(&c->allocs, allocs);
	atomic_add(&c->fails, fails);
	atomic_add(&c->frees, frees);
	atomic_add(&c->done, 1);
}

static void report(struct ktest_ctx *kt, struct stress_ctx *c, const char *what)
{
	printk("# %s: %llu operations, %llu allocs, %llu failed, %llu frees, %llu errors\n", what,
	       (unsigned long long)c->ops_done, (unsigned long long)c->allocs, (unsigned long long)c->fails,
	       (unsigned long long)c->frees, (unsigned long long)c->errors);
	KT_EXPECT_MSG(c->errors == 0, "%s: %llu errors, first: %s (pfn 0x%llx)", what,
		      (unsigned long long)c->errors, c->first_error ? c->first_error : "?",
		      (unsigned long long)c->first_bad_pfn);
}

static void check_all(struct ktest_ctx *kt, u64 free_before)
{
	struct page_check_result r;
	unsigned e = page_alloc_check_report(&r);
	KT_EXPECT_MSG(e == 0, "consistency check: %u errors, first: %s (pfn 0x%llx)", e,
		      r.first_error ? r.first_error : "?", (unsigned long long)r.first_bad_pfn);
	KT_EXPECT_EQ(nr_free_pages(), free_before);
	KT_EXPECT_EQ(r.buddy_pages + r.pcp_pages, free_before);
}

KTEST(page_alloc, orders_aligned_and_recovered)
{
	u64 before = nr_free_pages();
	struct page *p[NR_ORDERS];
	for (unsigned o = 0; o <= MAX_ORDER; o++) {
		p[o] = alloc_pages(o & 1 ? GFP_USER : GFP_KERNEL, o);
		KT_ASSERT(p[o]);
		KT_EXPECT(IS_ALIGNED(page_to_pfn(p[o]), 1ULL << o));
		memset(page_address(p[o]), 0x3c, PAGE_SIZE << o);
	}
	KT_EXPECT(alloc_pages(GFP_KERNEL | __GFP_NOWARN, MAX_ORDER + 1) == NULL);
	for (unsigned o = 0; o <= MAX_ORDER; o++)
		free_pages(p[o], o);
	check_all(kt, before);
}

static struct stress_ctx stress;

/*
 * Each CPU's operations are bounded by time as well (at least STRESS_MIN_OPS): booted by
 * hand with 8 vCPUs on 2 host cores under multi-threaded TCG, every hand-off of the
 * FIFO zone lock waits for the host to schedule the next ticket's vCPU thread, and one
 * phase of all_cpus_concurrent ran for minutes. Round-robin and -icount boots do all the
 * operations well inside the bound.
 */
#define STRESS_MIN_OPS 50
#define STRESS_SECONDS 2

static void bound_by_time(struct stress_ctx *c)
{
	c->min_ops = STRESS_MIN_OPS;
	c->deadline = deadline_after_ms(1000 * STRESS_SECONDS);
}

static void run_stress(struct ktest_ctx *kt, const char *what, u64 ops, bool wide)
{
	memset(&stress, 0, sizeof(stress));
	stress.ops = ops;
	stress.seed = event_sum(EV_ZONE_LOCK) + 1;
	stress.wide_orders = wide;
	bound_by_time(&stress);
	on_each_cpu(stress_fn, &stress, true);
	KT_EXPECT_EQ(stress.done, nr_cpu_ids);
	report(kt, &stress, what);
}

KTEST_SMP(page_alloc, all_cpus_concurrent, 2)
{
	bool pcp_was = opt_pcp;
	int mt_was = pcp_mt;
	u64 before = nr_free_pages();
	u64 ev0[NR_EVENTS], ev1[NR_EVENTS];
	events_snapshot(ev0);

	opt_pcp = true;
	pcp_mt = PCP_MT_LOOKUP;
	run_stress(kt, "pcp on, mt=lookup", 4000, true);
	check_all(kt, before);
	pcp_mt = PCP_MT_CACHED;
	run_stress(kt, "pcp on, mt=cached", 4000, true);
	check_all(kt, before);
	opt_pcp = false;
	run_stress(kt, "pcp off", 2000, true);
	check_all(kt, before);
	opt_pcp = pcp_was;
	pcp_mt = mt_was;

	events_snapshot(ev1);
	printk("# zone_lock=%llu contended=%llu pcp_hit=%llu refill=%llu free_bulk=%llu "
	       "steals=%llu lookups=%llu\n",
	       (unsigned long long)(ev1[EV_ZONE_LOCK] - ev0[EV_ZONE_LOCK]),
	       (unsigned long long)(ev1[EV_ZONE_LOCK_CONTENDED] - ev0[EV_ZONE_LOCK_CONTENDED]),
	       (unsigned long long)(ev1[EV_PGALLOC_PCP_HIT] - ev0[EV_PGALLOC_PCP_HIT]),
	       (unsigned long long)(ev1[EV_PGALLOC_PCP_REFILL] - ev0[EV_PGALLOC_PCP_REFILL]),
	       (unsigned long long)(ev1[EV_PGFREE_BULK] - ev0[EV_PGFREE_BULK]),
	       (unsigned long long)(ev1[EV_PAGEBLOCK_STEAL] - ev0[EV_PAGEBLOCK_STEAL]),
	       (unsigned long long)(ev1[EV_PAGEBLOCK_LOOKUP] - ev0[EV_PAGEBLOCK_LOOKUP]));
	drain_all_pages();
	KT_EXPECT_EQ(nr_free_buddy_pages(), before);
	check_all(kt, before);
}

static void fill_pcp_fn(void *info)
{
	(void)info;
	struct page *p[16];
	for (int i = 0; i < 16; i++)
		p[i] = alloc_pages(GFP_USER, 0);
	for (int i = 0; i < 16; i++)
		if (p[i])
			free_pages(p[i], 0);
}

KTEST_SMP(page_alloc, remote_drain, 2)
{
	bool pcp_was = opt_pcp;
	u64 before = nr_free_pages();
	opt_pcp = true;
	on_each_cpu(fill_pcp_fn, NULL, true);
	unsigned me = smp_processor_id();
	for (unsigned c = 0; c < nr_cpu_ids; c++) {
		if (c == me)
			continue;
		KT_EXPECT(pcp_count(c) > 0);
		drain_pages_cpu(c);
		KT_EXPECT_EQ(pcp_count(c), 0);
	}
	KT_EXPECT(pcp_count(me) > 0);
	drain_all_pages();
	for (unsigned c = 0; c < nr_cpu_ids; c++)
		KT_EXPECT_EQ(pcp_count(c), 0);
	opt_pcp = pcp_was;
	check_all(kt, before);
}

/*
 * Remote drains while the target CPUs are busy allocating. Every other CPU runs the stress
 * loop in thread context (smp_run_parallel, interrupts on, and polling its call queue
 * between operations); this CPU meanwhile drains random ones of them with waiting calls
 * and allocates and frees itself. (The stress once ran inside a call handler launched
 * with non-waiting calls: a drain queued behind it in the same batch of the target's
 * queue then waited for the stress loop, which waited for more drains - a deadlock seen
 * with 8 vCPUs under multi-threaded TCG.)
 */
static u64 drains_issued_here;

static void drain_or_stress(void *info)
{
	struct stress_ctx *c = info;
	if (smp_processor_id() != 0) {
		stress_fn(c);
		return;
	}
	u64 s = c->seed, issued = 0;
	while (atomic_load(&c->done) < nr_cpu_ids - 1) {
		unsigned t = 1 + (unsigned)(xorshift64(&s) % (nr_cpu_ids - 1));
		drain_pages_cpu(t);
		issued++;
		atomic_inc(&c->drains_issued);
		unsigned order = (unsigned)(xorshift64(&s) % 4);
		struct page *p = alloc_pages(GFP_USER, order);
		if (p)
			free_pages(p, order);
	}
	drains_issued_here = issued;
}

KTEST_SMP(page_alloc, remote_drains_during_stress, 2)
{
	bool pcp_was = opt_pcp;
	u64 before = nr_free_pages();
	if (smp_processor_id() != 0)
		kt_skip("expects to run on CPU 0");
	opt_pcp = true;
	memset(&stress, 0, sizeof(stress));
	stress.ops = 4000;
	stress.seed = event_sum(EV_ZONE_LOCK) + 7;
	stress.poll_calls = true;
	stress.min_drains = 32;
	bound_by_time(&stress);
	u64 drains0 = event_sum(EV_PCP_DRAIN);
	smp_run_parallel(&cpu_online_mask, drain_or_stress, &stress);
	u64 issued = drains_issued_here;
	report(kt, &stress, "stress with remote drains");
	printk("# %llu remote drains issued, %llu drains of non-empty lists\n",
	       (unsigned long long)issued, (unsigned long long)(event_sum(EV_PCP_DRAIN) - drains0));
	KT_EXPECT(issued >= stress.min_drains);
	opt_pcp = pcp_was;
	check_all(kt, before);
}
