/*
 * Decodes x86-64 instructions with the Zydis library (full decoding: every operand,
 * implicit and hidden ones included, each with its read/write actions; no text
 * formatting) and reduces the result to struct insn_info: the fixed-cost kinds the plugin
 * prices, and for the out-of-order core the register sets, data accesses, execution class,
 * uop estimate and branch description. No latencies here: the core maps classes to them.
 */
#include <string.h>
#include <Zydis/Zydis.h>
#include "model/model.h"

/* Read-only after the constructor (ZydisDecoderDecodeFull takes it const): thread-safe. */
static ZydisDecoder decoder;

__attribute__((constructor)) static void decoder_init(void)
{
	ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
}

/* The GPR number 0..15 of a general-purpose register of any width, else -1. */
static int gpr_num(ZydisRegister r)
{
	if (r >= ZYDIS_REGISTER_AL && r <= ZYDIS_REGISTER_R15B) {
		int i = (int)(r - ZYDIS_REGISTER_AL);	/* al cl dl bl ah ch dh bh spl bpl sil dil r8b.. */
		return i < 4 ? i : i - 4;		/* ah..bh are rax..rbx; spl is 8 - 4 = rsp */
	}
	if (r >= ZYDIS_REGISTER_AX && r <= ZYDIS_REGISTER_R15W)
		return (int)(r - ZYDIS_REGISTER_AX);
	if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D)
		return (int)(r - ZYDIS_REGISTER_EAX);
	if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15)
		return (int)(r - ZYDIS_REGISTER_RAX);
	return -1;
}

/* A write of an 8- or 16-bit GPR keeps the rest of the register: it reads it too. */
static bool gpr_partial(ZydisRegister r)
{
	return r >= ZYDIS_REGISTER_AL && r <= ZYDIS_REGISTER_R15W;
}

/* The register's bit in the REG_* space; 0 for none and for the instruction pointer. */
static u64 reg_bit(ZydisRegister r)
{
	int g = gpr_num(r);
	if (g >= 0)
		return REG_GPR(g);
	if (r >= ZYDIS_REGISTER_XMM0 && r <= ZYDIS_REGISTER_XMM31)
		return REG_VEC(r - ZYDIS_REGISTER_XMM0);
	if (r >= ZYDIS_REGISTER_YMM0 && r <= ZYDIS_REGISTER_YMM31)
		return REG_VEC(r - ZYDIS_REGISTER_YMM0);
	if (r >= ZYDIS_REGISTER_ZMM0 && r <= ZYDIS_REGISTER_ZMM31)
		return REG_VEC(r - ZYDIS_REGISTER_ZMM0);
	switch (r) {
	case ZYDIS_REGISTER_NONE:
	case ZYDIS_REGISTER_IP:
	case ZYDIS_REGISTER_EIP:
	case ZYDIS_REGISTER_RIP:
		return 0;
	case ZYDIS_REGISTER_FLAGS:
	case ZYDIS_REGISTER_EFLAGS:
	case ZYDIS_REGISTER_RFLAGS:
		return REG_FLAGS;
	default:
		return REG_OTHER;
	}
}

static bool is_vec_reg(ZydisRegister r)
{
	return (r >= ZYDIS_REGISTER_MM0 && r <= ZYDIS_REGISTER_MM7) ||
	       (r >= ZYDIS_REGISTER_XMM0 && r <= ZYDIS_REGISTER_ZMM31);
}

static void fill_mem_operand(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *op,
			     struct mem_operand *m)
{
	memset(m, 0, sizeof(*m));
	m->rip_relative = op->mem.base == ZYDIS_REGISTER_RIP || op->mem.base == ZYDIS_REGISTER_EIP;
	m->base = (int8_t)gpr_num(op->mem.base);
	m->index = (int8_t)gpr_num(op->mem.index);
	m->scale = m->index >= 0 ? op->mem.scale : 1;
	m->addr32 = in->address_width == 32;
	m->seg = op->mem.segment == ZYDIS_REGISTER_FS ? SEG_FS :
		 op->mem.segment == ZYDIS_REGISTER_GS ? SEG_GS : SEG_NONE;
	m->disp = op->mem.disp.value;
}

