/*
 * Randomized tests of the page allocator against a simple model: ~1.5 million random
 * alloc/free operations (random orders, migratetypes, CPUs, pcp on/off, pcp_mt variant,
 * high/batch, bulk paths, local and remote drains), checking after each operation that
 * no page is handed out twice, blocks are aligned, stamps are intact and free pages are
 * conserved, with the full consistency check run periodically. Then the same with real
 * threads (one per simulated CPU) contending for the zone lock.
 */
#include "kernel/math.h"
#include <pthread.h>
#include <unistd.h>
#include "test_page_env.h"

#define NCPUS 4

static u64 rng_state = 0x9e3779b97f4a7c15ULL;
struct held {
	struct page *page;
	unsigned order;
	u64 stamp;
};

static unsigned pick_order(u64 *s, bool small)
{
	u64 x = xorshift64(s) % 100;
	if (x < 60 || (small && x < 70))
		return 0;
	if (x < 82 || small)
		return 1 + (unsigned)(xorshift64(s) % 3);
	if (x < 96)
		return 4 + (unsigned)(xorshift64(s) % 4);
	return 8 + (unsigned)(xorshift64(s) % 3);
}

static gfp_t pick_gfp(u64 *s)
{
	static const gfp_t types[] = { GFP_KERNEL, GFP_USER, __GFP_RECLAIMABLE };
	gfp_t g = types[xorshift64(s) % 3];
	u64 x = xorshift64(s) % 100;
	if (x < 10)
		g |= __GFP_NOPCP;
	else if (x < 15)
		g |= __GFP_ATOMIC;
	else if (x < 17)
		g |= __GFP_ZERO;
	return g;
}

