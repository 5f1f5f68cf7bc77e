/* Shared boot-time facts and hooks (kernel/main.c). */
#ifndef BAREMM_BOOT_H
#define BAREMM_BOOT_H

#include "kernel/multiboot2.h"
#include "kernel/exit.h"

extern struct boot_info boot_info;
extern u64 boot_mem_bytes;		/* usable RAM found in the memory map */
extern const char baremm_build_id[];
extern const char *cmdline_source;	/* "fw_cfg", "multiboot" or "none" */

/* What a boot with neither tests= nor bench= does (bench/ harness: the default suite). */
enum exit_status boot_default_run(void);
/* Checks ab=, bench_cpus= and cases= (bench/harness.c): 0, or -1 after printing
 * BAREMM-ERROR option: ... */
int bench_check_options(void);

/* The C entry point, called by boot/entry.asm with the multiboot2 magic and info. */
__noreturn void kernel_main(u32 magic, u64 mbi_pa);

#endif
