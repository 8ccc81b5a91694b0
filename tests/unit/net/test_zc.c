/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy guest TX: frames handed on in the guest's buffers, chains held
 * until their packets are freed, returned exactly once, in ring order with
 * IN_ORDER, copied when small, segmented, or too many are held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>

#include <cmocka.h>

#include <linux/virtio_ring.h>

#include "net/device/netdev.h"
#include "netdev_fix.h"

#define BASE (F(VIRTIO_F_VERSION_1))
#define NBUF 8

struct fx {
	struct ndf nd;
	uint8_t buf[NBUF][4096];
};

static struct fx *setup_ring(unsigned num, uint64_t features, enum uvn_zc_mode mode,
			     unsigned max_held)
{
	struct fx *f = calloc(1, sizeof(*f));

	ndf_init(&f->nd, &(struct ndf_cfg){ .num = num, .features = features, .tx = true,
					     .small = 8, .ext = 8 });
	assert_int_equal(uvn_netdev_q_set_zerocopy(&f->nd.q, mode, 256, max_held, f->nd.ext), 0);
	return f;
}

static struct fx *setup(uint64_t features, enum uvn_zc_mode mode, unsigned max_held)
{
	return setup_ring(16, features, mode, max_held);
}

static void teardown_fx(struct fx *f)
{
	assert_int_equal(f->nd.q.st.zc_held, 0);
	ndf_fini(&f->nd);
	free(f);
}

/* Guest: frame @i of @len bytes in buffer i, header split from the frame if @split. */
static void send(struct fx *f, unsigned i, uint32_t len, bool split)
{
	uint8_t *b = f->buf[i];
	struct uvn_sg sg[2];

	memset(b, 0, 12);
	for (uint32_t k = 0; k < len; k++)
		b[12 + k] = (uint8_t)(i * 31 + k);
	if (split) {
		sg[0] = tq_sg(b, 12);
		sg[1] = tq_sg(b + 12, len);
	} else {
		sg[0] = tq_sg(b, 12 + len);
	}
	assert_int_equal(uvn_vq_drv_add(f->nd.ring.drv, sg, split ? 2 : 1, 0, b, 0), 0);
	uvn_vq_drv_kick_prepare(f->nd.ring.drv);
}

/* Guest: which buffers came back (as indices), in order. */
static unsigned back(struct fx *f, unsigned *idx)
{
	struct uvn_vq_done d[NBUF];
	unsigned n = tq_take(&f->nd.ring, d, NBUF);

	for (unsigned k = 0; k < n; k++)
		idx[k] = (unsigned)(((uint8_t *)d[k].token - f->buf[0]) / 4096);
	return n;
}

static void check_data(const struct uvn_pkt *p, unsigned i, uint32_t len)
{
	uint8_t got[4096];

	assert_int_equal(p->len, len);
	assert_int_equal(uvn_pkt_read(p, 0, got, len), len);
	for (uint32_t k = 0; k < len; k++)
		assert_int_equal(got[k], (uint8_t)(i * 31 + k));
}

static void test_borrowed_and_returned_on_free_out_of_order(void **state)
{
	struct fx *f = setup(BASE, UVN_ZC_ON, 0);
	struct uvn_pkt *p[3];
	unsigned idx[NBUF];

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		send(f, i, 1000, i == 1);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, p, 3), 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_non_null(p[i]->ubuf);
		assert_ptr_equal(p[i]->pool, f->nd.ext);
		/* the guest's own bytes, the header skipped */
		assert_ptr_equal(p[i]->seg[0].iov_base, f->buf[i] + 12);
		check_data(p[i], i, 1000);
	}
	assert_int_equal(f->nd.q.st.zc_packets, 3);
	assert_int_equal(f->nd.q.st.zc_held, 3);
	assert_int_equal(back(f, idx), 0); /* held */
	uvn_pkt_free(p[2]);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 1);
	assert_int_equal(idx[0], 2);
	uvn_pkt_free(p[0]);
	uvn_pkt_free(p[1]);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 2);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 1);
	assert_int_equal(back(f, idx), 0); /* exactly once */
	assert_int_equal(f->nd.q.st.zc_held_peak, 3);
	teardown_fx(f);
}

static void test_in_order_returns_in_ring_order(void **state)
{
	struct fx *f = setup(BASE | F(VIRTIO_F_IN_ORDER), UVN_ZC_AUTO, 0);
	struct uvn_pkt *p[3];
	unsigned idx[NBUF];

	(void)state;
	send(f, 0, 1000, false);
	send(f, 1, 100, false); /* small: copied, but must wait for chain 0 */
	send(f, 2, 1000, false);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, p, 3), 3);
	assert_non_null(p[0]->ubuf);
	assert_null(p[1]->ubuf);
	assert_ptr_equal(p[1]->pool, f->nd.small);
	assert_int_equal(f->nd.q.st.zc_fb_small, 1);
	assert_int_equal(f->nd.q.st.zc_copied, 1);
	assert_int_equal(back(f, idx), 0); /* the copied one waits behind chain 0 */
	uvn_pkt_free(p[2]);
	uvn_pkt_free(p[1]);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 0);
	uvn_pkt_free(p[0]);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 3);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(idx[i], i);
	teardown_fx(f);
}

static void test_in_order_copied_alone_returns_at_once(void **state)
{
	struct fx *f = setup(BASE | F(VIRTIO_F_IN_ORDER), UVN_ZC_AUTO, 0);
	struct uvn_pkt *p[2];
	unsigned idx[NBUF];

	(void)state;
	send(f, 0, 100, false); /* small, nothing held: straight back */
	send(f, 1, 100, false);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, p, 2), 2);
	assert_int_equal(back(f, idx), 2);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 1);
	uvn_pkt_free(p[0]);
	uvn_pkt_free(p[1]);
	teardown_fx(f);
}

