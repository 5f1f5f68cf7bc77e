/* QEMU fw_cfg (I/O ports 0x510/0x511): lets the host runner pass a command line without
 * rebuilding the ISO. Absent on real machines (the signature check fails). */
#ifndef BAREMM_FW_CFG_H
#define BAREMM_FW_CFG_H

#include "kernel/types.h"

bool fw_cfg_present(void);
/* Read file @name into buf (at most len - 1 bytes, NUL-terminated). Returns the file's full
 * length (larger than len - 1 when it did not fit), or -1 if absent. */
int fw_cfg_read_file(const char *name, char *buf, size_t len);

#endif
