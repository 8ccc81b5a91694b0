/* SPDX-License-Identifier: MIT */
/*
 * Split ring, driver half: what it writes into the ring (checked in memory),
 * kick decisions against the spec's rules, used-buffer callbacks, a device
 * that misbehaves (hand-written used ring), teardown, and round trips
 * against the device half over sizes 1..32768 and the u16 index wrap.
 */
#include <endian.h>
#include <string.h>

#include "ring_test.h"

#define NEXT VRING_DESC_F_NEXT
#define WRITE VRING_DESC_F_WRITE
#define INDIRECT VRING_DESC_F_INDIRECT

static int tok[64]; /* tokens: &tok[i] */

static void check_desc(const struct vring_desc *d, uint64_t addr, uint32_t len, uint16_t flags)
{
	assert_int_equal(le64toh(d->addr), addr);
	assert_int_equal(le32toh(d->len), len);
	assert_int_equal(le16(d->flags), flags);
}

/* A hand-written device: used entry at @slot, then the index. */
static void used_put(struct tq *q, uint16_t slot, uint32_t id, uint32_t len)
{
	struct vring_used_elem *e = &sq_used(q)->ring[slot & (q->num - 1)];

	e->id = htole32(id);
	e->len = htole32(len);
}

static void used_idx(struct tq *q, uint16_t idx)
{
	__atomic_store_n(&sq_used(q)->idx, htole16(idx), __ATOMIC_RELEASE);
}

static uint16_t avail_head(struct tq *q, uint16_t i)
{
	return le16(sq_avail(q)->ring[i & (q->num - 1)]);
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
	tq_setup(&q, 8, 0, TQ_DRV);
	const struct uvn_sg sg[3] = { { 0x1000, 10 }, { 0x2000, 20 }, { 0x3000, 30 } };

	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, 1, &tok[0], 0), 0);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 5);
	check_desc(sq_desc(&q, 0), 0x1000, 10, NEXT);
	assert_int_equal(le16(sq_desc(&q, 0)->next), 1);
	check_desc(sq_desc(&q, 1), 0x2000, 20, NEXT);
	assert_int_equal(le16(sq_desc(&q, 1)->next), 2);
	check_desc(sq_desc(&q, 2), 0x3000, 30, WRITE);
	assert_int_equal(avail_head(&q, 0), 0);
	assert_int_equal(le16(sq_avail(&q)->idx), 0); /* not published yet */
	assert_int_equal(uvn_vq_drv_avail_state(q.drv), 1);
	assert_true(uvn_vq_drv_kick_prepare(q.drv));
	assert_int_equal(le16(sq_avail(&q)->idx), 1);
	assert_false(uvn_vq_drv_kick_prepare(q.drv)); /* nothing new */
	assert_int_equal(uvn_vq_drv_stats(q.drv)->bufs, 1);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify, 1);
	tq_teardown(&q);
}

static void indirect_layout(void **state)
{
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_INDIRECT, TQ_DRV);
	const struct uvn_sg sg[3] = { { 0x1000, 10 }, { 0x2000, 20 }, { 0x3000, 30 } };

	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 2, &tok[0], 0), 0);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 7);
	assert_int_equal(q.pool_out, 1);
	check_desc(sq_desc(&q, 0), q.pool_gpa, 48, INDIRECT);
	struct vring_desc *t = tm_ptr(&q.m, q.pool_gpa);

	check_desc(&t[0], 0x1000, 10, NEXT);
	assert_int_equal(le16(t[0].next), 1);
	check_desc(&t[1], 0x2000, 20, NEXT | WRITE);
	assert_int_equal(le16(t[1].next), 2);
	check_desc(&t[2], 0x3000, 30, WRITE);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->indirect, 1);

	/* Not for one segment, not when asked, not when the allocator fails. */
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 0, &tok[1], 0), 0);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 1, &tok[2], UVN_VQ_ADD_NO_INDIRECT), 0);
	q.pool_off = true;
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, 0, &tok[3], 0), 0);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 7 - 1 - 2 - 2);
	assert_int_equal(q.pool_out, 1);
	check_desc(sq_desc(&q, 1), 0x1000, 10, 0);

	/* Reclaiming the chain returns its table. */
	uvn_vq_drv_kick_prepare(q.drv);
	used_put(&q, 0, 0, 50);
	used_idx(&q, 1);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 1);
	assert_ptr_equal(d[0].token, &tok[0]);
	assert_int_equal(d[0].len, 50);
	assert_int_equal(q.pool_out, 0);
	tq_teardown(&q);
}

