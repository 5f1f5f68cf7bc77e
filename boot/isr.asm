; Interrupt and exception entry stubs for all 256 vectors. Each stub makes the frame
; uniform (a dummy error code where the CPU pushes none), pushes the vector, saves the
; general registers in struct pt_regs order (arch/x86_64/regs.h) and calls
; trap_dispatch(regs). rbp is linked so backtraces walk through the trap frame.
bits 64
extern trap_dispatch
global isr_stub_table

section .text
%macro STUB 1
isr_stub_%1:
%if (%1 == 8) || (%1 >= 10 && %1 <= 14) || (%1 == 17) || (%1 == 21) || (%1 == 29) || (%1 == 30)
%else
    push 0
%endif
    push %1
    jmp isr_common
%endmacro

%assign i 0
%rep 256
STUB i
%assign i i+1
%endrep

isr_common:
    push rax
    push rbx
    push rcx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    cld
    mov rdi, rsp
    ; fake frame so a backtrace continues at the interrupted RIP
    push qword [rsp + 17 * 8]       ; rip
    push rbp
    mov rbp, rsp
    ; keep the C call aligned: rsp is 16-byte aligned here (CPU aligns the frame)
    call trap_dispatch
    add rsp, 16
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rbx
    pop rax
    add rsp, 16                     ; vector, error code
    iretq

section .rodata
align 8
isr_stub_table:
%assign i 0
%rep 256
    dq isr_stub_ %+ i
%assign i i+1
%endrep
