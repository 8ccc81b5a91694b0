/* SPDX-License-Identifier: MIT */
/*
 * uvnet-ringbench: millions of 64-byte buffers per second through one
 * virtqueue, driver and device in two processes on two CPUs, polling; for
 * split and packed rings, EVENT_IDX off and on, IN_ORDER off and on.
 *
 * The machines this runs on are shared and noisy (one configuration can
 * swing 2-4x between runs), so configurations run interleaved, round after
 * round (A B C D A B C D ...), and the report gives each one's median with
 * its min-max, next to the cross-CPU cache-line round trip measured before
 * and after, which says what regime the machine was in.
 */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringbench.h"

#define MAX_CONFIGS 8
#define MAX_ROUNDS 1000

struct opts {
	unsigned rounds, batch, qsize;
	double seconds;
	bool json, in_order;
	int layouts;   /* bit 0 split, bit 1 packed */
	int cpus[2];
};

struct series {
	struct rb_cfg cfg;
	double rate[MAX_ROUNDS];
	unsigned n;
	double kicks_per_buf, calls_per_buf; /* of the last run */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uvnet-ringbench [options]\n"
		"Driver and device halves of one virtqueue in two processes pinned to two\n"
		"CPUs pass 64-byte buffers in poll mode; prints millions of buffers per\n"
		"second for each configuration, interleaved over rounds (median, min-max).\n"
		"  -r, --rounds N      rounds; each runs every configuration once (default 5)\n"
		"  -s, --seconds S     measured seconds per run (default 0.5)\n"
		"  -b, --batch N       buffers added / popped / reclaimed per burst (default 32)\n"
		"  -q, --qsize N       queue size (default 256; a power of two for split)\n"
		"  -l, --layout L      split, packed or both (default both)\n"
		"      --no-in-order   skip the IN_ORDER configurations\n"
		"  -c, --cpus A,B      driver and device CPUs (default: the first two allowed)\n"
		"  -j, --json          one JSON object per configuration instead of a table\n"
		"  -h, --help          this text\n");
}

static int default_cpus(int cpus[2])
{
	cpu_set_t set;
	int n = 0;

	cpus[0] = cpus[1] = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	if (n < 2)
		cpus[0] = cpus[1] = -1;
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "rounds", required_argument, NULL, 'r' }, { "seconds", required_argument, NULL, 's' },
		{ "batch", required_argument, NULL, 'b' },  { "qsize", required_argument, NULL, 'q' },
		{ "layout", required_argument, NULL, 'l' }, { "no-in-order", no_argument, NULL, 'I' },
		{ "cpus", required_argument, NULL, 'c' },   { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .rounds = 5, .batch = 32, .qsize = 256, .seconds = 0.5,
			    .in_order = true, .layouts = 3 };
	default_cpus(o->cpus);
	while ((c = getopt_long(argc, argv, "r:s:b:q:l:c:jh", lo, NULL)) != -1) {
		switch (c) {
		case 'r': o->rounds = (unsigned)atoi(optarg); break;
		case 's': o->seconds = atof(optarg); break;
		case 'b': o->batch = (unsigned)atoi(optarg); break;
		case 'q': o->qsize = (unsigned)atoi(optarg); break;
		case 'l':
			o->layouts = !strcmp(optarg, "split") ? 1 : !strcmp(optarg, "packed") ? 2
				   : !strcmp(optarg, "both") ? 3 : 0;
			break;
		case 'I': o->in_order = false; break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &o->cpus[0], &o->cpus[1]) != 2)
				return -1;
			break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind != argc || !o->layouts || o->rounds < 1 || o->rounds > MAX_ROUNDS ||
	    o->batch < 1 || o->batch > 256 || o->seconds <= 0 || o->qsize < 2 || o->qsize > 32768)
		return -1;
	if ((o->layouts & 1) && (o->qsize & (o->qsize - 1))) {
		fprintf(stderr, "uvnet-ringbench: split rings need a power-of-two --qsize\n");
		return -1;
	}
	return 0;
}

