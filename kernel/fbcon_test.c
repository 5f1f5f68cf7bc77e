/* Tests of the framebuffer text renderer, drawing into an in-memory framebuffer. */
#include "kernel/ktest.h"
#include "kernel/fbcon.h"
#include "kernel/font8x16.h"
#include "kernel/string.h"

#define T_COLS 16
#define T_ROWS 3
#define T_W (T_COLS * FONT_W)
#define T_H (T_ROWS * FONT_H)
#define T_PAD 12	/* bytes past the visible part of each pixel row */
#define PADBYTE 0x5a

static u8 fake_fb[(T_W * 4 + T_PAD) * T_H];
static u8 fake_text[T_COLS * T_ROWS];

static int setup(struct fbcon *c, u32 bpp, bool shadow)
{
	memset(fake_fb, PADBYTE, sizeof(fake_fb));
	u32 pitch = T_W * (bpp / 8) + T_PAD;
	if (fbcon_setup(c, fake_fb, T_W, T_H, pitch, bpp, shadow ? fake_text : NULL,
			sizeof(fake_text)))
		return -1;
	fbcon_clear(c);
	return 0;
}

/* 1 = every byte 0xff, 0 = every byte 0, -1 = anything else */
static int pixel(struct fbcon *c, u32 px, u32 py)
{
	const u8 *p = c->base + (size_t)py * c->pitch + (size_t)px * c->bytespp;
	bool all_on = true, all_off = true;
	for (u32 i = 0; i < c->bytespp; i++) {
		all_on &= p[i] == 0xff;
		all_off &= p[i] == 0;
	}
	return all_on ? 1 : all_off ? 0 : -1;
}

/* number of pixels of cell (col, row) that differ from glyph @ch */
static int cell_mismatches(struct fbcon *c, u32 col, u32 row, char ch)
{
	const u8 *g = font8x16[ch - FONT_FIRST];
	int bad = 0;
	for (u32 r = 0; r < FONT_H; r++)
		for (u32 i = 0; i < FONT_W; i++) {
			int want = (g[r] >> (7 - i)) & 1;
			bad += pixel(c, col * FONT_W + i, row * FONT_H + r) != want;
		}
	return bad;
}

static bool padding_intact(struct fbcon *c)
{
	for (u32 y = 0; y < c->height; y++)
		for (u32 i = c->width * c->bytespp; i < c->pitch; i++)
			if (c->base[(size_t)y * c->pitch + i] != PADBYTE)
				return false;
	return true;
}

static void wr(struct fbcon *c, const char *s)
{
	fbcon_write(c, s, strlen(s));
}

KTEST(fbcon, font_is_sane)
{
	int lit_space = 0, lit_A = 0;
	for (int r = 0; r < FONT_H; r++)
		for (int i = 0; i < FONT_W; i++) {
			lit_space += (font8x16[' ' - FONT_FIRST][r] >> i) & 1;
			lit_A += (font8x16['A' - FONT_FIRST][r] >> i) & 1;
		}
	KT_EXPECT_EQ(lit_space, 0);
	KT_EXPECT(lit_A > 20);
	/* every printable glyph but the space has ink, and no two are the same */
	for (int a = '!'; a <= FONT_LAST; a++) {
		int ink = 0;
		for (int r = 0; r < FONT_H; r++)
			ink += font8x16[a - FONT_FIRST][r] != 0;
		KT_EXPECT_MSG(ink > 0, "glyph 0x%x is empty", a);
		for (int b = a + 1; b <= FONT_LAST; b++)
			KT_EXPECT_MSG(memcmp(font8x16[a - FONT_FIRST], font8x16[b - FONT_FIRST], FONT_H),
				      "glyphs '%c' and '%c' are identical", a, b);
	}
}

KTEST(fbcon, glyph_pixels_each_depth)
{
	static const u32 depths[] = { 32, 24, 16 };
	for (unsigned d = 0; d < ARRAY_SIZE(depths); d++) {
		struct fbcon c;
		KT_ASSERT(setup(&c, depths[d], true) == 0);
		wr(&c, "Ag");
		KT_EXPECT_MSG(cell_mismatches(&c, 0, 0, 'A') == 0, "bpp %u: 'A' wrong", depths[d]);
		KT_EXPECT_MSG(cell_mismatches(&c, 1, 0, 'g') == 0, "bpp %u: 'g' wrong", depths[d]);
		KT_EXPECT_MSG(cell_mismatches(&c, 2, 0, ' ') == 0, "bpp %u: blank cell lit", depths[d]);
		KT_EXPECT_MSG(cell_mismatches(&c, 0, 1, ' ') == 0, "bpp %u: next row lit", depths[d]);
		KT_EXPECT_MSG(padding_intact(&c), "bpp %u: wrote past the visible width", depths[d]);
		KT_EXPECT_EQ(c.x, 2);
		KT_EXPECT_EQ(c.y, 0);
	}
}

KTEST(fbcon, rejects_bad_geometry)
{
	struct fbcon c;
	KT_EXPECT(fbcon_setup(&c, fake_fb, T_W, T_H, T_W * 4, 8, NULL, 0) != 0);
	KT_EXPECT(fbcon_setup(&c, fake_fb, T_W, T_H, T_W * 4 - 1, 32, NULL, 0) != 0);
	KT_EXPECT(fbcon_setup(&c, fake_fb, 7, T_H, 64, 32, NULL, 0) != 0);
	KT_EXPECT(fbcon_setup(&c, fake_fb, T_W + 7, T_H + 15, (T_W + 7) * 4, 32, NULL, 0) == 0);
	KT_EXPECT_EQ(c.cols, T_COLS);
	KT_EXPECT_EQ(c.rows, T_ROWS);
}