HTEST(random_ops_against_model)
{
	env_setup(32, NCPUS);
	const u64 ops = 1500000, cap = 6000;
	u64 managed = nr_managed_pages();
	u8 *owned = calloc(max_pfn, 1);
	struct held *held = calloc(cap, sizeof(*held));
	u64 last_seq[NCPUS] = { 0 };
	u64 nheld = 0, held_pages = 0, fails = 0, allocs = 0, frees = 0, checks = 0;
	u64 *s = &rng_state;
	int bad = 0;

#define RFAIL(...)                                                      \
	do {                                                            \
		printf("    # op %llu: ", (unsigned long long)i);          \
		printf(__VA_ARGS__);                                    \
		printf("\n");                                           \
		bad++;                                                  \
	} while (0)

	for (u64 i = 0; i < ops && bad < 5; i++) {
		bool debug_phase = i >= 600000 && i < 700000;
		page_debug = debug_phase;
		if (i % 20000 == 0) {
			if (xorshift64(s) % 4 == 0)
				opt_pcp = !opt_pcp;
			if (xorshift64(s) % 4 == 0)
				pcp_mt = pcp_mt == PCP_MT_CACHED ? PCP_MT_LOOKUP : PCP_MT_CACHED;
			if (xorshift64(s) % 6 == 0) {
				opt_pcp_batch = xorshift64(s) % 2 ? 0 : 1 + xorshift64(s) % 40;
				opt_pcp_high = xorshift64(s) % 2 ? 0 : 1 + xorshift64(s) % 300;
			}
		}
		host_cpu_id = (unsigned)(xorshift64(s) % NCPUS);
		u64 r = xorshift64(s) % 100;
		if (r < 47 && nheld < cap) {
			unsigned order = pick_order(s, debug_phase);
			struct page *p = alloc_pages(pick_gfp(s), order);
			if (!p) {
				fails++;
				continue;
			}
			allocs++;
			u64 pfn = page_to_pfn(p), n = 1ULL << order;
			if (!IS_ALIGNED(pfn, n) || pfn + n > max_pfn)
				RFAIL("misaligned block pfn %llx order %u", (unsigned long long)pfn, order);
			for (u64 k = 0; k < n; k++) {
				if (owned[pfn + k])
					RFAIL("pfn %llx handed out twice", (unsigned long long)(pfn + k));
				owned[pfn + k] = 1;
			}
			if ((p->stamp >> 48) != host_cpu_id ||
			    (p->stamp & 0xffffffffffffULL) <= last_seq[host_cpu_id])
				RFAIL("bad stamp %llx on cpu %u", (unsigned long long)p->stamp, host_cpu_id);
			last_seq[host_cpu_id] = p->stamp & 0xffffffffffffULL;
			if (order ? !(p->flags & PG_head) || p->order != order : p->flags != 0)
				RFAIL("bad head state flags %x order %u", p->flags, p->order);
			held[nheld++] = (struct held){ p, order, p->stamp };
			held_pages += n;
		} else if (r < 94 && nheld) {
			u64 k = xorshift64(s) % nheld;
			struct held h = held[k];
			held[k] = held[--nheld];
			u64 pfn = page_to_pfn(h.page);
			for (u64 j = 0; j < (1ULL << h.order); j++) {
				if (h.page[j].stamp != h.stamp)
					RFAIL("stamp of pfn %llx changed while held",
					      (unsigned long long)(pfn + j));
				owned[pfn + j] = 0;
			}
			free_pages(h.page, h.order);
			held_pages -= 1ULL << h.order;
			frees++;
		} else if (r < 96) {
			LIST_HEAD(l);
			unsigned want = 1 + (unsigned)(xorshift64(s) % 200);
			if (nheld + want > cap)
				continue;
			unsigned got = alloc_pages_bulk(pick_gfp(s) & ~__GFP_ZERO, want, &l);
			struct page *p;
			unsigned cnt = 0;
			list_for_each_entry(p, &l, lru) {
				u64 pfn = page_to_pfn(p);
				if (owned[pfn])
					RFAIL("bulk: pfn %llx handed out twice", (unsigned long long)pfn);
				owned[pfn] = 1;
				held[nheld++] = (struct held){ p, 0, p->stamp };
				cnt++;
			}
			if (cnt != got)
				RFAIL("bulk returned %u, list holds %u", got, cnt);
			held_pages += got;
			allocs += got;
		} else if (r < 98) {
			/* free up to 100 held order-0 pages in one bulk pass */
			LIST_HEAD(l);
			unsigned n = 0;
			for (u64 k = 0; k < nheld && n < 100;) {
				if (held[k].order == 0) {
					struct held h = held[k];
					held[k] = held[--nheld];
					owned[page_to_pfn(h.page)] = 0;
					list_add_tail(&h.page->lru, &l);
					n++;
				} else {
					k++;
				}
			}
			free_pages_bulk(&l);
			held_pages -= n;
			frees += n;
		} else if (r < 99) {
			drain_local_pages();
		} else {
			drain_pages_cpu((unsigned)(xorshift64(s) % NCPUS));
		}
		if ((i & 15) == 0 && nr_free_pages() + held_pages != managed)
			RFAIL("conservation: free %llu + held %llu != managed %llu",
			      (unsigned long long)nr_free_pages(), (unsigned long long)held_pages,
			      (unsigned long long)managed);
		if (i % 50000 == 49999) {
			checks++;
			if (env_check())
				RFAIL("consistency check failed");
		}
	}
	page_debug = false;
	HT_EXPECT_EQ(bad, 0);
	printf("    # %llu allocs, %llu frees, %llu failures, %llu checks, steals %llu, "
	       "lookups %llu, zone locks %llu (contended %llu)\n",
	       (unsigned long long)allocs, (unsigned long long)frees, (unsigned long long)fails,
	       (unsigned long long)checks, (unsigned long long)ev(EV_PAGEBLOCK_STEAL),
	       (unsigned long long)ev(EV_PAGEBLOCK_LOOKUP), (unsigned long long)ev(EV_ZONE_LOCK),
	       (unsigned long long)ev(EV_ZONE_LOCK_CONTENDED));
	HT_EXPECT(fails > 0);		/* the run reached exhaustion at times */
	HT_EXPECT(ev(EV_PAGEBLOCK_STEAL) > 0);
	for (u64 k = 0; k < nheld; k++)
		free_pages(held[k].page, held[k].order);
	opt_pcp = true;
	drain_all_pages();
	HT_EXPECT_EQ(nr_free_buddy_pages(), managed);
	HT_EXPECT_EQ(env_check(), 0);
	struct page *big = alloc_pages(GFP_USER, MAX_ORDER);
	HT_EXPECT(big != NULL);
	if (big)
		free_pages(big, MAX_ORDER);
	free(owned);
	free(held);
}

