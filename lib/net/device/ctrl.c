/* SPDX-License-Identifier: MIT */
/*
 * The control virtqueue, for frontends that hand it to the backend (QEMU
 * keeps its own). A command is class + cmd + data in readable buffers and
 * one writable ack byte. Receive modes and MAC tables go to the queue's
 * receive filter (filter.h) when it has one, MQ pairs are applied through
 * the caller, announcements are acknowledged, everything else is refused.
 * Data is copied out of the guest's buffers once and checked in the copy.
 */
#include <endian.h>

#include "net/device/filter.h"
#include "net/device/netdev.h"
#include "net/iov.h"
#include "ring/ring.h"
#include "util/log.h"

struct mac_tables {
	uint32_t n[2];                              /* unicast, multicast */
	uint8_t mac[2][UVN_RX_FILTER_MACS * 6];
};

/*
 * VIRTIO_NET_CTRL_MAC_TABLE_SET's data: two tables, each a le32 count and
 * that many addresses, filling the @dlen bytes exactly. Tables longer
 * than we keep are counted, not read. @return false if malformed
 */
static bool read_tables(const struct uvn_netdev_q *q, const struct uvn_vq_chain *ch,
			uint32_t dlen, struct mac_tables *t)
{
	uint64_t off = sizeof(struct virtio_net_ctrl_hdr), end = off + dlen;

	for (unsigned i = 0; i < 2; i++) {
		uint32_t n = 0;

		if (off + sizeof(n) > end)
			return false;
		uvn_iov_to_buf(q->iov, ch->nout, off, &n, sizeof(n));
		t->n[i] = n = le32toh(n);
		off += sizeof(n);
		if ((uint64_t)n * 6 > end - off)
			return false;
		if (n <= UVN_RX_FILTER_MACS)
			uvn_iov_to_buf(q->iov, ch->nout, off, t->mac[i], (size_t)n * 6);
		off += (uint64_t)n * 6;
	}
	return off == end;
}

static uint8_t rx_mode(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch, uint8_t cmd,
		       uint32_t dlen)
{
	uint8_t on = 0;

	if (!uvn_has_feature(q->features, VIRTIO_NET_F_CTRL_RX) || dlen != 1 ||
	    cmd > VIRTIO_NET_CTRL_RX_NOBCAST ||
	    (cmd > VIRTIO_NET_CTRL_RX_ALLMULTI &&
	     !uvn_has_feature(q->features, VIRTIO_NET_F_CTRL_RX_EXTRA)))
		return VIRTIO_NET_ERR;
	uvn_iov_to_buf(q->iov, ch->nout, sizeof(struct virtio_net_ctrl_hdr), &on, 1);
	if (q->filter)
		uvn_rx_filter_set_mode(q->filter, cmd, on != 0);
	return VIRTIO_NET_OK;
}

static uint8_t mac_cmd(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch, uint8_t cmd,
		       uint32_t dlen)
{
	struct mac_tables t;
	uint8_t mac[6] = { 0 };

	if (cmd == VIRTIO_NET_CTRL_MAC_ADDR_SET) {
		if (!uvn_has_feature(q->features, VIRTIO_NET_F_CTRL_MAC_ADDR) || dlen != sizeof(mac))
			return VIRTIO_NET_ERR;
		uvn_iov_to_buf(q->iov, ch->nout, sizeof(struct virtio_net_ctrl_hdr), mac, sizeof(mac));
		if (q->filter)
			uvn_rx_filter_set_mac(q->filter, mac);
		return VIRTIO_NET_OK;
	}
	if (cmd != VIRTIO_NET_CTRL_MAC_TABLE_SET ||
	    !uvn_has_feature(q->features, VIRTIO_NET_F_CTRL_RX) || !read_tables(q, ch, dlen, &t))
		return VIRTIO_NET_ERR;
	if (q->filter)
		uvn_rx_filter_set_tables(q->filter, t.mac[0], t.n[0], t.mac[1], t.n[1]);
	return VIRTIO_NET_OK;
}

static uint8_t execute(struct uvn_netdev_q *q, const struct uvn_vq_chain *ch,
		       int (*set_pairs)(void *ctx, unsigned pairs), void *ctx)
{
	struct virtio_net_ctrl_hdr h;
	uint32_t dlen = ch->out_len - (uint32_t)sizeof(h);
	uint16_t pairs;

	uvn_iov_to_buf(q->iov, ch->nout, 0, &h, sizeof(h));
	switch (h.class) {
	case VIRTIO_NET_CTRL_RX:
		return rx_mode(q, ch, h.cmd, dlen);
	case VIRTIO_NET_CTRL_MAC:
		return mac_cmd(q, ch, h.cmd, dlen);
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

	q->long_left = UVN_NETDEV_LONG_DROPS;
	while (!q->broken) {
		struct uvn_vq_chain ch;
		uint8_t ack;
		int r = uvn_vq_dev_pop(q->vq, &ch, q->iov, UVN_NETDEV_MAX_IOV);

		if (UVN_UNLIKELY(r == -UVN_VQ_E_IOV_FULL)) {
			/* More buffers than q->iov holds: no command of ours
			 * needs them. Taken without them, refused unanswered;
			 * past this call's budget it waits for the next. */
			if (!q->long_left)
				break;
			q->long_left--;
			r = uvn_vq_dev_pop(q->vq, &ch, NULL, 0);
			if (r == 1) {
				uvn_stat_inc(&q->st.ctrl_err);
				UVN_LOG_PEER("control command of %u buffers (more than %u): dropped",
					     ch.nout + ch.nin, UVN_NETDEV_MAX_IOV);
				uvn_vq_dev_push(q->vq, &ch, 0);
				done++;
				continue;
			}
		}
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