KTEST(fbcon, wraps_at_right_edge)
{
	struct fbcon c;
	KT_ASSERT(setup(&c, 32, true) == 0);
	wr(&c, "0123456789abcdef");	/* exactly one row: the wrap is pending */
	KT_EXPECT_EQ(c.x, T_COLS);
	KT_EXPECT_EQ(c.y, 0);
	wr(&c, "Z");
	KT_EXPECT_EQ(c.y, 1);
	KT_EXPECT_EQ(cell_mismatches(&c, T_COLS - 1, 0, 'f'), 0);
	KT_EXPECT_EQ(cell_mismatches(&c, 0, 1, 'Z'), 0);
	/* a newline right at the edge is one line break, not two */
	KT_ASSERT(setup(&c, 32, true) == 0);
	wr(&c, "0123456789abcdef\nQ");
	KT_EXPECT_EQ(c.y, 1);
	KT_EXPECT_EQ(cell_mismatches(&c, 0, 1, 'Q'), 0);
}

KTEST(fbcon, control_characters)
{
	struct fbcon c;
	KT_ASSERT(setup(&c, 32, true) == 0);
	wr(&c, "ab\tc");
	KT_EXPECT_EQ(cell_mismatches(&c, 8, 0, 'c'), 0);
	KT_EXPECT_EQ(cell_mismatches(&c, 2, 0, ' '), 0);
	wr(&c, "\rX");
	KT_EXPECT_EQ(cell_mismatches(&c, 0, 0, 'X'), 0);
	KT_EXPECT_EQ(cell_mismatches(&c, 1, 0, 'b'), 0);
	wr(&c, "\b\bY\n");
	KT_EXPECT_EQ(cell_mismatches(&c, 0, 0, 'Y'), 0);
	KT_EXPECT_EQ(c.x, 0);
	KT_EXPECT_EQ(c.y, 1);
	wr(&c, "\x01");		/* not printable: a box, not nothing */
	int lit = 0;
	for (u32 r = 0; r < FONT_H; r++)
		for (u32 i = 0; i < FONT_W; i++)
			lit += pixel(&c, i, FONT_H + r) == 1;
	KT_EXPECT(lit > 0);
}

static void check_scroll(struct ktest_ctx *kt, bool shadow)
{
	struct fbcon c;
	KT_ASSERT(setup(&c, 32, shadow) == 0);
	wr(&c, "AAAA\nBB\nCCCCCC\nD");	/* 4 lines on a 3-row screen: one scroll */
	KT_EXPECT_EQ(c.y, T_ROWS - 1);
	for (u32 i = 0; i < T_COLS; i++) {
		KT_EXPECT_EQ(cell_mismatches(&c, i, 0, i < 2 ? 'B' : ' '), 0);
		KT_EXPECT_EQ(cell_mismatches(&c, i, 1, i < 6 ? 'C' : ' '), 0);
		KT_EXPECT_EQ(cell_mismatches(&c, i, 2, i < 1 ? 'D' : ' '), 0);
	}
	wr(&c, "\n\n\n");	/* scrolled off entirely */
	for (u32 r = 0; r < T_ROWS; r++)
		for (u32 i = 0; i < T_COLS; i++)
			KT_EXPECT_EQ(cell_mismatches(&c, i, r, ' '), 0);
	KT_EXPECT(padding_intact(&c) || !shadow);	/* memmove moves whole pitch rows */
}

KTEST(fbcon, scroll_redraw_moves_rows_up)
{
	check_scroll(kt, true);
}

KTEST(fbcon, scroll_memmove_moves_rows_up)
{
	check_scroll(kt, false);
}

static void check_cursor(struct ktest_ctx *kt, bool shadow)
{
	struct fbcon c;
	KT_ASSERT(setup(&c, 32, shadow) == 0);
	c.cursor = true;
	wr(&c, "A");
	/* cursor under cell 1: its last two pixel rows lit, the rest dark */
	for (u32 i = 0; i < FONT_W; i++) {
		KT_EXPECT_EQ(pixel(&c, FONT_W + i, FONT_H - 1), 1);
		KT_EXPECT_EQ(pixel(&c, FONT_W + i, FONT_H - 2), 1);
		KT_EXPECT_EQ(pixel(&c, FONT_W + i, 0), 0);
	}
	KT_EXPECT_EQ(cell_mismatches(&c, 0, 0, 'A'), 0);
	wr(&c, "B\nC");
	KT_EXPECT_EQ(cell_mismatches(&c, 1, 0, 'B'), 0);	/* the old cursor is gone */
	KT_EXPECT_EQ(cell_mismatches(&c, 2, 0, ' '), 0);
	KT_EXPECT_EQ(pixel(&c, FONT_W, 2 * FONT_H - 1), 1);	/* now under (1, 1) */
	/* a cursor over a character ('\r') leaves it intact once it moves on */
	wr(&c, "gq\r");
	wr(&c, "\n");
	KT_EXPECT_EQ(cell_mismatches(&c, 0, 1, 'C'), 0);
	KT_EXPECT_EQ(cell_mismatches(&c, 1, 1, 'g'), 0);
	KT_EXPECT_EQ(cell_mismatches(&c, 2, 1, 'q'), 0);
}

KTEST(fbcon, cursor_is_drawn_and_erased)
{
	check_cursor(kt, true);
	check_cursor(kt, false);
}
