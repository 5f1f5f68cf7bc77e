#include "arch/x86_64/tsc.h"
#include "arch/x86_64/cpu.h"

u64 tsc_khz;
const char *tsc_source = "none";

/* PIT channel 2, gated by port 0x61, counting down from @count at 1.193182 MHz; returns
 * the TSC ticks it took. Uses no interrupts. */
static u64 pit_measure(u16 count)
{
	u8 gate = inb(0x61);
	outb(0x61, (gate & ~0x02) | 0x01);	/* speaker off, gate on */
	outb(0x43, 0xb0);			/* channel 2, lobyte/hibyte, mode 0 */
	outb(0x42, count & 0xff);
	outb(0x42, count >> 8);
	u64 t0 = rdtsc();
	u64 guard = 0;
	while (!(inb(0x61) & 0x20) && ++guard < 100000000)
		;
	u64 t1 = rdtsc();
	outb(0x61, gate);
	return guard >= 100000000 ? 0 : t1 - t0;
}

/*
 * Stop PIT channel 0. The firmware leaves it counting in periodic mode (18.2 Hz); masked
 * at the PIC it interrupts no one, but QEMU still arms a QEMU_CLOCK_VIRTUAL timer for
 * every period. Under -icount each pending virtual deadline cuts the round-robin slice
 * of the running vCPU, so with several CPUs the interleaving (who holds a contended lock
 * when) followed the phase of that 18.2 Hz tick, and the phase is set by how long
 * firmware and GRUB took, which varies with the host (the CD-ROM reads complete in
 * QEMU's main loop). Mode 0 (one-shot) with no reload: one last count, then QEMU arms
 * no timer for it (docs/OUTPUT.md section 7).
 */
void pit_stop(void)
{
	outb(0x43, 0x30);	/* channel 0, lobyte/hibyte, mode 0 */
	outb(0x40, 0);
	outb(0x40, 0);
}

void tsc_init(void)
{
	if (boot_cpu.max_leaf >= 0x15) {
		struct cpuid_regs r = cpuid(0x15, 0);
		if (r.eax && r.ebx && r.ecx) {
			tsc_khz = (u64)r.ecx * r.ebx / r.eax / 1000;
			tsc_source = "cpuid15";
			return;
		}
	}
	if (boot_cpu.max_leaf >= 0x16) {
		struct cpuid_regs r = cpuid(0x16, 0);
		if (r.eax & 0xffff) {
			tsc_khz = (u64)(r.eax & 0xffff) * 1000;
			tsc_source = "cpuid16";
			return;
		}
	}
	/* 3 rounds of 10 ms (11932 PIT ticks); keep the smallest: the least disturbed */
	u64 best = ~0ULL;
	for (int i = 0; i < 3; i++) {
		u64 t = pit_measure(11932);
		if (t && t < best)
			best = t;
	}
	if (best == ~0ULL) {
		tsc_khz = 1000000;	/* no PIT: assume 1 GHz, and say so */
		tsc_source = "assumed";
		return;
	}
	tsc_khz = best * 1193182ULL / 11932 / 1000;
	tsc_source = "pit";
}

void udelay(u64 us)
{
	u64 t0 = rdtsc(), n = us * tsc_khz / 1000;
	while (rdtsc() - t0 < n)
		__builtin_ia32_pause();
}
