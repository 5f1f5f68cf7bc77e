#include "arch/x86_64/cpu.h"
#include "kernel/string.h"

struct cpu_features boot_cpu;

static void copy_regs(char *dst, struct cpuid_regs r)
{
	memcpy(dst, &r.eax, 4);
	memcpy(dst + 4, &r.ebx, 4);
	memcpy(dst + 8, &r.ecx, 4);
	memcpy(dst + 12, &r.edx, 4);
}

void cpu_probe(void)
{
	struct cpu_features *f = &boot_cpu;
	struct cpuid_regs r = cpuid(0, 0);
	f->max_leaf = r.eax;
	memcpy(f->vendor, &r.ebx, 4);
	memcpy(f->vendor + 4, &r.edx, 4);
	memcpy(f->vendor + 8, &r.ecx, 4);
	f->vendor[12] = 0;

	r = cpuid(1, 0);
	f->stepping = r.eax & 0xf;
	f->model_id = ((r.eax >> 4) & 0xf) | (((r.eax >> 16) & 0xf) << 4);
	f->family = ((r.eax >> 8) & 0xf) + ((r.eax >> 20) & 0xff);
	f->x2apic = r.ecx & (1u << 21);
	f->tsc_deadline = r.ecx & (1u << 24);
	f->pcid = r.ecx & (1u << 17);
	f->hypervisor = r.ecx & (1u << 31);
	f->pge = r.edx & (1u << 13);

	if (f->max_leaf >= 7) {
		r = cpuid(7, 0);
		f->invpcid = r.ebx & (1u << 10);
		f->smep = r.ebx & (1u << 7);
		f->smap = r.ebx & (1u << 20);
	}
	if (f->max_leaf >= 0xa) {
		r = cpuid(0xa, 0);
		f->pmu_version = r.eax & 0xff;
		f->pmu_counters = (r.eax >> 8) & 0xff;
		f->pmu_width = (r.eax >> 16) & 0xff;
	}

	r = cpuid(0x80000000, 0);
	f->max_ext_leaf = r.eax;
	if (f->max_ext_leaf >= 0x80000001) {
		r = cpuid(0x80000001, 0);
		f->nx = r.edx & (1u << 20);
		f->pdpe1gb = r.edx & (1u << 26);
	}
	if (f->max_ext_leaf >= 0x80000004) {
		copy_regs(f->model, cpuid(0x80000002, 0));
		copy_regs(f->model + 16, cpuid(0x80000003, 0));
		copy_regs(f->model + 32, cpuid(0x80000004, 0));
		f->model[48] = 0;
	} else {
		memcpy(f->model, "unknown", 8);
	}
	if (f->max_ext_leaf >= 0x80000007)
		f->invariant_tsc = cpuid(0x80000007, 0).edx & (1u << 8);
	if (f->hypervisor) {
		r = cpuid(0x40000000, 0);
		memcpy(f->hv_vendor, &r.ebx, 4);
		memcpy(f->hv_vendor + 4, &r.ecx, 4);
		memcpy(f->hv_vendor + 8, &r.edx, 4);
		f->hv_vendor[12] = 0;
	}
}
