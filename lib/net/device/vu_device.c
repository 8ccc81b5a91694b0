/* SPDX-License-Identifier: MIT */
/*
 * <uvnet/device.h>: a vhost-user backend session joined to one netdev queue
 * per ring. The session says when a ring becomes ready or stops (always on
 * the control thread, the data path kept off it by the caller); the device
 * sets the queue up for it (notification, dirty logging, packet pools,
 * zero-copy) and tears it down, and the application drives the queues.
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

struct dev_ring {
	struct uvn_netdev_q nq;
	struct uvn_vu_queue *vu;    /* NULL while not ready */
	struct uvn_dev *dev;
	/* guest TX: made at its first start, kept until the device goes */
	struct uvn_pkt_pool *small, *big, *ext;
};

struct uvn_dev {
	struct uvn_dev_cfg cfg;
	char path[108];
	int lfd;                    /* listening socket, -1 with cfg.client */
	bool has_ctrl;
	struct uvn_vu_backend *be;  /* the session, NULL without one */
	uint64_t features;          /* the frontend's, last set */
	struct uvn_rx_filter *filter;
	struct dev_ring rx[UVN_DEV_MAX_QUEUE_PAIRS]; /* guest RX rings */
	struct dev_ring tx[UVN_DEV_MAX_QUEUE_PAIRS]; /* guest TX rings */
	struct dev_ring ctrl;
	struct iovec discard_iov[UVN_NETDEV_MAX_IOV]; /* discard()'s scratch */
};

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

static struct dev_ring *ring_at(const struct uvn_dev *d, unsigned ring)
{
	struct uvn_dev *m = (struct uvn_dev *)d;

	if (ring == UVN_DEV_CTRL_RING)
		return d->has_ctrl ? &m->ctrl : NULL;
	if (ring >= 2 * d->cfg.queue_pairs)
		return NULL;
	return ring & 1 ? &m->tx[ring / 2] : &m->rx[ring / 2];
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

/* Turning the guest's notifications on or off writes its ring (used
 * flags, avail_event, the packed device event area): guest memory, so
 * logged after the write while a migration runs. */
static void log_ring(struct dev_ring *s)
{
	if (UVN_UNLIKELY(s->nq.log_used != NULL))
		s->nq.log_used(s->nq.log_ctx);
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
	uvn_netdev_q_init(&s->nq, q->vq, d->features, guest_tx);
	s->nq.filter = d->filter; /* the control queue's commands set it */
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
		log_ring(s);
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
	struct dev_ring *s = ring == NO_RING ? NULL : ring_at(d, ring);

	if (!s)
		return;
	if (ready && !s->vu)
		ring_start(d, s, ring, q);
	else if (!ready && s->vu)
		ring_stop(d, s, ring);
}

static int set_features(void *ctx, uint64_t features)
{
	struct uvn_dev *d = ctx;

	d->features = features;
	return d->cfg.ops && d->cfg.ops->set_features ?
		       d->cfg.ops->set_features(d->cfg.ctx, features) : 0;
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
		.ops = rarp ? &vu_ops_rarp : &vu_ops,
		.ctx = d,
		.name = d->cfg.name,
	};
	int r = uvn_vu_backend_create(fd, &bc, &d->be);

