/*
 * Profile files: one `key = value` per line, `#` starts a comment (the value's source).
 * Every key of struct profile must appear exactly once; an unknown key, a repeated key,
 * a malformed number or a missing key is an error naming the file and line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/model.h"
#include "model/core.h"

enum vkind { V_INT, V_FX, V_NAME };

struct pkey {
	const char *key;
	size_t off;
	enum vkind kind;
	u64 min, max;
};

#define K(f, kind, lo, hi) { #f, offsetof(struct profile, f), kind, lo, hi }
static const struct pkey keys[] = {
	{ "name", offsetof(struct profile, name), V_NAME, 0, 0 },
	{ "ghz", offsetof(struct profile, ghz_x100), V_FX, 10, 10000 },
	{ "base_cpi", offsetof(struct profile, base_cpi_x100), V_FX, 1, 10000 },
	K(l1d_kib, V_INT, 1, 1 << 20), K(l1d_ways, V_INT, 1, 64), K(l1d_lat, V_INT, 1, 1000),
	K(l2_kib, V_INT, 1, 1 << 20), K(l2_ways, V_INT, 1, 64), K(l2_lat, V_INT, 1, 1000),
	K(llc_kib, V_INT, 1, 1 << 22), K(llc_ways, V_INT, 1, 64), K(llc_lat, V_INT, 1, 10000),
	K(mem_lat, V_INT, 1, 100000),
	K(dtlb4k_entries, V_INT, 1, 1 << 16), K(dtlb4k_ways, V_INT, 1, 1 << 16),
	K(dtlb2m_entries, V_INT, 1, 1 << 16), K(dtlb2m_ways, V_INT, 1, 1 << 16),
	K(stlb_entries, V_INT, 1, 1 << 20), K(stlb_ways, V_INT, 1, 1 << 16), K(stlb_lat, V_INT, 0, 1000),
	K(walk_overhead, V_INT, 0, 10000), K(nested_page_kib, V_INT, 0, 1 << 20),
	K(atomic, V_INT, 0, 100000), K(serialise, V_INT, 0, 100000), K(cpuid, V_INT, 0, 100000),
	K(wrmsr, V_INT, 0, 100000), K(mov_cr, V_INT, 0, 100000), K(invlpg, V_INT, 0, 100000),
	K(fence, V_INT, 0, 100000), K(irq_roundtrip, V_INT, 0, 1000000),
	K(ipi_latency, V_INT, 0, 1000000), K(pause, V_INT, 0, 100000), K(hlt, V_INT, 0, 1000000),
	{ "rep_store_line", offsetof(struct profile, rep_store_line_x100), V_FX, 0, 10000000 },
	{ "rep_fill_line", offsetof(struct profile, rep_fill_line_x100), V_FX, 0, 10000000 },
	{ "rep_read_line", offsetof(struct profile, rep_read_line_x100), V_FX, 0, 10000000 },
	{ "rep_llc_line", offsetof(struct profile, rep_llc_line_x100), V_FX, 0, 10000000 },
	{ "rep_llc_read_line", offsetof(struct profile, rep_llc_read_line_x100), V_FX, 0, 10000000 },
	K(rep_mem_line, V_INT, 0, 100000),
	K(c2c_lat, V_INT, 0, 100000), K(c2c_remote_lat, V_INT, 0, 100000),
	K(sockets, V_INT, 1, 256), K(cores_per_socket, V_INT, 1, 4096),
	/* the core's limits: the bounds are those of its fixed-size rings (core.h) */
	K(core_width, V_INT, 1, 16), K(rob_size, V_INT, 1, 1024), K(load_buffer, V_INT, 1, 256),
	K(store_buffer, V_INT, 1, 256), K(fill_buffers, V_INT, 1, 128), K(mispredict, V_INT, 0, 1000),
	K(lat_imul, V_INT, 1, 1000), K(lat_div, V_INT, 1, 1000), K(lat_vec, V_INT, 1, 1000),
	K(lat_fp, V_INT, 1, 1000), K(lat_fpdiv, V_INT, 1, 1000),
	K(prefetch_lines, V_INT, 0, 64), K(prefetch_streams, V_INT, 0, 256),
	K(page_walkers, V_INT, 1, 16), K(stores_per_cycle, V_INT, 1, 8),
	K(taken_per_cycle, V_INT, 1, 8),
	K(loop_branches, V_INT, 0, 64), K(loop_taken_per_cycle, V_INT, 1, 8),
	K(btb_l0_entries, V_INT, 0, 4096), K(btb_bubble, V_INT, 0, 100),
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Decimal with at most two fraction digits, kept x100 (scale 100) or an integer (scale 1). */
static int parse_num(const char *s, size_t n, bool fx, u64 *out)
{
	u64 v = 0;
	size_t i = 0;
	if (!n)
		return -1;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (u64)(s[i] - '0');
	}
	if (i == 0)
		return -1;
	if (!fx) {
		if (i != n)
			return -1;
		*out = v;
		return 0;
	}
	v *= 100;
	if (i < n) {
		if (s[i] != '.' || i + 1 == n || n - i - 1 > 2)
			return -1;
		u64 f = 0, mul = 10;
		for (i++; i < n; i++, mul /= 10) {
			if (s[i] < '0' || s[i] > '9')
				return -1;
			f += (u64)(s[i] - '0') * mul;
		}
		v += f;
	}
	*out = v;
	return 0;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

