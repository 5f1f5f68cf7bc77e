/*
 * The in-kernel test runner: KTAP version 1 on the console. Tests are grouped by suite
 * in link order; each selected suite becomes a nested KTAP suite. The totals line counts
 * leaf tests.
 */
#include "kernel/ktest.h"
#include "kernel/string.h"
#include "kernel/percpu.h"
#include "kernel/options.h"

static char test_fullname(const struct ktest *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s.%s", t->suite, t->name);
	return 0;
}

static bool selected(const struct ktest *t, const char *glob)
{
	char name[128];
	test_fullname(t, name, sizeof(name));
	return glob_match(glob, name);
}

void kt_fail(struct ktest_ctx *kt, const char *file, int line, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printk("        # %s:%d: %s\n", file, line, msg);
	kt->failures++;
}

void ktest_list(void)
{
	const struct ktest *t;
	for (t = __start_baremm_tests; t < __stop_baremm_tests; t++)
		printk("test %s.%s%s\n", t->suite, t->name, t->min_cpus > 1 ? " (smp)" : "");
}

/* A suite is a maximal run of consecutive tests with the same suite name in link order;
 * tests of one suite live in one file, so this groups them. */
int ktest_run(const char *glob)
{
	const struct ktest *t, *start = __start_baremm_tests, *end = __stop_baremm_tests;
	int nsuites = 0, pass = 0, fail = 0, skip = 0;
	for (t = start; t < end; t++) {
		if (!selected(t, glob))
			continue;
		if (t == start || strcmp(t->suite, (t - 1)->suite) || !selected(t - 1, glob))
			nsuites++;
	}
	printk("KTAP version 1\n1..%d\n", nsuites);
	int suite_no = 0;
	for (t = start; t < end;) {
		if (!selected(t, glob)) {
			t++;
			continue;
		}
		const struct ktest *s = t;
		int n = 0;
		for (const struct ktest *u = s; u < end && !strcmp(u->suite, s->suite) && selected(u, glob); u++)
			n++;
		printk("    KTAP version 1\n    # Subtest: %s\n    1..%d\n", s->suite, n);
		int suite_fail = 0;
		for (int i = 0; i < n; i++, t++) {
			struct ktest_ctx kt = { 0, false, NULL };
			if (nr_cpu_ids < t->min_cpus) {
				printk("    ok %d %s # SKIP needs %u CPUs, %u online\n", i + 1, t->name,
				       t->min_cpus, nr_cpu_ids);
				skip++;
				continue;
			}
			char doing[96];
			snprintf(doing, sizeof(doing), "test %s.%s", t->suite, t->name);
			set_doing(doing);
			t->fn(&kt);
			set_doing("tests");
			if (kt.failures) {
				printk("    not ok %d %s\n", i + 1, t->name);
				fail++;
				suite_fail++;
			} else if (kt.skipped) {
				printk("    ok %d %s # SKIP %s\n", i + 1, t->name, kt.skip_reason);
				skip++;
			} else {
				printk("    ok %d %s\n", i + 1, t->name);
				pass++;
			}
		}
		printk("%s %d %s\n", suite_fail ? "not ok" : "ok", ++suite_no, s->suite);
	}
	printk("# Totals: pass:%d fail:%d skip:%d total:%d\n", pass, fail, skip, pass + fail + skip);
	return fail;
}
