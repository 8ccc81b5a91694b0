/* SPDX-License-Identifier: MIT */
/*
 * Guest TX -> packets. Each chain is header + frame in device-readable
 * buffers. A burst goes in two passes:
 *  1. take the chains (descriptor reads), pick a packet descriptor for each
 *     (copied into, or borrowing the guest's buffers: zero-copy) and ask
 *     for the frames' first cache lines;
 *  2. in ring order, read and check each header (the driver is not
 *     trusted) and copy the frames; the chains go back in ring order
 *     (copied or dropped ones after the burst's copies, borrowed ones
 *     when their packets are freed).
 * Pass 1 issues the cache misses of the whole burst before pass 2 waits on
 * any of them: the lines come from the guest's CPU.
 */
#include "net/device/netdev.h"
#include "net/device/zc.h"
#include "net/iov.h"
#include "ring/ring.h"
#include "util/log.h"

/* One chain of the burst between the two passes. */
struct tx_item {
	struct uvn_vq_chain ch;
	struct uvn_pkt *p;           /* NULL: dropped (counted in pass 1) */
	const uint8_t *src;          /* header + frame, one readable buffer; NULL: done in pass 1 */
	uint32_t frame_len;
	bool borrow;
	struct virtio_net_hdr_v1 h;  /* chains of several buffers: read in pass 1 */
};

struct tx_pools {
	struct uvn_pkt_pool *small, *big;
	size_t small_room, big_room;
};

static void broken(struct uvn_netdev_q *q, int ring_err)
{
	uvn_netdev_q_set_broken(q, ring_err);
	if (ring_err) {
		uvn_stat_inc(&q->st.err_ring);
		UVN_LOG_PEER("guest tx ring broken: %s", uvn_vq_strerror(ring_err));
	} else {
		uvn_stat_inc(&q->st.err_format);
		UVN_LOG_PEER("guest tx chain malformed (writable buffers, or an id still in use): "
			     "queue stopped");
	}
}

/* Should this frame be borrowed rather than copied? Counts why not.
 * @borrowing: frames of this burst already chosen for borrowing. */
static bool want_borrow(struct uvn_netdev_q *q, uint32_t frame_len, unsigned borrowing)
{
	struct uvn_netdev_zc *z = q->zc;

	if (!z || z->mode == UVN_ZC_OFF)
		return false;
	if (z->mode == UVN_ZC_AUTO && frame_len < z->min_len) {
		uvn_stat_inc(&q->st.zc_fb_small);
		return false;
	}
	if (z->held + borrowing >= z->max_held) {
		uvn_stat_inc(&q->st.zc_fb_held);
		return false;
	}
	return true;
}

/* A borrowed frame's segments: the chain's readable buffers past the header. */
static bool borrow_segs(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch, struct uvn_pkt *p)
{
	size_t skip = UVN_NET_HDR_LEN;
	unsigned i = 0, n = 0;

	while (q->iov[i].iov_len <= skip)
		skip -= q->iov[i++].iov_len;
	if (ch->nout - i > UVN_PKT_MAX_SEGS)
		return false;
	for (; i < ch->nout; i++, n++) {
		p->seg[n].iov_base = (char *)q->iov[i].iov_base + skip;
		p->seg[n].iov_len = q->iov[i].iov_len - skip;
		skip = 0;
	}
	p->nseg = (uint16_t)n;
	return true;
}

/* A packet descriptor to copy @frame_len bytes into, or NULL. */
static struct uvn_pkt *copy_pkt(struct tx_pools *tp, uint32_t frame_len)
{
	if (UVN_LIKELY(frame_len <= tp->small_room))
		return uvn_pkt_alloc(tp->small);
	return tp->big && frame_len <= tp->big_room ? uvn_pkt_alloc(tp->big) : NULL;
}

/*
 * Pass 1 for one chain: checks that need no frame byte, the packet
 * descriptor, and the frame itself when its chain has several buffers
 * (their iovecs do not outlive the next pop).
 * @return 0, or -1 when no descriptor is free (the chain must wait)
 */
