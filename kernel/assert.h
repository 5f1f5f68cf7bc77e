/*
 * Contracts: conditions a function's comment or header states of its callers ("interrupts
 * off", "mm->lock held"), checked when the kernel is built with DEBUG_CONTRACTS=1 (the
 * Makefile defines CONFIG_DEBUG_CONTRACTS and builds into build/contracts/).
 *
 * A broken contract panics: "PANIC on CPU <n>: contract broken: <contract> in <function>()
 * at <file>:<line>[: <details>]", then the backtrace, then the panic exit status.
 *
 * In the default build a contract compiles to nothing (its condition is not evaluated):
 * the kernel that benchmarks and perf-check boot runs exactly the same instructions with
 * or without these checks, so deterministic-mode instruction counts do not move. A
 * boot-time switch would add a load and a branch at every check, inside timed regions.
 */
#ifndef BAREMM_ASSERT_H
#define BAREMM_ASSERT_H

#include "kernel/panic.h"
#include "arch/x86_64/irqflags.h"

/* Panics with the report above; @fmt adds the details ("" for none). */
__noreturn void contract_broken(const char *what, const char *func, const char *file, int line,
				const char *fmt, ...) __printf(5, 6);

#ifdef CONFIG_DEBUG_CONTRACTS
/* @what names the contract; contract_msg() adds details in printf form. */
#define contract_msg(cond, what, fmt, ...)                                                 \
	do {                                                                               \
		if (unlikely(!(cond)))                                                     \
			contract_broken(what, __func__, __FILE__, __LINE__, fmt, ##__VA_ARGS__); \
	} while (0)
#else
#define contract_msg(cond, what, fmt, ...) do { (void)sizeof(!(cond)); } while (0)
#endif
#define contract(cond, what) contract_msg(cond, what, "%s", "")

/* The caller runs with interrupts disabled on this CPU. */
#define assert_irqs_disabled() contract(irqs_disabled(), "interrupts disabled")

#endif
