/*
 * printk: formatted output to every console (COM1 serial, framebuffer mirror).
 * Safe from any CPU at once: a line is formatted into a local buffer and written under the
 * console lock, so lines never interleave mid-line. Formats: %d %i %u %x %X %o %c %s %p %%,
 * with l/ll/z/h length modifiers, '-' and '0' flags, field width and precision
 * (for %s: maximum length), and '*' width. No floating point (kernel code has no SSE).
 * Host builds route printk to stdout.
 */
#ifndef BAREMM_PRINTK_H
#define BAREMM_PRINTK_H

#include "kernel/types.h"

/*
 * Long lines: a formatted line of any length up to PRINTK_LONG_MAX - 1 characters arrives
 * whole, as physical lines of at most PRINTK_CONT_WIDTH characters (a trailing '\\' and a
 * "BAREMM-CONT " prefix join them; docs/OUTPUT.md). A longer one is cut, followed by
 * "BAREMM-ERROR printk: ..." and counted in printk_lines_cut (a pass then ends bench_error).
 */
#define PRINTK_CONT_WIDTH 1000
#define PRINTK_LONG_MAX (40 * 1024)
extern unsigned printk_lines_cut;

int printk(const char *fmt, ...) __printf(1, 2);
int vprintk(const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);

#endif
