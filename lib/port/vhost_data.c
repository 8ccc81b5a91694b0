/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user port's data path: the ops the forwarding threads call.
 * Queue q's rx is polled by one thread at a time; tx is called by every
 * sender, each mapped onto the guest RX queue (sender % queues), which is
 * locked only when the guest has fewer queues than there are senders.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "port/vhost_port.h"
#include "ring/ring.h"
#include "util/json.h"
#include "util/sys.h"

/* Frames checked against the MTU at a time on their way to the guest. */
#define MTU_BURST 32

/* RARP (RFC 903) as QEMU and DPDK announce a migrated guest: broadcast
 * from its MAC, op 3 (request reverse), sender = target = its MAC, no
 * protocol addresses; a minimum-size frame. */
#define RARP_LEN 60
#define ETH_P_RARP 0x8035

static void rarp_frame(uint8_t *f, const uint8_t mac[6])
{
	static const uint8_t arp_hdr[8] = { 0, 1, 0x08, 0x00, 6, 4, 0, 3 };

	memset(f, 0, RARP_LEN);
	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	f[12] = ETH_P_RARP >> 8;
	f[13] = ETH_P_RARP & 0xff;
	memcpy(f + 14, arp_hdr, sizeof(arp_hdr));
	memcpy(f + 22, mac, 6);  /* sender hardware address */
	memcpy(f + 32, mac, 6);  /* target hardware address */
}

/* The RARP SEND_RARP asked for, if one waits and rx queue 0 is ready:
 * @return 1 with it in *pkt. */
static unsigned take_rarp(struct vhost_port *v, struct uvn_pkt **pkt)
{
	struct uvn_pkt_pool *pool = uvn_dev_rx_pool(v->dev, 0);
	struct uvn_pkt *p;

	if (!pool || !uvn_dev_netq(v->dev, 1))
		return 0;
	if (!atomic_exchange_explicit(&v->rarp_pending, false, memory_order_acquire))
		return 0;
	p = uvn_pkt_alloc(pool);
	if (!p) {
		/* no packet now: the next poll tries again */
		atomic_store_explicit(&v->rarp_pending, true, memory_order_relaxed);
		return 0;
	}
	rarp_frame(p->buf, v->rarp_mac);
	uvn_pkt_set_buf(p, RARP_LEN);
	atomic_fetch_add_explicit(&v->rarps, 1, memory_order_relaxed);
	*pkt = p;
	return 1;
}

static unsigned vhost_rx(struct uvn_port *port, unsigned q, struct uvn_pkt **pkts, unsigned n)
{
	struct vhost_port *v = (struct vhost_port *)port;
	struct vq_slot *s = &v->tx[q];
	unsigned got = 0;

	if (UVN_UNLIKELY(q == 0 && n && atomic_load_explicit(&v->rarp_pending, memory_order_relaxed)))
		got = take_rarp(v, pkts);
	got += uvn_dev_rx_burst(v->dev, q, pkts + got, n - got);
	if (port->conf.mtu)
		got = uvn_port_mtu_filter(port->conf.mtu, pkts, got, &s->mtu_drops);
	for (unsigned i = 0; i < got; i++) {
		pkts[i]->port = port->id;
		pkts[i]->queue = (uint16_t)q;
	}
	return got;
}

static unsigned vhost_nqueues(struct uvn_port *port)
{
	struct vhost_port *v = (struct vhost_port *)port;
	unsigned n = 0;

	while (n < v->pairs_on && uvn_dev_pair_ready(v->dev, n))
		n++;
	return n;
}

/* Keep the frames of @pkts the guest's receive filter lets through;
 * count the others. @return how many are kept */
static unsigned rx_filtered(struct vhost_port *v, struct vq_slot *s, struct uvn_pkt **pkts,
			    unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct uvn_pkt *p = pkts[i];
		uint8_t dst[6];
		const uint8_t *d = p->seg[0].iov_len >= sizeof(dst) ? p->seg[0].iov_base : dst;

		if (d == dst && uvn_pkt_read(p, 0, dst, sizeof(dst)) != sizeof(dst))
			memset(dst, 0xff, sizeof(dst)); /* shorter than a MAC: let the ring refuse it */
		if (uvn_rx_filter_pass(&v->filter, d))
			pkts[k++] = pkts[i];
		else
			uvn_stat_inc(&s->filtered);
	}
	return k;
}

/* Into the guest's RX ring @s, the frames that fit the port's mtu= and
 * that its receive filter takes; the others are counted (@s is ours: its
 * sender's, or locked). */
