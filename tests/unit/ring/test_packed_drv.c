/* SPDX-License-Identifier: MIT */
/*
 * Packed ring, driver half: descriptors and flags in memory (the head made
 * available last), kick decisions against the spec's event suppression,
 * used-buffer callbacks, a device that misbehaves (hand-written used
 * descriptors), teardown, and round trips against the device half over
 * queue sizes that are not powers of two.
 */
#include <endian.h>
#include <string.h>

#include "ring_test.h"

#define NEXT VRING_DESC_F_NEXT
#define WRITE VRING_DESC_F_WRITE
#define INDIRECT VRING_DESC_F_INDIRECT
#define WRAP15 (1u << 15)

static int tok[64];

static void check_desc(struct tq *q, unsigned pos, uint64_t addr, uint32_t len, uint16_t id,
		       uint16_t flags)
{
	const struct vring_packed_desc *d = pq_desc(q, pos);

	assert_int_equal(le64toh(d->addr), addr);
	assert_int_equal(le32toh(d->len), len);
	assert_int_equal(le16(d->id), id);
	assert_int_equal(le16(d->flags), flags);
}

/* A hand-written device: a used descriptor at @pos. */
static void used_put(struct tq *q, unsigned pos, uint16_t id, uint32_t len, bool wrap, bool write)
{
	struct vring_packed_desc *d = pq_desc(q, pos);

	d->id = htole16(id);
	d->len = htole32(len);
	__atomic_store_n(&d->flags,
			 htole16((uint16_t)((wrap ? PK_AVAIL | PK_USED : 0) | (write ? WRITE : 0))),
			 __ATOMIC_RELEASE);
}

static void add1(struct tq *q, uint64_t addr, uint32_t len, bool writable, void *token)
{
	struct uvn_sg sg = { addr, len };

	assert_int_equal(uvn_vq_drv_add(q->drv, &sg, writable ? 0 : 1, writable ? 1 : 0, token, 0),
			 0);
}

/* ------------------------------------------------------------ ring layout */

static void direct_layout(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_PACKED, TQ_DRV);
	const struct uvn_sg sg[3] = { { 0x1000, 10 }, { 0x2000, 20 }, { 0x3000, 30 } };

	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, 1, &tok[0], 0), 0);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 5);
	assert_int_equal(uvn_vq_drv_avail_state(q.drv), 3 | WRAP15);
	/* The head is not available before kick_prepare. */
	assert_int_equal(le16(pq_desc(&q, 0)->flags), 0);
	assert_true(uvn_vq_drv_kick_prepare(q.drv));
	check_desc(&q, 0, 0x1000, 10, 0, PK_AVAIL | NEXT);
	check_desc(&q, 1, 0x2000, 20, 0, PK_AVAIL | NEXT);
	check_desc(&q, 2, 0x3000, 30, 0, PK_AVAIL | WRITE);
	assert_false(uvn_vq_drv_kick_prepare(q.drv));
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify, 1);
	tq_teardown(&q);
}

static void indirect_layout(void **state)
{
	struct uvn_vq_done d[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_PACKED | F_INDIRECT, TQ_DRV);
	const struct uvn_sg sg[3] = { { 0x1000, 10 }, { 0x2000, 20 }, { 0x3000, 30 } };

	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 2, &tok[0], 0), 0);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 7);
	uvn_vq_drv_kick_prepare(q.drv);
	check_desc(&q, 0, q.pool_gpa, 48, 0, PK_AVAIL | INDIRECT);
	const struct vring_packed_desc *t = tm_ptr(&q.m, q.pool_gpa);

	assert_int_equal(le64toh(t[0].addr), 0x1000);
	assert_int_equal(le16(t[0].flags), 0);
	assert_int_equal(le32toh(t[1].len), 20);
	assert_int_equal(le16(t[1].flags), WRITE);
	assert_int_equal(le16(t[2].flags), WRITE);
	used_put(&q, 0, 0, 7, true, true);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
	assert_ptr_equal(d[0].token, &tok[0]);
	assert_int_equal(d[0].len, 7);
	assert_int_equal(q.pool_out, 0);
	tq_teardown(&q);
}

