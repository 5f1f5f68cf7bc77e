/*
 * Atomics: thin names over the compiler's __atomic builtins, usable in the kernel and in
 * host builds alike. Orderings are explicit at each call site's choice; the plain forms
 * are sequentially consistent.
 */
#ifndef BAREMM_ATOMIC_H
#define BAREMM_ATOMIC_H

#include "kernel/types.h"

#define atomic_load(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define atomic_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define atomic_load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define atomic_store(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define atomic_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define atomic_add(p, v) ((void)__atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST))
#define atomic_add_return(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define atomic_fetch_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define atomic_sub_return(p, v) __atomic_sub_fetch((p), (v), __ATOMIC_SEQ_CST)
#define atomic_inc(p) atomic_add((p), 1)
#define atomic_dec_return(p) atomic_sub_return((p), 1)
#define atomic_xchg(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_fetch_or(p, v) __atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define atomic_fetch_and(p, v) __atomic_fetch_and((p), (v), __ATOMIC_SEQ_CST)
/* Returns true and stores @new when *p == *expected; else loads *p into *expected. */
#define atomic_cmpxchg(p, expected, new) \
	__atomic_compare_exchange_n((p), (expected), (new), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#define smp_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define smp_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)

/* Spin-wait hint: lets a sibling hyperthread (or the next round-robin TCG vCPU) run. */
static inline void cpu_relax(void)
{
	__builtin_ia32_pause();
}

#endif
