/* SPDX-License-Identifier: MIT */
/* A single test from the command line, the default suite, and the limits suite. */
#include <stdio.h>
#include <string.h>

#include "perf.h"
#include "proc.h"

/* A suite's own durations unless the user gave some. */
static struct pt_cfg suite_cfg(const struct pt_opts *o, double duration, double warmup)
{
	struct pt_cfg c = o->cfg;

	if (!o->set_duration)
		c.duration = duration;
	if (!o->set_warmup)
		c.warmup = warmup;
	return c;
}

static void quick_limits(const struct pt_cfg *c, double secs)
{
	struct pt_limits l;

	if (!pt_limits_cached() && !pt_limits_measure(c->dev_cpu, c->drv_cpu, secs, &l))
		pt_limits_set(&l);
}

static void print_limits(FILE *f, const struct pt_cfg *c)
{
	const struct pt_limits *l = pt_limits_cached();

	if (!l) {
		fprintf(f, "# limits: not measured\n");
		return;
	}
	fprintf(f, "# limits: memcpy on CPU %d: %.1f / %.1f / %.1f Gb/s for 64 B / 1518 B / 64 KB "
		   "frames; cache-line round trip CPU %d<->%d %.0f ns (%s)\n",
		c->dev_cpu, l->copy_gbps[0], l->copy_gbps[1], l->copy_gbps[2], c->dev_cpu, c->drv_cpu,
		l->rtt_ns, pt_regime(l->rtt_ns));
}

static void print_setup(FILE *f, const struct pt_opts *o, const struct pt_cfg *c, const char *what)
{
	fprintf(f, "# uvnet-perf %s: %s driver -> %s, %s ring, rx %s, %s mode, %u queue%s, "
		   "%.3g s per test after %.3g s warm-up, device on CPU %d, driver on CPU %d\n",
		what, pt_drv_name(c->driver), pt_dev_name(c->device), pt_ring_name(c->ring),
		pt_rx_mode_name(c->rx_mode), c->poll ? "poll" : "event", c->queues,
		c->queues > 1 ? "s" : "", c->duration, c->warmup, c->dev_cpu, c->drv_cpu);
	pt_print_machine(f, "# ");
	fprintf(f, "# command: %s\n", o->cmdline);
	print_limits(f, c);
}

int pt_single(const struct pt_opts *o)
{
	struct pt_result r;
	int bad = 0;

	quick_limits(&o->cfg, 0.4);
	if (!o->json) {
		print_setup(stdout, o, &o->cfg, pt_test_name(o->cfg.test));
		pt_table_head(stdout);
		fflush(stdout);
	}
	for (unsigned i = 0; i < o->runs && !pt_interrupted; i++) {
		pt_run(o, &o->cfg, &r);
		if (o->json) {
			pt_json(stdout, &r);
		} else {
			pt_table_row(stdout, &r);
			if (r.status == PT_OK && r.reason[0])
				printf("  note: %s\n", r.reason);
			pt_table_flags(stdout, &r, 1);
		}
		fflush(stdout);
		bad |= r.status == PT_ERR;
	}
	if (!o->json)
		pt_table_legend(stdout);
	return bad || pt_interrupted ? 1 : 0;
}

/* ---------------------------------------------------------------- default */

static const struct {
	enum pt_test test;
	enum pt_dir dir;
	unsigned size;
} tour[] = {
	{ PT_PPS, PT_TX, 64 },          { PT_PPS, PT_RX, 64 },
	{ PT_STREAM, PT_TX, 64 },       { PT_STREAM, PT_RX, 64 },
	{ PT_STREAM, PT_TX, 1518 },     { PT_STREAM, PT_RX, 1518 },
	{ PT_STREAM, PT_TX, 65535 },    { PT_STREAM, PT_RX, 65535 },
	{ PT_RR, PT_TX, 64 },
};
#define TOUR_N (sizeof(tour) / sizeof(tour[0]))