static unsigned tx_selected(struct vhost_port *v, struct vq_slot *s, struct uvn_pkt *const *pkts,
			    unsigned n)
{
	uint32_t mtu = v->base.conf.mtu;
	bool filter = !uvn_rx_filter_open(&v->filter);
	struct uvn_pkt *fit[MTU_BURST];
	unsigned sent = 0;

	while (n) {
		unsigned c = n < MTU_BURST ? n : MTU_BURST, k = c;

		if (mtu)
			k = uvn_port_mtu_select(mtu, pkts, c, fit, &s->mtu_drops);
		else
			memcpy(fit, pkts, c * sizeof(*fit));
		if (filter)
			k = rx_filtered(v, s, fit, k);
		sent += k ? uvn_dev_tx_burst(v->dev, s->qp, fit, k) : 0;
		pkts += c;
		n -= c;
	}
	return sent;
}

static unsigned vhost_tx(struct uvn_port *port, unsigned sender, struct uvn_pkt *const *pkts,
			 unsigned n)
{
	struct vhost_port *v = (struct vhost_port *)port;
	unsigned nq = vhost_nqueues(port), sent;
	struct vq_slot *s;
	bool shared;

	if (UVN_UNLIKELY(!nq)) {
		atomic_fetch_add_explicit(&v->dropped_down, n, memory_order_relaxed);
		return 0;
	}
	s = &v->rx[sender % nq];
	shared = v->senders > nq;
	if (shared)
		while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
			uvn_cpu_relax();
	if (port->conf.mtu || !uvn_rx_filter_open(&v->filter))
		sent = tx_selected(v, s, pkts, n);
	else
		sent = uvn_dev_tx_burst(v->dev, s->qp, pkts, n);
	if (shared)
		atomic_flag_clear_explicit(&s->lock, memory_order_release);
	return sent;
}

static void vhost_complete(struct uvn_port *port, unsigned q)
{
	uvn_dev_rx_done(((struct vhost_port *)port)->dev, q);
}

static bool vhost_arm(struct uvn_port *port, unsigned q)
{
	return uvn_dev_arm(((struct vhost_port *)port)->dev, q);
}

static int vhost_rx_fd(struct uvn_port *port, unsigned q)
{
	const struct uvn_dev *d = ((struct vhost_port *)port)->dev;
	int fd = uvn_dev_kick_fd(d, q);

	return fd < 0 && uvn_dev_netq_const(d, 2 * q + 1) ? UVN_PORT_RX_POLL : fd;
}

/* A kick: count it, and ask for no more while we drain the ring. */
static void vhost_rx_event(struct uvn_port *port, unsigned q)
{
	struct vhost_port *v = (struct vhost_port *)port;
	uint64_t n = uvn_dev_kicked(v->dev, q);

	if (n)
		atomic_fetch_add_explicit(&v->kicks, n, memory_order_relaxed);
}

static void vhost_set_senders(struct uvn_port *port, unsigned n)
{
	((struct vhost_port *)port)->senders = n;
}

/* The port's queue behind ring @ring (none for the control queue). */
static struct vq_slot *slot_of(struct vhost_port *v, unsigned ring)
{
	if (ring >= 2 * UVN_PORT_MAX_QUEUES)
		return NULL;
	return ring & 1 ? &v->tx[ring / 2] : &v->rx[ring / 2];
}

/* Called beside the queue's worker: its counters are read atomically. */
void uvn_vhost_add_q(struct vhost_port *v, struct uvn_port_stats *st, unsigned ring)
{
	const struct vq_slot *s = slot_of(v, ring);
	struct uvn_dev_q_stats q;

	if (uvn_dev_queue_stats(v->dev, ring, &q))
		return;
	if (ring == UVN_DEV_CTRL_RING || (ring & 1)) {
		st->rx_packets += q.packets;
		st->rx_bytes += q.bytes;
	} else {
		st->tx_packets += q.packets;
		st->tx_bytes += q.bytes;
	}
	st->drops += q.drops;
	st->errors += q.errors;
	st->calls += q.calls;
	st->calls_suppressed += q.calls_suppressed;
	if (!s)
		return;
	st->mtu_drops += uvn_stat_read(&s->mtu_drops);
	st->drops += uvn_stat_read(&s->mtu_drops);
	st->guest_filtered += uvn_stat_read(&s->filtered);
}

