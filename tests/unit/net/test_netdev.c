/* SPDX-License-Identifier: MIT */
/* The virtio-net device data path against our own driver half, in one process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <endian.h>

#include <cmocka.h>

#include "net/csum.h"
#include <linux/virtio_ring.h>

#include "net/device/filter.h"
#include "net/device/netdev.h"
#include "netdev_fix.h"

#define BASE (F(VIRTIO_F_VERSION_1))

static struct ndf *setup(uint64_t features, bool tx)
{
	struct ndf *fx = calloc(1, sizeof(*fx));

	ndf_init(fx, &(struct ndf_cfg){ .num = 16, .features = features, .tx = tx, .small = 8,
					 .big = 2 });
	return fx;
}

static void teardown_fx(struct ndf *fx)
{
	ndf_fini(fx);
	free(fx);
}

/* Guest side: send hdr + frame as one or two segments. */
static void guest_send(struct ndf *fx, const struct virtio_net_hdr_v1 *h, const void *frame,
		       uint32_t len, bool split, void *token)
{
	static uint8_t bufs[16][4096];
	static unsigned next;
	uint8_t *b = bufs[next++ % 16];
	struct uvn_sg sg[2];

	memcpy(b, h, sizeof(*h));
	memcpy(b + sizeof(*h), frame, len);
	if (split) {
		sg[0] = tq_sg(b, sizeof(*h));
		sg[1] = tq_sg(b + sizeof(*h), len);
	} else {
		sg[0] = tq_sg(b, (uint32_t)sizeof(*h) + len);
	}
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, sg, split ? 2 : 1, 0, token, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
}

static void fill_frame(uint8_t *f, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		f[i] = (uint8_t)(seed + i * 7);
}

static void test_tx_frames_become_packets(void **state)
{
	struct ndf *fx = setup(BASE, true);
	struct virtio_net_hdr_v1 h = { 0 };
	uint8_t frame[60], frame2[1514];
	struct uvn_pkt *pkts[4];
	struct uvn_vq_done done[4];

	(void)state;
	fill_frame(frame, sizeof(frame), 1);
	fill_frame(frame2, sizeof(frame2), 2);
	guest_send(fx, &h, frame, sizeof(frame), false, (void *)1);
	guest_send(fx, &h, frame2, sizeof(frame2), true, (void *)2);
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, pkts, 4), 2);
	assert_int_equal(pkts[0]->len, 60);
	assert_memory_equal(pkts[0]->seg[0].iov_base, frame, 60);
	assert_int_equal(pkts[1]->len, 1514);
	assert_memory_equal(pkts[1]->seg[0].iov_base, frame2, 1514);
	assert_int_equal(tq_take(&fx->ring, done, 4), 2);
	assert_ptr_equal(done[0].token, (void *)1);
	assert_int_equal(done[0].len, 0);
	assert_int_equal(fx->q.st.packets, 2);
	assert_int_equal(fx->q.st.bytes, 60 + 1514);
	assert_int_equal(fx->q.st.bursts, 1);
	assert_int_equal(fx->q.st.empty, 0);
	/* Nothing more posted: an idle call, counted as such. */
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, pkts + 2, 2), 0);
	assert_int_equal(fx->q.st.bursts, 1);
	assert_int_equal(fx->q.st.empty, 1);
	uvn_pkt_free_bulk(pkts, 2);
	teardown_fx(fx);
}

static void test_tx_big_frame_uses_big_pool(void **state)
{
	struct ndf *fx = setup(BASE, true);
	struct virtio_net_hdr_v1 h = { 0 };
	static uint8_t frame[3000];
	struct uvn_pkt *p;

	(void)state;
	fill_frame(frame, sizeof(frame), 3);
	guest_send(fx, &h, frame, sizeof(frame), true, (void *)1);
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, &p, 1), 1);
	assert_ptr_equal(p->pool, fx->big);
	assert_memory_equal(p->seg[0].iov_base, frame, sizeof(frame));
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_tx_short_chain_dropped(void **state)
{
	struct ndf *fx = setup(BASE, true);
	struct virtio_net_hdr_v1 h = { 0 };
	uint8_t frame[8] = { 0 };
	struct uvn_vq_done done[2];
	struct uvn_pkt *p;

	(void)state;
	guest_send(fx, &h, frame, 0, false, (void *)1);  /* header only */
	guest_send(fx, &h, frame, 8, false, (void *)2);  /* shorter than Ethernet */
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, &p, 1), 0);
	assert_int_equal(fx->q.st.err_short, 2);
	assert_false(fx->q.broken);
	assert_int_equal(tq_take(&fx->ring, done, 2), 2); /* both returned, nothing leaked */
	teardown_fx(fx);
}

