#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/irqflags.h"
#include "arch/x86_64/desc.h"
#include "arch/x86_64/tsc.h"
#include "mm/physmem.h"

bool apic_x2;
static volatile u32 *xapic;	/* MMIO base through the direct map */

#define APIC_ID 0x20
#define APIC_EOI 0xb0
#define APIC_SVR 0xf0
#define APIC_ICR_LO 0x300
#define APIC_ICR_HI 0x310
#define APIC_LVT_TIMER 0x320
#define APIC_TIMER_INIT 0x380
#define APIC_TIMER_CUR 0x390
#define APIC_TIMER_DIV 0x3e0
#define APIC_TPR 0x80

#define ICR_INIT (5u << 8)
#define ICR_SIPI (6u << 8)
#define ICR_NMI (4u << 8)
#define ICR_LEVEL_ASSERT (1u << 14)
#define ICR_BUSY (1u << 12)
#define ICR_ALL_BUT_SELF (3u << 18)

static u32 apic_read(u32 reg)
{
	if (apic_x2)
		return (u32)rdmsr(0x800 + (reg >> 4));
	return xapic[reg / 4];
}

static void apic_write(u32 reg, u32 v)
{
	if (apic_x2)
		wrmsr(0x800 + (reg >> 4), v);
	else
		xapic[reg / 4] = v;
}

/* Not inlined, so tests can check its instructions (kernel/smp_test.c). */
__attribute__((noinline)) void x2apic_write_icr(u64 v)
{
	__asm__ __volatile__("mfence; lfence" ::: "memory");
	wrmsr(0x830, v);
}

static void apic_write_icr(u32 dest, u32 lo)
{
	unsigned long f = local_irq_save();
	if (apic_x2) {
		/* x2APIC: one 64-bit write. WRMSR to the x2APIC registers is not serialising
		 * (Intel SDM vol. 3, x2APIC MSR access), so stores made before it (a queued
		 * call, a flush request) could still be in the store buffer when the target
		 * takes the interrupt. MFENCE drains them and LFENCE keeps the WRMSR from
		 * starting before the MFENCE completes: the sequence the SDM documents. */
		x2apic_write_icr(((u64)dest << 32) | lo);
	} else {
		while (xapic[APIC_ICR_LO / 4] & ICR_BUSY)
			__builtin_ia32_pause();
		xapic[APIC_ICR_HI / 4] = dest << 24;
		xapic[APIC_ICR_LO / 4] = lo;
	}
	local_irq_restore(f);
}

void apic_init_cpu(void)
{
	u64 base = rdmsr(MSR_APIC_BASE);
	base |= 1u << 11;	/* global enable */
	if (boot_cpu.x2apic) {
		base |= 1u << 10;
		apic_x2 = true;
	}
	wrmsr(MSR_APIC_BASE, base);
	if (!apic_x2)
		xapic = (volatile u32 *)__va(base & 0xfffff000);
	apic_write(APIC_TPR, 0);
	apic_write(APIC_SVR, 0x100 | VEC_SPURIOUS);
}

u32 apic_read_id(void)
{
	u32 id = apic_read(APIC_ID);
	return apic_x2 ? id : id >> 24;
}

void apic_eoi(void)
{
	apic_write(APIC_EOI, 0);
}

void apic_send_ipi(u32 apic_id, u8 vector)
{
	apic_write_icr(apic_id, vector);
}

void apic_send_nmi_all_but_self(void)
{
	apic_write_icr(0, ICR_NMI | ICR_ALL_BUT_SELF | ICR_LEVEL_ASSERT);
}

void apic_send_init(u32 apic_id)
{
	apic_write_icr(apic_id, ICR_INIT | ICR_LEVEL_ASSERT);
}

void apic_send_sipi(u32 apic_id, u8 page)
{
	apic_write_icr(apic_id, ICR_SIPI | page);
}

void apic_timer_periodic(u8 vector, u32 ticks)
{
	apic_write(APIC_TIMER_DIV, 0x3);	/* divide by 16 */
	apic_write(APIC_LVT_TIMER, (1u << 17) | vector);
	apic_write(APIC_TIMER_INIT, ticks);
}

void apic_timer_deadline_mode(u8 vector)
{
	apic_write(APIC_LVT_TIMER, (2u << 17) | vector);
	/* SDM: a WRMSR to IA32_TSC_DEADLINE after switching the mode must be ordered */
	__asm__ __volatile__("mfence" ::: "memory");
}

void apic_timer_arm_deadline(u64 tsc)
{
	wrmsr(MSR_TSC_DEADLINE, tsc);
}

void apic_timer_stop(void)
{
	apic_write(APIC_LVT_TIMER, 1u << 16);
	apic_write(APIC_TIMER_INIT, 0);
}

static volatile u64 calib_fired_tsc;

static void calib_irq(void)
{
	calib_fired_tsc = rdtsc();
}

/* Interrupt-based: arm a one-shot count and time its interrupt with the TSC. Reading
 * the current-count register instead is not possible through the x2APIC MSR under
 * QEMU -icount ("Bad icount read"). Boot CPU, interrupts off on entry and exit. */
u64 apic_timer_calibrate(void)
{
	const u32 count = 0x100000;
	set_irq_handler(VEC_CALIBRATE, calib_irq);
	calib_fired_tsc = 0;
	apic_write(APIC_TIMER_DIV, 0x3);
	apic_write(APIC_LVT_TIMER, VEC_CALIBRATE);	/* one-shot, unmasked */
	u64 t0 = rdtsc();
	apic_write(APIC_TIMER_INIT, count);
	while (!calib_fired_tsc) {
		__asm__ __volatile__("sti; hlt; cli" ::: "memory");
		if (rdtsc() - t0 > tsc_khz * 5000)	/* 5 s: no timer interrupt at all */
			break;
	}
	apic_write(APIC_LVT_TIMER, 1u << 16);
	set_irq_handler(VEC_CALIBRATE, NULL);
	u64 elapsed = calib_fired_tsc ? calib_fired_tsc - t0 : 0;
	return elapsed ? (u64)count * tsc_khz * 1000 / elapsed : 0;
}

const char *apic_mode_name(void)
{
	return apic_x2 ? "x2apic" : "xapic";
}
