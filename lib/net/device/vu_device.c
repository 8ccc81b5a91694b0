/* SPDX-License-Identifier: MIT */
/*
 * <uvnet/device.h>: a vhost-user backend session joined to one netdev queue
 * per ring. The session says when a ring becomes ready or stops (always on
 * the control thread, the data path kept off it by the caller); the device
 * sets the queue up for it (notification, dirty logging, packet pools,
 * zero-copy) and tears it down, and the application drives the queues
 * (vu_device_data.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/device/vu_device.h"
#include "ring/ring.h"
#include "util/abi.h"
#include "util/log.h"

/* Per guest TX ring: packets its frames become. */
#define BIG_PKTS 64
#define ZC_PKTS 1024
#define SMALL_ROOM 2048
#define BIG_ROOM (65536 + 64)
#define RX_PKTS_DEFAULT 2048
#define NO_RING UINT_MAX

/* VIRTIO_NET_F_MTU is offered with or without a device MTU: QEMU passes it
 * to the guest only with host_mtu=N. GUEST_ANNOUNCE has the guest announce
 * itself after a migration (QEMU's vhost-user net passes it only if the
 * backend offers it; without it QEMU sends SEND_RARP); it needs CTRL_VQ,
 * which QEMU's device has of its own, and other frontends drop it without
 * one. The offloads go both ways: what a destination lacks is done in
 * software there (net/gso.h); not UFO, which would mean IP fragmentation.
 * With a control queue, the receive filter commands (ctrl.c). */
uint64_t uvn_dev_default_features(unsigned queue_pairs)
{
	uint64_t f = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF |
		     1ull << VIRTIO_RING_F_INDIRECT_DESC | 1ull << VIRTIO_RING_F_EVENT_IDX |
		     1ull << VIRTIO_F_RING_PACKED | 1ull << VIRTIO_F_IN_ORDER |
		     1ull << VIRTIO_NET_F_MTU | 1ull << VIRTIO_NET_F_MAC |
		     1ull << VIRTIO_NET_F_STATUS | 1ull << VIRTIO_NET_F_CSUM |
		     1ull << VIRTIO_NET_F_GUEST_CSUM | 1ull << VIRTIO_NET_F_GUEST_ANNOUNCE;

	f |= 1ull << VIRTIO_NET_F_HOST_TSO4 | 1ull << VIRTIO_NET_F_HOST_TSO6 |
	     1ull << VIRTIO_NET_F_HOST_ECN | 1ull << VIRTIO_NET_F_HOST_USO |
	     1ull << VIRTIO_NET_F_GUEST_TSO4 | 1ull << VIRTIO_NET_F_GUEST_TSO6 |
	     1ull << VIRTIO_NET_F_GUEST_ECN | 1ull << VIRTIO_NET_F_GUEST_USO4 |
	     1ull << VIRTIO_NET_F_GUEST_USO6;
	if (queue_pairs > 1)
		f |= 1ull << VIRTIO_NET_F_MQ | 1ull << VIRTIO_NET_F_CTRL_VQ |
		     1ull << VIRTIO_NET_F_CTRL_RX | 1ull << VIRTIO_NET_F_CTRL_RX_EXTRA |
		     1ull << VIRTIO_NET_F_CTRL_MAC_ADDR;
	return f;
}

/* The session's virtqueue @idx as a ring number: the queue pairs' rx and
 * tx, then the control queue, at twice the pairs offered with MQ and at 2
 * without it (spec: virtio-net device, virtqueues). */
static unsigned ring_of_vq(const struct uvn_dev *d, unsigned idx)
{
	unsigned pairs = uvn_has_feature(d->features, VIRTIO_NET_F_MQ) ? d->cfg.queue_pairs : 1;

	if (idx == 2 * pairs)
		return d->has_ctrl ? UVN_DEV_CTRL_RING : NO_RING;
	return idx < 2 * pairs ? idx : NO_RING;
}

/* ------------------------------------------------ rings starting, stopping */

static void notify_driver(void *ctx)
{
	uvn_vu_queue_notify(((struct dev_ring *)ctx)->vu);
}

static void log_write(void *ctx, const void *va, size_t len)
{
	uvn_vu_log_write(((struct dev_ring *)ctx)->dev->be, va, len);
}

