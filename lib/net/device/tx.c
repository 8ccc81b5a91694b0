/* SPDX-License-Identifier: MIT */
/*
 * Guest TX -> packets. Each chain is header + frame in device-readable
 * buffers; the header is validated (the driver is not trusted), the frame
 * copied into a packet descriptor, and the chain returned with used length
 * 0 in the same burst.
 */
#include "net/device/netdev.h"
#include "net/iov.h"
#include "ring/ring.h"
#include "util/log.h"

enum { TX_DROP, TX_PKT, TX_NOPKT };

/* Packet descriptors for one burst: small ones taken in bulk up front. */
struct tx_pools {
	struct uvn_pkt_pool *small, *big;
	size_t small_room, big_room;
	struct uvn_pkt *spare[UVN_NETDEV_BURST];
	unsigned nspare;
};

static struct uvn_pkt *take_pkt(struct tx_pools *tp, uint32_t frame_len)
{
	if (UVN_LIKELY(frame_len <= tp->small_room))
		return tp->nspare ? tp->spare[--tp->nspare] : NULL;
	return uvn_pkt_alloc(tp->big);
}

static int tx_one(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch, struct tx_pools *tp,
		  struct uvn_pkt **out)
{
	struct virtio_net_hdr_v1 h;
	uint32_t frame_len;
	struct uvn_pkt *p;
	int err = 0;

	/* A chain no longer than the header carries no frame (CVE-2022-2132). */
	if (UVN_UNLIKELY(ch->out_len < UVN_NET_HDR_LEN + UVN_ETH_HLEN)) {
		q->st.err_short++;
		return TX_DROP;
	}
	frame_len = ch->out_len - UVN_NET_HDR_LEN;
	if (UVN_UNLIKELY(frame_len > UVN_NETDEV_MAX_FRAME ||
			 (frame_len > tp->small_room && frame_len > tp->big_room))) {
		q->st.err_toolong++;
		return TX_DROP;
	}
	p = take_pkt(tp, frame_len);
	if (UVN_UNLIKELY(!p))
		return TX_NOPKT;
	if (UVN_LIKELY(q->iov[0].iov_len >= ch->out_len)) {
		memcpy(&h, q->iov[0].iov_base, UVN_NET_HDR_LEN);
		memcpy(p->buf, (char *)q->iov[0].iov_base + UVN_NET_HDR_LEN, frame_len);
	} else {
		uvn_iov_to_buf(q->iov, ch->nout, 0, &h, UVN_NET_HDR_LEN);
		uvn_iov_to_buf(q->iov, ch->nout, UVN_NET_HDR_LEN, p->buf, frame_len);
	}
	/* Validate our copy: the guest may rewrite its buffer meanwhile. No
	 * offload asked for is always valid. */
	if (UVN_UNLIKELY(h.flags || h.gso_type))
		err = uvn_hdr_check_tx(&h, frame_len, q->features);
	if (UVN_UNLIKELY(err)) {
		q->st.err_hdr++;
		UVN_LOG_PEER("guest tx: %s", uvn_hdr_strerror(err));
		uvn_pkt_free(p);
		return TX_DROP;
	}
	uvn_pkt_set_buf(p, frame_len);
	p->vnet = h;
	p->vnet.hdr_len = 0;     /* never trusted */
	p->vnet.num_buffers = 0; /* the driver's value means nothing on tx */
	q->st.packets++;
	q->st.bytes += frame_len;
	*out = p;
	return TX_PKT;
}

static void broken(struct uvn_netdev_q *q, int ring_err)
{
	q->broken = true;
	if (ring_err) {
		q->ring_err = ring_err;
		q->st.err_ring++;
		UVN_LOG_PEER("guest tx ring broken: %s", uvn_vq_strerror(ring_err));
	} else {
		q->st.err_format++;
		UVN_LOG_PEER("guest tx chain has device-writable buffers: queue stopped");
	}
}

unsigned uvn_netdev_tx(struct uvn_netdev_q *q, struct uvn_pkt_pool *small,
		       struct uvn_pkt_pool *big, struct uvn_pkt **pkts, unsigned n)
{
	struct tx_pools tp = { .small = small, .big = big };
	unsigned got = 0, done = 0;

	if (UVN_UNLIKELY(q->broken))
		return 0;
	if (n > UVN_NETDEV_BURST)
		n = UVN_NETDEV_BURST;
	tp.small_room = small ? uvn_pkt_pool_buf_size(small) : 0;
	tp.big_room = big ? uvn_pkt_pool_buf_size(big) : 0;
	if (small) {
		tp.nspare = uvn_pkt_pool_avail(small) < n ? uvn_pkt_pool_avail(small) : n;
		tp.nspare = uvn_pkt_alloc_bulk(small, tp.spare, tp.nspare);
	}
	while (got < n) {
		struct uvn_vq_chain ch;
		int r = uvn_vq_dev_pop(q->vq, &ch, q->iov, UVN_NETDEV_MAX_IOV);

		if (r <= 0) {
			if (r < 0)
				broken(q, r);
			break;
		}
		if (UVN_UNLIKELY(ch.nin)) {
			broken(q, 0);
			break;
		}
		r = tx_one(q, &ch, &tp, &pkts[got]);
		if (UVN_UNLIKELY(r == TX_NOPKT)) {
			/* Back-pressure: the chain waits in the ring. */
			uvn_vq_dev_unpop(q->vq, &ch);
			q->st.drop_nopkt++;
			break;
		}
		uvn_vq_dev_push(q->vq, &ch, 0);
		done++;
		got += r == TX_PKT;
	}
	uvn_pkt_free_bulk(tp.spare, tp.nspare);
	if (done) {
		uvn_netdev_q_flush(q);
		q->st.bursts++;
	}
	return got;
}