static void test_tx_bad_headers_dropped(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_CSUM), true);
	struct virtio_net_hdr_v1 h;
	uint8_t frame[60] = { 0 };
	struct uvn_vq_done done[4];
	struct uvn_pkt *p[4];

	(void)state;
	memset(&h, 0, sizeof(h));
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.csum_start = htole16(50);
	h.csum_offset = htole16(9); /* 50 + 9 + 2 > 60 */
	guest_send(fx, &h, frame, 60, false, (void *)1);
	memset(&h, 0, sizeof(h));
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4; /* HOST_TSO4 not negotiated */
	guest_send(fx, &h, frame, 60, false, (void *)2);
	memset(&h, 0, sizeof(h));
	h.flags = 0x80; /* unknown flag */
	guest_send(fx, &h, frame, 60, false, (void *)3);
	memset(&h, 0, sizeof(h));
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.csum_start = htole16(34);
	h.csum_offset = htole16(6);
	h.hdr_len = htole16(9999); /* never trusted */
	guest_send(fx, &h, frame, 60, false, (void *)4);
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, p, 4), 1);
	assert_int_equal(fx->q.st.err_hdr, 3);
	assert_int_equal(p[0]->vnet.hdr_len, 0);
	assert_int_equal(le16toh(p[0]->vnet.csum_start), 34);
	assert_int_equal(tq_take(&fx->ring, done, 4), 4);
	uvn_pkt_free(p[0]);
	teardown_fx(fx);
}

static void test_tx_csum_needs_feature(void **state)
{
	struct ndf *fx = setup(BASE, true);
	struct virtio_net_hdr_v1 h = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM };
	uint8_t frame[60] = { 0 };
	struct uvn_pkt *p;

	(void)state;
	guest_send(fx, &h, frame, 60, false, (void *)1);
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, &p, 1), 0);
	assert_int_equal(fx->q.st.err_hdr, 1);
	teardown_fx(fx);
}

static void test_tx_writable_buffer_breaks_queue(void **state)
{
	struct ndf *fx = setup(BASE, true);
	static uint8_t buf[128];
	struct uvn_sg sg[2] = { tq_sg(buf, 80), tq_sg(buf + 80, 10) };
	struct uvn_pkt *p;

	(void)state;
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, sg, 1, 1, (void *)1, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, &p, 1), 0);
	assert_true(fx->q.broken);
	assert_int_equal(fx->q.st.err_format, 1);
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, &p, 1), 0);
	teardown_fx(fx);
}

static void test_tx_waits_when_no_packet_descriptor(void **state)
{
	struct ndf *fx = setup(BASE, true);
	struct virtio_net_hdr_v1 h = { 0 };
	uint8_t frame[60] = { 0 };
	struct uvn_pkt *held[8], *p[2];

	(void)state;
	assert_int_equal(uvn_pkt_alloc_bulk(fx->small, held, 8), 8);
	guest_send(fx, &h, frame, 60, false, (void *)1);
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, NULL, p, 2), 0);
	assert_int_equal(fx->q.st.drop_nopkt, 1);
	uvn_pkt_free(held[7]);
	assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, NULL, p, 2), 1); /* the chain waited */
	uvn_pkt_free(p[0]);
	uvn_pkt_free_bulk(held, 7);
	teardown_fx(fx);
}

/* Guest posts rx buffers of @size bytes. */
static uint8_t rxmem[16][4096];
static void guest_post(struct ndf *fx, unsigned n, uint32_t size)
{
	static unsigned next;

	for (unsigned i = 0; i < n; i++) {
		unsigned slot = next++ % 16;

		memset(rxmem[slot], 0xee, sizeof(rxmem[slot]));
		tq_give(&fx->ring, rxmem[slot], size, true);
	}
	uvn_vq_drv_kick_prepare(fx->ring.drv);
}

static struct uvn_pkt *make_pkt(struct ndf *fx, uint32_t len, uint8_t seed)
{
	struct uvn_pkt *p = uvn_pkt_alloc(fx->small);

	if (len > 2048)
		p = (uvn_pkt_free(p), uvn_pkt_alloc(fx->big));
	fill_frame(p->buf, len, seed);
	uvn_pkt_set_buf(p, len);
	return p;
}

/* Post one RX buffer whose first bytes are @hdr and the rest 0xee. */
static void guest_post_with(struct ndf *fx, uint8_t *buf, uint32_t size,
			    const struct virtio_net_hdr_v1 *hdr)
{
	struct uvn_sg sg = tq_sg(buf, size);

	memset(buf, 0xee, size);
	memcpy(buf, hdr, sizeof(*hdr));
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, &sg, 0, 1, buf, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
}

/* The header goes in only where the buffer does not hold it already: the
 * result is the same bytes either way, one differing byte is enough. */
