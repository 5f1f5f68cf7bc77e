/*
 * Which vCPU is running: a table from per-CPU kernel GS bases to slots (docs/COSTMODEL.md,
 * "Which vCPU is running"). The plugin reads the base at the start of every block and
 * looks it up here. A kernel that moves a CPU's base is followed at the GS_BASE MSR write
 * (ident_rebase), so that the old base does not keep a slot another CPU then cannot
 * claim: Linux's boot CPU does so once, from its boot-time per-CPU area to its real one.
 */
#include <string.h>
#include "model/model.h"

void ident_init(struct ident *id, unsigned n)
{
	memset(id, 0, sizeof(*id));
	id->n = n < IDENT_MAX ? n : IDENT_MAX;
	id->last_base = ~0ull;
}

unsigned ident_slot(struct ident *id, u64 base, unsigned hint, bool *claimed)
{
	*claimed = false;
	if (base == id->last_base) {
		id->last_only = true;
		return id->last_slot;
	}
	unsigned slot = id->n;
	for (unsigned i = 0; i < id->n; i++)
		if (id->base[i] == base) {
			slot = i;
			break;
		}
	if (slot == id->n) {
		if (hint < id->n && !id->base[hint])
			slot = hint;
		else
			for (unsigned i = 0; i < id->n; i++)
				if (!id->base[i]) {
					slot = i;
					break;
				}
		if (slot == id->n) {
			id->unclaimed++;
			id->last_only = false;	/* an unknown CPU ran */
			return id->n;
		}
		id->base[slot] = base;
		*claimed = true;
	}
	id->last_base = base;
	id->last_slot = slot;
	id->last_only = true;
	return slot;
}

unsigned ident_rebase(struct ident *id, u64 old, u64 base)
{
	if (!old) {
		/* the writer has no base at the write (Linux loads a null GS selector first,
		 * which zeroes the base under QEMU): it is the CPU of the last block that had
		 * one if no block of another CPU ran since, as far as QEMU's index tells */
		if (!id->last_only || id->last_base == ~0ull)
			return id->n;
		old = id->last_base;
	}
	if (!base || old == base)
		return id->n;
	unsigned slot = id->n;
	for (unsigned i = 0; i < id->n; i++) {
		if (id->base[i] == base)
			return id->n;	/* another slot's already: keep both as they are */
		if (id->base[i] == old)
			slot = i;
	}
	if (slot == id->n)
		return id->n;
	id->base[slot] = base;
	if (id->last_base == old)
		id->last_base = base;
	return slot;
}

/* x2APIC: a cluster (bits 16-31) and a mask of its 16 CPUs; the logical ID is
 * (APIC ID / 16) << 16 | 1 << (APIC ID % 16). xAPIC: LDR bits 24-31 against an 8-bit
 * mask in the flat model (DFR bits 28-31 all ones, the reset value; Linux's flat mode up
 * to 8 CPUs), or cluster (high nibble, 0xf = every cluster) and mask (low nibble) in the
 * cluster model. */
bool apic_logical_hit(bool x2, unsigned apic_id, u32 ldr, u32 dfr, u32 dest)
{
	if (x2)
		return (dest >> 16) == (apic_id >> 4) && (dest & (1u << (apic_id & 15)));
	u32 id = ldr >> 24;
	dest &= 0xff;
	if ((dfr >> 28) == 0xf)
		return (id & dest) != 0;
	return ((dest >> 4) == 0xf || (dest >> 4) == (id >> 4)) && (id & dest & 0xf);
}
