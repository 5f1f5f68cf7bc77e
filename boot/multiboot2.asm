; Multiboot2 header: GRUB finds it in the first 32 KiB of the image. We ask for no
; video mode (text console under BIOS, GOP framebuffer as firmware left it under UEFI)
; and accept that the info structure may sit anywhere (we copy it first thing).
section .multiboot
align 8
mb2_header_start:
    dd 0xe85250d6                   ; magic
    dd 0                            ; architecture: i386 protected mode
    dd mb2_header_end - mb2_header_start
    dd -(0xe85250d6 + 0 + (mb2_header_end - mb2_header_start))
    ; end tag
    align 8
    dw 0, 0
    dd 8
mb2_header_end:
