/* SPDX-License-Identifier: MIT */
#include <inttypes.h>

#include "util/stats.h"

void uvn_stats_snapshot(void *dst, const void *src, size_t size)
{
	uint64_t *d = dst;
	const uint64_t *s = src;

	for (size_t i = 0; i < size / sizeof(uint64_t); i++)
		d[i] = uvn_stat_read(&s[i]);
}

void uvn_stats_print(FILE *f, const void *stats, const struct uvn_stat_desc *desc, int all)
{
	const char *sep = "";

	for (const struct uvn_stat_desc *d = desc; d->name; d++) {
		uint64_t v = uvn_stat_get(stats, d);

		if (!v && !all)
			continue;
		fprintf(f, "%s%s=%" PRIu64, sep, d->name, v);
		sep = " ";
	}
}

void uvn_stats_json(FILE *f, const void *stats, const struct uvn_stat_desc *desc)
{
	const char *sep = "";

	for (const struct uvn_stat_desc *d = desc; d->name; d++) {
		fprintf(f, "%s\"%s\":%" PRIu64, sep, d->name, uvn_stat_get(stats, d));
		sep = ",";
	}
}
