/* SPDX-License-Identifier: MIT */
/*
 * A backend that completed chains out of order and died, without an
 * in-flight region: uvn_split_drv_resubmit() puts the avail slots from the
 * used index on right, so the next backend, started at the used index (as
 * the reconnecting driver describes the ring), takes every chain the dead
 * one left exactly once and none it completed. Both halves in process
 * (the public virtqueue API), buffers in plain memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <cmocka.h>
#include <linux/virtio_config.h>
#include <uvnet/virtqueue.h>

/* lib/ring/split_drv.c: only the reconnecting driver uses it (net/driver/drv.h). */
int uvn_split_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint16_t *list);

#define NUM 8u
#define BUF 64u

static void *xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	(void)ctx;
	(void)len;
	return (void *)(uintptr_t)addr;
}

struct rig {
	void *ring;
	struct uvn_vq_layout lay;
	struct uvn_vq_drv *drv;
	uint8_t bufs[4 * NUM][BUF];
	uint8_t mark[NUM];
	uint16_t list[NUM];
};

static struct uvn_vq_dev *dev_at(struct rig *r, uint16_t idx)
{
	struct uvn_vq_dev_cfg c = {
		.num = NUM, .features = 1ull << VIRTIO_F_VERSION_1,
		.desc = (char *)r->ring + r->lay.desc, .driver = (char *)r->ring + r->lay.driver,
		.device = (char *)r->ring + r->lay.device, .xlate = xlate,
		.avail_idx = idx, .used_idx = idx,
	};
	struct uvn_vq_dev *d = NULL;

	assert_int_equal(uvn_vq_dev_create(&c, &d), 0);
	return d;
}

static void setup(struct rig *r)
{
	struct uvn_vq_drv_cfg c = { .num = NUM, .features = 1ull << VIRTIO_F_VERSION_1 };

	uvn_vq_layout(false, NUM, &r->lay);
	r->ring = aligned_alloc(4096, (r->lay.size + 4095) / 4096 * 4096);
	assert_non_null(r->ring);
	c.ring = r->ring;
	assert_int_equal(uvn_vq_drv_create(&c, &r->drv), 0);
}

/* Post buffer @b (its index is the token). */
static void post(struct rig *r, unsigned b)
{
	assert_int_equal(uvn_vq_drv_add_one(r->drv, (uint64_t)(uintptr_t)r->bufs[b], BUF, true,
					    (void *)(uintptr_t)(b + 1)), 0);
}

static unsigned buf_of(struct rig *r, const struct iovec *iov)
{
	return (unsigned)(((uint8_t *)iov->iov_base - &r->bufs[0][0]) / BUF);
}

static uint16_t used_idx(struct rig *r)
{
	return *(volatile uint16_t *)((char *)r->ring + r->lay.device + 2);
}

/*
 * Buffers 0..5 posted. The first backend takes 0..3 and completes 1, 3, 2
 * (0 it holds) and dies. The driver reads the three and posts 6 and 7 (in
 * the heads just freed) before the next backend comes. @return the rig
 */
static void crash_out_of_order(struct rig *r)
{
	struct uvn_vq_chain ch[4];
	struct iovec iov[4];
	struct uvn_vq_done done[NUM];
	struct uvn_vq_dev *dev;

	setup(r);
	for (unsigned b = 0; b < 6; b++)
		post(r, b);
	uvn_vq_drv_publish(r->drv);
	dev = dev_at(r, 0);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(uvn_vq_dev_pop(dev, &ch[i], &iov[i], 1), 1);
		assert_int_equal(buf_of(r, &iov[i]), i);
	}
	uvn_vq_dev_push(dev, &ch[1], 1);
	uvn_vq_dev_push(dev, &ch[3], 3);
	uvn_vq_dev_push(dev, &ch[2], 2);
	uvn_vq_dev_flush(dev);
	uvn_vq_dev_destroy(dev); /* SIGKILL: chain 0 was never given back */
	assert_int_equal(uvn_vq_drv_get_used(r->drv, done, NUM), 3);
	post(r, 6);
	post(r, 7);
	uvn_vq_drv_publish(r->drv);
	assert_int_equal(used_idx(r), 3);
}

