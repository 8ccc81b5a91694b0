/* SPDX-License-Identifier: MIT */
/*
 * Dirty logging of the ring itself: whatever the device publishes (split
 * used ring, packed descriptors written back) must be logged after its
 * last write, on every path that publishes: guest TX copied, guest TX
 * zero-copy (chains returned when their packets are freed), guest RX
 * (single and mergeable), the control queue. The log_used callback here
 * keeps a copy of the whole ring as it was when it was called; after each
 * operation the ring must equal the copy of the last call (a write after
 * the last log would be lost by a migration), split and packed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <linux/virtio_ring.h>

#include "net/device/netdev.h"
#include "netdev_fix.h"

#define BASE (F(VIRTIO_F_VERSION_1))
#define NUM 16

struct fx {
	struct ndf nd;
	uint8_t *copy;      /* the ring when log_used was last called */
	unsigned used_logs;
	uint8_t buf[4][2048];
};

static void log_write(void *ctx, const void *va, size_t len)
{
	(void)ctx;
	(void)va;
	(void)len;
}

static void log_used(void *ctx)
{
	struct fx *f = ctx;

	memcpy(f->copy, f->nd.ring.ring, f->nd.ring.lay.size);
	f->used_logs++;
}

static struct fx *setup(uint64_t features, bool tx, enum uvn_zc_mode zc)
{
	struct fx *f = calloc(1, sizeof(*f));

	ndf_init(&f->nd, &(struct ndf_cfg){ .num = NUM, .features = features, .tx = tx,
					     .small = 8, .big = 2, .ext = 8 });
	f->copy = calloc(1, f->nd.ring.lay.size);
	f->nd.q.log_write = log_write;
	f->nd.q.log_used = log_used;
	f->nd.q.log_ctx = f;
	if (zc != UVN_ZC_OFF)
		assert_int_equal(uvn_netdev_q_set_zerocopy(&f->nd.q, zc, 0, 0, f->nd.ext), 0);
	return f;
}

static void teardown_fx(struct fx *f)
{
	ndf_fini(&f->nd);
	free(f->copy);
	free(f);
}

/* Everything the device wrote into the ring was logged after it wrote it. */
static void assert_ring_logged(struct fx *f)
{
	assert_true(f->used_logs > 0);
	assert_memory_equal(f->nd.ring.ring, f->copy, f->nd.ring.lay.size);
}

/* The guest sends @n frames of @len bytes (a zeroed virtio-net header each). */
static void guest_tx(struct fx *f, unsigned n, uint32_t len)
{
	for (unsigned i = 0; i < n; i++) {
		memset(f->buf[i], 0, 12 + len);
		memset(f->buf[i] + 12, 0xff, 6);
		f->buf[i][12 + 12] = 0x08;
		tq_give(&f->nd.ring, f->buf[i], 12 + len, false);
	}
	uvn_vq_drv_kick_prepare(f->nd.ring.drv);
}

static void guest_reap(struct fx *f, unsigned want)
{
	struct uvn_vq_done done[NUM];

	assert_int_equal(tq_take(&f->nd.ring, done, NUM), want);
}

static void tx_copied(uint64_t features)
{
	struct fx *f = setup(features, true, UVN_ZC_OFF);
	struct uvn_pkt *pkts[4];

	guest_tx(f, 3, 100);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, f->nd.big, pkts, 4), 3);
	assert_ring_logged(f);
	uvn_pkt_free_bulk(pkts, 3);
	guest_reap(f, 3);
	teardown_fx(f);
}

static void test_tx_copied_split(void **state)
{
	(void)state;
	tx_copied(BASE);
}

static void test_tx_copied_packed(void **state)
{
	(void)state;
	tx_copied(BASE | F(VIRTIO_F_RING_PACKED));
}

/*
 * Zero-copy: a held chain goes back when its packet is freed, and is
 * published by uvn_netdev_tx_complete after the burst: that publication is
 * logged like any other, and one logged before it is not enough.
 */
static void tx_zerocopy(uint64_t features)
{
	struct fx *f = setup(features, true, UVN_ZC_ON);
	struct uvn_pkt *pkts[4];
	unsigned logs;

	guest_tx(f, 3, 600);
	assert_int_equal(uvn_netdev_tx(&f->nd.q, f->nd.small, f->nd.big, pkts, 4), 3);
	assert_int_equal(f->nd.q.st.zc_packets, 3);
	guest_reap(f, 0);
	logs = f->used_logs;
	/* freed out of order: with IN_ORDER they still go back in order */
	uvn_pkt_free(pkts[1]);
	uvn_netdev_tx_complete(&f->nd.q);
	uvn_pkt_free(pkts[0]);
	uvn_pkt_free(pkts[2]);
	uvn_netdev_tx_complete(&f->nd.q);
	assert_true(f->used_logs > logs);
	assert_ring_logged(f);
	guest_reap(f, 3);
	teardown_fx(f);
}

static void test_tx_zerocopy_split(void **state)
{
	(void)state;
	tx_zerocopy(BASE);
}

static void test_tx_zerocopy_packed_in_order(void **state)
{
	(void)state;
	tx_zerocopy(BASE | F(VIRTIO_F_RING_PACKED) | F(VIRTIO_F_IN_ORDER));
}

static void test_tx_zerocopy_split_in_order(void **state)
{
	(void)state;
	tx_zerocopy(BASE | F(VIRTIO_F_IN_ORDER));
}

static void rx(uint64_t features, uint32_t len, unsigned bufs, uint32_t size)
{
	struct fx *f = setup(features, false, UVN_ZC_OFF);
	struct uvn_pkt *p = uvn_pkt_alloc(f->nd.small);

	for (unsigned i = 0; i < bufs; i++)
		tq_give(&f->nd.ring, f->buf[i], size, true);
	uvn_vq_drv_kick_prepare(f->nd.ring.drv);
	memset(p->buf, 0x5a, len);
	uvn_pkt_set_buf(p, len);
	assert_int_equal(uvn_netdev_rx(&f->nd.q, &p, 1), 1);
	uvn_pkt_free(p);
	assert_ring_logged(f);
	teardown_fx(f);
}

static void test_rx_split(void **state)
{
	(void)state;
	rx(BASE, 1000, 1, 2048);
	rx(BASE | F(VIRTIO_NET_F_MRG_RXBUF), 1500, 4, 512);
}

static void test_rx_packed(void **state)
{
	(void)state;
	rx(BASE | F(VIRTIO_F_RING_PACKED), 1000, 1, 2048);
	rx(BASE | F(VIRTIO_F_RING_PACKED) | F(VIRTIO_NET_F_MRG_RXBUF), 1500, 4, 512);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tx_copied_split),
		cmocka_unit_test(test_tx_copied_packed),
		cmocka_unit_test(test_tx_zerocopy_split),
		cmocka_unit_test(test_tx_zerocopy_split_in_order),
		cmocka_unit_test(test_tx_zerocopy_packed_in_order),
		cmocka_unit_test(test_rx_split),
		cmocka_unit_test(test_rx_packed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
