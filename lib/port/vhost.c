/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user port, control half: the guest's device (<uvnet/device.h>:
 * the socket, ours to listen on or to connect to and keep reconnecting:
 * client, for QEMU's server=on; the backend session; its rings) in
 * uvnetd's loop, and what the port does when a ring becomes ready or
 * stops. Everything here runs on the control thread while the data-path
 * threads are parked (uvnetd's rule), so it may change what they use. The
 * data path is vhost_data.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "port/vhost_port.h"
#include "ring/ring.h"
#include "util/log.h"
#include "util/sys.h"

#define RECONNECT_NS 1000000000ull
/* How often started-but-disabled TX rings are emptied. */
#define DRAIN_NS 100000000ull
#define PAIRS_GAP_NS 10000000ull
/* A control queue without a kick fd is looked at this often. */
#define CTRL_POLL_NS 10000000ull
#define MSG_BUDGET 64u
#define MSG_WINDOW_NS 100000000ull
#define ACCEPT_BUDGET 16u
#define ACCEPT_WINDOW_NS 100000000ull

_Static_assert(UVN_PORT_MAX_QUEUES == UVN_DEV_MAX_QUEUE_PAIRS, "a port queue is a device queue pair");

void uvn_port_vhost_set_zerocopy(struct uvn_port *port, int mode)
{
	struct vhost_port *v = (struct vhost_port *)port;

	v->env.zerocopy = mode;
	uvn_dev_set_zerocopy(v->dev, (enum uvn_dev_zc)mode, v->env.zc_min, v->env.zc_max_held);
}

/* --------------------------------------------------------- device events */

/*
 * The queue pairs in use decide which rings the workers serve, so a change
 * is applied with them parked: from a one-shot timer (not light), at most
 * once per PAIRS_GAP_NS whatever a guest asks, taking the latest request.
 */
static void on_pairs(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	uvn_timer_stop(v->loop, h);
	v->pairs_on = v->pairs_req;
	v->pairs_at = uvn_now_ns();
}

/* The device checked @pairs against the pairs offered. */
static int set_pairs(void *ctx, unsigned pairs)
{
	struct vhost_port *v = ctx;
	uint64_t now = uvn_now_ns(), at = v->pairs_at + PAIRS_GAP_NS;

	v->pairs_req = pairs;
	if (v->pairs_h.fd >= 0 || pairs == v->pairs_on)
		return 0;
	v->pairs_h = (struct uvn_handler){ .fd = -1, .fn = on_pairs, .ctx = v };
	if (uvn_timer_start(v->loop, &v->pairs_h, at > now ? at - now : 1, 0)) {
		UVN_ERR("%s: cannot start the queue-pairs timer", v->base.name);
		return -ENOMEM;
	}
	return 0;
}

/* Stop listening to the control queue's kicks, or stop polling it
 * (stopped, or broken for good). */
static void ctrl_unwatch(struct vhost_port *v)
{
	uvn_loop_close(v->loop, &v->ctrl_h); /* our kick fd copy, or the poll timer */
}

static bool ctrl_broken(struct vhost_port *v)
{
	const struct uvn_netdev_q *nq = uvn_dev_netq(v->dev, UVN_DEV_CTRL_RING);

	return nq && nq->broken;
}

/*
 * The control queue is answered here, on the control thread, beside the
 * running workers (light): its ring is no worker's, and the one command
 * that changes what they use, VQ_PAIRS_SET, takes effect through
 * set_pairs' timer. So a guest kicking it as fast as it can costs the
 * switch one eventfd read per wake-up, never a park of every worker. One
 * pass per event (the device bounds a pass to the ring): commands left
 * over when notifications are back on, the port kicks itself (the kick
 * fd is non-blocking) and the loop returns after whatever else is ready.
 * A broken queue is not served again: its kicks are not even read.
 */
static void ctrl_pass(struct vhost_port *v)
{
	uint64_t one = 1;

	uvn_dev_ctrl(v->dev);
	if (ctrl_broken(v)) {
		ctrl_unwatch(v);
		return;
	}
	if (uvn_dev_ctrl_arm(v->dev) || v->ctrl_h.fd < 0 || v->ctrl_polled)
		return;
	if (write(v->ctrl_h.fd, &one, sizeof(one)) == sizeof(one))
		v->ctrl_self_kicks++;
}

static void on_ctrl_kick(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;
	uint64_t n;

	(void)events;
	if (read(h->fd, &n, sizeof(n)) == sizeof(n)) {
		/* the guest's kicks, not ours */
		n -= n < v->ctrl_self_kicks ? n : v->ctrl_self_kicks;
		atomic_fetch_add_explicit(&v->kicks, n, memory_order_relaxed);
	}
	v->ctrl_self_kicks = 0;
	if (uvn_dev_netq(v->dev, UVN_DEV_CTRL_RING))
		ctrl_pass(v);
}

static void on_ctrl_tick(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	uvn_timer_ack(h);
	if (uvn_dev_netq(v->dev, UVN_DEV_CTRL_RING))
		ctrl_pass(v);
}

/*
 * Our own copy of the control queue's kick fd in the loop: its
 * registration ends with the copy (ctrl_unwatch), whenever the session
 * closes its fd. A queue set up without one (NOFD: "poll me") is looked
 * at on a timer instead; commands are not worth a busy poll.
 */
static void ctrl_start(struct vhost_port *v)
{
	int kick = uvn_dev_ctrl_fd(v->dev);
	int fd = kick >= 0 ? fcntl(kick, F_DUPFD_CLOEXEC, 0) : -1;

	v->ctrl_polled = kick < 0;
	if (v->ctrl_polled) {
		v->ctrl_h = (struct uvn_handler){ .fd = -1, .fn = on_ctrl_tick, .ctx = v, .light = true };
		if (uvn_timer_start(v->loop, &v->ctrl_h, CTRL_POLL_NS, CTRL_POLL_NS))
			UVN_ERR("%s: cannot poll the control queue: its commands go unanswered",
				v->base.name);
		ctrl_pass(v);
		return;
	}
	v->ctrl_h = (struct uvn_handler){ .fd = fd, .fn = on_ctrl_kick, .ctx = v, .light = true };
	if (fd >= 0 && uvn_loop_add(v->loop, &v->ctrl_h, EPOLLIN)) {
		close(fd);
		v->ctrl_h.fd = -1;
	}
	/* Commands may be waiting from before a reconnect. */
	ctrl_pass(v);
}

/* The device set ring @ring up, or is about to let go of it. The data-path
 * thread that gets a queue looks at it once before sleeping. */
static void ring_ready(void *ctx, unsigned ring, bool ready)
{
	struct vhost_port *v = ctx;
	struct vq_slot *s = ring == UVN_DEV_CTRL_RING ? NULL
			    : ring & 1 ? &v->tx[ring / 2] : &v->rx[ring / 2];

	if (ready) {
		if (!s)
			ctrl_start(v);
		return;
	}
	if (!s)
		ctrl_unwatch(v);
	uvn_vhost_add_q(v, &v->gone, ring);
	if (s)
		s->mtu_drops = s->filtered = 0;
}

static int set_features(void *ctx, uint64_t features)
{
	struct vhost_port *v = ctx;

	/* Without MQ the guest uses one pair; with it, one until it says more. */
	v->pairs_on = uvn_has_feature(features, VIRTIO_NET_F_MQ) ? v->cfg.queues : 1;
	v->pairs_req = v->pairs_on;
	uvn_timer_stop(v->loop, &v->pairs_h);
	/* A new driver starts from a reset device: promiscuous. A filter QEMU
	 * reports is QEMU's to change. */
	if (!v->qmp)
		uvn_rx_filter_reset(&v->filter);
	return 0;
}

/*
 * After a migration the switch must learn at once that the guest is
 * behind this port now, and the uplinks with it; a guest with
 * GUEST_ANNOUNCE sends its own gratuitous ARP, one without it has QEMU
 * ask us for a RARP from its MAC (as DPDK's vhost does). The frame goes in
 * through rx queue 0 as if the guest had sent it: the FDB moves and the
 * broadcast floods. The thread polling that queue is woken through the
 * guest's kick eventfd (the frame waits there until the queue is ready).
 */
static void send_rarp(void *ctx, const uint8_t mac[6])
{
	struct vhost_port *v = ctx;
	int kick = uvn_dev_kick_fd(v->dev, 0);
	uint64_t one = 1;

	memcpy(v->rarp_mac, mac, sizeof(v->rarp_mac));
	atomic_store_explicit(&v->rarp_pending, true, memory_order_release);
	if (kick >= 0 && !v->env.poll_mode && write(kick, &one, sizeof(one)) != sizeof(one))
		UVN_DEBUG("%s: cannot wake rx queue 0 for the RARP", v->base.name);
}

static const struct uvn_dev_ops device_ops = {
	.queue_ready = ring_ready,
	.set_features = set_features,
	.set_pairs = set_pairs,
	.send_rarp = send_rarp,
};

/* ----------------------------------------------------------- connection */

/*
 * A started but disabled TX ring is still the device's to empty. Such rings
 * are not handed to the data path; the control thread empties them every
 * DRAIN_NS, at most DISCARD_BUDGET chains per ring each time: a guest that
 * keeps refilling its ring must not keep the control thread (and, behind
 * it, every parked worker and SIGTERM) here. What is left waits for the
 * next tick.
 */
#define DISCARD_BUDGET 256

static void on_drain(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	uvn_timer_ack(h);
	v->discarded += uvn_dev_discard_disabled(v->dev, DISCARD_BUDGET);
}

static void start_reconnect(struct vhost_port *v);

/* listen_h is light while a frontend is attached: all it does then is
 * refuse the next one, which touches nothing the workers use. */
static void set_session(struct vhost_port *v, struct uvn_vu_backend *be)
{
	v->be = be;
	v->listen_h.light = be != NULL;
}

static void drop_connection(struct vhost_port *v)
{
	uvn_timer_stop(v->loop, &v->msg_h);
	if (!v->conn_paused)
		uvn_loop_del(v->loop, &v->conn_h);
	v->conn_paused = false;
	v->throttled = 0;
	/* The message budget is the port's, not the connection's: a frontend
	 * that hangs up and connects again does not get a fresh one. */
	v->ctrl_self_kicks = 0;
	uvn_loop_del(v->loop, &v->fault_h); /* before the session closes its eventfd */
	v->fault_h.fd = -1;
	uvn_timer_stop(v->loop, &v->pairs_h); /* a change for a guest that is gone */
	uvn_dev_disconnect(v->dev); /* stops every queue through ring_ready() */
	/* A RARP not sent yet announced this guest, not the next one. */
	atomic_store_explicit(&v->rarp_pending, false, memory_order_relaxed);
	set_session(v, NULL);
	v->conn_h.fd = -1;
	UVN_INFO("%s: frontend disconnected", v->base.name);
	if (v->cfg.client)
		start_reconnect(v);
}

/* One more in the window that began at *@start (a new one once @window_ns
 * went by). @return 0 while under @max, else the ns until the window ends */
static uint64_t window_take(uint64_t *start, unsigned *count, unsigned max, uint64_t window_ns)
{
	uint64_t now = uvn_now_ns();

	if (now - *start >= window_ns) {
		*start = now;
		*count = 0;
	}
	if (++*count < max)
		return 0;
	return *start + window_ns - now;
}

/* The budget's window is over: listen to the frontend again. Light: it
 * only puts the connection back in the control thread's own loop. */
static void on_msg_window(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	uvn_timer_stop(v->loop, h);
	v->msg_count = 0;
	if (v->be && uvn_loop_add(v->loop, &v->conn_h, EPOLLIN) == 0)
		v->conn_paused = false;
}

/*
 * Every vhost-user message is handled with the workers parked, so a
 * frontend that sends them without pause would stall every other port's
 * traffic. Each port gets MSG_BUDGET messages per MSG_WINDOW_NS, whichever
 * connection sends them (far more than a QEMU or DPDK set-up or migration
 * sends); past that the socket is not read until the window ends.
 */
static void msg_budget(struct vhost_port *v)
{
	uint64_t wait = window_take(&v->msg_window, &v->msg_count, MSG_BUDGET, MSG_WINDOW_NS);

	if (!wait)
		return;
	v->msg_h = (struct uvn_handler){ .fd = -1, .fn = on_msg_window, .ctx = v, .light = true };
	if (uvn_timer_start(v->loop, &v->msg_h, wait, 0))
		return; /* no timer: keep reading rather than never again */
	uvn_loop_del(v->loop, &v->conn_h);
	v->conn_paused = true;
	if (!v->throttled++)
		UVN_WARN("%s: frontend sends more than %u messages in %llu ms: read in step",
			 v->base.name, MSG_BUDGET, (unsigned long long)(MSG_WINDOW_NS / 1000000));
}

static void on_message(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	if (uvn_dev_handle(v->dev) < 0)
		drop_connection(v);
	else
		msg_budget(v);
}

/* A mapping of this frontend's memory faulted: it shrank the file. Runs
 * with the workers parked, like on_message. */
static void on_mem_fault(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	if (uvn_dev_check_memory(v->dev) < 0)
		drop_connection(v);
}

/* The device has a new session: listen to it. */
static int watch_session(struct vhost_port *v)
{
	int r;

	set_session(v, uvn_dev_backend(v->dev));
	v->conn_h = (struct uvn_handler){ .fd = uvn_dev_fd(v->dev), .fn = on_message, .ctx = v };
	r = uvn_loop_add(v->loop, &v->conn_h, EPOLLIN);
	if (!r) {
		v->fault_h = (struct uvn_handler){ .fd = uvn_dev_fault_fd(v->dev),
						   .fn = on_mem_fault, .ctx = v };
		r = uvn_loop_add(v->loop, &v->fault_h, EPOLLIN);
		if (r)
			uvn_loop_del(v->loop, &v->conn_h);
	}
	if (r) {
		v->fault_h.fd = -1;
		uvn_dev_disconnect(v->dev);
		set_session(v, NULL);
		return r;
	}
	UVN_INFO("%s: frontend connected", v->base.name);
	return 0;
}

/* The accept window is over: take connections again. Light: it only puts
 * the listening socket back in the control thread's own loop. */
static void on_accept_window(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	uvn_timer_stop(v->loop, h);
	v->accepts = 0;
	if (uvn_loop_add(v->loop, &v->listen_h, EPOLLIN) == 0)
		v->listen_paused = false;
}

/*
 * Taking a frontend in parks the workers, and so does its hanging up: a
 * peer that connects and hangs up without pause would stall every other
 * port. The socket gets ACCEPT_BUDGET of them per ACCEPT_WINDOW_NS (a QEMU
 * or DPDK restart needs one), then is not accepted from until the window
 * ends; the connections wait in its backlog.
 */
static void accept_budget(struct vhost_port *v)
{
	uint64_t wait = window_take(&v->accept_window, &v->accepts, ACCEPT_BUDGET,
				    ACCEPT_WINDOW_NS);

	if (!wait)
		return;
	v->accept_h = (struct uvn_handler){ .fd = -1, .fn = on_accept_window, .ctx = v,
					    .light = true };
	if (uvn_timer_start(v->loop, &v->accept_h, wait, 0))
		return; /* no timer: keep accepting rather than never again */
	uvn_loop_del(v->loop, &v->listen_h);
	v->listen_paused = true;
	if (!v->accept_throttled++)
		UVN_WARN("%s: frontends attach more than %u times in %llu ms: accepted in step",
			 v->base.name, ACCEPT_BUDGET, (unsigned long long)(ACCEPT_WINDOW_NS / 1000000));
}

static void on_accept(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	if (v->be) {
		/* Light (set_session): refused without parking anyone. */
		if (uvn_dev_accept(v->dev) == -EBUSY)
			atomic_fetch_add_explicit(&v->refused, 1, memory_order_relaxed);
		return;
	}
	/* mtu=: QEMU's host_mtu (what the guest is told) up to it */
	uvn_dev_set_mtu(v->dev, v->base.conf.mtu);
	if (uvn_dev_accept(v->dev) == 0)
		watch_session(v);
	accept_budget(v);
}

static void on_retry(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	uvn_timer_ack(h);
	if (v->be)
		return;
	uvn_dev_set_mtu(v->dev, v->base.conf.mtu);
	if (uvn_dev_connect(v->dev))
		return;
	uvn_timer_stop(v->loop, &v->retry_h);
	watch_session(v);
}

static void start_reconnect(struct vhost_port *v)
{
	v->retry_h = (struct uvn_handler){ .fd = -1, .fn = on_retry, .ctx = v };
	if (uvn_timer_start(v->loop, &v->retry_h, 1, RECONNECT_NS))
		UVN_ERR("%s: cannot start the reconnect timer", v->base.name);
}

void uvn_vhost_destroy(struct uvn_port *port)
{
	struct vhost_port *v = (struct vhost_port *)port;

	if (v->be) {
		if (!v->conn_paused)
			uvn_loop_del(v->loop, &v->conn_h);
		uvn_loop_del(v->loop, &v->fault_h);
		uvn_dev_disconnect(v->dev);
	}
	uvn_timer_stop(v->loop, &v->msg_h);
	uvn_timer_stop(v->loop, &v->accept_h);
	uvn_timer_stop(v->loop, &v->retry_h);
	uvn_timer_stop(v->loop, &v->drain_h);
	uvn_timer_stop(v->loop, &v->pairs_h);
	uvn_qmp_destroy(v->qmp);
	if (v->listen_h.fd >= 0 && !v->listen_paused)
		uvn_loop_del(v->loop, &v->listen_h);
	uvn_dev_destroy(v->dev); /* closes the socket, removes its file */
	free(v);
}

/* The guest's device: listening unless client; the port's receive filter
 * is the one its control queue sets (QEMU keeps its own and tells it
 * through QMP instead: qmp=). */
static int make_device(struct vhost_port *v)
{
	struct uvn_dev_cfg dc = {
		.path = v->path,
		.client = v->cfg.client,
		.poll = v->env.poll_mode,
		.queue_pairs = v->cfg.queues,
		.zerocopy = (enum uvn_dev_zc)v->env.zerocopy,
		.zc_min = v->env.zc_min,
		.zc_max_held = v->env.zc_max_held,
		.max_mem = v->cfg.max_mem,
		.name = v->base.name, /* name= renames the port after this */
		.ops = &device_ops,
		.ctx = v,
	};
	int r = uvn_dev_create(&dc, &v->dev);

	if (!r)
		uvn_dev_set_rx_filter(v->dev, &v->filter);
	return r;
}

int uvn_port_vhost_create(const struct uvn_vhost_port_cfg *cfg, const struct uvn_port_env *env,
			  struct uvn_port **out)
{
	struct vhost_port *v;
	int r;

	if (!cfg->queues || cfg->queues > UVN_PORT_MAX_QUEUES ||
	    strlen(cfg->path) >= sizeof(v->path) ||
	    (cfg->qmp && strlen(cfg->qmp) >= sizeof(v->qmp_path)) ||
	    (cfg->nic && strlen(cfg->nic) >= sizeof(v->nic)))
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->base.ops = &uvn_vhost_ops;
	snprintf(v->base.name, sizeof(v->base.name), "vhost:%s", cfg->path);
	v->cfg = *cfg;
	snprintf(v->path, sizeof(v->path), "%s", cfg->path);
	v->cfg.path = v->path;
	snprintf(v->qmp_path, sizeof(v->qmp_path), "%s", cfg->qmp ? cfg->qmp : "");
	snprintf(v->nic, sizeof(v->nic), "%s", cfg->nic ? cfg->nic : "");
	v->cfg.qmp = cfg->qmp ? v->qmp_path : NULL;
	v->cfg.nic = cfg->nic ? v->nic : NULL;
	uvn_rx_filter_reset(&v->filter);
	v->env = *env;
	v->loop = env->loop;
	v->pairs_on = v->pairs_req = 1;
	v->senders = 1;
	v->listen_h.fd = v->conn_h.fd = v->retry_h.fd = v->drain_h.fd = v->fault_h.fd = -1;
	v->pairs_h.fd = v->msg_h.fd = v->ctrl_h.fd = v->accept_h.fd = -1;
	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++) {
		v->rx[i] = (struct vq_slot){ .port = v, .qp = i };
		v->tx[i] = (struct vq_slot){ .port = v, .qp = i };
		atomic_flag_clear(&v->rx[i].lock);
	}
	/* Light: it touches only rings not handed to the data path. */
	v->drain_h = (struct uvn_handler){ .fd = -1, .fn = on_drain, .ctx = v, .light = true };
	if (uvn_timer_start(v->loop, &v->drain_h, DRAIN_NS, DRAIN_NS)) {
		free(v);
		return -ENOMEM;
	}
	r = make_device(v);
	if (r) {
		UVN_ERR("%s: listen: %s", v->base.name, strerror(-r));
		uvn_vhost_destroy(&v->base);
		return r;
	}
	if (cfg->client) {
		start_reconnect(v);
	} else {
		v->listen_h = (struct uvn_handler){ .fd = uvn_dev_listen_fd(v->dev), .fn = on_accept,
						    .ctx = v };
		r = uvn_loop_add(v->loop, &v->listen_h, EPOLLIN);
		if (r) {
			uvn_vhost_destroy(&v->base);
			return r;
		}
	}
	if (v->cfg.qmp) {
		r = uvn_qmp_create(v->loop, v->cfg.qmp, v->cfg.nic, &v->filter, v->path, &v->qmp);
		if (r) {
			UVN_ERR("%s: qmp=%s nic=%s: %s", v->path, v->cfg.qmp,
				v->cfg.nic ? v->cfg.nic : "", strerror(-r));
			uvn_vhost_destroy(&v->base);
			return r;
		}
	}
	*out = &v->base;
	return 0;
}
