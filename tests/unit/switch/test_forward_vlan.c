/* SPDX-License-Identifier: MIT */
/*
 * The switch with VLANs, against fake ports that record what they are
 * sent: access and trunk rules at ingress, floods kept in the VLAN, the
 * FDB by (VLAN, MAC), tags added and removed at egress with the
 * virtio-net header's offsets moved along, borrowed (guest) frames never
 * written, priority tags, and the mac-limit; without VLANs, each frame of
 * a burst decided on its own addresses.
 */
#include <endian.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "switch/forward.h"
#include "util/sys.h"

#define MAX_REC 16

struct rec {
	uint8_t frame[256];
	uint32_t len;
	struct virtio_net_hdr_v1 vnet;
};

struct fake_port {
	struct uvn_port base;
	struct rec rec[MAX_REC];
	unsigned n;
};

static unsigned fake_tx(struct uvn_port *p, unsigned sender, struct uvn_pkt *const *pkts,
			unsigned n)
{
	struct fake_port *fp = (struct fake_port *)p;

	(void)sender;
	for (unsigned i = 0; i < n; i++) {
		struct rec *r = &fp->rec[fp->n++];

		assert_true(fp->n <= MAX_REC);
		assert_true(pkts[i]->len <= sizeof(r->frame));
		r->len = pkts[i]->len;
		assert_int_equal(uvn_pkt_read(pkts[i], 0, r->frame, r->len), r->len);
		r->vnet = pkts[i]->vnet;
	}
	return n;
}

static const struct uvn_port_ops fake_ops = { .kind = "fake", .tx = fake_tx };

struct env {
	struct uvn_fwd f;
	struct uvn_fwd_worker *w;
	struct uvn_pkt_pool *pool, *descs;
	struct fake_port ports[4];
};

static const uint8_t MAC_A[6] = { 2, 0, 0, 0, 0, 0xa };
static const uint8_t MAC_B[6] = { 2, 0, 0, 0, 0, 0xb };
static const uint8_t BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void set_trunks(struct uvn_port_conf *c, const unsigned *vids, unsigned n)
{
	c->vlan.trunk = true;
	for (unsigned i = 0; i < n; i++)
		c->vlan.allowed[vids[i] / 64] |= 1ull << (vids[i] % 64);
}

/* Ports 0..3 as the confs say (NULL: the default, a trunk of all). */
static struct env *env_new(const struct uvn_port_conf *confs[4])
{
	struct env *e = calloc(1, sizeof(*e));
	struct uvn_pkt_pool_cfg pc = { .count = 64, .buf_size = 2048, .name = "t" };
	struct uvn_pkt_pool_cfg dc = { .count = 64, .name = "borrowed" };

	assert_non_null(e);
	e->w = calloc(1, sizeof(*e->w));
	assert_non_null(e->w);
	assert_int_equal(uvn_fwd_init(&e->f, UVN_FWD_SWITCH, 0), 0);
	assert_int_equal(uvn_pkt_pool_create(&pc, &e->pool), 0);
	assert_int_equal(uvn_pkt_pool_create(&dc, &e->descs), 0);
	for (unsigned i = 0; i < 4; i++) {
		e->ports[i].base.ops = &fake_ops;
		if (confs[i])
			e->ports[i].base.conf = *confs[i];
		assert_int_equal(uvn_fwd_add_port(&e->f, &e->ports[i].base), 0);
		assert_int_equal(e->ports[i].base.id, i);
	}
	return e;
}

static void env_free(struct env *e)
{
	assert_int_equal(uvn_pkt_pool_avail(e->pool), 64); /* every frame freed */
	assert_int_equal(uvn_pkt_pool_avail(e->descs), 64);
	uvn_fwd_fini(&e->f);
	uvn_pkt_pool_destroy(e->pool);
	uvn_pkt_pool_destroy(e->descs);
	free(e->w);
	free(e);
}

static void clear(struct env *e)
{
	for (unsigned i = 0; i < 4; i++)
		e->ports[i].n = 0;
}

/* An IPv4/UDP-ish frame into @b: dst, src, [tag], ethertype 0x0800, then
 * @payload bytes of a counting pattern. @return its length */