static int take(struct uvn_netdev_q *q, struct tx_item *it, struct tx_pools *tp,
		unsigned borrowing)
{
	const struct uvn_vq_chain *ch = &it->ch;

	it->p = NULL;
	it->src = NULL;
	it->borrow = false;
	/* A chain no longer than the header carries no frame (CVE-2022-2132). */
	if (UVN_UNLIKELY(ch->out_len < UVN_NET_HDR_LEN + UVN_ETH_HLEN)) {
		uvn_stat_inc(&q->st.err_short);
		return 0;
	}
	it->frame_len = ch->out_len - UVN_NET_HDR_LEN;
	if (UVN_UNLIKELY(it->frame_len > UVN_NETDEV_MAX_FRAME)) {
		uvn_stat_inc(&q->st.err_toolong);
		return 0;
	}
	if (want_borrow(q, it->frame_len, borrowing)) {
		it->p = uvn_pkt_alloc(q->zc->pool);
		if (it->p && (ch->nout == 1 || borrow_segs(q, ch, it->p)))
			it->borrow = true;
		else if (it->p)
			uvn_stat_inc(&q->st.zc_fb_segs);
		else
			uvn_stat_inc(&q->st.zc_fb_nopkt);
		if (!it->borrow && it->p) {
			uvn_pkt_free(it->p);
			it->p = NULL;
		}
	}
	if (!it->borrow) {
		if (UVN_UNLIKELY(it->frame_len > tp->small_room && it->frame_len > tp->big_room)) {
			uvn_stat_inc(&q->st.err_toolong);
			return 0;
		}
		it->p = copy_pkt(tp, it->frame_len);
		if (UVN_UNLIKELY(!it->p))
			return -1;
	}
	if (UVN_LIKELY(ch->nout == 1)) {
		it->src = q->iov[0].iov_base;
		__builtin_prefetch(it->src);
		__builtin_prefetch(it->src + 64);
		return 0;
	}
	uvn_iov_to_buf(q->iov, ch->nout, 0, &it->h, UVN_NET_HDR_LEN);
	if (!it->borrow)
		uvn_iov_to_buf(q->iov, ch->nout, UVN_NET_HDR_LEN, it->p->buf, it->frame_len);
	return 0;
}

/* Pass 2 for one chain. @return the packet, or NULL (dropped or queue broken) */
static struct uvn_pkt *finish(struct uvn_netdev_q *q, struct tx_item *it)
{
	struct uvn_pkt *p = it->p;
	int err = 0;

	if (p && it->src)
		memcpy(&it->h, it->src, UVN_NET_HDR_LEN);
	/* Our copy of the header is checked and used: the guest may rewrite
	 * its buffer. No offload asked for is always valid. */
	if (p && UVN_UNLIKELY(it->h.flags || it->h.gso_type))
		err = uvn_hdr_check_tx(&it->h, it->frame_len, q->features);
	if (UVN_UNLIKELY(err)) {
		uvn_stat_inc(&q->st.err_hdr);
		UVN_LOG_PEER("guest tx: %s", uvn_hdr_strerror(err));
		uvn_pkt_free(p);
		p = NULL;
	}
	if (p && it->borrow) {
		p->ubuf = uvn_zc_hold(q, &it->ch);
		if (UVN_UNLIKELY(!p->ubuf)) {
			uvn_pkt_free(p);
			broken(q, 0);
			return NULL;
		}
		if (it->src) {
			p->seg[0].iov_base = (void *)(it->src + UVN_NET_HDR_LEN);
			p->seg[0].iov_len = it->frame_len;
			p->nseg = 1;
		}
		p->len = it->frame_len;
		uvn_stat_inc(&q->st.zc_packets);
	} else {
		if (p && it->src)
			uvn_copy(p->buf, it->src + UVN_NET_HDR_LEN, it->frame_len);
		if (p)
			uvn_pkt_set_buf(p, it->frame_len);
		if (p && q->zc && q->zc->mode != UVN_ZC_OFF)
			uvn_stat_inc(&q->st.zc_copied);
		/* Copied or dropped: the chain goes back in ring order, now
		 * with zero-copy (after the ones borrowed before it), else
		 * after the burst's copies (uvn_netdev_tx). */
		if (UVN_UNLIKELY(q->zc && uvn_zc_finish(q, &it->ch))) {
			if (p)
				uvn_pkt_free(p);
			broken(q, 0);
			return NULL;
		}
	}
	if (!p)
		return NULL;
	p->vnet = it->h;
	p->vnet.hdr_len = 0;     /* never trusted */
	p->vnet.num_buffers = 0; /* the driver's value means nothing on tx */
	uvn_stat_inc(&q->st.packets);
	uvn_stat_add(&q->st.bytes, it->frame_len);
	return p;
}