static unsigned build_configs(const struct opts *o, struct series *s)
{
	unsigned n = 0;

	for (int packed = 0; packed < 2; packed++) {
		if (!(o->layouts & (1 << packed)))
			continue;
		for (int in_order = 0; in_order <= (int)o->in_order; in_order++)
			for (int eidx = 0; eidx < 2; eidx++)
				s[n++].cfg = (struct rb_cfg){
					.packed = packed, .event_idx = eidx, .in_order = in_order,
					.qsize = o->qsize, .batch = o->batch, .seconds = o->seconds,
					.cpus = { o->cpus[0], o->cpus[1] },
				};
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median, min and max of a series (sorts a copy). */
static void summarise(const struct series *s, double *med, double *min, double *max)
{
	double v[MAX_ROUNDS];

	memcpy(v, s->rate, s->n * sizeof(double));
	qsort(v, s->n, sizeof(double), cmp_double);
	*min = v[0];
	*max = v[s->n - 1];
	*med = s->n % 2 ? v[s->n / 2] : (v[s->n / 2 - 1] + v[s->n / 2]) / 2;
}

static const char *yn(bool b)
{
	return b ? "on" : "off";
}

static void print_rtt(const char *when, int ok, const struct rb_rtt *r)
{
	if (ok)
		printf("cross-CPU cache-line round trip %s: %.0f ns median (min %.0f, max %.0f) over "
		       "%u windows\n", when, r->median_ns, r->min_ns, r->max_ns, r->windows);
	else
		printf("cross-CPU cache-line round trip %s: not measured\n", when);
}

static void print_table(const struct opts *o, const struct series *s, unsigned n,
			const struct rb_rtt rtt[2], const int rtt_ok[2])
{
	printf("uvnet-ringbench: %u-byte buffers, batch %u, queue %u, poll mode, driver CPU %d, "
	       "device CPU %d\n", RB_BUF_SIZE, o->batch, o->qsize, o->cpus[0], o->cpus[1]);
	printf("%u rounds x %.2f s per configuration, interleaved; Mbufs/s median (min - max)\n",
	       o->rounds, o->seconds);
	print_rtt("before", rtt_ok[0], &rtt[0]);
	print_rtt("after ", rtt_ok[1], &rtt[1]);
	printf("\n%-7s %-9s %-8s %9s  %-17s %4s\n", "layout", "event_idx", "in_order", "Mbufs/s",
	       "(min - max)", "runs");
	for (unsigned i = 0; i < n; i++) {
		const struct rb_cfg *c = &s[i].cfg;
		double med, min, max;
		char range[32];

		if (!s[i].n) {
			printf("%-7s %-9s %-8s %9s\n", c->packed ? "packed" : "split",
			       yn(c->event_idx), yn(c->in_order), "failed");
			continue;
		}
		summarise(&s[i], &med, &min, &max);
		snprintf(range, sizeof(range), "(%.2f - %.2f)", min, max);
		printf("%-7s %-9s %-8s %9.2f  %-17s %4u\n", c->packed ? "packed" : "split",
		       yn(c->event_idx), yn(c->in_order), med, range, s[i].n);
	}
}

static void print_json(const struct opts *o, const struct series *s, unsigned n,
		       const struct rb_rtt rtt[2], const int rtt_ok[2])
{
	for (unsigned i = 0; i < n; i++) {
		const struct rb_cfg *c = &s[i].cfg;
		double med = 0, min = 0, max = 0;

		if (s[i].n)
			summarise(&s[i], &med, &min, &max);
		printf("{\"test\":\"ring\",\"layout\":\"%s\",\"event_idx\":%s,\"in_order\":%s,"
		       "\"mode\":\"poll\",\"buf_size\":%u,\"batch\":%u,\"queue_size\":%u,"
		       "\"seconds_per_run\":%.3f,\"runs\":%u,"
		       "\"mbufs_per_s\":{\"median\":%.4f,\"min\":%.4f,\"max\":%.4f},"
		       "\"kicks_per_buf\":%.4f,\"calls_per_buf\":%.4f,"
		       "\"cpus\":[%d,%d],\"rtt_ns\":{\"before\":%.1f,\"after\":%.1f}}\n",
		       c->packed ? "packed" : "split", c->event_idx ? "true" : "false",
		       c->in_order ? "true" : "false", RB_BUF_SIZE, o->batch, o->qsize, o->seconds,
		       s[i].n, med, min, max, s[i].kicks_per_buf, s[i].calls_per_buf, o->cpus[0],
		       o->cpus[1], rtt_ok[0] ? rtt[0].median_ns : -1.0,
		       rtt_ok[1] ? rtt[1].median_ns : -1.0);
	}
}

int main(int argc, char **argv)
{
	static struct series s[MAX_CONFIGS];
	struct rb_rtt rtt[2];
	int rtt_ok[2], failed = 0;
	struct opts o;
	unsigned n;

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	n = build_configs(&o, s);
	rtt_ok[0] = !rb_rtt_measure(o.cpus, 20, 0.01, &rtt[0]);
	for (unsigned r = 0; r < o.rounds; r++) {
		for (unsigned i = 0; i < n; i++) {
			struct rb_result res;

			if (rb_run(&s[i].cfg, &res)) {
				failed++;
				continue;
			}
			s[i].rate[s[i].n++] = res.mbufs_per_s;
			s[i].kicks_per_buf = res.bufs ? (double)res.kicks / (double)res.bufs : 0;
			s[i].calls_per_buf = res.bufs ? (double)res.calls / (double)res.bufs : 0;
		}
	}
	rtt_ok[1] = !rb_rtt_measure(o.cpus, 20, 0.01, &rtt[1]);
	if (o.json)
		print_json(&o, s, n, rtt, rtt_ok);
	else
		print_table(&o, s, n, rtt, rtt_ok);
	return failed ? 1 : 0;
}