static uint32_t frame(uint8_t *b, const uint8_t *dst, const uint8_t *src, int tci,
		      uint32_t payload)
{
	uint32_t o = 12;

	memcpy(b, dst, 6);
	memcpy(b + 6, src, 6);
	if (tci >= 0) {
		b[o++] = 0x81;
		b[o++] = 0x00;
		b[o++] = (uint8_t)(tci >> 8);
		b[o++] = (uint8_t)tci;
	}
	b[o++] = 0x08;
	b[o++] = 0x00;
	for (uint32_t i = 0; i < payload; i++)
		b[o + i] = (uint8_t)(i * 7 + 1);
	return o + payload;
}

static struct uvn_pkt *pkt(struct env *e, const uint8_t *dst, const uint8_t *src, int tci)
{
	struct uvn_pkt *p = uvn_pkt_alloc(e->pool);

	assert_non_null(p);
	uvn_pkt_set_buf(p, frame(p->buf, dst, src, tci, 64));
	return p;
}

static void send1(struct env *e, unsigned in, struct uvn_pkt *p)
{
	p->port = (uint16_t)in;
	uvn_fwd_burst(&e->f, e->w, &e->ports[in].base, &p, 1);
}

/* What port @i got as its @k-th frame: its tag (-1: none) and the frame
 * as it would be untagged must be the @tci-less frame from @src. */
static void expect(struct env *e, unsigned i, unsigned k, const uint8_t *dst, const uint8_t *src,
		   int tci)
{
	uint8_t want[256];
	uint32_t len = frame(want, dst, src, tci, 64);
	struct rec *r = &e->ports[i].rec[k];

	assert_true(k < e->ports[i].n);
	assert_int_equal(r->len, len);
	assert_memory_equal(r->frame, want, len);
}

static struct uvn_port_conf access_conf(unsigned vlan)
{
	return (struct uvn_port_conf){ .vlan = { .tag = (uint16_t)vlan } };
}

/* 0: access 10, 1: access 20, 2: trunk 10:20, 3: access 10 */
static struct env *topo(void)
{
	static struct uvn_port_conf a10, a20, t;
	static const unsigned vids[] = { 10, 20 };
	const struct uvn_port_conf *c[4] = { &a10, &a20, &t, &a10 };

	a10 = access_conf(10);
	a20 = access_conf(20);
	t = (struct uvn_port_conf){ 0 };
	set_trunks(&t, vids, 2);
	return env_new(c);
}

static void test_access_to_trunk(void **state)
{
	struct env *e = topo();

	(void)state;
	assert_true(e->f.vlans);
	/* a broadcast from access 10: the trunk gets it tagged 10, the other
	 * access port of 10 untagged, VLAN 20 nothing */
	send1(e, 0, pkt(e, BCAST, MAC_A, -1));
	assert_int_equal(e->ports[1].n, 0);
	assert_int_equal(e->ports[2].n, 1);
	assert_int_equal(e->ports[3].n, 1);
	expect(e, 2, 0, BCAST, MAC_A, 10);
	expect(e, 3, 0, BCAST, MAC_A, -1);
	/* the answer from the trunk, tagged 10: learned (10, B) on the trunk,
	 * (10, A) known on port 0: to port 0 alone, untagged */
	clear(e);
	send1(e, 2, pkt(e, MAC_A, MAC_B, 10));
	assert_int_equal(e->ports[0].n, 1);
	assert_int_equal(e->ports[1].n + e->ports[3].n, 0);
	expect(e, 0, 0, MAC_A, MAC_B, -1);
	assert_int_equal(uvn_fdb_lookup(&e->f.fdb, uvn_fdb_key(10, uvn_mac_key(MAC_B)), uvn_now_ns()), 2);
	/* B in VLAN 20 is another address: unknown there, flooded in 20 only */
	clear(e);
	send1(e, 1, pkt(e, MAC_B, MAC_A, -1));
	assert_int_equal(e->ports[0].n + e->ports[3].n, 0);
	assert_int_equal(e->ports[2].n, 1);
	expect(e, 2, 0, MAC_B, MAC_A, 20);
	assert_int_equal(e->w->st.vlan_dropped, 0);
	env_free(e);
}