/* Instructions whose memory operand names a line or an address but moves no data. */
static bool address_only(const ZydisDecodedInstruction *in)
{
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_NOP:
	case ZYDIS_CATEGORY_WIDENOP:
	case ZYDIS_CATEGORY_PREFETCH:
	case ZYDIS_CATEGORY_CLFLUSHOPT:
	case ZYDIS_CATEGORY_CLWB:
	case ZYDIS_CATEGORY_CLDEMOTE:
		return true;
	default:
		break;
	}
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_INVLPG:
	case ZYDIS_MNEMONIC_CLFLUSH:
		return true;
	default:
		return false;
	}
}

/* The pointer registers a string instruction advances (callers check the category: SSE
 * movsd and cmpsd share the mnemonics). */
static u64 string_pointers(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_MOVSW: case ZYDIS_MNEMONIC_MOVSD:
	case ZYDIS_MNEMONIC_MOVSQ:
	case ZYDIS_MNEMONIC_CMPSB: case ZYDIS_MNEMONIC_CMPSW: case ZYDIS_MNEMONIC_CMPSD:
	case ZYDIS_MNEMONIC_CMPSQ:
		return REG_GPR(6) | REG_GPR(7);
	case ZYDIS_MNEMONIC_STOSB: case ZYDIS_MNEMONIC_STOSW: case ZYDIS_MNEMONIC_STOSD:
	case ZYDIS_MNEMONIC_STOSQ:
	case ZYDIS_MNEMONIC_SCASB: case ZYDIS_MNEMONIC_SCASW: case ZYDIS_MNEMONIC_SCASD:
	case ZYDIS_MNEMONIC_SCASQ:
		return REG_GPR(7);
	case ZYDIS_MNEMONIC_LODSB: case ZYDIS_MNEMONIC_LODSW: case ZYDIS_MNEMONIC_LODSD:
	case ZYDIS_MNEMONIC_LODSQ:
		return REG_GPR(6);
	default:
		return 0;
	}
}

/* Results independent of the sources when both sources are one register (Agner Fog, "The
 * microarchitecture of Intel, AMD and VIA CPUs": zero idioms since Sandy Bridge). */
static bool zero_idiom_mnemonic(ZydisMnemonic m, bool vec)
{
	switch (m) {
	case ZYDIS_MNEMONIC_XOR:
	case ZYDIS_MNEMONIC_SUB:
		return !vec;
	case ZYDIS_MNEMONIC_PXOR: case ZYDIS_MNEMONIC_VPXOR:
	case ZYDIS_MNEMONIC_XORPS: case ZYDIS_MNEMONIC_VXORPS:
	case ZYDIS_MNEMONIC_XORPD: case ZYDIS_MNEMONIC_VXORPD:
	case ZYDIS_MNEMONIC_PSUBB: case ZYDIS_MNEMONIC_PSUBW: case ZYDIS_MNEMONIC_PSUBD:
	case ZYDIS_MNEMONIC_PSUBQ:
	case ZYDIS_MNEMONIC_VPSUBB: case ZYDIS_MNEMONIC_VPSUBW: case ZYDIS_MNEMONIC_VPSUBD:
	case ZYDIS_MNEMONIC_VPSUBQ:
	case ZYDIS_MNEMONIC_PCMPGTB: case ZYDIS_MNEMONIC_PCMPGTW: case ZYDIS_MNEMONIC_PCMPGTD:
	case ZYDIS_MNEMONIC_VPCMPGTB: case ZYDIS_MNEMONIC_VPCMPGTW: case ZYDIS_MNEMONIC_VPCMPGTD:
		return vec;
	default:
		return false;
	}
}

