/* Thin wrappers for x86_64 instructions: port I/O, MSRs, CPUID, TSC, control registers. */
#ifndef BAREMM_CPU_H
#define BAREMM_CPU_H

#include "kernel/types.h"

static inline void outb(u16 port, u8 v) { __asm__ __volatile__("outb %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outw(u16 port, u16 v) { __asm__ __volatile__("outw %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { __asm__ __volatile__("outl %0, %1" ::"a"(v), "Nd"(port)); }
static inline u8 inb(u16 port)
{
	u8 v;
	__asm__ __volatile__("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
static inline u16 inw(u16 port)
{
	u16 v;
	__asm__ __volatile__("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
static inline u32 inl(u16 port)
{
	u32 v;
	__asm__ __volatile__("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline u64 rdmsr(u32 msr)
{
	u32 lo, hi;
	__asm__ __volatile__("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((u64)hi << 32) | lo;
}
static inline void wrmsr(u32 msr, u64 v)
{
	__asm__ __volatile__("wrmsr" ::"c"(msr), "a"((u32)v), "d"((u32)(v >> 32)) : "memory");
}

#define MSR_EFER 0xc0000080
#define MSR_GS_BASE 0xc0000101
#define MSR_KERNEL_GS_BASE 0xc0000102
#define MSR_APIC_BASE 0x1b
#define MSR_TSC_DEADLINE 0x6e0
#define MSR_PLATFORM_INFO 0xce
#define EFER_NXE (1u << 11)

struct cpuid_regs {
	u32 eax, ebx, ecx, edx;
};
static inline struct cpuid_regs cpuid(u32 leaf, u32 sub)
{
	struct cpuid_regs r;
	__asm__ __volatile__("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(sub));
	return r;
}

/* rdtsc is not ordered against earlier loads/stores; benchmarks use the fenced forms. */
static inline u64 rdtsc(void)
{
	u32 lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((u64)hi << 32) | lo;
}
static inline u64 rdtsc_ordered(void)
{
	u32 lo, hi;
	__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((u64)hi << 32) | lo;
}

static inline u64 read_cr0(void) { u64 v; __asm__ __volatile__("mov %%cr0, %0" : "=r"(v)); return v; }
static inline u64 read_cr4(void) { u64 v; __asm__ __volatile__("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void write_cr0(u64 v) { __asm__ __volatile__("mov %0, %%cr0" ::"r"(v) : "memory"); }
static inline void write_cr4(u64 v) { __asm__ __volatile__("mov %0, %%cr4" ::"r"(v) : "memory"); }
#define CR0_WP (1u << 16)
#define CR4_PGE (1u << 7)
#define CR4_OSFXSR (1u << 9)
#define CR4_PCIDE (1u << 17)
#define CR4_SMEP (1u << 20)
#define CR4_SMAP (1u << 21)

static inline void hlt(void) { __asm__ __volatile__("hlt" ::: "memory"); }
static inline void safe_halt(void) { __asm__ __volatile__("sti; hlt" ::: "memory"); }
static inline __noreturn void halt_forever(void)
{
	for (;;)
		__asm__ __volatile__("cli; hlt");
}

static inline u64 read_rbp(void)
{
	u64 v;
	__asm__ __volatile__("mov %%rbp, %0" : "=r"(v));
	return v;
}

/* CPU features probed once at boot (arch/x86_64/cpu.c). */
struct cpu_features {
	char vendor[13];
	char model[49];
	u32 family, model_id, stepping;
	u32 max_leaf, max_ext_leaf;
	bool x2apic, tsc_deadline, invariant_tsc, pcid, invpcid, pge, pdpe1gb, nx, hypervisor;
	bool smep, smap;
	u32 pmu_version, pmu_counters, pmu_width;
	char hv_vendor[13];
};
extern struct cpu_features boot_cpu;
void cpu_probe(void);

#endif
