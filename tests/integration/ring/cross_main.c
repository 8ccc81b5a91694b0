/* SPDX-License-Identifier: MIT */
/*
 * ring-cross: which configurations to run, and the command line. For a
 * layout: poll and event mode, EVENT_IDX off and on, any completion order,
 * IN_ORDER, IN_ORDER with batched used elements (ring sizes and indirect
 * tables varied along); cross_run.c runs each one.
 *
 * --detector runs configurations in which one side deliberately drops one
 * required notification, and passes only if the harness reports exactly
 * that lost wake-up.
 *
 * Environment: UVN_CROSS_OPS (chains per poll-mode configuration, event
 * mode runs half; setting it lifts the time cap), UVN_CROSS_CAP_S (the
 * per-configuration time cap), UVN_CROSS_SEED (reproduce a run's shapes).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cross.h"

#define MAX_CONFIGS 16

struct opts {
	int layout;             /* 0 split, 1 packed, -1 none */
	bool detector;
	int only;
	uint64_t ops, seed;
	unsigned wake_ms, hang_s, cap_ms;
};

static unsigned layout_matrix(const struct opts *o, struct cross_cfg *out)
{
	static const unsigned sizes[2][4] = { { 8, 64, 256, 1024 }, { 7, 100, 256, 1000 } };
	unsigned n = 0;

	for (int mode = MODE_POLL; mode <= MODE_EVENT; mode++)
		for (int eidx = 0; eidx < 2; eidx++)
			for (int order = ORDER_ANY; order <= ORDER_IN_BATCH; order++, n++) {
				unsigned num = sizes[o->layout][n % 4];

				out[n] = (struct cross_cfg){
					.packed = o->layout == 1, .event_idx = eidx,
					.indirect = n % 3 != 2, .order = order, .mode = mode,
					.num = num, .max_segs = num < CROSS_MAX_SEGS ? num : CROSS_MAX_SEGS,
					.ops = mode == MODE_POLL ? o->ops : o->ops / 2,
					.seed = cross_mix(o->seed, n), .wake_bound_ms = o->wake_ms,
					.hang_s = o->hang_s, .cap_ms = o->cap_ms,
				};
			}
	return n;
}

/* Each layout, each notification direction, EVENT_IDX on and off. */
static unsigned detector_matrix(const struct opts *o, struct cross_cfg *out)
{
	unsigned n = 0;

	for (int packed = 0; packed < 2; packed++)
		for (int f = FAULT_DROP_KICK; f <= FAULT_DROP_CALL; f++)
			for (int eidx = 0; eidx < 2; eidx++, n++)
				out[n] = (struct cross_cfg){
					.packed = packed, .event_idx = eidx, .indirect = true,
					.order = n % 3, .mode = MODE_EVENT, .fault = f,
					.num = 64, .max_segs = 8, .ops = 1000000,
					.seed = cross_mix(o->seed, 100 + n),
					.wake_bound_ms = o->wake_ms, .hang_s = o->hang_s,
				};
	return n;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ring-cross --layout split|packed [--ops N] [--seed S] [--only I]\n"
		"       ring-cross --detector\n"
		"  --layout L        run every configuration of layout L\n"
		"  --detector        drop one required notification; pass if reported\n"
		"  --ops N           chains per poll-mode configuration (event: N/2);\n"
		"                    env UVN_CROSS_OPS overrides (default 800000)\n"
		"  --seed S          base seed (env UVN_CROSS_SEED; default: random)\n"
		"  --only I          run configuration I only\n"
		"  --cap-s S         stop adding chains after S seconds per configuration\n"
		"                    (at least %u chains; env UVN_CROSS_CAP_S; default 1.25,\n"
		"                    none when UVN_CROSS_OPS is set; 0: none)\n"
		"  --wake-bound-ms M a sleeper checks for a lost wake-up every M ms\n"
		"  --hang-s S        no progress for S seconds is a hang (default 60)\n",
		CROSS_MIN_OPS);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "layout", required_argument, NULL, 'l' }, { "detector", no_argument, NULL, 'd' },
		{ "ops", required_argument, NULL, 'n' },    { "seed", required_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'o' },   { "wake-bound-ms", required_argument, NULL, 'w' },
		{ "hang-s", required_argument, NULL, 'H' }, { "cap-s", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env;
	double cap_s = -1;
	int c;

	*o = (struct opts){ .layout = -1, .only = -1, .ops = 800000, .hang_s = 60,
			    .seed = cross_mix((uint64_t)time(NULL), (uint64_t)getpid()) };
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'l':
			o->layout = !strcmp(optarg, "split") ? 0 : !strcmp(optarg, "packed") ? 1 : -2;
			break;
		case 'd': o->detector = true; break;
		case 'n': o->ops = strtoull(optarg, NULL, 0); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case 'o': o->only = atoi(optarg); break;
		case 'w': o->wake_ms = (unsigned)atoi(optarg); break;
		case 'H': o->hang_s = (unsigned)atoi(optarg); break;
		case 'c': cap_s = atof(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if ((env = getenv("UVN_CROSS_OPS")) && *env) {
		o->ops = strtoull(env, NULL, 0);
		if (cap_s < 0)
			cap_s = 0; /* asked for that many: no time cap */
	}
	if ((env = getenv("UVN_CROSS_CAP_S")) && *env)
		cap_s = atof(env);
	o->cap_ms = cap_s < 0 ? 1250 : (unsigned)(cap_s * 1e3);
	if ((env = getenv("UVN_CROSS_SEED")) && *env)
		o->seed = strtoull(env, NULL, 0);
	if (!o->wake_ms)
		o->wake_ms = o->detector ? 300 : 2000;
	if (optind != argc || o->ops < 4 || (!o->detector && o->layout < 0))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct cross_cfg cfgs[MAX_CONFIGS];
	struct opts o;
	int cpus[2], failed = 0;
	unsigned n;

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	cross_install_signals();
	if (cross_pick_cpus(cpus) < 2) {
		fprintf(stderr, "ring-cross: fewer than two CPUs allowed; not pinning\n");
		cpus[0] = cpus[1] = -1;
	}
	n = o.detector ? detector_matrix(&o, cfgs) : layout_matrix(&o, cfgs);
	printf("ring-cross: %s, base seed 0x%016" PRIx64 ", driver on CPU %d, device on CPU %d, "
	       "lost wake-up check every %u ms, time cap %.1f s (0: none)\n",
	       o.detector ? "lost wake-up detector" : o.layout ? "packed" : "split", o.seed,
	       cpus[0], cpus[1], o.wake_ms, o.detector ? 0 : o.cap_ms / 1e3);
	for (unsigned i = 0; i < n; i++) {
		if (o.only >= 0 && (unsigned)o.only != i)
			continue;
		failed += !cross_run_one(&cfgs[i], (int)i, cpus);
	}
	printf("ring-cross: %d configuration(s) failed\n", failed);
	return failed ? 1 : 0;
}
