/* SPDX-License-Identifier: MIT */
/*
 * A TAP device as a port: frames carry a 12-byte virtio-net header
 * (IFF_VNET_HDR with TUNSETVNETHDRSZ 12), so offloads cross the boundary
 * unchanged. TUNSETOFFLOAD tells the kernel what we take from it: partial
 * checksums, and TSO4/6 (+ECN) and USO4/6 frames of up to 64 KB when we
 * have big buffers for them; we complete or segment them for destinations
 * that cannot take them. In the other direction the kernel takes any
 * checksum or GSO frame it knows from us; a USO frame for a kernel without
 * USO (before 6.2) is segmented here, straight into the writes.
 *
 * Reads go into a small buffer first and run on into a big one only for a
 * frame longer than the small one, which is then copied down (once, its
 * first small-buffer's worth): small frames stay as cheap as before.
 *
 * Queues: the device is multi-queue (IFF_MULTI_QUEUE), one queue (an fd
 * of its own) per data-path thread that sends here (set_senders), up to
 * UVN_PORT_MAX_QUEUES; the kernel spreads the frames it sends us over the
 * queues by flow. Rx queue q is read by the one thread that polls it, with
 * packets of its own (pools are single-threaded); sender s writes on queue
 * s % queues, alone on it unless there are more senders than queues (then
 * it takes the queue's lock). So every counter has one writer: a queue's
 * rx counters its poller, its tx counters its sender. A device someone
 * else made single-queue is used with one queue, shared under the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "net/gso.h"
#include "port/port.h"
#include "ring/ring.h"
#include "util/json.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/sys.h"

/* Linux 6.2 UAPI; older headers lack them (and older kernels refuse them). */
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#endif
#ifndef TUN_F_USO6
#define TUN_F_USO6 0x40
#endif

/* Packets each queue has for its reads, at most (the pools given to
 * uvn_port_tap_create say their sizes): a burst, forwarded and freed
 * before the next, and a spare big one. */
#define Q_SMALL 1024
#define Q_BIG 64

/* A queue's counters for `uvnetd ctl show queues`, and the port's summed:
 * written by the thread that polls the queue. */
struct tap_rx_stats {
	uint64_t offload_flags;  /* TUN_F_* the kernel accepted (a gauge) */
	uint64_t rx_packets, rx_bytes;
	uint64_t rx_drops;       /* no packet to read into, too long, bad header, over the MTU */
	uint64_t rx_errors;      /* reads that failed or were shorter than a frame */
	uint64_t rx_mtu_drops;   /* frames over the port's mtu= */
	uint64_t rx_gso;         /* GSO frames from the kernel, passed on unsegmented */
	uint64_t rx_csum;        /* partial-checksum frames from the kernel */
	uint64_t rx_big;         /* frames longer than a small buffer, read into a big one */
	uint64_t rx_toolong;     /* frames longer than our buffers: dropped */
	uint64_t rx_bad_hdr;     /* the kernel's header failed validation: dropped */
};

/* Written by the queue's sender (under the queue's lock when shared). */
struct tap_tx_stats {
	uint64_t tx_packets, tx_bytes;
	uint64_t tx_drops;       /* refused writes, malformed GSO frames, over the MTU */
	uint64_t tx_mtu_drops;   /* frames over the port's mtu= */
	uint64_t tx_gso;         /* GSO frames written whole (the kernel segments if needed) */
	uint64_t tx_csum;        /* partial-checksum frames written (the kernel completes them) */
	uint64_t tx_gso_sw;      /* GSO frames segmented here for a kernel without their type */
	uint64_t tx_gso_segs;    /* segments written for them */
	uint64_t tx_gso_bad;     /* malformed GSO frames dropped */
	uint64_t tx_err;         /* writes the kernel refused */
};

#define R(f) UVN_STAT(struct tap_rx_stats, f)
static const struct uvn_stat_desc tap_rx_stats_desc[] = {
	R(offload_flags), R(rx_packets), R(rx_bytes), R(rx_drops), R(rx_errors), R(rx_mtu_drops),
	R(rx_gso), R(rx_csum), R(rx_big), R(rx_toolong), R(rx_bad_hdr),
	{ NULL, 0 },
};
#define T(f) UVN_STAT(struct tap_tx_stats, f)
static const struct uvn_stat_desc tap_tx_stats_desc[] = {
	T(tx_packets), T(tx_bytes), T(tx_drops), T(tx_mtu_drops), T(tx_gso), T(tx_csum),
	T(tx_gso_sw), T(tx_gso_segs), T(tx_gso_bad), T(tx_err),
	{ NULL, 0 },
};