/* Moves between vector registers and memory, whose reg-reg form is a full-width copy. */
static bool vec_full_move(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_MOVAPS: case ZYDIS_MNEMONIC_MOVUPS: case ZYDIS_MNEMONIC_MOVAPD:
	case ZYDIS_MNEMONIC_MOVUPD: case ZYDIS_MNEMONIC_MOVDQA: case ZYDIS_MNEMONIC_MOVDQU:
	case ZYDIS_MNEMONIC_VMOVAPS: case ZYDIS_MNEMONIC_VMOVUPS: case ZYDIS_MNEMONIC_VMOVAPD:
	case ZYDIS_MNEMONIC_VMOVUPD: case ZYDIS_MNEMONIC_VMOVDQA: case ZYDIS_MNEMONIC_VMOVDQU:
	case ZYDIS_MNEMONIC_VMOVDQA32: case ZYDIS_MNEMONIC_VMOVDQA64:
	case ZYDIS_MNEMONIC_VMOVDQU8: case ZYDIS_MNEMONIC_VMOVDQU16:
	case ZYDIS_MNEMONIC_VMOVDQU32: case ZYDIS_MNEMONIC_VMOVDQU64:
		return true;
	default:
		return false;
	}
}

/* Vector moves with only load and store forms mattering here (reg-reg forms merge or
 * cross register files: VEC_INT). */
static bool vec_move(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_MOVD: case ZYDIS_MNEMONIC_MOVQ: case ZYDIS_MNEMONIC_VMOVD:
	case ZYDIS_MNEMONIC_VMOVQ: case ZYDIS_MNEMONIC_MOVSS: case ZYDIS_MNEMONIC_MOVSD:
	case ZYDIS_MNEMONIC_VMOVSS: case ZYDIS_MNEMONIC_VMOVSD:
	case ZYDIS_MNEMONIC_MOVNTDQ: case ZYDIS_MNEMONIC_MOVNTPS: case ZYDIS_MNEMONIC_MOVNTPD:
	case ZYDIS_MNEMONIC_VMOVNTDQ: case ZYDIS_MNEMONIC_VMOVNTPS: case ZYDIS_MNEMONIC_VMOVNTPD:
	case ZYDIS_MNEMONIC_MOVNTDQA: case ZYDIS_MNEMONIC_VMOVNTDQA:
	case ZYDIS_MNEMONIC_LDDQU: case ZYDIS_MNEMONIC_VLDDQU:
		return true;
	default:
		return vec_full_move(m);
	}
}

static bool fp_div(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_DIVSS: case ZYDIS_MNEMONIC_DIVSD: case ZYDIS_MNEMONIC_DIVPS:
	case ZYDIS_MNEMONIC_DIVPD: case ZYDIS_MNEMONIC_VDIVSS: case ZYDIS_MNEMONIC_VDIVSD:
	case ZYDIS_MNEMONIC_VDIVPS: case ZYDIS_MNEMONIC_VDIVPD:
	case ZYDIS_MNEMONIC_SQRTSS: case ZYDIS_MNEMONIC_SQRTSD: case ZYDIS_MNEMONIC_SQRTPS:
	case ZYDIS_MNEMONIC_SQRTPD: case ZYDIS_MNEMONIC_VSQRTSS: case ZYDIS_MNEMONIC_VSQRTSD:
	case ZYDIS_MNEMONIC_VSQRTPS: case ZYDIS_MNEMONIC_VSQRTPD:
		return true;
	default:
		return false;
	}
}

/* The shape of an instruction's explicit operands, for telling pure moves apart. */
struct shape {
	bool vec;		/* some operand is an mmx/xmm/ymm/zmm register */
	bool fp;		/* some operand has floating-point elements */
	bool mem_read, mem_write;
	bool imm;
	int nreg;		/* explicit register operands */
	ZydisRegister reg[4];
	u16 reg_size[4];
};

