/*
 * Linux reference side of baremm's mm benchmarks (tools/linux-ref/README.md).
 *
 * Built with `gcc -static -O2 -pthread`, packed as /init of an initramfs and booted on a
 * stock Debian kernel in the same QEMU as baremm. It is the whole userspace: it mounts
 * sysfs/proc only to report the kernel's settings, runs the microbenchmarks, prints one
 * `LREF ...` line per result to the console and powers the machine off.
 *
 * Timing is rdtsc around the operations; under `-icount shift=0` one TSC tick is one
 * guest instruction, so the figures are instructions per operation and repeat exactly.
 * The timed regions carry baremm's cost-model marks (arch/x86_64/costmodel.h, the same
 * protocol as baremm's harness), so under the cost-model plugin every figure also comes
 * out in model cycles (pf1_touch and sparse_fork_marginal excepted: nested or derived).
 *
 * Benchmarks (same shapes as baremm's bench/vm.c and bench/tlb.c):
 *   pf1                 8 MiB private anonymous: mmap, write one byte per 4 KiB page,
 *                       munmap; 2048 faults per run. op = one fault, map/unmap amortised
 *                       (baremm vm.page_fault1 bench_cpus=1). pf1_touch: the same runs,
 *                       only the write loop timed.
 *   sparse_fork         1 or 16 GiB region (1 GiB aligned, MAP_NORESERVE), one byte read
 *                       per 2 MiB (a page table each), then fork + child _exit + waitpid.
 *                       op = one table page (len/2M PTs + len/1G PMDs), fork/exit fixed
 *                       costs amortised (baremm vm.sparse_tables). fork_empty: the same
 *                       fork + exit + wait without the region (per fork), so
 *                       sparse_fork_marginal = (sparse - empty) / tables.
 *   sparse_fork_reads   the seed-002 thread's test: a 16 GiB region only read, one byte
 *                       per 2 MiB (no write: no anon_vma, so fork copies none of its
 *                       tables), then fork + child _exit + waitpid; op = one fork. Untimed
 *                       LREF-INFO pgtables lines give the child's and parent's VmPTE and
 *                       nr_page_table_pages around a fork of the empty process, of the
 *                       read-only region, and after one write to it.
 *   sparse_munmap       mmap the region, one read per 2 MiB, munmap. op = one table page
 *                       (baremm vm.sparse_tables_munmap). Both sparse shapes run with the
 *                       read at slot 0, slot 511 or spread over the slots of each 2 MiB
 *                       (case slot=, baremm's vm_sparse_slot).
 *   zap_madvise/zap_munmap  N = 1, 32, 64 written pages zapped by madvise(MADV_DONTNEED)
 *                       or munmap, only the call timed (the re-mmap and re-touch are not).
 *                       remote=0: no second thread. remote=1: a second thread of the same
 *                       process pinned to CPU 1 spins reading a flag in the same mm, so
 *                       every flush must shoot down CPU 1. spin=pause / spin=busy: the
 *                       spinner's loop with or without the pause instruction (under icount
 *                       pause hands the vCPU over; a busy loop holds it for its quantum).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../arch/x86_64/costmodel.h"

#define PAGE 4096UL
#define PMD_SZ (2UL << 20)
#define PUD_SZ (1UL << 30)
#define SPARSE_VA 0x100000000000UL /* 16 TiB: 1 GiB aligned, far from everything else */
#define MAXRUNS 64

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

/* A timed region: the model brackets exactly what the TSC figure times. */
static inline uint64_t tstart(void)
{
	model_region_begin();
	return rdtsc();
}

static inline uint64_t tstop(uint64_t t0)
{
	uint64_t t = rdtsc() - t0;
	model_region_end();
	return t;
}

/* End of one run (warm-up or measured) for the model: its operations, then the round. */
static void run_done(uint64_t ops, int warmup)
{
	model_sample(ops);
	model_round(0, warmup);
}