static void add_rejects(void **state)
{
	struct uvn_sg sg[9];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, 0, TQ_DRV);
	for (unsigned i = 0; i < 9; i++)
		sg[i] = (struct uvn_sg){ 0x1000, 8 };
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 0, NULL, 0), -UVN_VQ_E_INVAL);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 0, 0, &tok[0], 0), -UVN_VQ_E_INVAL);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 5, 4, &tok[0], 0), -UVN_VQ_E_INVAL);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, UINT32_MAX, &tok[0], 0), -UVN_VQ_E_INVAL);
	/* Zero-length segments: the device would reject the chain. */
	sg[1].len = 0;
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 1, &tok[0], 0), -UVN_VQ_E_INVAL);
	/* More than 2^32 - 1 bytes in total (spec 2.7.5). */
	sg[0].len = UINT32_MAX;
	sg[1].len = 1;
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 1, &tok[0], 0), -UVN_VQ_E_INVAL);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, 0, &tok[0], 0), -UVN_VQ_E_INVAL);
	sg[0].len = 8;
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 8);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 6, 0, &tok[0], 0), 0);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 3, 0, &tok[1], 0), -UVN_VQ_E_NOSPC);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, 0, &tok[1], 0), 0);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 0, &tok[2], 0), -UVN_VQ_E_NOSPC);
	assert_int_equal(uvn_vq_drv_error(q.drv), 0);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->bufs, 2);
	tq_teardown(&q);
}

/* ------------------------------------------------------------------ kicks */

static void kick_no_notify_flag(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DRV);
	sq_used(&q)->flags = htole16(VRING_USED_F_NO_NOTIFY);
	add1(&q, 0x1000, 8, false, &tok[0]);
	assert_false(uvn_vq_drv_kick_prepare(q.drv));
	assert_int_equal(le16(sq_avail(&q)->idx), 1); /* published all the same */
	sq_used(&q)->flags = 0;
	add1(&q, 0x1000, 8, false, &tok[1]);
	assert_true(uvn_vq_drv_kick_prepare(q.drv));
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify, 1);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify_suppressed, 1);
	tq_teardown(&q);
}

/* Complete @n single buffers through the device half. */
static void pump(struct tq *q, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct uvn_vq_chain ch;
		struct uvn_vq_done d;
		struct iovec iov[1];

		add1(q, TM_GPA, 8, true, &tok[0]);
		uvn_vq_drv_kick_prepare(q->drv);
		assert_int_equal(uvn_vq_dev_pop(q->dev, &ch, iov, 1), 1);
		uvn_vq_dev_push(q->dev, &ch, 0);
		uvn_vq_dev_flush(q->dev);
		assert_int_equal(uvn_vq_drv_get_used(q->drv, &d, 1), 1);
	}
}

/* With EVENT_IDX: kick iff an entry was written at index avail_event
 * (spec 2.7.10), the NO_NOTIFY flag ignored; across the u16 wrap. */
static void kick_avail_event(void **state)
{
	struct tq q;
	unsigned kicks = 0, iters = 0;

	(void)state;
	tq_setup(&q, 8, F_EVENT_IDX, TQ_DRV | TQ_DEV);
	pump(&q, 65530);
	sq_used(&q)->flags = htole16(VRING_USED_F_NO_NOTIFY);
	uint64_t kicks0 = uvn_vq_drv_stats(q.drv)->notify;
	uint64_t quiet0 = uvn_vq_drv_stats(q.drv)->notify_suppressed;
	for (unsigned k = 1; k <= 4; k++) {
		for (int off = -3; off <= 6; off++) {
			uint16_t old = uvn_vq_drv_avail_state(q.drv), ev = (uint16_t)(old + off);
			bool want = (uint16_t)(ev - old) < k;

			for (unsigned j = 0; j < k; j++)
				add1(&q, TM_GPA, 8, true, &tok[j]);
			*sq_avail_event(&q) = htole16(ev);
			assert_int_equal(uvn_vq_drv_kick_prepare(q.drv), want);
			kicks += want;
			iters++;
			for (unsigned j = 0; j < k; j++) {
				struct uvn_vq_chain ch;
				struct iovec iov[1];

				assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 1), 1);
				uvn_vq_dev_push(q.dev, &ch, 0);
			}
			uvn_vq_dev_flush(q.dev);
			struct uvn_vq_done d[4];

			assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), k);
		}
	}
	assert_true(uvn_vq_drv_avail_state(q.drv) < 100); /* wrapped */
	assert_true(kicks > 0 && kicks < iters);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify - kicks0, kicks);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->notify_suppressed - quiet0, iters - kicks);
	tq_teardown(&q);
}

