/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "hist.h"

/*
 * Values below 2 * SUB are their own bucket. Above, a value with its top
 * bit at position SUB_BITS + e (e >= 1) keeps its top SUB_BITS + 1 bits:
 * bucket 2 * SUB + (e - 1) * SUB + (v >> e) - SUB.
 */
unsigned pt_hist_index(uint64_t v)
{
	unsigned top, e;

	if (v < 2 * PT_HIST_SUB)
		return (unsigned)v;
	top = 63u - (unsigned)__builtin_clzll(v);
	e = top - PT_HIST_SUB_BITS;
	if (e > PT_HIST_EXP)
		return PT_HIST_BUCKETS - 1;
	return 2 * PT_HIST_SUB + (e - 1) * PT_HIST_SUB + (unsigned)(v >> e) - PT_HIST_SUB;
}

uint64_t pt_hist_upper(unsigned i)
{
	unsigned e, sub;

	if (i < 2 * PT_HIST_SUB)
		return i;
	e = (i - 2 * PT_HIST_SUB) / PT_HIST_SUB + 1;
	sub = (i - 2 * PT_HIST_SUB) % PT_HIST_SUB + PT_HIST_SUB;
	return (((uint64_t)sub + 1) << e) - 1;
}

void pt_hist_reset(struct pt_hist *h)
{
	memset(h, 0, sizeof(*h));
}

void pt_hist_add(struct pt_hist *h, uint64_t v)
{
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	h->b[pt_hist_index(v)]++;
}

uint64_t pt_hist_quantile(const struct pt_hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return 0;
	if (q <= 0)
		return h->min;
	/* The smallest value with at least q of the samples at or below it. */
	want = (uint64_t)(q * (double)h->count + 0.999999);
	if (want > h->count)
		want = h->count;
	for (unsigned i = 0; i < PT_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want) {
			uint64_t u = pt_hist_upper(i);

			return u > h->max ? h->max : u < h->min ? h->min : u;
		}
	}
	return h->max;
}
