/* SPDX-License-Identifier: MIT */
/*
 * Results as one JSON object per test (the interface other tools rely on:
 * DESIGN.md, uvnet-perf(1) lists every field) and as table rows. A value
 * nobody could measure is null in JSON and "-" in tables, never a number.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <uvnet/version.h>

#include "perf.h"
#include "perf_commit.h"
#include "util/json.h"

/* A number with @decimals digits after the point, or null. */
static void jnum(FILE *f, const char *key, double v, int decimals)
{
	fprintf(f, ",\"%s\":", key);
	if (pt_known(v) && isfinite(v))
		fprintf(f, "%.*f", decimals, v);
	else
		fputs("null", f);
}

/* A JSON string (the one escaping helper every JSON writer uses). */
static void jstr(FILE *f, const char *key, const char *s)
{
	fprintf(f, ",\"%s\":", key);
	uvn_json_str(f, s);
}

static const char *status_name(enum pt_status s)
{
	return s == PT_OK ? "ok" : s == PT_NA ? "n/a" : "error";
}

static void json_cfg(FILE *f, const struct pt_result *r)
{
	const struct pt_cfg *c = &r->cfg;
	bool ours = c->driver == PT_DRV_UVNET;

	fprintf(f, "{\"test\":\"%s\"", pt_test_name(c->test));
	jstr(f, "direction", c->test == PT_RR ? "both" : pt_dir_name(c->dir));
	fprintf(f, ",\"size\":%u,\"segs\":%u", c->size, c->segs);
	jstr(f, "topology", c->pair ? "pair" : "direct");
	jstr(f, "driver", pt_drv_name(c->driver));
	jstr(f, "device", pt_dev_name(c->device));
	jstr(f, "ring", pt_ring_name(c->ring));
	jstr(f, "rx_mode", pt_rx_mode_name(r->status == PT_OK && ours ? r->rx_mode_used : c->rx_mode));
	jstr(f, "mode", c->poll ? "poll" : "event");
	fprintf(f, ",\"queues\":%u,\"burst\":%u,\"queue_size\":%u", c->queues, c->burst,
		c->queue_size);
	/* The driver's switches are in force only when the driver is ours. */
	if (ours) {
		fprintf(f, ",\"deferred_alloc\":%s", c->deferred_alloc ? "true" : "false");
		jstr(f, "merge_size", pt_merge_name(c->merge));
		jstr(f, "desc_cache", c->desc_cache ? "on" : "off");
		fprintf(f, ",\"desc_cache_thr\":%u", c->desc_cache_thr);
	} else {
		fputs(",\"deferred_alloc\":null,\"merge_size\":null,\"desc_cache\":null,"
		      "\"desc_cache_thr\":null", f);
	}
	if (c->device == PT_DEV_UVNETD)
		jstr(f, "zerocopy", pt_zc_name(c->zerocopy));
	else
		fputs(",\"zerocopy\":null", f);
	fprintf(f, ",\"dirty\":%s", c->dirty ? "true" : "false");
	jnum(f, "duration_s", c->duration, 3);
	jnum(f, "warmup_s", c->warmup, 3);
}

static void json_latency(FILE *f, const struct pt_result *r)
{
	const struct pt_latency *l = &r->lat;

	if (!pt_known(l->p50)) {
		fputs(",\"latency_us\":null", f);
		return;
	}
	fprintf(f, ",\"latency_us\":{\"p50\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"min\":%.3f,"
		   "\"max\":%.3f,\"mean\":%.3f}",
		l->p50, l->p99, l->p999, l->min, l->max, l->mean);
}

