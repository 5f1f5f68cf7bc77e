/*
 * Exception and interrupt dispatch. Interrupts (vector >= 32) go to the registered
 * handler and are acknowledged at the local APIC; #PF goes to mm/ first; a test that
 * armed fault_expect gets the fault recorded and resumes at its fixup address; anything
 * else is reported (CPU, vector name, error code, CR2, registers, backtrace) and panics.
 */
#include "arch/x86_64/desc.h"
#include "arch/x86_64/regs.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/tlb.h"
#include "kernel/printk.h"
#include "kernel/percpu.h"
#include "kernel/exit.h"
#include "kernel/panic.h"
#include "mm/fault.h"


struct fault_expect fault_expect[NR_CPUS];
static irq_handler_t irq_handlers[256];

static const char *const vector_names[32] = {
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow",
	"#BR bound range", "#UD invalid opcode", "#NM device not available",
	"#DF double fault", "coprocessor segment overrun", "#TS invalid TSS",
	"#NP segment not present", "#SS stack fault", "#GP general protection",
	"#PF page fault", "reserved 15", "#MF x87 floating point", "#AC alignment check",
	"#MC machine check", "#XM SIMD floating point", "#VE virtualization",
	"#CP control protection", "reserved 22", "reserved 23", "reserved 24",
	"reserved 25", "reserved 26", "reserved 27", "#HV hypervisor injection",
	"#VC VMM communication", "#SX security", "reserved 31",
};

void set_irq_handler(unsigned vector, irq_handler_t h)
{
	irq_handlers[vector] = h;
}

static __noreturn void report_and_panic(struct pt_regs *r, u64 cr2)
{
	panic_enter();
	unsigned v = (unsigned)r->vector;
	printk("EXCEPTION on CPU %u: vector %u (%s) error code %#lx\n", smp_processor_id(), v,
	       v < 32 ? vector_names[v] : "unexpected interrupt", r->error_code);
	if (v == 14)
		printk("CR2: %016lx (%s %s%s)\n", cr2, r->error_code & PF_PROT ? "protection" : "not-present",
		       r->error_code & PF_WRITE ? "write" : "read", r->error_code & PF_INSTR ? " ifetch" : "");
	if (v == 8)
		printk("double fault: most likely a kernel stack overflow into its guard page\n");
	printk("doing: %s\n", this_cpu()->doing ? this_cpu()->doing : "-");
	dump_regs(r);
	printk(" [<%016lx>] (faulting RIP)\n", r->rip);
	dump_backtrace(r->rbp);
	panic_stop_others();
	kernel_exit(EXIT_PANIC);
}

void trap_dispatch(struct pt_regs *r)
{
	unsigned v = (unsigned)r->vector;
	if (v >= 32) {
		struct percpu *pc = this_cpu();
		pc->irq_depth++;
		if (irq_handlers[v])
			irq_handlers[v]();
		else if (v != VEC_SPURIOUS)
			report_and_panic(r, 0);
		if (v != VEC_SPURIOUS)
			apic_eoi();
		pc->irq_depth--;
		return;
	}
	if (v == 2 && READ_ONCE(smp_stopping))
		halt_forever();	/* another CPU panicked and stopped us */

	u64 cr2 = v == 14 ? read_cr2() : 0;
	if (v == 14 && do_page_fault(r, r->error_code, cr2))
		return;

	struct fault_expect *fe = &fault_expect[smp_processor_id()];
	if (fe->armed && v != 8 && v != 2 && v != 18) {
		fe->hit = true;
		fe->vector = v;
		fe->addr = cr2;
		fe->error_code = r->error_code;
		fe->armed = false;
		printk("# expected fault caught: vector %u (%s) addr %#lx error %#lx at RIP %#lx\n", v,
		       vector_names[v], cr2, r->error_code, r->rip);
		r->rip = fe->fixup_rip;
		return;
	}
	report_and_panic(r, cr2);
}