static void test_rx_header_written_where_it_differs(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_MRG_RXBUF), false);
	const struct virtio_net_hdr_v1 want = { .num_buffers = htole16(1) };
	struct virtio_net_hdr_v1 pre[3] = { want, want, want };
	static uint8_t bufs[3][256];
	struct uvn_pkt *p = make_pkt(fx, 60, 4);
	struct uvn_vq_done done[3];

	(void)state;
	pre[1].num_buffers = htole16(2);
	memset(&pre[2], 0xa5, sizeof(pre[2]));
	for (unsigned i = 0; i < 3; i++)
		guest_post_with(fx, bufs[i], sizeof(bufs[i]), &pre[i]);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(tq_take(&fx->ring, done, 3), 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_ptr_equal(done[i].token, bufs[i]);
		assert_int_equal(done[i].len, 12 + 60);
		assert_memory_equal(bufs[i], &want, sizeof(want));
		assert_memory_equal(bufs[i] + 12, p->buf, 60);
	}
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_rx_mergeable_spreads_frame(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_MRG_RXBUF), false);
	struct uvn_pkt *p = make_pkt(fx, 2500, 5);
	struct uvn_vq_done done[4];
	struct virtio_net_hdr_v1 h;
	uint8_t got[2500];

	(void)state;
	guest_post(fx, 4, 1000);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(fx->notified, 1);
	assert_int_equal(tq_take(&fx->ring, done, 4), 3);
	assert_int_equal(done[0].len, 1000); /* every buffer but the last full */
	assert_int_equal(done[1].len, 1000);
	assert_int_equal(done[2].len, 12 + 2500 - 2000);
	memcpy(&h, done[0].token, sizeof(h));
	assert_int_equal(le16toh(h.num_buffers), 3);
	assert_int_equal(h.flags, 0);
	memcpy(got, (uint8_t *)done[0].token + 12, 988);
	memcpy(got + 988, done[1].token, 1000);
	memcpy(got + 1988, done[2].token, 512);
	assert_memory_equal(got, p->buf, 2500);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_rx_mergeable_no_buffer_lost_when_short(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_MRG_RXBUF), false);
	struct uvn_pkt *p = make_pkt(fx, 2500, 6);
	struct uvn_vq_done done[4];

	(void)state;
	guest_post(fx, 2, 1000);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
	assert_int_equal(fx->q.st.drop_nobuf, 1);
	assert_int_equal(tq_take(&fx->ring, done, 4), 0);
	guest_post(fx, 1, 1000); /* now three: the same two come first */
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(tq_take(&fx->ring, done, 4), 3);
	assert_int_equal(done[2].len, 512);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_rx_single_drops_too_big_keeps_chain(void **state)
{
	struct ndf *fx = setup(BASE, false);
	struct uvn_pkt *p[2] = { make_pkt(fx, 1600, 7), make_pkt(fx, 1514, 8) };
	struct uvn_vq_done done[2];
	struct virtio_net_hdr_v1 h;

	(void)state;
	guest_post(fx, 1, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, p, 2), 1);
	assert_int_equal(fx->q.st.drop_toobig, 1);
	assert_int_equal(tq_take(&fx->ring, done, 2), 1);
	assert_int_equal(done[0].len, 1526);
	memcpy(&h, done[0].token, sizeof(h));
	assert_int_equal(le16toh(h.num_buffers), 1);
	assert_memory_equal((uint8_t *)done[0].token + 12, p[1]->buf, 1514);
	uvn_pkt_free_bulk(p, 2);
	teardown_fx(fx);
}

/* An Ethernet/IPv4/UDP frame with a partial checksum, as a guest stack makes it. */
static struct uvn_pkt *udp_partial(struct ndf *fx, uint32_t payload)
{
	struct uvn_pkt *p = make_pkt(fx, 14 + 20 + 8 + payload, 9);
	uint8_t *f = p->buf, *ip = f + 14, *udp = ip + 20;
	uint16_t ulen = (uint16_t)(8 + payload);
	uint8_t pseudo[12];

	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[9] = 17;
	memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
	udp[4] = (uint8_t)(ulen >> 8);
	udp[5] = (uint8_t)ulen;
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = 17;
	pseudo[10] = udp[4];
	pseudo[11] = udp[5];
	uint16_t ps = uvn_csum_buf(pseudo, sizeof(pseudo));
	udp[6] = (uint8_t)(ps >> 8);
	udp[7] = (uint8_t)ps;
	p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	p->vnet.csum_start = htole16(34);
	p->vnet.csum_offset = htole16(6);
	return p;
}