struct tap_queue {
	int fd;
	/* rx: its poller's */
	struct uvn_pkt_pool *small, *big; /* big: NULL when the kernel sends no GSO frames */
	bool own_pools;                   /* not the creator's (queue 0 may have those) */
	struct uvn_pkt *spare;            /* a big descriptor for the next long frame */
	struct tap_rx_stats rs;
	/* tx: its sender's, apart from the poller's lines */
	_Alignas(64) atomic_flag lock;    /* taken when senders share the queue */
	struct tap_tx_stats ts;
};

struct tap_port {
	struct uvn_port base;
	char ifname[IFNAMSIZ];
	struct uvn_loop *loop;            /* control thread's, may be NULL */
	struct uvn_handler assign_h;      /* one-shot: new queues, to be given out */
	size_t small_room, big_room;      /* big_room 0: no GSO frames from the kernel */
	unsigned small_count, big_count;  /* each queue's packets */
	uint64_t rx_features;             /* offloads we accepted from the kernel (as virtio bits) */
	unsigned offloads;                /* the same as TUN_F_* */
	bool uso;                         /* the kernel takes GSO_UDP_L4 frames */
	bool mq;                          /* the device is multi-queue */
	/* Changed on the control thread with the data path parked. */
	unsigned senders;
	unsigned nq;
	struct tap_queue q[UVN_PORT_MAX_QUEUES];
};

/* A read came back with @len frame bytes: keep it in @p, or move it into
 * the spare big descriptor it ran on into. @return the packet. */
static struct uvn_pkt *settle(struct tap_port *t, struct tap_queue *q, struct uvn_pkt *p,
			      uint32_t len)
{
	struct uvn_pkt *b = q->spare;

	if (UVN_LIKELY(len <= t->small_room)) {
		uvn_pkt_set_buf(p, len);
		return p;
	}
	q->spare = NULL;
	memcpy(b->buf, p->buf, t->small_room);
	b->vnet = p->vnet;
	uvn_pkt_free(p);
	uvn_pkt_set_buf(b, len);
	uvn_stat_inc(&q->rs.rx_big);
	return b;
}

/* Validate the kernel's header; DATA_VALID is the kernel's to set. */
static bool rx_hdr_ok(struct tap_port *t, struct tap_queue *q, struct virtio_net_hdr_v1 *h,
		      uint32_t len)
{
	uint8_t valid = h->flags & VIRTIO_NET_HDR_F_DATA_VALID;
	int err;

	h->flags &= (uint8_t)~VIRTIO_NET_HDR_F_DATA_VALID;
	err = uvn_hdr_check_tx(h, len, t->rx_features);
	h->flags |= valid;
	h->hdr_len = 0;     /* never trusted */
	h->num_buffers = 0;
	if (UVN_UNLIKELY(err)) {
		UVN_LOG_PEER("%s: frame from the kernel: %s", t->base.name, uvn_hdr_strerror(err));
		return false;
	}
	uvn_stat_add(&q->rs.rx_gso, uvn_hdr_is_gso(h));
	uvn_stat_add(&q->rs.rx_csum, uvn_hdr_needs_csum(h) && !uvn_hdr_is_gso(h));
	return true;
}

/* A frame read that is not passed on: counted in drops and in @why. */
static void rx_drop(struct tap_queue *q, struct uvn_pkt *p, uint64_t *why)
{
	uvn_pkt_free(p);
	uvn_stat_inc(&q->rs.rx_drops);
	uvn_stat_inc(why);
}

/* One read into @p (and the spare big packet, if there is one).
 * @return frame bytes, 0 for nothing (more may come: continue), -1 to stop */
