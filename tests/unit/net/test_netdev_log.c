/* SPDX-License-Identifier: MIT */
/*
 * Dirty logging for live migration, checked byte by byte: every byte the
 * device writes into guest memory must be logged, and logged after its
 * last write (a page marked before it is written can be sent in the final
 * round before the write lands, and the destination never sees it). The
 * log callback here keeps a copy of what each logged range held when it
 * was logged; after the operation every byte that changed must be in a
 * range whose copy matches its final value. The used ring must be logged
 * after each flush that published entries.
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
#define FILL 0xee
#define MAX_LOGS 64

static struct logged {
	const uint8_t *va;
	size_t len;
	uint8_t copy[4096];
} logs[MAX_LOGS];
static unsigned nlogs, used_logs;

static void log_write(void *ctx, const void *va, size_t len)
{
	(void)ctx;
	assert_true(nlogs < MAX_LOGS && len <= sizeof(logs[0].copy));
	logs[nlogs] = (struct logged){ .va = va, .len = len };
	memcpy(logs[nlogs].copy, va, len);
	nlogs++;
}

static void log_used(void *ctx)
{
	(void)ctx;
	used_logs++;
}

/* Every byte of @buf that is no longer FILL was logged with its final value. */
static void assert_logged_after_write(const uint8_t *buf, size_t size)
{
	for (size_t i = 0; i < size; i++) {
		bool ok = false;

		if (buf[i] == FILL)
			continue;
		for (unsigned k = nlogs; !ok && k--;)
			if (buf + i >= logs[k].va && buf + i < logs[k].va + logs[k].len)
				ok = logs[k].copy[buf + i - logs[k].va] == buf[i];
		if (!ok)
			fail_msg("byte %zu of buffer %p (0x%02x) written but not logged after", i,
				 (const void *)buf, buf[i]);
	}
}

static struct ndf *setup(uint64_t features, bool tx)
{
	struct ndf *fx = calloc(1, sizeof(*fx));

	ndf_init(fx, &(struct ndf_cfg){ .num = 16, .features = features, .tx = tx, .small = 4,
					 .small_size = 4096 });
	fx->q.log_write = log_write;
	fx->q.log_used = log_used;
	nlogs = used_logs = 0;
	return fx;
}

static void teardown_fx(struct ndf *fx)
{
	ndf_fini(fx);
	free(fx);
}

static uint8_t rxmem[4][1024];

static void post_rx(struct ndf *fx, unsigned n, uint32_t size)
{
	for (unsigned i = 0; i < n; i++) {
		memset(rxmem[i], FILL, sizeof(rxmem[i]));
		tq_give(&fx->ring, rxmem[i], size, true);
	}
	uvn_vq_drv_kick_prepare(fx->ring.drv);
}

static void rx_one(struct ndf *fx, uint32_t len)
{
	struct uvn_pkt *p = uvn_pkt_alloc(fx->small);
	uint8_t *b = p->buf;

	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7 + 1);
	uvn_pkt_set_buf(p, len);
	assert_int_equal(uvn_netdev_rx(&fx->q, &p, 1), 1);
	uvn_pkt_free(p);
}

static void test_rx_single_logged(void **state)
{
	struct ndf *fx = setup(BASE, false);

	(void)state;
	post_rx(fx, 1, sizeof(rxmem[0]));
	rx_one(fx, 600);
	assert_logged_after_write(rxmem[0], sizeof(rxmem[0]));
	assert_int_equal(used_logs, 1);
	teardown_fx(fx);
}

/* num_buffers is known last: the first buffer's header is written after
 * the frame is spread, and must be logged after that. */
static void test_rx_mergeable_header_logged_last(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_MRG_RXBUF), false);

	(void)state;
	post_rx(fx, 4, 1000);
	rx_one(fx, 2500);
	for (unsigned i = 0; i < 4; i++)
		assert_logged_after_write(rxmem[i], sizeof(rxmem[i]));
	assert_int_equal(le16toh(((struct virtio_net_hdr_v1 *)rxmem[0])->num_buffers), 3);
	assert_int_equal(used_logs, 1);
	teardown_fx(fx);
}

static uint8_t ctrl_buf[8], ctrl_ack;

static void ctrl_chain(struct ndf *fx, uint32_t out_len)
{
	struct uvn_sg sg[2] = { tq_sg(ctrl_buf, out_len), tq_sg(&ctrl_ack, 1) };

	ctrl_ack = FILL;
	assert_int_equal(uvn_vq_drv_add(fx->ring.drv, sg, 1, 1, ctrl_buf, 0), 0);
	uvn_vq_drv_kick_prepare(fx->ring.drv);
}

static int set_pairs(void *ctx, unsigned pairs)
{
	(void)ctx;
	(void)pairs;
	return 0;
}

static void test_ctrl_ack_logged(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_CTRL_VQ), true);

	(void)state;
	ctrl_buf[0] = VIRTIO_NET_CTRL_ANNOUNCE;
	ctrl_buf[1] = VIRTIO_NET_CTRL_ANNOUNCE_ACK;
	ctrl_chain(fx, 2);
	assert_int_equal(uvn_netdev_ctrl(&fx->q, set_pairs, NULL), 1);
	assert_int_equal(ctrl_ack, VIRTIO_NET_OK);
	assert_logged_after_write(&ctrl_ack, 1);
	assert_int_equal(used_logs, 1);
	teardown_fx(fx);
}

/* A command too short to have a header still gets its NACK, logged. */
static void test_ctrl_nack_of_malformed_logged(void **state)
{
	struct ndf *fx = setup(BASE | F(VIRTIO_NET_F_CTRL_VQ), true);

	(void)state;
	ctrl_chain(fx, 1);
	assert_int_equal(uvn_netdev_ctrl(&fx->q, set_pairs, NULL), 1);
	assert_int_equal(ctrl_ack, VIRTIO_NET_ERR);
	assert_int_equal(fx->q.st.ctrl_err, 1);
	assert_logged_after_write(&ctrl_ack, 1);
	assert_int_equal(used_logs, 1);
	teardown_fx(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rx_single_logged),
		cmocka_unit_test(test_rx_mergeable_header_logged_last),
		cmocka_unit_test(test_ctrl_ack_logged),
		cmocka_unit_test(test_ctrl_nack_of_malformed_logged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