/* The measured window's frames and its intervals, iperf3 -J style. */
static void json_window(FILE *f, const struct pt_result *r)
{
	bool rr = r->cfg.test == PT_RR;

	if (r->windowed)
		fprintf(f, ",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64, r->frames, r->bytes);
	else
		fputs(",\"frames\":null,\"bytes\":null", f);
	fputs(",\"intervals\":[", f);
	for (unsigned i = 0; i < r->n_iv; i++) {
		const struct pt_interval *v = &r->iv[i];
		double secs = v->end_s - v->start_s;

		fprintf(f, "%s{\"start_s\":%.6f,\"end_s\":%.6f,\"frames\":%" PRIu64
			   ",\"bytes\":%" PRIu64, i ? "," : "", v->start_s, v->end_s, v->frames,
			v->bytes);
		fputs(",\"mpps\":", f);
		fprintf(f, "%.6f", secs > 0 ? (double)v->frames / secs / 1e6 : 0.0);
		fputs(",\"gbit_per_s\":", f);
		fprintf(f, "%.6f", secs > 0 ? (double)v->bytes * 8 / secs / 1e9 : 0.0);
		if (rr)
			fprintf(f, ",\"transactions\":%" PRIu64 "}", v->trans);
		else
			fputs(",\"transactions\":null}", f);
	}
	fputc(']', f);
}

void pt_json(FILE *f, const struct pt_result *r)
{
	pt_json_extra(f, r, NULL);
}

void pt_json_extra(FILE *f, const struct pt_result *r, const char *extra)
{
	json_cfg(f, r);
	jstr(f, "status", status_name(r->status));
	jstr(f, "reason", r->reason);
	jnum(f, "pps", r->pps, 0);
	jnum(f, "gbps", r->gbps, 4);
	jstr(f, "measured_at", r->measured_at);
	jnum(f, "seconds", r->secs, 3);
	jnum(f, "cpu_driver", r->cpu_drv, 4);
	jnum(f, "cpu_device", r->cpu_dev, 4);
	jnum(f, "service_demand_us_per_kb", r->sd, 4);
	jnum(f, "service_demand_driver_us_per_kb", r->sd_drv, 4);
	jnum(f, "service_demand_device_us_per_kb", r->sd_dev, 4);
	jnum(f, "notifications_per_s", r->notif_ps, 0);
	jnum(f, "kicks_per_s", r->kicks_ps, 0);
	jnum(f, "calls_per_s", r->calls_ps, 0);
	if (r->counted) {
		fprintf(f, ",\"sent\":%" PRIu64 ",\"received\":%" PRIu64 ",\"drops\":%" PRIu64
			   ",\"backpressure\":%" PRIu64 ",\"unaccounted\":%" PRId64,
			r->sent, r->received, r->drops, r->backpressure,
			(int64_t)(r->sent - r->drops - r->received));
	} else {
		fputs(",\"sent\":null,\"received\":null,\"drops\":null,\"backpressure\":null,"
		      "\"unaccounted\":null", f);
	}
	jnum(f, "transactions_per_s", r->tps, 1);
	json_latency(f, r);
	if (r->cfg.test == PT_RR && r->status == PT_OK)
		fprintf(f, ",\"rr_timeouts\":%" PRIu64, r->rr_timeouts);
	else
		fputs(",\"rr_timeouts\":null", f);
	jstr(f, "offload", r->offload);
	fprintf(f, ",\"mrg_buf_len\":%u", r->mrg_buf_len);
	jnum(f, "rtt_ns", r->rtt_ns, 0);
	jstr(f, "regime", pt_known(r->rtt_ns) ? pt_regime(r->rtt_ns) : "unknown");
	jnum(f, "limit_fraction", r->limit_frac, 4);
	jstr(f, "limit_basis", r->limit_basis);
	if (pt_known(r->limit_frac))
		fprintf(f, ",\"over_limit\":%s", r->over_limit ? "true" : "false");
	else
		fputs(",\"over_limit\":null", f);
	jstr(f, "touched", pt_touch_name(r->touched));
	json_window(f, r);
	if (extra && *extra)
		fprintf(f, ",%s", extra);
	fputs("}\n", f);
	fflush(f);
}

const char *pt_fmt_rate(char *buf, size_t n, double pps)
{
	if (!pt_known(pps))
		snprintf(buf, n, "-");
	else if (pps >= 1e6)
		snprintf(buf, n, "%.2f Mpps", pps / 1e6);
	else
		snprintf(buf, n, "%.1f kpps", pps / 1e3);
	return buf;
}

const char *pt_fmt_num(char *buf, size_t n, int decimals, double v)
{
	if (pt_known(v) && isfinite(v))
		snprintf(buf, n, "%.*f", decimals, v);
	else
		snprintf(buf, n, "-");
	return buf;
}

double pt_headline(const struct pt_result *r)
{
	if (r->cfg.test == PT_RR)
		return r->tps;
	return r->cfg.test == PT_PPS || r->cfg.size < 256 ? r->pps / 1e6 : r->gbps;
}

const char *pt_headline_unit(const struct pt_result *r)
{
	if (r->cfg.test == PT_RR)
		return "trans/s";
	return r->cfg.test == PT_PPS || r->cfg.size < 256 ? "Mpps" : "Gb/s";
}

const char *pt_fmt_limit(char *buf, size_t n, double frac)
{
	if (!pt_known(frac) || !isfinite(frac))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.1f%%%s", frac * 100, frac > 1 ? "!" : "");
	return buf;
}

void pt_table_head(FILE *f)
{
	fprintf(f, "%-6s %-3s %6s %9s %8s %5s %5s %8s %8s %8s %8s  %-16s  %s\n", "test", "dir",
		"size", "Mpps", "Gb/s", "cpu", "cpu", "SD", "notif", "drops", "of", "touched",
		"rr latency us");
	fprintf(f, "%-6s %-3s %6s %9s %8s %5s %5s %8s %8s %8s %8s  %-16s  %s\n", "", "", "bytes", "",
		"", "drv", "dev", "us/KB", "per s", "", "limit", "(receiver)", "p50/p99/p99.9");
}

void pt_table_row(FILE *f, const struct pt_result *r)
{
	const struct pt_cfg *c = &r->cfg;
	char a[7][24], lat[64] = "-", drops[24] = "-";

	fprintf(f, "%-6s %-3s %6u ", pt_test_name(c->test), c->test == PT_RR ? "-" : pt_dir_name(c->dir),
		c->size);
	if (r->status != PT_OK) {
		fprintf(f, "%s: %s\n", r->status == PT_NA ? "n/a" : "error", r->reason);
		return;
	}
	if (pt_known(r->lat.p50))
		snprintf(lat, sizeof(lat), "%.1f/%.1f/%.1f (%.0f trans/s)", r->lat.p50, r->lat.p99,
			 r->lat.p999, r->tps);
	if (r->counted)
		snprintf(drops, sizeof(drops), "%" PRIu64, r->drops);
	fprintf(f, "%9s %8s %5s %5s %8s %8s %8s %8s  %-16s  %s\n",
		pt_fmt_num(a[0], 24, 3, r->pps / 1e6), pt_fmt_num(a[1], 24, 2, r->gbps),
		pt_fmt_num(a[2], 24, 2, r->cpu_drv), pt_fmt_num(a[3], 24, 2, r->cpu_dev),
		pt_fmt_num(a[4], 24, 3, r->sd), pt_fmt_num(a[5], 24, 0, r->notif_ps), drops,
		pt_fmt_limit(a[6], 24, r->limit_frac), pt_touch_name(r->touched), lat);
}

const char *pt_over_why(const struct pt_result *r)
{
	if (r->cfg.test == PT_RR)
		return "more transactions than cross-CPU round trips allow: the regime changed since "
		       "the limit was measured";
	switch (r->touched) {
	case PT_TOUCH_DESC:
		return "its frames went unread: a descriptor rate, not bytes moved";
	case PT_TOUCH_READ:
		return "its receiver reads every byte but copies none, and a read outruns a copy";
	case PT_TOUCH_COPIED:
		return "more than one copy a frame at the limit's rate: its buffers stay hotter "
		       "than the limit's rings, or fewer bytes were copied than counted";
	default:
		return "what the external device did with the bytes is unknown";
	}
}

void pt_table_flags(FILE *f, const struct pt_result *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (r[i].status == PT_OK && r[i].over_limit)
			fprintf(f, "# ! %s %s %u B is %.0f %% of its physical limit, %s: %s\n",
				pt_test_name(r[i].cfg.test),
				r[i].cfg.test == PT_RR ? "-" : pt_dir_name(r[i].cfg.dir), r[i].cfg.size,
				r[i].limit_frac * 100, r[i].limit_basis, pt_over_why(&r[i]));
}

void pt_table_legend(FILE *f)
{
	fprintf(f, "# touched: what the receiver did with every frame's payload: payload read = "
		   "read every byte (uvnetd's sink sums them; uvnet's driver with --dirty), payload "
		   "copied = every byte copied into its buffers, descriptors only = dropped unread "
		   "(a descriptor rate)\n");
}

/* The 1-minute load average: how much else ran on the machine. */
static const char *load_average(void)
{
	static char buf[16];
	FILE *f = fopen("/proc/loadavg", "r");

	snprintf(buf, sizeof(buf), "?");
	if (f) {
		if (fscanf(f, "%15s", buf) != 1)
			snprintf(buf, sizeof(buf), "?");
		fclose(f);
	}
	return buf;
}

/* The first "model name" of /proc/cpuinfo into @model (unchanged if none). */
static void cpu_model(char *model, size_t n)
{
	char line[256];
	FILE *ci = fopen("/proc/cpuinfo", "r");

	while (ci && fgets(line, sizeof(line), ci)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			snprintf(model, n, "%s", colon + 2);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	}
	if (ci)
		fclose(ci);
}

void pt_print_machine(FILE *f, const char *prefix)
{
	char model[128] = "unknown CPU", date[64];
	struct utsname u;
	time_t now = time(NULL);

	cpu_model(model, sizeof(model));
	uname(&u);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	fprintf(f, "%s%s, %s, %ld CPUs, Linux %s %s, uvnet %s, load average %s\n", prefix, date,
		model, sysconf(_SC_NPROCESSORS_ONLN), u.release, u.machine, UVN_PERF_VERSION,
		load_average());
}

/*
 * What iperf3 -J puts under "start": what ran, where and when, so a result
 * file says which build on which machine made it. The commit is the one
 * the build saw (git at build time, never at run time), null if none.
 */
void pt_json_metadata(FILE *f, const struct pt_opts *o, int argc, char *const *argv)
{
	char model[128] = "", date[32];
	struct utsname u;
	time_t now = time(NULL);

	cpu_model(model, sizeof(model));
	fputs("{\"metadata\":{\"tool\":\"uvnet-perf\"", f);
	jstr(f, "version", UVN_VERSION_STRING);
	if (UVN_PERF_COMMIT[0])
		jstr(f, "commit", UVN_PERF_COMMIT);
	else
		fputs(",\"commit\":null", f);
	if (!uname(&u)) {
		fputs(",\"kernel\":{", f);
		fputs("\"sysname\":", f);
		uvn_json_str(f, u.sysname);
		jstr(f, "release", u.release);
		jstr(f, "version", u.version);
		jstr(f, "machine", u.machine);
		fputc('}', f);
	} else {
		fputs(",\"kernel\":null", f);
	}
	fputs(",\"cpu\":{\"model\":", f);
	if (model[0])
		uvn_json_str(f, model);
	else
		fputs("null", f);
	fprintf(f, ",\"count\":%ld}", sysconf(_SC_NPROCESSORS_ONLN));
	fputs(",\"command_line\":[", f);
	for (int i = 0; i < argc; i++) {
		if (i)
			fputc(',', f);
		uvn_json_str(f, argv[i]);
	}
	fputc(']', f);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	jstr(f, "start_time", date);
	jnum(f, "interval_s", o->interval, 3);
	fputs("}}\n", f);
	fflush(f);
}

void pt_subtitle(char *out, size_t n, const char *what, double rtt_ns)
{
	char date[32];
	time_t now = time(NULL);

	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
	snprintf(out, n, "%s; %s; load %s; cross-CPU %s", what, date, load_average(),
		 pt_known(rtt_ns) ? pt_regime(rtt_ns) : "unknown");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

unsigned pt_median(const double *v, unsigned n, double *med, double *min, double *max)
{
	double s[256];
	unsigned k = 0;

	for (unsigned i = 0; i < n && k < 256; i++)
		if (pt_known(v[i]))
			s[k++] = v[i];
	*med = *min = *max = NAN;
	if (!k)
		return 0;
	qsort(s, k, sizeof(s[0]), cmp_double);
	*med = k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
	*min = s[0];
	*max = s[k - 1];
	return k;
}
