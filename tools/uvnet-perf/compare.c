/* SPDX-License-Identifier: MIT */
/*
 * --compare dpdk: the 2x2 of driver {uvnet, DPDK virtio-user} and device
 * {uvnetd, DPDK net_vhost}, poll mode, each process on its own CPU. The
 * four pairs run interleaved (A B C D A B C D ...) so the machine's drift
 * (2-4x on shared hosts) lands on all of them alike; each cell is the
 * median of the runs with min-max, and the ratio to the all-DPDK pair.
 */
#include <stdio.h>
#include <string.h>

#include "perf.h"
#include "proc.h"
#include "side.h"

#define DPDK_PKGS "dpdk-dev librte-net-vhost23 librte-mempool-ring23 librte-net-virtio23"
#define MAX_RUNS 16
#define NPAIRS 4

static const struct {
	enum pt_drv drv;
	enum pt_dev dev;
	const char *name;
} pairs[NPAIRS] = {
	{ PT_DRV_DPDK, PT_DEV_DPDK, "DPDK->DPDK" },
	{ PT_DRV_UVNET, PT_DEV_DPDK, "uvnet->DPDK" },
	{ PT_DRV_DPDK, PT_DEV_UVNETD, "DPDK->uvnetd" },
	{ PT_DRV_UVNET, PT_DEV_UVNETD, "uvnet->uvnetd" },
};

static const struct {
	enum pt_test test;
	enum pt_dir dir;
	unsigned size;
} rows[] = {
	{ PT_PPS, PT_TX, 64 },       { PT_PPS, PT_RX, 64 },
	{ PT_STREAM, PT_TX, 64 },    { PT_STREAM, PT_RX, 64 },
	{ PT_STREAM, PT_TX, 1518 },  { PT_STREAM, PT_RX, 1518 },
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static struct pt_result res[NROWS][NPAIRS][MAX_RUNS];

static bool wanted(const struct pt_opts *o, unsigned i)
{
	return (!o->set_size || rows[i].size == o->cfg.size) &&
	       (!o->set_dir || rows[i].dir == o->cfg.dir);
}

static double metric(const struct pt_result *r)
{
	if (r->status != PT_OK)
		return NAN;
	return r->cfg.size < 256 ? r->pps / 1e6 : r->gbps;
}

static void run_row(const struct pt_opts *o, const struct pt_cfg *base, unsigned i, unsigned runs)
{
	for (unsigned k = 0; k < runs && !pt_interrupted; k++) {
		for (unsigned p = 0; p < NPAIRS && !pt_interrupted; p++) {
			struct pt_cfg c = *base;
			char extra[96];

			c.test = rows[i].test;
			c.dir = rows[i].dir;
			c.size = rows[i].size;
			c.driver = pairs[p].drv;
			c.device = pairs[p].dev;
			pt_run(o, &c, &res[i][p][k]);
			if (o->json) {
				snprintf(extra, sizeof(extra), "\"compare\":\"dpdk\",\"pair\":\"%s\",\"run\":%u",
					 pairs[p].name, k + 1);
				pt_json_extra(stdout, &res[i][p][k], extra);
			}
		}
	}
}

/* Which regimes the runs of a row ran in: "near 5 far 7". */
static void regimes(unsigned i, unsigned runs, char *out, size_t n)
{
	static const char *const names[] = { "near", "far", "contended" };
	unsigned count[3] = { 0, 0, 0 };
	size_t len = 0;

	for (unsigned p = 0; p < NPAIRS; p++)
		for (unsigned k = 0; k < runs; k++)
			for (unsigned g = 0; g < 3 && pt_known(res[i][p][k].rtt_ns); g++)
				count[g] += !strcmp(pt_regime(res[i][p][k].rtt_ns), names[g]);
	out[0] = 0;
	for (unsigned g = 0; g < 3; g++)
		if (count[g])
			len += (size_t)snprintf(out + len, n - len, "%s%s %u", len ? " " : "",
						names[g], count[g]);
}

/* Each pair's median as a fraction of the physical limit: "3/2/2/4 % of 173 Gb/s". */
static const char *limits_cell(unsigned i, unsigned runs)
{
	static char out[96];
	const struct pt_limits *l = pt_limits_cached();
	size_t n = 0;

	if (!l)
		return "-";
	for (unsigned p = 0; p < NPAIRS; p++) {
		double v[MAX_RUNS], med, lo, hi;

		for (unsigned k = 0; k < runs; k++)
			v[k] = res[i][p][k].limit_frac;
		pt_median(v, runs, &med, &lo, &hi);
		if (pt_known(med))
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%.1f%s", p ? "/" : "",
					      med * 100, med > 1 ? "!" : "");
		else
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s-", p ? "/" : "");
	}
	snprintf(out + n, sizeof(out) - n, " %% of memcpy at %u B", rows[i].size);
	return out;
}