static void test_rx_completes_checksum_for_guest_without_csum(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_MRG_RXBUF), false);
	struct uvn_pkt *p = udp_partial(fx, 1500);
	struct uvn_vq_done done[4];
	struct virtio_net_hdr_v1 h;
	uint8_t frame[1542], pseudo[12], orig[2];

	(void)state;
	memcpy(orig, (uint8_t *)p->buf + 40, 2);
	guest_post(fx, 4, 1024);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(fx->q.st.csum_sw, 1);
	assert_int_equal(tq_take(&fx->ring, done, 4), 2);
	memcpy(&h, done[0].token, sizeof(h));
	assert_int_equal(h.flags, 0);
	memcpy(frame, (uint8_t *)done[0].token + 12, 1012);
	memcpy(frame + 1012, done[1].token, sizeof(frame) - 1012);
	memcpy(pseudo, frame + 26, 8);
	pseudo[8] = 0;
	pseudo[9] = 17;
	pseudo[10] = frame[38];
	pseudo[11] = frame[39];
	/* pseudo header + UDP header + payload sums to all ones */
	uint32_t s = uvn_csum_buf(pseudo, 12) + (uint32_t)uvn_csum_buf(frame + 34, 1508);
	s = (s & 0xffff) + (s >> 16);
	assert_int_equal(s, 0xffff);
	/* the packet itself (maybe another guest's memory) is untouched */
	assert_memory_equal((uint8_t *)p->buf + 40, orig, 2);
	assert_memory_not_equal(frame + 40, orig, 2);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_rx_passes_partial_checksum_to_guest_with_csum(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_MRG_RXBUF) | F(VIRTIO_NET_F_GUEST_CSUM), false);
	struct uvn_pkt *p = udp_partial(fx, 100);
	struct uvn_vq_done done[2];
	struct virtio_net_hdr_v1 h;

	(void)state;
	guest_post(fx, 1, 1024);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(fx->q.st.csum_sw, 0);
	assert_int_equal(tq_take(&fx->ring, done, 2), 1);
	memcpy(&h, done[0].token, sizeof(h));
	assert_int_equal(h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(le16toh(h.csum_start), 34);
	assert_int_equal(le16toh(h.csum_offset), 6);
	assert_memory_equal((uint8_t *)done[0].token + 12, p->buf, p->len);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_rx_readable_buffer_breaks_queue(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_MRG_RXBUF), false);
	struct uvn_pkt *p = make_pkt(fx, 60, 1);
	struct uvn_sg sg = tq_sg(rxmem[0], 1000);

	(void)state;
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, &sg, 1, 0, (void *)1, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
	assert_true(fx->q.broken);
	assert_int_equal(fx->q.st.err_format, 1);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static int pairs_set;
static int set_pairs(void *ctx, unsigned pairs)
{
	(void)ctx;
	pairs_set = (int)pairs;
	return pairs <= 4 ? 0 : -1;
}

static uint8_t ctrl_cmd(struct ndf *fx, uint8_t class, uint8_t cmd, const void *data,
			uint32_t dlen)
{
	static uint8_t buf[1024], ack;
	struct uvn_sg sg[2] = { tq_sg(buf, 2 + dlen), tq_sg(&ack, 1) };
	struct uvn_vq_done done;

	buf[0] = class;
	buf[1] = cmd;
	if (dlen)
		memcpy(buf + 2, data, dlen);
	ack = 0xaa;
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, sg, 1, 1, buf, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
	assert_int_equal(uvn_netdev_ctrl(&fx->q, set_pairs, NULL), 1);
	assert_int_equal(tq_take(&fx->ring, &done, 1), 1);
	assert_int_equal(done.len, 1);
	return ack;
}

static void test_ctrl_commands(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_MQ) |
				   F(VIRTIO_NET_F_CTRL_RX) | F(VIRTIO_NET_F_CTRL_MAC_ADDR), true);
	uint16_t pairs = htole16(2), toomany = htole16(8);
	uint8_t on = 1, mac[6] = { 2, 0, 0, 0, 0, 1 };

	(void)state;
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &pairs, 2),
			 VIRTIO_NET_OK);
	assert_int_equal(pairs_set, 2);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, &toomany, 2),
			 VIRTIO_NET_ERR);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &on, 1),
			 VIRTIO_NET_OK);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, mac, 6),
			 VIRTIO_NET_OK);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_VLAN, 0, &on, 1), VIRTIO_NET_ERR);
	assert_int_equal(ctrl_cmd(fx, 99, 0, NULL, 0), VIRTIO_NET_ERR);
	assert_int_equal(fx->q.st.ctrl_cmds, 6);
	assert_int_equal(fx->q.st.ctrl_err, 3);
	teardown_fx(fx);
}


