/*
 * Boot options: `key=value` words on the kernel command line. Each option is declared once,
 * next to the code that reads it, with DEFINE_OPTION_*; the declaration lands in the
 * `baremm_options` linker section so `help` can list every option with its type, allowed
 * values, default and one-line meaning. Parsing is strict: an unknown key, a malformed
 * value or an out-of-range number is an error naming the option (exit status BAD_OPTION).
 *
 * Options marked "variant" (DEFINE_VARIANT_*) change a mechanism and may be switched at run
 * time between benchmark runs (ab=<option>:<v1>,<v2>); the code that reads them must read
 * the variable each time, not cache it at boot.
 *
 * The variables are plain globals written only during parsing (before APs start) or by the
 * benchmark harness between runs while every CPU is quiet.
 */
#ifndef BAREMM_OPTIONS_H
#define BAREMM_OPTIONS_H

#include "kernel/types.h"

enum opt_type { OPT_BOOL, OPT_UINT, OPT_ENUM, OPT_STRING };

struct option_desc {
	const char *name;
	const char *help;
	enum opt_type type;
	bool variant;			/* switchable at run time */
	void *var;			/* bool*, u64*, int* (enum index), const char** */
	u64 def, min, max;		/* default for bool/uint/enum; range for uint */
	const char *def_str;		/* default for string */
	const char *const *choices;	/* enum values, NULL-terminated */
	/* Hardware-dependent options: NULL when the running machine can exercise value @v
	 * (bool 0/1, uint, enum index) with @ncpus CPUs taking part (0: not known yet, i.e.
	 * while the command line is parsed), else the reason it cannot. A value refused
	 * here is a bad option (command line, ab=); a benchmark whose ab= values need more
	 * CPUs than it runs on is skipped with the reason. */
	const char *(*unusable)(u64 v, unsigned ncpus);
	bool set;			/* given on the command line */
} __aligned(8);

#define OPTION_SECTION __attribute__((used, section("baremm_options"), aligned(8)))

#define DEFINE_OPTION_UINT(var_, name_, def_, min_, max_, help_)                             \
	u64 var_ = (def_);                                                                   \
	static struct option_desc __opt_##var_ OPTION_SECTION = {                            \
		.name = name_, .help = help_, .type = OPT_UINT, .var = &var_, .def = (def_), \
		.min = (min_), .max = (max_) }

#define DEFINE_OPTION_BOOL(var_, name_, def_, help_)                                         \
	bool var_ = (def_);                                                                  \
	static struct option_desc __opt_##var_ OPTION_SECTION = {                            \
		.name = name_, .help = help_, .type = OPT_BOOL, .var = &var_, .def = (def_) }

#define DEFINE_OPTION_STRING(var_, name_, def_, help_)                                       \
	const char *var_ = (def_);                                                           \
	static struct option_desc __opt_##var_ OPTION_SECTION = {                            \
		.name = name_, .help = help_, .type = OPT_STRING, .var = &var_,              \
		.def_str = (def_) }

/*
 * Enum options come from one list: a macro that calls X(CONSTANT, "value", "meaning") once
 * per value, in order. The same list gives the C enum (in the header, OPTION_ENUM_CONST),
 * the allowed values and the help text, so the three cannot drift apart:
 *
 *   #define TLB_PROTOCOL_LIST(X) \
 *	X(TLB_PROTO_SEQUENTIAL, "sequential", "flush locally, then IPI and wait") \
 *	X(TLB_PROTO_CONCURRENT, "concurrent", "send the IPIs, flush locally meanwhile, wait")
 *   enum { TLB_PROTOCOL_LIST(OPTION_ENUM_CONST) };			// header
 *   DECLARE_OPTION_ENUM(tlb_protocol);					// header
 *   DEFINE_VARIANT_ENUM(tlb_protocol, "tlb_protocol", TLB_PROTO_CONCURRENT,
 *			 "shootdown order", TLB_PROTOCOL_LIST);		// .c file
 *
 * `help` prints "shootdown order; sequential = ...; concurrent = ...". var_ holds the index
 * of the chosen value (its CONSTANT); var_##_names[] names every value (for reports).
 * Name the variable like the option (opt_<option> where the bare name is taken), so one
 * grep finds both.
 */
#define OPTION_ENUM_CONST(id_, name_, help_) id_,
#define OPTION_ENUM_NAME(id_, name_, help_) name_,
#define OPTION_ENUM_HELP(id_, name_, help_) "; " name_ " = " help_

