/*
 * Multiboot (version 1) boot information, as QEMU's own loader gives it (`-kernel
 * build/baremm.bin`, the deterministic modes' boot: boot/multiboot1.asm), parsed into the
 * same struct boot_info as multiboot2 and checked the same way: its memory map goes
 * through mem_ranges_normalize(). The info block and everything it points to are read
 * through @phys, which maps a physical range or returns NULL when it cannot; nothing the
 * loader wrote is trusted. Pure logic: also compiled for the host unit tests.
 */
#ifndef BAREMM_MULTIBOOT1_H
#define BAREMM_MULTIBOOT1_H

#include "kernel/multiboot2.h"

#define MB1_BOOTLOADER_MAGIC 0x2badb002

/* A readable pointer to [pa, pa + len), or NULL. */
typedef const void *(*mb1_phys_fn)(u64 pa, u64 len, void *ctx);

/* Parse the info block at physical @info_pa into @bi (zeroed first). The command line
 * drops its first word, the image's path, which QEMU's loader puts in front of `-append`.
 * Returns 0, or -1 with *err set when the block is unreadable or gives no memory. */
int mb1_parse(u64 info_pa, mb1_phys_fn phys, void *ctx, struct boot_info *bi, const char **err);

#endif
