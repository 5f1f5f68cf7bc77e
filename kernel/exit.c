#include "kernel/exit.h"
#include "kernel/printk.h"
#include "kernel/atomic.h"
#include "arch/x86_64/cpu.h"

unsigned bench_results_printed;
static int exiting;

const char *exit_status_name(enum exit_status s)
{
	switch (s) {
	case EXIT_PASS: return "pass";
	case EXIT_TEST_FAILED: return "test_failed";
	case EXIT_BAD_OPTION: return "bad_option";
	case EXIT_PANIC: return "panic";
	case EXIT_WATCHDOG: return "watchdog";
	case EXIT_BENCH_ERROR: return "bench_error";
	}
	return "unknown";
}

void kernel_exit(enum exit_status s)
{
	if (atomic_xchg(&exiting, 1))
		halt_forever();
	if (printk_lines_cut && s == EXIT_PASS) {
		printk("BAREMM-ERROR printk: %u output lines were cut; the run cannot pass\n",
		       printk_lines_cut);
		s = EXIT_BENCH_ERROR;
	}
	printk("BAREMM-END status=%s results=%u\n", exit_status_name(s), bench_results_printed);
	outl(0xf4, (u32)s);	/* QEMU isa-debug-exit: QEMU quits shortly after this write */
	for (int i = 0; i < 10000000; i++)
		__builtin_ia32_pause();
	printk("baremm: run finished (status %s); no debug-exit device, halting.\n", exit_status_name(s));
	halt_forever();
}
