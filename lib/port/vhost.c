/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user port: one guest's virtio-net device. The backend session
 * speaks the protocol and tells us when a virtqueue becomes ready; we run
 * the virtio-net data path (lib/net/device) on it. Port queue q is the
 * guest's queue pair q: rx reads its TX ring (vq 2q+1), tx fills its RX
 * ring (vq 2q). The socket is ours to listen on (server) or to connect to
 * and keep reconnecting (client, for QEMU's server=on).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/device/netdev.h"
#include "port/port.h"
#include "ring/ring.h"
#include "util/log.h"
#include "util/loop.h"
#include "vhost_user/backend.h"

#define RECONNECT_NS 1000000000ull

struct vq_slot {
	struct uvn_netdev_q nq;
	struct uvn_vu_queue *vu;   /* NULL while not ready */
	struct uvn_handler kick_h;
	struct vhost_port *port;
	unsigned qp;               /* queue pair */
};

struct vhost_port {
	struct uvn_port base;
	struct uvn_vhost_port_cfg cfg;
	char path[108];
	struct uvn_loop *loop;
	struct uvn_port_env env;
	struct uvn_handler listen_h, conn_h, retry_h;
	struct uvn_vu_backend *be;
	uint64_t features;
	unsigned pairs_on;         /* queue pairs the guest uses (MQ) */
	struct vq_slot rx[UVN_PORT_MAX_QUEUES]; /* guest RX rings */
	struct vq_slot tx[UVN_PORT_MAX_QUEUES]; /* guest TX rings */
	struct vq_slot ctrl;
	struct uvn_port_stats gone;  /* counters of queues that stopped */
	uint64_t kicks;
};

/* ------------------------------------------------------------ data path */

static unsigned vhost_rx(struct uvn_port *port, unsigned q, struct uvn_pkt **pkts, unsigned n)
{
	struct vhost_port *v = (struct vhost_port *)port;
	struct vq_slot *s = &v->tx[q];
	unsigned got;

	if (UVN_UNLIKELY(!s->vu))
		return 0;
	got = uvn_netdev_tx(&s->nq, v->env.small, v->env.big, pkts, n);
	for (unsigned i = 0; i < got; i++) {
		pkts[i]->port = port->id;
		pkts[i]->queue = (uint16_t)q;
	}
	return got;
}

static unsigned vhost_tx(struct uvn_port *port, unsigned q, struct uvn_pkt *const *pkts, unsigned n)
{
	struct vhost_port *v = (struct vhost_port *)port;
	struct vq_slot *s = &v->rx[q];

	if (UVN_UNLIKELY(!s->vu)) {
		v->gone.drops += n;
		return 0;
	}
	return uvn_netdev_rx(&s->nq, pkts, n);
}

static void vhost_complete(struct uvn_port *port, unsigned q)
{
	struct vhost_port *v = (struct vhost_port *)port;

	if (v->tx[q].vu)
		uvn_netdev_tx_complete(&v->tx[q].nq);
}

void uvn_port_vhost_set_zerocopy(struct uvn_port *port, int mode)
{
	struct vhost_port *v = (struct vhost_port *)port;

	v->env.zerocopy = mode;
	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++)
		if (v->tx[i].vu)
			uvn_netdev_q_set_zerocopy(&v->tx[i].nq, (enum uvn_zc_mode)mode, v->env.zc_min,
						  v->env.zc_max_held, v->env.ext);
}

