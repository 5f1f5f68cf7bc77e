/* Contract reports (kernel/assert.h). Only DEBUG_CONTRACTS builds call them, and only they
 * compile this, so the default kernel's image does not change with it. */
#include "kernel/assert.h"
#include "kernel/printk.h"

#ifdef CONFIG_DEBUG_CONTRACTS
void contract_broken(const char *what, const char *func, const char *file, int line,
		     const char *fmt, ...)
{
	char details[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(details, sizeof(details), fmt, ap);
	va_end(ap);
	panic("contract broken: %s in %s() at %s:%d%s%s", what, func, file, line,
	      details[0] ? ": " : "", details);
}
#endif
