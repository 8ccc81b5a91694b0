/* SPDX-License-Identifier: MIT */
/*
 * From counters to a result. Throughput comes from the receiver's counters
 * over the receiver's own clock; CPU from /proc/PID/stat over uvnet-perf's
 * window; service demand the way netperf defines it: microseconds of CPU
 * per KB (1024 bytes) of frames delivered, per side and for both sides
 * together (the whole data path: driver process + device process).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "run.h"

static double per_kb(double cpu, double bytes_per_s)
{
	return pt_known(cpu) && bytes_per_s > 0 ? cpu * 1e6 / (bytes_per_s / 1024) : NAN;
}

/*
 * Frames and frame bytes the receiver counted from @a to @b. Bytes as the
 * receiver counted them: a device may segment a TSO frame for a driver
 * without GUEST_TSO, and then frames x size is wrong.
 */
static void window(const struct run *x, const struct pt_counts *a, const struct pt_counts *b,
		   uint64_t *frames, uint64_t *bytes)
{
	const struct pt_cfg *c = x->c;
	uint64_t n = run_received(x, b) - run_received(x, a);

	*frames = c->test == PT_RR ? 2 * n : n; /* request and response */
	if (c->test != PT_RR && a->have_bytes && b->have_bytes &&
	    !strcmp(x->r->measured_at, "receiver"))
		*bytes = b->rx_bytes - a->rx_bytes;
	else
		*bytes = *frames * c->size;
}

static void rates(struct run *x, double *bytes_per_s)
{
	struct pt_result *r = x->r;
	const struct pt_cfg *c = x->c;
	bool dev = run_receiver(x) == &x->dev;
	const struct pt_counts *a = dev ? &x->d0 : &x->v0, *b = dev ? &x->d1 : &x->v1;
	double secs = (double)(b->t_ns - a->t_ns) / 1e9;

	if (b->t_ns <= a->t_ns) {
		run_fail(x, "the receiver's counters did not advance");
		return;
	}
	window(x, a, b, &r->frames, &r->bytes);
	r->windowed = true;
	r->secs = secs;
	r->pps = (double)r->frames / secs;
	if (c->test == PT_RR)
		r->tps = (double)(r->frames / 2) / secs;
	*bytes_per_s = (double)r->bytes / secs;
	r->gbps = *bytes_per_s * 8 / 1e9;
}

/* One record per pair of neighbouring edges (run.c): they add up to the window. */
static void intervals(struct run *x)
{
	static struct pt_interval *buf;
	static unsigned cap;
	struct pt_result *r = x->r;
	const struct pt_counts *e = x->edge;

	if (!r->windowed || x->nedge < 2)
		return;
	if (x->nedge - 1 > cap) {
		struct pt_interval *p = realloc(buf, (x->nedge - 1) * sizeof(*buf));

		if (!p)
			return;
		buf = p;
		cap = x->nedge - 1;
	}
	for (unsigned i = 0; i + 1 < x->nedge; i++) {
		struct pt_interval *v = &buf[i];

		v->start_s = (double)(e[i].t_ns - e[0].t_ns) / 1e9;
		v->end_s = (double)(e[i + 1].t_ns - e[0].t_ns) / 1e9;
		window(x, &e[i], &e[i + 1], &v->frames, &v->bytes);
		v->trans = x->c->test == PT_RR ? v->frames / 2 : 0;
	}
	r->iv = buf;
	r->n_iv = x->nedge - 1;
}

/*
 * /proc/PID/stat counts in clock ticks (10 ms), sampled a little before or
 * after our own clock: a busy process can read as 1.01 cores. Each side is
 * pinned to one CPU (uvnetd --cpu, testpmd --lcores N@C, the worker's
 * affinity), so anything above 1 is that quantization: report 1. An
 * external backend is not ours to pin: its value stands as measured.
 */
static double fraction(uint64_t from, uint64_t to, double secs, bool pinned)
{
	double f = (double)(to - from) / 1e9 / secs;

	return pinned && f > 1 ? 1 : f;
}

