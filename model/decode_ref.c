/*
 * A hand-written classifier of the plugin's fixed-cost kinds (legacy prefixes, REX,
 * ModRM/SIB/displacement), independent of Zydis: the host test's reference. test_model.c
 * checks that decode_insn() agrees with it on the kernel corpus (model/decode_corpus.h)
 * wherever this one recognises a class. Not linked into the plugin.
 */
#include <string.h>
#include "model/decode_ref.h"

struct modrm_res {
	u8 mod, reg, rm;
	size_t len;		/* ModRM + SIB + displacement bytes */
	struct mem_operand mem;
};

/* Decodes ModRM at b[0] (n bytes left). rex: the REX byte or 0. Returns -1 if truncated. */
static int decode_modrm(const u8 *b, size_t n, u8 rex, struct modrm_res *r)
{
	if (n < 1)
		return -1;
	u8 m = b[0];
	r->mod = m >> 6;
	r->reg = (u8)(((m >> 3) & 7) | ((rex & 4) ? 8 : 0));
	r->rm = (u8)((m & 7) | ((rex & 1) ? 8 : 0));
	r->len = 1;
	memset(&r->mem, 0, sizeof(r->mem));
	r->mem.base = r->mem.index = -1;
	r->mem.scale = 1;
	if (r->mod == 3)
		return 0;
	size_t disp_len = r->mod == 1 ? 1 : r->mod == 2 ? 4 : 0;
	if ((m & 7) == 4) {	/* SIB */
		if (n < 2)
			return -1;
		u8 sib = b[1];
		r->len = 2;
		r->mem.scale = (u8)(1u << (sib >> 6));
		int idx = ((sib >> 3) & 7) | ((rex & 2) ? 8 : 0);
		r->mem.index = idx == 4 ? -1 : idx;	/* index 100b without REX.X: none */
		int base = (sib & 7) | ((rex & 1) ? 8 : 0);
		if ((sib & 7) == 5 && r->mod == 0) {
			r->mem.base = -1;
			disp_len = 4;
		} else {
			r->mem.base = base;
		}
	} else if ((m & 7) == 5 && r->mod == 0) {
		r->mem.rip_relative = true;
		disp_len = 4;
	} else {
		r->mem.base = r->rm;
	}
	if (n < r->len + disp_len)
		return -1;
	const u8 *d = b + r->len;
	if (disp_len == 1)
		r->mem.disp = (int8_t)d[0];
	else if (disp_len == 4)
		r->mem.disp = (int32_t)((u32)d[0] | (u32)d[1] << 8 | (u32)d[2] << 16 | (u32)d[3] << 24);
	r->len += disp_len;
	return 0;
}

void decode_insn_ref(const u8 *b, size_t n, struct insn_info *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = INSN_PLAIN;
	out->gpr = -1;
	/* the guest -> model marker: exactly nopl 0x4d4dCCCC(%rax), no prefixes */
	if (n >= 7 && b[0] == 0x0f && b[1] == 0x1f && b[2] == 0x80 && b[5] == 0x4d && b[6] == 0x4d) {
		out->kind = INSN_MARKER;
		out->marker_cmd = (u16)(b[3] | b[4] << 8);
		out->len = 7;
		return;
	}
	bool lock = false, rep = false, addr32 = false;
	u8 seg = SEG_NONE, rex = 0;
	size_t i = 0;
	for (; i < n && i < 15; i++) {
		u8 c = b[i];
		if (c == 0xf0)
			lock = true;
		else if (c == 0xf2 || c == 0xf3)
			rep = true;
		else if (c == 0x67)
			addr32 = true;
		else if (c == 0x64)
			seg = SEG_FS;
		else if (c == 0x65)
			seg = SEG_GS;
		else if (c == 0x66 || c == 0x2e || c == 0x36 || c == 0x3e || c == 0x26)
			;
		else
			break;
	}
	bool f3_last = i > 0 && b[i - 1] == 0xf3;
	if (i < n && (b[i] & 0xf0) == 0x40)
		rex = b[i++];
	if (i >= n)
		return;
	u8 op = b[i++];
	out->len = (u8)i;
	if (lock) {
		out->kind = INSN_ATOMIC;
		return;
	}
	struct modrm_res mr;
	switch (op) {
	case 0x86:
	case 0x87:	/* xchg r/m, r: implicitly locked with a memory operand */
		if (!decode_modrm(b + i, n - i, rex, &mr) && mr.mod != 3)
			out->kind = INSN_ATOMIC;
		return;
	case 0xcf:
		out->kind = INSN_IRET;
		return;
	case 0xf4:
		out->kind = INSN_HLT;
		return;
	case 0x90:
		if (f3_last && !rex)
			out->kind = INSN_PAUSE;
		return;
	case 0xa4: case 0xa5: case 0xa6: case 0xa7: case 0xaa: case 0xab: case 0xac: case 0xad:
	case 0xae: case 0xaf:
		if (rep)
			out->kind = INSN_REP_STRING;
		return;
	case 0x0f:
		break;
	default:
		return;
	}
	if (i >= n)
		return;
	u8 op2 = b[i++];
	out->len = (u8)i;
	switch (op2) {
	case 0xa2:
		out->kind = INSN_CPUID;
		return;
	case 0x30:
		out->kind = INSN_WRMSR;
		return;
	case 0x22:	/* mov r64, crN: ModRM reg = CR number, rm = source GPR (mod ignored) */
		if (decode_modrm(b + i, n - i, rex, &mr))
			return;
		out->kind = INSN_MOV_CR;
		out->cr = mr.reg;
		out->gpr = mr.rm;
		out->len = (u8)(i + 1);
		return;
	case 0x00:	/* group 6: /2 lldt, /3 ltr */
		if (decode_modrm(b + i, n - i, rex, &mr))
			return;
		if ((mr.reg & 7) == 2 || (mr.reg & 7) == 3)
			out->kind = INSN_DESC_LOAD;
		out->len = (u8)(i + mr.len);
		return;
	case 0x01:	/* group 7: /2 lgdt, /3 lidt, /7 invlpg (memory forms only) */
		if (decode_modrm(b + i, n - i, rex, &mr) || mr.mod == 3)
			return;
		out->len = (u8)(i + mr.len);
		if ((mr.reg & 7) == 2 || (mr.reg & 7) == 3) {
			out->kind = INSN_DESC_LOAD;
		} else if ((mr.reg & 7) == 7) {
			out->kind = INSN_INVLPG;
			out->has_mem = true;
			out->mem = mr.mem;
			out->mem.seg = seg;
			out->mem.addr32 = addr32;
		}
		return;
	case 0x38:	/* 66 0f 38 82 /r: invpcid r64, m128 */
		if (i < n && b[i] == 0x82 && !decode_modrm(b + i + 1, n - i - 1, rex, &mr) && mr.mod != 3) {
			out->kind = INSN_INVPCID;
			out->gpr = mr.reg;
			out->has_mem = true;
			out->mem = mr.mem;
			out->mem.seg = seg;
			out->mem.addr32 = addr32;
			out->len = (u8)(i + 1 + mr.len);
		}
		return;
	case 0xae:	/* lfence = 0f ae e8, mfence = 0f ae f0 (sfence is not priced) */
		if (i < n && (b[i] == 0xe8 || b[i] == 0xf0) && !rep) {
			out->kind = INSN_FENCE;
			out->len = (u8)(i + 1);
		}
		return;
	default:
		return;
	}
}
