/*
 * Marks for the cycle-cost model (model/, docs/COSTMODEL.md): a QEMU TCG plugin that
 * prices every instruction and memory access. The plugin cannot write guest state, so
 * the guest only tells it where the harness's timed regions are and when a figure is
 * complete; the plugin then prints its own BAREMM-RESULT line with unit=model_cycles
 * into the same serial stream.
 *
 * A mark is one long NOP, `nopl 0x4d4dCCCC(%rax)` (bytes 0f 1f 80 CC CC 4d 4d): on any
 * CPU and under any accelerator it does nothing and touches no memory; the plugin
 * recognises the encoding at translation time and reads the command CCCC and its
 * arguments from rdi, rsi, rdx. Any CPU may issue any mark; REGION_BEGIN/END and SAMPLE
 * are per CPU, ROUND and FIGURE are issued by the CPU that runs the harness (CPU 0).
 * Outside the model a mark costs one instruction, the same in every variant of an A/B.
 *
 * The header needs no kernel type, so user programs use it too: tools/linux-ref/ref.c
 * marks its timed regions the same way and Linux then runs under the same model.
 */
#ifndef BAREMM_ARCH_COSTMODEL_H
#define BAREMM_ARCH_COSTMODEL_H

/* Commands (the plugin's protocol, model/protocol.c, takes these definitions). */
#define MODEL_REGION_BEGIN 0x0001	/* this CPU enters a timed region */
#define MODEL_REGION_END 0x0002		/* ... and leaves it; regions of one round add up */
#define MODEL_SAMPLE 0x0003		/* rdi = ops this CPU did this round */
#define MODEL_ROUND 0x0004		/* rdi = variant index, rsi = 1 for a warm-up round */
#define MODEL_FIGURE 0x0005		/* rdi = key string, rsi = its length, rdx = variant index */
#define MODEL_HELLO 0x0006		/* once at boot: the plugin states its profile */

/* The harness's limits (bench/harness.c), which the plugin's tables are sized by: at most
 * MODEL_MAX_RUNS runs per figure and variant indexes below MODEL_MAX_VARIANTS. */
#define MODEL_MAX_RUNS 1000
#define MODEL_MAX_VARIANTS 4

/* The plugin (model/) includes this header for the numbers alone; it may be built for a
 * host that is no x86. */
#if defined(__x86_64__)

/* Two levels so that the command macro is expanded before it is spelled as a number. */
#define MODEL_MARK_INSN_(cmd) ".byte 0x0f, 0x1f, 0x80, (" #cmd ") & 0xff, (" #cmd ") >> 8, 0x4d, 0x4d"
#define MODEL_MARK_INSN(cmd) MODEL_MARK_INSN_(cmd)

#define model_mark3(cmd, a, b, c)                                                          \
	__asm__ __volatile__(MODEL_MARK_INSN(cmd)                                          \
			     :: "D"((unsigned long)(a)), "S"((unsigned long)(b)),           \
			     "d"((unsigned long)(c)) : "memory")

static inline void model_region_begin(void) { model_mark3(MODEL_REGION_BEGIN, 0, 0, 0); }
static inline void model_region_end(void) { model_mark3(MODEL_REGION_END, 0, 0, 0); }
static inline void model_sample(unsigned long ops) { model_mark3(MODEL_SAMPLE, ops, 0, 0); }
static inline void model_round(unsigned variant, int warmup)
{
	model_mark3(MODEL_ROUND, variant, warmup, 0);
}
static inline void model_figure(const char *key, unsigned long len, unsigned variant)
{
	model_mark3(MODEL_FIGURE, key, len, variant);
}
static inline void model_hello(void) { model_mark3(MODEL_HELLO, 0, 0, 0); }
#endif

#endif
