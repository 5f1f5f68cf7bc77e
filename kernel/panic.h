/*
 * panic(): print the message, the CPU, a register dump and backtrace, stop the other CPUs
 * and leave through the panic exit status. BUG_ON() panics naming file and line.
 * In host builds panic() prints and aborts, so sanitizer runs show the stack.
 */
#ifndef BAREMM_PANIC_H
#define BAREMM_PANIC_H

#include "kernel/types.h"

__noreturn void panic(const char *fmt, ...) __printf(1, 2);

#define BUG_ON(cond)                                                          \
	do {                                                                  \
		if (unlikely(cond))                                           \
			panic("BUG_ON(%s) at %s:%d", #cond, __FILE__, __LINE__); \
	} while (0)
#define BUG() panic("BUG at %s:%d", __FILE__, __LINE__)

#endif
