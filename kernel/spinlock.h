/*
 * Ticket spinlocks: FIFO-fair, so a benchmark's lock hand-off order is the arrival order.
 * Spinning uses `pause` (cpu_relax): under round-robin TCG it hands the host thread to the
 * next vCPU. Any CPU may call; the irqsave forms must be used for locks also taken from
 * interrupt context (cross-CPU call handlers).
 */
#ifndef BAREMM_SPINLOCK_H
#define BAREMM_SPINLOCK_H

#include "kernel/atomic.h"
#include "arch/x86_64/irqflags.h"

typedef struct {
	u16 next;	/* ticket handed to the next arrival */
	u16 owner;	/* ticket now holding the lock */
} spinlock_t;

#define SPINLOCK_INIT { 0, 0 }
#define DEFINE_SPINLOCK(x) spinlock_t x = SPINLOCK_INIT

static inline void spin_lock_init(spinlock_t *l)
{
	l->next = 0;
	l->owner = 0;
}

/* spin_lock() that also says whether the lock was taken on arrival: true when the caller
 * had to spin (for contention counters). Released with spin_unlock(). */
static inline bool spin_lock_and_test_contended(spinlock_t *l)
{
	u16 me = __atomic_fetch_add(&l->next, 1, __ATOMIC_RELAXED);
	if (likely(__atomic_load_n(&l->owner, __ATOMIC_ACQUIRE) == me))
		return false;
	while (__atomic_load_n(&l->owner, __ATOMIC_ACQUIRE) != me)
		cpu_relax();
	return true;
}

static inline void spin_lock(spinlock_t *l)
{
	(void)spin_lock_and_test_contended(l);
}

static inline bool spin_trylock(spinlock_t *l)
{
	u16 owner = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);
	u32 old = (u32)owner | ((u32)owner << 16);
	/* layout: next in the low half, owner in the high half (little endian) */
	u32 new = (u32)(u16)(owner + 1) | ((u32)owner << 16);
	return __atomic_compare_exchange_n((u32 *)l, &old, new, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static inline void spin_unlock(spinlock_t *l)
{
	__atomic_store_n(&l->owner, (u16)(l->owner + 1), __ATOMIC_RELEASE);
}

static inline bool spin_is_locked(spinlock_t *l)
{
	return __atomic_load_n(&l->owner, __ATOMIC_RELAXED) != __atomic_load_n(&l->next, __ATOMIC_RELAXED);
}

static inline unsigned long spin_lock_irqsave(spinlock_t *l)
{
	unsigned long f = local_irq_save();
	spin_lock(l);
	return f;
}

static inline void spin_unlock_irqrestore(spinlock_t *l, unsigned long f)
{
	spin_unlock(l);
	local_irq_restore(f);
}

#endif
