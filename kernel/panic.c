/*
 * panic, register dumps and frame-pointer backtraces. The kernel is built with frame
 * pointers, so [rbp] is the caller's rbp and [rbp+8] the return address; frames are
 * printed as ` [<addr>]` for tools/symbolize. A fault while already panicking on the same
 * CPU prints one line and exits, so a broken panic path cannot loop.
 */
#include "kernel/panic.h"
#include "kernel/printk.h"
#include "kernel/percpu.h"
#include "kernel/exit.h"
#include "kernel/atomic.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/regs.h"

static int panicking = -1;	/* CPU that owns the panic, or -1 */
bool smp_stopping;
extern bool oops_in_progress;

void dump_backtrace(u64 rbp)
{
	printk("Call trace:\n");
	for (int depth = 0; depth < 32; depth++) {
		if (rbp < 0xffff800000000000ULL || (rbp & 7))
			break;
		u64 next = ((u64 *)rbp)[0];
		u64 ret = ((u64 *)rbp)[1];
		if (ret < 0xffffffff80000000ULL)
			break;
		printk(" [<%016lx>]\n", ret);
		if (next <= rbp)
			break;
		rbp = next;
	}
}

void dump_regs(const struct pt_regs *r)
{
	printk("RIP: %016lx RSP: %016lx RFLAGS: %08lx CS: %04lx SS: %04lx\n", r->rip, r->rsp,
	       r->rflags, r->cs, r->ss);
	printk("RAX: %016lx RBX: %016lx RCX: %016lx\n", r->rax, r->rbx, r->rcx);
	printk("RDX: %016lx RSI: %016lx RDI: %016lx\n", r->rdx, r->rsi, r->rdi);
	printk("RBP: %016lx R8:  %016lx R9:  %016lx\n", r->rbp, r->r8, r->r9);
	printk("R10: %016lx R11: %016lx R12: %016lx\n", r->r10, r->r11, r->r12);
	printk("R13: %016lx R14: %016lx R15: %016lx\n", r->r13, r->r14, r->r15);
	printk("CR0: %016lx CR3: %016lx CR4: %016lx\n", read_cr0(), ({
		       u64 v;
		       __asm__ __volatile__("mov %%cr3, %0" : "=r"(v));
		       v;
	       }), read_cr4());
}

/* Returns false when this CPU is already panicking (nested fault). */
bool panic_enter(void)
{
	__asm__ __volatile__("cli");
	int me = (int)smp_processor_id();
	int expected = -1;
	WRITE_ONCE(oops_in_progress, true);
	if (!atomic_cmpxchg(&panicking, &expected, me)) {
		if (expected == me) {
			printk("PANIC: nested fault on CPU %d while panicking\n", me);
			kernel_exit(EXIT_PANIC);
		}
		/* another CPU is panicking: wait to be stopped */
		halt_forever();
	}
	return true;
}

void panic_stop_others(void)
{
	WRITE_ONCE(smp_stopping, true);
	apic_send_nmi_all_but_self();
}

void panic(const char *fmt, ...)
{
	panic_enter();
	va_list ap;
	char msg[512];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printk("PANIC on CPU %u: %s\n", smp_processor_id(), msg);
	dump_backtrace(read_rbp());
	panic_stop_others();
	kernel_exit(EXIT_PANIC);
}