/* --------------------------------------------------------- reclaiming */

static void get_used_out_of_order(void **state)
{
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DRV);
	add1(&q, 0x1000, 100, true, &tok[0]);
	add1(&q, 0x2000, 200, true, &tok[1]);
	uvn_vq_drv_kick_prepare(q.drv);
	assert_false(uvn_vq_drv_has_used(q.drv));
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 0);
	used_put(&q, 0, avail_head(&q, 1), 150);
	used_put(&q, 1, avail_head(&q, 0), 0);
	used_idx(&q, 2);
	assert_true(uvn_vq_drv_has_used(q.drv));
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 1), 1);
	assert_ptr_equal(d[0].token, &tok[1]);
	assert_int_equal(d[0].len, 150);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 1);
	assert_ptr_equal(d[0].token, &tok[0]);
	assert_int_equal(d[0].len, 0);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 4);
	assert_int_equal(uvn_vq_drv_stats(q.drv)->used, 2);
	tq_teardown(&q);
}

/* ------------------------------------------------------------- bad device */

static void three_in_flight(struct tq *q)
{
	const struct uvn_sg sg[3] = { { 0x1000, 10 }, { 0x2000, 20 }, { 0x3000, 30 } };

	assert_int_equal(uvn_vq_drv_add(q->drv, sg, 1, 2, &tok[0], 0), 0); /* descs 0-2 */
	add1(q, 0x4000, 40, true, &tok[1]);
	add1(q, 0x5000, 50, false, &tok[2]);
	uvn_vq_drv_kick_prepare(q->drv);
}

/* Three chains in flight, then one used entry and a used index. */
struct bad_used {
	const char *name;
	uint64_t features;
	uint32_t id, len; /* the used entry */
	uint16_t idx;     /* the used index */
	int code;         /* UVN_VQ_E_* */
};

static void run_bad_used(void **state)
{
	const struct bad_used *c = *state;
	struct uvn_vq_done d[4];
	struct tq q;

	tq_setup(&q, 8, c->features, TQ_DRV);
	three_in_flight(&q);
	used_put(&q, 0, c->id, c->len);
	used_idx(&q, c->idx);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), -c->code);
	expect_drv_broken(&q, c->code);
	tq_teardown(&q);
}

/* Used entries a device may not write: the error each must give. */
static const struct bad_used bad_used[] = {
	{ "used_id_out_of_range", 0, 8, 0, 1, UVN_VQ_E_USED_ID },
	{ "used_id_huge", 0, 0x10000, 0, 1, UVN_VQ_E_USED_ID },
	{ "used_id_never_added", 0, 6, 0, 1, UVN_VQ_E_USED_ID },
	/* Descriptor 1 is in flight, but in the middle of chain 0. */
	{ "used_id_not_a_head", 0, 1, 0, 1, UVN_VQ_E_USED_ID },
	{ "used_len_too_long", 0, 0, 51, 1, UVN_VQ_E_USED_LEN },
	/* A readable-only buffer: any length but 0 is a lie. */
	{ "used_len_on_readable", 0, 4, 1, 1, UVN_VQ_E_USED_LEN },
	{ "used_idx_jumps", 0, 0, 0, 4, UVN_VQ_E_USED_IDX },
	{ "used_idx_backwards", 0, 0, 0, 0xffff, UVN_VQ_E_USED_IDX },
	{ "in_order_used_id_bad", F_IN_ORDER, 7, 0, 3, UVN_VQ_E_USED_ID },
	{ "in_order_used_len_bad", F_IN_ORDER, 3, 41, 2, UVN_VQ_E_USED_LEN },
	{ "in_order_used_idx_bad", F_IN_ORDER, 4, 0, 5, UVN_VQ_E_USED_IDX },
};

