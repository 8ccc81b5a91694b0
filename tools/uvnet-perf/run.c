/* SPDX-License-Identifier: MIT */
/*
 * One test, end to end: start the device, then the driver, each on its
 * CPU; warm up; take both sides' counters and CPU times at the start and
 * end of the measured window; stop them in the order that lets every frame
 * be counted on both sides (the receiver last), and turn it all into a
 * result.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "util/sys.h"


/* What this combination cannot run, and why ("n/a" rows). */
static const char *not_available(const struct pt_opts *o, const struct pt_cfg *c)
{
	static char why[200];
	bool rx_gen = c->test != PT_RR && !c->pair && c->dir == PT_RX;

	if (c->driver == PT_DRV_DPDK && c->test == PT_RR)
		return "testpmd has no request/response client (rr needs uvnet's driver)";
	if (c->driver == PT_DRV_DPDK && !c->poll)
		return "testpmd's virtio-user forwarding only polls";
	if (c->device == PT_DEV_DPDK && !c->poll)
		return "testpmd's net_vhost forwarding only polls";
	if ((c->driver == PT_DRV_DPDK || (c->device == PT_DEV_DPDK && rx_gen)) && c->size > 2048)
		return "testpmd's txonly frames are single 2 KB mbufs here";
	if (c->pair && (c->device == PT_DEV_DPDK || c->driver != PT_DRV_UVNET))
		return "the pair topology is uvnet's drivers through uvnetd's switch or an "
		       "external one (--connect SOCK_A,SOCK_B)";
	if (c->zerocopy != PT_ZC_DEFAULT && c->device != PT_DEV_UVNETD)
		return "--zerocopy is uvnetd's switch";
	if (c->device == PT_DEV_UVNETD) {
		unsigned max = pt_uvnetd_txonly_max(o);

		if (!pt_uvnetd_help(o)[0]) {
			snprintf(why, sizeof(why), "cannot run %s --help", pt_uvnetd_path(o));
			return why;
		}
		if (c->zerocopy != PT_ZC_DEFAULT && !pt_uvnetd_has(o, "--zerocopy"))
			return "this uvnetd has no --zerocopy (it predates zero-copy TX)";
		if (rx_gen && max && c->size > max) {
			snprintf(why, sizeof(why),
				 "this uvnetd limits --txonly-size to %u B (it predates GSO txonly frames)",
				 max);
			return why;
		}
	}
	return NULL;
}

static void result_init(struct pt_result *r, const struct pt_cfg *c)
{
	memset(r, 0, sizeof(*r));
	r->cfg = *c;
	r->secs = r->pps = r->gbps = r->tps = NAN;
	r->cpu_drv = r->cpu_dev = r->sd = r->sd_drv = r->sd_dev = NAN;
	r->kicks_ps = r->calls_ps = r->notif_ps = NAN;
	r->lat = (struct pt_latency){ NAN, NAN, NAN, NAN, NAN, NAN };
	r->rtt_ns = r->limit_frac = NAN;
	r->offload = "none";
	r->measured_at = "receiver";
	r->rx_mode_used = c->rx_mode;
}

void run_fail(struct run *x, const char *fmt, ...)
{
	va_list ap;

	if (x->r->status != PT_OK)
		return;
	x->r->status = PT_ERR;
	va_start(ap, fmt);
	vsnprintf(x->r->reason, sizeof(x->r->reason), fmt, ap);
	va_end(ap);
}

/* Why a side is not up: its own message, or the end of its log. */
static const char *side_trouble(struct pt_side *s, char *buf, size_t n)
{
	char tail[256];

	if (s->why[0])
		return s->why;
	if (s->shm && s->shm->msg[0])
		return s->shm->msg;
	pt_log_tail(&s->child, tail, sizeof(tail));
	snprintf(buf, n, "%s%s", pt_alive(&s->child) ? "no answer" : "exited", tail[0] ? ": " : "");
	snprintf(buf + strlen(buf), n - strlen(buf), "%s", tail);
	return buf;
}

