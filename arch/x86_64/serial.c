#include "arch/x86_64/serial.h"
#include "arch/x86_64/cpu.h"

#define COM1 0x3f8
static bool present;

void serial_init(void)
{
	outb(COM1 + 1, 0x00);	/* no interrupts: we poll */
	outb(COM1 + 3, 0x80);	/* DLAB */
	outb(COM1 + 0, 0x01);	/* divisor 1: 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);	/* 8N1 */
	outb(COM1 + 2, 0xc7);	/* FIFO on, cleared, 14-byte threshold */
	outb(COM1 + 4, 0x03);	/* DTR | RTS */
	/* A missing UART reads back 0xff on the line status register. */
	present = inb(COM1 + 5) != 0xff;
}

bool serial_present(void)
{
	return present;
}

static void putc_raw(char c)
{
	/* bounded wait: a wedged or absent UART must not hang the kernel */
	for (int i = 0; i < 100000 && !(inb(COM1 + 5) & 0x20); i++)
		__builtin_ia32_pause();
	outb(COM1, (u8)c);
}

void serial_write(const char *s, size_t n)
{
	if (!present)
		return;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			putc_raw('\r');
		putc_raw(s[i]);
	}
}