/* Across the end of the ring, the avail bits follow the wrap counter. */
static void wrap_flags(void **state)
{
	const struct uvn_sg sg[2] = { { 0x1000, 10 }, { 0x2000, 20 } };
	struct uvn_vq_done d[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 3, F_PACKED, TQ_DRV);
	add1(&q, 0x1000, 8, true, &tok[0]);
	uvn_vq_drv_kick_prepare(q.drv);
	used_put(&q, 0, 0, 8, true, true);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 1, &tok[1], 0), 0); /* 1, 2 */
	assert_int_equal(uvn_vq_drv_avail_state(q.drv), 0);
	add1(&q, 0x3000, 30, false, &tok[2]); /* 0, wrap 0 */
	assert_int_equal(uvn_vq_drv_avail_state(q.drv), 1);
	uvn_vq_drv_kick_prepare(q.drv);
	check_desc(&q, 1, 0x1000, 10, 0, PK_AVAIL | NEXT);
	check_desc(&q, 2, 0x2000, 20, 0, PK_AVAIL | WRITE);
	check_desc(&q, 0, 0x3000, 30, 1, PK_USED);
	/* Used elements on lap 0 have both bits clear. */
	used_put(&q, 1, 0, 5, true, true);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
	assert_ptr_equal(d[0].token, &tok[1]);
	assert_int_equal(d[0].len, 5);
	assert_false(uvn_vq_drv_has_used(q.drv));
	used_put(&q, 0, 1, 0, false, false);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
	assert_ptr_equal(d[0].token, &tok[2]);
	assert_false(uvn_vq_drv_has_used(q.drv));
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 3);
	tq_teardown(&q);
}

static void add_rejects(void **state)
{
	struct uvn_sg sg[6];
	struct tq q;

	(void)state;
	tq_setup(&q, 5, F_PACKED, TQ_DRV);
	for (unsigned i = 0; i < 6; i++)
		sg[i] = (struct uvn_sg){ 0x1000, 8 };
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 0, NULL, 0), -UVN_VQ_E_INVAL);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 3, 3, &tok[0], 0), -UVN_VQ_E_INVAL);
	sg[0].len = 0;
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 0, &tok[0], 0), -UVN_VQ_E_INVAL);
	sg[0].len = UINT32_MAX;
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, 0, &tok[0], 0), -UVN_VQ_E_INVAL);
	sg[0].len = 8;
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 4, 0, &tok[0], 0), 0);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, 0, &tok[1], 0), -UVN_VQ_E_NOSPC);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 0, 1, &tok[1], 0), 0);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 0);
	assert_int_equal(uvn_vq_drv_error(q.drv), 0);
	tq_teardown(&q);
}

/* ------------------------------------------------------------------ kicks */

static void kick_flags(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DRV);
	pq_device(&q)->flags = htole16(VRING_PACKED_EVENT_FLAG_DISABLE);
	add1(&q, 0x1000, 8, true, &tok[0]);
	assert_false(uvn_vq_drv_kick_prepare(q.drv));
	assert_int_equal(le16(pq_desc(&q, 0)->flags), PK_AVAIL | WRITE); /* published */
	pq_device(&q)->flags = htole16(VRING_PACKED_EVENT_FLAG_ENABLE);
	add1(&q, 0x1000, 8, true, &tok[1]);
	assert_true(uvn_vq_drv_kick_prepare(q.drv));
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify, 1);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify_suppressed, 1);
	tq_teardown(&q);
}

static void complete_all(struct tq *q, unsigned n)
{
	struct uvn_vq_done d[8];

	for (unsigned i = 0; i < n; i++) {
		struct uvn_vq_chain ch;
		struct iovec iov[4];

		assert_int_equal(uvn_vq_dev_pop(q->dev, &ch, iov, 4), 1);
		uvn_vq_dev_push(q->dev, &ch, 0);
	}
	uvn_vq_dev_flush(q->dev);
	assert_int_equal(uvn_vq_drv_get_used(q->drv, d, 8), n);
}

/*
 * RING_EVENT_FLAGS_DESC (EVENT_IDX): kick iff the descriptor at (off, wrap)
 * was made available by this kick, i.e. lies among the positions (with the
 * driver's wrap counter at each) the avail position moved over.
 */
