/*
 * printk and the console lock. A call formats into a stack buffer, then writes it to every
 * console under one lock hold, so whole lines from different CPUs never interleave. A CPU
 * that faults while holding the lock (or panics) may re-enter: the lock records its owner.
 */
#include "kernel/printk.h"
#include "kernel/console.h"
#include "kernel/spinlock.h"
#include "kernel/percpu.h"
#include "kernel/string.h"

static spinlock_t console_lock = SPINLOCK_INIT;
static volatile int console_owner = -1;
static bool console_ready;
bool oops_in_progress;	/* panic: a stopped CPU may hold the lock; take it by force */

struct outbuf {
	char *buf;
	size_t size, len;	/* len counts every char, even those that did not fit */
};

static void put(struct outbuf *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_num(struct outbuf *o, u64 v, unsigned base, bool upper, bool neg, int width,
		    int prec, bool left, char pad, bool alt)
{
	char tmp[24];
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	int n = 0;
	if (v == 0 && prec != 0)
		tmp[n++] = '0';
	while (v) {
		tmp[n++] = digits[v % base];
		v /= base;
	}
	int zeros = prec > n ? prec - n : 0;
	int total = n + zeros + (neg ? 1 : 0) + (alt ? 2 : 0);
	if (prec >= 0)
		pad = ' ';
	if (!left && pad == ' ')
		for (int i = total; i < width; i++)
			put(o, ' ');
	if (neg)
		put(o, '-');
	if (alt) {
		put(o, '0');
		put(o, upper ? 'X' : 'x');
	}
	if (!left && pad == '0')
		for (int i = total; i < width; i++)
			put(o, '0');
	for (int i = 0; i < zeros; i++)
		put(o, '0');
	while (n)
		put(o, tmp[--n]);
	if (left)
		for (int i = total; i < width; i++)
			put(o, ' ');
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct outbuf o = { buf, size, 0 };
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		bool left = false, alt = false;
		char pad = ' ';
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '0')
				pad = '0';
			else if (*fmt == '#')
				alt = true;
			else
				break;
		}
		int width = 0, prec = -1;
		if (*fmt == '*') {
			width = va_arg(ap, int);
			if (width < 0) {
				left = true;
				width = -width;
			}
			fmt++;
		} else {
			while (*fmt >= '0' && *fmt <= '9')
				width = width * 10 + (*fmt++ - '0');
		}
		if (*fmt == '.') {
			fmt++;
			prec = 0;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				fmt++;
			} else {
				while (*fmt >= '0' && *fmt <= '9')
					prec = prec * 10 + (*fmt++ - '0');
			}
		}
		int lng = 0;
		while (*fmt == 'l' || *fmt == 'z' || *fmt == 'h') {
			if (*fmt == 'l' || *fmt == 'z')
				lng++;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i': {
			s64 v = lng ? va_arg(ap, long) : va_arg(ap, int);
			put_num(&o, v < 0 ? -(u64)v : (u64)v, 10, false, v < 0, width, prec, left, pad, false);
			break;
		}
		case 'u':
		case 'x':
		case 'X':
		case 'o': {
			u64 v = lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
			unsigned base = *fmt == 'u' ? 10 : *fmt == 'o' ? 8 : 16;
			put_num(&o, v, base, *fmt == 'X', false, width, prec, left, pad, alt && base == 16);
			break;
		}
		case 'p':
			put_num(&o, (u64)va_arg(ap, void *), 16, false, false, width ? width : 0, -1, left,
				'0', true);
			break;
		case 'c': {
			char c = (char)va_arg(ap, int);
			for (int i = 1; !left && i < width; i++)
				put(&o, ' ');
			put(&o, c);
			for (int i = 1; left && i < width; i++)
				put(&o, ' ');
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			int n = 0;
			while (s[n] && (prec < 0 || n < prec))
				n++;
			for (int i = n; !left && i < width; i++)
				put(&o, ' ');
			for (int i = 0; i < n; i++)
				put(&o, s[i]);
			for (int i = n; left && i < width; i++)
				put(&o, ' ');
			break;
		}
		case '%':
			put(&o, '%');
			break;
		case 0:
			fmt--;
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = 0;
	return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

