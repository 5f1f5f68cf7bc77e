/*
 * Per-CPU page lists (pcp): options and variant values. The lists themselves are
 * declared in mm/page_alloc_internal.h; the public entry points in mm/page_alloc.h.
 */
#ifndef BAREMM_PCP_H
#define BAREMM_PCP_H

#include "kernel/options.h"

/* The `pcp_mt` variant: where bulk free learns a page's migratetype. */
#define PCP_MT_LIST(X)                                                                      \
	X(PCP_MT_CACHED, "cached",                                                          \
	  "page->migratetype, stored when the page entered the list (refill, free)")        \
	X(PCP_MT_LOOKUP, "lookup", "the pageblock bitmap, read at the free; nothing stored")
enum pcp_mt { PCP_MT_LIST(OPTION_ENUM_CONST) };

DECLARE_OPTION_BOOL(opt_pcp);		/* `pcp` (variant) */
DECLARE_OPTION_UINT(opt_pcp_high);	/* `pcp_high`, 0 = auto (variant) */
DECLARE_OPTION_UINT(opt_pcp_batch);	/* `pcp_batch`, 0 = auto (variant) */
DECLARE_OPTION_ENUM(pcp_mt);		/* PCP_MT_* (variant) */

/* The Linux-style defaults, exposed for tests: batch from managed pages, high from the
 * low watermark split over @ncpus, at least 4 * batch. */
unsigned pcp_default_batch(u64 managed_pages);
unsigned pcp_default_high(u64 low_wmark, unsigned batch, unsigned ncpus);

#endif
