/* SPDX-License-Identifier: MIT */
/*
 * Counters described by {name, offsetof} tables (struct uvn_stat_desc, in
 * <uvnet/virtqueue.h>), printed as text or JSON by one piece of code.
 */
#ifndef UVN_UTIL_STATS_H
#define UVN_UTIL_STATS_H

#include <stdint.h>
#include <stdio.h>

#include <uvnet/virtqueue.h>

#define UVN_STAT(type, field) { #field, offsetof(type, field) }

static inline uint64_t uvn_stat_get(const void *stats, const struct uvn_stat_desc *d)
{
	return *(const uint64_t *)((const char *)stats + d->offset);
}

/* Print "name=value" pairs (non-zero only unless @all) separated by spaces. */
void uvn_stats_print(FILE *f, const void *stats, const struct uvn_stat_desc *desc, int all);

/* Print "\"name\":value" pairs separated by commas (no braces). */
void uvn_stats_json(FILE *f, const void *stats, const struct uvn_stat_desc *desc);

#endif