struct console_hold {
	unsigned long flags;
	bool nested, locked;
};

static void console_hold(struct console_hold *h)
{
	h->flags = local_irq_save();
	int me = console_ready ? (int)smp_processor_id() : 0;
	h->nested = READ_ONCE(console_owner) == me;
	h->locked = false;
	if (!h->nested) {
		if (!READ_ONCE(oops_in_progress)) {
			spin_lock(&console_lock);
			h->locked = true;
		} else {
			/* bounded wait: the holder may have been stopped by the panic NMI */
			for (long i = 0; i < 10000000 && !h->locked; i++) {
				h->locked = spin_trylock(&console_lock);
				if (!h->locked)
					cpu_relax();
			}
		}
		console_owner = me;
	}
}

static void console_release(struct console_hold *h)
{
	if (!h->nested) {
		console_owner = -1;
		if (h->locked)
			spin_unlock(&console_lock);
	}
	local_irq_restore(h->flags);
}

/*
 * Physical lines on the console are at most PRINTK_CONT_WIDTH characters: a longer line
 * leaves as several, each but the last ending in '\\', each but the first starting with
 * "BAREMM-CONT ". The host tools join them (docs/OUTPUT.md, "Long lines"), so a record of
 * any length arrives whole through line-oriented loggers. Called with the console held.
 */
static unsigned line_col;	/* characters already on the current physical line */

static void emit_continued(const char *s, size_t n)
{
	static const char cont[] = "BAREMM-CONT ";
	while (n) {
		size_t i = 0;
		while (i < n && s[i] != '\n' && line_col + i < PRINTK_CONT_WIDTH)
			i++;
		console_emit(s, i);
		line_col += (unsigned)i;
		s += i;
		n -= i;
		if (!n)
			break;
		if (*s == '\n') {
			console_emit(s, 1);
			line_col = 0;
			s++;
			n--;
			continue;
		}
		/* the physical line is full and the logical one goes on */
		console_emit("\\\n", 2);
		console_emit(cont, sizeof(cont) - 1);
		line_col = sizeof(cont) - 1;
	}
}

void console_write(const char *s, size_t n)
{
	struct console_hold h;
	console_hold(&h);
	emit_continued(s, n);
	console_release(&h);
}

void console_set_ready(void)
{
	console_ready = true;
}

/* Lines longer than the stack buffer are formatted again here, under the console lock. */
static char long_buf[PRINTK_LONG_MAX];
static bool long_busy;		/* a CPU faulting while printing a long line re-enters */
unsigned printk_lines_cut;

int vprintk(const char *fmt, va_list ap)
{
	char buf[1024];
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n < (int)sizeof(buf)) {
		console_write(buf, (size_t)n);
		va_end(ap2);
		return n;
	}
	struct console_hold h;
	console_hold(&h);
	const char *out = buf;
	size_t cap = sizeof(buf);
	bool own = !long_busy;
	if (own) {
		long_busy = true;
		vsnprintf(long_buf, sizeof(long_buf), fmt, ap2);
		out = long_buf;
		cap = sizeof(long_buf);
	}
	va_end(ap2);
	size_t len = n < (int)cap ? (size_t)n : cap - 1;
	emit_continued(out, len);
	if ((size_t)n >= cap) {
		/* still too long: cut, and say so in a line every tool reports */
		char msg[128];
		int m = snprintf(msg, sizeof(msg), "%sBAREMM-ERROR printk: a line of %d characters was "
				 "cut to %u\n", out[len - 1] == '\n' ? "" : "\n", n, (unsigned)len);
		emit_continued(msg, (size_t)m);
		printk_lines_cut++;
	}
	if (own)
		long_busy = false;
	console_release(&h);
	return n;
}

int printk(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vprintk(fmt, ap);
	va_end(ap);
	return n;
}
