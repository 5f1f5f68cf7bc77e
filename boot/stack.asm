; switch_stack_and_call(stack_top, fn): move the boot CPU onto its guarded per-CPU stack
; and call fn there (never returns to the boot stack).
bits 64
global switch_stack_and_call
global boot_stack_top
section .text
switch_stack_and_call:
    mov rsp, rdi
    xor rbp, rbp
    call rsi
.hang:
    cli
    hlt
    jmp .hang

section .bss
align 16
    resb 16384
boot_stack_top:
