/* SPDX-License-Identifier: MIT */
/*
 * Bar charts with gnuplot (gnuplot-nox, installed when missing): groups on
 * the x axis, one bar per series with min-max whiskers when a row had
 * several runs, the value printed over each bar, an optional dashed
 * reference line (1.0 for ratios). The script is written next to the PNG
 * (NAME.gp) so a chart can be restyled without rerunning the benchmark.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "perf.h"
#include "proc.h"

void pt_bars_init(struct pt_bars *b, const char *file, const char *title, const char *ylabel)
{
	memset(b, 0, sizeof(*b));
	b->file = file;
	b->title = title;
	b->ylabel = ylabel;
	b->ref = NAN;
	b->ymax = NAN;
	b->label_fmt = "%.3g";
	for (unsigned g = 0; g < PT_BARS_GROUPS; g++)
		for (unsigned s = 0; s < PT_BARS_SERIES; s++)
			b->v[g][s] = b->lo[g][s] = b->hi[g][s] = NAN;
}

/* gnuplot strings are single-quoted: an apostrophe becomes a typographic one. */
static void sq(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("\xe2\x80\x99", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static void data_block(FILE *f, const struct pt_bars *b)
{
	fprintf(f, "$data << EOD\n");
	for (unsigned g = 0; g < b->ngroups; g++) {
		fputc('"', f);
		for (const char *s = b->group[g]; *s; s++)
			fputc(*s == '"' ? '\'' : *s, f);
		fputc('"', f);
		for (unsigned s = 0; s < b->nseries; s++) {
			double v = b->v[g][s];
			double lo = pt_known(b->lo[g][s]) ? b->lo[g][s] : v;
			double hi = pt_known(b->hi[g][s]) ? b->hi[g][s] : v;

			if (pt_known(v))
				fprintf(f, " %.6g %.6g %.6g", v, lo, hi);
			else
				fprintf(f, " NaN NaN NaN");
		}
		fputc('\n', f);
	}
	fprintf(f, "EOD\n");
}

/* Linear from 0, or logarithmic from the decade below the smallest bar. */
static void y_axis(FILE *f, const struct pt_bars *b)
{
	double lo = INFINITY;

	if (!b->log_y) {
		if (pt_known(b->ymax))
			fprintf(f, "set yrange [0:%g]\n", b->ymax);
		else
			fprintf(f, "set yrange [0:*]\n");
		return;
	}
	for (unsigned g = 0; g < b->ngroups; g++)
		for (unsigned s = 0; s < b->nseries; s++)
			if (pt_known(b->v[g][s]) && b->v[g][s] > 0 && b->v[g][s] < lo)
				lo = b->v[g][s];
	fprintf(f, "set logscale y\nset yrange [%g:*]\n", isfinite(lo) ? pow(10, floor(log10(lo))) : 0.1);
}

static void header(FILE *f, const struct pt_bars *b, const char *png)
{
	double width = b->ngroups * b->nseries > 24 ? 1400 : 1000;

	fprintf(f, "set terminal pngcairo size %.0f,600 font 'DejaVu Sans,11' noenhanced\n", width);
	fprintf(f, "set output ");
	sq(f, png);
	fprintf(f, "\nset title ");
	sq(f, b->title);
	if (b->subtitle[0]) {
		fprintf(f, " . \"\\n\" . ");
		sq(f, b->subtitle);
	}
	fprintf(f, "\nset ylabel ");
	sq(f, b->ylabel);
	fprintf(f, "\nset style data histograms\n"
		   "set style histogram errorbars gap 1 lw 1\n"
		   "set style fill solid 0.85 border -1\n"
		   "set boxwidth 0.9\n"
		   "set grid ytics lc rgb '#dddddd'\n"
		   "set key below horizontal\n"
		   "set offsets 0, 0, graph 0.08, 0\n"
		   "set linetype 1 lc rgb '#4477aa'\nset linetype 2 lc rgb '#ee6677'\n"
		   "set linetype 3 lc rgb '#228833'\nset linetype 4 lc rgb '#ccbb44'\n"
		   "set linetype 5 lc rgb '#66ccee'\nset linetype 6 lc rgb '#aa3377'\n");
	y_axis(f, b);
	if (b->ngroups > 5)
		fprintf(f, "set xtics rotate by 40 right font ',10'\n");
	if (pt_known(b->ref))
		fprintf(f, "set arrow from graph 0, first %g to graph 1, first %g nohead dt 2 lw 1.5 "
			   "lc rgb '#555555' front\n",
			b->ref, b->ref);
}

static void plot_cmd(FILE *f, const struct pt_bars *b)
{
	unsigned k = b->nseries;

	fprintf(f, "plot ");
	for (unsigned s = 0; s < k; s++) {
		fprintf(f, "%s$data using %u:%u:%u%s title ", s ? ", " : "", 2 + 3 * s, 3 + 3 * s,
			4 + 3 * s, s ? "" : ":xtic(1)");
		sq(f, b->series[s]);
	}
	/* Values over the bars (above the whisker): bar s of group g sits at
	 * g + (s - (k-1)/2) / (k + gap). */
	for (unsigned s = 0; s < k; s++) {
		fprintf(f, ", $data using ($0 + (%u - %g) / %u.0):%u:(sprintf(", s, (k - 1) / 2.0, k + 1,
			4 + 3 * s);
		sq(f, b->label_fmt);
		fprintf(f, ", $%u)) with labels offset 0,0.6 font ',8' notitle", 2 + 3 * s);
	}
	fprintf(f, "\n");
}

int pt_plot_bars(const struct pt_opts *o, const struct pt_bars *b)
{
	char png[512], gp[512], out[2048];
	char *argv[] = { (char *)"gnuplot", gp, NULL };
	FILE *f;

	if (!b->ngroups || !b->nseries)
		return 0;
	if (pt_need(o, "gnuplot", "gnuplot-nox"))
		return -1;
	if (mkdir(o->plot_dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "uvnet-perf: cannot create %s: %s\n", o->plot_dir, strerror(errno));
		return -1;
	}
	snprintf(png, sizeof(png), "%s/%s", o->plot_dir, b->file);
	snprintf(gp, sizeof(gp), "%.*s.gp", (int)(strlen(png) - 4), png);
	f = fopen(gp, "w");
	if (!f) {
		fprintf(stderr, "uvnet-perf: cannot write %s: %s\n", gp, strerror(errno));
		return -1;
	}
	header(f, b, png);
	data_block(f, b);
	plot_cmd(f, b);
	fclose(f);
	if (pt_capture(argv, out, sizeof(out)) != 0) {
		fprintf(stderr, "uvnet-perf: gnuplot failed on %s:\n%s\n", gp, out);
		return -1;
	}
	if (!o->json)
		fprintf(stderr, "uvnet-perf: wrote %s\n", png);
	return 0;
}
