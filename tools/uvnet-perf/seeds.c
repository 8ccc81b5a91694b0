/* SPDX-License-Identifier: MIT */
/*
 * The seeds suite: each seed thread's experiment with its switch off and
 * on, runs interleaved (off on off on ...), medians with min-max, and the
 * thread's own figure next to ours. The workloads follow the threads:
 *   000 deferred rx allocation     host->guest stream, MTU frames (netperf TCP_STREAM mtu=1500);
 *                                  and 64 KB frames over 43 header + MTU buffers each, event
 *                                  mode, 1024-entry rings: the driver's CPU per byte
 *   002 indirect descriptor cache  transmit pps with 2 segments per frame (xsk, 2 sgs)
 *   003 header-inclusive merge bufs host->guest stream, MTU-size frames (guest TSO off)
 *   001/004 zero-copy TX           4-64 KB stream between two guests through uvnetd,
 *                                  event mode, CPU per byte; clean and --dirty (004's advice);
 *                                  the receiver's mergeable buffers sized adaptively (Linux)
 *   004 rr sanity check            request/response through the switch with zero-copy
 */
#include <stdio.h>
#include <string.h>

#include "perf.h"
#include "proc.h"
#include "side.h"

enum metric { M_GBPS, M_MPPS, M_SD_DEV, M_SD_DRV, M_TPS, M_P50 };

static const char *const metric_names[] = { "Gb/s", "Mpps", "dev SD us/KB", "drv SD us/KB",
					     "trans/s", "p50 us" };
static const char *const metric_short[] = { "Gb/s", "Mpps", "SD", "drv SD", "trans/s", "p50" };

struct exp {
	const char *seed, *name, *workload;
	const char *label;          /* short, for the chart */
	void (*set)(const struct pt_opts *o, struct pt_cfg *c, bool on);
	unsigned size;
	bool dirty;
	enum metric metric[2];
	unsigned nmetrics;
	const char *figure[2];      /* the seed thread's numbers */
	double seed_ratio[2];       /* its on/off, NAN if it gave none */
};

static void deferred(const struct pt_opts *o, struct pt_cfg *c, bool on)
{
	(void)o;
	c->test = PT_STREAM;
	c->dir = PT_RX;
	c->deferred_alloc = on;
}

static void deferred_big(const struct pt_opts *o, struct pt_cfg *c, bool on)
{
	deferred(o, c, on);
	c->rx_mode = UVN_RX_BIG;
}

/* Where deferring has the most to save: without it each 64 KB frame makes
 * and frees 42 packet objects for the buffers after its first, and 1024
 * posted objects per ring pass through the cache between refill and use.
 * Event mode, so the driver's CPU is what it needs, not what it polls. */
static void deferred_64k(const struct pt_opts *o, struct pt_cfg *c, bool on)
{
	deferred(o, c, on);
	c->rx_mode = UVN_RX_MERGEABLE;
	c->merge = UVN_MRG_HDR_MTU;
	c->queue_size = 1024;
	if (!o->set_mode)
		c->poll = false;
}

static void desc_cache(const struct pt_opts *o, struct pt_cfg *c, bool on)
{
	(void)o;
	c->test = PT_PPS;
	c->dir = PT_TX;
	c->segs = 2;
	c->desc_cache = on;
}

static void merge(const struct pt_opts *o, struct pt_cfg *c, bool on)
{
	(void)o;
	c->test = PT_STREAM;
	c->dir = PT_RX;
	c->rx_mode = UVN_RX_MERGEABLE;
	c->merge = on ? UVN_MRG_HDR_MTU : UVN_MRG_MTU_ONLY;
}

/* Zero-copy is uvnetd's switch; an uvnetd without it copies, so "off" is still measurable. */
static void zerocopy(const struct pt_opts *o, struct pt_cfg *c, bool on)
{
	bool has = pt_uvnetd_has(o, "--zerocopy");

	c->pair = true;
	c->test = c->test == PT_RR ? PT_RR : PT_STREAM;
	c->dir = PT_TX;
	if (!o->set_mode)
		c->poll = false;
	c->zerocopy = on ? PT_ZC_ON : has ? PT_ZC_OFF : PT_ZC_DEFAULT;
	/* The receiver sizes its buffers like Linux does today (EWMA, up to a
	 * page): with header + MTU buffers a 64 KB frame takes 43 of them and
	 * the driver copies it, which would bury the device's difference. */
	c->merge = UVN_MRG_EWMA;
}