/* The execution class of an instruction of kind INSN_PLAIN. */
static u8 plain_cls(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
		    const struct shape *s)
{
	ZydisMnemonic m = in->mnemonic;
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_NOP:
	case ZYDIS_CATEGORY_WIDENOP:
	case ZYDIS_CATEGORY_PREFETCH:
		return INSN_CLS_NOP;
	case ZYDIS_CATEGORY_COND_BR:
		return INSN_CLS_BRANCH_COND;
	case ZYDIS_CATEGORY_UNCOND_BR:
		if (in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
			return INSN_CLS_OTHER;
		return ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE ? INSN_CLS_JMP_DIRECT
								   : INSN_CLS_JMP_INDIRECT;
	case ZYDIS_CATEGORY_CALL:
		if (in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
			return INSN_CLS_OTHER;
		return ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE ? INSN_CLS_CALL_DIRECT
								   : INSN_CLS_CALL_INDIRECT;
	case ZYDIS_CATEGORY_RET:
		/* lret decodes as ret with a far branch type */
		return m == ZYDIS_MNEMONIC_RET && in->meta.branch_type != ZYDIS_BRANCH_TYPE_FAR
			       ? INSN_CLS_RET : INSN_CLS_OTHER;
	case ZYDIS_CATEGORY_CMOV:
		return INSN_CLS_CMOV;
	case ZYDIS_CATEGORY_SETCC:
		return INSN_CLS_SETCC;
	case ZYDIS_CATEGORY_SHIFT:
	case ZYDIS_CATEGORY_ROTATE:
		return INSN_CLS_SHIFT;
	default:
		break;
	}
	switch (m) {
	case ZYDIS_MNEMONIC_ENDBR32:
	case ZYDIS_MNEMONIC_ENDBR64:
		return INSN_CLS_NOP;
	case ZYDIS_MNEMONIC_LEA:
		return INSN_CLS_LEA;
	case ZYDIS_MNEMONIC_IMUL:
	case ZYDIS_MNEMONIC_MUL:
	case ZYDIS_MNEMONIC_MULX:
		return INSN_CLS_IMUL;
	case ZYDIS_MNEMONIC_DIV:
	case ZYDIS_MNEMONIC_IDIV:
		return INSN_CLS_DIV;
	case ZYDIS_MNEMONIC_BSF:
	case ZYDIS_MNEMONIC_BSR:
	case ZYDIS_MNEMONIC_POPCNT:
	case ZYDIS_MNEMONIC_LZCNT:
	case ZYDIS_MNEMONIC_TZCNT:
		return INSN_CLS_BITCNT;
	case ZYDIS_MNEMONIC_SARX:
	case ZYDIS_MNEMONIC_SHLX:
	case ZYDIS_MNEMONIC_SHRX:
	case ZYDIS_MNEMONIC_RORX:
		return INSN_CLS_SHIFT;
	case ZYDIS_MNEMONIC_SFENCE:
		return INSN_CLS_FENCE_S;
	case ZYDIS_MNEMONIC_WBINVD:
	case ZYDIS_MNEMONIC_INVD:
	case ZYDIS_MNEMONIC_SERIALIZE:
		return INSN_CLS_SERIALISING;
	default:
		break;
	}
	if (s->vec) {
		if (fp_div(m))
			return INSN_CLS_FP_DIV;
		if (vec_move(m)) {
			if (s->mem_read && !s->mem_write)
				return INSN_CLS_LOAD;
			if (s->mem_write && !s->mem_read)
				return INSN_CLS_STORE;
			if (vec_full_move(m))
				return INSN_CLS_MOVE;
		}
		if (in->meta.category == ZYDIS_CATEGORY_LOGICAL_FP)
			return INSN_CLS_VEC_INT;	/* andps, xorps ...: bitwise */
		return s->fp ? INSN_CLS_VEC_FP : INSN_CLS_VEC_INT;
	}
	switch (m) {
	case ZYDIS_MNEMONIC_MOV:
	case ZYDIS_MNEMONIC_MOVZX:
	case ZYDIS_MNEMONIC_MOVSX:
	case ZYDIS_MNEMONIC_MOVSXD:
	case ZYDIS_MNEMONIC_MOVBE:
	case ZYDIS_MNEMONIC_MOVNTI:
		for (int i = 0; i < s->nreg; i++) {
			ZydisRegisterClass c = ZydisRegisterGetClass(s->reg[i]);
			if (c != ZYDIS_REGCLASS_GPR8 && c != ZYDIS_REGCLASS_GPR16 &&
			    c != ZYDIS_REGCLASS_GPR32 && c != ZYDIS_REGCLASS_GPR64)
				return INSN_CLS_OTHER;	/* control, debug, segment registers */
		}
		if (s->mem_read)
			return INSN_CLS_LOAD;
		if (s->mem_write)
			return INSN_CLS_STORE;
		/* a full-width copy is eliminable; partial, extending and imm moves compute */
		if (m == ZYDIS_MNEMONIC_MOV && s->nreg == 2 && !gpr_partial(s->reg[0]))
			return INSN_CLS_MOVE;
		return INSN_CLS_ALU;
	case ZYDIS_MNEMONIC_PUSH:
	case ZYDIS_MNEMONIC_PUSHFQ:
	case ZYDIS_MNEMONIC_STOSB: case ZYDIS_MNEMONIC_STOSW: case ZYDIS_MNEMONIC_STOSD:
	case ZYDIS_MNEMONIC_STOSQ:
	case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_MOVSW: case ZYDIS_MNEMONIC_MOVSD:
	case ZYDIS_MNEMONIC_MOVSQ:
		return INSN_CLS_STORE;
	case ZYDIS_MNEMONIC_POP:
	case ZYDIS_MNEMONIC_LODSB: case ZYDIS_MNEMONIC_LODSW: case ZYDIS_MNEMONIC_LODSD:
	case ZYDIS_MNEMONIC_LODSQ:
		return INSN_CLS_LOAD;
	default:
		break;
	}
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_BINARY:
	case ZYDIS_CATEGORY_LOGICAL:
	case ZYDIS_CATEGORY_BITBYTE:
	case ZYDIS_CATEGORY_FLAGOP:
	case ZYDIS_CATEGORY_CONVERT:
	case ZYDIS_CATEGORY_DATAXFER:
	case ZYDIS_CATEGORY_SEMAPHORE:
	case ZYDIS_CATEGORY_STRINGOP:
	case ZYDIS_CATEGORY_BMI1:
	case ZYDIS_CATEGORY_BMI2:
	case ZYDIS_CATEGORY_ADOX_ADCX:
		return INSN_CLS_ALU;
	default:
		return INSN_CLS_OTHER;
	}
}

