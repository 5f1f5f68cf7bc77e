/* Register frame saved by the exception/interrupt entry stubs (boot/isr.asm). */
#ifndef BAREMM_REGS_H
#define BAREMM_REGS_H

#include "kernel/types.h"

struct pt_regs {
	u64 r15, r14, r13, r12, r11, r10, r9, r8;
	u64 rbp, rdi, rsi, rdx, rcx, rbx, rax;
	u64 vector, error_code;
	/* pushed by the CPU */
	u64 rip, cs, rflags, rsp, ss;
};

/* Called by the common interrupt stub (boot/isr.asm) with the saved frame. */
void trap_dispatch(struct pt_regs *r);

#endif
