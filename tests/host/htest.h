/*
 * Host unit-test framework: tests print KTAP version 1 like the in-kernel tests, so one
 * parser reads both. Each test binary is one suite:
 *
 *     HTEST(name) { HT_EXPECT(cond); HT_ASSERT(cond); ... }
 *     int main(void) { return htest_main("suite"); }
 *
 * Tests run in declaration order (constructor registration). Build with
 * -fsanitize=address,undefined (HOSTCFLAGS in the Makefile).
 */
#ifndef BAREMM_HTEST_H
#define BAREMM_HTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct htest {
	const char *name;
	void (*fn)(int *failures);
};

void htest_register(const char *name, void (*fn)(int *failures));
int htest_main(const char *suite);
void htest_fail(int *failures, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define HTEST(name_)                                                       \
	static void htest_##name_(int *ht_failures);                       \
	__attribute__((constructor)) static void htest_reg_##name_(void)  \
	{                                                                  \
		htest_register(#name_, htest_##name_);                     \
	}                                                                  \
	static void htest_##name_(int *ht_failures)

#define HT_EXPECT(cond)                                                                  \
	do {                                                                             \
		if (!(cond))                                                             \
			htest_fail(ht_failures, __FILE__, __LINE__, "expected %s", #cond); \
	} while (0)
#define HT_EXPECT_EQ(a, b)                                                                    \
	do {                                                                                  \
		unsigned long long __a = (unsigned long long)(a), __b = (unsigned long long)(b); \
		if (__a != __b)                                                               \
			htest_fail(ht_failures, __FILE__, __LINE__, "expected %s == %s (%llu != %llu)", \
				   #a, #b, __a, __b);                                         \
	} while (0)
#define HT_ASSERT(cond)                                                                       \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			htest_fail(ht_failures, __FILE__, __LINE__, "assertion %s", #cond);   \
			return;                                                               \
		}                                                                             \
	} while (0)

#endif
