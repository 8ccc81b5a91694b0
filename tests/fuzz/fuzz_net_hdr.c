/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the virtio-net header, GSO and checksum path. Guest A
 * sends hostile frames (virtio-net header + bytes, cut into descriptors
 * anywhere) through the device's tx (uvn_netdev_tx: header parse and
 * uvn_hdr_check_tx); every packet that comes out goes through the software
 * offloads directly (uvn_gso_parse, uvn_gso_seg both ways, uvn_gso_csum,
 * uvn_csum_iov against a flat sum) and then into guest B's rx queue
 * (uvn_netdev_rx: pass-through or segmentation and checksum completion,
 * header writing, mergeable buffers), whose used buffers are checked the
 * way a driver reads them.
 *
 * Input:
 *   [0] A: CSUM, HOST_TSO4, HOST_TSO6, HOST_USO, HOST_ECN, HOST_UFO,
 *       RING_PACKED, IN_ORDER (bit 0..7)
 *   [1] B: GUEST_CSUM, GUEST_TSO4, GUEST_TSO6, GUEST_USO4+6, GUEST_ECN,
 *       MRG_RXBUF, RING_PACKED, IN_ORDER
 *   [2] B's rx buffers: (v + 1) * 32 bytes   [3] how many: 1 + v % 64,
 *       bits 6-7: B's MTU none, 68, 576, 1500
 *   frames: le16 length (header + frame), u8 cut: descriptors of
 *       1 + (cut & 127) * 8 bytes, bit 7: the header alone in the first;
 *       then the bytes
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>

#include "fuzz_guest.h"
#include "fuzz_mem.h"
#include "net/csum.h"
#include "net/gso.h"
#include "net/hdr.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define F(b) (1ull << (b))

static uint64_t a_features(uint8_t v)
{
	static const unsigned bit[] = { VIRTIO_NET_F_CSUM, VIRTIO_NET_F_HOST_TSO4,
					VIRTIO_NET_F_HOST_TSO6, VIRTIO_NET_F_HOST_USO,
					VIRTIO_NET_F_HOST_ECN, VIRTIO_NET_F_HOST_UFO,
					VIRTIO_F_RING_PACKED, VIRTIO_F_IN_ORDER };
	uint64_t f = F(VIRTIO_F_VERSION_1);

	for (unsigned i = 0; i < 8; i++)
		if (v & (1u << i))
			f |= F(bit[i]);
	return f;
}

/* Guest A's chains: one per frame of the input. */
static void post_frames(struct fz_guest *a, const uint8_t *d, size_t n)
{
	while (n >= 3) {
		uint32_t len = (uint32_t)(d[0] | d[1] << 8), piece = 1 + (d[2] & 127u) * 8;
		bool hdr_alone = d[2] & 128;
		uint32_t lens[8];
		unsigned nseg = 0;

		d += 3;
		n -= 3;
		if (len > n)
			len = (uint32_t)n;
		if (!len)
			continue;
		for (uint32_t left = len; left && nseg < 8; nseg++) {
			uint32_t l = hdr_alone && !nseg ? UVN_NET_HDR_LEN : piece;

			if (l > left || nseg == 7)
				l = left;
			lens[nseg] = l;
			left -= l;
		}
		if (!fz_guest_post(a, d, lens, nseg, true))
			break;
		d += len;
		n -= len;
	}
	fz_guest_kick(a);
}

/* The driver side of A: every chain back once (tokens checked there). */
static void reclaim_all(struct fz_guest *g)
{
	struct uvn_vq_done done[FZ_GUEST_NUM];
	int n;

	while ((n = uvn_vq_drv_get_used(g->drv, done, FZ_GUEST_NUM)) > 0)
		for (int i = 0; i < n; i++)
			fz_guest_release(done[i].token);
	CHECK(n == 0); /* our device never breaks our driver's rules */
}

