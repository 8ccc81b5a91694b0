/* SPDX-License-Identifier: MIT */
/*
 * Software offloads (lib/net/gso.c): segmentation of TCPv4/v6 and USO
 * frames, ECN, VLAN, options, scattered packets, partial checksums, and
 * hostile frames: each refused with its reason, never read out of bounds
 * (run under ASan), including a mutation loop over valid frames.
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
#include "net/gso.h"
#include "switch/forward.h"

#define F(b) (1ull << (b))

static uint8_t frame[70000];

/* A packet over @f: one segment, or cut into pieces of odd sizes (a guest's scattered buffers). */
static void make_pkt(struct uvn_pkt *p, uint8_t *f, uint32_t len, const struct virtio_net_hdr_v1 *h,
		     bool scatter)
{
	memset(p, 0, sizeof(*p));
	p->vnet = *h;
	p->len = len;
	if (!scatter) {
		p->seg[0] = (struct iovec){ f, len };
		p->nseg = 1;
		return;
	}
	for (uint32_t off = 0, cut = 7; off < len && p->nseg < UVN_PKT_MAX_SEGS; cut = cut * 3 + 1) {
		uint32_t l = len - off < cut || p->nseg == UVN_PKT_MAX_SEGS - 1 ? len - off : cut;

		p->seg[p->nseg++] = (struct iovec){ f + off, l };
		off += l;
	}
}

/* Segment @payload bytes built with @o; check every segment; @return the segment count. */
static uint32_t segment_all(const struct tf_opts *o, uint32_t payload, bool partial, bool scatter)
{
	static uint8_t seg[70000];
	struct virtio_net_hdr_v1 h;
	struct tf_layout l = tf_build(frame, payload, o, &h);
	struct uvn_pkt p;
	struct uvn_gso g;
	uint32_t total = 0;

	make_pkt(&p, frame, l.len, &h, scatter);
	assert_int_equal(uvn_gso_parse(&p, &g), UVN_GSO_OK);
	assert_int_equal(g.hdr_len, l.hdr_len);
	assert_int_equal(g.l3_off, l.l3);
	assert_int_equal(g.l4_off, l.l4);
	assert_int_equal(g.payload, payload);
	for (uint32_t i = 0; i < g.nsegs; i++) {
		uint32_t off, len = uvn_gso_seg(&g, &p, i, partial, seg, &off);
		const char *err;

		assert_int_equal(off, l.hdr_len + i * o->mss);
		assert_true(len <= o->mss);
		memcpy(seg + g.hdr_len, frame + off, len);
		err = tf_check_seg(seg, g.hdr_len + len, frame, &l, o, i, g.nsegs, partial);
		if (err)
			fail_msg("segment %u of %u: %s", i, g.nsegs, err);
		total += len;
	}
	assert_int_equal(total, payload);
	return g.nsegs;
}

static void test_tcp4_last_segment_shorter(void **state)
{
	struct tf_opts o = { .mss = 1448, .ip_id = 0xfffe, .seq = 0xfffff000, .tcp_flags = 0x19 };

	(void)state;
	/* FIN|PSH|ACK on the frame: only the last segment keeps FIN and PSH;
	 * the IPv4 ID and the sequence number wrap. */
	assert_int_equal(segment_all(&o, 4000, false, false), 3);
	assert_int_equal(segment_all(&o, 4000, true, false), 3);
}

static void test_tcp4_exact_mss_multiple(void **state)
{
	struct tf_opts o = { .mss = 1448 };

	(void)state;
	assert_int_equal(segment_all(&o, 2 * 1448, false, false), 2);
	assert_int_equal(segment_all(&o, 1448, false, false), 1);
	assert_int_equal(segment_all(&o, 45 * 1448, false, false), 45);
}

static void test_tcp4_small_and_empty(void **state)
{
	struct tf_opts o = { .mss = 1448 };

	(void)state;
	/* "Too small to be GSO" frames still come out as one valid segment. */
	assert_int_equal(segment_all(&o, 100, false, false), 1);
	assert_int_equal(segment_all(&o, 0, false, false), 1);
	assert_int_equal(segment_all(&o, 1, false, false), 1);
}