static void kick_desc_event(void **state)
{
	const struct uvn_sg sg[2] = { { TM_GPA, 8 }, { TM_GPA, 8 } };
	const unsigned num = 5;
	unsigned kicks = 0, iters = 0;
	uint32_t rng = 9;
	struct tq q;

	(void)state;
	tq_setup(&q, num, F_PACKED | F_EVENT_IDX, TQ_DRV | TQ_DEV);
	pq_device(&q)->flags = htole16(VRING_PACKED_EVENT_FLAG_DESC);
	for (unsigned round = 0; round < 40; round++) {
		for (unsigned off = 0; off < num; off++) {
			for (unsigned w = 0; w < 2; w++) {
				uint16_t st = uvn_vq_drv_avail_state(q.drv);
				unsigned pos = st & 0x7fff, n1 = 1 + trand(&rng) % 2;
				unsigned n2 = 1 + trand(&rng) % 2;
				bool wrap = st >> 15, want = false;

				for (unsigned k = 0; k < n1 + n2; k++) {
					want |= pos == off && wrap == w;
					if (++pos == num) {
						pos = 0;
						wrap = !wrap;
					}
				}
				pq_device(&q)->off_wrap = htole16((uint16_t)(off | w << 15));
				assert_int_equal(uvn_vq_drv_add(q.drv, sg, 0, n1, &tok[0],
								UVN_VQ_ADD_NO_INDIRECT), 0);
				assert_int_equal(uvn_vq_drv_add(q.drv, sg, n2, 0, &tok[1],
								UVN_VQ_ADD_NO_INDIRECT), 0);
				assert_int_equal(uvn_vq_drv_kick_prepare(q.drv), want);
				kicks += want;
				iters++;
				complete_all(&q, 2);
			}
		}
	}
	assert_true(kicks > 0 && kicks < iters);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify, kicks);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify_suppressed, iters - kicks);
	tq_teardown(&q);
}

/* ------------------------------------------------------------- bad device */

static void two_in_flight(struct tq *q)
{
	const struct uvn_sg sg[2] = { { 0x1000, 10 }, { 0x2000, 20 } };

	assert_int_equal(uvn_vq_drv_add(q->drv, sg, 1, 1, &tok[0], 0), 0); /* id 0, pos 0-1 */
	add1(q, 0x3000, 30, false, &tok[1]);                               /* id 1, pos 2 */
	uvn_vq_drv_kick_prepare(q->drv);
}

/* Two chains in flight, then one used descriptor at position 0. */
struct bad_used {
	const char *name;
	uint16_t id;
	uint32_t len;
	int code; /* UVN_VQ_E_* */
};

static void run_bad_used(void **state)
{
	const struct bad_used *c = *state;
	struct uvn_vq_done d[2];
	struct tq q;

	tq_setup(&q, 5, F_PACKED, TQ_DRV);
	two_in_flight(&q);
	used_put(&q, 0, c->id, c->len, true, true);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), -c->code);
	expect_drv_broken(&q, c->code);
	tq_teardown(&q);
}

/* Used entries a device may not write: the error each must give. */
static const struct bad_used bad_used[] = {
	{ "used_id_out_of_range", 5, 0, UVN_VQ_E_USED_ID },
	{ "used_id_not_in_flight", 3, 0, UVN_VQ_E_USED_ID },
	{ "used_len_too_long", 0, 21, UVN_VQ_E_USED_LEN },
	{ "used_len_on_readable", 1, 1, UVN_VQ_E_USED_LEN },
};

/* Without WRITE a used descriptor's length is reserved: ignored, 0 written. */
static void used_len_without_write(void **state)
{
	struct uvn_vq_done d[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 5, F_PACKED, TQ_DRV);
	two_in_flight(&q);
	used_put(&q, 0, 1, 0xdeadbeef, true, false);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
	assert_ptr_equal(d[0].token, &tok[1]);
	assert_int_equal(d[0].len, 0);
	assert_int_equal(uvn_vq_drv_error(q.drv), 0);
	tq_teardown(&q);
}

static void used_twice(void **state)
{
	struct uvn_vq_done d[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 5, F_PACKED, TQ_DRV);
	two_in_flight(&q);
	used_put(&q, 0, 1, 0, true, false);
	used_put(&q, 1, 1, 0, true, false);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), -UVN_VQ_E_USED_ID);
	expect_drv_broken(&q, UVN_VQ_E_USED_ID);
	tq_teardown(&q);
}

