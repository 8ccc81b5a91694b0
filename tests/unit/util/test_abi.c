/* SPDX-License-Identifier: MIT */
/*
 * The reserved words of the public config structs (util/abi.h): every
 * entry point that takes one refuses a non-zero word, and takes the same
 * struct with them zero.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <uvnet/driver.h>
#include <uvnet/pkt.h>
#include <uvnet/virtqueue.h>

static void *xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	(void)ctx;
	(void)len;
	return (void *)(uintptr_t)addr;
}

static void test_vq(void **state)
{
	struct uvn_vq_layout lay;
	struct uvn_vq_drv *drv;
	struct uvn_vq_dev *dev;
	void *ring;

	(void)state;
	assert_int_equal(uvn_vq_layout(false, 8, &lay), 0);
	ring = aligned_alloc(64, (lay.size + 63) & ~(size_t)63);
	assert_non_null(ring);
	for (unsigned w = 0; w < 2; w++) {
		struct uvn_vq_drv_cfg dc = { .num = 8, .features = 1ull << 32, .ring = ring };
		struct uvn_vq_dev_cfg vc = { .num = 8, .features = 1ull << 32, .desc = ring,
					     .driver = (char *)ring + lay.desc,
					     .device = (char *)ring + lay.desc + lay.driver,
					     .xlate = xlate };

		dc.reserved[w * 5] = 1;
		vc.reserved[w * 3] = 1;
		assert_int_equal(uvn_vq_drv_create(&dc, &drv), -UVN_VQ_E_INVAL);
		assert_int_equal(uvn_vq_dev_create(&vc, &dev), -UVN_VQ_E_INVAL);
		memset(dc.reserved, 0, sizeof(dc.reserved));
		memset(vc.reserved, 0, sizeof(vc.reserved));
		assert_int_equal(uvn_vq_drv_create(&dc, &drv), 0);
		assert_int_equal(uvn_vq_dev_create(&vc, &dev), 0);
		uvn_vq_drv_destroy(drv);
		uvn_vq_dev_destroy(dev);
	}
	free(ring);
}

static void test_pool(void **state)
{
	struct uvn_pkt_pool_cfg c = { .count = 4, .buf_size = 256 };
	struct uvn_pkt_pool *p;

	(void)state;
	c.reserved[3] = 1;
	assert_int_equal(uvn_pkt_pool_create(&c, &p), -EINVAL);
	c.reserved[3] = 0;
	assert_int_equal(uvn_pkt_pool_create(&c, &p), 0);
	uvn_pkt_pool_destroy(p);
}

static void test_driver(void **state)
{
	struct uvn_drv_cfg c;
	struct uvn_drv *d;

	(void)state;
	uvn_drv_cfg_init(&c);
	c.path = "/nonexistent/uvn-test-abi.sock";
	c.reserved[13] = 1;
	assert_int_equal(uvn_drv_open(&c, &d), -EINVAL);
	c.reserved[13] = 0;
	c.timeout_ms = 10;
	/* past the config check: nobody listens there */
	assert_int_not_equal(uvn_drv_open(&c, &d), -EINVAL);
}

/* Ring error values are compiled into programs: they stay what they are,
 * above every errno value, with their stats slots where they were. */
static void test_vq_errors(void **state)
{
	(void)state;
	assert_int_equal(UVN_VQ_ERR_BASE, 4096);
	assert_int_equal(UVN_VQ_E_HEAD_RANGE, 4097);
	assert_int_equal(UVN_VQ_E_IOV_FULL, 4109);
	assert_int_equal(UVN_VQ_E_BASE, 4115);
	assert_int_equal(UVN_VQ_E_CHAIN_LONG, 4116);
	assert_int_equal(UVN_VQ_E_INVAL, 4117);
	assert_int_equal(UVN_VQ_E_NOSPC, 4118);
	assert_int_equal(UVN_VQ_E_NOMEM, 4119);
	assert_int_equal(UVN_VQ_ERR_SLOT(UVN_VQ_E_HEAD_RANGE), 1);
	assert_int_equal(UVN_VQ_ERR_SLOT(UVN_VQ_E_BASE), 19);
	assert_int_equal(UVN_VQ_E__COUNT, 24);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vq),
		cmocka_unit_test(test_vq_errors),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_driver),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