static void test_ingress_drops(void **state)
{
	struct env *e = topo();

	(void)state;
	/* tagged on an access port, even with the port's own VLAN */
	send1(e, 0, pkt(e, BCAST, MAC_A, 10));
	/* a VLAN the trunk does not carry */
	send1(e, 2, pkt(e, BCAST, MAC_B, 30));
	/* VID 4095 is reserved */
	send1(e, 2, pkt(e, BCAST, MAC_B, 4095));
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(e->ports[i].n, 0);
	assert_int_equal(e->w->st.vlan_dropped, 3);
	assert_int_equal(e->f.port_st[0].vlan_dropped, 1);
	assert_int_equal(e->f.port_st[2].vlan_dropped, 2);
	/* nothing learned from them */
	assert_int_equal(uvn_fdb_port_count(&e->f.fdb, 0), 0);
	assert_int_equal(uvn_fdb_port_count(&e->f.fdb, 2), 0);
	/* untagged on the trunk: VLAN 0, which no access port is in */
	send1(e, 2, pkt(e, BCAST, MAC_B, -1));
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(e->ports[i].n, 0);
	env_free(e);
}

/* A priority tag (VID 0) is no VLAN: on an access port the frame is the
 * port's VLAN; it leaves untagged, or tagged with the VLAN and its
 * priority kept. */
static void test_priority_tag(void **state)
{
	struct env *e = topo();

	(void)state;
	send1(e, 0, pkt(e, BCAST, MAC_A, 5 << 13));
	assert_int_equal(e->ports[1].n, 0);
	expect(e, 2, 0, BCAST, MAC_A, 5 << 13 | 10);
	expect(e, 3, 0, BCAST, MAC_A, -1);
	assert_int_equal(e->w->st.vlan_dropped, 0);
	env_free(e);
}

/* Every port the default: a trunk of all. Untagged frames take the path
 * without VLANs; tagged ones keep their tag, are learned in their VLAN; a
 * priority tag leaves as untagged (VLAN 0). */
static void test_default_ports(void **state)
{
	const struct uvn_port_conf *c[4] = { NULL, NULL, NULL, NULL };
	struct env *e = env_new(c);

	(void)state;
	assert_false(e->f.vlans);
	send1(e, 0, pkt(e, BCAST, MAC_A, -1));
	for (unsigned i = 1; i < 4; i++)
		expect(e, i, 0, BCAST, MAC_A, -1);
	assert_int_equal(uvn_fdb_lookup(&e->f.fdb, uvn_fdb_key(0, uvn_mac_key(MAC_A)), uvn_now_ns()), 0);
	clear(e);
	send1(e, 1, pkt(e, MAC_A, MAC_B, 7));
	/* (7, A) is unknown: flooded, tagged as it came */
	for (unsigned i = 0; i < 4; i++)
		if (i != 1)
			expect(e, i, 0, MAC_A, MAC_B, 7);
	assert_int_equal(uvn_fdb_lookup(&e->f.fdb, uvn_fdb_key(7, uvn_mac_key(MAC_B)), uvn_now_ns()), 1);
	assert_int_equal(uvn_fdb_lookup(&e->f.fdb, uvn_fdb_key(0, uvn_mac_key(MAC_B)), uvn_now_ns()),
			 UVN_FDB_NO_PORT);
	clear(e);
	send1(e, 2, pkt(e, MAC_A, MAC_B, 3 << 13));
	assert_int_equal(e->ports[0].n, 1);
	expect(e, 0, 0, MAC_A, MAC_B, -1);
	assert_int_equal(e->ports[1].n + e->ports[3].n, 0);
	env_free(e);
}

/* csum_start (and hdr_len when set) move with the tag: a receiving guest
 * completes the checksum at the right place. */