#define __DEFINE_OPTION_ENUM(variant_, check_, var_, name_, def_, help_, list_)              \
	int var_ = (def_);                                                                   \
	const char *const var_##_names[] = { list_(OPTION_ENUM_NAME) NULL };                 \
	static struct option_desc __opt_##var_ OPTION_SECTION = {                            \
		.name = name_, .help = help_ list_(OPTION_ENUM_HELP), .type = OPT_ENUM,      \
		.variant = variant_, .var = &var_, .def = (def_), .choices = var_##_names,   \
		.unusable = (check_) }

#define DEFINE_OPTION_ENUM(var_, name_, def_, help_, list_) \
	__DEFINE_OPTION_ENUM(false, NULL, var_, name_, def_, help_, list_)
#define DEFINE_VARIANT_ENUM(var_, name_, def_, help_, list_) \
	__DEFINE_OPTION_ENUM(true, NULL, var_, name_, def_, help_, list_)
/* Enums whose values depend on the machine (@check_: see .unusable above). */
#define DEFINE_OPTION_ENUM_HW(var_, name_, def_, check_, help_, list_) \
	__DEFINE_OPTION_ENUM(false, check_, var_, name_, def_, help_, list_)
#define DEFINE_VARIANT_ENUM_HW(var_, name_, def_, check_, help_, list_) \
	__DEFINE_OPTION_ENUM(true, check_, var_, name_, def_, help_, list_)

#define DEFINE_VARIANT_UINT(var_, name_, def_, min_, max_, help_)                            \
	u64 var_ = (def_);                                                                   \
	static struct option_desc __opt_##var_ OPTION_SECTION = {                            \
		.name = name_, .help = help_, .type = OPT_UINT, .variant = true,             \
		.var = &var_, .def = (def_), .min = (min_), .max = (max_) }

#define DEFINE_VARIANT_BOOL(var_, name_, def_, help_)                                        \
	bool var_ = (def_);                                                                  \
	static struct option_desc __opt_##var_ OPTION_SECTION = {                            \
		.name = name_, .help = help_, .type = OPT_BOOL, .variant = true,             \
		.var = &var_, .def = (def_) }

/* A variant bool whose values depend on the machine (@check_: see .unusable above). */
#define DEFINE_VARIANT_BOOL_HW(var_, name_, def_, check_, help_)                             \
	bool var_ = (def_);                                                                  \
	static struct option_desc __opt_##var_ OPTION_SECTION = {                            \
		.name = name_, .help = help_, .type = OPT_BOOL, .variant = true,             \
		.var = &var_, .def = (def_), .unusable = (check_) }

#define DECLARE_OPTION_UINT(var_) extern u64 var_
#define DECLARE_OPTION_BOOL(var_) extern bool var_
#define DECLARE_OPTION_ENUM(var_) extern int var_; extern const char *const var_##_names[]
#define DECLARE_OPTION_STRING(var_) extern const char *var_

/* Errors from parsing; each maps to the BAD_OPTION exit status in the kernel. */
#define OPT_ERRLEN 256

/*
 * Parse a whole command line (space-separated words), in place: each word is NUL-
 * terminated so string options can point into it. Returns 0, or -1 with a message
 * naming the option and its allowed values in @err. Words that are not key=value:
 * `help` sets *want_help; anything else is an error. The first word may be a path
 * (the kernel file name GRUB passes) when it contains '/': it is skipped.
 */
int options_parse(char *cmdline, bool *want_help, char *err, size_t errlen);
/* Set one option from a value string (used by the parser and by ab= switching). */
int option_set(struct option_desc *o, const char *val, size_t len, char *err, size_t errlen);
struct option_desc *option_find(const char *name, size_t len);
/* Print every option (name, type, allowed values, default, help) through printk. */
void options_print_help(void);
/* NULL when this machine can exercise value string @val of @o with @ncpus CPUs (0 =
 * unknown), else the reason it cannot; also NULL for values that do not parse. */
const char *option_value_unusable(const struct option_desc *o, const char *val, size_t len,
				  unsigned ncpus);
/* After parsing: an option left at a default this machine cannot exercise (pcid=on on a
 * CPU without PCID) takes the value it can (bool: the other one; enum: the first). */
void options_fit_machine(void);
/* Format the current value of @o into buf. */
void option_format_value(const struct option_desc *o, char *buf, size_t len);
/* Reset every option to its default (host tests). */
void options_reset(void);

extern struct option_desc __start_baremm_options[], __stop_baremm_options[];
#define for_each_option(o) for ((o) = __start_baremm_options; (o) < __stop_baremm_options; (o)++)

#endif