/* MAC_TABLE_SET's data: @nu unicast then @nm multicast addresses. */
static uint32_t mac_tables(uint8_t *d, const uint8_t *u, uint32_t nu, const uint8_t *m, uint32_t nm)
{
	uint32_t n = htole32(nu), len = 0;

	memcpy(d, &n, 4);
	memcpy(d + 4, u, 6 * nu);
	len = 4 + 6 * nu;
	n = htole32(nm);
	memcpy(d + len, &n, 4);
	memcpy(d + len + 4, m, 6 * nm);
	return len + 4 + 6 * nm;
}

/* @f as a device's after reset, the queue's; then promiscuous mode off
 * through the control queue. */
static void filter_not_promisc(struct ndf *fx, struct uvn_rx_filter *f)
{
	uint8_t off = 0;

	memset(f, 0, sizeof(*f));
	uvn_rx_filter_reset(f);
	fx->q.filter = f;
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &off, 1),
			 VIRTIO_NET_OK);
}

/* The control queue's receive modes and MAC tables reach the filter;
 * malformed tables and commands without their feature are refused and
 * change nothing. */
static void test_ctrl_rx_filter(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_CTRL_RX) |
				   F(VIRTIO_NET_F_CTRL_MAC_ADDR), true);
	static const uint8_t own[6] = { 2, 0, 0, 0, 0, 1 }, uni[6] = { 2, 0, 0, 0, 0, 2 },
			     other[6] = { 2, 0, 0, 0, 0, 3 }, multi[6] = { 1, 0, 0x5e, 0, 0, 1 },
			     mother[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	struct uvn_rx_filter filter;
	uint8_t on = 1, d[64];
	uint32_t len, n;

	(void)state;
	filter_not_promisc(fx, &filter);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, own, 6),
			 VIRTIO_NET_OK);
	len = mac_tables(d, uni, 1, multi, 1);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, d, len),
			 VIRTIO_NET_OK);
	assert_true(uvn_rx_filter_pass(&filter, own));
	assert_true(uvn_rx_filter_pass(&filter, uni));
	assert_false(uvn_rx_filter_pass(&filter, other));
	assert_true(uvn_rx_filter_pass(&filter, multi));
	assert_false(uvn_rx_filter_pass(&filter, mother));
	/* one byte short, one too many, a count past the data: refused, kept */
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, d, len - 1),
			 VIRTIO_NET_ERR);
	len = mac_tables(d, other, 1, mother, 1);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, d, len + 1),
			 VIRTIO_NET_ERR);
	n = htole32(0x40000000);
	memcpy(d, &n, 4);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, d, len),
			 VIRTIO_NET_ERR);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET, d, 3),
			 VIRTIO_NET_ERR);
	assert_false(uvn_rx_filter_pass(&filter, other));
	assert_false(uvn_rx_filter_pass(&filter, mother));
	/* ALLUNI..NOBCAST need CTRL_RX_EXTRA; ALLMULTI does not */
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLUNI, &on, 1),
			 VIRTIO_NET_ERR);
	assert_false(uvn_rx_filter_pass(&filter, other));
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, &on, 1),
			 VIRTIO_NET_OK);
	assert_true(uvn_rx_filter_pass(&filter, mother));
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, &on, 1),
			 VIRTIO_NET_OK);
	assert_true(uvn_rx_filter_pass(&filter, other));
	assert_int_equal(fx->q.st.ctrl_err, 5);
	teardown_fx(fx);
}

/* Without CTRL_MAC_ADDR the address cannot be set (spec: the feature gates it). */
static void test_ctrl_mac_addr_needs_feature(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_CTRL_RX), true);
	static const uint8_t own[6] = { 2, 0, 0, 0, 0, 1 }, other[6] = { 2, 0, 0, 0, 0, 3 };
	struct uvn_rx_filter filter;

	(void)state;
	filter_not_promisc(fx, &filter);
	assert_int_equal(ctrl_cmd(fx, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET, own, 6),
			 VIRTIO_NET_ERR);
	/* no address known: unicast still passes */
	assert_true(uvn_rx_filter_pass(&filter, other));
	teardown_fx(fx);
}

/*
 * A driver that re-arms each control slot for the next lap as soon as the
 * device read it (flipping AVAIL/USED, from the buffer translation): one
 * call used to pop until empty, batching past the ring, and the next used
 * element went beyond it. Now the pop past the ring breaks the queue.
 */
static struct vring_packed_desc *rearm_ring;
static unsigned rearm_left, rearm_pos;
static void rearm_on_xlate(void *ctx, uint64_t addr, uint64_t len)
{
	(void)ctx;
	(void)addr;
	(void)len;
	if (rearm_left) {
		rearm_left--;
		rearm_ring[rearm_pos].flags ^= htole16(1u << VRING_PACKED_DESC_F_AVAIL |
						       1u << VRING_PACKED_DESC_F_USED);
		rearm_pos = (rearm_pos + 1) % 4;
	}
}