static void log_used(void *ctx)
{
	struct dev_ring *s = ctx;

	uvn_vu_log_used(s->dev->be, s->vu);
}

static int make_pools(struct uvn_dev *d, struct dev_ring *s)
{
	struct uvn_pkt_pool_cfg small = { .count = d->cfg.rx_pkts, .buf_size = SMALL_ROOM,
					  .name = "small" };
	struct uvn_pkt_pool_cfg big = { .count = BIG_PKTS, .buf_size = BIG_ROOM, .name = "big" };
	struct uvn_pkt_pool_cfg ext = { .count = ZC_PKTS, .name = "zerocopy" };

	if (s->small)
		return 0;
	if (uvn_pkt_pool_create(&small, &s->small) || uvn_pkt_pool_create(&big, &s->big) ||
	    uvn_pkt_pool_create(&ext, &s->ext))
		return -ENOMEM;
	return 0;
}

static void free_pools(struct dev_ring *s)
{
	uvn_pkt_pool_destroy(s->small);
	uvn_pkt_pool_destroy(s->big);
	uvn_pkt_pool_destroy(s->ext);
	s->small = s->big = s->ext = NULL;
}

static void guest_tx_setup(struct uvn_dev *d, struct dev_ring *s)
{
	if (make_pools(d, s)) {
		UVN_ERR("%s: no memory for queue %u's packets: queue not served", d->cfg.name,
			s->vu->idx);
		s->nq.broken = true;
		return;
	}
	if (uvn_netdev_q_set_zerocopy(&s->nq, (enum uvn_zc_mode)d->cfg.zerocopy, d->cfg.zc_min,
				      d->cfg.zc_max_held, s->ext))
		UVN_WARN("%s: no memory for zero-copy on queue %u: copying", d->cfg.name, s->vu->idx);
}

static void ring_start(struct uvn_dev *d, struct dev_ring *s, unsigned ring,
		       struct uvn_vu_queue *q)
{
	bool guest_tx = ring == UVN_DEV_CTRL_RING || (ring & 1);

	s->vu = q;
	s->suppressed_base = uvn_stat_read(&uvn_vq_dev_stats(q->vq)->notify_suppressed);
	uvn_netdev_q_init(&s->nq, q->vq, d->features, guest_tx);
	s->nq.filter = d->filter; /* the control queue's commands set it */
	if (!guest_tx)
		uvn_netdev_q_set_mtu(&s->nq, d->mtu);
	s->nq.notify = notify_driver;
	s->nq.notify_ctx = s;
	/* Paused and resumed around any change of the dirty log: decided here. */
	if (uvn_vu_backend_logging(d->be)) {
		s->nq.log_write = log_write;
		s->nq.log_used = log_used;
		s->nq.log_ctx = s;
	}
	if (ring != UVN_DEV_CTRL_RING && (!guest_tx || d->cfg.poll)) {
		/* Rx buffers: frames without room are dropped, never waited
		 * for. Polled TX rings: kicks would only cost the guest. */
		uvn_vq_dev_disable_notify(q->vq);
		dev_log_ring(s);
	}
	if (ring != UVN_DEV_CTRL_RING && guest_tx)
		guest_tx_setup(d, s);
	/* Whoever serves the ring looks at it once before sleeping: buffers
	 * may have been posted while nobody listened. */
	if (d->cfg.ops && d->cfg.ops->queue_ready)
		d->cfg.ops->queue_ready(d->cfg.ctx, ring, true);
}

static void ring_stop(struct uvn_dev *d, struct dev_ring *s, unsigned ring)
{
	/* The caller's data path is off the ring: whatever a burst borrowed
	 * went back before the control path runs, so nothing is held here. */
	uvn_netdev_tx_complete(&s->nq);
	if (d->cfg.ops && d->cfg.ops->queue_ready)
		d->cfg.ops->queue_ready(d->cfg.ctx, ring, false);
	uvn_netdev_q_fini(&s->nq);
	memset(&s->nq.st, 0, sizeof(s->nq.st));
	s->vu = NULL;
	s->nq.vq = NULL;
}

