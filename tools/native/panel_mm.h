/* The page-allocator environment of the panel (panel_mm.c), shared with panel_smp.c. */
#ifndef BAREMM_TOOLS_PANEL_MM_H
#define BAREMM_TOOLS_PANEL_MM_H

#include <stdint.h>
#include "kernel/list.h"

#define PANEL_RAM (1ull << 30)	/* the zone's size: pcp high/batch follow from it */

/* Build the zone once (2 CPUs, pcp on); 0 or -1. Call from the main thread. */
int panel_zone_init(void);
/* Allocate @n order-0 GFP_USER pages one by one onto @list (exits on failure). */
void panel_alloc_n(uint64_t n, struct list_head *list);
/* free_page every page of @list. */
void panel_free_loop(struct list_head *list);
/* One alloc + free batch of @pages on the calling CPU (host_cpu_id); with @timed, inside a
 * timed region, returning its ticks. */
uint64_t panel_bulk_batch(uint64_t pages, int timed);

#endif
