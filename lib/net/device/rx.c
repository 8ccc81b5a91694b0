/* SPDX-License-Identifier: MIT */
/*
 * Packets -> guest RX. With MRG_RXBUF a frame spreads over as many posted
 * buffers as it needs (every buffer but the last filled, num_buffers in the
 * header of the first); without it each frame takes one chain and a frame
 * larger than the chain is dropped, never truncated. Chains taken for a
 * frame that then does not fit are given back (unpop), so no buffer is
 * lost; everything pushed in a burst is published by one flush.
 */
#include <endian.h>

#include "net/csum.h"
#include "net/device/netdev.h"
#include "net/iov.h"
#include "ring/ring.h"
#include "util/log.h"

/* Chains one frame may take: 64 KB in buffers of at least 256 bytes. */
#define MAX_BUFS 256

enum { RX_OK, RX_NOBUF, RX_TOOBIG, RX_BROKEN };

/* What goes into the guest for one frame. */
struct rx_frame {
	const struct uvn_pkt *p;
	struct virtio_net_hdr_v1 hdr;
	uint32_t total;        /* header + frame */
	uint32_t csum_pos;     /* stream offset of a checksum we complete, or 0 */
	uint8_t csum[2];
};

/* Header and software checksum for a guest with the queue's features. */
static bool prepare(struct uvn_netdev_q *q, const struct uvn_pkt *p, struct rx_frame *f)
{
	const struct virtio_net_hdr_v1 *in = &p->vnet;

	if (uvn_hdr_is_gso(in))
		return false; /* segmentation for such guests comes with the offload work */
	memset(&f->hdr, 0, sizeof(f->hdr));
	f->p = p;
	f->total = UVN_NET_HDR_LEN + p->len;
	f->csum_pos = 0;
	if (uvn_hdr_needs_csum(in)) {
		uint32_t start = le16toh(in->csum_start), pos = start + le16toh(in->csum_offset);

		if (pos + 2 > p->len)
			return false; /* checked at ingress; never write out of range */
		if (q->guest_csum) {
			f->hdr.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
			f->hdr.csum_start = in->csum_start;
			f->hdr.csum_offset = in->csum_offset;
		} else {
			/* The field holds the pseudo-header sum: sum it with the rest. */
			uint16_t c = (uint16_t)~uvn_csum_iov(p->seg, p->nseg, start, p->len - start);

			if (!c)
				c = 0xffff;
			f->csum[0] = (uint8_t)(c >> 8);
			f->csum[1] = (uint8_t)c;
			f->csum_pos = UVN_NET_HDR_LEN + pos;
			q->st.csum_sw++;
		}
	} else if (q->guest_csum) {
		f->hdr.flags = in->flags & VIRTIO_NET_HDR_F_DATA_VALID;
	}
	return true;
}

/* Write stream bytes [off, off + len) of the frame (header excluded from
 * @off's base) into one chain's iovecs starting at chain offset @coff. */
static void fill(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch, const struct rx_frame *f,
		 uint32_t off, uint32_t coff, uint32_t len)
{
	const struct uvn_pkt *p = f->p;

	if (UVN_LIKELY(p->nseg == 1 && ch->nin == 1))
		memcpy((char *)q->iov[0].iov_base + coff,
		       (const char *)p->seg[0].iov_base + off - UVN_NET_HDR_LEN, len);
	else
		uvn_iov_to_iov(q->iov, ch->nin, coff, p->seg, p->nseg, off - UVN_NET_HDR_LEN, len);
	/* A completed checksum overrides the two bytes it covers. */
	if (f->csum_pos) {
		for (uint32_t b = 0; b < 2; b++) {
			uint32_t at = f->csum_pos + b;

			if (at >= off && at < off + len)
				uvn_buf_to_iov(q->iov, ch->nin, coff + (at - off), &f->csum[b], 1);
		}
	}
}

static void log_chain(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch, uint32_t len)
{
	for (unsigned i = 0; i < ch->nin && len; i++) {
		size_t l = q->iov[i].iov_len < len ? q->iov[i].iov_len : len;

		q->log_write(q->log_ctx, q->iov[i].iov_base, l);
		len -= (uint32_t)l;
	}
}

