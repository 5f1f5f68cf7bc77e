/*
 * The in-kernel test runner: KTAP version 1 on the console. Tests are grouped by suite
 * in link order; each selected suite becomes a nested KTAP suite. The totals line counts
 * leaf tests.
 */
#include "kernel/ktest.h"
#include "kernel/string.h"
#include "kernel/percpu.h"
#include "kernel/options.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/tsc.h"

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

static bool suite_seen_before(const struct ktest *t, const char *glob)
{
	for (const struct ktest *u = __start_baremm_tests; u < t; u++)
		if (selected(u, glob) && !strcmp(u->suite, t->suite))
			return true;
	return false;
}

int ktest_count(const char *glob)
{
	int n = 0;
	for (const struct ktest *t = __start_baremm_tests; t < __stop_baremm_tests; t++)
		n += selected(t, glob);
	return n;
}

/* Suites are listed in order of first appearance; each runs every selected test that
 * carries its name, wherever the linker placed it. */
int ktest_run(const char *glob)
{
	const struct ktest *t, *start = __start_baremm_tests, *end = __stop_baremm_tests;
	int nsuites = 0, pass = 0, fail = 0, skip = 0;
	for (t = start; t < end; t++)
		if (selected(t, glob) && !suite_seen_before(t, glob))
			nsuites++;
	printk("KTAP version 1\n1..%d\n", nsuites);
	int suite_no = 0;
	for (const struct ktest *s = start; s < end; s++) {
		if (!selected(s, glob) || suite_seen_before(s, glob))
			continue;
		int n = 0;
		for (t = s; t < end; t++)
			n += selected(t, glob) && !strcmp(t->suite, s->suite);
		printk("    KTAP version 1\n    # Subtest: %s\n    1..%d\n", s->suite, n);
		int suite_fail = 0, i = 0;
		for (t = s; t < end; t++) {
			if (!selected(t, glob) || strcmp(t->suite, s->suite))
				continue;
			i++;
			struct ktest_ctx kt = { 0, false, NULL };
			if (nr_cpu_ids < t->min_cpus) {
				printk("    ok %d %s # SKIP needs %u CPUs, %u online\n", i, t->name,
				       t->min_cpus, nr_cpu_ids);
				skip++;
				continue;
			}
			char doing[96];
			snprintf(doing, sizeof(doing), "test %s.%s", t->suite, t->name);
			set_doing(doing);
			u64 t0 = rdtsc();
			t->fn(&kt);
			printk("        # %s: duration %lu ms\n", t->name, (unsigned long)(cycles_to_ns(rdtsc() - t0) / 1000000));
			set_doing("tests");
			if (kt.failures) {
				printk("    not ok %d %s\n", i, t->name);
				fail++;
				suite_fail++;
			} else if (kt.skipped) {
				printk("    ok %d %s # SKIP %s\n", i, t->name, kt.skip_reason);
				skip++;
			} else {
				printk("    ok %d %s\n", i, t->name);
				pass++;
			}
		}
		printk("%s %d %s\n", suite_fail ? "not ok" : "ok", ++suite_no, s->suite);
	}
	printk("# Totals: pass:%d fail:%d skip:%d total:%d\n", pass, fail, skip, pass + fail + skip);
	return fail;
}