static void test_ctrl_overrun_breaks_queue(void **state)
{
	uint64_t f = BASE | F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_F_RING_PACKED) | F(VIRTIO_F_IN_ORDER);
	static uint8_t cmd[2] = { VIRTIO_NET_CTRL_ANNOUNCE, VIRTIO_NET_CTRL_ANNOUNCE_ACK };
	struct uvn_netdev_q q = { 0 };
	struct tq ring;

	(void)state;
	tq_pair(&ring, 4, f);
	ring.m.hook = rearm_on_xlate;
	uvn_netdev_q_init(&q, ring.dev, f, true);
	rearm_ring = pq_desc(&ring, 0);
	for (unsigned i = 0; i < 4; i++) {
		rearm_ring[i].addr = htole64((uint64_t)(uintptr_t)cmd);
		rearm_ring[i].len = htole32(2);
		rearm_ring[i].id = htole16((uint16_t)i);
		rearm_ring[i].flags = htole16(1u << VRING_PACKED_DESC_F_AVAIL);
	}
	rearm_left = 8;
	rearm_pos = 0;
	assert_int_equal(uvn_netdev_ctrl(&q, set_pairs, NULL), 4);
	assert_true(q.broken);
	assert_int_equal(q.ring_err, -UVN_VQ_E_OVERRUN);
	assert_int_equal(uvn_vq_dev_stats(ring.dev)->err[UVN_VQ_ERR_SLOT(UVN_VQ_E_OVERRUN)], 1);
	assert_true((uvn_vq_dev_used_state(ring.dev) & 0x7fff) < 4);
	tq_teardown(&ring);
}

static void test_ctrl_without_ack_buffer_is_counted(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_CTRL_VQ), true);
	static uint8_t buf[4] = { VIRTIO_NET_CTRL_ANNOUNCE, VIRTIO_NET_CTRL_ANNOUNCE_ACK };
	struct uvn_sg sg = tq_sg(buf, 2);
	struct uvn_vq_done done;

	(void)state;
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, &sg, 1, 0, buf, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
	assert_int_equal(uvn_netdev_ctrl(&fx->q, set_pairs, NULL), 1);
	assert_int_equal(fx->q.st.ctrl_err, 1);
	assert_int_equal(tq_take(&fx->ring, &done, 1), 1);
	assert_int_equal(done.len, 0);
	teardown_fx(fx);
}

/*
 * Chains of more buffers than UVN_NETDEV_MAX_IOV are legal (the ring is
 * larger): each is dropped, counted, and given back empty in ring order,
 * the queue running on. LONG_SEGS one-byte buffers make one.
 */
#define LONG_SEGS (UVN_NETDEV_MAX_IOV + 76)
#define LONG_NUM 2048

/* Each test runs on a split, a packed and an IN_ORDER split ring. */
static const uint64_t long_rings[] = { 0, F_PACKED, F_IN_ORDER };

static struct ndf *setup_long(uint64_t features, bool tx)
{
	struct ndf *fx = calloc(1, sizeof(*fx));

	ndf_init(fx, &(struct ndf_cfg){ .num = LONG_NUM, .features = features, .tx = tx,
					 .small = 8, .big = 2 });
	return fx;
}

/* Guest: a chain of a 12-byte header (tx) and LONG_SEGS one-byte buffers. */
static void guest_long(struct ndf *fx, bool in, void *token)
{
	static uint8_t buf[UVN_NET_HDR_LEN + LONG_SEGS];
	static struct uvn_sg sg[1 + LONG_SEGS];
	unsigned n = 0;

	memset(buf, 0, sizeof(buf));
	if (!in)
		sg[n++] = tq_sg(buf, UVN_NET_HDR_LEN);
	for (unsigned i = 0; i < LONG_SEGS; i++)
		sg[n++] = tq_sg(buf + UVN_NET_HDR_LEN + i, 1);
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, sg, in ? 0 : n, in ? n : 0, token, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
}