static int64_t rx_read(struct tap_port *t, struct tap_queue *q, struct uvn_pkt *p, size_t *room)
{
	struct iovec iov[3];
	unsigned niov = 2;
	ssize_t r;

	*room = t->small_room;
	if (q->big && !q->spare)
		q->spare = uvn_pkt_alloc(q->big);
	iov[0] = (struct iovec){ &p->vnet, UVN_NET_HDR_LEN };
	iov[1] = (struct iovec){ p->buf, t->small_room };
	if (q->spare) {
		iov[2] = (struct iovec){ (char *)q->spare->buf + t->small_room,
					 t->big_room - t->small_room };
		*room = t->big_room;
		niov = 3;
	}
	r = readv(q->fd, iov, (int)niov);
	if (r >= (ssize_t)(UVN_NET_HDR_LEN + UVN_ETH_HLEN))
		return r - UVN_NET_HDR_LEN;
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return -1;
	uvn_stat_inc(&q->rs.rx_errors);
	if (r >= 0)
		return 0;
	UVN_LOG_PEER("%s: read: %s", t->base.name, strerror(errno));
	return -1;
}

static unsigned tap_rx(struct uvn_port *port, unsigned qi, struct uvn_pkt **pkts, unsigned n)
{
	struct tap_port *t = (struct tap_port *)port;
	uint32_t mtu = port->conf.mtu;
	struct tap_queue *q;
	unsigned got = 0;

	if (UVN_UNLIKELY(qi >= t->nq))
		return 0;
	q = &t->q[qi];
	while (got < n) {
		struct uvn_pkt *p = uvn_pkt_alloc(q->small);
		size_t room;
		int64_t len;

		if (!p) {
			uvn_stat_inc(&q->rs.rx_drops);
			break;
		}
		len = rx_read(t, q, p, &room);
		if (len <= 0) {
			uvn_pkt_free(p);
			if (len < 0)
				break;
			continue;
		}
		/* tun reports a frame's whole length even when it cut it to our
		 * buffers; no frame we take fills them exactly. */
		if (UVN_UNLIKELY((size_t)len >= room)) {
			rx_drop(q, p, &q->rs.rx_toolong);
			continue;
		}
		if (UVN_LIKELY(!p->vnet.flags && !p->vnet.gso_type)) {
			/* Nothing else in such a header means anything: no stale
			 * field goes on with the frame. */
			p->vnet = (struct virtio_net_hdr_v1){ 0 };
		} else if (UVN_UNLIKELY(!rx_hdr_ok(t, q, &p->vnet, (uint32_t)len))) {
			rx_drop(q, p, &q->rs.rx_bad_hdr);
			continue;
		}
		p = settle(t, q, p, (uint32_t)len);
		/* received, as on a vhost-user port: then over the MTU or not */
		uvn_stat_inc(&q->rs.rx_packets);
		uvn_stat_add(&q->rs.rx_bytes, p->len);
		if (UVN_UNLIKELY(mtu && !uvn_port_mtu_fits(p, mtu))) {
			rx_drop(q, p, &q->rs.rx_mtu_drops);
			continue;
		}
		p->port = port->id;
		p->queue = (uint16_t)qi;
		pkts[got++] = p;
	}
	return got;
}

/* iovecs for bytes [off, off + len) of @p. @return how many */
static unsigned slice(const struct uvn_pkt *p, uint32_t off, uint32_t len, struct iovec *iov)
{
	unsigned n = 0;

	for (unsigned i = 0; i < p->nseg && len; i++) {
		size_t l = p->seg[i].iov_len, c;

		if (off >= l) {
			off -= (uint32_t)l;
			continue;
		}
		c = l - off < len ? l - off : len;
		iov[n++] = (struct iovec){ (char *)p->seg[i].iov_base + off, c };
		len -= (uint32_t)c;
		off = 0;
	}
	return n;
}

static bool tap_write(struct tap_queue *q, const struct iovec *iov, unsigned n, uint32_t frame_len)
{
	if (UVN_UNLIKELY(writev(q->fd, iov, (int)n) < 0)) {
		uvn_stat_inc(&q->ts.tx_drops);
		uvn_stat_inc(&q->ts.tx_err);
		return false;
	}
	uvn_stat_inc(&q->ts.tx_packets);
	uvn_stat_add(&q->ts.tx_bytes, frame_len);
	return true;
}

/* A GSO type this kernel does not know: its segments, with partial
 * checksums the kernel completes, one write each. */
