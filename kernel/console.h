/* Console sinks behind printk: COM1 serial and, when the boot loader left one, a screen
 * mirror (kernel/fbcon.c for a pixel framebuffer, EGA text mode here). console_emit runs
 * under the console lock. */
#ifndef BAREMM_CONSOLE_H
#define BAREMM_CONSOLE_H

#include "kernel/types.h"

void console_write(const char *s, size_t n);	/* takes the console lock */
void console_emit(const char *s, size_t n);	/* caller holds the console lock */
void console_set_ready(void);			/* per-CPU ids usable from now on */
void vga_text_init(u64 phys, u32 cols, u32 rows);

#endif
