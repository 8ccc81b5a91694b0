/* SPDX-License-Identifier: MIT */
/*
 * A backend that completed chains out of order and died, without an
 * in-flight region: uvn_split_drv_resubmit() puts the avail slots from the
 * used index on right (packed rings: see below), so the next backend, started at the used index (as
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

/* lib/ring/split_drv.c, packed_drv.c: only the reconnecting driver uses them
 * (net/driver/drv.h). */
int uvn_split_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint16_t *list);
int uvn_packed_drv_keep(struct uvn_vq_drv *vq);
int uvn_packed_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint64_t *keys, uint16_t *base);

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

/* Both layouts' out-of-order crash leaves buffers 0 and 4..7, in this order. */
static const unsigned order_0_4_7[] = { 0, 4, 5, 6, 7 };

static void expect_got(const unsigned *got, unsigned n, const unsigned *want, unsigned count)
{
	assert_int_equal(n, count);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(got[i], want[i]);
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
	/* The one held longest first, then in the order they were posted. */
	expect_got(got, n, order_0_4_7, 5);
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

/* ------------------------------------------------------------- packed */

/*
 * Packed rings: uvn_packed_drv_resubmit() lays the chains a dead backend
 * left out again from its used position, which it returns as the base the
 * next backend starts at (nothing held). Chains of one or two descriptors
 * (a header and a buffer), the buffer's index is the token.
 */
struct prig {
	void *ring;
	struct uvn_vq_layout lay;
	struct uvn_vq_drv *drv;
	uint64_t features;
	uint8_t hdr[4 * NUM][16];
	uint8_t bufs[4 * NUM][BUF];
	uint8_t mark[NUM];
	uint64_t keys[NUM];
	uint16_t base;
};

static void psetup(struct prig *r, bool in_order)
{
	struct uvn_vq_drv_cfg c = { .num = NUM };

	r->features = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_F_RING_PACKED |
		      (in_order ? 1ull << VIRTIO_F_IN_ORDER : 0);
	c.features = r->features;
	uvn_vq_layout(true, NUM, &r->lay);
	r->ring = aligned_alloc(4096, (r->lay.size + 4095) / 4096 * 4096);
	assert_non_null(r->ring);
	c.ring = r->ring;
	assert_int_equal(uvn_vq_drv_create(&c, &r->drv), 0);
	assert_int_equal(uvn_packed_drv_keep(r->drv), 0);
}

/* A backend at ring position @base (position | wrap << 15), nothing held. */
static struct uvn_vq_dev *pdev_at(struct prig *r, uint16_t base)
{
	struct uvn_vq_dev_cfg c = {
		.num = NUM, .features = r->features,
		.desc = (char *)r->ring + r->lay.desc, .driver = (char *)r->ring + r->lay.driver,
		.device = (char *)r->ring + r->lay.device, .xlate = xlate,
		.avail_idx = base & 0x7fff, .avail_wrap = base >> 15,
		.used_idx = base & 0x7fff, .used_wrap = base >> 15,
	};
	struct uvn_vq_dev *d = NULL;

	assert_int_equal(uvn_vq_dev_create(&c, &d), 0);
	return d;
}

/* Post buffer @b: writable, after a readable header when @two. */
static void ppost(struct prig *r, unsigned b, bool two)
{
	struct uvn_sg sg[2] = {
		{ (uint64_t)(uintptr_t)r->hdr[b], sizeof(r->hdr[b]) },
		{ (uint64_t)(uintptr_t)r->bufs[b], BUF },
	};

	assert_int_equal(uvn_vq_drv_add(r->drv, two ? sg : sg + 1, two, 1,
					(void *)(uintptr_t)(b + 1), 0), 0);
}

/* The buffer a popped chain carries (its last iovec). */
static unsigned pbuf_of(struct prig *r, const struct uvn_vq_chain *ch, const struct iovec *iov)
{
	const struct iovec *v = &iov[ch->nout + ch->nin - 1];

	return (unsigned)(((uint8_t *)v->iov_base - &r->bufs[0][0]) / BUF);
}

/* The next backend at r->base: the buffers it takes, in order, completed. */
static unsigned pdrain(struct prig *r, unsigned *got, unsigned max)
{
	struct uvn_vq_dev *dev = pdev_at(r, r->base);
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	unsigned n = 0;

	while (n < max && uvn_vq_dev_pop(dev, &ch, iov, 2) == 1) {
		got[n++] = pbuf_of(r, &ch, iov);
		uvn_vq_dev_push(dev, &ch, 1);
		uvn_vq_dev_flush(dev);
	}
	uvn_vq_dev_destroy(dev);
	return n;
}

/* Every buffer in @want came back exactly once, none other; the ring is empty. */
static void pcheck_all_back(struct prig *r, const unsigned *seen_before, const bool *want,
			    unsigned nbufs)
{
	struct uvn_vq_done done[NUM];
	unsigned seen[4 * NUM] = { 0 };
	int k;

	for (unsigned b = 0; b < nbufs; b++)
		seen[b] = seen_before[b];
	while ((k = uvn_vq_drv_get_used(r->drv, done, NUM)) > 0)
		for (int i = 0; i < k; i++)
			seen[(uintptr_t)done[i].token - 1]++;
	assert_int_equal(uvn_vq_drv_error(r->drv), 0);
	for (unsigned b = 0; b < nbufs; b++)
		assert_int_equal(seen[b], want[b] ? 1 : 0);
	assert_int_equal(uvn_vq_drv_num_free(r->drv), NUM);
}

static void pdone(struct prig *r)
{
	uvn_vq_drv_destroy(r->drv);
	free(r->ring);
}

/* The next backend takes buffers @first .. @first + @count - 1 in order;
 * then every buffer in @want is back once and the rig is freed. */
static void pexpect(struct prig *r, const unsigned *seen, unsigned first, unsigned count,
		    const bool *want, unsigned nbufs)
{
	unsigned got[NUM], n = pdrain(r, got, NUM);

	assert_int_equal(n, count);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(got[i], first + i);
	pcheck_all_back(r, seen, want, nbufs);
	pdone(r);
}

/*
 * A rig with buffers 0 .. @nbufs - 1 posted (with a header where bit b of
 * @two is set) and published, and the first backend, which has taken the
 * first @npop of them into @ch, @iov.
 */
static struct uvn_vq_dev *pstart(struct prig *r, bool in_order, unsigned nbufs, unsigned two,
				 unsigned npop, struct uvn_vq_chain *ch, struct iovec (*iov)[2])
{
	struct uvn_vq_dev *dev;

	memset(r, 0, sizeof(*r));
	psetup(r, in_order);
	for (unsigned b = 0; b < nbufs; b++)
		ppost(r, b, (two >> b) & 1);
	uvn_vq_drv_publish(r->drv);
	dev = pdev_at(r, 1u << 15);
	for (unsigned i = 0; i < npop; i++) {
		assert_int_equal(uvn_vq_dev_pop(dev, &ch[i], iov[i], 2), 1);
		assert_int_equal(pbuf_of(r, &ch[i], iov[i]), i);
	}
	return dev;
}

/*
 * Buffers 0..5 posted, 2 and 4 with a header (two descriptors: 8 slots in
 * all). The first backend takes 0..3 and completes 1, 3, 2 (0 it holds)
 * and dies. The driver reads the three and posts 6 and 7 (one descriptor
 * each): 7 goes into slot 0, where buffer 0 was, so only the kept copy
 * still knows it.
 */
static void pcrash_out_of_order(struct prig *r, unsigned *seen)
{
	struct uvn_vq_chain ch[4];
	struct iovec iov[4][2];
	struct uvn_vq_done done[NUM];
	struct uvn_vq_dev *dev;
	int k;

	dev = pstart(r, false, 6, 1u << 2 | 1u << 4, 4, ch, iov);
	uvn_vq_dev_push(dev, &ch[1], 1);
	uvn_vq_dev_push(dev, &ch[3], 3);
	uvn_vq_dev_push(dev, &ch[2], 2);
	uvn_vq_dev_flush(dev);
	uvn_vq_dev_destroy(dev); /* SIGKILL: chain 0 was never given back */
	k = uvn_vq_drv_get_used(r->drv, done, NUM);
	assert_int_equal(k, 3);
	for (int i = 0; i < k; i++)
		seen[(uintptr_t)done[i].token - 1]++;
	ppost(r, 6, false);
	ppost(r, 7, false);
	uvn_vq_drv_publish(r->drv);
}

static void test_packed_out_of_order(void **state)
{
	static struct prig r;
	unsigned got[NUM], n, seen[4 * NUM] = { 0 };
	const bool want[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };

	(void)state;
	pcrash_out_of_order(&r, seen);
	/* Elements for 1, 3, 2 took slots 0..3 (2 has two): the device's
	 * used position is 4, wrap counter 1; 0, 4, 5, 6, 7 are left. */
	assert_int_equal(uvn_packed_drv_resubmit(r.drv, r.mark, r.keys, &r.base), 5);
	assert_int_equal(r.base, 4 | 1u << 15);
	n = pdrain(&r, got, NUM);
	expect_got(got, n, order_0_4_7, 5); /* oldest first */
	pcheck_all_back(&r, seen, want, 8);
	pdone(&r);
}

/* What the test above guards against: the next backend at the used
 * position with the ring as the crash left it never sees buffer 0 and
 * takes completed buffer 3's descriptor again. */
static void test_packed_without_resubmit(void **state)
{
	static struct prig r;
	unsigned got[NUM], n, seen[4 * NUM] = { 0 };
	bool zero = false, three = false;

	(void)state;
	pcrash_out_of_order(&r, seen);
	r.base = 4 | 1u << 15;
	n = pdrain(&r, got, NUM);
	for (unsigned i = 0; i < n; i++) {
		zero |= got[i] == 0;
		three |= got[i] == 3;
	}
	assert_false(zero);
	assert_true(three);
	pdone(&r);
}

/*
 * Elements the driver has not read, and a batch the device had not
 * published when it died (its second element written, the first one's
 * flags not yet): the first are the driver's to read, the rest is
 * resubmitted and the stray element overwritten.
 */
static void test_packed_unread_and_torn_batch(void **state)
{
	static struct prig r;
	struct uvn_vq_chain ch[4];
	struct iovec iov[4][2];
	struct uvn_vq_dev *dev;
	unsigned seen[4 * NUM] = { 0 };
	const bool want[8] = { 1, 1, 1, 1, 1, 1, 0, 0 };

	(void)state;
	dev = pstart(&r, false, 6, 0, 4, ch, iov);
	uvn_vq_dev_push(dev, &ch[0], 1);
	uvn_vq_dev_flush(dev);
	uvn_vq_dev_push(dev, &ch[2], 1); /* first of the batch: flags held */
	uvn_vq_dev_push(dev, &ch[1], 1); /* written with its flags: stray */
	uvn_vq_dev_destroy(dev);
	assert_int_equal(uvn_packed_drv_resubmit(r.drv, r.mark, r.keys, &r.base), 5);
	assert_int_equal(r.base, 1 | 1u << 15);
	pexpect(&r, seen, 1, 5, want, 8);
}

/*
 * IN_ORDER: one element stands for a batch of three chains, the driver
 * has taken one of them (the element is read, two to go) when the device
 * dies holding two more; the ring wraps meanwhile, and the driver goes on
 * through the batch after the resubmission.
 */
static void test_packed_in_order_batch(void **state)
{
	static struct prig r;
	struct uvn_vq_chain ch[8];
	struct iovec iov[8][2];
	struct uvn_vq_done done[NUM];
	struct uvn_vq_dev *dev;
	unsigned seen[4 * NUM] = { 0 };
	const bool want[10] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 0 };
	int k;

	(void)state;
	dev = pstart(&r, true, 6, 1u << 1, 5, ch, iov);
	for (unsigned i = 0; i < 3; i++)
		uvn_vq_dev_push(dev, &ch[i], 1);
	uvn_vq_dev_flush(dev);
	uvn_vq_dev_destroy(dev); /* holds 3 and 4 */
	k = uvn_vq_drv_get_used(r.drv, done, 1);
	assert_int_equal(k, 1);
	seen[(uintptr_t)done[0].token - 1]++;
	/* Slots 7 and 0 free: 6 and 7 wrap there. */
	ppost(&r, 6, false);
	ppost(&r, 7, false);
	uvn_vq_drv_publish(r.drv);
	/* The element covers 0, 1 (two slots) and 2: the device's used
	 * position is slot 4; 3, 4, 5, 6, 7 are laid out from there. */
	assert_int_equal(uvn_packed_drv_resubmit(r.drv, r.mark, r.keys, &r.base), 5);
	assert_int_equal(r.base, 4 | 1u << 15);
	/* The batch goes on as it was: 1 comes back, 8 takes its slots. */
	k = uvn_vq_drv_get_used(r.drv, done, 1);
	assert_int_equal(k, 1);
	assert_int_equal((uintptr_t)done[0].token - 1, 1);
	seen[1]++;
	ppost(&r, 8, true);
	uvn_vq_drv_publish(r.drv);
	pexpect(&r, seen, 3, 6, want, 10);
}

