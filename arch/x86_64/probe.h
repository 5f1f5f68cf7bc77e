/*
 * Deliberate accesses that may fault, for tests: returns true when the access faulted
 * (the fault is recorded in fault_expect[cpu]: vector, address, error code) instead of
 * panicking. Resolvable page faults (demand paging) are resolved by mm/ as usual and do
 * not count as a fault here. Call with the current CPU fixed (tests run on one CPU).
 */
#ifndef BAREMM_PROBE_H
#define BAREMM_PROBE_H

#include "mm/fault.h"
#include "kernel/percpu.h"

int probe_read64(const volatile void *addr, u64 *out);
int probe_write64(volatile void *addr, u64 val);
int probe_exec64(const volatile void *addr);
void probe_fixup(void);
void probe_exec_fixup(void);
void probe_ret(void);	/* a lone 'ret' instruction in kernel text */

static inline struct fault_expect *probe_arm(void)
{
	struct fault_expect *fe = &fault_expect[smp_processor_id()];
	fe->hit = false;
	fe->vector = 0;
	fe->addr = 0;
	fe->error_code = 0;
	fe->fixup_rip = (u64)probe_fixup;
	__atomic_store_n(&fe->armed, true, __ATOMIC_SEQ_CST);
	return fe;
}

static inline bool probe_read(const volatile void *addr, u64 *out)
{
	struct fault_expect *fe = probe_arm();
	int r = probe_read64(addr, out);
	fe->armed = false;
	return r != 0;
}

static inline bool probe_write(volatile void *addr, u64 val)
{
	struct fault_expect *fe = probe_arm();
	int r = probe_write64(addr, val);
	fe->armed = false;
	return r != 0;
}

/* Call @addr, which must hold a 'ret' (0xc3) so an execution that wrongly succeeds just
 * returns: true when the instruction fetch faulted. */
static inline bool probe_exec(const volatile void *addr)
{
	struct fault_expect *fe = probe_arm();
	fe->fixup_rip = (u64)probe_exec_fixup;
	int r = probe_exec64(addr);
	fe->armed = false;
	return r != 0;
}

#endif
