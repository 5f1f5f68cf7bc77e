/*
 * Per-CPU page lists (pcp): options and variant values. The lists themselves are
 * declared in mm/page_alloc_internal.h; the public entry points in mm/page_alloc.h.
 */
#ifndef BAREMM_PCP_H
#define BAREMM_PCP_H

#include "kernel/options.h"

/* Values of the `pcp_mt` variant (seed 003). */
enum pcp_mt_mode {
	PCP_MT_CACHED = 0,	/* bulk free trusts page->migratetype cached at pcp entry */
	PCP_MT_LOOKUP = 1,	/* bulk free reads the pageblock bitmap (Linux >= 6.7) */
};

DECLARE_OPTION_BOOL(pcp_enabled);	/* pcp=on|off (variant) */
DECLARE_OPTION_UINT(pcp_high_opt);	/* pcp_high=N, 0 = auto (variant) */
DECLARE_OPTION_UINT(pcp_batch_opt);	/* pcp_batch=N, 0 = auto (variant) */
DECLARE_OPTION_ENUM(pcp_mt_mode);	/* pcp_mt=cached|lookup (variant) */

/* The Linux-style defaults, exposed for tests: batch from managed pages, high from the
 * low watermark split over @ncpus, at least 4 * batch. */
unsigned pcp_default_batch(u64 managed_pages);
unsigned pcp_default_high(u64 low_wmark, unsigned batch, unsigned ncpus);

#endif