static void dump_slot(struct vhost_port *v, const struct vq_slot *s, const char *dir, FILE *f,
		      bool json, bool *first)
{
	const struct uvn_vq_stats *r = uvn_vq_dev_stats(s->nq.vq);

	if (json) {
		fprintf(f, "%s{\"port\":\"%s\",\"vq\":%u,\"queue\":%u,\"dir\":\"%s\",\"size\":%u,"
			"\"broken\":%s,\"zerocopy\":%s,\"ring\":{", *first ? "" : ",", v->base.name,
			s->vu->idx, s->qp, dir, uvn_vq_dev_num(s->nq.vq),
			s->nq.broken ? "true" : "false", s->nq.zc ? "true" : "false");
		uvn_stats_json(f, r, uvn_vq_stats_desc);
		fputs("},\"dev\":{", f);
		uvn_stats_json(f, &s->nq.st, uvn_netdev_q_stats_desc);
		fputs("}}", f);
	} else {
		fprintf(f, "%s vq %u (%s %u, size %u%s)%s\n  ring: ", v->base.name, s->vu->idx, dir,
			s->qp, uvn_vq_dev_num(s->nq.vq), s->nq.zc ? ", zero-copy" : "",
			s->nq.broken ? " BROKEN" : "");
		uvn_stats_print(f, r, uvn_vq_stats_desc, 0);
		fputs("\n  dev:  ", f);
		uvn_stats_print(f, &s->nq.st, uvn_netdev_q_stats_desc, 0);
		fputc('\n', f);
	}
	*first = false;
}

static void vhost_dump_queues(struct uvn_port *port, FILE *f, bool json, bool *first)
{
	struct vhost_port *v = (struct vhost_port *)port;

	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++) {
		if (v->rx[i].vu)
			dump_slot(v, &v->rx[i], "guest_rx", f, json, first);
		if (v->tx[i].vu)
			dump_slot(v, &v->tx[i], "guest_tx", f, json, first);
	}
	if (v->ctrl.vu)
		dump_slot(v, &v->ctrl, "ctrl", f, json, first);
}

static unsigned vhost_nqueues(struct uvn_port *port)
{
	struct vhost_port *v = (struct vhost_port *)port;
	unsigned n = 0;

	while (n < v->pairs_on && v->rx[n].vu && v->tx[n].vu)
		n++;
	return n;
}

static bool vhost_arm(struct uvn_port *port, unsigned q)
{
	struct vhost_port *v = (struct vhost_port *)port;
	struct vq_slot *s = &v->tx[q];

	if (!s->vu || s->nq.broken)
		return true;
	return uvn_vq_dev_enable_notify(s->nq.vq);
}

static void add_q(struct uvn_port_stats *st, const struct vq_slot *s, bool guest_tx)
{
	const struct uvn_netdev_q_stats *q = &s->nq.st;
	const struct uvn_vq_stats *r = s->nq.vq ? uvn_vq_dev_stats(s->nq.vq) : NULL;

	if (guest_tx) {
		st->rx_packets += q->packets;
		st->rx_bytes += q->bytes;
	} else {
		st->tx_packets += q->packets;
		st->tx_bytes += q->bytes;
	}
	st->drops += q->drop_nobuf + q->drop_toobig + q->drop_nopkt + q->drop_offload;
	st->errors += q->err_short + q->err_hdr + q->err_toolong + q->err_format + q->err_ring +
		      q->ctrl_err;
	st->calls += q->notify;
	if (r)
		st->calls_suppressed += r->notify_suppressed;
}

static void vhost_stats(struct uvn_port *port, struct uvn_port_stats *st)
{
	struct vhost_port *v = (struct vhost_port *)port;

	*st = v->gone;
	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++) {
		if (v->rx[i].vu)
			add_q(st, &v->rx[i], false);
		if (v->tx[i].vu)
			add_q(st, &v->tx[i], true);
	}
	if (v->ctrl.vu)
		add_q(st, &v->ctrl, true);
	st->kicks += v->kicks;
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

static int set_pairs(void *ctx, unsigned pairs)
{
	struct vhost_port *v = ctx;

	if (pairs > v->cfg.queues)
		return -EINVAL;
	v->pairs_on = pairs;
	return 0;
}