static void test_tx_long_chain_dropped(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		struct ndf *fx = setup_long(BASE | long_rings[k], true);
		struct virtio_net_hdr_v1 h = { 0 };
		struct uvn_vq_done done[4];
		uint8_t frame[60];
		struct uvn_pkt *p[2];

		fill_frame(frame, sizeof(frame), 9);
		guest_long(fx, false, (void *)1);
		guest_send(fx, &h, frame, sizeof(frame), false, (void *)2);
		assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, p, 2), 1);
		assert_memory_equal(p[0]->seg[0].iov_base, frame, sizeof(frame));
		assert_false(fx->q.broken);
		assert_int_equal(fx->q.st.drop_long, 1);
		assert_int_equal(fx->q.st.err_toolong, 0);
		assert_int_equal(fx->q.st.err_ring, 0);
		assert_int_equal(uvn_vq_dev_error(fx->ring.dev), 0);
		assert_int_equal(tq_take(&fx->ring, done, 4), 2);
		assert_ptr_equal(done[0].token, (void *)1);
		assert_ptr_equal(done[1].token, (void *)2);
		/* And the queue goes on. */
		guest_send(fx, &h, frame, sizeof(frame), true, (void *)3);
		assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, p + 1, 1), 1);
		uvn_pkt_free_bulk(p, 2);
		teardown_fx(fx);
	}
}