/*
 * Chains added but not yet published are not the device's: a used
 * descriptor naming one breaks the queue before anything is taken back.
 * Taking it back used to free its id while its head stayed pending, so
 * adds went on pending heads past the end of the pending arrays.
 */
static void used_unpublished(void **state)
{
	struct uvn_vq_done d[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 5, F_PACKED, TQ_DRV);
	add1(&q, 0x1000, 10, true, &tok[0]); /* id 0, pos 0: published */
	uvn_vq_drv_kick_prepare(q.drv);
	add1(&q, 0x2000, 20, true, &tok[1]); /* id 1, pos 1: pending */
	used_put(&q, 0, 1, 20, true, true);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), -UVN_VQ_E_USED_ID);
	expect_drv_broken(&q, UVN_VQ_E_USED_ID);
	/* The pending head was never made available. */
	assert_int_equal(le16(pq_desc(&q, 1)->flags), 0);
	tq_teardown(&q);
}

/* The fuzzer's case: every chain pending, the device claims each at once. */
static void used_unpublished_fill(void **state)
{
	struct uvn_vq_done d[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 2, F_PACKED, TQ_DRV);
	for (unsigned i = 0; i < 4; i++) {
		uint16_t pos = uvn_vq_drv_avail_state(q.drv) & 0x7fff;
		int r = uvn_vq_drv_add_one(q.drv, 0x1000, 10, true, &tok[i]);

		if (r < 0) {
			assert_int_equal(r, -UVN_VQ_E_USED_ID);
			break;
		}
		used_put(&q, pos, le16(pq_desc(&q, pos)->id), 10, true, true);
		assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), -UVN_VQ_E_USED_ID);
	}
	expect_drv_broken(&q, UVN_VQ_E_USED_ID);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 1);
	assert_ptr_equal(uvn_vq_drv_detach_unused(q.drv), &tok[0]);
	assert_null(uvn_vq_drv_detach_unused(q.drv));
	tq_teardown(&q);
}

/* IN_ORDER: a used id stands for every chain up to it; it may not reach
 * past what is published, even with published chains in front. */
static void in_order_used_unpublished(void **state)
{
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 6, F_PACKED | F_IN_ORDER, TQ_DRV);
	add1(&q, 0x1000, 10, true, &tok[0]); /* id 0, pos 0 */
	add1(&q, 0x2000, 20, true, &tok[1]); /* id 1, pos 1 */
	uvn_vq_drv_kick_prepare(q.drv);
	add1(&q, 0x3000, 30, true, &tok[2]); /* id 2, pos 2: pending */
	used_put(&q, 0, 2, 30, true, true);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), -UVN_VQ_E_USED_ID);
	expect_drv_broken(&q, UVN_VQ_E_USED_ID);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 3);
	tq_teardown(&q);
}

/*
 * Publishes are counted in 16 bits: a buffer in flight while the count
 * goes round (four of them, each where a plain wrap would meet the count
 * it was published at) is still the device's to return, and a chain
 * added after that is still not.
 */
static void used_after_publish_count_wraps(void **state)
{
	const unsigned LAST = 65541;
	struct uvn_vq_done d[2];
	unsigned dev_pos = 0, old = 0;
	bool dev_wrap = true;
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_PACKED, TQ_DRV);
	for (unsigned i = 0; i < 4; i++) { /* ids 0-3, one publish each */
		add1(&q, 0x1000, 10, true, &tok[i]);
		uvn_vq_drv_kick_prepare(q.drv);
	}
	for (unsigned k = 1; k <= LAST; k++) {
		uint16_t pos = uvn_vq_drv_avail_state(q.drv) & 0x7fff, id;

		add1(&q, 0x2000, 20, true, &tok[4]);
		id = le16(pq_desc(&q, pos)->id);
		if (k == LAST) {
			/* Pending: not the device's, however long the count ran. */
			used_put(&q, dev_pos, id, 0, dev_wrap, true);
			assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), -UVN_VQ_E_USED_ID);
			expect_drv_broken(&q, UVN_VQ_E_USED_ID);
			break;
		}
		uvn_vq_drv_kick_prepare(q.drv);
		used_put(&q, dev_pos, id, 20, dev_wrap, true);
		if (++dev_pos == 8) {
			dev_pos = 0;
			dev_wrap = !dev_wrap;
		}
		assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
		assert_ptr_equal(d[0].token, &tok[4]);
		if (k >= 65532 && old < 4) {
			/* 4 + k publishes so far: counting from 1, a plain u16
			 * count is back at old + 1, the one id `old` went in. */
			used_put(&q, dev_pos, (uint16_t)old, 10, dev_wrap, true);
			if (++dev_pos == 8) {
				dev_pos = 0;
				dev_wrap = !dev_wrap;
			}
			assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
			assert_ptr_equal(d[0].token, &tok[old]);
			old++;
		}
	}
	assert_int_equal(old, 4);
	tq_teardown(&q);
}