static void on_kick(struct uvn_handler *h, uint32_t events)
{
	struct vq_slot *s = h->ctx;
	struct vhost_port *v = s->port;
	uint64_t n;

	(void)events;
	if (read(h->fd, &n, sizeof(n)) == sizeof(n))
		v->kicks += n;
	if (!s->vu)
		return;
	if (s == &v->ctrl) {
		uvn_netdev_ctrl(&s->nq, set_pairs, v);
		uvn_vq_dev_enable_notify(s->nq.vq);
		return;
	}
	uvn_vq_dev_disable_notify(s->nq.vq);
	if (v->base.wake)
		v->base.wake(&v->base, s->qp);
}

static struct vq_slot *slot_of(struct vhost_port *v, unsigned idx)
{
	unsigned pairs = v->cfg.queues;

	if (idx == 2 * pairs)
		return &v->ctrl;
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
	if (s->kick_h.fd >= 0) {
		uvn_loop_del(v->loop, &s->kick_h);
		s->kick_h.fd = -1;
	}
	add_q(&v->gone, s, guest_tx);
	memset(&s->nq.st, 0, sizeof(s->nq.st));
	s->vu = NULL;
	s->nq.vq = NULL;
}

static void queue_start(struct vhost_port *v, struct vq_slot *s, struct uvn_vu_queue *q,
			bool guest_tx)
{
	s->vu = q;
	uvn_netdev_q_init(&s->nq, q->vq, v->features, guest_tx);
	s->nq.notify = notify_driver;
	s->nq.notify_ctx = s;
	s->nq.log_write = log_write;
	s->nq.log_used = log_used;
	s->nq.log_ctx = s;
	if (guest_tx && s != &v->ctrl &&
	    uvn_netdev_q_set_zerocopy(&s->nq, (enum uvn_zc_mode)v->env.zerocopy, v->env.zc_min,
				      v->env.zc_max_held, v->env.ext))
		UVN_WARN("%s: no memory for zero-copy on queue %u: copying", v->base.name, q->idx);
	if (!guest_tx) {
		/* We never wait for rx buffers: frames without room are dropped. */
		uvn_vq_dev_disable_notify(q->vq);
		return;
	}
	if (v->env.poll_mode && s != &v->ctrl) {
		uvn_vq_dev_disable_notify(q->vq);
		return;
	}
	if (q->kick_fd >= 0) {
		s->kick_h = (struct uvn_handler){ .fd = q->kick_fd, .fn = on_kick, .ctx = s };
		if (uvn_loop_add(v->loop, &s->kick_h, EPOLLIN))
			s->kick_h.fd = -1;
	}
	/* A restarted backend may have missed kicks for buffers already
	 * posted: look at the ring once now instead of waiting for one. */
	if (s == &v->ctrl)
		uvn_netdev_ctrl(&s->nq, set_pairs, v);
	else if (v->base.wake)
		v->base.wake(&v->base, s->qp);
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
	return 0;
}

static const struct uvn_vu_device_ops device_ops = {
	.queue_ready = queue_ready,
	.set_features = set_features,
};

/* ----------------------------------------------------------- connection */

static uint64_t offered_features(const struct uvn_vhost_port_cfg *cfg)
{
	uint64_t f = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF |
		     1ull << VIRTIO_RING_F_INDIRECT_DESC | 1ull << VIRTIO_RING_F_EVENT_IDX |
		     1ull << VIRTIO_F_RING_PACKED | 1ull << VIRTIO_F_IN_ORDER |
		     1ull << VIRTIO_NET_F_MTU | 1ull << VIRTIO_NET_F_MAC |
		     1ull << VIRTIO_NET_F_STATUS | 1ull << VIRTIO_NET_F_CSUM |
		     1ull << VIRTIO_NET_F_GUEST_CSUM;

	/* Offloads both ways: what a destination lacks is done in software
	 * there (net/gso.h). Not UFO: that would mean IP fragmentation. */
	f |= 1ull << VIRTIO_NET_F_HOST_TSO4 | 1ull << VIRTIO_NET_F_HOST_TSO6 |
	     1ull << VIRTIO_NET_F_HOST_ECN | 1ull << VIRTIO_NET_F_HOST_USO |
	     1ull << VIRTIO_NET_F_GUEST_TSO4 | 1ull << VIRTIO_NET_F_GUEST_TSO6 |
	     1ull << VIRTIO_NET_F_GUEST_ECN | 1ull << VIRTIO_NET_F_GUEST_USO4 |
	     1ull << VIRTIO_NET_F_GUEST_USO6;
	if (cfg->queues > 1)
		f |= 1ull << VIRTIO_NET_F_MQ | 1ull << VIRTIO_NET_F_CTRL_VQ;
	return f;
}

