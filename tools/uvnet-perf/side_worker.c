/* SPDX-License-Identifier: MIT */
/* Our driver as a side: the worker process (worker.c) seen from uvnet-perf. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "side.h"

static void from_wk(const struct wk_counts *w, struct pt_counts *c)
{
	memset(c, 0, sizeof(*c));
	c->valid = true;
	c->t_ns = w->t_ns;
	c->tx_pkts = w->tx_pkts;
	c->tx_bytes = w->tx_bytes;
	c->rx_pkts = w->rx_pkts;
	c->rx_bytes = w->rx_bytes;
	c->have_bytes = true;
	c->drops = w->rx_drops + w->tx_drops;
	c->have_notif = true;
	c->kicks = w->kicks;
	c->calls = w->calls;
	c->trans = w->trans;
	c->timeouts = w->timeouts;
}

static int start(struct pt_side *s)
{
	int r;

	s->shm = wk_shm_create(s->c, s->sock[0], s->c->pair ? s->sock[1] : NULL);
	if (!s->shm) {
		snprintf(s->why, sizeof(s->why), "cannot map the worker's shared memory");
		return -ENOMEM;
	}
	s->child.name = "driver";
	s->child.on_line = NULL;
	r = pt_fork(&s->child, s->c->drv_cpu, wk_main, s->shm);
	if (r)
		snprintf(s->why, sizeof(s->why), "cannot fork the driver: %s", strerror(-r));
	s->pid = s->child.pid;
	return r;
}

static bool ready(struct pt_side *s)
{
	int st = atomic_load(&s->shm->state);

	if (st == WK_FAILED && !s->why[0])
		snprintf(s->why, sizeof(s->why), "%s", s->shm->msg);
	/* A failed worker is "ready" too: the caller looks at why. */
	return st != WK_STARTING || !pt_alive(&s->child);
}

static int snap(struct pt_side *s, uint64_t after_ns, struct pt_counts *out)
{
	struct wk_counts w;
	int r = wk_snapshot(s->shm, &w, 3.0); /* a loaded CPU may hold the worker back */

	(void)after_ns;
	if (r)
		return r;
	from_wk(&w, out);
	return 0;
}

static void stop(struct pt_side *s)
{
	struct wk_shm *sh = s->shm;
	uint64_t end = pt_now_ns() + 6000000000ull;
	int st;

	if (s->stopped || !sh)
		return;
	atomic_store(&sh->cmd, WK_STOP);
	/* The drain takes at most a few seconds (worker_loops.c). */
	while ((st = atomic_load_explicit(&sh->state, memory_order_acquire)) != WK_DONE &&
	       st != WK_FAILED && pt_alive(&s->child) && pt_now_ns() < end)
		pt_pump(10);
	if (st == WK_DONE || st == WK_FAILED)
		from_wk(&sh->final, &s->final);
	if (st == WK_FAILED && !s->why[0])
		snprintf(s->why, sizeof(s->why), "%s", sh->msg);
	else if (st != WK_DONE && st != WK_FAILED && !s->why[0])
		snprintf(s->why, sizeof(s->why), "the driver did not finish its drain");
	pt_stop(&s->child, SIGTERM, 2);
	s->stopped = true;
}

const struct pt_side_ops pt_worker_ops = { start, ready, snap, stop };

void pt_side_device(struct pt_side *s, const struct pt_opts *o, const struct pt_cfg *c)
{
	static unsigned ids;

	memset(s, 0, sizeof(*s));
	s->o = o;
	s->c = c;
	s->is_device = true;
	s->n = ++ids;
	s->child.out_fd = -1;
	switch (c->device) {
	case PT_DEV_UVNETD: s->ops = &pt_uvnetd_ops; s->what = "uvnetd"; break;
	case PT_DEV_DPDK: s->ops = &pt_testpmd_ops; s->what = "testpmd net_vhost"; break;
	default: s->ops = &pt_external_ops; s->what = "the external backend"; break;
	}
}

void pt_side_driver(struct pt_side *s, const struct pt_opts *o, const struct pt_cfg *c)
{
	static unsigned ids = 1000;

	memset(s, 0, sizeof(*s));
	s->o = o;
	s->c = c;
	s->n = ++ids;
	s->child.out_fd = -1;
	if (c->driver == PT_DRV_DPDK) {
		s->ops = &pt_testpmd_ops;
		s->what = "testpmd virtio-user";
	} else {
		s->ops = &pt_worker_ops;
		s->what = "uvnet's driver";
	}
}
