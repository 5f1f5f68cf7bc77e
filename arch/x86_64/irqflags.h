/*
 * Interrupt-flag control of the calling CPU. In host builds (BAREMM_HOST) these are
 * no-ops so that mm/ logic compiles unchanged for the host unit tests.
 */
#ifndef BAREMM_IRQFLAGS_H
#define BAREMM_IRQFLAGS_H

#include "kernel/types.h"

#ifndef BAREMM_HOST
static inline unsigned long local_save_flags(void)
{
	unsigned long f;
	__asm__ __volatile__("pushfq; popq %0" : "=r"(f)::"memory");
	return f;
}
static inline void local_irq_disable(void) { __asm__ __volatile__("cli" ::: "memory"); }
static inline void local_irq_enable(void) { __asm__ __volatile__("sti" ::: "memory"); }
static inline unsigned long local_irq_save(void)
{
	unsigned long f = local_save_flags();
	local_irq_disable();
	return f;
}
static inline void local_irq_restore(unsigned long f)
{
	if (f & (1UL << 9))
		local_irq_enable();
}
static inline bool irqs_disabled(void) { return !(local_save_flags() & (1UL << 9)); }
#else
static inline unsigned long local_save_flags(void) { return 0; }
static inline void local_irq_disable(void) {}
static inline void local_irq_enable(void) {}
static inline unsigned long local_irq_save(void) { return 0; }
static inline void local_irq_restore(unsigned long f) { (void)f; }
static inline bool irqs_disabled(void) { return true; }
#endif

#endif
