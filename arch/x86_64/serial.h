/* 16550 UART on COM1, 115200 8N1, polled. Callers serialise (kernel/printk.c holds the
 * console lock); serial_putc_raw is for panic paths that cannot take the lock. */
#ifndef BAREMM_SERIAL_H
#define BAREMM_SERIAL_H

#include "kernel/types.h"

void serial_init(void);
void serial_write(const char *s, size_t n);
bool serial_present(void);

#endif