/* Nothing kept, or a ring that does not add up: -1, nothing changed. */
static void test_packed_refused(void **state)
{
	static struct prig r;
	struct uvn_vq_drv_cfg c = { .num = NUM };
	struct uvn_vq_drv *plain;

	(void)state;
	memset(&r, 0, sizeof(r));
	psetup(&r, false);
	c.features = r.features;
	c.ring = aligned_alloc(4096, (r.lay.size + 4095) / 4096 * 4096);
	assert_int_equal(uvn_vq_drv_create(&c, &plain), 0);
	assert_int_equal(uvn_packed_drv_resubmit(plain, r.mark, r.keys, &r.base), -1);
	ppost(&r, 0, false);
	assert_int_equal(uvn_packed_drv_keep(r.drv), -1); /* too late: in flight */
	uvn_vq_drv_publish(r.drv);
	r.base = 0x1234;
	assert_int_equal(uvn_packed_drv_resubmit(r.drv, r.mark, r.keys, &r.base), 1);
	assert_int_equal(r.base, 1u << 15);
	uvn_vq_drv_destroy(plain);
	free(c.ring);
	pdone(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resubmit_out_of_order),
		cmocka_unit_test(test_without_resubmit),
		cmocka_unit_test(test_in_order_and_nonsense),
		cmocka_unit_test(test_packed_out_of_order),
		cmocka_unit_test(test_packed_without_resubmit),
		cmocka_unit_test(test_packed_unread_and_torn_batch),
		cmocka_unit_test(test_packed_in_order_batch),
		cmocka_unit_test(test_packed_refused),
	};

	return cmocka_run_group_tests_name("driver_resubmit", tests, NULL, NULL);
}
