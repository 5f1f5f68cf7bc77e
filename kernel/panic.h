/*
 * panic(): print the message, the CPU, a register dump and backtrace, stop the other CPUs
 * and leave through the panic exit status. BUG_ON() panics naming file and line.
 * In host builds panic() prints and aborts, so sanitizer runs show the stack.
 */
#ifndef BAREMM_PANIC_H
#define BAREMM_PANIC_H

#include "kernel/types.h"

__noreturn void panic(const char *fmt, ...) __printf(1, 2);

/* The pieces of panic() that the trap handler (arch/x86_64/traps.c) uses for an oops. */
struct pt_regs;
bool panic_enter(void);		/* false when this CPU is already panicking */
void panic_stop_others(void);
void dump_regs(const struct pt_regs *r);
void dump_backtrace(u64 rbp);
extern bool smp_stopping;

#define BUG_ON(cond)                                                          \
	do {                                                                  \
		if (unlikely(cond))                                           \
			panic("BUG_ON(%s) at %s:%d", #cond, __FILE__, __LINE__); \
	} while (0)
#define BUG() panic("BUG at %s:%d", __FILE__, __LINE__)

#endif