static void start_reconnect(struct vhost_port *v);

static void drop_connection(struct vhost_port *v)
{
	uvn_loop_del(v->loop, &v->conn_h);
	uvn_vu_backend_destroy(v->be); /* stops every queue through queue_ready() */
	v->be = NULL;
	v->conn_h.fd = -1;
	UVN_INFO("%s: frontend disconnected", v->base.name);
	if (v->cfg.client)
		start_reconnect(v);
}

static void on_message(struct uvn_handler *h, uint32_t events)
{
	struct vhost_port *v = h->ctx;

	(void)events;
	if (uvn_vu_backend_handle(v->be) < 0)
		drop_connection(v);
}

static int attach(struct vhost_port *v, int fd)
{
	struct uvn_vu_backend_cfg bc = {
		.features = offered_features(&v->cfg),
		.queue_num = 2 * v->cfg.queues + (v->cfg.queues > 1),
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
	if (r) {
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

static void vhost_destroy(struct uvn_port *port)
{
	struct vhost_port *v = (struct vhost_port *)port;

	if (v->be) {
		uvn_loop_del(v->loop, &v->conn_h);
		uvn_vu_backend_destroy(v->be);
	}
	uvn_timer_stop(v->loop, &v->retry_h);
	if (v->listen_h.fd >= 0) {
		uvn_loop_del(v->loop, &v->listen_h);
		close(v->listen_h.fd);
		unlink(v->path);
	}
	free(v);
}

static const struct uvn_port_ops vhost_ops = {
	.kind = "vhost-user",
	.rx = vhost_rx,
	.tx = vhost_tx,
	.nqueues = vhost_nqueues,
	.stats = vhost_stats,
	.arm = vhost_arm,
	.complete = vhost_complete,
	.dump_queues = vhost_dump_queues,
	.destroy = vhost_destroy,
};

int uvn_port_vhost_create(const struct uvn_vhost_port_cfg *cfg, const struct uvn_port_env *env,
			  struct uvn_port **out)
{
	struct vhost_port *v;
	int r;

	if (!cfg->queues || cfg->queues > UVN_PORT_MAX_QUEUES ||
	    strlen(cfg->path) >= sizeof(v->path))
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->base.ops = &vhost_ops;
	snprintf(v->base.name, sizeof(v->base.name), "vhost:%s", cfg->path);
	v->cfg = *cfg;
	snprintf(v->path, sizeof(v->path), "%s", cfg->path);
	v->cfg.path = v->path;
	v->env = *env;
	v->loop = env->loop;
	v->pairs_on = 1;
	v->listen_h.fd = v->conn_h.fd = v->retry_h.fd = -1;
	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++) {
		v->rx[i] = (struct vq_slot){ .kick_h.fd = -1, .port = v, .qp = i };
		v->tx[i] = (struct vq_slot){ .kick_h.fd = -1, .port = v, .qp = i };
	}
	v->ctrl = (struct vq_slot){ .kick_h.fd = -1, .port = v };
	if (cfg->client) {
		start_reconnect(v);
	} else {
		r = uvn_vu_listen(v->path);
		if (r < 0) {
			UVN_ERR("%s: listen: %s", v->base.name, strerror(-r));
			free(v);
			return r;
		}
		v->listen_h = (struct uvn_handler){ .fd = r, .fn = on_accept, .ctx = v };
		r = uvn_loop_add(v->loop, &v->listen_h, EPOLLIN);
		if (r) {
			close(v->listen_h.fd);
			free(v);
			return r;
		}
	}
	*out = &v->base;
	return 0;
}
