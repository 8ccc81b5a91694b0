/* SPDX-License-Identifier: MIT */
/*
 * The device's offload decisions, against our own driver half in one
 * process: GSO and partial-checksum frames pass to a guest that negotiated
 * them, are segmented or completed for one that did not, big frames need
 * mergeable or big buffers, malformed ones are dropped by reason; a guest's
 * TSO frame reaches a guest without TSO as valid segments; a queue with an
 * MTU delivers what fits it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>

#include <cmocka.h>

#include "gso_frames.h"
#include "net/device/netdev.h"
#include "netdev_fix.h"

#define BASE (F(VIRTIO_F_VERSION_1))
#define MRG (F(VIRTIO_NET_F_MRG_RXBUF))
#define GCSUM (F(VIRTIO_NET_F_GUEST_CSUM))
#define TSO4 (F(VIRTIO_NET_F_GUEST_TSO4))

static struct ndf *setup(uint64_t features, bool tx)
{
	struct ndf *fx = calloc(1, sizeof(*fx));

	ndf_init(fx, &(struct ndf_cfg){ .num = 64, .features = features, .tx = tx, .small = 8,
					 .big = 8 });
	return fx;
}

static void teardown_fx(struct ndf *fx)
{
	ndf_fini(fx);
	free(fx);
}

/* Guest rx buffers: @n of @size bytes each. */
static uint8_t rxmem[48][8192];
static void guest_post(struct ndf *fx, unsigned n, uint32_t size)
{
	static unsigned next;

	for (unsigned i = 0; i < n; i++) {
		unsigned slot = next++ % 48;

		memset(rxmem[slot], 0xee, size);
		tq_give(&fx->ring, rxmem[slot], size, true);
	}
	uvn_vq_drv_kick_prepare(fx->ring.drv);
}

/* One frame the guest received: header and bytes, joined from @n buffers. */
struct got {
	struct virtio_net_hdr_v1 h;
	uint8_t f[70000];
	uint32_t len;
};

static unsigned guest_frame(const struct uvn_vq_done *done, unsigned n, struct got *g)
{
	unsigned k;

	memcpy(&g->h, done[0].token, sizeof(g->h));
	k = le16toh(g->h.num_buffers);
	assert_true(k >= 1 && k <= n);
	g->len = 0;
	for (unsigned i = 0; i < k; i++) {
		uint32_t skip = i ? 0 : 12;

		memcpy(g->f + g->len, (uint8_t *)done[i].token + skip, done[i].len - skip);
		g->len += done[i].len - skip;
	}
	return k;
}

/* A GSO frame from the big pool, as tf_build() makes it. */
static struct uvn_pkt *gso_pkt(struct ndf *fx, uint32_t payload, const struct tf_opts *o,
			       struct tf_layout *l)
{
	struct uvn_pkt *p = uvn_pkt_alloc(fx->big);

	*l = tf_build(p->buf, payload, o, &p->vnet);
	uvn_pkt_set_buf(p, l->len);
	return p;
}