static void cpu(struct run *x, double bytes_per_s)
{
	struct pt_result *r = x->r;
	double secs = (double)(x->t1 - x->t0) / 1e9;

	if (x->cpu_drv_ok)
		r->cpu_drv = fraction(x->cpu_drv[0], x->cpu_drv[1], secs, true);
	if (x->cpu_dev_ok)
		r->cpu_dev = fraction(x->cpu_dev[0], x->cpu_dev[1], secs,
				      x->c->device != PT_DEV_EXTERNAL);
	r->sd_drv = per_kb(r->cpu_drv, bytes_per_s);
	r->sd_dev = per_kb(r->cpu_dev, bytes_per_s);
	r->sd = pt_known(r->sd_drv) && pt_known(r->sd_dev) ? r->sd_drv + r->sd_dev : NAN;
}

/* Kicks and calls: the device's count when it has one (uvnetd), else our driver's. */
static void notifications(struct run *x)
{
	struct pt_result *r = x->r;
	const struct pt_counts *a = &x->d0, *b = &x->d1;

	if (!(a->have_notif && b->have_notif && b->t_ns > a->t_ns)) {
		a = &x->v0;
		b = &x->v1;
	}
	if (!(a->have_notif && b->have_notif && b->t_ns > a->t_ns))
		return;
	double secs = (double)(b->t_ns - a->t_ns) / 1e9;

	r->kicks_ps = (double)(b->kicks - a->kicks) / secs;
	r->calls_ps = (double)(b->calls - a->calls) / secs;
	r->notif_ps = r->kicks_ps + r->calls_ps;
}

/* Whole-run totals from both sides' final counters. */
static void totals(struct run *x)
{
	struct pt_result *r = x->r;
	const struct pt_cfg *c = x->c;
	const struct pt_counts *dev = &x->dev.final, *drv = &x->drv.final;

	if (c->test == PT_RR) {
		r->sent = drv->trans + drv->timeouts;
		r->received = drv->trans;
		r->drops = drv->timeouts;
		r->rr_timeouts = drv->timeouts;
		r->counted = drv->valid;
		return;
	}
	if (!dev->valid || !drv->valid)
		return;
	r->counted = true;
	if (c->pair) {
		r->sent = drv->tx_pkts;
		r->received = drv->rx_pkts;
		r->drops = dev->drops + drv->drops;
	} else if (c->dir == PT_TX) {
		r->sent = drv->tx_pkts;
		r->received = dev->rx_pkts;
		r->drops = dev->drops;
	} else {
		r->sent = dev->tx_pkts;
		r->received = drv->rx_pkts;
		r->drops = drv->drops;
		/* A generating device's "drops" are frames it could not place. */
		r->backpressure = dev->tx_full + (c->device == PT_DEV_UVNETD ? dev->drops : 0);
	}
}

static void latency(struct run *x)
{
	const struct pt_hist *h = x->drv.shm ? &x->drv.shm->hist : NULL;
	struct pt_latency *l = &x->r->lat;

	if (x->c->test != PT_RR || !h || !h->count)
		return;
	l->p50 = (double)pt_hist_quantile(h, 0.50) / 1e3;
	l->p99 = (double)pt_hist_quantile(h, 0.99) / 1e3;
	l->p999 = (double)pt_hist_quantile(h, 0.999) / 1e3;
	l->min = (double)h->min / 1e3;
	l->max = (double)h->max / 1e3;
	l->mean = (double)h->sum / (double)h->count / 1e3;
}

static void driver_facts(struct run *x)
{
	const struct wk_shm *sh = x->drv.shm;
	const struct pt_cfg *c = x->c;

	/* testpmd's virtio-user does not negotiate GUEST_TSO4 by default:
	 * uvnetd's txonly segments its TSO frames (above 1518 B) for it. */
	if (!sh && c->device == PT_DEV_UVNETD && c->test != PT_RR && c->dir == PT_RX &&
	    c->size > PT_PLAIN_MAX)
		x->r->offload = "segmented";
	if (!sh)
		return;
	static const char *const names[] = { "none", "tso", "jumbo", "segmented" };

	for (unsigned i = 0; i < 4; i++)
		if (!strcmp(sh->offload, names[i]))
			x->r->offload = names[i];
	x->r->mrg_buf_len = sh->mrg_buf_len;
	x->r->rx_mode_used = (enum uvn_rx_mode)sh->rx_mode;
}

