/* SPDX-License-Identifier: MIT */
/*
 * uvnetd: set up pools, ports and the forwarding mode, then run the data
 * path (busy-polling, or sleeping on kicks) until SIGINT/SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sys.h"
#include "uvnetd.h"

#define BURST 32
#define SMALL_BUF 2048
#define BIG_BUF (65536 + 64) /* a 64 KB GSO frame and its Ethernet header */
/* How many poll rounds between looks at the control path. */
#define CONTROL_EVERY 256

/* Bring in everything queue @q of @p has, forwarding it. */
static void drain(struct uvnetd *d, struct uvn_port *p, unsigned q)
{
	struct uvn_pkt *pkts[BURST];
	unsigned n;

	while ((n = p->ops->rx(p, q, pkts, BURST))) {
		uvn_fwd_burst(&d->fwd, p, q, pkts, n);
		if (p->ops->complete)
			p->ops->complete(p, q);
	}
}

/* Event mode: a port said queue @q has frames. */
static void on_wake(struct uvn_port *p, unsigned q)
{
	struct uvnetd *d = p->owner;

	do
		drain(d, p, q);
	while (!p->ops->arm(p, q));
}

static void on_tap(struct uvn_handler *h, uint32_t events)
{
	(void)events;
	on_wake(h->ctx, 0);
}

static void on_signal(struct uvn_handler *h, uint32_t events)
{
	struct signalfd_siginfo si;
	struct uvnetd *d = h->ctx;

	(void)events;
	if (read(h->fd, &si, sizeof(si)) == sizeof(si))
		d->stop = true;
}

static void on_stats(struct uvn_handler *h, uint32_t events)
{
	(void)events;
	uvn_timer_ack(h);
	uvnetd_stats_interval(h->ctx);
}

static int poll_round(struct uvnetd *d)
{
	int moved = 0;

	for (unsigned i = 0; i < d->nports; i++) {
		struct uvn_port *p = d->ports[i];
		unsigned nq = p->ops->nqueues(p);

		for (unsigned q = 0; q < nq; q++) {
			struct uvn_pkt *pkts[BURST];
			unsigned n = p->ops->rx(p, q, pkts, BURST);

			if (n) {
				uvn_fwd_burst(&d->fwd, p, q, pkts, n);
				if (p->ops->complete)
					p->ops->complete(p, q);
				moved += (int)n;
			}
			if (d->o.mode == UVN_FWD_TXONLY)
				moved += (int)uvn_fwd_generate(&d->fwd, p, q);
		}
	}
	return moved;
}

int uvnetd_run(struct uvnetd *d)
{
	bool busy = d->o.poll || d->o.mode == UVN_FWD_TXONLY;
	unsigned round = 0;

	if (d->o.cpu >= 0 && uvn_pin_thread(d->o.cpu))
		UVN_WARN("cannot pin to CPU %d", d->o.cpu);
	while (!d->stop) {
		if (!busy) {
			uvn_loop_run_once(d->loop, -1);
			continue;
		}
		poll_round(d);
		if (++round % CONTROL_EVERY == 0)
			uvn_loop_run_once(d->loop, 0);
	}
	return 0;
}

static int setup_signals(struct uvnetd *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	d->sig_h = (struct uvn_handler){ .fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK),
					 .fn = on_signal, .ctx = d };
	if (d->sig_h.fd < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return uvn_loop_add(d->loop, &d->sig_h, EPOLLIN);
}

static int setup_pools(struct uvnetd *d)
{
	struct uvn_pkt_pool_cfg small = { .count = 16384, .buf_size = SMALL_BUF, .name = "small" };
	struct uvn_pkt_pool_cfg big = { .count = 512, .buf_size = BIG_BUF, .name = "big" };
	struct uvn_pkt_pool_cfg gen = { .count = 1024, .buf_size = SMALL_BUF, .name = "txonly" };
	struct uvn_pkt_pool_cfg ext = { .count = 4096, .name = "zerocopy" };
	int r = uvn_pkt_pool_create(&small, &d->small);

	if (!r)
		r = uvn_pkt_pool_create(&big, &d->big);
	if (!r)
		r = uvn_pkt_pool_create(&gen, &d->gen);
	if (!r)
		r = uvn_pkt_pool_create(&ext, &d->ext);
	return r;
}