static void test_vnet_offsets(void **state)
{
	struct env *e = topo();
	struct uvn_pkt *p;

	(void)state;
	p = pkt(e, BCAST, MAC_A, -1);
	p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	p->vnet.csum_start = htole16(34);
	p->vnet.csum_offset = htole16(6);
	p->vnet.hdr_len = htole16(42);
	send1(e, 0, p);
	assert_int_equal(le16toh(e->ports[2].rec[0].vnet.csum_start), 38);
	assert_int_equal(le16toh(e->ports[2].rec[0].vnet.hdr_len), 46);
	assert_int_equal(le16toh(e->ports[2].rec[0].vnet.csum_offset), 6);
	assert_int_equal(le16toh(e->ports[3].rec[0].vnet.csum_start), 34);
	/* and back: tagged from the trunk to an access port */
	clear(e);
	p = pkt(e, BCAST, MAC_B, 20);
	p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	p->vnet.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	p->vnet.gso_size = htole16(1000);
	p->vnet.csum_start = htole16(38);
	p->vnet.csum_offset = htole16(6);
	send1(e, 2, p);
	assert_int_equal(e->ports[1].n, 1);
	expect(e, 1, 0, BCAST, MAC_B, -1);
	assert_int_equal(le16toh(e->ports[1].rec[0].vnet.csum_start), 34);
	assert_int_equal(le16toh(e->ports[1].rec[0].vnet.hdr_len), 0);
	assert_int_equal(le16toh(e->ports[1].rec[0].vnet.gso_size), 1000);
	assert_int_equal(e->ports[1].rec[0].vnet.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	/* a checksum that starts inside the tag cannot lose it: not sent, counted */
	clear(e);
	p = pkt(e, BCAST, MAC_B, 20);
	p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	p->vnet.csum_start = htole16(14);
	send1(e, 2, p);
	assert_int_equal(e->ports[1].n, 0);
	assert_int_equal(e->w->st.tag_failed, 1);
	env_free(e);
}

static int completions;

static void complete(struct uvn_pkt_ubuf *u)
{
	(void)u;
	completions++;
}

/* A guest's frame, borrowed in three pieces: tagged for the trunk, sent
 * as it is to the access port, its memory never written, and given back
 * once, after the burst; a borrowed tagged one with its tag past the first
 * piece, stripped. */
static void test_borrowed(void **state)
{
	struct env *e = topo();
	static uint8_t guest[256], before[256];
	struct uvn_pkt_ubuf ub = { .complete = complete, .refs = 1 };
	uint32_t len = frame(guest, BCAST, MAC_A, -1, 64);
	struct uvn_pkt *p = uvn_pkt_alloc(e->descs);

	(void)state;
	memcpy(before, guest, sizeof(guest));
	p->seg[0] = (struct iovec){ guest, 14 };
	p->seg[1] = (struct iovec){ guest + 14, 10 };
	p->seg[2] = (struct iovec){ guest + 24, len - 24 };
	p->nseg = 3;
	p->len = len;
	p->ubuf = &ub;
	completions = 0;
	send1(e, 0, p);
	assert_memory_equal(guest, before, sizeof(guest));
	expect(e, 2, 0, BCAST, MAC_A, 10);
	expect(e, 3, 0, BCAST, MAC_A, -1);
	assert_int_equal(completions, 1);
	/* tagged from the trunk, its tag in the second piece: stripped for
	 * the access port, the frame untouched */
	clear(e);
	len = frame(guest, BCAST, MAC_B, 20, 64);
	memcpy(before, guest, sizeof(guest));
	p = uvn_pkt_alloc(e->descs);
	p->seg[0] = (struct iovec){ guest, 14 };
	p->seg[1] = (struct iovec){ guest + 14, len - 14 };
	p->nseg = 2;
	p->len = len;
	ub.refs = 1;
	p->ubuf = &ub;
	send1(e, 2, p);
	assert_memory_equal(guest, before, sizeof(guest));
	assert_int_equal(e->ports[0].n + e->ports[3].n, 0);
	expect(e, 1, 0, BCAST, MAC_B, -1);
	assert_int_equal(completions, 2);
	env_free(e);
}

/* mac-limit in the switch: a new source over the limit is dropped and
 * counted; known ones pass; other ports are not touched. */
static void test_mac_limit(void **state)
{
	static const uint8_t MAC_C[6] = { 2, 0, 0, 0, 0, 0xc };
	struct uvn_port_conf lim = { .mac_limit = 1 };
	const struct uvn_port_conf *c[4] = { &lim, NULL, NULL, NULL };
	struct env *e = env_new(c);

	(void)state;
	send1(e, 1, pkt(e, BCAST, MAC_C, -1)); /* C on port 1 */
	send1(e, 0, pkt(e, BCAST, MAC_A, -1));
	clear(e);
	send1(e, 0, pkt(e, BCAST, MAC_B, -1)); /* a second address on port 0 */
	send1(e, 0, pkt(e, MAC_A, MAC_C, -1)); /* port 1's address from port 0 */
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(e->ports[i].n, 0);
	assert_int_equal(e->w->st.limit_dropped, 2);
	assert_int_equal(e->f.fdb.port[0].limited, 2);
	assert_int_equal(uvn_fdb_lookup(&e->f.fdb, uvn_fdb_key(0, uvn_mac_key(MAC_C)), uvn_now_ns()), 1);
	send1(e, 0, pkt(e, MAC_C, MAC_A, -1)); /* its own address passes */
	assert_int_equal(e->ports[1].n, 1);
	env_free(e);
}

/* A static entry pointing outside the frame's VLAN is not followed. */
static void test_static_outside_vlan(void **state)
{
	struct env *e = topo();

	(void)state;
	assert_int_equal(uvn_fdb_add_static(&e->f.fdb, uvn_fdb_key(10, uvn_mac_key(MAC_B)), 1, uvn_now_ns()), 0);
	send1(e, 0, pkt(e, MAC_B, MAC_A, -1));
	assert_int_equal(e->ports[1].n, 0);
	assert_int_equal(e->ports[2].n, 1);
	assert_int_equal(e->ports[3].n, 1);
	env_free(e);
}

/*
 * One burst, frames with equal addresses next to each other and not: the
 * switch reuses a decision only for the same destination and source
 * (forwarded, flooded, filtered; a source over its mac-limit each time).
 */
static void test_burst_decisions(void **state)
{
	static const uint8_t MAC_C[6] = { 2, 0, 0, 0, 0, 0xc };
	static const uint8_t MAC_D[6] = { 2, 0, 0, 0, 0, 0xd };
	struct uvn_port_conf lim = { .mac_limit = 1 };
	const struct uvn_port_conf *c[4] = { &lim, NULL, NULL, NULL };
	struct env *e = env_new(c);
	const uint8_t *burst[][2] = { /* dst, src */
		{ MAC_B, MAC_A }, { MAC_B, MAC_A }, { MAC_C, MAC_A }, { MAC_C, MAC_A },
		{ BCAST, MAC_A }, { MAC_B, MAC_A }, { MAC_B, MAC_D }, { MAC_B, MAC_D },
		{ MAC_A, MAC_A }, { MAC_B, MAC_A },
	};
	struct uvn_pkt *pkts[10];

	(void)state;
	send1(e, 1, pkt(e, BCAST, MAC_B, -1)); /* B on port 1 */
	send1(e, 2, pkt(e, BCAST, MAC_C, -1)); /* C on port 2 */
	clear(e);
	for (unsigned i = 0; i < 10; i++) {
		pkts[i] = pkt(e, burst[i][0], burst[i][1], -1);
		pkts[i]->port = 0;
	}
	uvn_fwd_burst(&e->f, e->w, &e->ports[0].base, pkts, 10);
	assert_int_equal(e->ports[1].n, 5); /* A to B four times, the broadcast */
	expect(e, 1, 0, MAC_B, MAC_A, -1);
	expect(e, 1, 1, MAC_B, MAC_A, -1);
	expect(e, 1, 2, BCAST, MAC_A, -1);
	expect(e, 1, 3, MAC_B, MAC_A, -1);
	expect(e, 1, 4, MAC_B, MAC_A, -1);
	assert_int_equal(e->ports[2].n, 3);
	expect(e, 2, 0, MAC_C, MAC_A, -1);
	expect(e, 2, 1, MAC_C, MAC_A, -1);
	expect(e, 2, 2, BCAST, MAC_A, -1);
	assert_int_equal(e->ports[3].n, 1);
	assert_int_equal(e->ports[0].n, 0);
	assert_int_equal(e->w->st.forwarded, 6);
	assert_int_equal(e->w->st.flooded, 3);       /* + the two that taught B and C */
	assert_int_equal(e->w->st.filtered, 1);      /* A to A: A is on port 0 */
	assert_int_equal(e->w->st.limit_dropped, 2); /* D: port 0 has A already */
	env_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_access_to_trunk),
		cmocka_unit_test(test_ingress_drops),
		cmocka_unit_test(test_priority_tag),
		cmocka_unit_test(test_default_ports),
		cmocka_unit_test(test_vnet_offsets),
		cmocka_unit_test(test_borrowed),
		cmocka_unit_test(test_mac_limit),
		cmocka_unit_test(test_static_outside_vlan),
		cmocka_unit_test(test_burst_decisions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