/* Teardown takes pending chains back too, and they are never published. */
static void detach_unused_pending(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 2, F_PACKED, TQ_DRV);
	add1(&q, 0x1000, 10, true, &tok[0]);
	add1(&q, 0x2000, 20, true, &tok[1]);
	assert_ptr_equal(uvn_vq_drv_detach_unused(q.drv), &tok[0]);
	assert_ptr_equal(uvn_vq_drv_detach_unused(q.drv), &tok[1]);
	assert_null(uvn_vq_drv_detach_unused(q.drv));
	assert_false(uvn_vq_drv_kick_prepare(q.drv));
	assert_int_equal(le16(pq_desc(&q, 0)->flags), 0);
	assert_int_equal(le16(pq_desc(&q, 1)->flags), 0);
	/* Re-adding after teardown keeps to the ring (ASan: pend arrays). */
	add1(&q, 0x1000, 10, true, &tok[2]);
	add1(&q, 0x2000, 20, true, &tok[3]);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x3000, 10, true, &tok[4]), -UVN_VQ_E_NOSPC);
	tq_teardown(&q);
}

/* ------------------------------------------------------------ callbacks */

static void cb_flags(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DRV);
	uvn_vq_drv_disable_cb(q.drv);
	assert_int_equal(le16(pq_driver(&q)->flags), VRING_PACKED_EVENT_FLAG_DISABLE);
	assert_true(uvn_vq_drv_enable_cb(q.drv));
	assert_int_equal(le16(pq_driver(&q)->flags), VRING_PACKED_EVENT_FLAG_ENABLE);
	add1(&q, 0x1000, 8, true, &tok[0]);
	uvn_vq_drv_kick_prepare(q.drv);
	uvn_vq_drv_disable_cb(q.drv);
	used_put(&q, 0, 0, 1, true, true);
	assert_false(uvn_vq_drv_enable_cb(q.drv));
	assert_int_equal(le16(pq_driver(&q)->flags), VRING_PACKED_EVENT_FLAG_ENABLE);
	tq_teardown(&q);
}

static void cb_desc_event(void **state)
{
	struct uvn_vq_done d[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 7, F_PACKED | F_EVENT_IDX, TQ_DRV | TQ_DEV);
	for (unsigned i = 0; i < 5; i++)
		add1(&q, TM_GPA, 8, true, &tok[i]);
	uvn_vq_drv_kick_prepare(q.drv);
	complete_all(&q, 5); /* driver's used position: 5, wrap 1 */
	assert_true(uvn_vq_drv_enable_cb(q.drv));
	assert_int_equal(le16(pq_driver(&q)->flags), VRING_PACKED_EVENT_FLAG_DESC);
	assert_int_equal(le16(pq_driver(&q)->off_wrap), 5 | WRAP15);
	uvn_vq_drv_disable_cb(q.drv);
	assert_int_equal(le16(pq_driver(&q)->flags), VRING_PACKED_EVENT_FLAG_DISABLE);
	/* Delayed: 3/4 of the 4 descriptors in flight ahead, over the wrap. */
	for (unsigned i = 0; i < 4; i++)
		add1(&q, TM_GPA, 8, true, &tok[i]);
	uvn_vq_drv_kick_prepare(q.drv);
	assert_true(uvn_vq_drv_enable_cb_delayed(q.drv));
	assert_int_equal(le16(pq_driver(&q)->off_wrap), 1); /* 5 + 3 - 7, wrap 0 */
	for (unsigned i = 0; i < 3; i++) {
		struct uvn_vq_chain ch;
		struct iovec iov[1];

		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 1), 1);
		uvn_vq_dev_push(q.dev, &ch, 0);
		uvn_vq_dev_flush(q.dev);
	}
	assert_true(uvn_vq_drv_enable_cb_delayed(q.drv)); /* position 1 not used yet */
	assert_false(uvn_vq_drv_enable_cb(q.drv));
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 8), 3);
	complete_all(&q, 1);
	assert_true(uvn_vq_drv_enable_cb(q.drv));
	tq_teardown(&q);
}

