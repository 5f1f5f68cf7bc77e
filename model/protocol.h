/*
 * The guest protocol (protocol.c, docs/COSTMODEL.md): the marker commands of
 * arch/x86_64/costmodel.h, per-CPU timed regions, the runs of each variant, and the
 * plugin's output lines (BAREMM-MODEL, BAREMM-MODEL-RUN, BAREMM-MODEL-FIGURE, BAREMM-MODEL-TOTAL,
 * BAREMM-MODEL-ERROR). QEMU-free: the glue reads the guest for it through struct
 * proto_guest and hands it the running CPU's account (clock.h).
 */
#ifndef BAREMM_MODEL_PROTOCOL_H
#define BAREMM_MODEL_PROTOCOL_H

#include "model/model.h"
#include "model/clock.h"

/* How the protocol reads the guest at a marker (the glue implements it). */
struct proto_guest {
	/* general-purpose register gpr (x86 order: 2 = rdx, 6 = rsi, 7 = rdi) */
	bool (*reg)(int gpr, u64 *v);
	/* len bytes at virtual address va */
	bool (*mem)(u64 va, void *dst, size_t len);
};

/* n CPUs; figures in cycles of profile p (the BAREMM-MODEL line names it); lines go to fd.
 * hello_tail follows the profile's description on the BAREMM-MODEL line. 0, or -1 when
 * out of memory. */
int proto_init(unsigned n, const struct profile *p, int fd, const char *hello_tail);
/* The marker cmd (MODEL_*) ran on cpu, whose account is a; tail is what the rest of its
 * block has already added to a. */
void proto_marker(unsigned cpu, struct cpu_acct *a, unsigned cmd, const struct tb_counts *tail,
		  const struct proto_guest *g);
/* At exit: the BAREMM-MODEL-TOTAL line of cpu. */
void proto_total(unsigned cpu, const struct cpu_acct *a);
/* One output line (a newline is added), written at once. */
void out_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