static void used_twice(void **state)
{
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, 0, TQ_DRV);
	three_in_flight(&q);
	used_put(&q, 0, 3, 1);
	used_put(&q, 1, 3, 1);
	used_idx(&q, 2);
	/* The good entry before the bad one is not lost. */
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 1);
	assert_ptr_equal(d[0].token, &tok[1]);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), -UVN_VQ_E_USED_ID);
	expect_drv_broken(&q, UVN_VQ_E_USED_ID);
	tq_teardown(&q);
}

/*
 * Chains added since the last publish (their avail entries written, the
 * index not) are not the device's: no used entry may name one and the used
 * index may not count them.
 */
static void one_published_one_pending(struct tq *q)
{
	add1(q, 0x1000, 10, true, &tok[0]); /* head 0: published */
	uvn_vq_drv_kick_prepare(q->drv);
	add1(q, 0x2000, 20, true, &tok[1]); /* head 1: pending */
}

static void used_unpublished(void **state)
{
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DRV);
	one_published_one_pending(&q);
	used_put(&q, 0, 1, 20);
	used_idx(&q, 1);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), -UVN_VQ_E_USED_ID);
	expect_drv_broken(&q, UVN_VQ_E_USED_ID);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 2);
	assert_int_equal(le16(sq_avail(&q)->idx), 1);
	tq_teardown(&q);
}

static void used_idx_past_published(void **state)
{
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DRV);
	one_published_one_pending(&q);
	used_put(&q, 0, 0, 10);
	used_put(&q, 1, 1, 20);
	used_idx(&q, 2);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), -UVN_VQ_E_USED_IDX);
	expect_drv_broken(&q, UVN_VQ_E_USED_IDX);
	tq_teardown(&q);
}

/* IN_ORDER: a batch entry may not reach a pending chain... */
static void in_order_used_unpublished(void **state)
{
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_IN_ORDER, TQ_DRV);
	one_published_one_pending(&q);
	used_put(&q, 0, 1, 20);
	used_idx(&q, 1);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), -UVN_VQ_E_USED_ID);
	expect_drv_broken(&q, UVN_VQ_E_USED_ID);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 2);
	tq_teardown(&q);
}

/* ...nor may reclaim's count, which reads no entries. */
static void in_order_reclaim_unpublished(void **state)
{
	void *t[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_IN_ORDER, TQ_DRV);
	for (unsigned i = 0; i < 3; i++) {
		if (i == 2)
			uvn_vq_drv_kick_prepare(q.drv);
		assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x1000, 64, false, &tok[i]), 0);
	}
	used_idx(&q, 3);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 8), -UVN_VQ_E_USED_IDX);
	expect_drv_broken(&q, UVN_VQ_E_USED_IDX);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 5);
	tq_teardown(&q);
}

/*
 * Publishes are counted in 16 bits: a buffer in flight while the count
 * goes round (four of them, each where a plain wrap would meet the count
 * it was published at) is still the device's to return, and a chain added
 * after that is still not.
 */
static void used_after_publish_count_wraps(void **state)
{
	const unsigned LAST = 65541;
	struct uvn_vq_done d[2];
	uint16_t used = 0;
	unsigned old = 0;
	struct tq q;

	(void)state;
	tq_setup(&q, 8, 0, TQ_DRV);
	for (unsigned i = 0; i < 4; i++) { /* heads 0-3, one publish each */
		add1(&q, 0x1000, 10, true, &tok[i]);
		uvn_vq_drv_kick_prepare(q.drv);
	}
	for (unsigned k = 1; k <= LAST; k++) {
		uint16_t head;

		add1(&q, 0x2000, 20, true, &tok[4]);
		head = avail_head(&q, (uint16_t)(uvn_vq_drv_avail_state(q.drv) - 1));
		if (k == LAST) {
			/* Pending, behind a published one (the used index may
			 * count one): not the device's, however long the count
			 * ran. */
			uvn_vq_drv_kick_prepare(q.drv);
			add1(&q, 0x3000, 30, true, &tok[5]);
			head = avail_head(&q, (uint16_t)(uvn_vq_drv_avail_state(q.drv) - 1));
			used_put(&q, used, head, 0);
			used_idx(&q, ++used);
			assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), -UVN_VQ_E_USED_ID);
			expect_drv_broken(&q, UVN_VQ_E_USED_ID);
			break;
		}
		uvn_vq_drv_kick_prepare(q.drv);
		used_put(&q, used, head, 20);
		used_idx(&q, ++used);
		assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
		assert_ptr_equal(d[0].token, &tok[4]);
		if (k >= 65532 && old < 4) {
			/* 4 + k publishes so far: counting from 1, a plain u16
			 * count is back at old + 1, the one head `old` went in. */
			used_put(&q, used, old, 10);
			used_idx(&q, ++used);
			assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), 1);
			assert_ptr_equal(d[0].token, &tok[old]);
			old++;
		}
	}
	assert_int_equal(old, 4);
	tq_teardown(&q);
}