static void queue_ready(void *ctx, struct uvn_vu_queue *q, bool ready)
{
	struct uvn_dev *d = ctx;
	unsigned ring = ring_of_vq(d, q->idx);
	struct dev_ring *s = ring == NO_RING ? NULL : dev_ring_at(d, ring);

	if (!s)
		return;
	if (ready && !s->vu)
		ring_start(d, s, ring, q);
	else if (!ready && s->vu)
		ring_stop(d, s, ring);
}

/* Features the application refused are not the session's: the backend
 * keeps the ones it had (and resumes its rings with them), so must we. */
static int set_features(void *ctx, uint64_t features)
{
	struct uvn_dev *d = ctx;
	int r = d->cfg.ops && d->cfg.ops->set_features ?
			d->cfg.ops->set_features(d->cfg.ctx, features) : 0;

	if (r >= 0)
		d->features = features;
	return r;
}

static void send_rarp(void *ctx, const uint8_t mac[6])
{
	struct uvn_dev *d = ctx;

	d->cfg.ops->send_rarp(d->cfg.ctx, mac);
}

/* The backend offers protocol feature RARP only with the callback. */
static const struct uvn_vu_device_ops vu_ops = {
	.queue_ready = queue_ready,
	.set_features = set_features,
};
static const struct uvn_vu_device_ops vu_ops_rarp = {
	.queue_ready = queue_ready,
	.set_features = set_features,
	.send_rarp = send_rarp,
};

/* ------------------------------------------------------------- session */

static int attach(struct uvn_dev *d, int fd)
{
	bool rarp = d->cfg.ops && d->cfg.ops->send_rarp;
	struct uvn_vu_backend_cfg bc = {
		.features = d->cfg.features,
		.protocol_features = d->cfg.protocol_features,
		.mtu = d->cfg.mtu,
		.queue_num = 2 * d->cfg.queue_pairs + d->has_ctrl,
		.max_mem = d->cfg.max_mem,
		.ops = rarp ? &vu_ops_rarp : &vu_ops,
		.ctx = d,
		.name = d->cfg.name,
	};
	int r = uvn_vu_backend_create(fd, &bc, &d->be);

	if (r)
		close(fd); /* the session owns it only once it exists */
	else
		d->mtu = d->cfg.mtu;
	return r;
}

int uvn_dev_accept(struct uvn_dev *d)
{
	int fd;

	if (d->lfd < 0)
		return -EINVAL;
	fd = uvn_vu_accept(d->lfd);
	if (fd < 0)
		return fd;
	if (d->be) {
		UVN_LOG_PEER("%s: second frontend refused (one per socket)", d->cfg.name);
		close(fd);
		return -EBUSY;
	}
	return attach(d, fd);
}

int uvn_dev_connect(struct uvn_dev *d)
{
	int fd;

	if (d->be)
		return -EISCONN;
	fd = uvn_vu_connect(d->path);
	return fd < 0 ? fd : attach(d, fd);
}

void uvn_dev_set_mtu(struct uvn_dev *d, uint32_t mtu)
{
	d->cfg.mtu = mtu;
}

bool uvn_dev_connected(const struct uvn_dev *d)
{
	return d->be != NULL;
}

int uvn_dev_fd(const struct uvn_dev *d)
{
	return d->be ? uvn_vu_backend_fd(d->be) : -1;
}

int uvn_dev_fault_fd(const struct uvn_dev *d)
{
	return d->be ? uvn_vu_backend_fault_fd(d->be) : -1;
}

int uvn_dev_handle(struct uvn_dev *d)
{
	return d->be ? uvn_vu_backend_handle(d->be) : -ENOTCONN;
}

int uvn_dev_check_memory(struct uvn_dev *d)
{
	return d->be ? uvn_vu_backend_check_memory(d->be) : 0;
}

void uvn_dev_disconnect(struct uvn_dev *d)
{
	if (!d->be)
		return;
	uvn_vu_backend_destroy(d->be); /* stops every ring through queue_ready() */
	d->be = NULL;
}

uint64_t uvn_dev_features(const struct uvn_dev *d)
{
	return d->features;
}

int uvn_dev_listen_fd(const struct uvn_dev *d)
{
	return d->lfd;
}

/* ------------------------------------------------------ create, destroy */

/*
 * The sizes <uvnet/device.h> promises (on LP64): a program built against an
 * older header allocates, or initializes, structs of these sizes, so a new
 * field or callback takes its room from the struct's reserved tail.
 */
