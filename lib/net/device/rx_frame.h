/* SPDX-License-Identifier: MIT */
/*
 * Inside the device's receive path: rx.c writes a frame's stream into the
 * guest's buffers, rx_offload.c decides what that stream is (a frame as it
 * is, its checksum completed, its segments; or a drop).
 */
#ifndef UVN_NET_DEVICE_RX_FRAME_H
#define UVN_NET_DEVICE_RX_FRAME_H

#include <stdint.h>

#include "net/device/netdev.h"

/* RX_LONG: the next chain has more buffers than q->iov holds (not taken). */
enum { RX_OK, RX_NOBUF, RX_TOOBIG, RX_BROKEN, RX_DROP, RX_LONG };

/*
 * What goes into the guest for one frame, as a stream: the virtio-net
 * header, then @pre_len bytes at @pre (a segment's own headers, or none),
 * then the packet's bytes from @body on.
 */
struct rx_frame {
	const struct uvn_pkt *p;
	struct virtio_net_hdr_v1 hdr;
	const uint8_t *pre;
	uint32_t pre_len;
	uint32_t body;         /* packet offset of the first body byte */
	uint32_t total;        /* stream length: header + pre + body bytes */
	uint32_t csum_pos;     /* stream offset of a checksum we complete, or 0 */
	uint8_t csum[2];
};

/* Write @f into the guest's next buffers, counted. @return RX_OK, or
 * RX_NOBUF / RX_TOOBIG / RX_BROKEN (nothing taken, no buffer lost) */
int uvn_rx_deliver(struct uvn_netdev_q *q, struct rx_frame *f);

/* One frame without GSO, or with: delivered, or dropped and counted by
 * reason (RX_DROP). @return as uvn_rx_deliver, or RX_DROP */
int uvn_rx_plain(struct uvn_netdev_q *q, const struct uvn_pkt *p);
int uvn_rx_gso(struct uvn_netdev_q *q, const struct uvn_pkt *p);

#endif