/*
 * Fused-domain uops, the estimate the core dispatches with. From Agner Fog's instruction
 * tables (Skylake): 1 for simple operations, loads, stores (store address and data fuse)
 * and load-op forms (micro-fused); 2 for read-modify-write of memory, push/pop of memory,
 * call (3 through memory), ret, one-operand mul (one per result register) and mulx; 3 for
 * xchg r,r. Microcoded operations (div, lock and xchg with memory, rep strings, the
 * serialising ones, popf) get 4, the most the decoders emit without the microcode
 * sequencer (Intel optimization manual); what they really cost is their profile penalty
 * or the core's divide latency, not their uop count.
 */
static u8 uop_estimate(const ZydisDecodedInstruction *in, const struct insn_info *o)
{
	switch (o->cls) {
	case INSN_CLS_DIV:
	case INSN_CLS_ATOMIC:
	case INSN_CLS_STRING:
	case INSN_CLS_SERIALISING:
		return 4;
	case INSN_CLS_CALL_DIRECT:
		return 2;
	case INSN_CLS_CALL_INDIRECT:
		return o->nmem > 1 ? 3 : 2;
	case INSN_CLS_RET:
		return 2;
	case INSN_CLS_IMUL:
		/* one-operand mul/imul write rdx:rax; mulx writes two registers */
		return __builtin_popcountll(o->reg_write & REG_ALL_GPR) > 1 ? 2 : 1;
	default:
		break;
	}
	if (in->mnemonic == ZYDIS_MNEMONIC_POPFQ)
		return 4;
	if (in->mnemonic == ZYDIS_MNEMONIC_XCHG)
		return 3;	/* reg-reg (with memory it is ATOMIC) */
	if (o->rmw || o->nmem > 1)
		return 2;	/* add %r,(m); push (m); pop (m); movs */
	return 1;
}