/* Teardown takes pending chains back too; the used index bound holds. */
static void detach_unused_pending(void **state)
{
	struct uvn_vq_done d[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 2, 0, TQ_DRV);
	add1(&q, 0x1000, 10, true, &tok[0]);
	add1(&q, 0x2000, 20, true, &tok[1]);
	assert_ptr_equal(uvn_vq_drv_detach_unused(q.drv), &tok[0]);
	assert_ptr_equal(uvn_vq_drv_detach_unused(q.drv), &tok[1]);
	assert_null(uvn_vq_drv_detach_unused(q.drv));
	assert_false(uvn_vq_drv_kick_prepare(q.drv));
	assert_int_equal(le16(sq_avail(&q)->idx), 0);
	/* Nothing is in flight: any used index is a violation. */
	used_idx(&q, 1);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 2), -UVN_VQ_E_USED_IDX);
	tq_teardown(&q);
}

/* ------------------------------------------------------------ callbacks */

static void cb_flags(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DRV);
	uvn_vq_drv_disable_cb(q.drv);
	assert_int_equal(le16(sq_avail(&q)->flags), VRING_AVAIL_F_NO_INTERRUPT);
	assert_true(uvn_vq_drv_enable_cb(q.drv));
	assert_int_equal(le16(sq_avail(&q)->flags), 0);
	add1(&q, 0x1000, 8, true, &tok[0]);
	uvn_vq_drv_kick_prepare(q.drv);
	uvn_vq_drv_disable_cb(q.drv);
	used_put(&q, 0, avail_head(&q, 0), 1);
	used_idx(&q, 1);
	assert_false(uvn_vq_drv_enable_cb(q.drv));
	assert_int_equal(le16(sq_avail(&q)->flags), 0);
	tq_teardown(&q);
}

/* Would a device moving the used index from @old to @new notify? (2.7.7.2) */
static bool device_would_notify(uint16_t used_event, uint16_t old, uint16_t new_idx)
{
	return (uint16_t)(used_event - old) < (uint16_t)(new_idx - old);
}

static void cb_used_event(void **state)
{
	struct uvn_vq_done d[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_EVENT_IDX, TQ_DRV | TQ_DEV);
	pump(&q, 65533);
	uint16_t last = uvn_vq_drv_avail_state(q.drv); /* == used index read so far */

	uvn_vq_drv_disable_cb(q.drv);
	assert_int_equal(le16(sq_avail(&q)->flags), 0);
	for (unsigned n = 1; n <= 8; n++)
		assert_false(device_would_notify(le16(*sq_used_event(&q)), last,
						 (uint16_t)(last + n)));
	assert_true(uvn_vq_drv_enable_cb(q.drv));
	assert_int_equal(le16(*sq_used_event(&q)), last);
	for (unsigned i = 0; i < 8; i++)
		add1(&q, TM_GPA, 8, true, &tok[i]);
	uvn_vq_drv_kick_prepare(q.drv);
	/* Delayed: the event at 3/4 of the 8 in flight. */
	assert_true(uvn_vq_drv_enable_cb_delayed(q.drv));
	assert_int_equal(le16(*sq_used_event(&q)), (uint16_t)(last + 6));
	for (unsigned i = 0; i < 6; i++) {
		struct uvn_vq_chain ch;
		struct iovec iov[1];

		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 1), 1);
		uvn_vq_dev_push(q.dev, &ch, 0);
		uvn_vq_dev_flush(q.dev);
	}
	assert_true(uvn_vq_drv_enable_cb_delayed(q.drv)); /* 6 used: not past the event */
	assert_false(uvn_vq_drv_enable_cb(q.drv));        /* but there are used buffers */
	struct uvn_vq_chain ch;
	struct iovec iov[1];

	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 1), 1);
	uvn_vq_dev_push(q.dev, &ch, 0);
	uvn_vq_dev_flush(q.dev);
	assert_false(uvn_vq_drv_enable_cb_delayed(q.drv)); /* 7 > 6 */
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 8), 7);
	tq_teardown(&q);
}