static int g_ncpus = 1;

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("LREF-ERROR ");
	vprintf(fmt, ap);
	printf(" (errno %d %s)\n", errno, strerror(errno));
	va_end(ap);
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	_exit(1);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/*
 * One result line: per-op values of every measured run, median/min/max. With @model the
 * cost model prints its figure for the same runs (key bench=lref.<name>; only for a
 * figure whose runs were bracketed by tstart/tstop and closed by run_done).
 */
static void report(const char *name, const char *cas, const char *unit, double *v, int n,
		   uint64_t ops_per_run, int model)
{
	if (model) {
		char key[256];
		int len = snprintf(key, sizeof(key), "bench=lref.%s variant=default cpus=%d case=%s "
				   "metric=%s", name, g_ncpus, cas, unit);
		model_figure(key, (unsigned long)len, 0);
	}
	double s[MAXRUNS];
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_d);
	double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	printf("LREF bench=%s case=%s unit=%s median=%.1f min=%.1f max=%.1f runs=%d ops_per_run=%llu values=",
	       name, cas, unit, med, s[0], s[n - 1], n, (unsigned long long)ops_per_run);
	for (int i = 0; i < n; i++)
		printf("%s%.1f", i ? "," : "", v[i]);
	printf("\n");
	fflush(stdout);
}

static int g_runs = 8, g_warmup = 1;

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity(cpu %d)", cpu);
}

/* ---- page fault (vm.page_fault1) ---- */

static void bench_pf1(void)
{
	const uint64_t len = 8UL << 20, pages = len / PAGE, iters = 2048;
	double all[MAXRUNS], touch[MAXRUNS];
	for (int r = -g_warmup; r < g_runs; r++) {
		uint64_t done = 0, tt = 0;
		uint64_t t0 = tstart();
		while (done < iters) {
			uint64_t n = pages < iters - done ? pages : iters - done;
			volatile char *a = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (a == MAP_FAILED)
				die("pf1 mmap");
			uint64_t t1 = rdtsc();
			for (uint64_t i = 0; i < n; i++)
				a[i * PAGE] = 1;
			tt += rdtsc() - t1;
			if (munmap((void *)a, n * PAGE))
				die("pf1 munmap");
			done += n;
		}
		uint64_t t = tstop(t0);
		run_done(done, r < 0);
		if (r >= 0) {
			all[r] = (double)t / done;
			touch[r] = (double)tt / done;
		}
	}
	report("pf1", "8MiB", "per_fault", all, g_runs, iters, 1);
	report("pf1_touch", "8MiB", "per_fault", touch, g_runs, iters, 0);
}

/* ---- page-table build + teardown (vm.sparse_tables, vm.sparse_tables_munmap) ---- */

/* Which 4 KiB slot of each 2 MiB is touched (baremm's vm_sparse_slot): 0, 511, or
 * spread = slot (i * 97) mod 512 for the i-th 2 MiB, every slot once per GiB. */
enum { SLOT_0, SLOT_511, SLOT_SPREAD };
static const char *const slot_name[] = { "0", "511", "spread" };

static uint64_t slot_off(int mode, uint64_t i)
{
	uint64_t slot = mode == SLOT_0 ? 0 : mode == SLOT_511 ? 511 : (i * 97) % 512;
	return slot * PAGE;
}

/* One read per 2 MiB at the mode's slot, from the @first-th 2 MiB on. */
static void sparse_read(volatile char *a, uint64_t len, int mode, uint64_t first)
{
	for (uint64_t i = first; i * PMD_SZ < len; i++)
		if (a[i * PMD_SZ + slot_off(mode, i)] != 0)
			die("sparse region not zero");
}

static volatile char *sparse_map(uint64_t len)
{
	void *a = mmap((void *)SPARSE_VA, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (a == MAP_FAILED || a != (void *)SPARSE_VA)
		die("sparse mmap of %llu MiB", (unsigned long long)(len >> 20));
	return a;
}

static uint64_t fork_exit_wait(void)
{
	uint64_t t0 = tstart();
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0)
		_exit(0);
	int st;
	if (waitpid(p, &st, 0) != p)
		die("waitpid");
	return tstop(t0);
}