static bool side_ready(void *ctx)
{
	struct pt_side *s = ctx;

	return s->ops->ready(s) || (s->child.pid > 0 && !pt_alive(&s->child));
}

static bool start_side(struct run *x, struct pt_side *s, double secs)
{
	char buf[320];

	if (s->ops->start(s)) {
		run_fail(x, "%s: %s", s->what, s->why);
		return false;
	}
	if (!pt_wait_for(secs, side_ready, s) || !s->ops->ready(s) || s->why[0] ||
	    (s->child.pid > 0 && !pt_alive(&s->child))) {
		run_fail(x, "%s did not come up: %s", s->what, side_trouble(s, buf, sizeof(buf)));
		return false;
	}
	return true;
}

static void cpu_read(struct run *x, unsigned i)
{
	x->cpu_dev_ok = x->dev.pid > 0 && !uvn_proc_cpu_ns(x->dev.pid, &x->cpu_dev[i]) &&
			(i == 0 || x->cpu_dev_ok);
	x->cpu_drv_ok = x->drv.pid > 0 && !uvn_proc_cpu_ns(x->drv.pid, &x->cpu_drv[i]) &&
			(i == 0 || x->cpu_drv_ok);
}

/* Which side's counters say what arrived; the other end counts only if nobody else can. */
struct pt_side *run_receiver(struct run *x)
{
	const struct pt_cfg *c = x->c;

	if (c->test == PT_RR || c->pair || c->dir == PT_RX)
		return &x->drv;
	if (c->device == PT_DEV_EXTERNAL) {
		x->r->measured_at = "sender";
		return &x->drv;
	}
	return &x->dev;
}

uint64_t run_received(const struct run *x, const struct pt_counts *c)
{
	if (x->c->test == PT_RR)
		return c->trans;
	return strcmp(x->r->measured_at, "sender") ? c->rx_pkts : c->tx_pkts;
}

/* The latest counters without waiting (progress lines). */
static int latest(struct pt_side *s, struct pt_counts *out)
{
	if (s->ops == &pt_worker_ops)
		return s->ops->snap(s, 0, out);
	*out = s->last;
	return out->valid ? 0 : -EAGAIN;
}

static void progress(struct run *x, const char *phase, double at, struct pt_counts *prev,
		     uint64_t *cpu_prev)
{
	struct pt_side *s = run_receiver(x);
	struct pt_counts now;
	uint64_t cpu[2] = { 0, 0 };
	double dt, rate, cd = NAN, cv = NAN;
	char rb[32];

	if (x->o->quiet || x->o->json || latest(s, &now) || !prev->valid) {
		if (!latest(s, &now))
			*prev = now;
		return;
	}
	dt = (double)(now.t_ns - prev->t_ns) / 1e9;
	if (dt <= 0)
		return;
	rate = (double)(run_received(x, &now) - run_received(x, prev)) / dt;
	if (x->dev.pid > 0 && !uvn_proc_cpu_ns(x->dev.pid, &cpu[0]) && cpu_prev[0])
		cd = (double)(cpu[0] - cpu_prev[0]) / 1e9 / dt;
	if (x->drv.pid > 0 && !uvn_proc_cpu_ns(x->drv.pid, &cpu[1]) && cpu_prev[1])
		cv = (double)(cpu[1] - cpu_prev[1]) / 1e9 / dt;
	fprintf(stderr, "  [%5.1f s%s] %s %s %u B %s->%s: %s", at, phase,
		pt_test_name(x->c->test), x->c->test == PT_RR ? "" : pt_dir_name(x->c->dir),
		x->c->size, pt_drv_name(x->c->driver), pt_dev_name(x->c->device),
		x->c->test == PT_RR ? "" : pt_fmt_rate(rb, sizeof(rb), rate));
	if (x->c->test == PT_RR)
		fprintf(stderr, "%.0f trans/s", rate);
	else if (now.have_bytes && strcmp(x->r->measured_at, "sender"))
		fprintf(stderr, " %.2f Gb/s", (double)(now.rx_bytes - prev->rx_bytes) * 8 / 1e9 / dt);
	else
		fprintf(stderr, " %.2f Gb/s", rate * x->c->size * 8 / 1e9);
	fprintf(stderr, "  cpu drv %s dev %s\n", pt_fmt_num(rb, sizeof(rb) / 2, 2, cv),
		pt_fmt_num(rb + sizeof(rb) / 2, sizeof(rb) / 2, 2, cd));
	*prev = now;
	cpu_prev[0] = cpu[0];
	cpu_prev[1] = cpu[1];
}

