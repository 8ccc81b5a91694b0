/* SPDX-License-Identifier: MIT */
/*
 * The control virtqueue, for frontends that hand it to the backend (QEMU
 * keeps its own). A command is class + cmd + data in readable buffers and
 * one writable ack byte. We are a switch port: rx filters and MAC tables
 * are acknowledged (the switch learns addresses itself), MQ pairs are
 * applied through the caller, everything else is refused.
 */
#include <endian.h>

#include "net/device/netdev.h"
#include "net/iov.h"
#include "ring/ring.h"
#include "util/log.h"

static uint8_t execute(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch,
		       int (*set_pairs)(void *ctx, unsigned pairs), void *ctx)
{
	struct virtio_net_ctrl_hdr h;
	uint32_t dlen = ch->out_len - (uint32_t)sizeof(h);
	uint16_t pairs;

	uvn_iov_to_buf(q->iov, ch->nout, 0, &h, sizeof(h));
	switch (h.class) {
	case VIRTIO_NET_CTRL_RX:
		if (!uvn_has_feature(q->features, VIRTIO_NET_F_CTRL_RX) || dlen != 1 ||
		    h.cmd > VIRTIO_NET_CTRL_RX_NOBCAST)
			return VIRTIO_NET_ERR;
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_MAC:
		if (h.cmd == VIRTIO_NET_CTRL_MAC_ADDR_SET)
			return dlen == 6 ? VIRTIO_NET_OK : VIRTIO_NET_ERR;
		if (h.cmd == VIRTIO_NET_CTRL_MAC_TABLE_SET && uvn_has_feature(q->features, VIRTIO_NET_F_CTRL_RX))
			return dlen >= 8 ? VIRTIO_NET_OK : VIRTIO_NET_ERR;
		return VIRTIO_NET_ERR;
	case VIRTIO_NET_CTRL_ANNOUNCE:
		return h.cmd == VIRTIO_NET_CTRL_ANNOUNCE_ACK ? VIRTIO_NET_OK : VIRTIO_NET_ERR;
	case VIRTIO_NET_CTRL_MQ:
		if (!uvn_has_feature(q->features, VIRTIO_NET_F_MQ) ||
		    h.cmd != VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET || dlen != sizeof(pairs))
			return VIRTIO_NET_ERR;
		uvn_iov_to_buf(q->iov, ch->nout, sizeof(h), &pairs, sizeof(pairs));
		pairs = le16toh(pairs);
		if (pairs < VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MIN || pairs > VIRTIO_NET_CTRL_MQ_VQ_PAIRS_MAX ||
		    !set_pairs || set_pairs(ctx, pairs))
			return VIRTIO_NET_ERR;
		return VIRTIO_NET_OK;
	default:
		return VIRTIO_NET_ERR;
	}
}

unsigned uvn_netdev_ctrl(struct uvn_netdev_q *q, int (*set_pairs)(void *ctx, unsigned pairs),
			 void *ctx)
{
	unsigned done = 0;

	while (!q->broken) {
		struct uvn_vq_chain ch;
		uint8_t ack;
		int r = uvn_vq_dev_pop(q->vq, &ch, q->iov, UVN_NETDEV_MAX_IOV);

		if (r <= 0) {
			if (r < 0) {
				uvn_netdev_q_set_broken(q, r);
				uvn_stat_inc(&q->st.err_ring);
				UVN_LOG_PEER("control ring broken: %s", uvn_vq_strerror(r));
			}
			break;
		}
		if (ch.out_len < sizeof(struct virtio_net_ctrl_hdr) || ch.in_len < 1) {
			/* Nowhere to put an answer, or no command: refuse, count. */
			uvn_stat_inc(&q->st.ctrl_err);
			UVN_LOG_PEER("malformed control command (%u readable, %u writable bytes)",
				     ch.out_len, ch.in_len);
			if (ch.in_len) {
				ack = VIRTIO_NET_ERR;
				uvn_buf_to_iov(q->iov + ch.nout, ch.nin, 0, &ack, 1);
				if (UVN_UNLIKELY(q->log_write))
					q->log_write(q->log_ctx, q->iov[ch.nout].iov_base, 1);
			}
			uvn_vq_dev_push(q->vq, &ch, ch.in_len ? 1 : 0);
		} else {
			ack = execute(q, &ch, set_pairs, ctx);
			uvn_stat_inc(&q->st.ctrl_cmds);
			if (ack != VIRTIO_NET_OK)
				uvn_stat_inc(&q->st.ctrl_err);
			uvn_buf_to_iov(q->iov + ch.nout, ch.nin, 0, &ack, 1);
			if (UVN_UNLIKELY(q->log_write))
				q->log_write(q->log_ctx, q->iov[ch.nout].iov_base, 1);
			uvn_vq_dev_push(q->vq, &ch, 1);
		}
		done++;
	}
	if (done)
		uvn_netdev_q_flush(q);
	return done;
}