static void test_tcp4_64k(void **state)
{
	struct tf_opts o = { .mss = 1448, .seed = 3 };

	(void)state;
	/* The largest frame: IPv4 total length 65535. */
	assert_int_equal(segment_all(&o, 65535 - 40, false, false), 46);
	assert_int_equal(segment_all(&o, 65535 - 40, false, true), 46);
}

static void test_tcp6(void **state)
{
	struct tf_opts o = { .ipv6 = true, .mss = 1428, .seq = 77, .seed = 9 };

	(void)state;
	assert_int_equal(segment_all(&o, 3000, false, false), 3);
	assert_int_equal(segment_all(&o, 3000, true, false), 3);
	assert_int_equal(segment_all(&o, 65535 - 20, false, true), 46);
}

static void test_uso4_and_uso6(void **state)
{
	struct tf_opts o4 = { .udp = true, .mss = 1000, .ip_id = 5, .seed = 1 };
	struct tf_opts o6 = { .udp = true, .ipv6 = true, .mss = 1232, .seed = 2 };

	(void)state;
	assert_int_equal(segment_all(&o4, 3001, false, false), 4);
	assert_int_equal(segment_all(&o4, 3001, true, true), 4);
	assert_int_equal(segment_all(&o6, 5000, false, true), 5);
}

static void test_vlan_and_options(void **state)
{
	struct tf_opts o = { .vlan = true, .ip_opt_words = 3, .tcp_opt_words = 3, .mss = 1400 };
	struct tf_opts o6 = { .vlan = true, .ipv6 = true, .tcp_opt_words = 10, .mss = 1400 };
	struct tf_opts u = { .vlan = true, .udp = true, .mss = 500 };

	(void)state;
	assert_int_equal(segment_all(&o, 5000, false, false), 4);
	assert_int_equal(segment_all(&o, 5000, true, true), 4);
	assert_int_equal(segment_all(&o6, 2801, false, false), 3);
	assert_int_equal(segment_all(&u, 1000, false, false), 2);
}