/* Warm-up and measured runs of fork_exit_wait, one fork each: @v gets the measured ones. */
static void time_forks(double *v)
{
	for (int r = -g_warmup; r < g_runs; r++) {
		uint64_t t = fork_exit_wait();
		run_done(1, r < 0);
		if (r >= 0)
			v[r] = (double)t;
	}
}

static double bench_fork_empty(void)
{
	double v[MAXRUNS];
	time_forks(v);
	report("fork_empty", "-", "per_fork", v, g_runs, 1, 1);
	double s[MAXRUNS];
	memcpy(s, v, sizeof(double) * g_runs);
	qsort(s, g_runs, sizeof(double), cmp_d);
	return g_runs % 2 ? s[g_runs / 2] : (s[g_runs / 2 - 1] + s[g_runs / 2]) / 2;
}

static void bench_sparse_fork(uint64_t gib, int mode, double empty)
{
	uint64_t len = gib << 30, tables = len / PMD_SZ + len / PUD_SZ;
	volatile char *a = sparse_map(len);
	/*
	 * fork copies the page tables of an anonymous VMA only if it has an anon_vma, which a
	 * read fault (zero page) never creates: one write to the first 2 MiB's page gives it
	 * one.
	 */
	a[slot_off(mode, 0)] = 1;
	sparse_read(a, len, mode, 1);
	double v[MAXRUNS], m[MAXRUNS];
	for (int r = -g_warmup; r < g_runs; r++) {
		uint64_t t = fork_exit_wait();
		run_done(tables, r < 0);
		if (r >= 0) {
			v[r] = (double)t / tables;
			m[r] = ((double)t - empty) / tables;
		}
	}
	char cas[32];
	snprintf(cas, sizeof(cas), "gib=%llu,slot=%s", (unsigned long long)gib, slot_name[mode]);
	report("sparse_fork", cas, "per_table", v, g_runs, tables, 1);
	report("sparse_fork_marginal", cas, "per_table", m, g_runs, tables, 0);
	if (munmap((void *)a, len))
		die("sparse munmap");
}

