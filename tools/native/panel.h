/*
 * The native panel (docs/COSTMODEL.md, "The native panel"): small workloads run by the
 * same static binary natively on the host and as /init of the Linux guest that
 * tools/linux-ref boots under the cost model. Each timed region carries the model's marks
 * (arch/x86_64/costmodel.h), so the model prices exactly the instructions the host's TSC
 * times.
 *
 * A workload is one row: an untimed setup (once), and a run that does its own untimed
 * preparation (so every run starts from the state the workload defines, not from what
 * the previous workload left) and brackets the measured part with panel_tstart() /
 * panel_tstop(). Two-CPU workloads run their second half on the panel's worker thread,
 * pinned to CPU 1. Contract: runs are called from the main thread, pinned to CPU 0.
 */
#ifndef BAREMM_TOOLS_PANEL_H
#define BAREMM_TOOLS_PANEL_H

#include <stdint.h>
#include "native.h"
#include "../../arch/x86_64/costmodel.h"

struct panel_wl {
	const char *name;
	const char *group;	/* micro, mm, smp */
	const char *desc;	/* one line: the shape and what an op is */
	int cpus;		/* 1 or 2 */
	int (*setup)(struct panel_wl *w);	/* once; 0 or an error */
	/* One run: prepare (untimed), then the timed part; returns its TSC ticks on CPU 0 and
	 * sets *ops to the operations it timed. */
	uint64_t (*run)(struct panel_wl *w, uint64_t *ops);
	uint64_t param;	/* the shape's size (bytes, pages, iterations: per workload) */
	void *priv;
};

/* A timed region: the model brackets exactly what the TSC figure times. */
static inline uint64_t panel_tstart(void)
{
	model_region_begin();
	return native_tsc();
}

static inline uint64_t panel_tstop(uint64_t t0)
{
	uint64_t t = native_tsc() - t0;
	model_region_end();
	return t;
}

/* The per-file workload tables (panel_micro.c, panel_mm.c, panel_smp.c, panel_vm.c). */
extern struct panel_wl panel_micro[], panel_mm[], panel_smp[], panel_vm[];

/* 1 when the runs are for the cost model (the guest), 0 natively. */
extern int panel_model;

/* Memory for workloads: 2 MiB aligned, THP asked for (MADV_HUGEPAGE), pre-faulted. */
void *panel_alloc(uint64_t bytes);
/* A deterministic generator (splitmix64): the same shapes on both sides. */
uint64_t panel_rand(uint64_t *state);

/* The worker on CPU 1: panel_smp_call() runs @fn(@arg) there and returns at once;
 * panel_smp_join() waits for it. panel_barrier() lines both CPUs up (spinning). */
void panel_smp_start(void);
void panel_smp_call(void (*fn)(void *), void *arg);
void panel_smp_join(void);
void panel_barrier(void);

#endif
