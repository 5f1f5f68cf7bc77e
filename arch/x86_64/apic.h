/*
 * Local APIC, x2APIC mode when CPUID offers it, xAPIC (MMIO) otherwise, behind one
 * interface. apic_init_cpu() runs on each CPU. IPIs are fixed-delivery, physical
 * destination. Any CPU may send; the ICR write is made with interrupts disabled so an
 * interrupt handler's own IPI cannot tear an xAPIC two-register write.
 */
#ifndef BAREMM_APIC_H
#define BAREMM_APIC_H

#include "kernel/types.h"

extern bool apic_x2;	/* x2APIC mode in use */

void apic_init_cpu(void);		/* enable this CPU's APIC, spurious vector */
/* x2APIC ICR write (MSR 0x830), preceded by MFENCE; LFENCE because that WRMSR is not
 * serialising: earlier stores are globally visible before the IPI goes out. */
void x2apic_write_icr(u64 v);
u32 apic_read_id(void);
void apic_eoi(void);
void apic_send_ipi(u32 apic_id, u8 vector);
void apic_send_nmi_all_but_self(void);
void apic_send_init(u32 apic_id);
void apic_send_sipi(u32 apic_id, u8 page);
/* Periodic APIC timer on this CPU: @vector every @ticks timer ticks (divide by 16). */
void apic_timer_periodic(u8 vector, u32 ticks);
void apic_timer_stop(void);
/* TSC-deadline mode (CPUID.1:ECX[24]): the timer fires when the TSC reaches the value
 * written; no calibration and no read of the current count (which QEMU cannot serve
 * under -icount through the x2APIC MSR). */
void apic_timer_deadline_mode(u8 vector);
void apic_timer_arm_deadline(u64 tsc);
/* Measure the APIC timer frequency (ticks/s after divide-by-16) against the TSC. */
u64 apic_timer_calibrate(void);
const char *apic_mode_name(void);

#endif
