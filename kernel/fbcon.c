#include "kernel/fbcon.h"
#include "kernel/font8x16.h"
#include "kernel/options.h"
#include "kernel/string.h"
#include "arch/x86_64/serial.h"
#include "mm/direct_map.h"

#define FBCON_LIST(X)                                                                       \
	X(FBCON_AUTO, "auto",                                                               \
	  "whenever there is one, except when the host tools pass the command line (fw_cfg)") \
	X(FBCON_ON, "on", "always (refused without a pixel framebuffer)")                   \
	X(FBCON_OFF, "off", "never")
enum { FBCON_LIST(OPTION_ENUM_CONST) };
static bool screen_ok;	/* a pixel framebuffer is mapped (fbcon_init, before options) */

static const char *fbcon_unusable(u64 v, unsigned ncpus)
{
	(void)ncpus;
	return v == FBCON_ON && !screen_ok ? "the boot loader handed over no pixel framebuffer "
					     "(none, or EGA text mode)" : NULL;
}

DEFINE_OPTION_ENUM_HW(opt_fbcon, "fbcon", FBCON_AUTO, fbcon_unusable,
		      "mirror the console to the boot framebuffer", FBCON_LIST);

/* drawn for bytes outside printable ASCII */
static const u8 glyph_unknown[FONT_H] = {
	0, 0, 0, 0x7e, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x7e, 0, 0, 0
};

#define CURSOR_ROW (FONT_H - 2)	/* the cursor: the cell's last two pixel rows, inverted */

int fbcon_setup(struct fbcon *c, void *base, u32 width, u32 height, u32 pitch, u32 bpp,
		u8 *text, size_t text_size)
{
	memset(c, 0, sizeof(*c));
	if (bpp != 16 && bpp != 24 && bpp != 32)
		return -1;
	c->bytespp = bpp / 8;
	if (width < FONT_W || height < FONT_H || pitch < (u64)width * c->bytespp)
		return -1;
	c->base = base;
	c->pitch = pitch;
	c->width = width;
	c->height = height;
	c->cols = width / FONT_W;
	c->rows = height / FONT_H;
	if (text && text_size >= (size_t)c->cols * c->rows)
		c->text = text;
	return 0;
}

static u8 *cell_addr(struct fbcon *c, u32 col, u32 row)
{
	return c->base + (size_t)row * FONT_H * c->pitch + (size_t)col * FONT_W * c->bytespp;
}

static void draw_cell(struct fbcon *c, u32 col, u32 row, u8 ch)
{
	const u8 *g = ch >= FONT_FIRST && ch <= FONT_LAST ? font8x16[ch - FONT_FIRST] : glyph_unknown;
	u8 *p = cell_addr(c, col, row);
	for (int r = 0; r < FONT_H; r++, p += c->pitch) {
		u32 bits = g[r];
		switch (c->bytespp) {
		case 4:
			for (int i = 0; i < FONT_W; i++)
				((volatile u32 *)p)[i] = bits & (0x80u >> i) ? 0xffffffffu : 0;
			break;
		case 3:
			for (int i = 0; i < FONT_W; i++) {
				u8 v = bits & (0x80u >> i) ? 0xff : 0;
				((volatile u8 *)p)[3 * i] = v;
				((volatile u8 *)p)[3 * i + 1] = v;
				((volatile u8 *)p)[3 * i + 2] = v;
			}
			break;
		default:
			for (int i = 0; i < FONT_W; i++)
				((volatile u16 *)p)[i] = bits & (0x80u >> i) ? 0xffff : 0;
			break;
		}
	}
}

/* With a text shadow the cursor is written (erased by redrawing the cell), so video memory
 * is never read; without one it is inverted twice. */
static void cursor_draw(struct fbcon *c, u32 col, u32 row)
{
	u8 *p = cell_addr(c, col, row) + (size_t)CURSOR_ROW * c->pitch;
	for (int r = CURSOR_ROW; r < FONT_H; r++, p += c->pitch)
		for (u32 i = 0; i < FONT_W * c->bytespp; i++)
			((volatile u8 *)p)[i] = c->text ? 0xff : ((volatile u8 *)p)[i] ^ 0xff;
}