static void print_row(unsigned i, unsigned runs, struct pt_bars *plot)
{
	double ref = NAN, v[MAX_RUNS], med, lo, hi;
	char reg[48];
	unsigned g = plot->ngroups++;

	snprintf(plot->group[g], sizeof(plot->group[g]), "%s %s %u B", pt_test_name(rows[i].test),
		 pt_dir_name(rows[i].dir), rows[i].size);
	printf("%-6s %-2s %5u %-4s", pt_test_name(rows[i].test), pt_dir_name(rows[i].dir),
	       rows[i].size, rows[i].size < 256 ? "Mpps" : "Gb/s");
	for (unsigned p = 0; p < NPAIRS; p++) {
		char cell[64];

		for (unsigned k = 0; k < runs; k++)
			v[k] = metric(&res[i][p][k]);
		unsigned used = pt_median(v, runs, &med, &lo, &hi);

		if (!used) {
			snprintf(cell, sizeof(cell), "n/a");
		} else {
			if (p == 0)
				ref = med;
			snprintf(cell, sizeof(cell), "%.2f (%.2f-%.2f)", med, lo, hi);
			if (used < runs)
				snprintf(cell + strlen(cell), sizeof(cell) - strlen(cell), " n=%u", used);
			if (pt_known(ref) && ref > 0) {
				snprintf(cell + strlen(cell), sizeof(cell) - strlen(cell), " %.2fx",
					 med / ref);
				plot->v[g][p] = med / ref;
				plot->lo[g][p] = lo / ref;
				plot->hi[g][p] = hi / ref;
			}
		}
		printf(" | %-25s", cell);
	}
	regimes(i, runs, reg, sizeof(reg));
	printf(" | %s | %s\n", reg, limits_cell(i, runs));
}

/* What the receivers did with the payload, where the pairs of a row differ. */
static void touched_notes(const struct pt_opts *o)
{
	for (unsigned i = 0; i < NROWS; i++) {
		bool same = true;

		for (unsigned p = 1; wanted(o, i) && p < NPAIRS; p++)
			same &= res[i][p][0].touched == res[i][0][0].touched;
		if (!wanted(o, i) || same)
			continue;
		printf("# %s %s %u B, touched:", pt_test_name(rows[i].test), pt_dir_name(rows[i].dir),
		       rows[i].size);
		for (unsigned p = 0; p < NPAIRS; p++)
			printf("%s %s %s", p ? "," : "", pairs[p].name, pt_touch_name(res[i][p][0].touched));
		printf("\n");
	}
}

/* Cells whose median is over the physical limit ("!" in the limit column). */
static void over_notes(const struct pt_opts *o, unsigned runs)
{
	for (unsigned i = 0; i < NROWS; i++)
		for (unsigned p = 0; wanted(o, i) && p < NPAIRS; p++) {
			double v[MAX_RUNS], med, lo, hi;
			const struct pt_result *over = NULL;

			for (unsigned k = 0; k < runs; k++) {
				v[k] = res[i][p][k].limit_frac;
				if (!over && res[i][p][k].over_limit)
					over = &res[i][p][k];
			}
			if (!over || !pt_median(v, runs, &med, &lo, &hi) || !(med > 1))
				continue;
			printf("# ! %s %s %u B %s: %.0f %% of its physical limit (median), %s: %s\n",
			       pt_test_name(rows[i].test), pt_dir_name(rows[i].dir), rows[i].size,
			       pairs[p].name, med * 100, over->limit_basis, pt_over_why(over));
		}
}

