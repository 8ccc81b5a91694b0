/* SPDX-License-Identifier: MIT */
/*
 * What goes into a guest for one frame, decided against its features and
 * its queue's MTU: the frame as it is, with its partial checksum or GSO
 * metadata when the guest negotiated them (GUEST_CSUM, GUEST_TSO4/6,
 * GUEST_USO4/6, GUEST_ECN); else the checksum completed, or the frame
 * segmented, in software (net/gso.h), each segment's headers from a buffer
 * on our stack, its payload from the packet. What decides is read once,
 * into our memory, and that copy is what goes in: the packet's bytes may
 * be the sending guest's (zero-copy), rewritten at any time (PITFALLS 26).
 */
#include <endian.h>

#include "net/device/rx_frame.h"
#include "net/gso.h"
#include "ring/ring.h"
#include "util/log.h"

/* A frame without GSO: as it is, its partial checksum completed for a guest
 * without GUEST_CSUM. */
int uvn_rx_plain(struct uvn_netdev_q *q, const struct uvn_pkt *p)
{
	const struct virtio_net_hdr_v1 *in = &p->vnet;
	struct rx_frame f = { .p = p, .total = UVN_NET_HDR_LEN + p->len };
	uint8_t eth[UVN_ETH_HLEN];
	uint32_t pos;
	int r;

	if (UVN_UNLIKELY(p->len > q->plain_max)) {
		/* Fits only if tagged: judged on our copy of the Ethernet header,
		 * which is then what goes in (a zero-copy sender may untag its
		 * own after the check, PITFALLS 26). */
		if (uvn_pkt_read(p, 0, eth, sizeof(eth)) != sizeof(eth) ||
		    !uvn_eth_fits_mtu(eth, p->len, q->mtu)) {
			uvn_stat_inc(&q->st.drop_mtu);
			UVN_LOG_PEER("frame of %u bytes dropped: over the MTU (%u)", p->len, q->mtu);
			return RX_DROP;
		}
		f.pre = eth;
		f.pre_len = f.body = sizeof(eth);
	}
	if (UVN_LIKELY(!uvn_hdr_needs_csum(in))) {
		if (q->guest_csum)
			f.hdr.flags = in->flags & VIRTIO_NET_HDR_F_DATA_VALID;
		return uvn_rx_deliver(q, &f);
	}
	if (!q->guest_csum) {
		/* Range checked at ingress; never write out of it anyway. */
		if (UVN_UNLIKELY(uvn_gso_csum(p, &pos, f.csum))) {
			uvn_stat_inc(&q->st.drop_csum);
			return RX_DROP;
		}
		f.csum_pos = UVN_NET_HDR_LEN + pos;
		uvn_stat_inc(&q->st.csum_sw);
		return uvn_rx_deliver(q, &f);
	}
	pos = (uint32_t)le16toh(in->csum_start) + le16toh(in->csum_offset);
	if (UVN_UNLIKELY(pos + 2 > p->len)) {
		uvn_stat_inc(&q->st.drop_csum);
		return RX_DROP;
	}
	f.hdr.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	f.hdr.csum_start = in->csum_start;
	f.hdr.csum_offset = in->csum_offset;
	r = uvn_rx_deliver(q, &f);
	uvn_stat_add(&q->st.csum_pass, r == RX_OK);
	return r;
}

static void count_gso_err(struct uvn_netdev_q *q, int err)
{
	switch (err) {
	case UVN_GSO_E_TYPE: uvn_stat_inc(&q->st.drop_offload); break;
	case UVN_GSO_E_LEN: uvn_stat_inc(&q->st.drop_gso_len); break;
	case UVN_GSO_E_CSUM: uvn_stat_inc(&q->st.drop_csum); break;
	case UVN_GSO_E_SIZE: uvn_stat_inc(&q->st.drop_gso_size); break;
	default: uvn_stat_inc(&q->st.drop_gso_hdr); break;
	}
	UVN_LOG_PEER("GSO frame dropped: %s", uvn_gso_strerror(err));
}

/*
 * A GSO frame: passed on if the guest takes it, else segmented. Segments a
 * guest with GUEST_CSUM gets with partial checksums (it completes them, or
 * needs not); the others get full ones. When a segment does not fit, the
 * frame's remaining segments are counted here as drops, itself by the caller.
 */
int uvn_rx_gso(struct uvn_netdev_q *q, const struct uvn_pkt *p)
{
	struct uvn_gso g;
	bool partial = q->guest_csum;
	int r = uvn_gso_parse(p, &g);

	if (UVN_UNLIKELY(r)) {
		count_gso_err(q, r);
		return RX_DROP;
	}
	if (UVN_UNLIKELY(q->mtu && !uvn_gso_fits_mtu(&g, p->len, q->mtu))) {
		uvn_stat_inc(&q->st.drop_gso_size);
		UVN_LOG_PEER("GSO frame dropped: its segments exceed the MTU (%u)", q->mtu);
		return RX_DROP;
	}
	if (uvn_gso_guest_ok(&g, q->features)) {
		/* The headers from the copy that was checked, not again from the
		 * packet: its bytes may be the sending guest's memory (zero-copy),
		 * rewritten since (PITFALLS 26). */
		struct rx_frame f = { .p = p, .pre = g.hdr, .pre_len = g.hdr_len, .body = g.hdr_len,
				      .total = UVN_NET_HDR_LEN + p->len };

		uvn_gso_vnet(&g, &f.hdr);
		r = uvn_rx_deliver(q, &f);
		uvn_stat_add(&q->st.gso_pass, r == RX_OK);
		return r;
	}
	for (uint32_t i = 0; i < g.nsegs; i++) {
		uint8_t hdr[UVN_GSO_MAX_HDR];
		struct rx_frame f = { .p = p, .pre = hdr, .pre_len = g.hdr_len };
		uint32_t len = uvn_gso_seg(&g, p, i, partial, hdr, &f.body);

		f.total = UVN_NET_HDR_LEN + g.hdr_len + len;
		uvn_gso_seg_vnet(&g, partial, &f.hdr);
		r = uvn_rx_deliver(q, &f);
		if (UVN_UNLIKELY(r != RX_OK)) {
			if (r == RX_TOOBIG)
				uvn_stat_add(&q->st.drop_toobig, g.nsegs - i - 1);
			else if (r == RX_NOBUF)
				uvn_stat_add(&q->st.drop_nobuf, g.nsegs - i - 1);
			return r;
		}
		uvn_stat_add(&q->st.gso_sw, i == 0); /* frames of which segments went in */
		uvn_stat_inc(&q->st.gso_segs);
		uvn_stat_add(&q->st.csum_sw, !partial);
	}
	return RX_OK;
}
