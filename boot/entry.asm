; 32-bit multiboot2 entry -> long mode -> higher-half kernel.
; GRUB leaves us in protected mode, paging off, eax = magic, ebx = physical address of
; the multiboot2 info. Under OVMF boot services are gone and EFER.NXE may already be set.
;
; Early page tables (in .bss, below 4 GiB, reused later by the AP trampoline):
;   identity map 0..4 GiB with 2 MiB pages (boot info and trampoline can sit anywhere low)
;   PML4[511] -> PDPT_hi, PDPT_hi[510] -> the first 1 GiB again = kernel at -2 GiB.
; kernel_main builds the real tables (mm/direct_map.c) and switches to them.

KERNEL_VIRT equ 0xffffffff80000000

global _start
global boot_pml4
extern kernel_main
extern boot_stack_top

section .boot.text progbits alloc exec nowrite
bits 32
_start:
    cli
    cld
    mov edi, eax                    ; keep magic and info pointer for kernel_main
    mov esi, ebx
    mov esp, boot_stack32_top

    ; long mode available? (CPUID 0x80000001 EDX bit 29)
    mov eax, 0x80000000
    cpuid
    cmp eax, 0x80000001
    jb .no_long_mode
    mov eax, 0x80000001
    cpuid
    test edx, 1 << 29
    jz .no_long_mode

    ; PD entries: 4 PDs x 512 x 2 MiB = identity 0..4 GiB
    ; edi/esi survive: cpuid clobbers only eax..edx
    mov ecx, 0
.fill_pd:
    mov eax, ecx
    shl eax, 21                     ; low 32 bits of ecx * 2 MiB
    or eax, 0x83                    ; present | writable | 2 MiB
    mov edx, ecx
    shr edx, 11                     ; high bits of ecx * 2 MiB (ecx >> 11)
    mov [boot_pd - KERNEL_VIRT + ecx * 8], eax
    mov [boot_pd - KERNEL_VIRT + ecx * 8 + 4], edx
    inc ecx
    cmp ecx, 2048
    jne .fill_pd

    ; PDPT_lo[0..3] -> the 4 PDs
    mov ecx, 0
.fill_pdpt:
    mov eax, ecx
    shl eax, 12
    add eax, boot_pd - KERNEL_VIRT
    or eax, 0x3
    mov [boot_pdpt_lo - KERNEL_VIRT + ecx * 8], eax
    mov dword [boot_pdpt_lo - KERNEL_VIRT + ecx * 8 + 4], 0
    inc ecx
    cmp ecx, 4
    jne .fill_pdpt

    ; PDPT_hi[510] -> PD0 (first GiB) for the kernel image at -2 GiB
    mov eax, boot_pd - KERNEL_VIRT
    or eax, 0x3
    mov [boot_pdpt_hi - KERNEL_VIRT + 510 * 8], eax

    mov eax, boot_pdpt_lo - KERNEL_VIRT
    or eax, 0x3
    mov [boot_pml4 - KERNEL_VIRT], eax
    mov eax, boot_pdpt_hi - KERNEL_VIRT
    or eax, 0x3
    mov [boot_pml4 - KERNEL_VIRT + 511 * 8], eax

    ; PAE on, CR3, EFER.LME + NXE, paging on
    mov eax, cr4
    or eax, (1 << 5)
    mov cr4, eax
    mov eax, boot_pml4 - KERNEL_VIRT
    mov cr3, eax
    mov ecx, 0xc0000080
    rdmsr
    or eax, (1 << 8) | (1 << 11)
    wrmsr
    mov eax, cr0
    or eax, (1 << 31) | (1 << 16) | 1   ; PG | WP | PE
    mov cr0, eax

    lgdt [boot_gdt_ptr]
    jmp 0x08:.long_mode

.no_long_mode:
    ; No serial console yet: write a message straight to COM1 and halt.
    mov esi, msg_no_lm
    mov dx, 0x3f8
.nl_loop:
    lodsb
    test al, al
    jz .halt
    out dx, al
    jmp .nl_loop
.halt:
    hlt
    jmp .halt

bits 64
.long_mode:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor ax, ax
    mov fs, ax
    mov gs, ax
    mov rax, .higher_half
    jmp rax

section .text
.higher_half:
    mov rsp, boot_stack_top
    xor rbp, rbp                    ; terminates frame-pointer backtraces
    ; edi = magic, esi = info physical address (zero-extended by the 32-bit moves)
    mov edi, edi
    mov esi, esi
    call kernel_main
.hang:
    cli
    hlt
    jmp .hang

section .boot.data progbits alloc noexec write
align 16
boot_gdt:
    dq 0
    dq 0x00af9a000000ffff           ; 0x08: 64-bit code
    dq 0x00cf92000000ffff           ; 0x10: data
boot_gdt_end:
boot_gdt_ptr:
    dw boot_gdt_end - boot_gdt - 1
    dd boot_gdt
msg_no_lm:
    db "baremm: this CPU has no long mode (x86_64); halting", 13, 10, 0
align 16
    times 256 db 0
boot_stack32_top:

section .bss
align 4096
boot_pml4:
    resb 4096
boot_pdpt_lo:
    resb 4096
boot_pdpt_hi:
    resb 4096
boot_pd:
    resb 4 * 4096