/* -------------------------------------------------------------- teardown */

static void detach_all(struct tq *q, unsigned n)
{
	bool seen[64] = { false };
	void *t;

	for (unsigned i = 0; i < n; i++) {
		t = uvn_vq_drv_detach_unused(q->drv);
		assert_non_null(t);
		assert_true((int *)t >= tok && (int *)t < tok + (int)n);
		assert_false(seen[(int *)t - tok]);
		seen[(int *)t - tok] = true;
	}
	assert_null(uvn_vq_drv_detach_unused(q->drv));
	assert_int_equal(uvn_vq_drv_num_free(q->drv), q->num);
	assert_int_equal(q->pool_out, 0);
}

static void detach_unused(void **state, uint64_t features)
{
	const struct uvn_sg sg[3] = { { 0x1000, 10 }, { 0x2000, 20 }, { 0x3000, 30 } };
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 16, features | F_INDIRECT, TQ_DRV);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 1 + i % 2, &tok[i],
						i < 3 ? UVN_VQ_ADD_NO_INDIRECT : 0), 0);
	uvn_vq_drv_kick_prepare(q.drv);
	detach_all(&q, 6);
	/* The queue works again afterwards. */
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 2, &tok[7], 0), 0);
	uvn_vq_drv_kick_prepare(q.drv);
	used_put(&q, 0, avail_head(&q, (uint16_t)(uvn_vq_drv_avail_state(q.drv) - 1)), 3);
	used_idx(&q, 1);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 1);
	assert_ptr_equal(d[0].token, &tok[7]);
	tq_teardown(&q);
}

static void detach_unused_plain(void **state)
{
	detach_unused(state, 0);
}

static void detach_unused_in_order(void **state)
{
	detach_unused(state, F_IN_ORDER);
}

/* -------------------------------------------------------------- IN_ORDER */

/* The driver uses descriptors in ring order, next = x + 1 and 0 after the
 * last descriptor of the table (spec 2.7.5 with IN_ORDER). */
static void in_order_ring_order(void **state)
{
	const struct uvn_sg sg[3] = { { 0x1000, 1 }, { 0x2000, 2 }, { 0x3000, 3 } };
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_IN_ORDER, TQ_DRV);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 3, 0, &tok[0], 0), 0); /* 0-2 */
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 3, 0, &tok[1], 0), 0); /* 3-5 */
	uvn_vq_drv_kick_prepare(q.drv);
	used_put(&q, 0, 0, 0);
	used_idx(&q, 1);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 1);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 3, 0, &tok[2], 0), 0); /* 6, 7, 0 */
	used_put(&q, 1, 3, 0);
	used_idx(&q, 2);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 1);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 2, 0, &tok[3], 0), 0); /* 1-2 */
	uvn_vq_drv_kick_prepare(q.drv);
	assert_int_equal(avail_head(&q, 0), 0);
	assert_int_equal(avail_head(&q, 1), 3);
	assert_int_equal(avail_head(&q, 2), 6);
	assert_int_equal(avail_head(&q, 3), 1);
	check_desc(sq_desc(&q, 6), 0x1000, 1, NEXT);
	assert_int_equal(le16(sq_desc(&q, 6)->next), 7);
	check_desc(sq_desc(&q, 7), 0x2000, 2, NEXT);
	assert_int_equal(le16(sq_desc(&q, 7)->next), 0);
	check_desc(sq_desc(&q, 0), 0x3000, 3, 0);
	check_desc(sq_desc(&q, 1), 0x1000, 1, NEXT);
	assert_int_equal(le16(sq_desc(&q, 1)->next), 2);
	tq_teardown(&q);
}

/* One used entry at the batch's first slot completes the whole batch;
 * skipped buffers report their full writable length. */
