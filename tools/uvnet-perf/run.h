/* SPDX-License-Identifier: MIT */
/* One test's state, shared by run.c (orchestration) and run_result.c (arithmetic). */
#ifndef UVN_PERF_RUN_H
#define UVN_PERF_RUN_H

#include "side.h"

struct run {
	const struct pt_opts *o;
	const struct pt_cfg *c;
	struct pt_result *r;
	struct pt_side dev, drv;
	struct pt_counts d0, d1, v0, v1;    /* device, driver at the start and end of the window */
	uint64_t t0, t1;                    /* the window, for CPU times */
	uint64_t cpu_dev[2], cpu_drv[2];
	bool cpu_dev_ok, cpu_drv_ok;
	/* The receiver's counters at the edges of the intervals: the first is
	 * the window's start, the last its end (run.c's static buffer). */
	struct pt_counts *edge;
	unsigned nedge, edge_cap;
};

/* Mark the result failed (the first reason wins). */
void run_fail(struct run *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The side whose counters say what arrived (sets r->measured_at). */
struct pt_side *run_receiver(struct run *x);
/* Frames (rr: transactions) that arrived, by the receiver's counters @c. */
uint64_t run_received(const struct run *x, const struct pt_counts *c);
/* What the receiver does with the payload in this test (any status). */
enum pt_touch run_touched(const struct pt_opts *o, const struct pt_cfg *c);
/* Rates, CPU, service demand, notifications, totals and latency into x->r. */
void run_compute(struct run *x);

#endif
