/*
 * TLB instructions of this CPU, named and counted. No policy here: the decision of what
 * to flush lives in mm/tlbflush.c.
 */
#ifndef BAREMM_ARCH_TLB_H
#define BAREMM_ARCH_TLB_H

#include "kernel/events.h"

static inline u64 read_cr3(void)
{
	u64 v;
	__asm__ __volatile__("mov %%cr3, %0" : "=r"(v));
	return v;
}

/* Loads a new root; without CR4.PCIDE (or with bit 63 clear) this flushes every
 * non-global TLB entry. */
static inline void write_cr3(u64 v)
{
	__asm__ __volatile__("mov %0, %%cr3" ::"r"(v) : "memory");
}

static inline u64 read_cr2(void)
{
	u64 v;
	__asm__ __volatile__("mov %%cr2, %0" : "=r"(v));
	return v;
}

static inline void __invlpg(u64 addr)
{
	__asm__ __volatile__("invlpg (%0)" ::"r"(addr) : "memory");
}

static inline void invlpg(u64 addr)
{
	__invlpg(addr);
	count_event(EV_TLB_INVLPG);
}

/* Full flush of non-global entries by reloading CR3. */
static inline void flush_tlb_local_full(void)
{
	write_cr3(read_cr3());
	count_event(EV_TLB_FULL_FLUSH);
}

#define INVPCID_ADDR 0
#define INVPCID_SINGLE_CTX 1
#define INVPCID_ALL_GLOBAL 2
#define INVPCID_ALL_NONGLOBAL 3

static inline void invpcid(unsigned type, u64 pcid, u64 addr)
{
	struct { u64 pcid, addr; } desc = { pcid, addr };
	__asm__ __volatile__("invpcid %0, %1" ::"m"(desc), "r"((u64)type) : "memory");
	count_event(EV_TLB_INVPCID);
}

#endif
