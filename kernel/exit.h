/*
 * How a run ends. On QEMU the status goes to isa-debug-exit (port 0xf4) and QEMU exits
 * with (status << 1) | 1; on a real machine (no debug-exit device) the final status line
 * is the result and the CPU halts. Every boot ends through kernel_exit().
 */
#ifndef BAREMM_EXIT_H
#define BAREMM_EXIT_H

#include "kernel/types.h"

enum exit_status {
	EXIT_PASS = 0x10,	  /* QEMU exit 33: tests passed / benchmarks done */
	EXIT_TEST_FAILED = 0x11,  /* 35: at least one test failed */
	EXIT_BAD_OPTION = 0x12,	  /* 37: unknown/malformed/out-of-range boot option */
	EXIT_PANIC = 0x13,	  /* 39: panic or unexpected CPU exception */
	EXIT_WATCHDOG = 0x14,	  /* 41: run exceeded timeout= or a CPU stopped answering */
	EXIT_BENCH_ERROR = 0x15,  /* 43: benchmark cannot run (too few CPUs, memory) */
};

const char *exit_status_name(enum exit_status s);
/* Print `BAREMM-END status=<name> results=<n>` and leave. Any CPU may call; the first
 * caller wins, later callers halt. */
__noreturn void kernel_exit(enum exit_status s);
extern unsigned bench_results_printed;

#endif