_Static_assert(sizeof(void *) != 8 || sizeof(struct uvn_dev_cfg) == 144,
	       "struct uvn_dev_cfg must stay 144 bytes: take new fields from reserved[]");
_Static_assert(sizeof(void *) != 8 || sizeof(struct uvn_dev_ops) == 64,
	       "struct uvn_dev_ops must stay 64 bytes: take new callbacks from reserved[]");
_Static_assert(sizeof(void *) != 8 || sizeof(struct uvn_dev_q_stats) == 128,
	       "struct uvn_dev_q_stats must stay 128 bytes: take new counters from reserved[]");

/* What the device implements beyond its default offer. */
#define FEATURES_EXTRA (1ull << VIRTIO_NET_F_HOST_UFO | 1ull << VIRTIO_NET_F_GUEST_UFO)
#define FEATURES_CTRL                                                                   \
	(1ull << VIRTIO_NET_F_CTRL_VQ | 1ull << VIRTIO_NET_F_CTRL_RX |                  \
	 1ull << VIRTIO_NET_F_CTRL_RX_EXTRA | 1ull << VIRTIO_NET_F_CTRL_MAC_ADDR |      \
	 1ull << VIRTIO_NET_F_MQ)

/* An offer the device can keep: VERSION_1 (its header layout), nothing
 * it does not implement, and control-queue bits only with that queue. */
static bool features_ok(const struct uvn_dev_cfg *cfg)
{
	uint64_t f = cfg->features;

	return !f || (uvn_has_feature(f, VIRTIO_F_VERSION_1) &&
		      !(f & ~(uvn_dev_default_features(2) | FEATURES_EXTRA)) &&
		      (!(f & FEATURES_CTRL) || cfg->ctrl || cfg->queue_pairs > 1));
}

/* A later release gives ops->reserved[] callbacks: today they must be NULL. */
static bool ops_ok(const struct uvn_dev_ops *ops)
{
	for (unsigned i = 0; ops && i < sizeof(ops->reserved) / sizeof(ops->reserved[0]); i++)
		if (ops->reserved[i])
			return false;
	return true;
}

static int check_cfg(const struct uvn_dev_cfg *cfg)
{
	if (!cfg || !cfg->path || !UVN_RESERVED_ZERO(cfg) || !ops_ok(cfg->ops) || !features_ok(cfg))
		return -EINVAL;
	if (!cfg->queue_pairs || cfg->queue_pairs > UVN_DEV_MAX_QUEUE_PAIRS ||
	    strlen(cfg->path) >= sizeof(((struct uvn_dev *)0)->path) ||
	    (unsigned)cfg->zerocopy > UVN_DEV_ZC_AUTO)
		return -EINVAL;
	return 0;
}

int uvn_dev_create(const struct uvn_dev_cfg *cfg, struct uvn_dev **out)
{
	struct uvn_dev *d;
	int r = check_cfg(cfg);

	if (r)
		return r;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
	memcpy(d->path, cfg->path, strlen(cfg->path) + 1);
	d->cfg.path = d->path;
	d->cfg.name = cfg->name ? cfg->name : d->path;
	d->cfg.features = cfg->features ? cfg->features : uvn_dev_default_features(cfg->queue_pairs);
	d->cfg.rx_pkts = cfg->rx_pkts ? cfg->rx_pkts : RX_PKTS_DEFAULT;
	d->has_ctrl = cfg->ctrl || cfg->queue_pairs > 1;
	d->lfd = -1;
	for (unsigned i = 0; i < UVN_DEV_MAX_QUEUE_PAIRS; i++) {
		d->rx[i].dev = d;
		d->tx[i].dev = d;
	}
	d->ctrl.dev = d;
	if (!cfg->client) {
		r = uvn_vu_listen(d->path);
		if (r < 0) {
			free(d);
			return r;
		}
		d->lfd = r;
	}
	*out = d;
	return 0;
}

void uvn_dev_destroy(struct uvn_dev *d)
{
	if (!d)
		return;
	uvn_dev_disconnect(d);
	for (unsigned i = 0; i < UVN_DEV_MAX_QUEUE_PAIRS; i++)
		free_pools(&d->tx[i]);
	if (d->lfd >= 0) {
		close(d->lfd);
		unlink(d->path);
	}
	free(d);
}