static int setup_ports(struct uvnetd *d)
{
	struct uvn_port_env env = {
		.loop = d->loop, .small = d->small, .big = d->big, .ext = d->ext,
		.poll_mode = d->o.poll, .zerocopy = d->o.zerocopy, .zc_min = d->o.zc_min,
		.zc_max_held = d->o.zc_max_held,
	};

	for (unsigned i = 0; i < d->o.nports; i++) {
		struct uvn_port *p;
		int r = uvn_port_create(d->o.port_specs[i], &env, &p);

		if (r)
			return r;
		d->ports[d->nports++] = p;
		p->wake = on_wake;
		p->owner = d;
		/* locally administered, unique per port: 02:75:76:00:00:<id> */
		memcpy(p->mac, "\x02\x75\x76\x00\x00", 5);
		p->mac[5] = (uint8_t)i;
		r = uvn_fwd_add_port(&d->fwd, p);
		if (r)
			return r;
		if (!strcmp(p->ops->kind, "tap") && !d->o.poll) {
			struct uvn_handler *h = &d->tap_h[i];

			*h = (struct uvn_handler){ .fd = uvn_port_tap_fd(p), .fn = on_tap, .ctx = p };
			r = uvn_loop_add(d->loop, h, EPOLLIN);
			if (r)
				return r;
		}
	}
	return 0;
}

static void teardown(struct uvnetd *d)
{
	uvnetd_ctl_stop(d);
	for (unsigned i = 0; i < d->nports; i++)
		d->ports[i]->ops->destroy(d->ports[i]);
	uvn_fwd_fini(&d->fwd);
	uvn_pkt_pool_destroy(d->small);
	uvn_pkt_pool_destroy(d->big);
	uvn_pkt_pool_destroy(d->gen);
	uvn_pkt_pool_destroy(d->ext);
	uvn_loop_destroy(d->loop);
}

int main(int argc, char **argv)
{
	static struct uvnetd d;
	int r;

	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return uvnetd_ctl_client(argc - 2, argv + 2);
	d.ctl_h.fd = -1;
	if (uvnetd_parse(argc, argv, &d.o))
		return 2;
	r = uvn_loop_create(&d.loop);
	if (!r)
		r = setup_signals(&d);
	if (!r)
		r = setup_pools(&d);
	if (!r)
		r = uvn_fwd_init(&d.fwd, d.o.mode, d.gen, d.o.txonly_size);
	d.fwd.copy_pool = d.small;
	if (!r)
		r = setup_ports(&d);
	if (!r && d.o.ctl_path && (r = uvnetd_ctl_start(&d, d.o.ctl_path)))
		UVN_ERR("control socket %s: %s", d.o.ctl_path, strerror(-r));
	if (!r && d.o.stats_interval > 0) {
		uint64_t ns = (uint64_t)(d.o.stats_interval * 1e9);

		d.stats_h = (struct uvn_handler){ .fd = -1, .fn = on_stats, .ctx = &d };
		r = uvn_timer_start(d.loop, &d.stats_h, ns, ns);
	}
	if (r) {
		UVN_ERR("startup failed: %s", strerror(-r));
		teardown(&d);
		return 1;
	}
	d.start_ns = d.last_ns = uvn_now_ns();
	UVN_INFO("running: %u ports, %s mode", d.nports, d.o.poll ? "poll" : "event");
	uvnetd_run(&d);
	if (!d.o.quiet)
		uvnetd_stats_final(&d);
	teardown(&d);
	return 0;
}