/*
 * Delayed callbacks when the device already went past the event position
 * before it saw the event: it will not notify for it, so enable must say
 * "used buffers arrived" even though the descriptor at the event position
 * itself was skipped over (middle of a chain, or of an in-order batch).
 */
static void cb_delayed_event_skipped(uint64_t features, bool batch)
{
	const struct uvn_sg sg[3] = { { TM_GPA, 8 }, { TM_GPA, 8 }, { TM_GPA, 8 } };
	const unsigned shape[2][4] = { { 2, 3, 1, 0 }, { 1, 1, 1, 1 } };
	struct tq q;

	tq_setup(&q, 8, F_PACKED | F_EVENT_IDX | features, TQ_DRV | TQ_DEV);
	uvn_vq_dev_set_batch_used(q.dev, batch);
	for (unsigned i = 0; i < 4 && shape[batch][i]; i++)
		assert_int_equal(uvn_vq_drv_add(q.drv, sg, 0, shape[batch][i], &tok[i],
						UVN_VQ_ADD_NO_INDIRECT), 0);
	uvn_vq_drv_kick_prepare(q.drv);
	uvn_vq_drv_disable_cb(q.drv);
	/* The device completes all but the last chain while told not to notify. */
	unsigned done = batch ? 4 : 2;

	for (unsigned i = 0; i < done; i++) {
		struct uvn_vq_chain ch;
		struct iovec iov[4];

		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
		uvn_vq_dev_push(q.dev, &ch, 0);
	}
	assert_false(uvn_vq_dev_flush(q.dev));
	/* 6 (or 4) descriptors in flight: the event 4 (or 3) ahead, which the
	 * device's used position (5, or 4) has passed without a used element
	 * there. */
	assert_false(uvn_vq_drv_enable_cb_delayed(q.drv));
	assert_int_equal(le16(pq_driver(&q)->off_wrap), batch ? 3 | WRAP15 : 4 | WRAP15);
	struct uvn_vq_done d[4];

	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), done);
	tq_teardown(&q);
}

static void cb_delayed_event_in_chain(void **state)
{
	(void)state;
	cb_delayed_event_skipped(0, false);
}

static void cb_delayed_event_in_batch(void **state)
{
	(void)state;
	cb_delayed_event_skipped(F_IN_ORDER, true);
}

/* -------------------------------------------------------------- teardown */

static void detach_unused(uint64_t features)
{
	const struct uvn_sg sg[3] = { { 0x1000, 10 }, { 0x2000, 20 }, { 0x3000, 30 } };
	bool seen[8] = { false };
	struct tq q;
	void *t;

	tq_setup(&q, 13, F_PACKED | F_INDIRECT | features, TQ_DRV);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 1 + i % 2, &tok[i],
						i < 3 ? UVN_VQ_ADD_NO_INDIRECT : 0), 0);
	uvn_vq_drv_kick_prepare(q.drv);
	for (unsigned i = 0; i < 6; i++) {
		t = uvn_vq_drv_detach_unused(q.drv);
		assert_true((int *)t >= tok && (int *)t < tok + 6);
		assert_false(seen[(int *)t - tok]);
		seen[(int *)t - tok] = true;
	}
	assert_null(uvn_vq_drv_detach_unused(q.drv));
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 13);
	assert_int_equal(q.pool_out, 0);
	tq_teardown(&q);
}

static void detach_unused_plain(void **state)
{
	(void)state;
	detach_unused(0);
}

static void detach_unused_in_order(void **state)
{
	(void)state;
	detach_unused(F_IN_ORDER);
}

/* -------------------------------------------------------------- IN_ORDER */

/* One used descriptor with the batch's last id at its first position;
 * skipped buffers report their full writable length. */