static void test_ecn_cwr_on_first_only(void **state)
{
	struct tf_opts o = { .mss = 1000, .tcp_flags = 0xd8 }; /* CWR ECE ACK PSH */
	struct virtio_net_hdr_v1 h, out;
	struct uvn_pkt p;
	struct uvn_gso g;
	uint64_t tso = F(VIRTIO_NET_F_GUEST_CSUM) | F(VIRTIO_NET_F_GUEST_TSO4);

	(void)state;
	assert_int_equal(segment_all(&o, 2500, false, false), 3);
	struct tf_layout l = tf_build(frame, 2500, &o, &h);
	make_pkt(&p, frame, l.len, &h, false);
	assert_int_equal(uvn_gso_parse(&p, &g), UVN_GSO_OK);
	assert_true(g.cwr);
	/* an ECN frame only to a guest with GUEST_ECN, and marked so */
	assert_false(uvn_gso_guest_ok(&g, tso));
	assert_true(uvn_gso_guest_ok(&g, tso | F(VIRTIO_NET_F_GUEST_ECN)));
	uvn_gso_vnet(&g, &out);
	assert_int_equal(out.gso_type, VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN);
	assert_int_equal(le16toh(out.hdr_len), l.hdr_len);
	assert_int_equal(le16toh(out.gso_size), 1000);
	assert_int_equal(le16toh(out.csum_start), l.l4);
	assert_int_equal(le16toh(out.csum_offset), 16);
	assert_int_equal(out.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	/* without CWR: no ECN bit, whatever the sender's header said */
	o.tcp_flags = 0x18;
	l = tf_build(frame, 2500, &o, &h);
	h.gso_type |= VIRTIO_NET_HDR_GSO_ECN;
	make_pkt(&p, frame, l.len, &h, false);
	assert_int_equal(uvn_gso_parse(&p, &g), UVN_GSO_OK);
	assert_false(g.cwr);
	assert_true(uvn_gso_guest_ok(&g, tso));
	uvn_gso_vnet(&g, &out);
	assert_int_equal(out.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
}

static void test_guest_features(void **state)
{
	struct tf_opts o6 = { .ipv6 = true, .mss = 1000 }, u4 = { .udp = true, .mss = 1000 };
	struct tf_opts u6 = { .udp = true, .ipv6 = true, .mss = 1000 };
	uint64_t csum = F(VIRTIO_NET_F_GUEST_CSUM);
	struct virtio_net_hdr_v1 h;
	struct uvn_pkt p;
	struct uvn_gso g;
	struct tf_layout l;

	(void)state;
	l = tf_build(frame, 2000, &o6, &h);
	make_pkt(&p, frame, l.len, &h, false);
	assert_int_equal(uvn_gso_parse(&p, &g), UVN_GSO_OK);
	assert_false(uvn_gso_guest_ok(&g, csum | F(VIRTIO_NET_F_GUEST_TSO4)));
	assert_true(uvn_gso_guest_ok(&g, csum | F(VIRTIO_NET_F_GUEST_TSO6)));
	assert_false(uvn_gso_guest_ok(&g, F(VIRTIO_NET_F_GUEST_TSO6))); /* TSO needs GUEST_CSUM */
	l = tf_build(frame, 2000, &u4, &h);
	make_pkt(&p, frame, l.len, &h, false);
	assert_int_equal(uvn_gso_parse(&p, &g), UVN_GSO_OK);
	assert_false(uvn_gso_guest_ok(&g, csum | F(VIRTIO_NET_F_GUEST_USO6)));
	assert_true(uvn_gso_guest_ok(&g, csum | F(VIRTIO_NET_F_GUEST_USO4)));
	l = tf_build(frame, 2000, &u6, &h);
	make_pkt(&p, frame, l.len, &h, false);
	assert_int_equal(uvn_gso_parse(&p, &g), UVN_GSO_OK);
	assert_true(uvn_gso_guest_ok(&g, csum | F(VIRTIO_NET_F_GUEST_USO6)));
	assert_false(uvn_gso_guest_ok(&g, csum | F(VIRTIO_NET_F_GUEST_USO4) | F(VIRTIO_NET_F_GUEST_TSO6)));
}

/* Build a valid TCPv4 frame, let @mutate break it, expect @err. */
static void expect(int err, const struct tf_opts *o, uint32_t payload,
		   void (*mutate)(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h))
{
	struct virtio_net_hdr_v1 h;
	struct tf_layout l = tf_build(frame, payload, o, &h);
	struct uvn_pkt p;
	struct uvn_gso g;
	uint8_t *copy;

	mutate(frame, &l, &h);
	/* an exact-size heap copy: ASan sees any read past the frame */
	copy = malloc(l.len ? l.len : 1);
	memcpy(copy, frame, l.len);
	make_pkt(&p, copy, l.len, &h, false);
	assert_int_equal(uvn_gso_parse(&p, &g), err);
	free(copy);
}

static void ihl_too_big(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	f[l->l3] = 0x4f; /* 60 bytes of IPv4 header in a 54-byte frame */
}

static void ihl_too_small(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	f[l->l3] = 0x44;
}

static void ip_version_wrong(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	f[l->l3] = 0x65;
}

static void tot_len_long(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	tf_put16(f + l->l3 + 2, tf_get16(f + l->l3 + 2) + 1);
}

static void tot_len_short(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	tf_put16(f + l->l3 + 2, 40);
}

static void ipv6_len_lies(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	tf_put16(f + l->l3 + 4, 0); /* a jumbogram */
}

static void fragment(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	f[l->l3 + 6] = 0x20; /* MF */
}

static void doff_beyond_frame(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	f[l->l4 + 12] = 0xf0; /* 60 bytes of TCP header, 20 in the frame */
}

static void doff_too_small(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	f[l->l4 + 12] = 0x40;
}

static void cut_in_tcp_header(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	l->len = l->l4 + 10;
	tf_put16(f + l->l3 + 2, l->len - l->l3);
}

static void cut_in_ip_header(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)h;
	l->len = l->l3 + 12;
}

static void cut_in_ethernet(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)h;
	l->len = 10;
}