static bool tx_segments(struct tap_queue *q, const struct uvn_gso *g, const struct uvn_pkt *p)
{
	struct virtio_net_hdr_v1 h;
	uint8_t hdr[UVN_GSO_MAX_HDR];
	struct iovec iov[2 + UVN_PKT_MAX_SEGS];
	bool all = true;

	uvn_gso_seg_vnet(g, true, &h);
	iov[0] = (struct iovec){ &h, UVN_NET_HDR_LEN };
	iov[1] = (struct iovec){ hdr, g->hdr_len };
	uvn_stat_inc(&q->ts.tx_gso_sw);
	for (uint32_t i = 0; i < g->nsegs; i++) {
		uint32_t off, len = uvn_gso_seg(g, p, i, true, hdr, &off);
		unsigned n = slice(p, off, len, iov + 2);

		if (tap_write(q, iov, 2 + n, g->hdr_len + len))
			uvn_stat_inc(&q->ts.tx_gso_segs);
		else
			all = false;
	}
	return all;
}

static bool tx_one(struct tap_port *t, struct tap_queue *q, const struct uvn_pkt *p)
{
	struct virtio_net_hdr_v1 h = p->vnet;
	struct iovec iov[1 + UVN_PKT_MAX_SEGS];
	struct uvn_gso g;
	int err;

	if (UVN_UNLIKELY(t->base.conf.mtu && !uvn_port_mtu_fits(p, t->base.conf.mtu))) {
		uvn_stat_inc(&q->ts.tx_drops);
		uvn_stat_inc(&q->ts.tx_mtu_drops);
		return false;
	}
	iov[0] = (struct iovec){ &h, UVN_NET_HDR_LEN };
	memcpy(iov + 1, p->seg, p->nseg * sizeof(*iov));
	if (UVN_LIKELY(!uvn_hdr_is_gso(&p->vnet))) {
		h.hdr_len = 0;
		h.num_buffers = 0;
		if (uvn_hdr_needs_csum(&h))
			uvn_stat_inc(&q->ts.tx_csum);
		return tap_write(q, iov, 1 + p->nseg, p->len);
	}
	/* The kernel checks GSO frames itself, but we pass on only what we
	 * could have segmented: the same rules at every destination. */
	err = uvn_gso_parse(p, &g);
	if (UVN_UNLIKELY(err)) {
		UVN_LOG_PEER("%s: GSO frame dropped: %s", t->base.name, uvn_gso_strerror(err));
		uvn_stat_inc(&q->ts.tx_drops);
		uvn_stat_inc(&q->ts.tx_gso_bad);
		return false;
	}
	if (UVN_UNLIKELY(g.type == VIRTIO_NET_HDR_GSO_UDP_L4 && !t->uso))
		return tx_segments(q, &g, p);
	uvn_gso_vnet(&g, &h);
	uvn_stat_inc(&q->ts.tx_gso);
	return tap_write(q, iov, 1 + p->nseg, p->len);
}

static unsigned tap_tx(struct uvn_port *port, unsigned sender, struct uvn_pkt *const *pkts,
		       unsigned n)
{
	struct tap_port *t = (struct tap_port *)port;
	struct tap_queue *q = &t->q[sender % t->nq];
	bool shared = t->senders > t->nq;
	unsigned sent = 0;

	if (shared)
		while (atomic_flag_test_and_set_explicit(&q->lock, memory_order_acquire))
			uvn_cpu_relax();
	for (unsigned i = 0; i < n; i++)
		sent += tx_one(t, q, pkts[i]);
	if (shared)
		atomic_flag_clear_explicit(&q->lock, memory_order_release);
	return sent;
}

static unsigned tap_nqueues(struct uvn_port *port)
{
	return ((struct tap_port *)port)->nq;
}

static void tap_stats(struct uvn_port *port, struct uvn_port_stats *st)
{
	struct tap_port *t = (struct tap_port *)port;

	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < t->nq; i++) {
		struct tap_rx_stats r;
		struct tap_tx_stats x;

		uvn_stats_snapshot(&r, &t->q[i].rs, sizeof(r));
		uvn_stats_snapshot(&x, &t->q[i].ts, sizeof(x));
		st->rx_packets += r.rx_packets;
		st->rx_bytes += r.rx_bytes;
		st->tx_packets += x.tx_packets;
		st->tx_bytes += x.tx_bytes;
		st->drops += r.rx_drops + x.tx_drops;
		st->errors += r.rx_errors;
		st->mtu_drops += r.rx_mtu_drops + x.tx_mtu_drops;
	}
}