static void in_order_batch(void **state)
{
	const struct uvn_sg sg[2] = { { 0x1000, 10 }, { 0x2000, 20 } };
	struct uvn_vq_done d[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_IN_ORDER, TQ_DRV);
	assert_int_equal(uvn_vq_drv_add(q.drv, sg, 1, 1, &tok[0], 0), 0); /* head 0 */
	add1(&q, 0x3000, 30, true, &tok[1]);                               /* head 2 */
	add1(&q, 0x4000, 40, true, &tok[2]);                               /* head 3 */
	add1(&q, 0x5000, 50, true, &tok[3]);                               /* head 4 */
	uvn_vq_drv_kick_prepare(q.drv);
	used_put(&q, 0, 3, 5);
	used_put(&q, 1, 0xdead, 0xdead); /* not an entry: skipped slots */
	used_put(&q, 2, 0xdead, 0xdead);
	used_idx(&q, 3);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 1), 1);
	assert_ptr_equal(d[0].token, &tok[0]);
	assert_int_equal(d[0].len, 20);
	assert_true(uvn_vq_drv_has_used(q.drv));
	assert_false(uvn_vq_drv_enable_cb(q.drv));
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 2);
	assert_ptr_equal(d[0].token, &tok[1]);
	assert_int_equal(d[0].len, 30);
	assert_ptr_equal(d[1].token, &tok[2]);
	assert_int_equal(d[1].len, 5);
	assert_false(uvn_vq_drv_has_used(q.drv));
	used_put(&q, 3, 4, 50);
	used_idx(&q, 4);
	assert_int_equal(uvn_vq_drv_get_used(q.drv, d, 4), 1);
	assert_ptr_equal(d[0].token, &tok[3]);
	assert_int_equal(d[0].len, 50);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 8);
	tq_teardown(&q);
}

/* ------------------------------------------------- add_one and reclaim */

/* @n device-readable 64 B buffers through add_one, tokens &tok[0..n). */
static void add_readable(struct tq *q, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(uvn_vq_drv_add_one(q->drv, 0x1000u * (i + 1), 64, false, &tok[i]), 0);
}

/* add_one writes what uvn_vq_drv_add() of one segment writes. */
static void add_one_layout(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DRV);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x1000, 10, false, &tok[0]), 0);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x2000, 20, true, &tok[1]), 0);
	check_desc(sq_desc(&q, 0), 0x1000, 10, 0);
	check_desc(sq_desc(&q, 1), 0x2000, 20, WRITE);
	assert_int_equal(avail_head(&q, 0), 0);
	assert_int_equal(avail_head(&q, 1), 1);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 2);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x3000, 0, false, &tok[2]), -UVN_VQ_E_INVAL);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x3000, 30, false, NULL), -UVN_VQ_E_INVAL);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x3000, 30, false, &tok[2]), 0);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x4000, 40, false, &tok[3]), 0);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x5000, 50, false, &tok[4]), -UVN_VQ_E_NOSPC);
	uvn_vq_drv_kick_prepare(q.drv);
	assert_int_equal(le16(sq_avail(&q)->idx), 4);
	/* A writable buffer's used length is still checked. */
	used_put(&q, 0, 1, 21);
	used_idx(&q, 1);
	{
		struct uvn_vq_done d;

		assert_int_equal(uvn_vq_drv_get_used(q.drv, &d, 1), -UVN_VQ_E_USED_LEN);
	}
	tq_teardown(&q);
}

/* Without IN_ORDER, reclaim reads every entry, in the device's order. */
static void reclaim_plain(void **state)
{
	void *t[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DRV);
	add_readable(&q, 3);
	uvn_vq_drv_kick_prepare(q.drv);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 4), 0);
	used_put(&q, 0, 2, 0);
	used_put(&q, 1, 0, 0);
	used_idx(&q, 2);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 4), 2);
	assert_ptr_equal(t[0], &tok[2]);
	assert_ptr_equal(t[1], &tok[0]);
	used_put(&q, 2, 7, 0); /* no such head */
	used_idx(&q, 3);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 4), -UVN_VQ_E_USED_ID);
	tq_teardown(&q);
}

/*
 * IN_ORDER, device-readable chains: the used index counts them, entries
 * are not read (one per batch, or garbage in skipped slots, alike), and
 * the index may not run past what is in flight.
 */
static void reclaim_in_order(void **state)
{
	void *t[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_IN_ORDER, TQ_DRV);
	add_readable(&q, 6);
	uvn_vq_drv_kick_prepare(q.drv);
	used_put(&q, 0, 0xdead, 0xdead);
	used_idx(&q, 3);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 2), 2);
	assert_ptr_equal(t[0], &tok[0]);
	assert_ptr_equal(t[1], &tok[1]);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 8), 1);
	assert_ptr_equal(t[0], &tok[2]);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 5);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 8), 0);
	/* The freed descriptors are reused in ring order. */
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x9000, 64, false, &tok[6]), 0);
	assert_int_equal(avail_head(&q, 6), 6);
	uvn_vq_drv_kick_prepare(q.drv);
	used_idx(&q, 3 + 5); /* 4 in flight */
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 8), -UVN_VQ_E_USED_IDX);
	tq_teardown(&q);
}

