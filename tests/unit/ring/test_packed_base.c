/* SPDX-License-Identifier: MIT */
/*
 * uvn_packed_dev_check_base(): may a device start a packed ring at the
 * base a frontend gave? Rings written by the library's own driver half and
 * served by its device half: fresh rings and bases a device stopped at
 * pass; the base of a fresh ring given for a ring that has run (QEMU after
 * its backend was restarted) is refused, the queue broken. Both halves in
 * process, buffers in plain memory.
 */
#include <string.h>

#include "ring_test.h"

/* lib/ring/packed_dev.c (its one caller is lib/vhost_user/ring_msgs.c). */
const char *uvn_packed_dev_check_base(struct uvn_vq_dev *vq, bool fresh);

#define NUM 8u
#define BUF 64u
#define FEATURES (1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_F_RING_PACKED)
#define F_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)

/* The ring fixture with buffers in plain memory (TQ_HOST). */
struct rig {
	struct tq q;
	uint8_t bufs[NUM][BUF];
	unsigned next_buf;
	unsigned done;  /* chains (one descriptor each) completed so far */
};

/* The device's position after r->done chains: position | wrap << 15. */
static uint16_t done_base(const struct rig *r)
{
	return (uint16_t)(r->done % NUM | ((r->done / NUM) % 2 ? 0 : 1u << 15));
}

static void setup(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	tq_setup(&r->q, NUM, FEATURES, TQ_DRV | TQ_NO_ALLOC | TQ_HOST);
}

static void teardown_rig(struct rig *r)
{
	tq_teardown(&r->q);
}

/* A device at avail @a and used @u (position | wrap << 15). */
static struct uvn_vq_dev *dev_at(struct rig *r, uint16_t a, uint16_t u)
{
	struct uvn_vq_dev_cfg c = tq_dev_cfg(&r->q, a & 0x7fff, a >> 15, u & 0x7fff, u >> 15);
	struct uvn_vq_dev *d = NULL;

	assert_int_equal(uvn_vq_dev_create(&c, &d), 0);
	return d;
}

static void post(struct rig *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++, r->next_buf++)
		tq_give(&r->q, r->bufs[r->next_buf % NUM], BUF, true);
	uvn_vq_drv_publish(r->q.drv);
}

/*
 * A device from where the last one stopped completes @n chains one by one;
 * the driver takes each back and, when @refill, posts another (an rx ring
 * kept full), else posts each just before (a tx ring).
 */
static void run(struct rig *r, unsigned n, bool refill)
{
	struct uvn_vq_dev *dev = dev_at(r, done_base(r), done_base(r));
	struct uvn_vq_done done;
	struct uvn_vq_chain ch;
	struct iovec iov;

	for (unsigned i = 0; i < n; i++) {
		if (!refill)
			post(r, 1);
		assert_int_equal(uvn_vq_dev_pop(dev, &ch, &iov, 1), 1);
		uvn_vq_dev_push(dev, &ch, 1);
		uvn_vq_dev_flush(dev);
		assert_int_equal(tq_take(&r->q, &done, 1), 1);
		if (refill)
			post(r, 1);
		r->done++;
	}
	uvn_vq_dev_destroy(dev);
}

/* Check a new device at @base (both halves); @return its verdict. */
static const char *check(struct rig *r, uint16_t base, bool fresh, bool *broken)
{
	struct uvn_vq_dev *dev = dev_at(r, base, base);
	const char *why = uvn_packed_dev_check_base(dev, fresh);
	struct uvn_vq_chain ch;
	struct iovec iov;

	*broken = uvn_vq_dev_pop(dev, &ch, &iov, 1) == -UVN_VQ_E_BASE;
	uvn_vq_dev_destroy(dev);
	return why;
}

static void expect_ok(struct rig *r, uint16_t base, bool fresh)
{
	bool broken;

	assert_null(check(r, base, fresh, &broken));
	assert_false(broken);
}

static void expect_refused(struct rig *r, uint16_t base, bool fresh)
{
	bool broken;

	assert_non_null(check(r, base, fresh, &broken));
	assert_true(broken);
}

/* A fresh ring: a few chains (tx), or full (rx). */
static void test_fresh(void **state)
{
	static struct rig r;

	(void)state;
	setup(&r);
	expect_ok(&r, 1u << 15, true);
	post(&r, 3);
	expect_ok(&r, 1u << 15, true);
	post(&r, NUM - 3);
	expect_ok(&r, 1u << 15, true);
	teardown_rig(&r);
}

/* A tx ring that has run: the fresh base is behind this lap's used
 * elements; the device's own position passes, also as position 0 two
 * laps on (everything done, the lap before all used elements). */
static void test_tx_ring_ran(void **state)
{
	static struct rig r;

	(void)state;
	setup(&r);
	run(&r, 5, false);
	expect_refused(&r, 1u << 15, true);
	expect_ok(&r, 5 | 1u << 15, false);
	run(&r, 2 * NUM - 5, false);
	assert_int_equal(done_base(&r), 1u << 15);
	expect_ok(&r, 1u << 15, true);
	teardown_rig(&r);
}

/* An rx ring kept full: 12 chains done, the driver is at slot 4 of the
 * third lap; the fresh base would skip the chains of the lap before,
 * which nothing here can tell from done ones. The device's position (4,
 * wrap 0) passes; so does the fresh base when the ring really is there
 * (16 done: two full laps, every chain waiting in this lap). */
static void test_rx_ring_full(void **state)
{
	static struct rig r;

	(void)state;
	setup(&r);
	post(&r, NUM);
	run(&r, 12, true);
	expect_refused(&r, 1u << 15, true);
	assert_int_equal(done_base(&r), 4);
	expect_ok(&r, 4, false);
	teardown_rig(&r);
	setup(&r);
	post(&r, NUM);
	run(&r, 2 * NUM, true);
	expect_ok(&r, 1u << 15, true);
	teardown_rig(&r);
}

/* The driver in the other lap's parity at slot 0 (3 done, ring full):
 * slots 3..7 are chains of this lap beyond the base; the device's
 * position (3, wrap 1) passes. */
static void test_wrong_lap(void **state)
{
	static struct rig r;

	(void)state;
	setup(&r);
	post(&r, NUM);
	run(&r, 3, true);
	expect_refused(&r, 1u << 15, false);
	expect_ok(&r, 3 | 1u << 15, false);
	teardown_rig(&r);
}

/* A chain the driver is writing (tails before its head) is let through;
 * one more slot of this lap after it is not. A held queue (halves apart)
 * is taken as it is. */
static void test_chain_being_written(void **state)
{
	static struct rig r;
	struct vring_packed_desc *d;
	struct uvn_vq_dev *dev;

	(void)state;
	setup(&r);
	post(&r, 2);
	d = pq_desc(&r.q, 0);
	d[3].flags = htole16(F_AVAIL | VRING_DESC_F_NEXT);
	d[4].flags = htole16(F_AVAIL);
	expect_ok(&r, 1u << 15, true);
	d[6].flags = htole16(F_AVAIL);
	expect_refused(&r, 1u << 15, true);
	dev = dev_at(&r, 1 | 1u << 15, 1u << 15);
	assert_null(uvn_packed_dev_check_base(dev, false));
	uvn_vq_dev_destroy(dev);
	teardown_rig(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh),
		cmocka_unit_test(test_tx_ring_ran),
		cmocka_unit_test(test_rx_ring_full),
		cmocka_unit_test(test_wrong_lap),
		cmocka_unit_test(test_chain_being_written),
	};

	return cmocka_run_group_tests_name("packed_base", tests, NULL, NULL);
}