static bool tap_arm(struct uvn_port *port, unsigned q)
{
	(void)port;
	(void)q;
	return true; /* the fd stays in the loop, level-triggered */
}

static void tap_dump_queues(struct uvn_port *port, FILE *f, bool json, bool *first)
{
	struct tap_port *t = (struct tap_port *)port;

	for (unsigned i = 0; i < t->nq; i++) {
		const struct tap_queue *q = &t->q[i];

		if (json) {
			fprintf(f, "%s{\"port\":", *first ? "" : ",");
			uvn_json_str(f, port->name);
			/* vq: the label that tells queues apart in openmetrics */
			fprintf(f, ",\"vq\":%u,\"queue\":%u,\"dir\":\"tap\",\"dev\":{", i, i);
			uvn_stats_json(f, &q->rs, tap_rx_stats_desc);
			fputc(',', f);
			uvn_stats_json(f, &q->ts, tap_tx_stats_desc);
			fputs("}}", f);
		} else {
			fprintf(f, "%s queue %u (offloads 0x%llx)\n  dev:  ", port->name, i,
				(unsigned long long)uvn_stat_read(&q->rs.offload_flags));
			uvn_stats_print(f, &q->rs, tap_rx_stats_desc, 0);
			fputc(' ', f);
			uvn_stats_print(f, &q->ts, tap_tx_stats_desc, 0);
			fputc('\n', f);
		}
		*first = false;
	}
}

static void queue_close(struct tap_queue *q)
{
	if (q->spare)
		uvn_pkt_free(q->spare);
	if (q->fd >= 0)
		close(q->fd);
	if (q->own_pools) {
		uvn_pkt_pool_destroy(q->small);
		uvn_pkt_pool_destroy(q->big);
	}
	*q = (struct tap_queue){ .fd = -1 };
}

static void tap_destroy(struct uvn_port *port)
{
	struct tap_port *t = (struct tap_port *)port;

	if (t->loop)
		uvn_timer_stop(t->loop, &t->assign_h);
	for (unsigned i = 0; i < t->nq; i++)
		queue_close(&t->q[i]);
	free(t);
}

/* Event mode: a queue's fd is readable when frames wait (level-triggered). */
static int tap_rx_fd(struct uvn_port *port, unsigned q)
{
	struct tap_port *t = (struct tap_port *)port;

	return q < t->nq ? t->q[q].fd : -1;
}

/* Open a queue of the device: with @mq, one more of a multi-queue device
 * (or the first, making the device one). @return the fd or -errno */
static int tap_open(const char *ifname, bool mq)
{
	struct ifreq ifr = { 0 };
	int hdrsz = UVN_NET_HDR_LEN, fd, le = 1;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (mq ? IFF_MULTI_QUEUE : 0);
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) || ioctl(fd, TUNSETVNETHDRSZ, &hdrsz) ||
	    ioctl(fd, TUNSETVNETLE, &le)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* Queue @q: on @fd, or a new one (@fd < 0), with packets of its own or,
 * with @small set, those (@big with them); @fd is closed on failure.
 * @return 0 or -errno */
static int queue_open(struct tap_port *t, struct tap_queue *q, int fd, struct uvn_pkt_pool *small,
		      struct uvn_pkt_pool *big)
{
	struct uvn_pkt_pool_cfg sc = { .count = t->small_count, .buf_size = t->small_room,
				       .name = "tap" };
	struct uvn_pkt_pool_cfg bc = { .count = t->big_count, .buf_size = t->big_room,
				       .name = "tap-big" };
	int r = fd >= 0 ? fd : tap_open(t->ifname, t->mq);

	*q = (struct tap_queue){ .fd = r, .small = small, .big = t->big_room ? big : NULL };
	atomic_flag_clear(&q->lock);
	if (r < 0)
		return r;
	q->rs.offload_flags = t->offloads;
	if (small)
		return 0;
	q->own_pools = true;
	r = uvn_pkt_pool_create(&sc, &q->small);
	if (!r && t->big_room)
		r = uvn_pkt_pool_create(&bc, &q->big);
	if (r)
		queue_close(q);
	return r;
}