static int pop_rx(struct uvn_netdev_q *q, struct uvn_vq_chain *ch)
{
	int r = uvn_vq_dev_pop(q->vq, ch, q->iov, UVN_NETDEV_MAX_IOV);

	if (UVN_UNLIKELY(r < 0)) {
		q->broken = true;
		q->ring_err = r;
		q->st.err_ring++;
		UVN_LOG_PEER("guest rx ring broken: %s", uvn_vq_strerror(r));
		return RX_BROKEN;
	}
	if (r == 0)
		return RX_NOBUF;
	if (UVN_UNLIKELY(ch->nout)) {
		q->broken = true;
		q->st.err_format++;
		UVN_LOG_PEER("guest rx chain has device-readable buffers: queue stopped");
		return RX_BROKEN;
	}
	return RX_OK;
}

static int rx_single(struct uvn_netdev_q *q, struct rx_frame *f)
{
	struct uvn_vq_chain ch;
	int r = pop_rx(q, &ch);

	if (r != RX_OK)
		return r;
	if (ch.in_len < f->total) {
		uvn_vq_dev_unpop(q->vq, &ch);
		return RX_TOOBIG;
	}
	f->hdr.num_buffers = htole16(1);
	uvn_buf_to_iov(q->iov, ch.nin, 0, &f->hdr, UVN_NET_HDR_LEN);
	fill(q, &ch, f, UVN_NET_HDR_LEN, UVN_NET_HDR_LEN, f->p->len);
	if (UVN_UNLIKELY(q->log_write))
		log_chain(q, &ch, f->total);
	uvn_vq_dev_push(q->vq, &ch, f->total);
	return RX_OK;
}

static int rx_mergeable(struct uvn_netdev_q *q, struct rx_frame *f)
{
	struct uvn_vq_chain chs[MAX_BUFS];
	uint32_t lens[MAX_BUFS], off = 0;
	struct iovec hdr_iov[UVN_NET_HDR_LEN];
	unsigned k = 0, nhdr = 0;

	while (off < f->total) {
		struct uvn_vq_chain *ch = &chs[k];
		int r = k < MAX_BUFS ? pop_rx(q, ch) : RX_TOOBIG;
		uint32_t c, start;

		if (r != RX_OK) {
			if (r == RX_BROKEN)
				return r;
			while (k)
				uvn_vq_dev_unpop(q->vq, &chs[--k]);
			return r;
		}
		start = k == 0 ? UVN_NET_HDR_LEN : 0;
		if (k == 0) {
			/* Remember where the header goes: num_buffers is known last. */
			for (uint32_t need = UVN_NET_HDR_LEN; need && nhdr < ch->nin; nhdr++) {
				hdr_iov[nhdr] = q->iov[nhdr];
				if (hdr_iov[nhdr].iov_len > need)
					hdr_iov[nhdr].iov_len = need;
				need -= (uint32_t)hdr_iov[nhdr].iov_len;
			}
			if (ch->in_len < UVN_NET_HDR_LEN) {
				/* Not even room for the header: give it back, drop. */
				uvn_vq_dev_unpop(q->vq, ch);
				return RX_TOOBIG;
			}
			off = UVN_NET_HDR_LEN;
		}
		c = ch->in_len - start < f->total - off ? ch->in_len - start : f->total - off;
		if (c)
			fill(q, ch, f, off, start, c);
		lens[k] = start + c;
		if (UVN_UNLIKELY(q->log_write))
			log_chain(q, ch, lens[k]);
		off += c;
		k++;
	}
	f->hdr.num_buffers = htole16((uint16_t)k);
	uvn_buf_to_iov(hdr_iov, nhdr, 0, &f->hdr, UVN_NET_HDR_LEN);
	for (unsigned i = 0; i < k; i++)
		uvn_vq_dev_push(q->vq, &chs[i], lens[i]);
	return RX_OK;
}

unsigned uvn_netdev_rx(struct uvn_netdev_q *q, struct uvn_pkt *const *pkts, unsigned n)
{
	unsigned delivered = 0, i;

	if (UVN_UNLIKELY(q->broken)) {
		q->st.drop_nobuf += n;
		return 0;
	}
	for (i = 0; i < n; i++) {
		struct rx_frame f;
		int r;

		if (UVN_UNLIKELY(!prepare(q, pkts[i], &f))) {
			q->st.drop_offload++;
			continue;
		}
		r = q->mrg_rxbuf ? rx_mergeable(q, &f) : rx_single(q, &f);
		if (UVN_LIKELY(r == RX_OK)) {
			delivered++;
			q->st.packets++;
			q->st.bytes += pkts[i]->len;
		} else if (r == RX_TOOBIG) {
			q->st.drop_toobig++;
		} else {
			/* No buffers (or a broken ring): the rest cannot go either. */
			q->st.drop_nobuf += n - i;
			break;
		}
	}
	if (delivered) {
		uvn_netdev_q_flush(q);
		q->st.bursts++;
	}
	return delivered;
}