/* Failed runs, and frames that were not plain frames on the way. */
static void footnotes(const struct pt_opts *o, unsigned runs)
{
	for (unsigned i = 0; i < NROWS; i++)
		for (unsigned p = 0; wanted(o, i) && p < NPAIRS; p++)
			for (unsigned k = 0; k < runs; k++)
				if (res[i][p][k].status != PT_OK)
					printf("# %s %s %u B %s run %u: %s: %s\n", pt_test_name(rows[i].test),
					       pt_dir_name(rows[i].dir), rows[i].size, pairs[p].name, k + 1,
					       res[i][p][k].status == PT_NA ? "n/a" : "error",
					       res[i][p][k].reason);
	for (unsigned i = 0; i < NROWS; i++)
		for (unsigned p = 0; wanted(o, i) && p < NPAIRS; p++)
			if (res[i][p][0].status == PT_OK && strcmp(res[i][p][0].offload, "none"))
				printf("# %s %s %u B %s: frames travelled as \"%s\"%s\n",
				       pt_test_name(rows[i].test), pt_dir_name(rows[i].dir), rows[i].size,
				       pairs[p].name, res[i][p][0].offload,
				       strcmp(res[i][p][0].offload, "segmented")
					       ? ""
					       : " (uvnetd's txonly sends TSO frames above 1518 B and cuts them "
						 "for a driver without GUEST_TSO4; Gb/s counts bytes)");
	printf("# pps: 64 B frames prebuilt (uvnet) / testpmd txonly; stream: every frame built; "
	       "testpmd has one mode for both\n");
	touched_notes(o);
	over_notes(o, runs);
	pt_table_legend(stdout);
}

/* @return 0, or -1 when the chart asked for could not be written */
static int print_table(const struct pt_opts *o, const struct pt_cfg *base, unsigned runs)
{
	struct pt_bars plot;

	printf("# uvnet-perf --compare dpdk: medians (min-max) of %u interleaved runs of %.3g s "
	       "(+%.3g s warm-up), %s ring, poll mode, device on CPU %d, driver on CPU %d; "
	       "ratio to DPDK->DPDK\n",
	       runs, base->duration, base->warmup, pt_ring_name(base->ring), base->dev_cpu,
	       base->drv_cpu);
	pt_print_machine(stdout, "# ");
	printf("# command: %s\n", o->cmdline);
	printf("%-6s %-2s %5s %-4s", "test", "", "size", "unit");
	for (unsigned p = 0; p < NPAIRS; p++)
		printf(" | %-25s", pairs[p].name);
	printf(" | cross-CPU regime | of the limit (same order)\n");
	pt_bars_init(&plot, "compare-dpdk.png",
		     "driver -> device, relative to DPDK virtio-user -> DPDK net_vhost",
		     "ratio to DPDK->DPDK (median, min-max)");
	plot.nseries = NPAIRS;
	for (unsigned p = 0; p < NPAIRS; p++)
		plot.series[p] = pairs[p].name;
	plot.ref = 1.0;
	plot.label_fmt = "%.2f";
	{
		char what[96];
		const struct pt_limits *l = pt_limits_cached();

		snprintf(what, sizeof(what), "%s ring, poll mode, %u interleaved runs of %.3g s",
			 pt_ring_name(base->ring), runs, base->duration);
		pt_subtitle(plot.subtitle, sizeof(plot.subtitle), what, l ? l->rtt_ns : NAN);
	}
	for (unsigned i = 0; i < NROWS; i++)
		if (wanted(o, i))
			print_row(i, runs, &plot);
	footnotes(o, runs);
	return o->plot_dir ? pt_plot_bars(o, &plot) : 0;
}

int pt_compare_dpdk(const struct pt_opts *o)
{
	unsigned runs = o->set_runs ? o->runs : 3;
	struct pt_cfg base = o->cfg;
	bool bad = false;

	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	if (!o->set_duration)
		base.duration = 3;
	if (!o->set_warmup)
		base.warmup = 1;
	base.poll = true;
	if (pt_need(o, pt_testpmd_path(o), DPDK_PKGS) || pt_need_pkgs(o, DPDK_PKGS)) {
		fprintf(stderr, "uvnet-perf: --compare dpdk needs DPDK's testpmd\n");
		return 1;
	}
	{
		struct pt_limits l;

		if (!pt_limits_measure(base.dev_cpu, base.drv_cpu, 0.4, &l))
			pt_limits_set(&l);
	}
	for (unsigned i = 0; i < NROWS && !pt_interrupted; i++)
		if (wanted(o, i))
			run_row(o, &base, i, runs);
	if (pt_interrupted)
		return 1;
	for (unsigned i = 0; i < NROWS; i++)
		for (unsigned p = 0; wanted(o, i) && p < NPAIRS; p++)
			for (unsigned k = 0; k < runs; k++)
				bad |= res[i][p][k].status == PT_ERR;
	if (!o->json && print_table(o, &base, runs))
		bad = true;
	return bad;
}
