/* SPDX-License-Identifier: MIT */
/*
 * uvnetd: set up ports and the forwarding mode, start the data-path
 * workers, and run the control path (vhost-user sockets, timers, signals,
 * the control socket) on this thread until SIGINT/SIGTERM; SIGHUP reloads
 * the --config file (config.c). Control work
 * runs with the workers parked, so it may change anything they use; only
 * handlers that read counters (or park the workers themselves) do not.
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

#define SMALL_BUF 2048
#define BIG_BUF (65536 + 64) /* a 64 KB GSO frame and its Ethernet header */

static void on_signal(struct uvn_handler *h, uint32_t events)
{
	struct signalfd_siginfo si;
	struct uvnetd *d = h->ctx;

	(void)events;
	if (read(h->fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP)
		uvnetd_reload(d);
	else
		atomic_store(&d->stop, true);
}

static void on_stats(struct uvn_handler *h, uint32_t events)
{
	(void)events;
	uvn_timer_ack(h);
	uvnetd_stats_interval(h->ctx);
}

/* Control events wait here while the workers run; they are handled with
 * the workers parked, and queues are given out again afterwards. Light
 * handlers (the stats timer reads counters, a port's drain timer empties
 * rings no worker has, the control socket parks them only for `set`) run
 * beside the workers: parking them costs each a wake-up, those timers fire
 * 5-10 times a second, and a monitor polls `show` as often as it likes. */
static void control_loop(struct uvnetd *d)
{
	while (!atomic_load(&d->stop)) {
		if (uvn_loop_wait(d->loop, -1) <= 0)
			continue;
		if (uvn_loop_ready_light(d->loop)) {
			uvn_loop_dispatch(d->loop);
			continue;
		}
		if (uvnetd_quiesce(d)) {
			uvn_loop_dispatch(d->loop);
			uvnetd_assign(d);
		}
		uvnetd_resume(d);
	}
}

static int setup_signals(struct uvnetd *d)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	/* Blocked before any thread starts, so only the signalfd sees them. */
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	/* Light: a stop only sets a flag, and a reload parks the workers
	 * only while it changes their tables (ports.c), as ctl does. */
	d->sig_h = (struct uvn_handler){ .fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK),
					 .fn = on_signal, .ctx = d, .light = true };
	if (d->sig_h.fd < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return uvn_loop_add(d->loop, &d->sig_h, EPOLLIN);
}

static int setup_ports(struct uvnetd *d)
{
	struct uvn_pkt_pool_cfg small = { .count = 4096, .buf_size = SMALL_BUF, .name = "tap" };
	struct uvn_pkt_pool_cfg big = { .count = 256, .buf_size = BIG_BUF, .name = "tap-big" };
	int r = uvn_pkt_pool_create(&small, &d->small);

	if (!r)
		r = uvn_pkt_pool_create(&big, &d->big);
	if (r)
		return r;
	d->env = (struct uvn_port_env){
		.loop = d->loop, .small = d->small, .big = d->big, .poll_mode = d->o.poll,
		.zerocopy = d->o.zerocopy, .zc_min = d->o.zc_min, .zc_max_held = d->o.zc_max_held,
		.set_gid = d->o.set_gid, .sock_gid = d->o.sock_gid,
		.set_mode = d->o.set_mode, .sock_mode = d->o.sock_mode,
	};
	for (unsigned i = 0; !r && i < d->o.nports; i++)
		r = uvnetd_port_add(d, d->o.port_specs[i]);
	return r ? r : uvnetd_fdb_apply(d, &d->o, false);
}

static void teardown(struct uvnetd *d)
{
	uvnetd_workers_stop(d);
	uvnetd_ctl_stop(d);
	for (unsigned i = 0; i < d->fwd.nports; i++)
		if (d->fwd.ports[i])
			d->fwd.ports[i]->ops->destroy(d->fwd.ports[i]);
	uvn_fwd_fini(&d->fwd);
	uvn_pkt_pool_destroy(d->small);
	uvn_pkt_pool_destroy(d->big);
	uvn_loop_destroy(d->loop);
	for (unsigned i = 0; i < UVNETD_MAX_PORTS; i++)
		free(d->spec[i]);
	uvnetd_opts_free(&d->o);
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
	if (!r && !(r = uvn_fwd_init(&d.fwd, d.o.mode, d.o.txonly_size))) {
		d.fwd.txonly_count = d.o.txonly_count;
		atomic_store(&d.fwd.gen_left, d.o.txonly_count);
	}
	if (!r)
		r = setup_ports(&d);
	if (!r && d.o.ctl_path && (r = uvnetd_ctl_start(&d, d.o.ctl_path)))
		UVN_ERR("control socket %s: %s", d.o.ctl_path, strerror(-r));
	if (!r && d.o.stats_interval > 0) {
		uint64_t ns = (uint64_t)(d.o.stats_interval * 1e9);

		d.stats_h = (struct uvn_handler){ .fd = -1, .fn = on_stats, .ctx = &d, .light = true };
		r = uvn_timer_start(d.loop, &d.stats_h, ns, ns);
	}
	if (!r)
		r = uvnetd_workers_start(&d);
	if (r) {
		UVN_ERR("startup failed: %s", strerror(-r));
		teardown(&d);
		return 1;
	}
	d.start_ns = d.last_ns = uvn_now_ns();
	UVN_INFO("running: %u ports, %u workers, %s mode", d.fwd.nports, d.nworkers,
		 d.o.poll ? "poll" : "event");
	/* The workers were created parked: give them their queues. */
	if (uvnetd_quiesce(&d))
		uvnetd_assign(&d);
	uvnetd_resume(&d);
	/* Every socket listens and the workers serve: systemd may start the
	 * guests (Type=notify). */
	uvnetd_notify("READY=1");
	control_loop(&d);
	uvnetd_notify("STOPPING=1");
	uvnetd_workers_stop(&d); /* counters are final once they are gone */
	if (!d.o.quiet)
		uvnetd_stats_final(&d);
	teardown(&d);
	return 0;
}