static int plot_default(const struct pt_opts *o, const struct pt_result *r)
{
	static const unsigned sizes[] = { 64, 1518, 65535 };
	struct pt_bars gb, cpu;
	char what[96];

	pt_bars_init(&gb, "default-throughput.png", "stream throughput by frame size",
		     "Gb/s (log scale)");
	pt_bars_init(&cpu, "default-cpu.png", "CPU per side by frame size (stream)",
		     "fraction of one core");
	gb.nseries = 2;
	gb.series[0] = "tx (driver -> device)";
	gb.series[1] = "rx (device -> driver)";
	cpu.nseries = 4;
	cpu.series[0] = "tx: driver";
	cpu.series[1] = "tx: device";
	cpu.series[2] = "rx: driver";
	cpu.series[3] = "rx: device";
	gb.log_y = true;
	cpu.ymax = 1.05;
	snprintf(what, sizeof(what), "%s driver -> %s, %s ring, %s mode", pt_drv_name(r[0].cfg.driver),
		 pt_dev_name(r[0].cfg.device), pt_ring_name(r[0].cfg.ring),
		 r[0].cfg.poll ? "poll" : "event");
	pt_subtitle(gb.subtitle, sizeof(gb.subtitle), what, r[0].rtt_ns);
	memcpy(cpu.subtitle, gb.subtitle, sizeof(cpu.subtitle));
	for (unsigned s = 0; s < 3; s++) {
		snprintf(gb.group[s], sizeof(gb.group[s]), "%u B", sizes[s]);
		memcpy(cpu.group[s], gb.group[s], sizeof(cpu.group[s]));
		for (unsigned i = 0; i < TOUR_N; i++) {
			unsigned d = tour[i].dir;

			if (tour[i].test != PT_STREAM || tour[i].size != sizes[s] || r[i].status != PT_OK)
				continue;
			gb.v[s][d] = r[i].gbps;
			cpu.v[s][2 * d] = r[i].cpu_drv;
			cpu.v[s][2 * d + 1] = r[i].cpu_dev;
		}
	}
	gb.ngroups = cpu.ngroups = 3;
	return pt_plot_bars(o, &gb) | pt_plot_bars(o, &cpu);
}

int pt_suite_default(const struct pt_opts *o)
{
	struct pt_cfg base = suite_cfg(o, 3, 1);
	struct pt_result r[TOUR_N];
	double rtt_after;
	int bad = 0;

	quick_limits(&base, 0.4);
	for (unsigned i = 0; i < TOUR_N && !pt_interrupted; i++) {
		struct pt_cfg c = base;

		c.test = tour[i].test;
		c.dir = tour[i].dir;
		c.size = tour[i].size;
		pt_run(o, &c, &r[i]);
		if (o->json)
			pt_json(stdout, &r[i]);
		bad |= r[i].status == PT_ERR;
	}
	if (pt_interrupted)
		return 1;
	rtt_after = pt_rtt_probe(base.dev_cpu, base.drv_cpu, 0.3);
	if (!o->json) {
		print_setup(stdout, o, &base, "default suite");
		pt_table_head(stdout);
		for (unsigned i = 0; i < TOUR_N; i++)
			pt_table_row(stdout, &r[i]);
		printf("# cache-line round trip before each test: ");
		for (unsigned i = 0; i < TOUR_N; i++)
			printf("%s%.0f", i ? " " : "", r[i].rtt_ns);
		printf(" ns; after the suite: %.0f ns (%s)\n", rtt_after, pt_regime(rtt_after));
		printf("# SD: service demand, us of CPU (driver + device) per KB delivered; "
		       "limit: one memcpy per frame (stream, pps), one round trip per transaction (rr)\n");
		pt_table_legend(stdout);
		pt_table_flags(stdout, r, TOUR_N);
	}
	if (o->plot_dir && plot_default(o, r))
		bad = 1;
	return bad;
}