static void test_rx_long_chain_dropped(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		struct ndf *fx = setup_long(BASE | long_rings[k], false);
		struct uvn_pkt *p = make_pkt(fx, 1000, 10);
		struct uvn_vq_done done[4];

		guest_long(fx, true, (void *)1);
		guest_post(fx, 1, 1526);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		assert_false(fx->q.broken);
		assert_int_equal(fx->q.st.drop_long, 1);
		assert_int_equal(fx->q.st.drop_nobuf, 0);
		assert_int_equal(tq_take(&fx->ring, done, 4), 2);
		assert_ptr_equal(done[0].token, (void *)1);
		assert_int_equal(done[0].len, 0);
		assert_int_equal(done[1].len, UVN_NET_HDR_LEN + 1000);
		assert_memory_equal((uint8_t *)done[1].token + UVN_NET_HDR_LEN, p->buf, 1000);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/* In the middle of a frame's buffers: those taken before it go back empty
 * first (ring order, IN_ORDER included), the frame goes in after it. */
static void test_rx_mergeable_long_chain_mid_frame(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		struct ndf *fx = setup_long(BASE | F(VIRTIO_NET_F_MRG_RXBUF) | long_rings[k], false);
		struct uvn_pkt *p = make_pkt(fx, 2500, 11);
		struct uvn_vq_done done[8];

		guest_post(fx, 1, 1000);
		guest_long(fx, true, (void *)1);
		guest_post(fx, 3, 1000);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		assert_false(fx->q.broken);
		assert_int_equal(fx->q.st.drop_long, 1);
		assert_int_equal(tq_take(&fx->ring, done, 8), 5);
		assert_int_equal(done[0].len, 0);
		assert_ptr_equal(done[1].token, (void *)1);
		assert_int_equal(done[1].len, 0);
		assert_int_equal(done[2].len, 1000);
		assert_int_equal(done[3].len, 1000);
		assert_int_equal(done[4].len, UVN_NET_HDR_LEN + 2500 - 2000);
		assert_memory_equal((uint8_t *)done[2].token + UVN_NET_HDR_LEN, p->buf, 988);
		/* The buffer taken before the long chain went back unwritten. */
		for (unsigned b = 0; b < 1000; b++)
			assert_int_equal(((uint8_t *)done[0].token)[b], 0xee);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

static void test_ctrl_long_chain_dropped(void **state)
{
	struct ndf *fx = setup_long(BASE | F(VIRTIO_NET_F_CTRL_VQ), true);
	static uint8_t cmd[2] = { VIRTIO_NET_CTRL_ANNOUNCE, VIRTIO_NET_CTRL_ANNOUNCE_ACK }, ack;
	struct uvn_sg sg[2] = { tq_sg(cmd, 2), tq_sg(&ack, 1) };
	struct uvn_vq_done done[2];

	(void)state;
	guest_long(fx, false, (void *)1);
	ack = 0xaa;
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, sg, 1, 1, cmd, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
	assert_int_equal(uvn_netdev_ctrl(&fx->q, set_pairs, NULL), 2);
	assert_false(fx->q.broken);
	assert_int_equal(fx->q.st.ctrl_err, 1);
	assert_int_equal(fx->q.st.ctrl_cmds, 1);
	assert_int_equal(tq_take(&fx->ring, done, 2), 2);
	assert_ptr_equal(done[0].token, (void *)1);
	assert_int_equal(done[0].len, 0);
	assert_int_equal(done[1].len, 1);
	assert_int_equal(ack, VIRTIO_NET_OK);
	teardown_fx(fx);
}

/*
 * Each over-long chain costs a walk of up to UVN_VQ_MAX_CHAIN_IOV buffers:
 * one call drops UVN_NETDEV_LONG_DROPS of them and leaves the rest for the
 * next, so a guest posting only such chains cannot make a call long.
 */
static void test_long_chains_budget(void **state)
{
	enum { LONGS = UVN_NETDEV_LONG_DROPS + 1 };

	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		struct ndf *fx = setup_long(BASE | long_rings[k], false);
		struct uvn_pkt *p = make_pkt(fx, 1000, 12);
		struct uvn_vq_done done[LONGS + 1];

		for (unsigned i = 0; i < LONGS; i++)
			guest_long(fx, true, (void *)(uintptr_t)(i + 1));
		guest_post(fx, 1, 1526);
		/* The budget spent, the frame finds no buffer this time; the
		 * chains dropped so far are back already. */
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
		assert_int_equal(fx->q.st.drop_long, UVN_NETDEV_LONG_DROPS);
		assert_int_equal(fx->q.st.drop_nobuf, 1);
		assert_int_equal(tq_take(&fx->ring, done, LONGS + 1), UVN_NETDEV_LONG_DROPS);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		assert_int_equal(fx->q.st.drop_long, LONGS);
		assert_false(fx->q.broken);
		assert_int_equal(tq_take(&fx->ring, done, LONGS + 1), 2);
		assert_ptr_equal(done[0].token, (void *)(uintptr_t)LONGS);
		assert_int_equal(done[1].len, UVN_NET_HDR_LEN + 1000);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
	for (unsigned k = 0; k < 3; k++) {
		struct ndf *fx = setup_long(BASE | long_rings[k], true);
		struct virtio_net_hdr_v1 h = { 0 };
		struct uvn_pkt *p;
		uint8_t frame[60];

		fill_frame(frame, sizeof(frame), 13);
		for (unsigned i = 0; i < LONGS; i++)
			guest_long(fx, false, (void *)(uintptr_t)(i + 1));
		guest_send(fx, &h, frame, sizeof(frame), true, (void *)9);
		assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, &p, 1), 0);
		assert_int_equal(fx->q.st.drop_long, UVN_NETDEV_LONG_DROPS);
		assert_int_equal(uvn_netdev_tx(&fx->q, fx->small, fx->big, &p, 1), 1);
		assert_int_equal(fx->q.st.drop_long, LONGS);
		assert_false(fx->q.broken);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/* A chain past the ring's cap is not dropped: it breaks the queue. */
static void test_chain_over_cap_breaks(void **state)
{
	static uint8_t buf[UVN_VQ_MAX_CHAIN_IOV + 1];
	static struct uvn_sg sg[UVN_VQ_MAX_CHAIN_IOV + 1];
	struct ndf *fx = setup_long(BASE, false);
	struct uvn_pkt *p = make_pkt(fx, 100, 14);

	(void)state;
	for (unsigned i = 0; i < UVN_VQ_MAX_CHAIN_IOV + 1; i++)
		sg[i] = tq_sg(buf + i, 1);
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, sg, 0, UVN_VQ_MAX_CHAIN_IOV + 1, sg, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
	assert_true(fx->q.broken);
	assert_int_equal(uvn_vq_dev_error(fx->ring.dev), -UVN_VQ_E_CHAIN_LONG);
	assert_int_equal(fx->q.st.drop_long, 0);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tx_long_chain_dropped),
		cmocka_unit_test(test_rx_long_chain_dropped),
		cmocka_unit_test(test_rx_mergeable_long_chain_mid_frame),
		cmocka_unit_test(test_ctrl_long_chain_dropped),
		cmocka_unit_test(test_long_chains_budget),
		cmocka_unit_test(test_chain_over_cap_breaks),
		cmocka_unit_test(test_tx_frames_become_packets),
		cmocka_unit_test(test_tx_big_frame_uses_big_pool),
		cmocka_unit_test(test_tx_short_chain_dropped),
		cmocka_unit_test(test_tx_bad_headers_dropped),
		cmocka_unit_test(test_tx_csum_needs_feature),
		cmocka_unit_test(test_tx_writable_buffer_breaks_queue),
		cmocka_unit_test(test_tx_waits_when_no_packet_descriptor),
		cmocka_unit_test(test_rx_header_written_where_it_differs),
		cmocka_unit_test(test_rx_mergeable_spreads_frame),
		cmocka_unit_test(test_rx_mergeable_no_buffer_lost_when_short),
		cmocka_unit_test(test_rx_single_drops_too_big_keeps_chain),
		cmocka_unit_test(test_rx_completes_checksum_for_guest_without_csum),
		cmocka_unit_test(test_rx_passes_partial_checksum_to_guest_with_csum),
		cmocka_unit_test(test_rx_readable_buffer_breaks_queue),
		cmocka_unit_test(test_ctrl_commands),
		cmocka_unit_test(test_ctrl_rx_filter),
		cmocka_unit_test(test_ctrl_mac_addr_needs_feature),
		cmocka_unit_test(test_ctrl_overrun_breaks_queue),
		cmocka_unit_test(test_ctrl_without_ack_buffer_is_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
