/*
 * Framebuffer text console: the kernel's output drawn with an 8x16 font on a linear
 * framebuffer (UEFI GOP, or a VBE mode GRUB set under BIOS), for a machine without a
 * serial port. 16-, 24- and 32-bpp direct colour; white on black (every channel equal,
 * so the channel order does not matter).
 *
 * The renderer works on any struct fbcon, so the tests draw into memory. With a text
 * shadow (one byte per cell) scrolling redraws only the cells whose character changes and
 * never reads video memory (reads from an uncached framebuffer over PCIe are very slow);
 * without one it moves the pixel rows up with memmove.
 *
 * The console mirror (fbcon_init/fbcon_emit) draws whenever there is a framebuffer
 * (`fbcon=auto`, the default): a real PC with a UART nobody reads still shows its results.
 * Only when the command line comes from QEMU fw_cfg (the host tools, which read the serial
 * port) does auto leave the screen alone: drawing into emulated video memory costs TCG
 * time. `fbcon=on` draws always, `fbcon=off` never.
 */
#ifndef BAREMM_FBCON_H
#define BAREMM_FBCON_H

#include "kernel/types.h"

struct fbcon {
	u8 *base;		/* first pixel */
	u32 pitch;		/* bytes per pixel row */
	u32 width, height;	/* pixels */
	u32 bytespp;		/* 2, 3 or 4 */
	u32 cols, rows;		/* character cells */
	u32 x, y;		/* cursor cell; x == cols: the next character wraps */
	u8 *text;		/* cols * rows characters on the screen, or NULL (memmove scroll) */
	bool cursor;		/* draw an underline cursor after each write */
	bool cursor_drawn;
	u32 cursor_x, cursor_y;
};

/* Describe a framebuffer. @text (may be NULL) is used when it holds cols * rows bytes.
 * Returns 0, or -1 for an unsupported depth or a screen smaller than one cell. */
int fbcon_setup(struct fbcon *c, void *base, u32 width, u32 height, u32 pitch, u32 bpp,
		u8 *text, size_t text_size);
void fbcon_clear(struct fbcon *c);		/* black screen, cursor home */
void fbcon_write(struct fbcon *c, const char *s, size_t n);	/* '\n' '\r' '\t' '\b' */

/* The console mirror: remember the boot framebuffer (multiboot2 tag; type 1 = RGB) and
 * have the direct map cover it. Call before direct_map_init. @host_tools: the command
 * line came from fw_cfg, so fbcon=auto does not draw. */
void fbcon_init(u64 phys, u32 pitch, u32 width, u32 height, u8 bpp, u8 type, bool host_tools);
/* Draw console output on the boot framebuffer if it is wanted (caller holds the console
 * lock). The screen is cleared on the first call that draws. */
void fbcon_emit(const char *s, size_t n);

#endif