static bool died(struct run *x, struct pt_side *s)
{
	char buf[320];

	run_fail(x, "%s exited during the test: %s", s->what, side_trouble(s, buf, sizeof(buf)));
	return false;
}

/*
 * The receiver's counters at an interval's edge, if they moved on since the
 * last edge (uvnetd's counters are its latest report, maybe the same one).
 * The window's end always goes in, replacing edges not before it, so the
 * intervals add up to the window whatever was sampled in between.
 */
static void edge_add(struct run *x, const struct pt_counts *c, bool end)
{
	while (end && x->nedge > 1 && x->edge[x->nedge - 1].t_ns >= c->t_ns)
		x->nedge--;
	if (!x->edge || !c->valid || (x->nedge && c->t_ns <= x->edge[x->nedge - 1].t_ns))
		return;
	if (x->nedge == x->edge_cap) {
		if (!end)
			return;
		x->nedge--;
	}
	x->edge[x->nedge++] = *c;
}

/* Room for the edges of @secs in steps of the interval (a static buffer: one test at a time). */
static void edges_reserve(struct run *x, double secs, double step)
{
	static struct pt_counts *buf;
	static unsigned cap;
	double want = ceil(secs / step) + 3;
	struct pt_counts *p;

	x->nedge = 0;
	x->edge_cap = 0;
	x->edge = NULL;
	if (want > 1e7)
		return;
	if ((unsigned)want > cap) {
		p = realloc(buf, (size_t)want * sizeof(*buf));
		if (!p)
			return; /* no intervals, the test itself runs */
		buf = p;
		cap = (unsigned)want;
	}
	x->edge = buf;
	x->edge_cap = cap;
}

static double interval(const struct run *x)
{
	return x->o->interval > 0 ? x->o->interval : 1;
}

/* Sleep @secs, one progress line (and with @edges, one interval edge) per interval. */
static bool timed(struct run *x, const char *phase, double secs, double *clock, bool edges)
{
	struct pt_counts prev = { 0 };
	uint64_t cpu_prev[2] = { 0, 0 };
	double left = secs, iv = interval(x);

	progress(x, phase, *clock, &prev, cpu_prev);
	while (left > 0) {
		double step = left < iv ? left : iv;

		if (!pt_sleep(step))
			return false;
		left -= step;
		*clock += step;
		if (x->dev.child.pid && !pt_alive(&x->dev.child))
			return died(x, &x->dev);
		if (x->drv.child.pid && !pt_alive(&x->drv.child))
			return died(x, &x->drv);
		/* progress() leaves the newest counters in prev: the sample
		 * it takes anyway is the edge, no second request. The end's
		 * edge is the window's last snapshot (measure()). */
		progress(x, phase, *clock, &prev, cpu_prev);
		if (edges && left > 1e-9)
			edge_add(x, &prev, false);
	}
	return true;
}

static void set_measure(struct run *x, int on)
{
	if (x->drv.shm)
		atomic_store(&x->drv.shm->measure, on);
}

static bool snap_both(struct run *x, uint64_t after, struct pt_counts *d, struct pt_counts *v)
{
	int rd = x->dev.ops->snap(&x->dev, after, d);
	int rv = x->drv.ops->snap(&x->drv, after, v);

	if (rv || (rd && run_receiver(x) == &x->dev)) {
		run_fail(x, "no counters from %s (it stopped reporting)", rv ? x->drv.what : x->dev.what);
		return false;
	}
	return true;
}

