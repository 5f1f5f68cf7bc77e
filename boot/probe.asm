; Probing accesses for tests: the caller arms fault_expect with fixup = probe_fixup, so a
; faulting access returns 1 instead of panicking (arch/x86_64/probe.h).
bits 64
global probe_read64, probe_write64, probe_fixup, probe_exec64, probe_exec_fixup, probe_ret
section .text
probe_read64:                   ; rdi = address; returns 0 (value in *rsi) or 1 if it faulted
    mov rax, [rdi]
    mov [rsi], rax
    xor eax, eax
    ret
probe_write64:                  ; rdi = address, rsi = value
    mov [rdi], rsi
    xor eax, eax
    ret
probe_fixup:
    mov eax, 1
    ret
probe_exec64:                   ; rdi = address to call; returns 0 if it ran (it must be a ret)
    call rdi
    xor eax, eax
    ret
probe_exec_fixup:               ; the fetch at the target faulted: drop call's return address
    add rsp, 8
    mov eax, 1
    ret
probe_ret:                      ; an executable 'ret' (tests call it, and its aliases)
    ret