/* One-shot, not light: the daemon gives every port's queues out again
 * after a control event, with the workers parked; the new queues are
 * polled from then on. */
static void on_assign(struct uvn_handler *h, uint32_t events)
{
	struct tap_port *t = h->ctx;

	(void)events;
	uvn_timer_stop(t->loop, h);
}

/*
 * A queue per sender: opened here, on the control thread with the data
 * path parked. The daemon asked for the queue count before telling us the
 * senders, so the new queues wait for its next turn, which assign_h
 * brings at once; until then the kernel may queue frames on them (tx
 * already uses them). Queues are never taken away: a queue whose fd a
 * worker still watches would keep receiving.
 */
static void tap_set_senders(struct uvn_port *port, unsigned n)
{
	struct tap_port *t = (struct tap_port *)port;
	unsigned want = !t->mq ? 1 : n < UVN_PORT_MAX_QUEUES ? n : UVN_PORT_MAX_QUEUES, was = t->nq;
	int r;

	t->senders = n;
	while (t->nq < want) {
		r = queue_open(t, &t->q[t->nq], -1, NULL, NULL);
		if (r) {
			UVN_WARN("%s: queue %u: %s: %u queues for %u senders", port->name, t->nq,
				 strerror(-r), t->nq, n);
			break;
		}
		t->nq++;
	}
	if (t->nq == was || !t->loop || t->assign_h.fd >= 0)
		return;
	t->assign_h = (struct uvn_handler){ .fd = -1, .fn = on_assign, .ctx = t };
	if (uvn_timer_start(t->loop, &t->assign_h, 1, 0))
		UVN_ERR("%s: cannot start the timer that has queues 1-%u polled", port->name,
			t->nq - 1);
}

static const struct uvn_port_ops tap_ops = {
	.kind = "tap",
	.rx = tap_rx,
	.tx = tap_tx,
	.nqueues = tap_nqueues,
	.rx_fd = tap_rx_fd,
	.set_senders = tap_set_senders,
	.stats = tap_stats,
	.arm = tap_arm,
	.dump_queues = tap_dump_queues,
	.destroy = tap_destroy,
};

/* Up, so frames flow without an `ip link set up` (a TAP moved to another
 * namespace afterwards goes down and is its owner's to bring up). */
static void tap_up(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) ||
	    (!(ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr))))
		UVN_WARN("tap %s: cannot bring it up: %s", ifname, strerror(errno));
	if (s >= 0)
		close(s);
}

int uvn_port_tap_set_mtu(struct uvn_port *port, uint32_t mtu)
{
	struct tap_port *t = (struct tap_port *)port;
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", t->ifname);
	ifr.ifr_mtu = (int)mtu;
	if (s < 0 || ioctl(s, SIOCSIFMTU, &ifr))
		r = -errno;
	if (s >= 0)
		close(s);
	if (r)
		UVN_ERR("%s: cannot set the device's MTU to %u: %s", port->name, mtu, strerror(-r));
	return r;
}

/*
 * Offloads we take from the kernel, the most it knows first: tun refuses
 * flags it does not know (EINVAL), so an older kernel gets fewer. GSO
 * frames only with big buffers for them. @return the TUN_F_* set, or -errno
 */
static int tap_offload(int fd, bool gso)
{
	static const unsigned want[] = {
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN | TUN_F_USO4 | TUN_F_USO6,
		TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN,
		TUN_F_CSUM,
	};
	unsigned i = gso ? 0 : 2;

	for (; i < sizeof(want) / sizeof(want[0]); i++)
		if (!ioctl(fd, TUNSETOFFLOAD, want[i]))
			return (int)want[i];
	return -errno;
}

static uint64_t virtio_bits(unsigned tun)
{
	uint64_t f = 1ull << VIRTIO_NET_F_CSUM;

	if (tun & TUN_F_TSO4)
		f |= 1ull << VIRTIO_NET_F_HOST_TSO4;
	if (tun & TUN_F_TSO6)
		f |= 1ull << VIRTIO_NET_F_HOST_TSO6;
	if (tun & TUN_F_TSO_ECN)
		f |= 1ull << VIRTIO_NET_F_HOST_ECN;
	if (tun & TUN_F_USO4)
		f |= 1ull << VIRTIO_NET_F_HOST_USO;
	return f;
}