int profile_parse(const char *text, const char *fname, struct profile *p, char *err, size_t errlen)
{
	bool seen[NKEYS] = { false };
	unsigned lineno = 0;
	memset(p, 0, sizeof(*p));
	const char *line = text;
	while (*line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		lineno++;
		const char *hash = memchr(line, '#', len);
		size_t l = hash ? (size_t)(hash - line) : len;
		const char *s = line, *e = line + l;
		while (s < e && is_space(*s))
			s++;
		while (e > s && is_space(e[-1]))
			e--;
		line = eol ? eol + 1 : line + len;
		if (s == e)
			continue;
		const char *eq = memchr(s, '=', (size_t)(e - s));
		if (!eq)
			return fail(err, errlen, "profile %s:%u: expected 'key = value', got '%.*s'", fname,
				    lineno, (int)(e - s), s);
		const char *ke = eq, *vs = eq + 1;
		while (ke > s && is_space(ke[-1]))
			ke--;
		while (vs < e && is_space(*vs))
			vs++;
		size_t klen = (size_t)(ke - s), vlen = (size_t)(e - vs);
		unsigned k;
		for (k = 0; k < NKEYS; k++)
			if (strlen(keys[k].key) == klen && !memcmp(keys[k].key, s, klen))
				break;
		if (k == NKEYS)
			return fail(err, errlen, "profile %s:%u: unknown key '%.*s'", fname, lineno, (int)klen, s);
		if (seen[k])
			return fail(err, errlen, "profile %s:%u: key '%s' given twice", fname, lineno, keys[k].key);
		seen[k] = true;
		if (keys[k].kind == V_NAME) {
			if (!vlen || vlen >= sizeof(p->name))
				return fail(err, errlen, "profile %s:%u: name must be 1..%zu characters", fname,
					    lineno, sizeof(p->name) - 1);
			for (size_t i = 0; i < vlen; i++) {
				char c = vs[i];
				if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
				      c == '-' || c == '_' || c == '.'))
					return fail(err, errlen, "profile %s:%u: name may hold only [A-Za-z0-9._-]",
						    fname, lineno);
			}
			memcpy(p->name, vs, vlen);
			p->name[vlen] = 0;
			continue;
		}
		u64 v;
		if (parse_num(vs, vlen, keys[k].kind == V_FX, &v))
			return fail(err, errlen, "profile %s:%u: %s: '%.*s' is not a %s", fname, lineno,
				    keys[k].key, (int)vlen, vs,
				    keys[k].kind == V_FX ? "number with at most 2 decimals" : "whole number");
		if (v < keys[k].min || v > keys[k].max)
			return fail(err, errlen, "profile %s:%u: %s out of range", fname, lineno, keys[k].key);
		*(u64 *)((char *)p + keys[k].off) = v;
	}
	for (unsigned k = 0; k < NKEYS; k++)
		if (!seen[k])
			return fail(err, errlen, "profile %s: missing key '%s'", fname, keys[k].key);
	/* geometry must divide evenly into sets */
	struct { const char *what; u64 entries, ways; } geo[] = {
		{ "l1d", p->l1d_kib * 1024 / 64, p->l1d_ways }, { "l2", p->l2_kib * 1024 / 64, p->l2_ways },
		{ "llc", p->llc_kib * 1024 / 64, p->llc_ways },
		{ "dtlb4k", p->dtlb4k_entries, p->dtlb4k_ways }, { "dtlb2m", p->dtlb2m_entries, p->dtlb2m_ways },
		{ "stlb", p->stlb_entries, p->stlb_ways },
	};
	if (p->nested_page_kib && p->nested_page_kib != 4 && p->nested_page_kib != 2048 &&
	    p->nested_page_kib != 1 << 20)
		return fail(err, errlen, "profile %s: nested_page_kib: %llu is not 0 or an x86 page size "
			    "(4, 2048, 1048576)", fname, (unsigned long long)p->nested_page_kib);
	if (!core_btb_geometry_ok(p->btb_l0_entries))
		return fail(err, errlen, "profile %s: btb_l0_entries: %llu is not 0 or %d ways times a power "
			    "of two of sets (%d, %d, %d ... %d)", fname,
			    (unsigned long long)p->btb_l0_entries, CORE_BTB_WAYS, CORE_BTB_WAYS,
			    2 * CORE_BTB_WAYS, 4 * CORE_BTB_WAYS, CORE_BTB_MAX);
	for (unsigned i = 0; i < sizeof(geo) / sizeof(geo[0]); i++)
		if (geo[i].ways > geo[i].entries || geo[i].entries % geo[i].ways)
			return fail(err, errlen, "profile %s: %s: %llu entries (lines) do not split into %llu ways",
				    fname, geo[i].what, (unsigned long long)geo[i].entries,
				    (unsigned long long)geo[i].ways);
	return 0;
}

