/*
 * The L2 stream prefetcher of one CPU (prefetch.c, docs/COSTMODEL.md "The L2 stream
 * prefetcher"). QEMU-free and deterministic: it sees line numbers and answers with line
 * numbers; coherence.c feeds it and fills what it asks for.
 *
 * Contract:
 * - pf_observe() is given every demand access of the CPU that missed its L1d (loads,
 *   stores, the load half of atomics, page-walk loads: the L2's request stream), in order;
 *   not a rep string's lines (coh_access_rep(): their prices were measured with the
 *   hardware's prefetchers at work).
 * - A stream lives in one 4 KiB page (64 lines) and runs in one direction d (+1 or -1). It
 *   is found by two misses to consecutive lines of the page (L, then L + d); from that
 *   access on, every access of the stream at line L asks for lines L+d .. L+d*lines, cut
 *   at the page's edge, each line once: the stream remembers how far it has asked.
 * - An access that continues a stream is one in its direction at most `lines` lines past
 *   its last line (lines between may have hit the L1d); any other access to the page
 *   starts over from that line (a step of one line back starts a stream the other way).
 * - At most `streams` pages are tracked; a new page replaces the least recently used one.
 * - With lines == 0 or streams == 0 it never asks for anything.
 */
#ifndef BAREMM_MODEL_PREFETCH_H
#define BAREMM_MODEL_PREFETCH_H

#include "model/model.h"

#define PF_PAGE_LINES 64	/* 4 KiB / 64-byte lines: a stream never leaves its page */

struct pf_stream {
	u64 page;	/* line >> 6, + 1; 0 = free entry */
	u64 last;	/* the last line of the page the CPU missed on */
	u64 ahead;	/* the furthest line asked for (last when none yet) */
	u64 stamp;	/* last use; the smallest is the LRU entry */
	int dir;	/* +1 or -1 once two consecutive misses made a stream; 0 = none yet */
};

struct prefetcher {
	unsigned nstreams, lines;
	u64 clock;
	struct pf_stream *s;
};

/* streams entries, lines ahead. 0, or -1 out of memory. */
int pf_init(struct prefetcher *pf, unsigned streams, unsigned lines);
void pf_free(struct prefetcher *pf);
/* A demand access missed the L1d at line. Writes the lines to prefetch, in the stream's
 * order, to out[] (room for PF_PAGE_LINES: they lie in line's page) and returns how many. */
unsigned pf_observe(struct prefetcher *pf, u64 line, u64 *out);

#endif