static void zc_rr(const struct pt_opts *o, struct pt_cfg *c, bool on)
{
	c->test = PT_RR;
	zerocopy(o, c, on);
}

static const char f000[] = "host->guest 3165 -> 3370..3408 Mb/s";
static const char f004_cpu[] = "vhost CPU per byte: 4K 0.18x, 16K 0.27x, 64K 0.30x";

static const struct exp exps[] = {
	{ "000", "deferred rx allocation", "stream rx, mergeable", "rx mrg", deferred, 1514, false,
	  { M_GBPS }, 1, { f000 }, { 1.071 } },
	{ "000", "deferred rx allocation", "stream rx, big", "rx big", deferred_big, 1514, false,
	  { M_GBPS }, 1, { f000 }, { 1.071 } },
	{ "000", "deferred rx allocation", "stream rx, mrg, event", "rx mrg 64K", deferred_64k, 65535,
	  false, { M_GBPS, M_SD_DRV }, 2, { f000, "-" }, { 1.071, NAN } },
	{ "002", "indirect desc cache", "pps tx, 2 segments", "2-seg pps", desc_cache, 64, false,
	  { M_MPPS }, 1, { "2.68 -> 3.11 Mpps (+16 %)" }, { 1.16 } },
	{ "003", "merge buf = hdr + MTU", "stream rx, MTU frames", "rx MTU", merge, 1514, false,
	  { M_GBPS }, 1, { "4077 -> 6445 Mb/s (TCP_STREAM)" }, { 1.581 } },
	{ "001/4", "zero-copy TX (switch)", "stream A->B, event", "zc 4K", zerocopy, 4096, false,
	  { M_GBPS, M_SD_DEV }, 2, { "4K: 4913 -> 7409 Mb/s", f004_cpu }, { 1.508, 0.178 } },
	{ "001/4", "zero-copy TX (switch)", "stream A->B, event", "zc 16K", zerocopy, 16384, false,
	  { M_GBPS, M_SD_DEV }, 2, { "16K: 8927 -> 9179 Mb/s", f004_cpu }, { 1.028, 0.272 } },
	{ "001/4", "zero-copy TX (switch)", "stream A->B, event", "zc 64K", zerocopy, 65536, false,
	  { M_GBPS, M_SD_DEV }, 2, { "64K: 9086 -> 9171 Mb/s; 001: 9408", f004_cpu },
	  { 1.009, 0.302 } },
	{ "001/4", "zero-copy TX (switch)", "stream A->B, --dirty", "zc 4K dirty", zerocopy, 4096, true,
	  { M_GBPS, M_SD_DEV }, 2, { "(004: use DIRTY mode)", "-" }, { NAN, NAN } },
	{ "001/4", "zero-copy TX (switch)", "stream A->B, --dirty", "zc 64K dirty", zerocopy, 65536, true,
	  { M_GBPS, M_SD_DEV }, 2, { "(004: use DIRTY mode)", "-" }, { NAN, NAN } },
	{ "004", "zero-copy TX (switch)", "rr A<->B, event", "rr", zc_rr, 64, false,
	  { M_TPS, M_P50 }, 2, { "(004: sanity-check TCP_RR)", "-" }, { NAN, NAN } },
};
#define NEXP (sizeof(exps) / sizeof(exps[0]))
#define MAX_RUNS 16

static double value(const struct pt_result *r, enum metric m)
{
	if (r->status != PT_OK)
		return NAN;
	switch (m) {
	case M_GBPS: return r->gbps;
	case M_MPPS: return r->pps / 1e6;
	case M_SD_DEV: return r->sd_dev;
	case M_SD_DRV: return r->sd_drv;
	case M_TPS: return r->tps;
	default: return r->lat.p50;
	}
}