static void vhost_stats(struct uvn_port *port, struct uvn_port_stats *st)
{
	struct vhost_port *v = (struct vhost_port *)port;

	*st = v->gone;
	for (unsigned i = 0; i < 2 * UVN_PORT_MAX_QUEUES; i++)
		uvn_vhost_add_q(v, st, i);
	uvn_vhost_add_q(v, st, UVN_DEV_CTRL_RING);
	st->kicks += atomic_load_explicit(&v->kicks, memory_order_relaxed);
	st->errors += atomic_load_explicit(&v->refused, memory_order_relaxed);
	st->drops += v->discarded + atomic_load_explicit(&v->dropped_down, memory_order_relaxed);
}

/* Why a queue stopped, for `show queues`; NULL while it runs. */
static const char *broken_reason(const struct uvn_netdev_q *nq, const struct uvn_vu_queue *vu)
{
	if (uvn_netdev_q_broken(nq))
		return nq->ring_err ? uvn_vq_strerror(nq->ring_err) : "malformed chain (err_format)";
	if (vu->broken)
		return "vhost-user set-up refused (err_* in show stats)";
	return NULL;
}

static void dump_json(struct vhost_port *v, const struct uvn_netdev_q *nq,
		      const struct uvn_vu_queue *vu, unsigned qp, const char *dir, FILE *f)
{
	const char *why = broken_reason(nq, vu);

	fputs("{\"port\":", f);
	uvn_json_str(f, v->base.name);
	fprintf(f, ",\"vq\":%u,\"queue\":%u,\"dir\":\"%s\",\"size\":%u,\"broken\":%s,", vu->idx,
		qp, dir, uvn_vq_dev_num(nq->vq), why ? "true" : "false");
	if (why) {
		fputs("\"reason\":", f);
		uvn_json_str(f, why);
		fputc(',', f);
	}
	fprintf(f, "\"zerocopy\":%s,\"ring\":{", nq->zc ? "true" : "false");
	uvn_stats_json(f, uvn_vq_dev_stats(nq->vq), uvn_vq_stats_desc);
	fputs("},\"dev\":{", f);
	uvn_stats_json(f, &nq->st, uvn_netdev_q_stats_desc);
	fputs("}}", f);
}

static void dump_text(struct vhost_port *v, const struct uvn_netdev_q *nq,
		      const struct uvn_vu_queue *vu, unsigned qp, const char *dir, FILE *f)
{
	const char *why = broken_reason(nq, vu);

	fprintf(f, "%s vq %u (%s %u, size %u%s)%s%s\n  ring: ", v->base.name, vu->idx, dir, qp,
		uvn_vq_dev_num(nq->vq), nq->zc ? ", zero-copy" : "", why ? " BROKEN: " : "",
		why ? why : "");
	uvn_stats_print(f, uvn_vq_dev_stats(nq->vq), uvn_vq_stats_desc, 0);
	fputs("\n  dev:  ", f);
	uvn_stats_print(f, &nq->st, uvn_netdev_q_stats_desc, 0);
	fputc('\n', f);
}

/* Ring @ring, if it is ready. */
static void dump_ring(struct vhost_port *v, unsigned ring, const char *dir, FILE *f, bool json,
		      bool *first)
{
	const struct uvn_netdev_q *nq = uvn_dev_netq_const(v->dev, ring);
	const struct uvn_vu_queue *vu = uvn_dev_vu_queue(v->dev, ring);
	unsigned qp = ring == UVN_DEV_CTRL_RING ? 0 : ring / 2;

	if (!nq)
		return;
	if (json) {
		fputs(*first ? "" : ",", f);
		dump_json(v, nq, vu, qp, dir, f);
	} else {
		dump_text(v, nq, vu, qp, dir, f);
	}
	*first = false;
}

static void vhost_dump_queues(struct uvn_port *port, FILE *f, bool json, bool *first)
{
	struct vhost_port *v = (struct vhost_port *)port;

	for (unsigned i = 0; i < UVN_PORT_MAX_QUEUES; i++) {
		dump_ring(v, 2 * i, "guest_rx", f, json, first);
		dump_ring(v, 2 * i + 1, "guest_tx", f, json, first);
	}
	dump_ring(v, UVN_DEV_CTRL_RING, "ctrl", f, json, first);
}

const struct uvn_port_ops uvn_vhost_ops = {
	.kind = "vhost-user",
	.rx = vhost_rx,
	.tx = vhost_tx,
	.nqueues = vhost_nqueues,
	.rx_fd = vhost_rx_fd,
	.rx_event = vhost_rx_event,
	.set_senders = vhost_set_senders,
	.stats = vhost_stats,
	.arm = vhost_arm,
	.complete = vhost_complete,
	.dump_queues = vhost_dump_queues,
	.destroy = uvn_vhost_destroy,
};
