#include "arch/x86_64/desc.h"
#include "kernel/cpumask.h"
#include "kernel/string.h"

struct tss {
	u32 reserved0;
	u64 rsp[3];
	u64 reserved1;
	u64 ist[7];
	u64 reserved2;
	u16 reserved3;
	u16 iomap_base;
} __packed;

struct gdt {
	u64 e[5];	/* null, code, data, TSS (two slots) */
} __aligned(16);

struct idt_entry {
	u16 off_lo, sel;
	u8 ist, type;
	u16 off_mid;
	u32 off_hi, zero;
} __packed;

struct desc_ptr {
	u16 limit;
	u64 base;
} __packed;

static struct gdt gdts[NR_CPUS];
static struct tss tsses[NR_CPUS] __aligned(16);
static struct idt_entry idt[256] __aligned(16);
extern const u64 isr_stub_table[256];

static void set_gate(unsigned v, u64 addr, unsigned ist)
{
	idt[v].off_lo = (u16)addr;
	idt[v].sel = KERNEL_CS;
	idt[v].ist = (u8)ist;
	idt[v].type = 0x8e;	/* present, DPL0, 64-bit interrupt gate */
	idt[v].off_mid = (u16)(addr >> 16);
	idt[v].off_hi = (u32)(addr >> 32);
	idt[v].zero = 0;
}

void idt_init(void)
{
	for (unsigned v = 0; v < 256; v++)
		set_gate(v, isr_stub_table[v], 0);
	set_gate(8, isr_stub_table[8], IST_DF);
	set_gate(2, isr_stub_table[2], IST_NMI);
	set_gate(18, isr_stub_table[18], IST_MC);
}

void cpu_load_descriptors(unsigned cpu, const u64 ist_tops[NR_IST])
{
	struct gdt *g = &gdts[cpu];
	struct tss *t = &tsses[cpu];
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < NR_IST; i++)
		t->ist[i] = ist_tops[i];
	t->iomap_base = sizeof(*t);

	u64 base = (u64)t, limit = sizeof(*t) - 1;
	g->e[0] = 0;
	g->e[1] = 0x00af9a000000ffffULL;	/* 64-bit code, DPL0 */
	g->e[2] = 0x00cf92000000ffffULL;	/* data */
	g->e[3] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (0x89ULL << 40) |
		  (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	g->e[4] = base >> 32;

	struct desc_ptr gp = { sizeof(*g) - 1, (u64)g };
	struct desc_ptr ip = { sizeof(idt) - 1, (u64)idt };
	__asm__ __volatile__(
		"lgdt %0\n\t"
		"pushq %2\n\t"
		"leaq 1f(%%rip), %%rax\n\t"
		"pushq %%rax\n\t"
		"lretq\n"
		"1:\n\t"
		"movw %w3, %%ax\n\t"
		"movw %%ax, %%ds\n\t"
		"movw %%ax, %%es\n\t"
		"movw %%ax, %%ss\n\t"
		"ltr %w4\n\t"
		"lidt %1\n\t"
		:
		: "m"(gp), "m"(ip), "i"(KERNEL_CS), "i"(KERNEL_DS), "r"((u16)TSS_SEL)
		: "rax", "memory");
}