/* The next backend from the used index: every buffer it takes, in order. */
static unsigned drain_new_backend(struct rig *r, unsigned *got, unsigned max)
{
	struct uvn_vq_dev *dev = dev_at(r, used_idx(r));
	struct uvn_vq_chain ch;
	struct iovec iov;
	unsigned n = 0;

	while (n < max && uvn_vq_dev_pop(dev, &ch, &iov, 1) == 1) {
		got[n++] = buf_of(r, &iov);
		uvn_vq_dev_push(dev, &ch, 1);
	}
	uvn_vq_dev_flush(dev);
	uvn_vq_dev_destroy(dev);
	return n;
}

static void test_resubmit_out_of_order(void **state)
{
	static struct rig r;
	struct uvn_vq_done done[NUM];
	unsigned got[NUM], n, seen[4 * NUM] = { 0 };
	int k;

	(void)state;
	memset(&r, 0, sizeof(r));
	crash_out_of_order(&r);
	/* Slots 3, 4 held buffers 3 (completed) and 4; 0, 4, 5 are left. */
	assert_true(uvn_split_drv_resubmit(r.drv, r.mark, r.list) > 0);
	n = drain_new_backend(&r, got, NUM);
	assert_int_equal(n, 5);
	/* The one held longest first, then in the order they were posted. */
	assert_int_equal(got[0], 0);
	assert_int_equal(got[1], 4);
	assert_int_equal(got[2], 5);
	assert_int_equal(got[3], 6);
	assert_int_equal(got[4], 7);
	k = uvn_vq_drv_get_used(r.drv, done, NUM);
	assert_int_equal(k, 5);
	for (int i = 0; i < k; i++)
		seen[(uintptr_t)done[i].token - 1]++;
	for (unsigned b = 0; b < 8; b++)
		assert_int_equal(seen[b], b == 1 || b == 2 || b == 3 ? 0 : 1);
	assert_int_equal(uvn_vq_drv_error(r.drv), 0);
	assert_int_equal(uvn_vq_drv_num_free(r.drv), NUM);
	uvn_vq_drv_destroy(r.drv);
	free(r.ring);
}

/* Without the rewrite the next backend takes the head of completed buffer
 * 3 again (reposted meanwhile with a new buffer: taken twice) and never 0:
 * what the test above guards against. */
static void test_without_resubmit(void **state)
{
	static struct rig r;
	unsigned got[NUM], n, seen[4 * NUM] = { 0 };
	bool zero = false, twice = false;

	(void)state;
	memset(&r, 0, sizeof(r));
	crash_out_of_order(&r);
	n = drain_new_backend(&r, got, NUM);
	for (unsigned i = 0; i < n; i++) {
		zero |= got[i] == 0;
		twice |= ++seen[got[i]] == 2;
	}
	assert_false(zero);
	assert_true(twice);
	uvn_vq_drv_destroy(r.drv);
	free(r.ring);
}

/* Completions in order: nothing to rewrite. A used index past what was
 * published (a dead backend's nonsense): refused, nothing changed. */
static void test_in_order_and_nonsense(void **state)
{
	static struct rig r;
	struct uvn_vq_chain ch;
	struct iovec iov;
	struct uvn_vq_done done[NUM];
	struct uvn_vq_dev *dev;

	(void)state;
	memset(&r, 0, sizeof(r));
	setup(&r);
	for (unsigned b = 0; b < 4; b++)
		post(&r, b);
	uvn_vq_drv_publish(r.drv);
	dev = dev_at(&r, 0);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, &iov, 1), 1);
	uvn_vq_dev_push(dev, &ch, 1);
	assert_int_equal(uvn_vq_dev_pop(dev, &ch, &iov, 1), 1); /* held */
	uvn_vq_dev_flush(dev);
	uvn_vq_dev_destroy(dev);
	assert_int_equal(uvn_split_drv_resubmit(r.drv, r.mark, r.list), 0);
	assert_int_equal(uvn_vq_drv_get_used(r.drv, done, NUM), 1);
	*(volatile uint16_t *)((char *)r.ring + r.lay.device + 2) = 9;
	assert_int_equal(uvn_split_drv_resubmit(r.drv, r.mark, r.list), -1);
	uvn_vq_drv_destroy(r.drv);
	free(r.ring);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resubmit_out_of_order),
		cmocka_unit_test(test_without_resubmit),
		cmocka_unit_test(test_in_order_and_nonsense),
	};

	return cmocka_run_group_tests_name("driver_resubmit", tests, NULL, NULL);
}