/*
 * IN_ORDER with a writable chain: its entry must be read (the length
 * matters), so reclaim stops in front of it and goes on through the
 * entries; a batch entry read that way is finished the same way.
 */
static void reclaim_in_order_writable(void **state)
{
	void *t[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_IN_ORDER, TQ_DRV);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x1000, 64, false, &tok[0]), 0);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x2000, 64, true, &tok[1]), 0);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x3000, 64, false, &tok[2]), 0);
	assert_int_equal(uvn_vq_drv_add_one(q.drv, 0x4000, 64, false, &tok[3]), 0);
	uvn_vq_drv_kick_prepare(q.drv);
	used_put(&q, 0, 0, 0);
	used_put(&q, 1, 2, 0); /* batch: heads 1 and 2 */
	used_idx(&q, 3);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 8), 1);
	assert_ptr_equal(t[0], &tok[0]);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 1), 1); /* reads slot 1: batch to head 2 */
	assert_ptr_equal(t[0], &tok[1]);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 8), 1); /* rest of the batch */
	assert_ptr_equal(t[0], &tok[2]);
	used_idx(&q, 4);
	assert_int_equal(uvn_vq_drv_reclaim(q.drv, t, 8), 1);
	assert_ptr_equal(t[0], &tok[3]);
	assert_int_equal(uvn_vq_drv_num_free(q.drv), 8);
	tq_teardown(&q);
}

/* ------------------------------------------------------------ round trips */

/* Queue sizes, features and chain shapes: see roundtrip(). */
static const struct rt_case roundtrips[] = {
	{ "roundtrip_size_1", 1, 0, { .chains = 70000, .max_segs = 1, .seed = 1 } },
	{ "roundtrip_size_2", 2, F_INDIRECT, { .chains = 70000, .max_segs = 4, .seed = 2 } },
	{ "roundtrip_size_256", 256, F_INDIRECT | F_EVENT_IDX,
	  { .chains = 70000, .max_segs = 6, .shuffle = true, .seed = 3 } },
	{ "roundtrip_size_32768", 32768, F_INDIRECT,
	  { .chains = 100000, .max_segs = 3, .shuffle = true, .seed = 4 } },
	{ "roundtrip_direct_only", 16, 0,
	  { .chains = 20000, .max_segs = 6, .shuffle = true, .unpop = true, .seed = 5 } },
	{ "roundtrip_in_order", 16, F_IN_ORDER | F_INDIRECT,
	  { .chains = 70000, .max_segs = 4, .unpop = true, .seed = 6 } },
	{ "roundtrip_in_order_batch", 64, F_IN_ORDER | F_INDIRECT | F_EVENT_IDX,
	  { .chains = 70000, .max_segs = 4, .batch = true, .seed = 7 } },
};

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(direct_layout),
		cmocka_unit_test(indirect_layout),
		cmocka_unit_test(add_rejects),
		cmocka_unit_test(kick_no_notify_flag),
		cmocka_unit_test(kick_avail_event),
		cmocka_unit_test(get_used_out_of_order),
		cmocka_unit_test(used_twice),
		cmocka_unit_test(used_unpublished),
		cmocka_unit_test(used_idx_past_published),
		cmocka_unit_test(in_order_used_unpublished),
		cmocka_unit_test(in_order_reclaim_unpublished),
		cmocka_unit_test(used_after_publish_count_wraps),
		cmocka_unit_test(detach_unused_pending),
		cmocka_unit_test(cb_flags),
		cmocka_unit_test(cb_used_event),
		cmocka_unit_test(detach_unused_plain),
		cmocka_unit_test(detach_unused_in_order),
		cmocka_unit_test(in_order_ring_order),
		cmocka_unit_test(in_order_batch),
		cmocka_unit_test(add_one_layout),
		cmocka_unit_test(reclaim_plain),
		cmocka_unit_test(reclaim_in_order),
		cmocka_unit_test(reclaim_in_order_writable),
	};
	static const struct test_table tables[] = {
		TEST_TABLE(bad_used, run_bad_used),
		TEST_TABLE(roundtrips, run_roundtrip),
	};

	return run_test_tables(tests, NELEM(tests), tables, NELEM(tables));
}
