/*
 * In-kernel tests, printed as KTAP version 1. A test is declared anywhere with
 *
 *     KTEST(suite, name) { ... KT_EXPECT(cond); KT_ASSERT(cond); ... }
 *
 * and lands in the `baremm_tests` linker section; tests of one suite form a nested KTAP
 * suite. `tests=<glob>` selects by "suite.name" (`tests=list` lists them). A test runs on
 * the boot CPU with interrupts enabled and every other CPU idle and ready for cross-CPU
 * calls. KT_EXPECT records a failure and goes on; KT_ASSERT records it and ends the test.
 * kt_skip("reason") ends the test as SKIP. Failures print '#' diagnostics with file:line.
 */
#ifndef BAREMM_KTEST_H
#define BAREMM_KTEST_H

#include "kernel/types.h"
#include "kernel/printk.h"

struct ktest_ctx {
	int failures;
	bool skipped;
	const char *skip_reason;
};

struct ktest {
	const char *suite;
	const char *name;
	void (*fn)(struct ktest_ctx *kt);
	unsigned min_cpus;	/* SKIP when fewer CPUs are online */
} __aligned(16);

#define __KTEST(suite_, name_, mincpus_)                                                   \
	static void ktest_##suite_##_##name_(struct ktest_ctx *kt);                        \
	static const struct ktest __ktest_##suite_##_##name_                                \
		__attribute__((used, section("baremm_tests"), aligned(16))) = {            \
			.suite = #suite_, .name = #name_, .fn = ktest_##suite_##_##name_,  \
			.min_cpus = (mincpus_) };                                           \
	static void ktest_##suite_##_##name_(struct ktest_ctx *kt __unused)

#define KTEST(suite_, name_) __KTEST(suite_, name_, 1)
/* A test that needs at least n CPUs (SKIP with the reason otherwise). */
#define KTEST_SMP(suite_, name_, n) __KTEST(suite_, name_, n)

void kt_fail(struct ktest_ctx *kt, const char *file, int line, const char *fmt, ...) __printf(4, 5);

#define KT_EXPECT(cond)                                                         \
	do {                                                                    \
		if (!(cond))                                                    \
			kt_fail(kt, __FILE__, __LINE__, "expected %s", #cond);  \
	} while (0)
#define KT_EXPECT_MSG(cond, ...)                                                \
	do {                                                                    \
		if (!(cond))                                                    \
			kt_fail(kt, __FILE__, __LINE__, __VA_ARGS__);           \
	} while (0)
#define KT_EXPECT_EQ(a, b)                                                                   \
	do {                                                                                 \
		u64 __a = (u64)(a), __b = (u64)(b);                                          \
		if (__a != __b)                                                              \
			kt_fail(kt, __FILE__, __LINE__, "expected %s == %s (%llu != %llu)", #a, \
				#b, (unsigned long long)__a, (unsigned long long)__b);        \
	} while (0)
#define KT_ASSERT(cond)                                                         \
	do {                                                                    \
		if (!(cond)) {                                                  \
			kt_fail(kt, __FILE__, __LINE__, "assertion %s", #cond); \
			return;                                                 \
		}                                                               \
	} while (0)
#define kt_skip(reason)                 \
	do {                            \
		kt->skipped = true;     \
		kt->skip_reason = (reason); \
		return;                 \
	} while (0)

extern const struct ktest __start_baremm_tests[], __stop_baremm_tests[];

/* Run the tests matching @glob; returns the number of failures. */
int ktest_run(const char *glob);
/* How many tests the glob selects (0: a typo, which main reports as a bad option). */
int ktest_count(const char *glob);
void ktest_list(void);

#endif
