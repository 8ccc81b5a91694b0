/* SPDX-License-Identifier: MIT */
#include <inttypes.h>

#include "util/stats.h"

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
