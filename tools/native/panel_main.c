/*
 * The native panel's runner (docs/COSTMODEL.md, "The native panel"). Built twice:
 * `panel` (micro, allocator and two-CPU rows) and, with -DPANEL_VM, `panel_vm` (page-
 * table rows over the fake allocator).
 *
 * Natively (tools/baremm native-panel runs it): pinned to CPU 0, R rounds, each round
 * one run of every row in a rotating order (interleaved, so a noisy neighbour hits every
 * row alike); it prints each row's per-op TSC ticks of every round and the core clock
 * against the TSC measured before and after.
 *
 * As /init of the Linux guest under the cost model (pid 1): every row's warm-up run and
 * R measured runs back to back (the model is deterministic; each run prepares its own
 * starting state), each closed with the model's marks, so the plugin prints one
 * BAREMM-RESULT line per row; then `panel` runs /panel_vm and powers the machine off.
 *
 * Output lines: PANEL-INFO, PANEL-CLOCK core_per_tsc= tsc_ghz=, PANEL name= group=
 * cpus= ops= unit=tsc values=v1,...,vR (per-op ticks of each round), PANEL-END.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "panel.h"

#define MAX_ROWS 64
#define MAX_ROUNDS 1000

void *panel_alloc(uint64_t bytes)
{
	const uint64_t huge = 2ull << 20;
	uint64_t len = (bytes + huge - 1) & ~(huge - 1);
	char *raw = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	char *p = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(p, len, MADV_HUGEPAGE);
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	/* fault it in by the kernel (cheaper than a memset under the model; Linux >= 5.14) */
	if (madvise(p, len, MADV_POPULATE_WRITE))
		memset(p, 0, len);
	return p;
}

uint64_t panel_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int panel_model;
static struct panel_wl *rows[MAX_ROWS];
static int nrows;

static void add_table(struct panel_wl *t, const char *only)
{
	for (; t->name; t++) {
		if (only && *only) {
			char key[80];
			snprintf(key, sizeof(key), ",%s,", t->name);
			char list[1024];
			snprintf(list, sizeof(list), ",%s,", only);
			if (!strstr(list, key))
				continue;
		}
		if (nrows < MAX_ROWS)
			rows[nrows++] = t;
	}
}

static void setup_all(void)
{
	for (int i = 0; i < nrows; i++)
		if (rows[i]->setup && rows[i]->setup(rows[i])) {
			printf("PANEL-ERROR row=%s reason=setup_failed errno=%d\n", rows[i]->name, errno);
			fflush(stdout);
			exit(3);
		}
}

static void print_row(struct panel_wl *w, uint64_t ops, const double *v, int n)
{
	printf("PANEL name=%s group=%s cpus=%d ops=%llu unit=tsc values=", w->name, w->group, w->cpus,
	       (unsigned long long)ops);
	for (int i = 0; i < n; i++)
		printf("%s%.3f", i ? "," : "", v[i]);
	printf(" desc=\"%s\"\n", w->desc);
}

static void run_native(int rounds)
{
	static double vals[MAX_ROWS][MAX_ROUNDS];
	uint64_t ops[MAX_ROWS] = { 0 };
	double c0 = native_core_per_tsc(50);
	printf("PANEL-CLOCK when=before core_per_tsc=%.5f tsc_ghz=%.5f\n", c0, native_tsc_ghz(100));
	for (int i = 0; i < nrows; i++) {	/* warm-up: page faults, frequency */
		uint64_t o;
		rows[i]->run(rows[i], &o);
	}
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < nrows; k++) {
			int i = (k + r) % nrows;
			uint64_t o = 0, t = rows[i]->run(rows[i], &o);
			ops[i] = o;
			vals[i][r] = (double)t / (double)(o ? o : 1);
		}
	double c1 = native_core_per_tsc(50);
	printf("PANEL-CLOCK when=after core_per_tsc=%.5f tsc_ghz=%.5f\n", c1, native_tsc_ghz(100));
	for (int i = 0; i < nrows; i++)
		print_row(rows[i], ops[i], vals[i], rounds);
}

static void run_model(int rounds)
{
	static double vals[MAX_ROUNDS];
	for (int i = 0; i < nrows; i++) {
		struct panel_wl *w = rows[i];
		uint64_t o = 0;
		for (int r = -1; r < rounds; r++) {
			uint64_t t = w->run(w, &o);
			model_sample(o);
			model_round(0, r < 0);
			if (r >= 0)
				vals[r] = (double)t / (double)(o ? o : 1);
		}
		char key[256];
		int len = snprintf(key, sizeof(key), "bench=panel.%s variant=default cpus=%d case=- metric=op",
				   w->name, w->cpus);
		model_figure(key, (unsigned long)len, 0);
		print_row(w, o, vals, rounds);
		fflush(stdout);
	}
}

static void guest_console(void)
{
	mkdir("/dev", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	int fd = open("/dev/console", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
}

int main(int argc, char **argv)
{
	int guest = getpid() == 1;
	int rounds = guest ? 5 : 31;
	const char *only = getenv("panel_only");
	if (guest)
		guest_console();
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *r = getenv("panel_rounds");
	/* as /init, argv holds the kernel command line's words it did not know: ignore them */
	for (int i = 1; i < argc && !guest; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			r = argv[++i];
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (strcmp(argv[i], "--model")) {
			fprintf(stderr, "usage: %s [--rounds N] [--only row,row] [--model]\n", argv[0]);
			return 2;
		}
	}
	int model = guest;
	for (int i = 1; i < argc && !guest; i++)
		if (!strcmp(argv[i], "--model"))
			model = 1;
	if (model)
		rounds = 5;
	panel_model = model;
	if (r) {
		rounds = atoi(r);
		if (rounds < 1 || rounds > MAX_ROUNDS) {
			fprintf(stderr, "panel: rounds must be 1..%d (got %s)\n", MAX_ROUNDS, r);
			return 2;
		}
	}
#ifdef PANEL_VM
	add_table(panel_vm, only);
#else
	add_table(panel_micro, only);
	add_table(panel_mm, only);
	add_table(panel_smp, only);
#endif
	if (native_pin(0)) {
		printf("PANEL-ERROR reason=cannot_pin_cpu0\n");
		return 3;
	}
	if (guest)
		model_hello();
	printf("PANEL-INFO binary=%s rows=%d rounds=%d mode=%s cpus=%ld\n", argv[0], nrows, rounds,
	       model ? "model" : "native", sysconf(_SC_NPROCESSORS_ONLN));
	setup_all();
	if (model)
		run_model(rounds);
	else
		run_native(rounds);
#ifndef PANEL_VM
	if (guest) {
		pid_t p = fork();
		if (p == 0) {
			execl("/panel_vm", "/panel_vm", "--model", (char *)NULL);
			_exit(127);
		}
		int st = 0;
		waitpid(p, &st, 0);
		printf("PANEL-END vm_status=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128);
		fflush(stdout);
		sync();
		reboot(RB_POWER_OFF);
	}
#endif
	if (!guest)
		printf("PANEL-END\n");
	return 0;
}