int profile_load(const char *path, struct profile *p, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return fail(err, errlen, "profile %s: cannot open: %s", path, strerror(errno));
	char *buf = malloc(1 << 16);
	if (!buf) {
		fclose(f);
		return fail(err, errlen, "profile %s: out of memory", path);
	}
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	bool big = !feof(f);
	fclose(f);
	if (big) {
		free(buf);
		return fail(err, errlen, "profile %s: larger than 64 KiB", path);
	}
	buf[n] = 0;
	if (memchr(buf, 0, n)) {
		free(buf);
		return fail(err, errlen, "profile %s: contains a NUL byte", path);
	}
	int r = profile_parse(buf, path, p, err, errlen);
	free(buf);
	return r;
}

int profile_describe(const struct profile *p, char *buf, size_t len)
{
	return snprintf(buf, len,
			"profile=%s ghz=%llu.%02llu base_cpi=%llu.%02llu l1d=%llu/%llu/%llu l2=%llu/%llu/%llu "
			"llc=%llu/%llu/%llu mem=%llu dtlb4k=%llu/%llu dtlb2m=%llu/%llu stlb=%llu/%llu/%llu "
			"walk=%llu nested_page=%llu atomic=%llu serialise=%llu cpuid=%llu wrmsr=%llu mov_cr=%llu invlpg=%llu "
			"fence=%llu irq=%llu ipi=%llu pause=%llu hlt=%llu rep_store_line=%llu.%02llu "
			"rep_fill_line=%llu.%02llu rep_read_line=%llu.%02llu rep_llc_line=%llu.%02llu "
			"rep_llc_read_line=%llu.%02llu rep_mem_line=%llu "
			"c2c=%llu c2c_remote=%llu sockets=%llux%llu",
			p->name, (unsigned long long)(p->ghz_x100 / 100), (unsigned long long)(p->ghz_x100 % 100),
			(unsigned long long)(p->base_cpi_x100 / 100), (unsigned long long)(p->base_cpi_x100 % 100),
			(unsigned long long)p->l1d_kib, (unsigned long long)p->l1d_ways, (unsigned long long)p->l1d_lat,
			(unsigned long long)p->l2_kib, (unsigned long long)p->l2_ways, (unsigned long long)p->l2_lat,
			(unsigned long long)p->llc_kib, (unsigned long long)p->llc_ways, (unsigned long long)p->llc_lat,
			(unsigned long long)p->mem_lat, (unsigned long long)p->dtlb4k_entries,
			(unsigned long long)p->dtlb4k_ways, (unsigned long long)p->dtlb2m_entries,
			(unsigned long long)p->dtlb2m_ways, (unsigned long long)p->stlb_entries,
			(unsigned long long)p->stlb_ways, (unsigned long long)p->stlb_lat,
			(unsigned long long)p->walk_overhead, (unsigned long long)p->nested_page_kib,
			(unsigned long long)p->atomic,
			(unsigned long long)p->serialise, (unsigned long long)p->cpuid, (unsigned long long)p->wrmsr,
			(unsigned long long)p->mov_cr, (unsigned long long)p->invlpg, (unsigned long long)p->fence,
			(unsigned long long)p->irq_roundtrip, (unsigned long long)p->ipi_latency,
			(unsigned long long)p->pause, (unsigned long long)p->hlt,
			(unsigned long long)(p->rep_store_line_x100 / 100), (unsigned long long)(p->rep_store_line_x100 % 100),
			(unsigned long long)(p->rep_fill_line_x100 / 100), (unsigned long long)(p->rep_fill_line_x100 % 100),
			(unsigned long long)(p->rep_read_line_x100 / 100), (unsigned long long)(p->rep_read_line_x100 % 100),
			(unsigned long long)(p->rep_llc_line_x100 / 100), (unsigned long long)(p->rep_llc_line_x100 % 100),
			(unsigned long long)(p->rep_llc_read_line_x100 / 100),
			(unsigned long long)(p->rep_llc_read_line_x100 % 100),
			(unsigned long long)p->rep_mem_line, (unsigned long long)p->c2c_lat,
			(unsigned long long)p->c2c_remote_lat, (unsigned long long)p->sockets,
			(unsigned long long)p->cores_per_socket);
}
