/* SPDX-License-Identifier: MIT */
/*
 * Guest TX -> packets. Each chain is header + frame in device-readable
 * buffers; the header is validated (the driver is not trusted), the frame
 * copied into a packet descriptor, and the chain returned with used length
 * 0 in the same burst.
 */
#include "net/device/netdev.h"
#include "net/device/zc.h"
#include "net/iov.h"
#include "ring/ring.h"
#include "util/log.h"

enum { TX_DROP, TX_PKT, TX_NOPKT, TX_BROKEN };

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
	return tp->big && frame_len <= tp->big_room ? uvn_pkt_alloc(tp->big) : NULL;
}

/*
 * Read the chain's header once into @h and check it against the frame.
 * @return the frame length, or 0 if the chain is dropped (counted)
 */
static uint32_t read_frame(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch,
			   struct virtio_net_hdr_v1 *h)
{
	uint32_t frame_len;
	int err = 0;

	/* A chain no longer than the header carries no frame (CVE-2022-2132). */
	if (UVN_UNLIKELY(ch->out_len < UVN_NET_HDR_LEN + UVN_ETH_HLEN)) {
		q->st.err_short++;
		return 0;
	}
	frame_len = ch->out_len - UVN_NET_HDR_LEN;
	if (UVN_UNLIKELY(frame_len > UVN_NETDEV_MAX_FRAME)) {
		q->st.err_toolong++;
		return 0;
	}
	if (UVN_LIKELY(q->iov[0].iov_len >= UVN_NET_HDR_LEN))
		memcpy(h, q->iov[0].iov_base, UVN_NET_HDR_LEN);
	else
		uvn_iov_to_buf(q->iov, ch->nout, 0, h, UVN_NET_HDR_LEN);
	/* Our copy is checked and used: the guest may rewrite its buffer.
	 * No offload asked for is always valid. */
	if (UVN_UNLIKELY(h->flags || h->gso_type))
		err = uvn_hdr_check_tx(h, frame_len, q->features);
	if (UVN_UNLIKELY(err)) {
		q->st.err_hdr++;
		UVN_LOG_PEER("guest tx: %s", uvn_hdr_strerror(err));
		return 0;
	}
	return frame_len;
}

static void set_meta(struct uvn_netdev_q *q, struct uvn_pkt *p, const struct virtio_net_hdr_v1 *h)
{
	p->vnet = *h;
	p->vnet.hdr_len = 0;     /* never trusted */
	p->vnet.num_buffers = 0; /* the driver's value means nothing on tx */
	q->st.packets++;
	q->st.bytes += p->len;
}

/* The frame copied into a packet descriptor of ours. */
static int copy_frame(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch, struct tx_pools *tp,
		      const struct virtio_net_hdr_v1 *h, uint32_t frame_len, struct uvn_pkt **out)
{
	struct uvn_pkt *p;

	if (UVN_UNLIKELY(frame_len > tp->small_room && frame_len > tp->big_room)) {
		q->st.err_toolong++;
		return TX_DROP;
	}
	p = take_pkt(tp, frame_len);
	if (UVN_UNLIKELY(!p))
		return TX_NOPKT;
	if (UVN_LIKELY(q->iov[0].iov_len >= ch->out_len))
		memcpy(p->buf, (char *)q->iov[0].iov_base + UVN_NET_HDR_LEN, frame_len);
	else
		uvn_iov_to_buf(q->iov, ch->nout, UVN_NET_HDR_LEN, p->buf, frame_len);
	uvn_pkt_set_buf(p, frame_len);
	set_meta(q, p, h);
	*out = p;
	return TX_PKT;
}

/* Should this frame be borrowed rather than copied? Counts why not. */
static bool want_borrow(struct uvn_netdev_q *q, uint32_t frame_len)
{
	struct uvn_netdev_zc *z = q->zc;

	if (z->mode == UVN_ZC_OFF)
		return false;
	if (z->mode == UVN_ZC_AUTO && frame_len < z->min_len) {
		q->st.zc_fb_small++;
		return false;
	}
	if (z->held >= z->max_held) {
		q->st.zc_fb_held++;
		return false;
	}
	return true;
}

/*
 * The frame handed on in the guest's buffers: the packet's segments skip
 * the header; the chain is held until the packet's completion.
 * @return TX_PKT, TX_BROKEN, or TX_DROP meaning "copy it instead"
 */
static int borrow_frame(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch,
			const struct virtio_net_hdr_v1 *h, uint32_t frame_len, struct uvn_pkt **out)
{
	size_t skip = UVN_NET_HDR_LEN;
	unsigned i = 0, n = 0;
	struct uvn_pkt *p;

	while (q->iov[i].iov_len <= skip)
		skip -= q->iov[i++].iov_len;
	if (UVN_UNLIKELY(ch->nout - i > UVN_PKT_MAX_SEGS)) {
		q->st.zc_fb_segs++;
		return TX_DROP;
	}
	p = uvn_pkt_alloc(q->zc->pool);
	if (UVN_UNLIKELY(!p)) {
		q->st.zc_fb_nopkt++;
		return TX_DROP;
	}
	p->ubuf = uvn_zc_hold(q, ch);
	if (UVN_UNLIKELY(!p->ubuf)) {
		uvn_pkt_free(p);
		return TX_BROKEN;
	}
	for (; i < ch->nout; i++, n++) {
		p->seg[n].iov_base = (char *)q->iov[i].iov_base + skip;
		p->seg[n].iov_len = q->iov[i].iov_len - skip;
		skip = 0;
	}
	p->nseg = (uint16_t)n;
	p->len = frame_len;
	set_meta(q, p, h);
	q->st.zc_packets++;
	*out = p;
	return TX_PKT;
}

static int tx_one(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch, struct tx_pools *tp,
		  struct uvn_pkt **out)
{
	struct virtio_net_hdr_v1 h;
	uint32_t frame_len = read_frame(q, ch, &h);
	int r;

	if (UVN_UNLIKELY(!frame_len))
		return TX_DROP;
	if (q->zc && want_borrow(q, frame_len)) {
		r = borrow_frame(q, ch, &h, frame_len, out);
		if (r != TX_DROP)
			return r;
	}
	r = copy_frame(q, ch, tp, &h, frame_len, out);
	if (r == TX_PKT && q->zc && q->zc->mode != UVN_ZC_OFF)
		q->st.zc_copied++;
	return r;
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
		UVN_LOG_PEER("guest tx chain malformed (writable buffers, or an id still in use): "
			     "queue stopped");
	}
}

/* The chain is done with at pop time: back to the guest (in order if tracked). */
static bool finish(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch)
{
	if (UVN_LIKELY(!q->zc)) {
		uvn_vq_dev_push(q->vq, ch, 0);
		return true;
	}
	return uvn_zc_finish(q, ch) == 0;
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
		if (r == TX_PKT && pkts[got]->ubuf) {
			/* borrowed: the chain goes back when the packet is freed */
		} else if (UVN_UNLIKELY(r == TX_BROKEN || !finish(q, &ch))) {
			if (r == TX_PKT)
				uvn_pkt_free(pkts[got]);
			broken(q, 0);
			break;
		}
		done++;
		got += r == TX_PKT;
	}
	uvn_pkt_free_bulk(tp.spare, tp.nspare);
	if (done) {
		uvn_netdev_q_flush(q);
		if (q->zc)
			q->zc->pushed = 0;
		q->st.bursts++;
	}
	return got;
}
