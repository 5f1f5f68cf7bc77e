# Host unit tests of the VM code (mm/pgtable.c, mm/mmu_gather.c, mm/mm.c, mm/fault.c ...)
# over the fake page allocator in tests/host/vm_fake_alloc.c.
VM_CORE_SRCS := mm/pgtable.c mm/rmap.c mm/mmu_gather.c tests/host/vm_fake_alloc.c \
	mm/mm.c mm/fault.c mm/filemap.c mm/refpage.c kernel/rcu.c

HOST_TESTS += pgtable
pgtable_SRCS := tests/host/test_pgtable.c $(VM_CORE_SRCS)

HOST_TESTS += mmu_gather
mmu_gather_SRCS := tests/host/test_mmu_gather.c $(VM_CORE_SRCS)

HOST_TESTS += vm_mm
vm_mm_SRCS := tests/host/test_vm_mm.c $(VM_CORE_SRCS)

HOST_TESTS += tlb_policy
tlb_policy_SRCS := tests/host/test_tlb_policy.c $(VM_CORE_SRCS)
