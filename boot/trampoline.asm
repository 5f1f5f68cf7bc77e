; AP trampoline, copied by the boot CPU to TRAMP_BASE (a page below 1 MiB) and entered
; through INIT-SIPI-SIPI in real mode. It goes straight to long mode on the boot page
; tables (identity map of 0..4 GiB + kernel half), then calls the 64-bit entry given in
; the parameter block with the stack given there. The boot CPU starts one AP at a time,
; so one parameter block serves them all.
TRAMP_BASE equ 0x8000
%define T(x) (TRAMP_BASE + (x) - trampoline_start)

global trampoline_start, trampoline_end
global tramp_param_cr3, tramp_param_stack, tramp_param_entry, tramp_param_kernel_cr3

section .trampoline progbits alloc noexec nowrite
bits 16
trampoline_start:
    cli
    cld
    xor ax, ax
    mov ds, ax
    lgdt [T(tr_gdt_ptr)]
    mov eax, cr4
    or eax, 1 << 5                  ; PAE
    mov cr4, eax
    mov eax, [T(tramp_param_cr3)]
    mov cr3, eax
    mov ecx, 0xc0000080
    rdmsr
    or eax, (1 << 8) | (1 << 11)    ; LME | NXE
    wrmsr
    mov eax, cr0
    or eax, 0x80010001              ; PG | WP | PE
    mov cr0, eax
    jmp dword 0x08:T(tr_long)

bits 64
tr_long:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor ax, ax
    mov fs, ax
    mov gs, ax
    ; The AP's stack lives only in the kernel tables, which do not map this page:
    ; switch tables and stacks in ap_entry64, mapped in both.
    mov rbx, [T(tramp_param_stack)]
    mov rcx, [T(tramp_param_kernel_cr3)]
    mov rdx, [T(tramp_param_entry)]
    mov rax, ap_entry64
    jmp rax

align 8
tr_gdt:
    dq 0
    dq 0x00af9a000000ffff
    dq 0x00cf92000000ffff
tr_gdt_ptr:
    dw 23
    dd T(tr_gdt)
align 8
tramp_param_cr3:   dq 0
tramp_param_stack: dq 0
tramp_param_entry: dq 0
tramp_param_kernel_cr3: dq 0
trampoline_end:

section .text
ap_entry64:
    mov cr3, rcx
    mov rsp, rbx
    xor rbp, rbp
    call rdx
.hang:
    cli
    hlt
    jmp .hang
