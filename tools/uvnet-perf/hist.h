/* SPDX-License-Identifier: MIT */
/*
 * Latency histogram, HDR-style: log-linear buckets with 64 sub-buckets per
 * power of two, so every recorded value is known to within 1/64 (1.6 %)
 * from 1 ns to beyond 10^12 ns, in a fixed 17 KB array that the driver
 * worker fills in shared memory without allocating.
 */
#ifndef UVN_PERF_HIST_H
#define UVN_PERF_HIST_H

#include <stdint.h>

#define PT_HIST_SUB_BITS 6
#define PT_HIST_SUB (1u << PT_HIST_SUB_BITS)
#define PT_HIST_EXP 36 /* 2^(36+6) ns: over an hour */
#define PT_HIST_BUCKETS (PT_HIST_SUB * 2 + PT_HIST_EXP * PT_HIST_SUB)

struct pt_hist {
	uint64_t count, sum, min, max;
	uint64_t b[PT_HIST_BUCKETS];
};

void pt_hist_reset(struct pt_hist *h);
void pt_hist_add(struct pt_hist *h, uint64_t v);
/* The value at quantile @q (0..1): the upper edge of its bucket, at most max. 0 if empty. */
uint64_t pt_hist_quantile(const struct pt_hist *h, double q);
/* Bucket index of @v and the largest value in bucket @i (for tests). */
unsigned pt_hist_index(uint64_t v);
uint64_t pt_hist_upper(unsigned i);

#endif
