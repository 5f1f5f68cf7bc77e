#include "kernel/console.h"
#include "kernel/fbcon.h"
#include "arch/x86_64/serial.h"
#include "mm/direct_map.h"

/* EGA text mirror: the screen of a real machine booted without a serial port. */
static phys_addr_t vga_pa;
static u32 vga_cols, vga_rows, vga_x, vga_y;

/* Through the boot identity map before the direct map exists, the direct map after. */
static volatile u16 *vga_mem(void)
{
	return vga_pa ? direct_map_va(vga_pa, (u64)vga_cols * vga_rows * 2) : NULL;
}

void vga_text_init(u64 phys, u32 cols, u32 rows)
{
	vga_pa = phys;
	vga_cols = cols;
	vga_rows = rows;
	vga_x = vga_y = 0;
	volatile u16 *vga = vga_mem();
	if (!vga) {
		vga_pa = 0;
		return;
	}
	for (u32 i = 0; i < cols * rows; i++)
		vga[i] = 0x0700 | ' ';
}

static void vga_putc(volatile u16 *vga, char c)
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
	fbcon_emit(s, n);	/* pixel framebuffer, when fbcon= wants it */
	volatile u16 *vga = vga_mem();
	if (vga)
		for (size_t i = 0; i < n; i++)
			vga_putc(vga, s[i]);
}
