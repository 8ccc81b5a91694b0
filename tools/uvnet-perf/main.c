/* SPDX-License-Identifier: MIT */
/*
 * uvnet-perf: netperf for virtio. See perf.h for the map of the files and
 * uvnet-perf(1) for the command line and the JSON fields.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uvnet/version.h>

#include "perf.h"
#include "proc.h"

static void keep_cmdline(char *out, size_t len, int argc, char **argv)
{
	size_t n = 0;

	out[0] = 0;
	for (int i = 0; i < argc && n < len - 1; i++) {
		const char *a = i ? argv[i] : "uvnet-perf";

		n += (size_t)snprintf(out + n, len - n, "%s%s", i ? " " : "", a);
	}
}

int main(int argc, char **argv)
{
	static struct pt_opts o;
	char err[256], cmdline[sizeof(o.cmdline)];
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	int r;

	/* Before getopt reorders argv. */
	keep_cmdline(cmdline, sizeof(cmdline), argc, argv);
	if (!args) {
		fprintf(stderr, "uvnet-perf: out of memory\n");
		return 1;
	}
	memcpy(args, argv, (size_t)argc * sizeof(*args));
	r = pt_parse(argc, argv, &o, err, sizeof(err));

	if (r == 2)
		printf("uvnet-perf %s\n", UVN_VERSION_STRING);
	else if (r > 0)
		pt_usage(stdout);
	else if (r < 0)
		fprintf(stderr, "uvnet-perf: %s (--help lists the options)\n", err);
	if (r) {
		free(args);
		return r < 0 ? 2 : 0;
	}
	/* Before minutes of measuring, not after them. */
	if (o.plot_dir && pt_need(&o, "gnuplot", "gnuplot-nox")) {
		free(args);
		return 2;
	}
	memcpy(o.cmdline, cmdline, sizeof(o.cmdline));
	if (o.json)
		pt_json_metadata(stdout, &o, argc, args);
	free(args);
	pt_proc_init();
	switch (o.what) {
	case PT_RUN_TEST: r = pt_single(&o); break;
	case PT_RUN_SEEDS: r = pt_suite_seeds(&o); break;
	case PT_RUN_LIMITS: r = pt_suite_limits(&o); break;
	case PT_RUN_COMPARE: r = pt_compare_dpdk(&o); break;
	default: r = pt_suite_default(&o); break;
	}
	pt_cleanup();
	if (pt_interrupted) {
		fprintf(stderr, "uvnet-perf: interrupted; children stopped, temporary files removed\n");
		return 130;
	}
	return r;
}