static void decode(const u8 *b, size_t n, u64 va, bool have_va, struct insn_info *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = INSN_PLAIN;
	out->gpr = -1;
	out->cls = INSN_CLS_OTHER;
	out->uops = 1;
	/* the guest -> model marker: exactly nopl 0x4d4dCCCC(%rax), no prefixes */
	bool marker = n >= 7 && b[0] == 0x0f && b[1] == 0x1f && b[2] == 0x80 && b[5] == 0x4d &&
		      b[6] == 0x4d;
	if (marker) {
		out->kind = INSN_MARKER;
		out->marker_cmd = (u16)(b[3] | b[4] << 8);
		out->len = 7;
		out->cls = INSN_CLS_NOP;
		out->decoded = true;
		return;
	}
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, b, n, &in, ops)))
		return;
	out->decoded = true;
	out->len = in.length;

	/* registers and accesses, from every operand */
	struct shape s = { 0 };
	u64 data_read = 0, addr_read = 0;
	const ZydisDecodedOperand *memop = NULL;	/* the explicit memory operand */
	bool no_access = address_only(&in);
	for (unsigned i = 0; i < in.operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		bool rd = op->actions & ZYDIS_OPERAND_ACTION_MASK_READ;
		bool wr = op->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE;
		bool explicit = op->visibility == ZYDIS_OPERAND_VISIBILITY_EXPLICIT;
		if (op->element_type >= ZYDIS_ELEMENT_TYPE_FLOAT16 &&
		    op->element_type <= ZYDIS_ELEMENT_TYPE_FLOAT80)
			s.fp = true;
		switch (op->type) {
		case ZYDIS_OPERAND_TYPE_REGISTER: {
			/* an EVEX write mask of k0 means no masking: nothing is read */
			if (op->encoding == ZYDIS_OPERAND_ENCODING_MASK &&
			    op->reg.value == ZYDIS_REGISTER_K0)
				break;
			u64 bit = reg_bit(op->reg.value);
			/* a conditional write may leave the old value: it is read too */
			if (rd || (op->actions & ZYDIS_OPERAND_ACTION_CONDWRITE) ||
			    (wr && gpr_partial(op->reg.value)))
				data_read |= bit;
			if (wr)
				out->reg_write |= bit;
			if (is_vec_reg(op->reg.value))
				s.vec = true;
			if (explicit && s.nreg < 4) {
				s.reg[s.nreg] = op->reg.value;
				s.reg_size[s.nreg++] = op->size;
			}
			break;
		}
		case ZYDIS_OPERAND_TYPE_MEMORY: {
			u64 regs = reg_bit(op->mem.base) | reg_bit(op->mem.index);
			if (op->mem.type == ZYDIS_MEMOP_TYPE_AGEN) {
				data_read |= regs;	/* lea computes with them: data */
				break;
			}
			addr_read |= regs;
			if (explicit && !memop)
				memop = op;
			if (no_access || !(rd || wr))
				break;
			if (explicit) {
				s.mem_read |= rd;
				s.mem_write |= wr;
			}
			if (out->nmem < 2) {
				struct insn_mem *a = &out->memop[out->nmem++];
				a->size = (u16)(op->size / 8);
				a->access = (u8)((rd ? MEM_READ : 0) | (wr ? MEM_WRITE : 0));
				if (rd && wr)
					out->rmw = true;
			}
			break;
		}
		case ZYDIS_OPERAND_TYPE_IMMEDIATE:
			s.imm = true;
			if (op->imm.is_relative && have_va) {
				ZyanU64 t;
				if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, op, va, &t))) {
					out->target = t;
					out->has_target = true;
				}
			}
			break;
		default:
			break;
		}
	}
	/* Zydis 4.0 lists no pointer update for cmps and scas: every string op advances its
	 * pointers (rsi and/or rdi) */
	u64 ptrs = in.meta.category == ZYDIS_CATEGORY_STRINGOP ? string_pointers(in.mnemonic) : 0;
	data_read |= ptrs;
	out->reg_write |= ptrs;
	out->reg_read = data_read | addr_read;
	out->reg_addr = addr_read & ~data_read;

	/* the plugin's kinds */
	ZydisMnemonic m = in.mnemonic;
	if ((in.attributes & ZYDIS_ATTRIB_HAS_LOCK) || (m == ZYDIS_MNEMONIC_XCHG && memop)) {
		out->kind = INSN_ATOMIC;
		out->cls = INSN_CLS_ATOMIC;
	} else if (in.meta.category == ZYDIS_CATEGORY_STRINGOP &&
		   (in.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
				     ZYDIS_ATTRIB_HAS_REPNE))) {
		out->kind = INSN_REP_STRING;
		out->cls = INSN_CLS_STRING;
	} else {
		out->cls = INSN_CLS_SERIALISING;
		switch (m) {
		case ZYDIS_MNEMONIC_CPUID:
			out->kind = INSN_CPUID;
			break;
		case ZYDIS_MNEMONIC_WRMSR:
			out->kind = INSN_WRMSR;
			break;
		case ZYDIS_MNEMONIC_IRET:
		case ZYDIS_MNEMONIC_IRETD:
		case ZYDIS_MNEMONIC_IRETQ:
			out->kind = INSN_IRET;
			break;
		case ZYDIS_MNEMONIC_LGDT:
		case ZYDIS_MNEMONIC_LIDT:
		case ZYDIS_MNEMONIC_LLDT:
		case ZYDIS_MNEMONIC_LTR:
			out->kind = INSN_DESC_LOAD;
			break;
		case ZYDIS_MNEMONIC_INVLPG:
			out->kind = INSN_INVLPG;
			break;
		case ZYDIS_MNEMONIC_INVPCID:
			out->kind = INSN_INVPCID;
			out->gpr = (int8_t)gpr_num(ops[0].reg.value);
			break;
		case ZYDIS_MNEMONIC_MFENCE:
			out->kind = INSN_FENCE;
			out->cls = INSN_CLS_FENCE_M;
			break;
		case ZYDIS_MNEMONIC_LFENCE:
			out->kind = INSN_FENCE;
			out->cls = INSN_CLS_FENCE_L;
			break;
		case ZYDIS_MNEMONIC_HLT:
			out->kind = INSN_HLT;
			out->cls = INSN_CLS_OTHER;
			break;
		case ZYDIS_MNEMONIC_PAUSE:
			out->kind = INSN_PAUSE;
			out->cls = INSN_CLS_OTHER;
			break;
		case ZYDIS_MNEMONIC_MOV:
			if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
			    ZydisRegisterGetClass(ops[0].reg.value) == ZYDIS_REGCLASS_CONTROL) {
				out->kind = INSN_MOV_CR;
				out->cr = (u8)ZydisRegisterGetId(ops[0].reg.value);
				out->gpr = (int8_t)gpr_num(ops[1].reg.value);
				/* not serialising: cr8, the task priority (Intel SDM 9.3) */
				if (out->cr == 8)
					out->cls = INSN_CLS_OTHER;
			} else if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
				   ZydisRegisterGetClass(ops[0].reg.value) == ZYDIS_REGCLASS_DEBUG) {
				break;	/* mov to dr: serialising, no kind */
			} else {
				out->cls = INSN_CLS_OTHER;	/* decided below */
			}
			break;
		default:
			out->cls = INSN_CLS_OTHER;	/* decided below */
			break;
		}
		if ((out->kind == INSN_INVLPG || out->kind == INSN_INVPCID) && memop) {
			out->has_mem = true;
			fill_mem_operand(&in, memop, &out->mem);
		}
		if (out->kind == INSN_PLAIN && out->cls == INSN_CLS_OTHER)
			out->cls = plain_cls(&in, ops, &s);
	}

	/* zero idioms read nothing; nops touch nothing */
	if (out->cls == INSN_CLS_ALU || out->cls == INSN_CLS_VEC_INT || out->cls == INSN_CLS_VEC_FP) {
		int src = s.nreg - 1;	/* the sources: every explicit register after the first */
		bool same = s.nreg >= 2 && !s.mem_read && !s.imm &&
			    in.encoding != ZYDIS_INSTRUCTION_ENCODING_EVEX;
		for (int i = 1; same && i < src; i++)
			same = s.reg[i] == s.reg[src];
		if (same && s.nreg == 2)
			same = s.reg[0] == s.reg[1];
		if (same && !s.vec && s.reg_size[0] < 32)
			same = false;	/* xor %al,%al keeps the rest of rax */
		if (same && zero_idiom_mnemonic(m, s.vec)) {
			out->cls = INSN_CLS_ZERO_IDIOM;
			out->reg_read = out->reg_addr = 0;
		}
	}
	if (out->cls == INSN_CLS_NOP) {
		out->reg_read = out->reg_write = out->reg_addr = 0;
		out->nmem = 0;
	}

	/* branches (near only: far transfers, int and syscall are not the predictor's) */
	switch (out->cls) {
	case INSN_CLS_BRANCH_COND:
		out->is_cond = true;
		/* fall through */
	case INSN_CLS_JMP_DIRECT:
	case INSN_CLS_CALL_DIRECT:
		out->is_branch = true;
		break;
	case INSN_CLS_JMP_INDIRECT:
	case INSN_CLS_CALL_INDIRECT:
	case INSN_CLS_RET:
		out->is_branch = out->is_indirect = true;
		break;
	default:
		out->has_target = false;
		out->target = 0;
		break;
	}
	out->uops = uop_estimate(&in, out);
}

