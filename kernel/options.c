/*
 * Strict command-line parsing against the option registry (kernel/options.h).
 * Pure logic: also compiled for the host unit tests.
 */
#include "kernel/options.h"
#include "kernel/printk.h"
#include "kernel/string.h"

struct option_desc *option_find(const char *name, size_t len)
{
	struct option_desc *o;
	for_each_option(o)
		if (strlen(o->name) == len && !strncmp(o->name, name, len))
			return o;
	return NULL;
}

static void choices_str(const struct option_desc *o, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	switch (o->type) {
	case OPT_BOOL:
		snprintf(buf, len, "on|off");
		return;
	case OPT_UINT:
		snprintf(buf, len, "%llu..%llu", (unsigned long long)o->min, (unsigned long long)o->max);
		return;
	case OPT_STRING:
		snprintf(buf, len, "text");
		return;
	case OPT_ENUM:
		for (int i = 0; o->choices[i]; i++) {
			int w = snprintf(buf + n, len - n, "%s%s", i ? "|" : "", o->choices[i]);
			if (w < 0 || (size_t)w >= len - n)
				break;
			n += (size_t)w;
		}
		return;
	}
}

static int parse_u64(const char *s, size_t len, u64 *out)
{
	u64 v = 0;
	unsigned base = 10;
	size_t i = 0;
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == len)
		return -1;
	for (; i < len; i++) {
		char c = s[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else if (base == 10 && i == len - 1 && (c == 'k' || c == 'K' || c == 'm' || c == 'M' || c == 'g' || c == 'G')) {
			u64 mul = (c == 'k' || c == 'K') ? 1ULL << 10 : (c == 'm' || c == 'M') ? 1ULL << 20 : 1ULL << 30;
			if (v > ~0ULL / mul)
				return -1;
			v *= mul;
			break;
		} else
			return -1;
		if (v > (~0ULL - d) / base)
			return -1;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* Parse @val for a bool, uint or enum option into *out (bool 0/1, enum index); -1 with a
 * message naming the option and its allowed values. */
static int parse_value(const struct option_desc *o, const char *val, size_t len, u64 *out,
		       char *err, size_t errlen)
{
	char allowed[256];
	choices_str(o, allowed, sizeof(allowed));
	switch (o->type) {
	case OPT_BOOL:
		if ((len == 2 && !strncmp(val, "on", 2)) || (len == 1 && val[0] == '1') ||
		    (len == 3 && !strncmp(val, "yes", 3)) || (len == 4 && !strncmp(val, "true", 4))) {
			*out = 1;
		} else if ((len == 3 && !strncmp(val, "off", 3)) || (len == 1 && val[0] == '0') ||
			   (len == 2 && !strncmp(val, "no", 2)) || (len == 5 && !strncmp(val, "false", 5))) {
			*out = 0;
		} else {
			snprintf(err, errlen, "option %s: '%.*s' is not a boolean (allowed: %s)", o->name,
				 (int)len, val, allowed);
			return -1;
		}
		return 0;
	case OPT_UINT:
		if (parse_u64(val, len, out)) {
			snprintf(err, errlen, "option %s: '%.*s' is not a number (allowed: %s)", o->name,
				 (int)len, val, allowed);
			return -1;
		}
		if (*out < o->min || *out > o->max) {
			snprintf(err, errlen, "option %s: %llu is out of range (allowed: %s)", o->name,
				 (unsigned long long)*out, allowed);
			return -1;
		}
		return 0;
	case OPT_ENUM:
		for (int i = 0; o->choices[i]; i++) {
			if (strlen(o->choices[i]) == len && !strncmp(o->choices[i], val, len)) {
				*out = (u64)i;
				return 0;
			}
		}
		snprintf(err, errlen, "option %s: '%.*s' is not allowed (allowed: %s)", o->name, (int)len,
			 val, allowed);
		return -1;
	case OPT_STRING:
		break;
	}
	return -1;
}

const char *option_value_unusable(const struct option_desc *o, const char *val, size_t len,
				  unsigned ncpus)
{
	char err[OPT_ERRLEN];
	u64 v;
	if (!o->unusable || o->type == OPT_STRING || parse_value(o, val, len, &v, err, sizeof(err)))
		return NULL;
	return o->unusable(v, ncpus);
}

int option_set(struct option_desc *o, const char *val, size_t len, char *err, size_t errlen)
{
	if (o->type == OPT_STRING) {
		/* points into the caller's command line, which lives for the whole run */
		if (len == 0) {
			snprintf(err, errlen, "option %s: empty value", o->name);
			return -1;
		}
		*(const char **)o->var = val;
		o->set = true;
		return 0;
	}
	u64 v;
	if (parse_value(o, val, len, &v, err, errlen))
		return -1;
	const char *why = o->unusable ? o->unusable(v, 0) : NULL;
	if (why) {
		snprintf(err, errlen, "option %s: '%.*s' cannot be exercised on this machine: %s",
			 o->name, (int)len, val, why);
		return -1;
	}
	switch (o->type) {
	case OPT_BOOL:
		*(bool *)o->var = v != 0;
		break;
	case OPT_UINT:
		*(u64 *)o->var = v;
		break;
	default:
		*(int *)o->var = (int)v;
		break;
	}
	o->set = true;
	return 0;
}

void options_fit_machine(void)
{
	struct option_desc *o;
	for_each_option(o) {
		if (!o->unusable || o->set || o->type == OPT_STRING)
			continue;
		u64 cur = o->type == OPT_BOOL ? (u64)*(bool *)o->var
			  : o->type == OPT_UINT ? *(u64 *)o->var : (u64)*(int *)o->var;
		if (!o->unusable(cur, 0))
			continue;
		if (o->type == OPT_BOOL && !o->unusable(!cur, 0)) {
			*(bool *)o->var = !cur;
		} else if (o->type == OPT_ENUM) {
			for (int i = 0; o->choices[i]; i++)
				if (!o->unusable((u64)i, 0)) {
					*(int *)o->var = i;
					break;
				}
		}
	}
}

static bool is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* String values are terminated in place: the parser writes a NUL after each word. */
int options_parse(char *cmdline, bool *want_help, char *err, size_t errlen)
{
	*want_help = false;
	for (size_t i = 0; cmdline[i]; i++) {
		unsigned char c = (unsigned char)cmdline[i];
		if ((c < 0x20 || c == 0x7f) && !is_sep((char)c)) {
			snprintf(err, errlen, "command line: control character 0x%02x at offset %u",
				 c, (unsigned)i);
			return -1;
		}
	}
	char *p = cmdline;
	bool first = true;
	const char *other = NULL;	/* an option given besides help */
	while (*p) {
		while (is_sep(*p))
			p++;
		if (!*p)
			break;
		char *w = p;
		while (*p && !is_sep(*p))
			p++;
		size_t wlen = (size_t)(p - w);
		bool at_end = *p == 0;
		if (!at_end)
			*p++ = 0;	/* terminate the word for string options */
		char *eq = NULL;
		for (size_t i = 0; i < wlen; i++)
			if (w[i] == '=') {
				eq = w + i;
				break;
			}
		if (first && !eq) {
			bool path = false;
			for (size_t i = 0; i < wlen; i++)
				path |= w[i] == '/';
			first = false;
			if (path)
				continue;	/* the kernel file name some loaders pass first */
		}
		first = false;
		if (!eq) {
			if (wlen == 4 && !strncmp(w, "help", 4)) {
				if (*want_help) {
					snprintf(err, errlen, "help: given twice");
					return -1;
				}
				*want_help = true;
				continue;
			}
			snprintf(err, errlen, "option '%.*s': expected key=value (or 'help')", (int)wlen, w);
			return -1;
		}
		struct option_desc *o = option_find(w, (size_t)(eq - w));
		if (!o) {
			snprintf(err, errlen, "option '%.*s': unknown option (boot with 'help' for the list)",
				 (int)(eq - w), w);
			return -1;
		}
		if (o->set) {
			snprintf(err, errlen, "option %s: given twice", o->name);
			return -1;
		}
		if (option_set(o, eq + 1, (size_t)(w + wlen - eq - 1), err, errlen))
			return -1;
		other = o->name;
	}
	if (*want_help && other) {
		snprintf(err, errlen, "help: cannot be combined with other options (%s= given); boot "
			 "with 'help' alone", other);
		return -1;
	}
	return 0;
}

void option_format_value(const struct option_desc *o, char *buf, size_t len)
{
	switch (o->type) {
	case OPT_BOOL:
		snprintf(buf, len, "%s", *(bool *)o->var ? "on" : "off");
		break;
	case OPT_UINT:
		snprintf(buf, len, "%llu", (unsigned long long)*(u64 *)o->var);
		break;
	case OPT_ENUM:
		snprintf(buf, len, "%s", o->choices[*(int *)o->var]);
		break;
	case OPT_STRING:
		snprintf(buf, len, "%s", *(const char **)o->var ? *(const char **)o->var : "");
		break;
	}
}

static void format_default(const struct option_desc *o, char *buf, size_t len)
{
	switch (o->type) {
	case OPT_BOOL:
		snprintf(buf, len, "%s", o->def ? "on" : "off");
		break;
	case OPT_UINT:
		snprintf(buf, len, "%llu", (unsigned long long)o->def);
		break;
	case OPT_ENUM:
		snprintf(buf, len, "%s", o->choices[o->def]);
		break;
	case OPT_STRING:
		snprintf(buf, len, "%s", o->def_str ? o->def_str : "");
		break;
	}
}

void options_print_help(void)
{
	struct option_desc *o;
	printk("Boot options (key=value; 'variant' options can be compared in one boot with ab=):\n");
	for_each_option(o) {
		char allowed[256], def[64];
		choices_str(o, allowed, sizeof(allowed));
		format_default(o, def, sizeof(def));
		printk("  %-16s %-30s default %-10s %s%s\n", o->name, allowed, def,
		       o->variant ? "[variant] " : "", o->help);
	}
}

void options_reset(void)
{
	struct option_desc *o;
	for_each_option(o) {
		o->set = false;
		switch (o->type) {
		case OPT_BOOL:
			*(bool *)o->var = o->def != 0;
			break;
		case OPT_UINT:
			*(u64 *)o->var = o->def;
			break;
		case OPT_ENUM:
			*(int *)o->var = (int)o->def;
			break;
		case OPT_STRING:
			*(const char **)o->var = o->def_str;
			break;
		}
	}
}