/* ----------------------------------------------------------------- limits */

/* {"1518":12.34,...} or null where it could not run */
static void json_gbps(const char *key, const double *gbps, const double *sizes)
{
	printf(",\"%s\":{", key);
	for (unsigned i = 0; i < 3; i++) {
		printf("%s\"%.0f\":", i ? "," : "", sizes[i]);
		if (pt_known(gbps[i]))
			printf("%.2f", gbps[i]);
		else
			printf("null");
	}
	printf("}");
}

int pt_suite_limits(const struct pt_opts *o)
{
	const struct pt_cfg *c = &o->cfg;
	struct pt_limits l;

	if (pt_limits_measure(c->dev_cpu, c->drv_cpu, 2.0, &l)) {
		fprintf(stderr, "uvnet-perf: cannot measure the limits (CPUs %d and %d?)\n",
			c->dev_cpu, c->drv_cpu);
		return 1;
	}
	if (pt_limits_cold(c->dev_cpu, 1.5, &l))
		fprintf(stderr, "uvnet-perf: no cold copy row (2 x %zu MB of memory?)\n",
			l.cold_buf >> 20);
	if (o->json) {
		printf("{\"test\":\"limits\",\"cpu_a\":%d,\"cpu_b\":%d", c->dev_cpu, c->drv_cpu);
		json_gbps("memcpy_gbps", l.copy_gbps, l.copy_sizes);
		json_gbps("cold_memcpy_gbps", l.cold_gbps, l.cold_sizes);
		printf(",\"cold_buffer_bytes\":%zu,\"llc_bytes\":", l.cold_buf);
		if (l.llc)
			printf("%zu", l.llc);
		else
			printf("null");
		printf(",\"rtt_ns\":%.1f,\"rtt_min_ns\":%.1f,\"rtt_max_ns\":%.1f,\"regime\":\"%s\"}\n",
		       l.rtt_ns, l.rtt_min, l.rtt_max, pt_regime(l.rtt_ns));
		return 0;
	}
	printf("# uvnet-perf limits: what two CPUs can do at best\n");
	pt_print_machine(stdout, "# ");
	printf("# command: %s\n", o->cmdline);
	for (unsigned i = 0; i < 3; i++)
		printf("memcpy on CPU %d, %5.0f B frames, rings of 256: %7.1f Gb/s = %7.2f M frames/s "
		       "(warm)\n",
		       c->dev_cpu, l.copy_sizes[i], l.copy_gbps[i],
		       l.copy_gbps[i] * 1e9 / 8 / l.copy_sizes[i] / 1e6);
	for (unsigned i = 0; i < 3; i++)
		printf("cold copy on CPU %d, %5.0f B frames, 2 x %zu MB: %7.1f Gb/s = %7.2f M frames/s\n",
		       c->dev_cpu, l.cold_sizes[i], l.cold_buf >> 20, l.cold_gbps[i],
		       l.cold_gbps[i] * 1e9 / 8 / l.cold_sizes[i] / 1e6);
	if (l.llc)
		printf("# cold copy: source and destination each %zu x the %zu MB last-level cache",
		       l.cold_buf / l.llc, l.llc >> 20);
	else
		printf("# cold copy: source and destination each %zu MB (last-level cache unknown)",
		       l.cold_buf >> 20);
	printf(", walked in order (frames up to 2 KB in 2 KB slots): guest buffers no cache "
	       "holds\n");
	printf("cache-line round trip CPU %d <-> CPU %d: %.0f ns median (%.0f..%.0f over 200-trip "
	       "windows), regime %s\n",
	       c->dev_cpu, c->drv_cpu, l.rtt_ns, l.rtt_min, l.rtt_max, pt_regime(l.rtt_ns));
	printf("=> rr ceiling: %.2f M transactions/s (one round trip each)\n", 1e3 / l.rtt_ns);
	return 0;
}
