/* SPDX-License-Identifier: MIT */
/*
 * A port's MTU on the data path (uvn_port_mtu_fits and the filters): L3
 * bytes against the MTU, 4 more for a VLAN-tagged frame, and a GSO frame
 * judged by its segments (headers + gso_size), not by its length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../net/gso_frames.h"
#include "port/port.h"
#include "util/stats.h"

#define ROOM (65536 + 128)

static struct uvn_pkt_pool *pool;

static int setup(void **state)
{
	struct uvn_pkt_pool_cfg c = { .count = 16, .buf_size = ROOM };

	(void)state;
	return uvn_pkt_pool_create(&c, &pool);
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(uvn_pkt_pool_avail(pool), 16);
	uvn_pkt_pool_destroy(pool);
	return 0;
}

/* A plain frame of @len bytes, tagged with TPID @tpid unless it is 0. */
static struct uvn_pkt *frame(uint32_t len, unsigned tpid)
{
	struct uvn_pkt *p = uvn_pkt_alloc(pool);
	uint8_t *b;

	assert_non_null(p);
	b = p->buf;
	memset(b, 0, len);
	memcpy(b, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	if (tpid) {
		tf_put16(b + 12, tpid);
		tf_put16(b + 14, 10);
		tf_put16(b + 16, 0x0800);
	} else {
		tf_put16(b + 12, 0x0800);
	}
	uvn_pkt_set_buf(p, len);
	return p;
}

/* A TSO (or USO) frame with @payload bytes cut at @mss, as a guest sends it. */
static struct uvn_pkt *gso(uint32_t payload, uint16_t mss, bool vlan, bool udp)
{
	struct tf_opts o = { .mss = mss, .vlan = vlan, .udp = udp };
	struct uvn_pkt *p = uvn_pkt_alloc(pool);
	struct tf_layout l;

	assert_non_null(p);
	l = tf_build(p->buf, payload, &o, &p->vnet);
	uvn_pkt_set_buf(p, l.len);
	return p;
}

static bool fits_and_free(struct uvn_pkt *p, uint32_t mtu)
{
	bool fits = uvn_port_mtu_fits(p, mtu);

	uvn_pkt_free(p);
	return fits;
}

static void test_plain(void **state)
{
	(void)state;
	assert_true(fits_and_free(frame(1514, 0), 1500));
	assert_false(fits_and_free(frame(1515, 0), 1500));
	assert_true(fits_and_free(frame(9014, 0), 9000));
	assert_false(fits_and_free(frame(9015, 0), 9000));
	assert_true(fits_and_free(frame(60, 0), 68));
	assert_true(fits_and_free(frame(82, 0), 68));
	assert_false(fits_and_free(frame(83, 0), 68));
}

/* A tagged frame may be 4 bytes longer: its L3 bytes are what count. */
static void test_vlan_tag(void **state)
{
	(void)state;
	assert_true(fits_and_free(frame(1518, 0x8100), 1500));
	assert_false(fits_and_free(frame(1519, 0x8100), 1500));
	assert_true(fits_and_free(frame(1518, 0x88a8), 1500));
	/* not a tag: no allowance */
	assert_false(fits_and_free(frame(1518, 0x0806), 1500));
	assert_true(fits_and_free(frame(9018, 0x8100), 9000));
	assert_false(fits_and_free(frame(9019, 0x8100), 9000));
}

/*
 * 64 KB TSO frames are fine on a 1500-byte port when their segments are:
 * IPv4 20 + TCP 20 + gso_size 1460 = 1500. One byte more of gso_size is a
 * segment over the MTU. The frame's own length plays no part.
 */
static void test_gso_by_segments(void **state)
{
	(void)state;
	assert_true(fits_and_free(gso(64000, 1460, false, false), 1500));
	assert_false(fits_and_free(gso(64000, 1461, false, false), 1500));
	/* a tag moves nothing: the L3 headers and gso_size are the same */
	assert_true(fits_and_free(gso(64000, 1460, true, false), 1500));
	assert_false(fits_and_free(gso(64000, 1461, true, false), 1500));
	/* UDP (USO): IPv4 20 + UDP 8 + 1472 */
	assert_true(fits_and_free(gso(30000, 1472, false, true), 1500));
	assert_false(fits_and_free(gso(30000, 1473, false, true), 1500));
	/* jumbo: 8960 of TCP payload per segment on a 9000-byte port */
	assert_true(fits_and_free(gso(60000, 8960, false, false), 9000));
	assert_false(fits_and_free(gso(60000, 8961, false, false), 9000));
	/* a GSO frame short enough to fit whole fits, whatever gso_size says */
	assert_true(fits_and_free(gso(1000, 8000, false, false), 1500));
}

/* A GSO frame too long to fit whole whose headers do not parse cannot be
 * shown to fit: it does not. */
static void test_gso_malformed(void **state)
{
	struct uvn_pkt *p = gso(64000, 1000, false, false);

	(void)state;
	((uint8_t *)p->buf)[14] = 0x65; /* IP version 6 in a TCPv4 frame */
	assert_false(fits_and_free(p, 9000));
}

/* The filters keep what fits, in order, and count the rest. */
static void test_filters(void **state)
{
	struct uvn_pkt *in[5], *out[5], *keep[3];
	uint64_t dropped = 3;
	unsigned n;

	(void)state;
	in[0] = frame(1514, 0);
	in[1] = frame(1600, 0);
	in[2] = gso(64000, 1460, false, false);
	in[3] = frame(1518, 0x8100);
	in[4] = frame(9000, 0);
	n = uvn_port_mtu_select(1500, in, 5, out, &dropped);
	assert_int_equal(n, 3);
	assert_ptr_equal(out[0], in[0]);
	assert_ptr_equal(out[1], in[2]);
	assert_ptr_equal(out[2], in[3]);
	assert_int_equal(dropped, 5);
	/* select freed nothing; filter frees what it drops */
	assert_int_equal(uvn_pkt_pool_avail(pool), 11);
	memcpy(keep, out, sizeof(keep));
	n = uvn_port_mtu_filter(1500, in, 5, &dropped);
	assert_int_equal(n, 3);
	assert_memory_equal(in, keep, sizeof(keep));
	assert_int_equal(dropped, 7);
	assert_int_equal(uvn_pkt_pool_avail(pool), 13);
	uvn_pkt_free_bulk(in, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_vlan_tag),
		cmocka_unit_test(test_gso_by_segments),
		cmocka_unit_test(test_gso_malformed),
		cmocka_unit_test(test_filters),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