/* Runs of a side without a number: how many, and the first one's reason. */
static unsigned failed(const struct pt_result *r, unsigned runs, const struct pt_result **first)
{
	unsigned n = 0;

	*first = NULL;
	for (unsigned i = 0; i < runs; i++) {
		if (r[i].status == PT_OK)
			continue;
		if (!n++)
			*first = &r[i];
	}
	return n;
}

static struct pt_result res[NEXP][2][MAX_RUNS];

static void run_all(const struct pt_opts *o, const struct pt_cfg *base, unsigned runs)
{
	for (unsigned e = 0; e < NEXP && !pt_interrupted; e++) {
		for (unsigned k = 0; k < runs && !pt_interrupted; k++) {
			for (unsigned on = 0; on < 2 && !pt_interrupted; on++) {
				struct pt_cfg c = *base;
				char extra[96];

				c.size = exps[e].size;
				c.dirty = exps[e].dirty || base->dirty;
				exps[e].set(o, &c, on);
				pt_run(o, &c, &res[e][on][k]);
				if (!o->json)
					continue;
				snprintf(extra, sizeof(extra), "\"seed\":\"%s\",\"switch\":\"%s\",\"run\":%u",
					 exps[e].seed, on ? "on" : "off", k + 1);
				pt_json_extra(stdout, &res[e][on][k], extra);
			}
		}
	}
}

static void cell(char *out, size_t n, const struct pt_result *r, unsigned runs, enum metric m,
		 double *med)
{
	double v[MAX_RUNS], lo, hi;

	unsigned used;

	for (unsigned i = 0; i < runs; i++)
		v[i] = value(&r[i], m);
	used = pt_median(v, runs, med, &lo, &hi);
	if (!used)
		snprintf(out, n, "n/a");
	else if (m == M_TPS)
		snprintf(out, n, "%.0f (%.0f-%.0f)", *med, lo, hi);
	else
		snprintf(out, n, "%.3g (%.3g-%.3g)", *med, lo, hi);
	if (used && used < runs)
		snprintf(out + strlen(out), n - strlen(out), " n=%u", used);
}

/* The "on" runs' median as a fraction of the physical limit (uvnet-perf --suite limits). */
static const char *limit_cell(const struct pt_result *r, unsigned runs)
{
	static char out[16];
	double v[MAX_RUNS], med, lo, hi;

	for (unsigned i = 0; i < runs; i++)
		v[i] = r[i].limit_frac;
	if (!pt_median(v, runs, &med, &lo, &hi))
		return "-";
	return pt_fmt_limit(out, sizeof(out), med);
}