/* A number from a "key value" line of a /proc file (VmPTE in status, a vmstat counter). */
static long proc_value(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char line[256];
	long v = -1;
	size_t k = strlen(key);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, k) && (line[k] == ' ' || line[k] == ':' || line[k] == '\t')) {
			v = strtol(line + k + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/*
 * Which page tables a fork copies (untimed): the child reports the size of its own page
 * tables (VmPTE) and the system's table pages (nr_page_table_pages) right after fork;
 * the parent reports its own and the system's after the child's exit, so the line shows
 * what the fork built and what the exit freed.
 */
static void fork_table_info(const char *tag)
{
	long before = proc_value("/proc/vmstat", "nr_page_table_pages");
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		printf("LREF-INFO pgtables %s child_VmPTE_kB=%ld nr_page_table_pages_in_child=%ld\n",
		       tag, proc_value("/proc/self/status", "VmPTE:"),
		       proc_value("/proc/vmstat", "nr_page_table_pages"));
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (waitpid(p, &st, 0) != p)
		die("waitpid");
	printf("LREF-INFO pgtables %s parent_VmPTE_kB=%ld nr_page_table_pages_before_fork=%ld "
	       "after_exit=%ld\n", tag, proc_value("/proc/self/status", "VmPTE:"), before,
	       proc_value("/proc/vmstat", "nr_page_table_pages"));
	fflush(stdout);
}

/*
 * The seed-002 thread's own test: the sparse region is only read (zero page), so it has
 * no anon_vma and fork copies none of its tables. op = one fork + exit + wait.
 */
static void bench_sparse_fork_reads(uint64_t gib, int mode)
{
	uint64_t len = gib << 30;
	char cas[32];
	snprintf(cas, sizeof(cas), "gib=%llu,slot=%s", (unsigned long long)gib, slot_name[mode]);
	fork_table_info("empty");
	volatile char *a = sparse_map(len);
	sparse_read(a, len, mode, 0);
	char tag[64];
	snprintf(tag, sizeof(tag), "reads_only:%s", cas);
	fork_table_info(tag);
	double v[MAXRUNS];
	time_forks(v);
	report("sparse_fork_reads", cas, "per_fork", v, g_runs, 1, 1);
	a[slot_off(mode, 0)] = 1;	/* the one write of sparse_fork: now an anon_vma */
	snprintf(tag, sizeof(tag), "one_write:%s", cas);
	fork_table_info(tag);
	if (munmap((void *)a, len))
		die("sparse munmap");
}

static void bench_sparse_munmap(uint64_t gib, int mode)
{
	uint64_t len = gib << 30, tables = len / PMD_SZ + len / PUD_SZ;
	double v[MAXRUNS];
	for (int r = -g_warmup; r < g_runs; r++) {
		uint64_t t0 = tstart();
		volatile char *a = sparse_map(len);
		sparse_read(a, len, mode, 0);
		if (munmap((void *)a, len))
			die("sparse munmap");
		uint64_t t = tstop(t0);
		run_done(tables, r < 0);
		if (r >= 0)
			v[r] = (double)t / tables;
	}
	char cas[32];
	snprintf(cas, sizeof(cas), "gib=%llu,slot=%s", (unsigned long long)gib, slot_name[mode]);
	report("sparse_munmap", cas, "per_table", v, g_runs, tables, 1);
}

/* ---- zap with or without a shootdown ---- */

static volatile int spin_stop, spin_ready;
static int spin_pause;

static void *spinner(void *arg)
{
	(void)arg;
	pin(1);
	__atomic_store_n(&spin_ready, 1, __ATOMIC_RELEASE);
	if (spin_pause)
		while (!__atomic_load_n(&spin_stop, __ATOMIC_ACQUIRE))
			__builtin_ia32_pause();
	else
		while (!__atomic_load_n(&spin_stop, __ATOMIC_ACQUIRE))
			;
	return NULL;
}

/*
 * The zapped pages live at a fixed place: ZAP_VA + 2 pages, with a one-page PROT_NONE
 * guard at ZAP_VA in the same 2 MiB. The gap stops the zap region from merging with a
 * neighbouring VMA (munmap would then split a VMA), and the guard keeps the page table
 * alive (munmap would otherwise free the table, and the PMD/PUD above it, every time).
 */
#define ZAP_VA 0x200000000000UL

static volatile char *zap_map(uint64_t n)
{
	void *b = mmap((void *)(ZAP_VA + 2 * PAGE), n * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (b == MAP_FAILED || b != (void *)(ZAP_VA + 2 * PAGE))
		die("zap mmap of %llu pages", (unsigned long long)n);
	return b;
}

static void zap_cases(const char *tag, int iters)
{
	static const uint64_t npages[] = { 1, 32, 64 };
	static int guard;
	if (!guard++ && mmap((void *)ZAP_VA, PAGE, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (void *)ZAP_VA)
		die("zap guard mmap");
	for (unsigned k = 0; k < sizeof(npages) / sizeof(npages[0]); k++) {
		uint64_t n = npages[k];
		double v[MAXRUNS];
		char cas[64];
		snprintf(cas, sizeof(cas), "pages=%llu,%s", (unsigned long long)n, tag);
		/* madvise(MADV_DONTNEED): the VMA stays, the pages and their PTEs go */
		volatile char *a = zap_map(64);
		for (int r = -g_warmup; r < g_runs; r++) {
			uint64_t t = 0;
			for (int i = 0; i < iters; i++) {
				for (uint64_t p = 0; p < n; p++)
					a[p * PAGE] = 1;
				uint64_t t0 = tstart();
				if (madvise((void *)a, n * PAGE, MADV_DONTNEED))
					die("madvise");
				t += tstop(t0);
			}
			run_done((uint64_t)iters, r < 0);
			if (r >= 0)
				v[r] = (double)t / iters;
		}
		munmap((void *)a, 64 * PAGE);
		report("zap_madvise", cas, "per_call", v, g_runs, iters, 1);
		/* munmap: the VMA goes too (the mmap and the touch are not timed) */
		for (int r = -g_warmup; r < g_runs; r++) {
			uint64_t t = 0;
			for (int i = 0; i < iters; i++) {
				volatile char *b = zap_map(n);
				for (uint64_t p = 0; p < n; p++)
					b[p * PAGE] = 1;
				uint64_t t0 = tstart();
				if (munmap((void *)b, n * PAGE))
					die("munmap");
				t += tstop(t0);
			}
			run_done((uint64_t)iters, r < 0);
			if (r >= 0)
				v[r] = (double)t / iters;
		}
		report("zap_munmap", cas, "per_call", v, g_runs, iters, 1);
	}
}

static void bench_zap(int ncpus, int iters)
{
	pin(0);
	zap_cases("remote=0", iters);
	if (ncpus < 2)
		return;
	for (int mode = 0; mode < 2; mode++) {
		pthread_t th;
		spin_pause = mode == 0;
		spin_stop = 0;
		spin_ready = 0;
		if (pthread_create(&th, NULL, spinner, NULL))
			die("pthread_create");
		while (!__atomic_load_n(&spin_ready, __ATOMIC_ACQUIRE))
			__builtin_ia32_pause();
		zap_cases(mode == 0 ? "remote=1,spin=pause" : "remote=1,spin=busy", iters);
		__atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
	}
}

/* ---- environment ---- */

static void print_file(const char *tag, const char *path)
{
	char buf[256] = "";
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	printf("LREF-INFO %s: %s\n", tag, buf);
}

static void env_info(int ncpus)
{
	struct utsname u;
	uname(&u);
	printf("LREF-INFO kernel %s %s %s cpus=%d\n", u.sysname, u.release, u.version, ncpus);
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	print_file("cmdline", "/proc/cmdline");
	print_file("thp", "/sys/kernel/mm/transparent_hugepage/enabled");
	print_file("clocksource", "/sys/devices/system/clocksource/clocksource0/current_clocksource");
	static const char *vulns[] = { "meltdown", "spectre_v1", "spectre_v2", "retbleed",
				       "spec_store_bypass", "mds", "srbds" };
	for (unsigned i = 0; i < sizeof(vulns) / sizeof(vulns[0]); i++) {
		char p[128];
		snprintf(p, sizeof(p), "/sys/devices/system/cpu/vulnerabilities/%s", vulns[i]);
		print_file(vulns[i], p);
	}
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[512];
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5)) {
				line[strcspn(line, "\n")] = 0;
				printf("LREF-INFO cpu0 %s\n", line);
				if (!strncmp(line, "flags", 5))
					break;
			}
		fclose(f);
	}
	fflush(stdout);
}

static int open_console(void)
{
	if (write(1, "", 0) == 0 && fcntl(1, F_GETFD) >= 0)
		return 0;
	mkdir("/dev", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	int fd = open("/dev/console", O_RDWR);
	if (fd < 0)
		return -1;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	return 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	open_console();
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* belt and braces with transparent_hugepage=never: no huge pages in this process */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	int ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	g_ncpus = ncpus;
	model_hello();	/* under the cost model: the plugin states its profile */
	const char *only = getenv("lref_only"); /* kernel cmdline lref_only=pf|sparse|seed002|zap */
	const char *runs = getenv("lref_runs");
	if (runs && atoi(runs) > 0 && atoi(runs) <= MAXRUNS)
		g_runs = atoi(runs);
	env_info(ncpus);
	printf("LREF-START runs=%d warmup=%d\n", g_runs, g_warmup);
	pin(0);
	if (!only || !strcmp(only, "pf"))
		bench_pf1();
	if (!only || !strcmp(only, "sparse") || !strcmp(only, "seed002"))
		bench_sparse_fork_reads(16, SLOT_0);
	if (!only || !strcmp(only, "sparse")) {
		double empty = bench_fork_empty();
		for (int mode = SLOT_0; mode <= SLOT_SPREAD; mode++) {
			bench_sparse_fork(1, mode, empty);
			bench_sparse_fork(16, mode, empty);
			bench_sparse_munmap(1, mode);
			bench_sparse_munmap(16, mode);
		}
	}
	if (!only || !strcmp(only, "zap"))
		bench_zap(ncpus, 100);
	printf("LREF-END\n");
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
