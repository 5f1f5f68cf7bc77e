/*
 * Descriptor tables: a GDT and TSS per CPU (the TSS holds that CPU's IST stacks), one
 * shared IDT. IST1 = #DF, IST2 = NMI, IST3 = #MC: they run on known-good stacks even
 * when the kernel stack overflowed into its guard page.
 */
#ifndef BAREMM_DESC_H
#define BAREMM_DESC_H

#include "kernel/types.h"

#define KERNEL_CS 0x08
#define KERNEL_DS 0x10
#define TSS_SEL 0x18

#define IST_DF 1
#define IST_NMI 2
#define IST_MC 3
#define NR_IST 3

/* Vectors used by the kernel */
#define VEC_CALL_FUNCTION 0xf0	/* cross-CPU function call IPI */
#define VEC_WATCHDOG 0xef	/* APIC timer on the boot CPU */
#define VEC_CALIBRATE 0xee	/* APIC timer calibration, boot only */
#define VEC_SPURIOUS 0xff

/* Load this CPU's GDT/TSS (with IST stack tops) and the shared IDT. */
void cpu_load_descriptors(unsigned cpu, const u64 ist_tops[NR_IST]);
void idt_init(void);

typedef void (*irq_handler_t)(void);
void set_irq_handler(unsigned vector, irq_handler_t h);

#endif
