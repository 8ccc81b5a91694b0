/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user port, control half: the socket (ours to listen on, or to
 * connect to and keep reconnecting: client, for QEMU's server=on), the
 * backend session, and what to do when the backend says a virtqueue became
 * ready or stopped. Everything here runs on the control thread while the
 * data-path threads are parked (uvnetd's rule), so it may change what they
 * use. The data path is vhost_data.c.
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
#define MSG_BUDGET 64u
#define MSG_WINDOW_NS 100000000ull
/* Per guest TX queue: packets its frames become. */
#define Q_SMALL 2048
#define Q_BIG 64
#define Q_EXT 1024
#define SMALL_ROOM 2048
#define BIG_ROOM (65536 + 64)

void uvn_port_vhost_set_zerocopy(struct uvn_port *port, int mode)
{
	struct vhost_port *v = (struct vhost_port *)port;

	v->env.zerocopy = mode;
	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++)
		if (v->tx[i].vu)
			uvn_netdev_q_set_zerocopy(&v->tx[i].nq, (enum uvn_zc_mode)mode, v->env.zc_min,
						  v->env.zc_max_held, v->tx[i].ext);
}

/* ------------------------------------------------------- backend events */

static void notify_driver(void *ctx)
{
	uvn_vu_queue_notify(((struct vq_slot *)ctx)->vu);
}

static void log_write(void *ctx, const void *va, size_t len)
{
	uvn_vu_log_write(((struct vq_slot *)ctx)->port->be, va, len);
}

static void log_used(void *ctx)
{
	struct vq_slot *s = ctx;

	uvn_vu_log_used(s->port->be, s->vu);
}

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

static int set_pairs(void *ctx, unsigned pairs)
{
	struct vhost_port *v = ctx;
	uint64_t now = uvn_now_ns(), at = v->pairs_at + PAIRS_GAP_NS;

	if (pairs > v->cfg.queues)
		return -EINVAL;
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

/* Stop listening to a control queue's kicks (stopped, or broken for good). */
static void ctrl_unwatch(struct vhost_port *v, struct vq_slot *s)
{
	if (s->kick_h.fd < 0)
		return;
	uvn_loop_del(v->loop, &s->kick_h);
	close(s->kick_h.fd);
	s->kick_h.fd = -1;
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
static void ctrl_pass(struct vhost_port *v, struct vq_slot *s)
{
	uint64_t one = 1;
	bool armed;

	uvn_netdev_ctrl(&s->nq, set_pairs, v);
	if (s->nq.broken) {
		ctrl_unwatch(v, s);
		return;
	}
	armed = uvn_vq_dev_enable_notify(s->nq.vq);
	uvn_vhost_log_ring(s);
	if (armed || s->kick_h.fd < 0)
		return;
	if (write(s->kick_h.fd, &one, sizeof(one)) == sizeof(one))
		v->ctrl_self_kicks++;
}

static void on_ctrl_kick(struct uvn_handler *h, uint32_t events)
{
	struct vq_slot *s = h->ctx;
	struct vhost_port *v = s->port;
	uint64_t n;

	(void)events;
	if (read(h->fd, &n, sizeof(n)) == sizeof(n)) {
		/* the guest's kicks, not ours */
		n -= n < v->ctrl_self_kicks ? n : v->ctrl_self_kicks;
		atomic_fetch_add_explicit(&v->kicks, n, memory_order_relaxed);
	}
	v->ctrl_self_kicks = 0;
	if (s->vu)
		ctrl_pass(v, s);
}

/* Ring @idx: the queue pairs' rx and tx, then the control queue, at twice
 * the pairs offered with MQ and at 2 without it (spec: virtio-net device,
 * virtqueues). We offer CTRL_VQ only with MQ, so one pair has none. */
static struct vq_slot *slot_of(struct vhost_port *v, unsigned idx)
{
	unsigned pairs = uvn_has_feature(v->features, VIRTIO_NET_F_MQ) ? v->cfg.queues : 1;

	if (idx == 2 * pairs)
		return v->cfg.queues > 1 ? &v->ctrl : NULL;
	if (idx >= 2 * pairs)
		return NULL;
	return idx & 1 ? &v->tx[idx / 2] : &v->rx[idx / 2];
}

static void queue_stop(struct vhost_port *v, struct vq_slot *s, bool guest_tx)
{
	/* Forwarding is synchronous: whatever a burst borrowed went back
	 * before the control path runs, so nothing is held here. */
	uvn_netdev_tx_complete(&s->nq);
	uvn_netdev_q_fini(&s->nq);
	ctrl_unwatch(v, s);
	uvn_vhost_add_q(&v->gone, s, guest_tx);
	memset(&s->nq.st, 0, sizeof(s->nq.st));
	s->mtu_drops = 0;
	s->filtered = 0;
	s->vu = NULL;
	s->nq.vq = NULL;
}

static int make_pools(struct vq_slot *s)
{
	struct uvn_pkt_pool_cfg small = { .count = Q_SMALL, .buf_size = SMALL_ROOM, .name = "small" };
	struct uvn_pkt_pool_cfg big = { .count = Q_BIG, .buf_size = BIG_ROOM, .name = "big" };
	struct uvn_pkt_pool_cfg ext = { .count = Q_EXT, .name = "zerocopy" };

	if (s->small)
		return 0;
	if (uvn_pkt_pool_create(&small, &s->small) || uvn_pkt_pool_create(&big, &s->big) ||
	    uvn_pkt_pool_create(&ext, &s->ext))
		return -ENOMEM;
	return 0;
}

static void free_pools(struct vq_slot *s)
{
	uvn_pkt_pool_destroy(s->small);
	uvn_pkt_pool_destroy(s->big);
	uvn_pkt_pool_destroy(s->ext);
	s->small = s->big = s->ext = NULL;
}

static void queue_start(struct vhost_port *v, struct vq_slot *s, struct uvn_vu_queue *q,
			bool guest_tx)
{
	s->vu = q;
	uvn_netdev_q_init(&s->nq, q->vq, v->features, guest_tx);
	s->nq.filter = &v->filter; /* the control queue's commands set it */
	s->nq.notify = notify_driver;
	s->nq.notify_ctx = s;
	/* Paused and resumed around any change of the dirty log: decided here. */
	if (uvn_vu_backend_logging(v->be)) {
		s->nq.log_write = log_write;
		s->nq.log_used = log_used;
		s->nq.log_ctx = s;
	} else {
		s->nq.log_write = NULL;
		s->nq.log_used = NULL;
	}
	if (s == &v->ctrl) {
		/* Our own copy of the kick fd in the loop: its registration ends
		 * with the copy (queue_stop), whenever the session closes its fd. */
		int fd = q->kick_fd >= 0 ? fcntl(q->kick_fd, F_DUPFD_CLOEXEC, 0) : -1;

		s->kick_h = (struct uvn_handler){ .fd = fd, .fn = on_ctrl_kick, .ctx = s,
						  .light = true };
		if (fd >= 0 && uvn_loop_add(v->loop, &s->kick_h, EPOLLIN)) {
			close(fd);
			s->kick_h.fd = -1;
		}
		/* Commands may be waiting from before a reconnect. */
		ctrl_pass(v, s);
		return;
	}
	if (!guest_tx || v->env.poll_mode) {
		/* Rx buffers: frames without room are dropped, never waited
		 * for. Polled TX rings: kicks would only cost the guest. */
		uvn_vq_dev_disable_notify(q->vq);
		uvn_vhost_log_ring(s);
	}
	if (!guest_tx)
		return;
	if (make_pools(s)) {
		UVN_ERR("%s: no memory for queue %u's packets: queue not served", v->base.name, q->idx);
		s->nq.broken = true;
		return;
	}
	if (uvn_netdev_q_set_zerocopy(&s->nq, (enum uvn_zc_mode)v->env.zerocopy, v->env.zc_min,
				      v->env.zc_max_held, s->ext))
		UVN_WARN("%s: no memory for zero-copy on queue %u: copying", v->base.name, q->idx);
	/* The data-path thread that gets the queue looks at it once before
	 * sleeping: buffers may have been posted while nobody listened. */
}

static void queue_ready(void *ctx, struct uvn_vu_queue *q, bool ready)
{
	struct vhost_port *v = ctx;
	struct vq_slot *s = slot_of(v, q->idx);
	bool guest_tx = s == &v->ctrl || (q->idx & 1);

	if (!s)
		return;
	if (ready && !s->vu)
		queue_start(v, s, q, guest_tx);
	else if (!ready && s->vu)
		queue_stop(v, s, guest_tx);
}

static int set_features(void *ctx, uint64_t features)
{
	struct vhost_port *v = ctx;

	v->features = features;
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
	struct vq_slot *s = &v->tx[0];
	uint64_t one = 1;

	memcpy(v->rarp_mac, mac, sizeof(v->rarp_mac));
	atomic_store_explicit(&v->rarp_pending, true, memory_order_release);
	if (s->vu && s->vu->kick_fd >= 0 && !v->env.poll_mode &&
	    write(s->vu->kick_fd, &one, sizeof(one)) != sizeof(one))
		UVN_DEBUG("%s: cannot wake rx queue 0 for the RARP", v->base.name);
}

static const struct uvn_vu_device_ops device_ops = {
	.queue_ready = queue_ready,
	.set_features = set_features,
	.send_rarp = send_rarp,
};

/* ----------------------------------------------------------- connection */

/* VIRTIO_NET_F_MTU is offered with or without mtu=: QEMU passes it to the
 * guest only with host_mtu=N, and without mtu= the port has no MTU to
 * hold that to (it has always been offered). With mtu= the backend offers
 * NET_MTU too and holds QEMU's host_mtu to the port's. */
static uint64_t offered_features(const struct uvn_vhost_port_cfg *cfg)
{
	uint64_t f = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF |
		     1ull << VIRTIO_RING_F_INDIRECT_DESC | 1ull << VIRTIO_RING_F_EVENT_IDX |
		     1ull << VIRTIO_F_RING_PACKED | 1ull << VIRTIO_F_IN_ORDER |
		     1ull << VIRTIO_NET_F_MTU | 1ull << VIRTIO_NET_F_MAC |
		     1ull << VIRTIO_NET_F_STATUS | 1ull << VIRTIO_NET_F_CSUM |
		     1ull << VIRTIO_NET_F_GUEST_CSUM;

	/* The guest announces itself after a migration (QEMU's vhost-user net
	 * passes this bit only if the backend offers it; without it QEMU
	 * sends SEND_RARP). It needs CTRL_VQ, which QEMU's device has of its
	 * own; other frontends (DPDK, our driver) drop it without one. */
	f |= 1ull << VIRTIO_NET_F_GUEST_ANNOUNCE;

	/* Offloads both ways: what a destination lacks is done in software
	 * there (net/gso.h). Not UFO: that would mean IP fragmentation. */
	f |= 1ull << VIRTIO_NET_F_HOST_TSO4 | 1ull << VIRTIO_NET_F_HOST_TSO6 |
	     1ull << VIRTIO_NET_F_HOST_ECN | 1ull << VIRTIO_NET_F_HOST_USO |
	     1ull << VIRTIO_NET_F_GUEST_TSO4 | 1ull << VIRTIO_NET_F_GUEST_TSO6 |
	     1ull << VIRTIO_NET_F_GUEST_ECN | 1ull << VIRTIO_NET_F_GUEST_USO4 |
	     1ull << VIRTIO_NET_F_GUEST_USO6;
	/* With a control queue, the receive filter commands (ctrl.c); QEMU
	 * keeps its own and tells them through QMP instead (qmp=). */
	if (cfg->queues > 1)
		f |= 1ull << VIRTIO_NET_F_MQ | 1ull << VIRTIO_NET_F_CTRL_VQ |
		     1ull << VIRTIO_NET_F_CTRL_RX | 1ull << VIRTIO_NET_F_CTRL_RX_EXTRA |
		     1ull << VIRTIO_NET_F_CTRL_MAC_ADDR;
	return f;
}

/*
 * vhost-user: a started but disabled TX ring is still processed, its frames
 * dropped (a guest turning queue pairs off may leave frames there and would
 * time out waiting for them). Such rings are not handed to the data path;
 * the control thread empties them every DRAIN_NS, at most DISCARD_BUDGET
 * chains per ring each time: a guest that keeps refilling its ring must
 * not keep the control thread (and, behind it, every parked worker and
 * SIGTERM) here. What is left waits for the next tick.
 */
#define DISCARD_BUDGET 256

static void discard(struct vhost_port *v, struct uvn_vu_queue *q, struct uvn_vq_dev *dev)
{
	static struct iovec iov[UVN_NETDEV_MAX_IOV];
	unsigned num = uvn_vq_dev_num(dev), n = 0, staged = 0;
	struct uvn_vq_chain ch;
	bool notify = false;

	while (n < DISCARD_BUDGET && uvn_vq_dev_pop(dev, &ch, iov, UVN_NETDEV_MAX_IOV) > 0) {
		uvn_vq_dev_push(dev, &ch, 0);
		n++;
		/* Published before the staged chains could outnumber the ring. */
		if (++staged == num) {
			notify |= uvn_vq_dev_flush(dev);
			staged = 0;
		}
	}
	if (staged)
		notify |= uvn_vq_dev_flush(dev);
	/* The used entries are guest memory we wrote: a migration under way
	 * must send them again (logged after the last flush). */
	if (n)
		uvn_vu_log_used(v->be, q);
	if (notify)
		uvn_vu_queue_notify(q);
	v->discarded += n;
}

static void on_drain(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	uvn_timer_ack(h);
	for (unsigned i = 0; v->be && i < v->cfg.queues; i++) {
		struct uvn_vu_queue *q = uvn_vu_backend_queue(v->be, 2 * i + 1);
		/* The backend says which rings are safe to touch: not one whose
		 * memory went away with a new table. */
		struct uvn_vq_dev *dev = q ? uvn_vu_queue_idle_dev(q) : NULL;

		if (dev)
			discard(v, q, dev);
	}
}

static void start_reconnect(struct vhost_port *v);

static void drop_connection(struct vhost_port *v)
{
	uvn_timer_stop(v->loop, &v->msg_h);
	if (!v->conn_paused)
		uvn_loop_del(v->loop, &v->conn_h);
	v->conn_paused = false;
	v->throttled = 0;
	uvn_loop_del(v->loop, &v->fault_h); /* before the session closes its eventfd */
	v->fault_h.fd = -1;
	uvn_timer_stop(v->loop, &v->pairs_h); /* a change for a guest that is gone */
	uvn_vu_backend_destroy(v->be); /* stops every queue through queue_ready() */
	v->be = NULL;
	v->conn_h.fd = -1;
	UVN_INFO("%s: frontend disconnected", v->base.name);
	if (v->cfg.client)
		start_reconnect(v);
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
 * traffic. Each connection gets MSG_BUDGET messages per MSG_WINDOW_NS
 * (far more than a QEMU or DPDK set-up or migration sends); past that its
 * socket is not read until the window ends.
 */
static void msg_budget(struct vhost_port *v)
{
	uint64_t now = uvn_now_ns();

	if (now - v->msg_window >= MSG_WINDOW_NS) {
		v->msg_window = now;
		v->msg_count = 0;
	}
	if (++v->msg_count < MSG_BUDGET)
		return;
	v->msg_h = (struct uvn_handler){ .fd = -1, .fn = on_msg_window, .ctx = v, .light = true };
	if (uvn_timer_start(v->loop, &v->msg_h, v->msg_window + MSG_WINDOW_NS - now, 0))
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
	if (uvn_vu_backend_handle(v->be) < 0)
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
	if (uvn_vu_backend_check_memory(v->be) < 0)
		drop_connection(v);
}

static int attach(struct vhost_port *v, int fd)
{
	struct uvn_vu_backend_cfg bc = {
		.features = offered_features(&v->cfg),
		.queue_num = 2 * v->cfg.queues + (v->cfg.queues > 1),
		/* mtu=: QEMU's host_mtu (what the guest is told) up to it */
		.mtu = v->base.conf.mtu,
		.ops = &device_ops,
		.ctx = v,
		.name = v->base.name,
	};
	int r = uvn_vu_backend_create(fd, &bc, &v->be);

	if (r) {
		close(fd);
		return r;
	}
	v->conn_h = (struct uvn_handler){ .fd = uvn_vu_backend_fd(v->be), .fn = on_message, .ctx = v };
	r = uvn_loop_add(v->loop, &v->conn_h, EPOLLIN);
	if (!r) {
		v->fault_h = (struct uvn_handler){ .fd = uvn_vu_backend_fault_fd(v->be),
						   .fn = on_mem_fault, .ctx = v };
		r = uvn_loop_add(v->loop, &v->fault_h, EPOLLIN);
		if (r)
			uvn_loop_del(v->loop, &v->conn_h);
	}
	if (r) {
		v->fault_h.fd = -1;
		uvn_vu_backend_destroy(v->be);
		v->be = NULL;
		return r;
	}
	UVN_INFO("%s: frontend connected", v->base.name);
	return 0;
}

static void on_accept(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;
	int fd = uvn_vu_accept(h->fd);

	(void)events;
	if (fd < 0)
		return;
	if (v->be) {
		UVN_WARN("%s: second frontend refused (one per socket)", v->base.name);
		close(fd);
		return;
	}
	attach(v, fd);
}

static void on_retry(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;
	int fd;

	(void)events;
	uvn_timer_ack(h);
	if (v->be)
		return;
	fd = uvn_vu_connect(v->path);
	if (fd < 0)
		return;
	uvn_timer_stop(v->loop, &v->retry_h);
	attach(v, fd);
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
		uvn_vu_backend_destroy(v->be);
	}
	uvn_timer_stop(v->loop, &v->msg_h);
	uvn_timer_stop(v->loop, &v->retry_h);
	uvn_timer_stop(v->loop, &v->drain_h);
	uvn_timer_stop(v->loop, &v->pairs_h);
	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++)
		free_pools(&v->tx[i]);
	uvn_qmp_destroy(v->qmp);
	if (v->listen_h.fd >= 0) {
		uvn_loop_del(v->loop, &v->listen_h);
		close(v->listen_h.fd);
		unlink(v->path);
	}
	free(v);
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
	v->pairs_h.fd = v->msg_h.fd = -1;
	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++) {
		v->rx[i] = (struct vq_slot){ .kick_h.fd = -1, .port = v, .qp = i };
		v->tx[i] = (struct vq_slot){ .kick_h.fd = -1, .port = v, .qp = i };
		atomic_flag_clear(&v->rx[i].lock);
	}
	v->ctrl = (struct vq_slot){ .kick_h.fd = -1, .port = v };
	/* Light: it touches only rings not handed to the data path. */
	v->drain_h = (struct uvn_handler){ .fd = -1, .fn = on_drain, .ctx = v, .light = true };
	if (uvn_timer_start(v->loop, &v->drain_h, DRAIN_NS, DRAIN_NS)) {
		free(v);
		return -ENOMEM;
	}
	if (cfg->client) {
		start_reconnect(v);
	} else {
		r = uvn_vu_listen(v->path);
		if (r < 0) {
			UVN_ERR("%s: listen: %s", v->base.name, strerror(-r));
			uvn_vhost_destroy(&v->base);
			return r;
		}
		v->listen_h = (struct uvn_handler){ .fd = r, .fn = on_accept, .ctx = v };
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