/*
 * The pop gave no chain (@r: 0 or an error). A legal chain of more buffers
 * than UVN_NETDEV_MAX_IOV (IOV_FULL) is taken without its iovecs and
 * dropped, counted; it goes back in ring order with the others (at most
 * UVN_NETDEV_LONG_DROPS per call: the next waits). Any other error broke
 * the ring. @return true: @it is such a dropped chain; false: the burst
 * ends here
 */
static __attribute__((noinline)) bool no_chain(struct uvn_netdev_q *q, struct tx_item *it, int r)
{
	if (r == -UVN_VQ_E_IOV_FULL) {
		if (!q->long_left)
			return false;
		q->long_left--;
		r = uvn_vq_dev_pop(q->vq, &it->ch, NULL, 0);
	}
	if (r <= 0) {
		if (r < 0)
			broken(q, r);
		return false;
	}
	if (UVN_UNLIKELY(it->ch.nin)) {
		broken(q, 0);
		return false;
	}
	uvn_stat_inc(&q->st.drop_long);
	UVN_LOG_PEER("guest tx chain of %u buffers (more than %u): dropped", it->ch.nout,
		     UVN_NETDEV_MAX_IOV);
	it->p = NULL;
	it->src = NULL;
	it->borrow = false;
	return true;
}

unsigned uvn_netdev_tx(struct uvn_netdev_q *q, struct uvn_pkt_pool *small,
		       struct uvn_pkt_pool *big, struct uvn_pkt **pkts, unsigned n)
{
	struct tx_pools tp = { small, big, small ? uvn_pkt_pool_buf_size(small) : 0,
			       big ? uvn_pkt_pool_buf_size(big) : 0 };
	struct tx_item items[UVN_NETDEV_BURST];
	unsigned ni = 0, got = 0, taken = 0, borrowing = 0;

	if (UVN_UNLIKELY(q->broken))
		return 0;
	if (n > UVN_NETDEV_BURST)
		n = UVN_NETDEV_BURST;
	q->long_left = UVN_NETDEV_LONG_DROPS;
	/* @n bounds the packets; chains dropped on the way do not count. */
	while (ni < UVN_NETDEV_BURST && taken < n) {
		struct tx_item *it = &items[ni];
		int r = uvn_vq_dev_pop(q->vq, &it->ch, q->iov, UVN_NETDEV_MAX_IOV);

		if (r <= 0) {
			if (!no_chain(q, it, r))
				break;
		} else if (UVN_UNLIKELY(it->ch.nin)) {
			broken(q, 0);
			break;
		} else if (UVN_UNLIKELY(take(q, it, &tp, borrowing))) {
			/* Back-pressure: the chain waits in the ring. */
			uvn_vq_dev_unpop(q->vq, &it->ch);
			uvn_stat_inc(&q->st.drop_nopkt);
			break;
		}
		taken += it->p != NULL;
		borrowing += it->borrow;
		ni++;
	}
	for (unsigned i = 0; i < ni; i++) {
		struct uvn_pkt *p = finish(q, &items[i]);

		if (p)
			pkts[got++] = p;
		else if (UVN_UNLIKELY(q->broken)) {
			/* Chains taken after it are lost with the queue. */
			for (unsigned k = i + 1; k < ni; k++)
				if (items[k].p)
					uvn_pkt_free(items[k].p);
			break;
		}
	}
	/* Without zero-copy every chain taken is done with: its used entry
	 * (a line the guest's CPU reads) is written after the copies, so
	 * that the copies do not wait behind it. */
	if (!q->zc)
		for (unsigned i = 0; i < ni; i++)
			uvn_vq_dev_push(q->vq, &items[i].ch, 0);
	if (ni) {
		uvn_netdev_q_flush(q);
		if (q->zc)
			q->zc->pushed = 0;
		uvn_stat_inc(&q->st.bursts);
	} else if (!q->broken) {
		uvn_stat_inc(&q->st.empty);
	}
	return got;
}