/* The software offloads on a packet, directly. */
static void offloads(const struct uvn_pkt *p)
{
	static uint8_t flat[UVN_NETDEV_MAX_FRAME];
	uint8_t seg[UVN_GSO_MAX_HDR], c[2];
	struct uvn_gso g;
	uint32_t pos, total = 0;

	CHECK(uvn_pkt_read(p, 0, flat, p->len) == p->len);
	CHECK(uvn_csum_iov(p->seg, p->nseg, 0, p->len) == uvn_csum_buf(flat, p->len));
	if (uvn_hdr_needs_csum(&p->vnet) && !uvn_gso_csum(p, &pos, c))
		CHECK(pos + 2 <= p->len);
	if (!uvn_hdr_is_gso(&p->vnet) || uvn_gso_parse(p, &g))
		return;
	CHECK(g.hdr_len <= UVN_GSO_MAX_HDR && g.hdr_len <= p->len);
	CHECK(g.l3_off < g.l4_off && g.l4_off < g.hdr_len);
	CHECK(g.nsegs >= 1 && g.nsegs <= UVN_GSO_MAX_SEGS);
	CHECK(g.payload == p->len - g.hdr_len);
	for (uint32_t i = 0; i < g.nsegs; i++) {
		for (int partial = 0; partial < 2; partial++) {
			uint32_t off, len = uvn_gso_seg(&g, p, i, partial, seg, &off);

			CHECK(len <= g.mss && off + len <= p->len && off >= g.hdr_len);
			/* IPv4: the header checksum of every segment verifies. */
			if (!g.ipv6)
				CHECK(uvn_csum_buf(seg + g.l3_off, g.l4_off - g.l3_off) == 0xffff);
			if (partial)
				total += len;
		}
	}
	CHECK(total == g.payload);
}

static void run(const uint8_t *data, size_t size, struct fz_guest *a, struct fz_guest *b)
{
	uint32_t buf_size = (data[2] + 1u) * 32;
	unsigned nbuf = 1 + data[3] % FZ_GUEST_NUM;
	static const uint32_t mtus[] = { 0, 68, 576, 1500 };
	struct uvn_pkt *pkts[UVN_NETDEV_BURST];
	unsigned n;

	b->mtu = mtus[data[3] >> 6];
	uvn_netdev_q_set_mtu(b->q, b->mtu);
	post_frames(a, data + 4, size - 4);
	for (unsigned i = 0; i < nbuf; i++)
		CHECK(fz_guest_post(b, NULL, &buf_size, 1, false));
	fz_guest_kick(b);
	while ((n = uvn_netdev_tx(a->q, fz_pool_small(), fz_pool_big(), pkts,
				  UVN_NETDEV_BURST)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			CHECK(pkts[i]->len >= 1 && pkts[i]->len <= UVN_NETDEV_MAX_FRAME);
			CHECK(!uvn_hdr_check_tx(&pkts[i]->vnet, pkts[i]->len, a->features));
			offloads(pkts[i]);
		}
		(void)uvn_netdev_rx(b->q, pkts, n);
		uvn_netdev_q_flush(b->q);
		uvn_pkt_free_bulk(pkts, n);
		fz_guest_check_rx(b, buf_size);
		if (a->q->broken)
			break;
	}
	CHECK(!b->q->broken);
	reclaim_all(a);
	if (getenv("FZ_VERBOSE")) /* to check what a seed reaches */
		fprintf(stderr, "tx %llu (err hdr %llu short %llu), rx %llu: gso pass %llu sw %llu "
			"segs %llu, csum sw %llu pass %llu, drops %llu/%llu/%llu, mtu %llu\n",
			(unsigned long long)a->q->st.packets, (unsigned long long)a->q->st.err_hdr,
			(unsigned long long)a->q->st.err_short, (unsigned long long)b->q->st.packets,
			(unsigned long long)b->q->st.gso_pass, (unsigned long long)b->q->st.gso_sw,
			(unsigned long long)b->q->st.gso_segs, (unsigned long long)b->q->st.csum_sw,
			(unsigned long long)b->q->st.csum_pass, (unsigned long long)b->q->st.drop_nobuf,
			(unsigned long long)b->q->st.drop_toobig, (unsigned long long)b->q->st.drop_csum,
			(unsigned long long)b->q->st.drop_mtu);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz_guest a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (size < 4)
		return 0;
	uvn_log_level = UVN_LOG_ERR - 1; /* quiet: the peer errors are the point */
	if (fz_guest_init(&a, a_features(data[0]), true) &&
	    fz_guest_init(&b, fz_rx_features(data[1]), false))
		run(data, size, &a, &b);
	fz_guest_fini(&a);
	fz_guest_fini(&b);
	fz_pools_check();
	return 0;
}