/* ---- real threads, one per simulated CPU ---- */

static u8 *t_owned;
static int t_bad;

struct tctx {
	unsigned cpu;
	u64 ops;
	u64 rng_seed;
};

static void *thread_fn(void *arg)
{
	struct tctx *c = arg;
	host_cpu_id = c->cpu;
	struct held *held = calloc(512, sizeof(*held));
	unsigned nheld = 0;
	u64 s = c->rng_seed;
	for (u64 i = 0; i < c->ops; i++) {
		u64 r = xorshift64(&s) % 100;
		if (r < 50 && nheld < 512) {
			unsigned order = xorshift64(&s) % 8 ? 0 : (unsigned)(xorshift64(&s) % 5);
			struct page *p = alloc_pages(pick_gfp(&s) & ~__GFP_ZERO, order);
			if (!p)
				continue;
			u64 pfn = page_to_pfn(p);
			for (u64 k = 0; k < (1ULL << order); k++)
				if (__atomic_exchange_n(&t_owned[pfn + k], 1, __ATOMIC_RELAXED))
					__atomic_fetch_add(&t_bad, 1, __ATOMIC_RELAXED);
			held[nheld++] = (struct held){ p, order, p->stamp };
		} else if (r < 99 && nheld) {
			unsigned k = (unsigned)(xorshift64(&s) % nheld);
			struct held h = held[k];
			held[k] = held[--nheld];
			u64 pfn = page_to_pfn(h.page);
			if (h.page->stamp != h.stamp)
				__atomic_fetch_add(&t_bad, 1, __ATOMIC_RELAXED);
			for (u64 k2 = 0; k2 < (1ULL << h.order); k2++)
				__atomic_store_n(&t_owned[pfn + k2], 0, __ATOMIC_RELAXED);
			free_pages(h.page, h.order);
		} else {
			drain_local_pages();
		}
	}
	for (unsigned k = 0; k < nheld; k++) {
		u64 pfn = page_to_pfn(held[k].page);
		for (u64 k2 = 0; k2 < (1ULL << held[k].order); k2++)
			__atomic_store_n(&t_owned[pfn + k2], 0, __ATOMIC_RELAXED);
		free_pages(held[k].page, held[k].order);
	}
	free(held);
	return NULL;
}

static void run_threads(int mode, int *ht_failures)
{
	env_setup(32, NCPUS);
	pcp_mt = mode;
	opt_pcp_batch = 8;
	opt_pcp_high = 48;
	t_owned = calloc(max_pfn, 1);
	t_bad = 0;
	/* Ticket locks and more spinning threads than host CPUs don't mix (a preempted
	 * holder stalls every waiter for a time slice): one thread per host CPU, <= 4. */
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nthreads = online < 2 ? 2 : online > NCPUS ? NCPUS : (unsigned)online;
	pthread_t th[NCPUS];
	struct tctx ctx[NCPUS];
	for (unsigned c = 0; c < nthreads; c++) {
		ctx[c] = (struct tctx){ c, 40000, 0x1234567ULL * (c + 1) + (u64)mode };
		pthread_create(&th[c], NULL, thread_fn, &ctx[c]);
	}
	for (unsigned c = 0; c < nthreads; c++)
		pthread_join(th[c], NULL);
	HT_EXPECT_EQ(t_bad, 0);
	HT_EXPECT_EQ(nr_free_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
	drain_all_pages();
	HT_EXPECT_EQ(nr_free_buddy_pages(), nr_managed_pages());
	HT_EXPECT_EQ(env_check(), 0);
	printf("    # %s, %u threads: zone locks %llu, contended %llu, steals %llu\n",
	       mode == PCP_MT_CACHED ? "cached" : "lookup", nthreads, (unsigned long long)ev(EV_ZONE_LOCK),
	       (unsigned long long)ev(EV_ZONE_LOCK_CONTENDED),
	       (unsigned long long)ev(EV_PAGEBLOCK_STEAL));
	free(t_owned);
}

HTEST(threads_contend_cached)
{
	run_threads(PCP_MT_CACHED, ht_failures);
}

HTEST(threads_contend_lookup)
{
	run_threads(PCP_MT_LOOKUP, ht_failures);
}

int main(void)
{
	return htest_main("page_random");
}