void decode_insn(const u8 *b, size_t n, struct insn_info *out)
{
	decode(b, n, 0, false, out);
}

void decode_insn_at(const u8 *b, size_t n, u64 insn_va, struct insn_info *out)
{
	decode(b, n, insn_va, true, out);
}

u64 mem_operand_addr(const struct mem_operand *m, const u64 regs[16], u64 insn_va, u8 insn_len,
		     u64 fs_base, u64 gs_base)
{
	u64 a = (u64)m->disp;
	if (m->rip_relative)
		a += insn_va + insn_len;
	if (m->base >= 0)
		a += regs[m->base];
	if (m->index >= 0)
		a += regs[m->index] * m->scale;
	if (m->addr32)
		a &= 0xffffffffu;
	if (m->seg == SEG_FS)
		a += fs_base;
	else if (m->seg == SEG_GS)
		a += gs_base;
	return a;
}

const char *insn_kind_name(enum insn_kind k)
{
	static const char *const names[] = {
		"plain", "marker", "atomic", "cpuid", "wrmsr", "mov_cr", "iret", "desc_load",
		"invlpg", "fence", "hlt", "pause", "rep_string", "invpcid",
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

const char *insn_cls_name(unsigned cls)
{
	static const char *const names[NR_INSN_CLS] = {
		"alu", "shift", "lea", "move", "zero_idiom", "imul", "div", "bitcnt", "cmov",
		"setcc", "load", "store", "branch_cond", "jmp_direct", "jmp_indirect",
		"call_direct", "call_indirect", "ret", "vec_int", "vec_fp", "fp_div", "nop",
		"serialising", "fence_m", "fence_l", "fence_s", "atomic", "string", "other",
	};
	return cls < NR_INSN_CLS ? names[cls] : "?";
}