/* The device's first queue, multi-queue unless someone else made it
 * single-queue (tun then refuses IFF_MULTI_QUEUE with EINVAL), and what
 * it offloads. @return the fd or -errno */
static int open_first(struct tap_port *t, bool gso)
{
	int fd = tap_open(t->ifname, true), off;

	t->mq = fd >= 0;
	if (fd == -EINVAL) {
		fd = tap_open(t->ifname, false);
		if (fd >= 0)
			UVN_WARN("%s: a single-queue device: one queue, shared by the workers",
				 t->base.name);
	}
	if (fd < 0)
		return fd;
	off = tap_offload(fd, gso);
	if (off < 0) {
		close(fd);
		return off;
	}
	t->offloads = (unsigned)off;
	return fd;
}

/* @own: queue 0 too has packets of its own. */
static int tap_create(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
		      struct uvn_pkt_pool *big, bool own, struct uvn_port **out)
{
	size_t small_room = uvn_pkt_pool_buf_size(small);
	bool gso = big && uvn_pkt_pool_buf_size(big) > UVN_GSO_MAX_FRAME &&
		   uvn_pkt_pool_buf_size(big) > small_room;
	struct tap_port *t;
	unsigned off;
	int fd, r;

	if (!*ifname || strlen(ifname) >= IFNAMSIZ) {
		UVN_ERR("tap %s: interface names have 1 to %d characters", ifname, IFNAMSIZ - 1);
		return -ENAMETOOLONG;
	}
	/* its queues' tx halves are cache-line aligned: so must it be */
	t = aligned_alloc(_Alignof(struct tap_port), sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0, sizeof(*t));
	t->base.ops = &tap_ops;
	snprintf(t->base.name, sizeof(t->base.name), "tap:%s", ifname);
	snprintf(t->ifname, sizeof(t->ifname), "%s", ifname);
	t->loop = loop;
	t->assign_h.fd = -1;
	fd = open_first(t, gso);
	if (fd < 0) {
		UVN_ERR("tap %s: %s", ifname, strerror(-fd));
		free(t);
		return fd;
	}
	off = t->offloads;
	t->small_room = small_room;
	t->small_count = uvn_pkt_pool_count(small) < Q_SMALL ? uvn_pkt_pool_count(small) : Q_SMALL;
	if (off & (TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4)) {
		t->big_room = uvn_pkt_pool_buf_size(big);
		t->big_count = uvn_pkt_pool_count(big) < Q_BIG ? uvn_pkt_pool_count(big) : Q_BIG;
	}
	t->rx_features = virtio_bits(off);
	t->uso = off & TUN_F_USO4;
	t->senders = 1;
	/* Queue 0 on the fd we have: a device nobody else holds goes away
	 * with its last fd, and its offloads with it. */
	r = own ? queue_open(t, &t->q[0], fd, NULL, NULL) : queue_open(t, &t->q[0], fd, small, big);
	if (r) {
		UVN_ERR("tap %s: %s", ifname, strerror(-r));
		free(t);
		return r;
	}
	t->nq = 1;
	tap_up(ifname);
	UVN_INFO("%s: offloads from the kernel: csum%s%s%s%s", t->base.name,
		 off & TUN_F_TSO4 ? " tso4" : "", off & TUN_F_TSO6 ? " tso6" : "",
		 off & TUN_F_TSO_ECN ? " ecn" : "", off & TUN_F_USO4 ? " uso4 uso6" : "");
	*out = &t->base;
	return 0;
}

int uvn_port_tap_create(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
			struct uvn_pkt_pool *big, struct uvn_port **out)
{
	return tap_create(ifname, loop, small, big, false, out);
}

int uvn_port_tap_create_own(const char *ifname, struct uvn_loop *loop, struct uvn_pkt_pool *small,
			    struct uvn_pkt_pool *big, struct uvn_port **out)
{
	return tap_create(ifname, loop, small, big, true, out);
}

int uvn_port_tap_fd(const struct uvn_port *p)
{
	return ((const struct tap_port *)p)->q[0].fd;
}
