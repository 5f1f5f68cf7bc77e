#include "arch/x86_64/fw_cfg.h"
#include "arch/x86_64/cpu.h"
#include "kernel/string.h"

#define FW_CFG_SEL 0x510
#define FW_CFG_DATA 0x511
#define FW_CFG_SIGNATURE 0x0000
#define FW_CFG_FILE_DIR 0x0019

static void read_bytes(void *buf, size_t n)
{
	u8 *p = buf;
	for (size_t i = 0; i < n; i++)
		p[i] = inb(FW_CFG_DATA);
}

bool fw_cfg_present(void)
{
	char sig[4];
	outw(FW_CFG_SEL, FW_CFG_SIGNATURE);
	read_bytes(sig, 4);
	return !memcmp(sig, "QEMU", 4);
}

int fw_cfg_read_file(const char *name, char *buf, size_t len)
{
	if (!fw_cfg_present())
		return -1;
	outw(FW_CFG_SEL, FW_CFG_FILE_DIR);
	u32 count_be;
	read_bytes(&count_be, 4);
	u32 count = __builtin_bswap32(count_be);
	for (u32 i = 0; i < count; i++) {
		struct {
			u32 size;
			u16 select, reserved;
			char name[56];
		} __packed f;
		read_bytes(&f, sizeof(f));
		f.name[55] = 0;
		if (strcmp(f.name, name))
			continue;
		u32 size = __builtin_bswap32(f.size);
		size_t n = MIN((size_t)size, len - 1);
		outw(FW_CFG_SEL, __builtin_bswap16(f.select));
		read_bytes(buf, n);
		buf[n] = 0;
		return size > 0x7fffffffu ? 0x7fffffff : (int)size;	/* > len - 1: cut */
	}
	return -1;
}