static void in_order_batch(void **state)
{
	const struct uvn_sg sg[2] = { { 0x1000, 10 }, { 0x2000, 20 } };
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 6, F_PACKED | F_IN_ORDER, TQ_DRV);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 0, 2, &tok[0], 0), 0); /* id 0, 0-1 */
	add1(&q, 0x3000, 30, true, &tok[1]);                               /* id 1, 2 */
	add1(&q, 0x4000, 40, true, &tok[2]);                               /* id 2, 3 */
	add1(&q, 0x5000, 50, true, &tok[3]);                               /* id 3, 4 */
	uvn_vq_drv_kick_prepare(q.drv);
	used_put(&q, 0, 2, 5, true, true);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 1), 1);
	assert_ptr_equal(d[0].token, &tok[0]);
	assert_int_equal(d[0].len, 30);
	assert_true(uvn_vq_drv_has_used(q.drv));
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 2);
	assert_ptr_equal(d[0].token, &tok[1]);
	assert_int_equal(d[0].len, 30);
	assert_ptr_equal(d[1].token, &tok[2]);
	assert_int_equal(d[1].len, 5);
	assert_false(uvn_vq_drv_has_used(q.drv));
	used_put(&q, 4, 3, 50, true, true);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 1);
	assert_ptr_equal(d[0].token, &tok[3]);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 6);
	tq_teardown(&q);
}

/* ------------------------------------------------------------ round trips */

/* Queue sizes, features and chain shapes: see roundtrip(). */
static const struct rt_case roundtrips[] = {
	{ "roundtrip_size_1", 1, F_PACKED, { .chains = 5000, .max_segs = 1, .seed = 11 } },
	{ "roundtrip_size_3", 3, F_PACKED | F_INDIRECT,
	  { .chains = 30000, .max_segs = 3, .shuffle = true, .unpop = true, .seed = 12 } },
	{ "roundtrip_size_255", 255, F_PACKED | F_INDIRECT | F_EVENT_IDX,
	  { .chains = 50000, .max_segs = 6, .shuffle = true, .seed = 13 } },
	{ "roundtrip_size_256", 256, F_PACKED,
	  { .chains = 30000, .max_segs = 6, .shuffle = true, .unpop = true, .seed = 14 } },
	{ "roundtrip_size_32768", 32768, F_PACKED | F_INDIRECT,
	  { .chains = 80000, .max_segs = 3, .shuffle = true, .seed = 15 } },
	/* IN_ORDER on an odd size past 65536 buffers: the order of ids in flight
	 * must survive the u16 wrap of the buffer count. */
	{ "roundtrip_in_order", 3, F_PACKED | F_IN_ORDER,
	  { .chains = 70000, .max_segs = 1, .unpop = true, .seed = 16 } },
	{ "roundtrip_in_order_batch", 7, F_PACKED | F_IN_ORDER | F_INDIRECT | F_EVENT_IDX,
	  { .chains = 70000, .max_segs = 3, .batch = true, .seed = 17 } },
};

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(direct_layout),
		cmocka_unit_test(indirect_layout),
		cmocka_unit_test(wrap_flags),
		cmocka_unit_test(add_rejects),
		cmocka_unit_test(kick_flags),
		cmocka_unit_test(kick_desc_event),
		cmocka_unit_test(used_len_without_write),
		cmocka_unit_test(used_twice),
		cmocka_unit_test(used_unpublished),
		cmocka_unit_test(used_unpublished_fill),
		cmocka_unit_test(in_order_used_unpublished),
		cmocka_unit_test(used_after_publish_count_wraps),
		cmocka_unit_test(detach_unused_pending),
		cmocka_unit_test(cb_flags),
		cmocka_unit_test(cb_desc_event),
		cmocka_unit_test(cb_delayed_event_in_chain),
		cmocka_unit_test(cb_delayed_event_in_batch),
		cmocka_unit_test(detach_unused_plain),
		cmocka_unit_test(detach_unused_in_order),
		cmocka_unit_test(in_order_batch),
	};
	static const struct test_table tables[] = {
		TEST_TABLE(bad_used, run_bad_used),
		TEST_TABLE(roundtrips, run_roundtrip),
	};

	return run_test_tables(tests, NELEM(tests), tables, NELEM(tables));
}
