/*
 * Page-fault entry from the #PF exception handler (arch/x86_64/traps.c), on the faulting
 * CPU with interrupts disabled. Returns true when the fault was resolved (the access is
 * retried); false makes the caller print the fault report (which should already have been
 * explained by a line from the mm code naming the address and the region) and panic.
 */
#ifndef BAREMM_FAULT_H
#define BAREMM_FAULT_H

#include "arch/x86_64/regs.h"

#define PF_PROT (1u << 0)	/* 0: not present, 1: protection violation */
#define PF_WRITE (1u << 1)
#define PF_USER (1u << 2)
#define PF_RSVD (1u << 3)
#define PF_INSTR (1u << 4)

bool do_page_fault(struct pt_regs *regs, u64 error_code, u64 addr);

/* Tests that provoke a fault on purpose arm this; the handler then reports and skips the
 * faulting instruction by jumping to fixup_rip instead of panicking (arch/x86_64/traps.c). */
struct fault_expect {
	volatile bool armed;
	volatile bool hit;
	volatile u64 addr;
	volatile u64 error_code;
	volatile u64 vector;
	u64 fixup_rip;
};
extern struct fault_expect fault_expect[];	/* per CPU */

#endif