static void cut_in_vlan(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	tf_put16(f + 12, 0x8100);
	l->len = 16;
}

static void csum_start_wrong(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->csum_start = htole16(14);
}

static void csum_start_beyond(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->csum_start = htole16(65000);
}

static void csum_offset_udp(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->csum_offset = htole16(6);
}

static void no_needs_csum(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->flags = 0;
}

static void gso_size_zero(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->gso_size = 0;
}

static void gso_size_huge(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->gso_size = htole16(65535); /* a segment would be no IP packet */
}

static void gso_size_tiny(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->gso_size = htole16(1); /* thousands of segments */
}

static void udp_with_tcp_type(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)h;
	f[l->l3 + 9] = 17;
}

static void tcp6_type_on_ipv4(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
}

static void ufo_type(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)f;
	(void)l;
	h->gso_type = VIRTIO_NET_HDR_GSO_UDP;
}

static void arp_ethertype(uint8_t *f, struct tf_layout *l, struct virtio_net_hdr_v1 *h)
{
	(void)l;
	(void)h;
	tf_put16(f + 12, 0x0806);
}

static void test_hostile_frames(void **state)
{
	struct tf_opts o = { .mss = 1448 }, o6 = { .ipv6 = true, .mss = 1448 };

	(void)state;
	expect(UVN_GSO_E_HDR, &o, 0, ihl_too_big);
	expect(UVN_GSO_E_HDR, &o, 3000, ihl_too_small);
	expect(UVN_GSO_E_HDR, &o, 3000, ip_version_wrong);
	expect(UVN_GSO_E_LEN, &o, 3000, tot_len_long);
	expect(UVN_GSO_E_LEN, &o, 3000, tot_len_short);
	expect(UVN_GSO_E_LEN, &o6, 3000, ipv6_len_lies);
	expect(UVN_GSO_E_HDR, &o, 3000, fragment);
	expect(UVN_GSO_E_HDR, &o, 0, doff_beyond_frame);
	expect(UVN_GSO_E_HDR, &o, 3000, doff_too_small);
	expect(UVN_GSO_E_HDR, &o, 3000, cut_in_tcp_header);
	expect(UVN_GSO_E_HDR, &o, 3000, cut_in_ip_header);
	expect(UVN_GSO_E_HDR, &o6, 3000, cut_in_ip_header);
	expect(UVN_GSO_E_HDR, &o, 3000, cut_in_ethernet);
	expect(UVN_GSO_E_HDR, &o, 3000, cut_in_vlan);
	expect(UVN_GSO_E_CSUM, &o, 3000, csum_start_wrong);
	expect(UVN_GSO_E_CSUM, &o, 3000, csum_start_beyond);
	expect(UVN_GSO_E_CSUM, &o, 3000, csum_offset_udp);
	expect(UVN_GSO_E_CSUM, &o, 3000, no_needs_csum);
	expect(UVN_GSO_E_SIZE, &o, 3000, gso_size_zero);
	expect(UVN_GSO_E_SIZE, &o, 3000, gso_size_huge);
	expect(UVN_GSO_E_SIZE, &o, 3000, gso_size_tiny);
	expect(UVN_GSO_E_TYPE, &o, 3000, udp_with_tcp_type);
	expect(UVN_GSO_E_TYPE, &o, 3000, tcp6_type_on_ipv4);
	expect(UVN_GSO_E_TYPE, &o, 3000, ufo_type);
	expect(UVN_GSO_E_TYPE, &o, 3000, arp_ethertype);
	for (int e = 0; e <= UVN_GSO_E__COUNT; e++)
		assert_non_null(uvn_gso_strerror(e));
}