static void test_flooded_packet_completes_once(void **state)
{
	struct fx *f = setup(BASE, UVN_ZC_ON, 0);
	struct uvn_pkt *p;
	unsigned idx[NBUF];

	(void)state;
	send(f, 0, 600, false);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, &p, 1), 1);
	uvn_pkt_ref(p); /* sent to two ports */
	uvn_pkt_ref(p); /* and a third */
	uvn_pkt_free(p);
	uvn_pkt_free(p);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 0);
	uvn_pkt_free(p);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 1);
	assert_int_equal(back(f, idx), 0);
	teardown_fx(f);
}

static void test_bound_on_held_chains_copies(void **state)
{
	struct fx *f = setup(BASE, UVN_ZC_ON, 2);
	struct uvn_pkt *p[4];
	unsigned idx[NBUF];

	(void)state;
	for (unsigned i = 0; i < 4; i++)
		send(f, i, 1200, false);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, p, 4), 4);
	assert_non_null(p[0]->ubuf);
	assert_non_null(p[1]->ubuf);
	assert_null(p[2]->ubuf); /* a stalled consumer cannot pin more */
	assert_null(p[3]->ubuf);
	assert_int_equal(f->nd.q.st.zc_fb_held, 2);
	check_data(p[3], 3, 1200);
	assert_int_equal(back(f, idx), 2); /* the copied ones went back at once */
	assert_int_equal(idx[0], 2);
	uvn_pkt_free_bulk(p, 4);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 2);
	teardown_fx(f);
}

static void test_mode_off_drains_held_chains(void **state)
{
	struct fx *f = setup(BASE, UVN_ZC_ON, 0);
	struct uvn_pkt *p[2];
	unsigned idx[NBUF];

	(void)state;
	send(f, 0, 1000, false);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, p, 1), 1);
	assert_int_equal(uvn_netdev_q_set_zerocopy(&f->nd.q, UVN_ZC_OFF, 0, 0, f->nd.ext), 0);
	send(f, 1, 1000, false);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, p + 1, 1), 1);
	assert_null(p[1]->ubuf); /* copied now */
	assert_int_equal(back(f, idx), 1);
	assert_int_equal(idx[0], 1);
	uvn_pkt_free(p[0]); /* the borrowed one still comes back */
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 1);
	assert_int_equal(idx[0], 0);
	uvn_pkt_free(p[1]);
	teardown_fx(f);
}

static void test_copy_of_borrowed_packet(void **state)
{
	struct fx *f = setup(BASE, UVN_ZC_ON, 0);
	struct uvn_pkt *p, *c;
	unsigned idx[NBUF];

	(void)state;
	send(f, 0, 700, true);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, &p, 1), 1);
	c = uvn_pkt_copy(p, f->nd.small);
	assert_non_null(c);
	uvn_pkt_free(p); /* whoever keeps a packet keeps the copy */
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), 1);
	memset(f->buf[0], 0xff, sizeof(f->buf[0])); /* the guest reuses its buffer */
	check_data(c, 0, 700);
	uvn_pkt_free(c);
	teardown_fx(f);
}

/*
 * IN_ORDER with the whole ring in the FIFO (half held, half copied behind
 * them): full must not read as empty, or no chain ever goes back.
 */
static void test_in_order_whole_ring_queued(void **state)
{
	struct fx *f = setup_ring(NBUF, BASE | F(VIRTIO_F_IN_ORDER), UVN_ZC_ON, 0);
	struct uvn_pkt *p[NBUF];
	unsigned idx[NBUF];

	(void)state;
	for (unsigned i = 0; i < NBUF; i++)
		send(f, i, 1000, false);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, p, NBUF), NBUF);
	assert_int_equal(f->nd.q.st.zc_held, NBUF / 2);
	assert_int_equal(f->nd.q.st.zc_fb_held, NBUF / 2);
	assert_int_equal(back(f, idx), 0); /* the copies wait behind chain 0 */
	uvn_pkt_free_bulk(p, NBUF);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_int_equal(back(f, idx), NBUF);
	for (unsigned i = 0; i < NBUF; i++)
		assert_int_equal(idx[i], i);
	teardown_fx(f);
}

static void test_duplicate_id_breaks_queue(void **state)
{
	struct fx *f = setup(BASE, UVN_ZC_ON, 0);
	struct vring_avail *avail;
	struct uvn_pkt *p[2];
	uint16_t head;

	(void)state;
	send(f, 0, 1000, false);
	/* a hostile driver makes the same head available twice */
	avail = sq_avail(&f->nd.ring);
	head = avail->ring[0];
	avail->ring[1] = head;
	avail->idx = htole16(2);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, NULL, p, 2), 1);
	assert_true(f->nd.q.broken);
	assert_int_equal(f->nd.q.st.err_format, 1);
	uvn_pkt_free(p[0]);
	uvn_netdev_tx_complete(&f->nd.q);
	teardown_fx(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_borrowed_and_returned_on_free_out_of_order),
		cmocka_unit_test(test_in_order_returns_in_ring_order),
		cmocka_unit_test(test_in_order_copied_alone_returns_at_once),
		cmocka_unit_test(test_in_order_whole_ring_queued),
		cmocka_unit_test(test_flooded_packet_completes_once),
		cmocka_unit_test(test_bound_on_held_chains_copies),
		cmocka_unit_test(test_mode_off_drains_held_chains),
		cmocka_unit_test(test_copy_of_borrowed_packet),
		cmocka_unit_test(test_duplicate_id_breaks_queue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
