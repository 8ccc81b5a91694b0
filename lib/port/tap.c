/* SPDX-License-Identifier: MIT */
/*
 * A TAP device as a port (the data path and its counters here; the device,
 * its queues and offloads in tap_setup.c): frames carry a 12-byte virtio-net header
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
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "net/gso.h"
#include "port/tap_port.h"
#include "ring/ring.h"
#include "util/json.h"
#include "util/log.h"
#include "util/sys.h"

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

static bool tx_mtu_drop(struct tap_queue *q)
{
	uvn_stat_inc(&q->ts.tx_drops);
	uvn_stat_inc(&q->ts.tx_mtu_drops);
	return false;
}

/*
 * A GSO frame goes out with the headers we parsed and checked (g->hdr),
 * never the guest's own: with zero-copy they are still in its memory, and
 * it may rewrite them between our check and the kernel's copy.
 */
static bool tx_gso(struct tap_port *t, struct tap_queue *q, const struct uvn_pkt *p)
{
	struct virtio_net_hdr_v1 h = p->vnet;
	struct iovec iov[2 + UVN_PKT_MAX_SEGS];
	struct uvn_gso g;
	unsigned n;
	int err;

	/* The kernel checks GSO frames itself, but we pass on only what we
	 * could have segmented: the same rules at every destination. */
	err = uvn_gso_parse(p, &g);
	if (UVN_UNLIKELY(err)) {
		UVN_LOG_PEER("%s: GSO frame dropped: %s", t->base.name, uvn_gso_strerror(err));
		uvn_stat_inc(&q->ts.tx_drops);
		uvn_stat_inc(&q->ts.tx_gso_bad);
		return false;
	}
	if (UVN_UNLIKELY(t->base.conf.mtu && !uvn_gso_fits_mtu(&g, p->len, t->base.conf.mtu)))
		return tx_mtu_drop(q);
	if (UVN_UNLIKELY(g.type == VIRTIO_NET_HDR_GSO_UDP_L4 && !t->uso))
		return tx_segments(q, &g, p);
	uvn_gso_vnet(&g, &h);
	uvn_stat_inc(&q->ts.tx_gso);
	iov[0] = (struct iovec){ &h, UVN_NET_HDR_LEN };
	iov[1] = (struct iovec){ g.hdr, g.hdr_len };
	n = slice(p, g.hdr_len, p->len - g.hdr_len, iov + 2);
	return tap_write(q, iov, 2 + n, p->len);
}

static bool tx_one(struct tap_port *t, struct tap_queue *q, const struct uvn_pkt *p)
{
	struct virtio_net_hdr_v1 h = p->vnet;
	struct iovec iov[1 + UVN_PKT_MAX_SEGS];

	if (UVN_UNLIKELY(uvn_hdr_is_gso(&p->vnet)))
		return tx_gso(t, q, p);
	if (UVN_UNLIKELY(t->base.conf.mtu && !uvn_port_mtu_fits(p, t->base.conf.mtu)))
		return tx_mtu_drop(q);
	iov[0] = (struct iovec){ &h, UVN_NET_HDR_LEN };
	memcpy(iov + 1, p->seg, p->nseg * sizeof(*iov));
	h.hdr_len = 0;
	h.num_buffers = 0;
	if (uvn_hdr_needs_csum(&h))
		uvn_stat_inc(&q->ts.tx_csum);
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

/* Event mode: a queue's fd is readable when frames wait (level-triggered). */
static int tap_rx_fd(struct uvn_port *port, unsigned q)
{
	struct tap_port *t = (struct tap_port *)port;

	return q < t->nq ? t->q[q].fd : -1;
}

const struct uvn_port_ops uvn_tap_ops = {
	.kind = "tap",
	.rx = tap_rx,
	.tx = tap_tx,
	.nqueues = tap_nqueues,
	.rx_fd = tap_rx_fd,
	.set_senders = uvn_tap_set_senders,
	.stats = tap_stats,
	.arm = tap_arm,
	.dump_queues = tap_dump_queues,
	.destroy = uvn_tap_destroy,
};