/* Deterministic xorshift, so a failure reproduces. */
static uint32_t rnd(void)
{
	static uint32_t x = 2463534242u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/*
 * Mutate header bytes and virtio-net fields of valid frames at random:
 * whatever the parser accepts must segment within the frame (ASan checks
 * every read), with segments that add up to the payload.
 */
static void test_mutations(void **state)
{
	static uint8_t seg[UVN_GSO_MAX_HDR];
	const struct tf_opts base[] = {
		{ .mss = 1448 }, { .ipv6 = true, .mss = 1000 }, { .udp = true, .mss = 700 },
		{ .vlan = true, .tcp_opt_words = 2, .mss = 536 },
	};
	unsigned accepted = 0;

	(void)state;
	for (unsigned it = 0; it < 20000; it++) {
		const struct tf_opts *o = &base[it % 4];
		struct virtio_net_hdr_v1 h;
		struct tf_layout l = tf_build(frame, rnd() % 5000, o, &h);
		unsigned flips = 1 + rnd() % 4;
		struct uvn_pkt p;
		struct uvn_gso g;
		uint8_t *copy;
		uint64_t total = 0;

		for (unsigned k = 0; k < flips; k++) {
			switch (rnd() % 6) {
			case 0: frame[rnd() % l.hdr_len] = (uint8_t)rnd(); break;
			case 1: h.csum_start = htole16((uint16_t)(rnd() % 200)); break;
			case 2: h.csum_offset = htole16((uint16_t)(rnd() % 40)); break;
			case 3: h.gso_size = htole16((uint16_t)rnd()); break;
			case 4: l.len = rnd() % (l.len + 1); break;
			default: h.gso_type = (uint8_t)(rnd() % 6 | (rnd() & 0x80)); break;
			}
		}
		copy = malloc(l.len ? l.len : 1);
		memcpy(copy, frame, l.len);
		make_pkt(&p, copy, l.len, &h, rnd() & 1);
		if (uvn_gso_parse(&p, &g) == UVN_GSO_OK) {
			accepted++;
			assert_true(g.hdr_len <= l.len && g.nsegs <= UVN_GSO_MAX_SEGS);
			for (uint32_t i = 0; i < g.nsegs; i++) {
				uint32_t off, len = uvn_gso_seg(&g, &p, i, rnd() & 1, seg, &off);

				assert_true(off + len <= l.len);
				total += len;
			}
			assert_int_equal(total, l.len - g.hdr_len);
		}
		free(copy);
	}
	/* the mutations leave a good share valid: the loop tests both sides */
	assert_true(accepted > 1000);
}

static void test_csum_completion(void **state)
{
	struct tf_opts o = { .udp = true, .mss = 1000 };
	struct virtio_net_hdr_v1 h;
	struct tf_layout l = tf_build(frame, 999, &o, &h);
	struct uvn_pkt p;
	uint32_t pos;
	uint8_t c[2];

	(void)state;
	/* a plain frame with a partial checksum: the value and where it goes */
	h.gso_type = 0;
	h.gso_size = 0;
	make_pkt(&p, frame, l.len, &h, true);
	assert_int_equal(uvn_gso_csum(&p, &pos, c), 0);
	assert_int_equal(pos, l.l4 + 6);
	memcpy(frame + pos, c, 2);
	assert_int_equal(tf_add(tf_pseudo(frame, &l, false, 17, l.len - l.l4),
				tf_sum(frame + l.l4, l.len - l.l4)), 0xffff);
	/* out of range: refused, nothing read beyond the frame */
	h.csum_offset = htole16((uint16_t)(l.len - l.l4 - 1));
	make_pkt(&p, frame, l.len, &h, false);
	assert_int_equal(uvn_gso_csum(&p, &pos, c), UVN_GSO_E_CSUM);
}

/* uvnetd --forward txonly --txonly-size N: what a port is handed. */
static struct uvn_pkt *captured[64];
static unsigned ncaptured;

static unsigned capture_tx(struct uvn_port *p, unsigned q, struct uvn_pkt *const *pkts, unsigned n)
{
	(void)p;
	(void)q;
	for (unsigned i = 0; i < n && ncaptured < 64; i++) {
		uvn_pkt_ref(pkts[i]);
		captured[ncaptured++] = pkts[i];
	}
	return n;
}

static void test_txonly_frames(void **state)
{
	static const struct uvn_port_ops ops = { .kind = "capture", .tx = capture_tx };
	static const uint32_t sizes[] = { 64, 1514, 1518, 1519, 9000, 65535 };
	struct uvn_pkt_pool_cfg pc = { .count = 64, .buf_size = 2048 };
	struct uvn_port port = { .ops = &ops, .mac = { 2, 0x75, 0x76, 0, 0, 1 } };
	struct uvn_pkt_pool *pool;
	static uint8_t flat[65536], seg[70000];

	(void)state;
	assert_int_equal(uvn_pkt_pool_create(&pc, &pool), 0);
	for (unsigned k = 0; k < 6; k++) {
		struct uvn_fwd_worker w = { .id = 0, .gen = pool };
		struct uvn_fwd f;
		struct uvn_pkt *p;
		struct uvn_gso g;

		assert_int_equal(uvn_fwd_init(&f, UVN_FWD_TXONLY, sizes[k]), 0);
		ncaptured = 0;
		assert_int_equal(uvn_fwd_generate(&f, &w, &port), 32);
		p = captured[0];
		assert_int_equal(p->len, sizes[k]);
		assert_int_equal(uvn_pkt_read(p, 0, flat, p->len), p->len);
		assert_int_equal(tf_sum(flat + 14, 20), 0xffff); /* a valid IPv4 header */
		if (sizes[k] <= 1518) {
			assert_false(uvn_hdr_is_gso(&p->vnet));
		} else {
			struct tf_layout l = { .l3 = 14, .l4 = 34, .hdr_len = 54, .len = p->len };
			struct tf_opts o = { .mss = 1448, .tcp_flags = 0x18 };

			/* a TCPv4 GSO frame that parses, and segments into valid frames */
			assert_int_equal(p->vnet.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
			assert_int_equal(uvn_gso_parse(p, &g), UVN_GSO_OK);
			assert_int_equal(g.mss, 1448);
			assert_int_equal(g.nsegs, (sizes[k] - 54 + 1447) / 1448);
			o.seq = tf_get32(flat + 38);
			o.ip_id = tf_get16(flat + 18);
			for (uint32_t i = 0; i < g.nsegs; i++) {
				uint32_t off, len = uvn_gso_seg(&g, p, i, false, seg, &off);
				const char *err;

				uvn_pkt_read(p, off, seg + g.hdr_len, len);
				err = tf_check_seg(seg, g.hdr_len + len, flat, &l, &o, i, g.nsegs, false);
				if (err)
					fail_msg("txonly %u, segment %u: %s", sizes[k], i, err);
			}
		}
		for (unsigned i = 0; i < ncaptured; i++)
			uvn_pkt_free(captured[i]);
		uvn_fwd_fini(&f);
	}
	assert_int_equal(uvn_pkt_pool_avail(pool), 64);
	uvn_pkt_pool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp4_last_segment_shorter),
		cmocka_unit_test(test_tcp4_exact_mss_multiple),
		cmocka_unit_test(test_tcp4_small_and_empty),
		cmocka_unit_test(test_tcp4_64k),
		cmocka_unit_test(test_tcp6),
		cmocka_unit_test(test_uso4_and_uso6),
		cmocka_unit_test(test_vlan_and_options),
		cmocka_unit_test(test_ecn_cwr_on_first_only),
		cmocka_unit_test(test_guest_features),
		cmocka_unit_test(test_hostile_frames),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_csum_completion),
		cmocka_unit_test(test_txonly_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
