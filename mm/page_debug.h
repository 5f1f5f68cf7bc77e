/*
 * Page allocator debug checks (option page_debug=on|off, default off): poison at free,
 * poison check at allocation, double free / still-mapped / still-referenced frees, and
 * the full consistency check (page_alloc_check in mm/page_alloc.h).
 *
 * An error panics with the pfn, the page's state and the caller. Host tests set
 * page_debug_nopanic: errors are then counted and remembered instead, and the offending
 * free is refused (the page is left as it was).
 */
#ifndef BAREMM_PAGE_DEBUG_H
#define BAREMM_PAGE_DEBUG_H

#include "mm/page.h"
#include "kernel/options.h"

#define PAGE_POISON_BYTE 0xaa

DECLARE_OPTION_BOOL(page_debug);

extern bool page_debug_nopanic;		/* test hook: report instead of panic */
extern u64 page_debug_errors;		/* errors reported while nopanic */
extern const char *page_debug_last_error;
extern u64 page_debug_last_pfn;

#endif
