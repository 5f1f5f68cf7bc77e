#include "kernel/console.h"
#include "arch/x86_64/serial.h"
#include "mm/physmem.h"

/* EGA text mirror: the screen of a real machine booted without a serial port. */
static volatile u16 *vga;
static u32 vga_cols, vga_rows, vga_x, vga_y;

void vga_text_init(u64 phys, u32 cols, u32 rows)
{
	vga = (volatile u16 *)(phys + KERNEL_VIRT_BASE);	/* low memory: kernel map covers 1 GiB */
	vga_cols = cols;
	vga_rows = rows;
	vga_x = vga_y = 0;
	for (u32 i = 0; i < cols * rows; i++)
		vga[i] = 0x0700 | ' ';
}

static void vga_putc(char c)
{
	if (c == '\n' || vga_x == vga_cols) {
		vga_x = 0;
		if (++vga_y == vga_rows) {
			for (u32 i = 0; i < (vga_rows - 1) * vga_cols; i++)
				vga[i] = vga[i + vga_cols];
			for (u32 i = 0; i < vga_cols; i++)
				vga[(vga_rows - 1) * vga_cols + i] = 0x0700 | ' ';
			vga_y = vga_rows - 1;
		}
		if (c == '\n')
			return;
	}
	if (c == '\r')
		return;
	vga[vga_y * vga_cols + vga_x++] = 0x0700 | (u8)c;
}

void console_emit(const char *s, size_t n)
{
	serial_write(s, n);
	if (vga)
		for (size_t i = 0; i < n; i++)
			vga_putc(s[i]);
}
