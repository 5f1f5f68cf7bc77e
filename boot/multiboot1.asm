; Multiboot (version 1) header, for QEMU's own loader (`-kernel build/baremm.bin`): the
; deterministic modes boot this way, without firmware disk I/O or GRUB (the instruction
; count before the kernel would otherwise follow the host's I/O timing, and with it the
; cost model's warm state and QEMU's round-robin phase; docs/COSTMODEL.md, Determinism).
; GRUB's multiboot2 header (multiboot2.asm) stays the way every ISO boots.
;
; QEMU loads only ELF32 or the "a.out kludge" (flags bit 16): the addresses below say
; where the flat image build/baremm.bin (objcopy -O binary of the ELF: physical load
; addresses, from __kernel_phys_start) goes. load_end 0 = the whole file; the loader
; zeroes up to bss_end. The loader must find this within the image's first 8 KiB.
MB1_MAGIC equ 0x1badb002
MB1_FLAGS equ (1 << 1) | (1 << 16)      ; memory map wanted; addresses in this header

extern __kernel_phys_start
extern __kernel_phys_end
extern _start

section .multiboot
align 4
mb1_header:
    dd MB1_MAGIC
    dd MB1_FLAGS
    dd -(MB1_MAGIC + MB1_FLAGS)
    dd mb1_header                       ; header_addr (physical: .boot runs unrelocated)
    dd __kernel_phys_start              ; load_addr: the image's first byte
    dd 0                                ; load_end_addr: the whole file
    dd __kernel_phys_end                ; bss_end_addr
    dd _start                           ; entry_addr