static void test_passthrough_mergeable(void **state)
{
	struct ndf *fx = setup(BASE | MRG | GCSUM | TSO4, false);
	struct tf_opts o = { .mss = 1448 };
	struct tf_layout l;
	struct uvn_pkt *p = gso_pkt(fx, 4000, &o, &l);
	static struct got g;
	struct uvn_vq_done done[8];

	(void)state;
	guest_post(fx, 8, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(tq_take(&fx->ring, done, 8), 3);
	assert_int_equal(guest_frame(done, 3, &g), 3);
	assert_int_equal(g.len, l.len);
	assert_memory_equal(g.f, p->buf, l.len);
	assert_int_equal(g.h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(g.h.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	assert_int_equal(le16toh(g.h.gso_size), 1448);
	assert_int_equal(le16toh(g.h.hdr_len), l.hdr_len);
	assert_int_equal(le16toh(g.h.csum_start), l.l4);
	assert_int_equal(le16toh(g.h.csum_offset), 16);
	assert_int_equal(fx->q.st.gso_pass, 1);
	assert_int_equal(fx->q.st.gso_sw, 0);
	assert_int_equal(fx->q.st.packets, 1);
	assert_int_equal(fx->q.st.bytes, l.len);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

/*
 * The sender rewrites its headers after the device validated them (a
 * zero-copy packet's bytes are the sending guest's memory): the receiver
 * still gets the headers that were checked against the GSO metadata. The
 * rewrite happens in the receiver's buffer translation, i.e. between the
 * parse and the copy into the guest.
 */
static uint8_t *toctou_at;
static void rewrite_on_xlate(void *ctx, uint64_t addr, uint64_t len)
{
	(void)ctx;
	(void)addr;
	(void)len;
	if (toctou_at) {
		toctou_at[0] ^= 0xff; /* the TCP destination port */
		toctou_at[-8] = 0x11; /* the IPv4 protocol: UDP */
		toctou_at = NULL;
	}
}

static void test_passthrough_uses_validated_headers(void **state)
{
	struct ndf *fx = setup(BASE | MRG | GCSUM | TSO4, false);
	struct tf_opts o = { .mss = 1448 };
	struct tf_layout l;
	struct uvn_pkt *p = gso_pkt(fx, 4000, &o, &l);
	static uint8_t sent[8192];
	static struct got g;
	struct uvn_vq_done done[8];

	(void)state;
	fx->ring.m.hook = rewrite_on_xlate;
	memcpy(sent, p->buf, l.len);
	guest_post(fx, 8, 1526);
	toctou_at = (uint8_t *)p->buf + l.l4 + 2;
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_null(toctou_at); /* the rewrite did happen */
	assert_int_equal(tq_take(&fx->ring, done, 8), 3);
	assert_int_equal(guest_frame(done, 3, &g), 3);
	assert_int_equal(g.len, l.len);
	assert_memory_equal(g.f, sent, l.hdr_len);
	assert_memory_equal(g.f + l.hdr_len, (uint8_t *)p->buf + l.hdr_len, l.len - l.hdr_len);
	assert_int_equal(g.h.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

/*
 * A device with an MTU (a port's mtu=) takes a GSO frame only when each of
 * its segments fits, judged on the headers it delivers: a check made before
 * (the port's) read headers the sender may have grown since. 40 bytes of
 * IPv4 and TCP headers + 1448 fit 1500 (passed on, or segmented for a guest
 * without TSO); 16 bytes of TCP options more do not.
 */
static void test_segments_over_the_mtu_dropped(void **state)
{
	static const uint64_t feats[] = { BASE | MRG | GCSUM | TSO4, BASE | MRG };
	struct tf_opts fit = { .mss = 1448 }, over = { .mss = 1448, .tcp_opt_words = 4 };
	struct uvn_vq_done done[8];
	struct tf_layout l;

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		struct ndf *fx = setup(feats[i], false);
		struct uvn_pkt *p = gso_pkt(fx, 4000, &over, &l);

		uvn_netdev_q_set_mtu(&fx->q, 1500);
		guest_post(fx, 8, 1526);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
		assert_int_equal(fx->q.st.drop_gso_size, 1);
		assert_int_equal(tq_take(&fx->ring, done, 8), 0);
		uvn_pkt_free(p);
		p = gso_pkt(fx, 4000, &fit, &l);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		assert_int_equal(fx->q.st.packets, i ? 3 : 1);
		assert_int_equal(fx->q.st.drop_gso_size, 1);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/*
 * A frame without GSO may exceed mtu + 14 bytes by its VLAN tag's 4. The
 * device judges the tag on its own copy of the Ethernet header and delivers
 * that copy: a sender that untags its frame (zero-copy: its own memory)
 * after the check, here in the receiver's buffer translation, still
 * delivers the tagged frame that was judged, never an untagged one 4 bytes
 * over the MTU. An untagged frame that long is dropped.
 */
static uint8_t *untag_at;
static void untag_on_xlate(void *ctx, uint64_t addr, uint64_t len)
{
	(void)ctx;
	(void)addr;
	(void)len;
	if (untag_at) {
		untag_at[0] = 0x08; /* TPID 0x8100 -> IPv4 */
		untag_at[1] = 0x00;
		untag_at = NULL;
	}
}

static struct uvn_pkt *eth_pkt(struct ndf *fx, uint32_t len, bool tagged)
{
	static const uint8_t tag[] = { 0x81, 0x00, 0x00, 0x05, 0x08, 0x00 };
	struct uvn_pkt *p = uvn_pkt_alloc(fx->small);
	uint8_t *b = p->buf;

	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7);
	memcpy(b + 12, tag + (tagged ? 0 : 4), tagged ? 6 : 2);
	uvn_pkt_set_buf(p, len);
	return p;
}

static void test_tagged_frame_over_the_mtu(void **state)
{
	static const uint64_t feats[] = { BASE | MRG, BASE };
	static uint8_t sent[2048];
	static struct got g;
	struct uvn_vq_done done[8];

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		struct ndf *fx = setup(feats[i], false);
		struct uvn_pkt *p = eth_pkt(fx, 1518, false);

		uvn_netdev_q_set_mtu(&fx->q, 1500);
		guest_post(fx, 4, 1536);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
		assert_int_equal(fx->q.st.drop_mtu, 1);
		uvn_pkt_free(p);
		p = eth_pkt(fx, 1518, true);
		memcpy(sent, p->buf, 1518);
		fx->ring.m.hook = untag_on_xlate;
		untag_at = (uint8_t *)p->buf + 12;
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		assert_null(untag_at); /* the sender did untag it */
		assert_int_equal(tq_take(&fx->ring, done, 8), 1);
		assert_int_equal(guest_frame(done, 1, &g), 1);
		assert_int_equal(g.len, 1518);
		assert_memory_equal(g.f, sent, 1518);
		uvn_pkt_free(p);
		p = eth_pkt(fx, 1519, true);
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
		assert_int_equal(fx->q.st.drop_mtu, 2);
		uvn_pkt_free(p);
		p = eth_pkt(fx, 1514, false); /* the fast path */
		assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
		assert_int_equal(fx->q.st.packets, 2);
		uvn_pkt_free(p);
		teardown_fx(fx);
	}
}

/* The first @n of @total segments reached the guest: each one checked. */
static void check_first_segments(struct ndf *fx, const struct uvn_pkt *p,
				 const struct tf_layout *l, const struct tf_opts *o, unsigned n,
				 unsigned total, bool partial)
{
	static struct got g;
	struct uvn_vq_done done[16];

	assert_int_equal(tq_take(&fx->ring, done, 16), n);
	for (unsigned i = 0; i < n; i++) {
		const char *err;

		assert_int_equal(guest_frame(done + i, 1, &g), 1);
		assert_int_equal(g.h.gso_type, 0);
		assert_int_equal(g.h.flags, partial ? VIRTIO_NET_HDR_F_NEEDS_CSUM : 0);
		if (partial) {
			assert_int_equal(le16toh(g.h.csum_start), l->l4);
			assert_int_equal(le16toh(g.h.csum_offset), o->udp ? 6 : 16);
		}
		err = tf_check_seg(g.f, g.len, p->buf, l, o, i, total, partial);
		if (err)
			fail_msg("segment %u: %s", i, err);
	}
}

static void check_segments(struct ndf *fx, const struct uvn_pkt *p, const struct tf_layout *l,
			   const struct tf_opts *o, unsigned n, bool partial)
{
	check_first_segments(fx, p, l, o, n, n, partial);
}

static void test_segmented_partial_for_guest_csum(void **state)
{
	struct ndf *fx = setup(BASE | MRG | GCSUM, false);
	struct tf_opts o = { .mss = 1448, .tcp_flags = 0x19, .ip_id = 7 };
	struct tf_layout l;
	struct uvn_pkt *p = gso_pkt(fx, 4000, &o, &l);

	(void)state;
	guest_post(fx, 8, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	check_segments(fx, p, &l, &o, 3, true);
	assert_int_equal(fx->q.st.gso_sw, 1);
	assert_int_equal(fx->q.st.gso_segs, 3);
	assert_int_equal(fx->q.st.csum_sw, 0);
	assert_int_equal(fx->q.st.packets, 3);
	assert_int_equal(fx->notified, 1);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_segmented_full_checksums_without_guest_csum(void **state)
{
	struct ndf *fx = setup(BASE | MRG, false);
	struct tf_opts o6 = { .ipv6 = true, .mss = 1400, .seq = 0xfffffff0 };
	struct tf_opts u4 = { .udp = true, .mss = 1000, .vlan = true };
	struct tf_layout l6, lu;
	struct uvn_pkt *p[2] = { gso_pkt(fx, 3000, &o6, &l6), gso_pkt(fx, 2500, &u4, &lu) };

	(void)state;
	guest_post(fx, 6, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, p, 1), 1);
	check_segments(fx, p[0], &l6, &o6, 3, false);
	assert_int_equal(uvn_netdev_rx(&fx->q, p + 1, 1), 1);
	check_segments(fx, p[1], &lu, &u4, 3, false);
	assert_int_equal(fx->q.st.gso_sw, 2);
	assert_int_equal(fx->q.st.gso_segs, 6);
	assert_int_equal(fx->q.st.csum_sw, 6);
	uvn_pkt_free_bulk(p, 2);
	teardown_fx(fx);
}

static void test_uso_passthrough_needs_guest_uso(void **state)
{
	struct ndf *fx = setup(BASE | MRG | GCSUM | F(VIRTIO_NET_F_GUEST_USO4), false);
	struct tf_opts u4 = { .udp = true, .mss = 1000 }, u6 = { .udp = true, .ipv6 = true, .mss = 1000 };
	struct tf_layout l4, l6;
	struct uvn_pkt *p[2] = { gso_pkt(fx, 2500, &u4, &l4), gso_pkt(fx, 2500, &u6, &l6) };
	struct uvn_vq_done done[8];
	static struct got g;

	(void)state;
	guest_post(fx, 8, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, p, 2), 2);
	assert_int_equal(tq_take(&fx->ring, done, 8), 2 + 3);
	assert_int_equal(guest_frame(done, 2, &g), 2);
	assert_int_equal(g.h.gso_type, VIRTIO_NET_HDR_GSO_UDP_L4);
	assert_int_equal(le16toh(g.h.gso_size), 1000);
	assert_int_equal(g.len, l4.len);
	assert_int_equal(fx->q.st.gso_pass, 1); /* USOv4 passed */
	assert_int_equal(fx->q.st.gso_sw, 1);   /* USOv6 segmented: no GUEST_USO6 */
	assert_int_equal(fx->q.st.gso_segs, 3);
	uvn_pkt_free_bulk(p, 2);
	teardown_fx(fx);
}

static void test_ecn_frame_needs_guest_ecn(void **state)
{
	struct ndf *fx = setup(BASE | MRG | GCSUM | TSO4, false);
	struct ndf *fe = setup(BASE | MRG | GCSUM | TSO4 | F(VIRTIO_NET_F_GUEST_ECN), false);
	struct tf_opts o = { .mss = 1448, .tcp_flags = 0x90 }; /* CWR ACK */
	struct tf_layout l;
	struct uvn_pkt *p = gso_pkt(fx, 4000, &o, &l);
	struct uvn_vq_done done[8];
	static struct got g;

	(void)state;
	guest_post(fx, 8, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	check_segments(fx, p, &l, &o, 3, true); /* CWR on the first segment only */
	assert_int_equal(fx->q.st.gso_sw, 1);
	guest_post(fe, 8, 1526);
	assert_int_equal(uvn_netdev_rx(&fe->q, &p, 1), 1);
	assert_int_equal(tq_take(&fe->ring, done, 8), 3);
	guest_frame(done, 3, &g);
	assert_int_equal(g.h.gso_type, VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN);
	assert_int_equal(fe->q.st.gso_pass, 1);
	uvn_pkt_free(p);
	teardown_fx(fx);
	teardown_fx(fe);
}

static void test_no_mrg_needs_big_buffers(void **state)
{
	struct ndf *fx = setup(BASE | GCSUM | TSO4, false);
	struct tf_opts o = { .mss = 1448 };
	struct tf_layout l;
	struct uvn_pkt *p = gso_pkt(fx, 4000, &o, &l);
	struct uvn_vq_done done[4];
	static struct got g;

	(void)state;
	guest_post(fx, 1, 1526); /* small buffers: the frame does not fit, nothing is cut */
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
	assert_int_equal(fx->q.st.drop_toobig, 1);
	assert_int_equal(tq_take(&fx->ring, done, 4), 0);
	/* drain the small buffer with a small frame, then a big buffer takes it */
	fx->q.st.drop_toobig = 0;
	struct uvn_pkt *s = uvn_pkt_alloc(fx->small);
	memset(s->buf, 1, 60);
	uvn_pkt_set_buf(s, 60);
	assert_int_equal(uvn_netdev_rx(&fx->q, &s, 1), 1);
	assert_int_equal(tq_take(&fx->ring, done, 4), 1);
	guest_post(fx, 1, 8192);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(tq_take(&fx->ring, done, 4), 1);
	assert_int_equal(guest_frame(done, 1, &g), 1);
	assert_int_equal(g.len, l.len);
	assert_int_equal(g.h.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	assert_int_equal(le16toh(g.h.num_buffers), 1);
	assert_memory_equal(g.f, p->buf, l.len);
	uvn_pkt_free(s);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_segments_until_buffers_run_out(void **state)
{
	struct ndf *fx = setup(BASE | MRG | GCSUM, false);
	struct tf_opts o = { .mss = 1448 };
	struct tf_layout l;
	struct uvn_pkt *p = gso_pkt(fx, 4000, &o, &l);

	(void)state;
	guest_post(fx, 2, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
	/* the two segments that fit are published, the third is a drop */
	check_first_segments(fx, p, &l, &o, 2, 3, true);
	assert_int_equal(fx->q.st.gso_segs, 2);
	assert_int_equal(fx->q.st.gso_sw, 1);
	assert_int_equal(fx->q.st.drop_nobuf, 1);
	assert_int_equal(fx->notified, 1);
	/* no buffer at all: no segment went in, all three are drops */
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
	assert_int_equal(fx->q.st.gso_sw, 1);
	assert_int_equal(fx->q.st.drop_nobuf, 1 + 3);
	assert_int_equal(fx->notified, 1);
	uvn_pkt_free(p);
	teardown_fx(fx);
}

static void test_malformed_dropped_by_reason(void **state)
{
	struct ndf *fx = setup(BASE | MRG | GCSUM | TSO4, false);
	struct tf_opts o = { .mss = 1448 };
	struct tf_layout l;
	struct uvn_pkt *p[6];
	struct uvn_vq_done done[8];

	(void)state;
	for (unsigned i = 0; i < 5; i++)
		p[i] = gso_pkt(fx, 3000, &o, &l);
	/* p[0] stays valid: the control */
	tf_put16((uint8_t *)p[1]->buf + l.l3 + 2, 100);  /* IP length lies */
	p[2]->vnet.gso_size = 0;                        /* no segment size */
	((uint8_t *)p[3]->buf)[l.l3] = 0x65;            /* IPv6 version in an IPv4 header */
	((uint8_t *)p[4]->buf)[l.l3 + 9] = 17;          /* UDP under a TCP type */
	p[5] = uvn_pkt_alloc(fx->small);
	p[5]->vnet = p[0]->vnet;
	memcpy(p[5]->buf, p[0]->buf, 30);
	uvn_pkt_set_buf(p[5], 30);                      /* cut inside the IPv4 header */
	guest_post(fx, 8, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, p, 6), 1);
	assert_int_equal(tq_take(&fx->ring, done, 8), 3); /* only the valid frame went in */
	assert_int_equal(fx->q.st.gso_pass, 1);
	assert_int_equal(fx->q.st.drop_gso_len, 1);
	assert_int_equal(fx->q.st.drop_gso_size, 1);
	assert_int_equal(fx->q.st.drop_gso_hdr, 2);
	assert_int_equal(fx->q.st.drop_offload, 1);
	assert_int_equal(fx->q.st.drop_csum, 0);
	assert_int_equal(fx->q.st.packets, 1);
	uvn_pkt_free_bulk(p, 6);
	teardown_fx(fx);
}

static void test_partial_checksum_passed_or_completed(void **state)
{
	struct ndf *fx = setup(BASE | MRG | GCSUM, false);
	struct ndf *fn = setup(BASE | MRG, false);
	struct tf_opts u = { .udp = true, .mss = 1000 };
	struct tf_layout l;
	struct uvn_pkt *p = gso_pkt(fx, 500, &u, &l);
	struct uvn_vq_done done[2];
	static struct got g;

	(void)state;
	p->vnet.gso_type = 0;
	p->vnet.gso_size = 0;
	guest_post(fx, 1, 1526);
	guest_post(fn, 1, 1526);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	assert_int_equal(uvn_netdev_rx(&fn->q, &p, 1), 1);
	assert_int_equal(fx->q.st.csum_pass, 1);
	assert_int_equal(fn->q.st.csum_sw, 1);
	assert_int_equal(tq_take(&fn->ring, done, 2), 1);
	guest_frame(done, 1, &g);
	assert_int_equal(g.h.flags, 0);
	assert_int_equal(tf_add(tf_pseudo(g.f, &l, false, 17, l.len - l.l4),
				tf_sum(g.f + l.l4, l.len - l.l4)), 0xffff);
	/* a range the ingress check would have refused: never written */
	p->vnet.csum_offset = htole16(60000);
	guest_post(fn, 1, 1526);
	assert_int_equal(uvn_netdev_rx(&fn->q, &p, 1), 0);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 0);
	assert_int_equal(fn->q.st.drop_csum, 1);
	assert_int_equal(fx->q.st.drop_csum, 1);
	uvn_pkt_free(p);
	teardown_fx(fx);
	teardown_fx(fn);
}

/* A guest's TSO frame, through its TX queue, into a guest without TSO. */
static void test_guest_tso_to_guest_without(void **state)
{
	struct ndf *tx = setup(BASE | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_HOST_TSO4), true);
	struct ndf *rx = setup(BASE | MRG, false);
	struct tf_opts o = { .mss = 1448, .ip_id = 99, .seq = 1000, .tcp_flags = 0x19 };
	static uint8_t buf[8192], frame[8192];
	struct virtio_net_hdr_v1 h;
	struct tf_layout l = tf_build(frame, 5000, &o, &h);
	struct uvn_sg sg[2] = { tq_sg(buf, 12), tq_sg(buf + 12, l.len) };
	struct uvn_pkt *p;
	struct uvn_vq_done done;

	(void)state;
	h.hdr_len = htole16(9999); /* never trusted */
	memcpy(buf, &h, 12);
	memcpy(buf + 12, frame, l.len);
	assert_int_equal(uvn_vq_drv_add(tx->ring.drv, sg, 2, 0, buf, 0), 0);
	uvn_vq_drv_kick_prepare(tx->ring.drv);
	assert_int_equal(uvn_netdev_tx(&tx->q, tx->small, tx->big, &p, 1), 1);
	assert_int_equal(tq_take(&tx->ring, &done, 1), 1);
	memset(buf, 0, sizeof(buf)); /* the guest reuses its buffer: the packet is ours */
	guest_post(rx, 8, 1526);
	assert_int_equal(uvn_netdev_rx(&rx->q, &p, 1), 1);
	check_segments(rx, p, &l, &o, 4, false);
	assert_int_equal(rx->q.st.gso_segs, 4);
	uvn_pkt_free(p);
	teardown_fx(tx);
	teardown_fx(rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_passthrough_mergeable),
		cmocka_unit_test(test_passthrough_uses_validated_headers),
		cmocka_unit_test(test_segments_over_the_mtu_dropped),
		cmocka_unit_test(test_tagged_frame_over_the_mtu),
		cmocka_unit_test(test_segmented_partial_for_guest_csum),
		cmocka_unit_test(test_segmented_full_checksums_without_guest_csum),
		cmocka_unit_test(test_uso_passthrough_needs_guest_uso),
		cmocka_unit_test(test_ecn_frame_needs_guest_ecn),
		cmocka_unit_test(test_no_mrg_needs_big_buffers),
		cmocka_unit_test(test_segments_until_buffers_run_out),
		cmocka_unit_test(test_malformed_dropped_by_reason),
		cmocka_unit_test(test_partial_checksum_passed_or_completed),
		cmocka_unit_test(test_guest_tso_to_guest_without),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