/* uvnetd copies guest TX frames below this (--zerocopy auto, its default --zerocopy-min). */
#define UVNETD_ZC_MIN 256u

/*
 * A device writes every byte it delivers into the driver's buffers (rx,
 * the pair's B, rr's answers), and uvnet's driver with --dirty reads them
 * too. Sent to a device: DPDK's net_vhost copies guest buffers into its
 * mbufs; uvnetd's sink reads every byte (one that predates rxonly reads
 * none), and dropping frames unread still copies the ones uvnetd does not
 * borrow (zero-copy): below --zerocopy-min, or all with zero-copy off.
 */
enum pt_touch run_touched(const struct pt_opts *o, const struct pt_cfg *c)
{
	bool reads = c->dirty && c->driver == PT_DRV_UVNET;

	if (c->test == PT_RR || c->pair || c->dir == PT_RX)
		return reads ? PT_TOUCH_READ : PT_TOUCH_COPIED;
	if (c->device == PT_DEV_EXTERNAL)
		return PT_TOUCH_UNKNOWN;
	if (c->device == PT_DEV_DPDK)
		return PT_TOUCH_COPIED;
	if (c->test == PT_STREAM && pt_uvnetd_sink_reads(o))
		return PT_TOUCH_READ;
	if (!pt_uvnetd_has(o, "--zerocopy") || c->zerocopy == PT_ZC_OFF ||
	    (c->zerocopy != PT_ZC_ON && c->size < UVNETD_ZC_MIN))
		return PT_TOUCH_COPIED;
	return PT_TOUCH_DESC;
}

/* Did both sides end the way they should? */
static void check_sides(struct run *x)
{
	bool device_first = x->c->test != PT_RR && !x->c->pair && x->c->dir == PT_RX;
	const struct wk_shm *sh = x->drv.shm;
	char tail[256];

	if (x->drv.why[0])
		run_fail(x, "%s: %s", x->drv.what, x->drv.why);
	if (sh && sh->err == -ENOTCONN && !device_first) {
		pt_log_tail(&x->dev.child, tail, sizeof(tail));
		run_fail(x, "%s went away during the test%s%s", x->dev.what, tail[0] ? ": " : "", tail);
	}
	if (x->c->device == PT_DEV_UVNETD && x->dev.child.exited &&
	    !(WIFEXITED(x->dev.child.status) && WEXITSTATUS(x->dev.child.status) == 0)) {
		pt_log_tail(&x->dev.child, tail, sizeof(tail));
		run_fail(x, "uvnetd failed%s%s", tail[0] ? ": " : "", tail);
	}
}

/* A pair stream says whether A waited for room in B's ring (worker_loops.c): whose drops these are. */
static void pair_note(struct run *x)
{
	struct pt_result *r = x->r;
	const char *note;
	size_t len = strlen(r->reason);

	if (!x->c->pair || x->c->test == PT_RR || r->status != PT_OK)
		return;
	if (x->c->rate_gbps > 0)
		note = "pair flow: window (paced: A sends only what B's free rx buffers hold)";
	else if (x->c->device == PT_DEV_EXTERNAL)
		note = "pair flow: none (unpaced: A does not wait for room in B's rx ring; "
		       "what the external switch lost is \"unaccounted\")";
	else
		note = "pair flow: none (unpaced: A does not wait for room in B's rx ring; "
		       "drops are frames the switch had no room for)";
	snprintf(r->reason + len, sizeof(r->reason) - len, "%s%s", len ? "; " : "", note);
}

void run_compute(struct run *x)
{
	double bytes_per_s = 0;

	check_sides(x);
	rates(x, &bytes_per_s);
	intervals(x);
	cpu(x, bytes_per_s);
	notifications(x);
	totals(x);
	pair_note(x);
	latency(x);
	driver_facts(x);
	pt_limits_apply(pt_limits_cached(), x->r);
}
