/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "net/device/netdev.h"
#include "ring/ring.h"

#define S(f) UVN_STAT(struct uvn_netdev_q_stats, f)
const struct uvn_stat_desc uvn_netdev_q_stats_desc[] = {
	S(packets), S(bytes), S(bursts), S(empty), S(drop_nobuf), S(drop_toobig), S(drop_nopkt),
	S(drop_long), S(err_short), S(err_hdr), S(err_toolong), S(err_format), S(err_ring),
	S(drop_offload), S(csum_sw), S(ctrl_cmds), S(ctrl_err), S(notify),
	S(zc_packets), S(zc_copied), S(zc_fb_small), S(zc_fb_segs), S(zc_fb_held), S(zc_fb_nopkt),
	S(zc_held), S(zc_held_peak),
	S(gso_pass), S(csum_pass), S(gso_sw), S(gso_segs), S(drop_gso_hdr), S(drop_gso_len),
	S(drop_gso_size), S(drop_csum), S(drop_mtu),
	{ NULL, 0 },
};

void uvn_netdev_q_init(struct uvn_netdev_q *q, struct uvn_vq_dev *vq, uint64_t features, bool tx)
{
	memset(&q->st, 0, sizeof(q->st));
	q->vq = vq;
	q->features = features;
	q->mrg_rxbuf = uvn_has_feature(features, VIRTIO_NET_F_MRG_RXBUF);
	q->guest_csum = uvn_has_feature(features, VIRTIO_NET_F_GUEST_CSUM);
	q->broken = false;
	q->ring_err = 0;
	q->zc = NULL;
	q->filter = NULL;
	uvn_netdev_q_set_mtu(q, 0);
	/* The caller sets what it uses; nothing is left from a previous queue. */
	q->notify = NULL;
	q->notify_ctx = NULL;
	q->log_write = NULL;
	q->log_used = NULL;
	q->log_ctx = NULL;
	/* The spec lets an IN_ORDER device write one used element per batch.
	 * Drivers are tested against DPDK's vhost, which does that for packed
	 * rings only and writes every split used entry: so do we. */
	uvn_vq_dev_set_batch_used(vq, tx && uvn_has_feature(features, VIRTIO_F_RING_PACKED));
}

void uvn_netdev_q_set_mtu(struct uvn_netdev_q *q, uint32_t mtu)
{
	q->mtu = mtu;
	q->plain_max = mtu ? mtu + UVN_ETH_HLEN : UINT32_MAX;
}

void uvn_netdev_q_flush(struct uvn_netdev_q *q)
{
	bool notify = uvn_vq_dev_flush(q->vq);

	if (UVN_UNLIKELY(q->log_used))
		q->log_used(q->log_ctx);
	if (notify && q->notify) {
		q->notify(q->notify_ctx);
		uvn_stat_inc(&q->st.notify);
	}
}
