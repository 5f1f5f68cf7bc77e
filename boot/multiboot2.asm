; Multiboot2 header: GRUB finds it in the first 32 KiB of the image. We ask for a linear
; framebuffer (optional; 1024x768x32 preferred so the 116-column results table fits, else
; GRUB picks a UEFI GOP or BIOS VBE mode, else leaves EGA text) so the screen shows the output
; (kernel/fbcon.c; iso/grub.cfg loads the video drivers). The info structure may sit
; anywhere: we copy it first.
section .multiboot
align 8
mb2_header_start:
    dd 0xe85250d6                   ; magic
    dd 0                            ; architecture: i386 protected mode
    dd mb2_header_end - mb2_header_start
    dd -(0xe85250d6 + 0 + (mb2_header_end - mb2_header_start))
    ; framebuffer tag: type 5, flags bit 0 = optional (boot even if no mode can be set)
    align 8
    dw 5, 1
    dd 20
    dd 1024                         ; preferred width (GRUB falls back to any mode)
    dd 768                          ; preferred height
    dd 32                           ; preferred depth
    ; end tag
    align 8
    dw 0, 0
    dd 8
mb2_header_end:
