#include "htest.h"
#include <stdarg.h>

#define HTEST_MAX 512
static struct htest tests[HTEST_MAX];
static int nr_tests;

void htest_register(const char *name, void (*fn)(int *failures))
{
	if (nr_tests == HTEST_MAX) {
		fprintf(stderr, "htest: too many tests\n");
		exit(2);
	}
	tests[nr_tests].name = name;
	tests[nr_tests].fn = fn;
	nr_tests++;
}

void htest_fail(int *failures, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	printf("    # %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	(*failures)++;
}

int htest_main(const char *suite)
{
	int failed = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n    1..%d\n", suite, nr_tests);
	for (int i = 0; i < nr_tests; i++) {
		int f = 0;
		tests[i].fn(&f);
		printf("    %s %d %s\n", f ? "not ok" : "ok", i + 1, tests[i].name);
		failed += f != 0;
	}
	printf("%s 1 %s\n", failed ? "not ok" : "ok", suite);
	printf("# Totals: pass:%d fail:%d skip:0 total:%d\n", nr_tests - failed, failed, nr_tests);
	return failed ? 1 : 0;
}