static void print_table(const struct pt_opts *o, unsigned runs, struct pt_bars *plot)
{
	printf("%-5s %-22s %-22s %5s %-12s %-22s %-22s %7s %6s  %s\n", "seed", "switch", "workload",
	       "size", "metric", "off: median (min-max)", "on: median (min-max)", "on/off", "limit",
	       "the seed's figure (its on/off)");
	for (unsigned e = 0; e < NEXP; e++) {
		const struct exp *x = &exps[e];

		for (unsigned m = 0; m < x->nmetrics; m++) {
			char off[48], on[48], ratio[16] = "-", seedr[16] = "";
			double moff, mon;

			cell(off, sizeof(off), res[e][0], runs, x->metric[m], &moff);
			cell(on, sizeof(on), res[e][1], runs, x->metric[m], &mon);
			if (pt_known(moff) && pt_known(mon) && moff > 0)
				snprintf(ratio, sizeof(ratio), "%.2fx", mon / moff);
			if (pt_known(x->seed_ratio[m]))
				snprintf(seedr, sizeof(seedr), " (%.2fx)", x->seed_ratio[m]);
			printf("%-5s %-22s %-22s %5u %-12s %-22s %-22s %7s %6s  %s%s\n", x->seed, x->name,
			       x->workload, x->size, metric_names[x->metric[m]], off, on, ratio,
			       m ? "" : limit_cell(res[e][1], runs), x->figure[m], seedr);
			if (plot && plot->ngroups < PT_BARS_GROUPS) {
				unsigned g = plot->ngroups++;

				snprintf(plot->group[g], sizeof(plot->group[g]), "%s %s %s", x->seed, x->label,
					 metric_short[x->metric[m]]);
				plot->v[g][0] = pt_known(moff) && moff > 0 ? mon / moff : NAN;
				plot->v[g][1] = x->seed_ratio[m];
			}
		}
	}
	for (unsigned e = 0; e < NEXP; e++)
		for (unsigned on = 0; on < 2; on++) {
			const struct pt_result *f;
			unsigned n = failed(res[e][on], runs, &f);

			if (n)
				printf("# %s %s %u B, %s: %s in %u of %u runs: %s\n", exps[e].seed,
				       exps[e].workload, exps[e].size, on ? "on" : "off",
				       f->status == PT_NA ? "n/a" : "error", n, runs, f->reason);
		}
	for (unsigned e = 0; e < NEXP; e++) {
		double v[MAX_RUNS], med, lo, hi;

		for (unsigned i = 0; i < runs; i++)
			v[i] = res[e][1][i].limit_frac;
		if (pt_median(v, runs, &med, &lo, &hi) && med > 1)
			printf("# ! %s %s %u B, on: %.0f %% of its physical limit (median), %s: %s\n",
			       exps[e].seed, exps[e].workload, exps[e].size, med * 100,
			       res[e][1][0].limit_basis, pt_over_why(&res[e][1][0]));
	}
	(void)o;
	printf("# 000 64 KB row: 1024-entry rings, event mode; drv SD: the driver's CPU per KB\n");
	printf("# zero-copy rows: drivers A and B both on the driver CPU, event mode, B's mergeable "
	       "buffers sized adaptively (EWMA, as Linux); dev SD: uvnetd's CPU per KB\n");
	printf("# limit: the \"on\" median as a fraction of one memcpy per frame on one core "
	       "(stream, pps) or one cross-CPU round trip per transaction (rr)\n");
}

int pt_suite_seeds(const struct pt_opts *o)
{
	unsigned runs = o->set_runs ? o->runs : 3;
	struct pt_cfg base = o->cfg;
	struct pt_bars plot;
	struct pt_limits l;
	double before, after;

	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	if (!o->set_duration)
		base.duration = 3;
	if (!o->set_warmup)
		base.warmup = 1;
	if (!pt_limits_measure(base.dev_cpu, base.drv_cpu, 0.4, &l))
		pt_limits_set(&l);
	before = pt_rtt_probe(base.dev_cpu, base.drv_cpu, 0.3);
	run_all(o, &base, runs);
	if (pt_interrupted)
		return 1;
	after = pt_rtt_probe(base.dev_cpu, base.drv_cpu, 0.3);
	if (o->json)
		return 0;
	printf("# uvnet-perf seeds suite: each switch off/on, %u interleaved runs of %.3g s "
	       "(+%.3g s warm-up), uvnet driver -> uvnetd, %s ring, %s mode unless noted\n",
	       runs, base.duration, base.warmup, pt_ring_name(base.ring), base.poll ? "poll" : "event");
	pt_print_machine(stdout, "# ");
	printf("# command: %s\n", o->cmdline);
	printf("# cache-line round trip CPU %d<->%d: %.0f ns before (%s), %.0f ns after (%s)\n",
	       base.dev_cpu, base.drv_cpu, before, pt_regime(before), after, pt_regime(after));
	pt_bars_init(&plot, "seeds.png", "each seed switch: on / off, uvnet next to the seed thread",
		     "on / off (SD, p50: lower is better)");
	plot.nseries = 2;
	plot.series[0] = "uvnet (median)";
	plot.series[1] = "the seed thread";
	plot.ref = 1.0;
	plot.label_fmt = "%.2f";
	{
		char what[96];

		snprintf(what, sizeof(what), "uvnet -> uvnetd, %u interleaved runs of %.3g s each", runs,
			 base.duration);
		pt_subtitle(plot.subtitle, sizeof(plot.subtitle), what, before);
	}
	print_table(o, runs, &plot);
	return o->plot_dir && pt_plot_bars(o, &plot) ? 1 : 0;
}