static bool measure(struct run *x)
{
	bool dev_receives = run_receiver(x) == &x->dev;
	double clock = 0;

	if (x->c->warmup > 0 && !timed(x, " warm-up", x->c->warmup, &clock, false))
		return false;
	x->t0 = pt_now_ns();
	cpu_read(x, 0);
	set_measure(x, 1);
	if (!snap_both(x, x->t0, &x->d0, &x->v0))
		return false;
	edges_reserve(x, x->c->duration, interval(x));
	edge_add(x, dev_receives ? &x->d0 : &x->v0, false);
	if (!timed(x, "", x->c->duration, &clock, true))
		return false;
	x->t1 = pt_now_ns();
	cpu_read(x, 1);
	set_measure(x, 0);
	if (!snap_both(x, x->t1, &x->d1, &x->v1))
		return false;
	edge_add(x, dev_receives ? &x->d1 : &x->v1, true);
	return true;
}

/* Stop both, the receiver last so it counts every frame the sender's side delivered. */
static void finish(struct run *x)
{
	bool device_first = x->c->test != PT_RR && !x->c->pair && x->c->dir == PT_RX;
	struct pt_side *first = device_first ? &x->dev : &x->drv;
	struct pt_side *second = device_first ? &x->drv : &x->dev;

	first->ops->stop(first);
	second->ops->stop(second);
}

void pt_run(const struct pt_opts *o, const struct pt_cfg *c, struct pt_result *r)
{
	static unsigned seq;
	struct run x = { .o = o, .c = c, .r = r };
	const char *why, *dir = pt_tmpdir();
	bool ok;

	result_init(r, c);
	r->touched = run_touched(o, c);
	why = pt_cfg_check(c);
	if (!why)
		why = not_available(o, c);
	if (why) {
		/* Settings that contradict each other are the user's error; a
		 * combination a tool cannot run yet is a row without a number. */
		r->status = pt_cfg_check(c) ? PT_ERR : PT_NA;
		snprintf(r->reason, sizeof(r->reason), "%s", why);
		return;
	}
	if (!dir) {
		run_fail(&x, "cannot create a temporary directory");
		return;
	}
	r->rtt_ns = pt_rtt_probe(c->dev_cpu, c->drv_cpu, 0.05);
	pt_side_device(&x.dev, o, c);
	pt_side_driver(&x.drv, o, c);
	seq++;
	for (unsigned i = 0; i < 2; i++) {
		snprintf(x.dev.sock[i], sizeof(x.dev.sock[i]), "%s/%u-%c.sock", dir, seq, 'a' + i);
		memcpy(x.drv.sock[i], x.dev.sock[i], sizeof(x.drv.sock[i]));
	}
	/* An external backend's sockets: the pair's A and B, or the one driver's. */
	for (unsigned i = 0; c->connect && i < 2; i++) {
		const char *path = i ? c->connect_b : c->connect;

		if (path) {
			snprintf(x.dev.sock[i], sizeof(x.dev.sock[i]), "%s", path);
			memcpy(x.drv.sock[i], x.dev.sock[i], sizeof(x.drv.sock[i]));
		}
	}
	ok = start_side(&x, &x.dev, c->device == PT_DEV_DPDK ? 60 : 10) &&
	     start_side(&x, &x.drv, c->driver == PT_DRV_DPDK || c->listen ? 60 : 20);
	ok = ok && measure(&x);
	finish(&x);
	if (pt_interrupted)
		run_fail(&x, "interrupted");
	if (ok)
		run_compute(&x);
	x.dev.ops->stop(&x.dev);
	x.drv.ops->stop(&x.drv);
	wk_shm_destroy(x.drv.shm);
	if (!c->connect)
		for (unsigned i = 0; i < 2; i++)
			unlink(x.dev.sock[i]);
}