static void cursor_erase(struct fbcon *c, u32 col, u32 row)
{
	if (c->text)
		draw_cell(c, col, row, c->text[(size_t)row * c->cols + col]);
	else
		cursor_draw(c, col, row);
}

static void clear_pixel_rows(struct fbcon *c, u32 first, u32 n)
{
	for (u32 r = first; r < first + n; r++)
		memset(c->base + (size_t)r * c->pitch, 0, (size_t)c->width * c->bytespp);
}

void fbcon_clear(struct fbcon *c)
{
	clear_pixel_rows(c, 0, c->height);
	if (c->text)
		memset(c->text, ' ', (size_t)c->cols * c->rows);
	c->x = c->y = 0;
	c->cursor_drawn = false;
}

static void scroll(struct fbcon *c)
{
	if (c->text) {
		/* redraw the cells that change: no reads from video memory */
		for (u32 row = 0; row < c->rows; row++) {
			u8 *dst = c->text + (size_t)row * c->cols;
			for (u32 col = 0; col < c->cols; col++) {
				u8 ch = row + 1 < c->rows ? dst[c->cols + col] : ' ';
				if (dst[col] != ch) {
					draw_cell(c, col, row, ch);
					dst[col] = ch;
				}
			}
		}
		return;
	}
	size_t line = (size_t)FONT_H * c->pitch;
	memmove(c->base, c->base + line, (c->rows - 1) * line);
	clear_pixel_rows(c, (c->rows - 1) * FONT_H, FONT_H);
}

static void newline(struct fbcon *c)
{
	c->x = 0;
	if (c->y + 1 < c->rows)
		c->y++;
	else
		scroll(c);
}

static void fb_putc(struct fbcon *c, u8 ch)
{
	switch (ch) {
	case '\n':
		newline(c);
		return;
	case '\r':
		c->x = 0;
		return;
	case '\t':
		c->x = MIN((c->x + 8) & ~7u, c->cols);
		return;
	case '\b':
		if (c->x)
			c->x--;
		return;
	default:
		if (c->x >= c->cols)
			newline(c);
		draw_cell(c, c->x, c->y, ch);
		if (c->text)
			c->text[(size_t)c->y * c->cols + c->x] = ch;
		c->x++;
	}
}

void fbcon_write(struct fbcon *c, const char *s, size_t n)
{
	if (c->cursor_drawn) {
		cursor_erase(c, c->cursor_x, c->cursor_y);
		c->cursor_drawn = false;
	}
	for (size_t i = 0; i < n; i++)
		fb_putc(c, (u8)s[i]);
	if (c->cursor && c->x < c->cols) {
		c->cursor_x = c->x;
		c->cursor_y = c->y;
		cursor_draw(c, c->x, c->y);
		c->cursor_drawn = true;
	}
}

/* ---- the console mirror ---- */

#define SCREEN_MAX_CELLS (480 * 135)	/* 3840x2160; larger screens scroll with memmove */

static struct fbcon screen;
static u8 screen_text[SCREEN_MAX_CELLS];
static phys_addr_t screen_pa;
static u64 screen_bytes;
static bool screen_cleared, screen_busy, auto_draws;

void fbcon_init(u64 phys, u32 pitch, u32 width, u32 height, u8 bpp, u8 type, bool host_tools)
{
	auto_draws = !host_tools;
	if (type != 1 || !phys ||
	    fbcon_setup(&screen, NULL, width, height, pitch, bpp, screen_text, sizeof(screen_text)))
		return;
	screen_bytes = (u64)pitch * height;
	if (direct_map_add_mmio(phys, screen_bytes))
		return;
	screen.cursor = true;
	screen_pa = phys;
	screen_ok = true;
}

void fbcon_emit(const char *s, size_t n)
{
	if (!screen_ok || opt_fbcon == FBCON_OFF || (opt_fbcon == FBCON_AUTO && !auto_draws))
		return;
	if (screen_busy)	/* a fault while drawing: its report goes to the other consoles */
		return;
	u8 *va = direct_map_va(screen_pa, screen_bytes);
	if (!va)		/* above 4 GiB: drawn once the direct map is up */
		return;
	screen_busy = true;
	screen.base = va;
	if (!screen_cleared) {
		fbcon_clear(&screen);
		screen_cleared = true;
	}
	fbcon_write(&screen, s, n);
	screen_busy = false;
}
