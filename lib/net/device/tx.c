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

static int tx_one(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch,
		  struct uvn_pkt_pool *small, struct uvn_pkt_pool *big, struct uvn_pkt **out)
{
	struct virtio_net_hdr_v1 h;
	struct uvn_pkt_pool *pool;
	uint32_t frame_len;
	struct uvn_pkt *p;
	int err;

	/* A chain no longer than the header carries no frame (CVE-2022-2132). */
	if (UVN_UNLIKELY(ch->out_len < UVN_NET_HDR_LEN + UVN_ETH_HLEN)) {
		q->st.err_short++;
		return TX_DROP;
	}
	frame_len = ch->out_len - UVN_NET_HDR_LEN;
	if (UVN_UNLIKELY(frame_len > UVN_NETDEV_MAX_FRAME)) {
		q->st.err_toolong++;
		return TX_DROP;
	}
	pool = frame_len <= uvn_pkt_pool_buf_size(small) ? small : big;
	if (UVN_UNLIKELY(!pool || frame_len > uvn_pkt_pool_buf_size(pool))) {
		q->st.err_toolong++;
		return TX_DROP;
	}
	p = uvn_pkt_alloc(pool);
	if (UVN_UNLIKELY(!p))
		return TX_NOPKT;
	if (UVN_LIKELY(q->iov[0].iov_len >= ch->out_len)) {
		memcpy(&h, q->iov[0].iov_base, UVN_NET_HDR_LEN);
		memcpy(p->buf, (char *)q->iov[0].iov_base + UVN_NET_HDR_LEN, frame_len);
	} else {
		uvn_iov_to_buf(q->iov, ch->nout, 0, &h, UVN_NET_HDR_LEN);
		uvn_iov_to_buf(q->iov, ch->nout, UVN_NET_HDR_LEN, p->buf, frame_len);
	}
	/* Validate our copy: the guest may rewrite its buffer meanwhile. */
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
	unsigned got = 0, done = 0;

	if (UVN_UNLIKELY(q->broken))
		return 0;
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
		r = tx_one(q, &ch, small, big, &pkts[got]);
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
	if (done) {
		uvn_netdev_q_flush(q);
		q->st.bursts++;
	}
	return got;
}