	if (r)
		close(fd); /* the session owns it only once it exists */
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
		UVN_WARN("%s: second frontend refused (one per socket)", d->cfg.name);
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

static int check_cfg(const struct uvn_dev_cfg *cfg)
{
	if (!cfg || !cfg->path || !UVN_RESERVED_ZERO(cfg) || !features_ok(cfg))
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

/* ------------------------------------------------------------ data path */

bool uvn_dev_pair_ready(const struct uvn_dev *d, unsigned q)
{
	return q < d->cfg.queue_pairs && d->rx[q].vu && d->tx[q].vu;
}

unsigned uvn_dev_rx_burst(struct uvn_dev *d, unsigned q, struct uvn_pkt **pkts, unsigned n)
{
	struct dev_ring *s = &d->tx[q];

	if (UVN_UNLIKELY(q >= d->cfg.queue_pairs || !s->vu))
		return 0;
	return uvn_netdev_tx(&s->nq, s->small, s->big, pkts, n);
}

void uvn_dev_rx_done(struct uvn_dev *d, unsigned q)
{
	if (q < d->cfg.queue_pairs && d->tx[q].vu)
		uvn_netdev_tx_complete(&d->tx[q].nq);
}

unsigned uvn_dev_tx_burst(struct uvn_dev *d, unsigned q, struct uvn_pkt *const *pkts, unsigned n)
{
	struct dev_ring *s = &d->rx[q];

	if (UVN_UNLIKELY(q >= d->cfg.queue_pairs || !s->vu))
		return 0;
	return uvn_netdev_rx(&s->nq, pkts, n);
}

struct uvn_pkt_pool *uvn_dev_rx_pool(const struct uvn_dev *d, unsigned q)
{
	return q < d->cfg.queue_pairs ? d->tx[q].small : NULL;
}

int uvn_dev_kick_fd(const struct uvn_dev *d, unsigned q)
{
	return q < d->cfg.queue_pairs && d->tx[q].vu ? d->tx[q].vu->kick_fd : -1;
}

uint64_t uvn_dev_kicked(struct uvn_dev *d, unsigned q)
{
	struct dev_ring *s = &d->tx[q];
	uint64_t n;

	if (q >= d->cfg.queue_pairs || !s->vu)
		return 0;
	if (read(s->vu->kick_fd, &n, sizeof(n)) != sizeof(n))
		n = 0;
	uvn_vq_dev_disable_notify(s->nq.vq);
	log_ring(s);
	return n;
}

static bool arm(struct dev_ring *s)
{
	bool armed;

	if (!s->vu || s->nq.broken)
		return true;
	armed = uvn_vq_dev_enable_notify(s->nq.vq);
	log_ring(s);
	return armed;
}

bool uvn_dev_arm(struct uvn_dev *d, unsigned q)
{
	return q >= d->cfg.queue_pairs || arm(&d->tx[q]);
}

/* ------------------------------------------------------- control queue */

int uvn_dev_ctrl_fd(const struct uvn_dev *d)
{
	return d->ctrl.vu ? d->ctrl.vu->kick_fd : -1;
}

static int set_pairs(void *ctx, unsigned pairs)
{
	struct uvn_dev *d = ctx;

	if (pairs > d->cfg.queue_pairs)
		return -EINVAL;
	return d->cfg.ops && d->cfg.ops->set_pairs ? d->cfg.ops->set_pairs(d->cfg.ctx, pairs) : 0;
}

int uvn_dev_ctrl(struct uvn_dev *d)
{
	struct dev_ring *s = &d->ctrl;

	if (!s->vu)
		return -ENODEV;
	if (uvn_netdev_q_broken(&s->nq))
		return -EPROTO;
	return (int)uvn_netdev_ctrl(&s->nq, set_pairs, d);
}

bool uvn_dev_ctrl_arm(struct uvn_dev *d)
{
	return arm(&d->ctrl);
}

/* ----------------------------------------------------- disabled rings */

/*
 * vhost-user: a started but disabled TX ring is still processed, its
 * frames dropped (a guest turning queue pairs off may leave frames there
 * and would time out waiting for them). @budget bounds the chains per
 * ring, so a guest that keeps refilling its ring cannot keep the control
 * thread here.
 */
static unsigned discard(struct uvn_dev *d, struct uvn_vu_queue *q, struct uvn_vq_dev *dev,
			unsigned budget)
{
	struct iovec *iov = d->discard_iov; /* per device: two may run on two threads */
	unsigned num = uvn_vq_dev_num(dev), n = 0, staged = 0;
	struct uvn_vq_chain ch;
	bool notify = false;

	while (n < budget && uvn_vq_dev_pop(dev, &ch, iov, UVN_NETDEV_MAX_IOV) > 0) {
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
		uvn_vu_log_used(d->be, q);
	if (notify)
		uvn_vu_queue_notify(q);
	return n;
}

unsigned uvn_dev_discard_disabled(struct uvn_dev *d, unsigned budget)
{
	unsigned n = 0;

	for (unsigned i = 0; d->be && i < d->cfg.queue_pairs; i++) {
		struct uvn_vu_queue *q = uvn_vu_backend_queue(d->be, 2 * i + 1);
		/* The backend says which rings are safe to touch: not one whose
		 * memory went away with a new table. */
		struct uvn_vq_dev *dev = q ? uvn_vu_queue_idle_dev(q) : NULL;

		if (dev)
			n += discard(d, q, dev, budget);
	}
	return n;
}

/* ---------------------------------------------------- zero-copy, stats */

int uvn_dev_set_zerocopy(struct uvn_dev *d, enum uvn_dev_zc mode, uint32_t min_len,
			 unsigned max_held)
{
	if ((unsigned)mode > UVN_DEV_ZC_AUTO)
		return -EINVAL;
	d->cfg.zerocopy = mode;
	d->cfg.zc_min = min_len;
	d->cfg.zc_max_held = max_held;
	for (unsigned i = 0; i < d->cfg.queue_pairs; i++)
		if (d->tx[i].vu)
			uvn_netdev_q_set_zerocopy(&d->tx[i].nq, (enum uvn_zc_mode)mode, min_len,
						  max_held, d->tx[i].ext);
	return 0;
}

/* Called beside the ring's thread: its counters are read atomically. */
int uvn_dev_queue_stats(const struct uvn_dev *d, unsigned ring, struct uvn_dev_q_stats *out)
{
	const struct dev_ring *s = ring_at(d, ring);
	struct uvn_netdev_q_stats q;

	if (!s)
		return -EINVAL;
	if (!s->vu)
		return -ENODEV;
	uvn_stats_snapshot(&q, &s->nq.st, sizeof(q));
	memset(out, 0, sizeof(*out));
	out->packets = q.packets;
	out->bytes = q.bytes;
	out->drops = q.drop_nobuf + q.drop_toobig + q.drop_nopkt + q.drop_offload +
		     q.drop_gso_hdr + q.drop_gso_len + q.drop_gso_size + q.drop_csum;
	out->drop_nobuf = q.drop_nobuf;
	out->errors = q.err_short + q.err_hdr + q.err_toolong + q.err_format + q.err_ring +
		      q.ctrl_err;
	out->ctrl_cmds = q.ctrl_cmds;
	out->calls = q.notify;
	out->calls_suppressed = uvn_stat_read(&uvn_vq_dev_stats(s->nq.vq)->notify_suppressed);
	out->zc_packets = q.zc_packets;
	out->broken = uvn_netdev_q_broken(&s->nq) || s->vu->broken;
	return 0;
}

/* ------------------------------------------------------------ internal */

struct uvn_netdev_q *uvn_dev_netq(struct uvn_dev *d, unsigned ring)
{
	struct dev_ring *s = ring_at(d, ring);

	return s && s->vu ? &s->nq : NULL;
}

const struct uvn_netdev_q *uvn_dev_netq_const(const struct uvn_dev *d, unsigned ring)
{
	return uvn_dev_netq((struct uvn_dev *)d, ring);
}

struct uvn_vu_queue *uvn_dev_vu_queue(const struct uvn_dev *d, unsigned ring)
{
	struct dev_ring *s = ring_at(d, ring);

	return s ? s->vu : NULL;
}

struct uvn_vu_backend *uvn_dev_backend(const struct uvn_dev *d)
{
	return d->be;
}

void uvn_dev_set_rx_filter(struct uvn_dev *d, struct uvn_rx_filter *f)
{
	d->filter = f;
}
