/* SPDX-License-Identifier: MIT */
/*
 * Split ring, device half, against hand-written rings: what it returns for
 * well-formed chains, every malformed chain it must reject (one test each),
 * descriptors rewritten while they are walked, and notification decisions
 * checked against the spec's rules.
 */
#include <endian.h>
#include <string.h>

#include "ring_test.h"

#define NEXT VRING_DESC_F_NEXT
#define WRITE VRING_DESC_F_WRITE
#define INDIRECT VRING_DESC_F_INDIRECT

/* ------------------------------------------------------- normal operation */

static void direct_chain(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, 0, TQ_DEV);
	uint64_t a = tbuf(&q, 100), b = tbuf(&q, 20), c = tbuf(&q, 300);

	sq_set_desc(&q, 5, a, 100, NEXT, 2);
	sq_set_desc(&q, 2, b, 20, NEXT, 7);
	sq_set_desc(&q, 7, c, 300, WRITE, 0);
	assert_int_equal(uvn_vq_dev_avail(q.dev), 0);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 0);
	sq_publish(&q, 5);
	assert_int_equal(uvn_vq_dev_avail(q.dev), 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_chain(&ch, 5, 2, 1, 120, 300);
	assert_int_equal(ch.ndesc, 3);
	check_iov(&q, &iov[0], a, 100);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 300);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 0);

	uvn_vq_dev_push(q.dev, &ch, 50);
	assert_int_equal(le16(sq_used(&q)->idx), 0); /* staged, not published */
	assert_true(uvn_vq_dev_flush(q.dev));
	assert_int_equal(le16(sq_used(&q)->idx), 1);
	sq_check_used(&q, 0, 5, 50);
	assert_false(uvn_vq_dev_flush(q.dev)); /* nothing staged */
	assert_int_equal(uvn_vq_dev_stats(q.dev)->bufs, 1);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->used, 1);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify, 1);
	assert_int_equal(uvn_vq_dev_error(q.dev), 0);
	tq_teardown(&q);
}

static void indirect_chain(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_INDIRECT, TQ_DEV);
	uint64_t a = tbuf(&q, 10), b = tbuf(&q, 20), c = tbuf(&q, 30);
	uint64_t t = tm_alloc(&q.m, 48, 16);

	/* Table entries chained out of order: 0 -> 2 -> 1. */
	it_set(&q, t, 0, a, 10, NEXT, 2);
	it_set(&q, t, 2, b, 20, WRITE | NEXT, 1);
	it_set(&q, t, 1, c, 30, WRITE, 0);
	/* WRITE on the descriptor pointing to a table is ignored. */
	sq_set_desc(&q, 3, t, 48, INDIRECT | WRITE, 0);
	sq_publish(&q, 3);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_chain(&ch, 3, 1, 2, 10, 50);
	assert_int_equal(ch.ndesc, 1);
	check_iov(&q, &iov[0], a, 10);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 30);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->indirect, 1);
	tq_teardown(&q);
}

/* The spec allows direct descriptors followed by one indirect one. */
static void direct_then_indirect(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_INDIRECT, TQ_DEV);
	uint64_t a = tbuf(&q, 7), b = tbuf(&q, 8), c = tbuf(&q, 9);
	uint64_t t = tm_alloc(&q.m, 32, 16);

	it_set(&q, t, 0, b, 8, WRITE | NEXT, 1);
	it_set(&q, t, 1, c, 9, WRITE, 0);
	sq_set_desc(&q, 0, a, 7, NEXT, 1);
	sq_set_desc(&q, 1, t, 32, INDIRECT, 0);
	sq_publish(&q, 0);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_chain(&ch, 0, 1, 2, 7, 17);
	assert_int_equal(ch.ndesc, 2);
	check_iov(&q, &iov[0], a, 7);
	check_iov(&q, &iov[1], b, 8);
	check_iov(&q, &iov[2], c, 9);
	tq_teardown(&q);
}

/* A chain of exactly the queue size is legal; one more is a loop. */
static void chain_of_queue_size(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, 0, TQ_DEV);
	uint64_t a = tbuf(&q, 8 * 16);

	for (unsigned i = 0; i < 8; i++)
		sq_set_desc(&q, i, a + 16 * i, 16, i < 4 ? 0 : WRITE, (uint16_t)(i + 1));
	for (unsigned i = 0; i < 7; i++)
		sq_desc(&q, i)->flags |= htole16(NEXT);
	sq_publish(&q, 0);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_chain(&ch, 0, 4, 4, 64, 64);
	assert_int_equal(ch.ndesc, 8);
	for (unsigned i = 0; i < 8; i++)
		check_iov(&q, &iov[i], a + 16 * i, 16);
	tq_teardown(&q);
}

/* One descriptor over two mapping pieces becomes two iovecs. */
static void buffer_over_two_pieces(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 2, 0, TQ_DEV);
	uint64_t a = tbuf(&q, 100), other = tbuf(&q, 4096);

	tm_map(&q.m, a + 40, 4096, tm_ptr(&q.m, other));
	sq_set_desc(&q, 0, a, 100, WRITE, 0);
	sq_publish(&q, 0);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_chain(&ch, 0, 0, 2, 0, 100);
	check_iov(&q, &iov[0], a, 40);
	check_iov(&q, &iov[1], other, 60);
	tq_teardown(&q);
}

static void out_of_order_completion(void **state)
{
	struct uvn_vq_chain ch[3];
	struct iovec iov[3][2];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	for (uint16_t i = 0; i < 3; i++) {
		sq_set_desc(&q, i, tbuf(&q, 64), 64, WRITE, 0);
		sq_publish(&q, i);
	}
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch[i], iov[i], 2), 1);
	uvn_vq_dev_push(q.dev, &ch[2], 3);
	uvn_vq_dev_push(q.dev, &ch[0], 1);
	uvn_vq_dev_push(q.dev, &ch[1], 2);
	assert_true(uvn_vq_dev_flush(q.dev));
	assert_int_equal(le16(sq_used(&q)->idx), 3);
	const uint32_t want[3][2] = { { 2, 3 }, { 0, 1 }, { 1, 2 } };

	for (uint16_t s = 0; s < 3; s++) {
		sq_check_used(&q, s, want[s][0], want[s][1]);
	}
	tq_teardown(&q);
}

static void pop_push_n(struct tq *q, unsigned n, const uint32_t *lens)
{
	for (unsigned i = 0; i < n; i++) {
		struct uvn_vq_chain ch;
		struct iovec iov[2];

		assert_int_equal(uvn_vq_dev_pop(q->dev, &ch, iov, 2), 1);
		uvn_vq_dev_push(q->dev, &ch, lens[i]);
	}
}

static void fill_used_ring(struct tq *q)
{
	memset(sq_used(q)->ring, 0xaa, sizeof(struct vring_used_elem) * q->num);
}

static void publish_writable(struct tq *q, uint16_t head, uint32_t len)
{
	sq_set_desc(q, head, tbuf(q, len), len, WRITE, 0);
	sq_publish(q, head);
}

/* IN_ORDER batches: one entry at the batch's first slot carrying the last
 * head, the index moves by the batch size, the other slots untouched. */
static void in_order_batch(void **state)
{
	const uint32_t lens1[3] = { 10, 20, 7 }, lens2[2] = { 5, 6 };
	uint32_t id, len;
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_IN_ORDER, TQ_DEV);
	uvn_vq_dev_set_batch_used(q.dev, true);
	fill_used_ring(&q);
	for (uint16_t i = 0; i < 5; i++)
		publish_writable(&q, i, 32);
	pop_push_n(&q, 3, lens1);
	assert_int_equal(le16(sq_used(&q)->idx), 0);
	assert_true(uvn_vq_dev_flush(q.dev));
	assert_int_equal(le16(sq_used(&q)->idx), 3);
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 3);
	sq_check_used(&q, 0, 2, 7);
	sq_read_used(&q, 1, &id, &len);
	assert_int_equal(id, 0xaaaaaaaa);
	sq_read_used(&q, 2, &id, &len);
	assert_int_equal(id, 0xaaaaaaaa);

	pop_push_n(&q, 2, lens2);
	uvn_vq_dev_flush(q.dev);
	assert_int_equal(le16(sq_used(&q)->idx), 5);
	sq_check_used(&q, 3, 4, 6);
	sq_read_used(&q, 4, &id, &len);
	assert_int_equal(id, 0xaaaaaaaa);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->used, 5);
	tq_teardown(&q);
}

/* Without IN_ORDER, set_batch_used() is ignored: one entry per chain. */
static void batch_needs_in_order(void **state)
{
	const uint32_t lens[2] = { 1, 2 };
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	uvn_vq_dev_set_batch_used(q.dev, true);
	publish_writable(&q, 0, 8);
	publish_writable(&q, 1, 8);
	pop_push_n(&q, 2, lens);
	uvn_vq_dev_flush(q.dev);
	assert_int_equal(le16(sq_used(&q)->idx), 2);
	sq_check_used(&q, 0, 0, 1);
	sq_check_used(&q, 1, 1, 2);
	tq_teardown(&q);
}

/* Switching batching on or off with elements staged keeps every element
 * at its slot and the index moving by the chains completed. */
static void batch_switch_while_staged(void **state)
{
	const uint32_t one[1] = { 11 }, two[2] = { 12, 13 };
	uint32_t id, len;
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_IN_ORDER, TQ_DEV);
	fill_used_ring(&q);
	for (uint16_t i = 0; i < 6; i++)
		publish_writable(&q, i, 32);
	pop_push_n(&q, 1, one);                 /* entry at slot 0 */
	uvn_vq_dev_set_batch_used(q.dev, true);
	pop_push_n(&q, 2, two);                 /* batch: entry at slot 1 */
	uvn_vq_dev_flush(q.dev);
	assert_int_equal(le16(sq_used(&q)->idx), 3);
	sq_check_used(&q, 0, 0, 11);
	sq_check_used(&q, 1, 2, 13);

	pop_push_n(&q, 2, two);                 /* batch of heads 3, 4 at slot 3 */
	uvn_vq_dev_set_batch_used(q.dev, false);
	pop_push_n(&q, 1, one);                 /* head 5 at slot 5 */
	uvn_vq_dev_flush(q.dev);
	assert_int_equal(le16(sq_used(&q)->idx), 6);
	sq_check_used(&q, 3, 4, 13);
	sq_read_used(&q, 4, &id, &len);
	assert_int_equal(id, 0xaaaaaaaa);
	sq_check_used(&q, 5, 5, 11);
	tq_teardown(&q);
}

/* Free-running u16 indices over 65535, and the state getters. */
static void index_wraps(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	sq_avail(&q)->idx = htole16(65533);
	sq_used(&q)->idx = htole16(65533);
	tq_dev_create(&q, 65533, false, 65533, false);
	assert_int_equal(uvn_vq_dev_avail_state(q.dev), 65533);
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 65533);
	for (unsigned i = 0; i < 20; i++) {
		uint16_t head = (uint16_t)(i % 4), want = (uint16_t)(65534 + i);
		const uint32_t len[1] = { i };
		uint32_t id, l;

		publish_writable(&q, head, 16);
		pop_push_n(&q, 1, len);
		uvn_vq_dev_flush(q.dev);
		assert_int_equal(le16(sq_used(&q)->idx), want);
		assert_int_equal(uvn_vq_dev_avail_state(q.dev), want);
		assert_int_equal(uvn_vq_dev_used_state(q.dev), want);
		sq_read_used(&q, (uint16_t)(want - 1), &id, &l);
		assert_int_equal(id, head);
		assert_int_equal(l, i);
	}
	tq_teardown(&q);
}

static void size_one(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 1, 0, TQ_DEV);
	for (unsigned i = 0; i < 70000; i++) {
		const uint32_t len[1] = { 3 };
		uint32_t id, l;

		if (i == 0)
			sq_set_desc(&q, 0, tbuf(&q, 8), 8, WRITE, 0);
		sq_publish(&q, 0);
		pop_push_n(&q, 1, len);
		uvn_vq_dev_flush(q.dev);
		sq_read_used(&q, 0, &id, &l);
		assert_int_equal(id, 0);
	}
	assert_int_equal(uvn_vq_dev_used_state(q.dev), (uint16_t)70000);
	assert_int_equal(uvn_vq_dev_error(q.dev), 0);
	tq_teardown(&q);
}

/* New ring addresses and translation context; the indices carry on. */
static void set_addrs_moves_ring(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tmem m2;
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	uint64_t a = tbuf(&q, 16);

	publish_writable(&q, 0, 16);
	const uint32_t l1[1] = { 1 };

	pop_push_n(&q, 1, l1);
	uvn_vq_dev_flush(q.dev);

	/* A copy of the ring elsewhere, and a context mapping guest memory
	 * 1 MiB further into the host block. */
	uint64_t ring2 = tm_alloc(&q.m, q.lay.size, 64);
	uint8_t *old = q.ring;

	q.ring = tm_ptr(&q.m, ring2);
	memcpy(q.ring, old, q.lay.size);
	m2 = q.m;
	m2.hook = NULL;
	m2.nreg = 1;
	m2.reg[0] = (struct treg){ .gpa = TM_GPA, .len = 4u << 20, .host = q.m.base + (1u << 20) };
	uvn_vq_dev_set_addrs(q.dev, q.ring + q.lay.desc, q.ring + q.lay.driver,
			     q.ring + q.lay.device, &m2);
	sq_set_desc(&q, 1, a, 16, WRITE, 0);
	sq_publish(&q, 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
	assert_int_equal(ch.id, 1);
	assert_ptr_equal(iov[0].iov_base, q.m.base + (1u << 20) + (a - TM_GPA));
	uvn_vq_dev_push(q.dev, &ch, 9);
	uvn_vq_dev_flush(q.dev);
	assert_int_equal(le16(sq_used(&q)->idx), 2);
	sq_check_used(&q, 1, 1, 9);
	assert_int_equal(le16(((struct vring_used *)(old + q.lay.device))->idx), 1);
	tq_teardown(&q);
}

static void unpop_gives_back(void **state)
{
	struct uvn_vq_chain a, b, b2;
	struct iovec iov[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	publish_writable(&q, 2, 16);
	publish_writable(&q, 3, 24);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &a, iov, 2), 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &b, iov, 2), 1);
	uvn_vq_dev_unpop(q.dev, &b);
	assert_int_equal(uvn_vq_dev_avail_state(q.dev), 1);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->bufs, 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &b2, iov, 2), 1);
	assert_int_equal(b2.id, 3);
	assert_int_equal(b2.in_len, 24);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &b2, iov, 2), 0);
	tq_teardown(&q);
}

/* A good chain before a bad one is returned; the bad one breaks the queue. */
static void good_then_bad(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	publish_writable(&q, 0, 16);
	sq_publish(&q, 9);
	assert_int_equal(uvn_vq_dev_avail(q.dev), 2);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
	expect_pop_fails(&q, UVN_VQ_E_HEAD_RANGE, 2);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->bufs, 1);
	tq_teardown(&q);
}

/* ------------------------------------------ descriptors rewritten mid-walk */

/* While a buffer is translated, the driver rewrites the descriptor(s) the
 * walker has already read (hostile values everywhere); the result must be
 * the one the first reads describe. */
struct toctou {
	struct tq *q;
	unsigned n;
	uint64_t addr[4];       /* buffer (or table) address being translated... */
	struct vring_desc *d[4]; /* ...and what to rewrite then */
	struct vring_desc *also; /* rewritten on every translation */
	unsigned hits;
};

static void clobber(struct vring_desc *d)
{
	d->addr = htole64(0x1000);
	d->len = htole32(0xffffffff);
	d->flags = htole16(NEXT | INDIRECT | WRITE);
	d->next = htole16(0xfff0);
}

static void toctou_hook(void *ctx, uint64_t addr, uint64_t len)
{
	struct toctou *t = ctx;

	(void)len;
	for (unsigned i = 0; i < t->n; i++) {
		if (t->addr[i] == addr) {
			clobber(t->d[i]);
			t->hits++;
		}
	}
	if (t->also)
		clobber(t->also);
	sq_avail(t->q)->ring[0] = htole16(0xffff);
}

static void rewritten_direct(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct toctou t = { 0 };
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	uint64_t a = tbuf(&q, 10), b = tbuf(&q, 20), c = tbuf(&q, 30);

	sq_set_desc(&q, 0, a, 10, NEXT, 2);
	sq_set_desc(&q, 2, b, 20, NEXT | WRITE, 1);
	sq_set_desc(&q, 1, c, 30, WRITE, 0);
	sq_publish(&q, 0);
	t = (struct toctou){ .q = &q, .n = 3, .addr = { a, b, c },
			     .d = { sq_desc(&q, 0), sq_desc(&q, 2), sq_desc(&q, 1) } };
	q.m.hook = toctou_hook;
	q.m.hook_ctx = &t;
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	assert_int_equal(t.hits, 3);
	check_chain(&ch, 0, 1, 2, 10, 50);
	assert_int_equal(ch.ndesc, 3);
	check_iov(&q, &iov[0], a, 10);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 30);
	tq_teardown(&q);
}

static void rewritten_indirect(void **state, bool pieces)
{
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct toctou t;
	struct tq q;

	tq_setup(&q, 4, F_INDIRECT, TQ_DEV);
	uint64_t a = tbuf(&q, 10), b = tbuf(&q, 20), c = tbuf(&q, 30);
	uint64_t tb = tm_alloc(&q.m, 48, 16);
	struct vring_desc *e = tm_ptr(&q.m, tb);

	(void)state;
	it_set(&q, tb, 0, a, 10, NEXT, 2);
	it_set(&q, tb, 2, b, 20, NEXT | WRITE, 1);
	it_set(&q, tb, 1, c, 30, WRITE, 0);
	if (pieces) {
		/* Same table, its second half behind another mapping piece. */
		uint64_t other = tm_alloc(&q.m, 4096, 64);

		memcpy(tm_ptr(&q.m, other), (uint8_t *)e + 24, 24);
		tm_map(&q.m, tb + 24, 4096, tm_ptr(&q.m, other));
		e = (struct vring_desc *)((uint8_t *)tm_ptr(&q.m, other) - 24);
	}
	sq_set_desc(&q, 3, tb, 48, INDIRECT, 0);
	sq_publish(&q, 3);
	/* Entry 1 straddles the pieces: only clobber whole entries we own. */
	t = (struct toctou){ .q = &q, .n = pieces ? 2 : 3, .addr = { a, b, c },
			     .d = { tm_ptr(&q.m, tb), &e[2], &e[1] },
			     .also = sq_desc(&q, 3) };
	q.m.hook = toctou_hook;
	q.m.hook_ctx = &t;
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	check_chain(&ch, 3, 1, 2, 10, 50);
	check_iov(&q, &iov[0], a, 10);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 30);
	tq_teardown(&q);
}

static void rewritten_indirect_table(void **state)
{
	rewritten_indirect(state, false);
}

static void rewritten_indirect_pieces(void **state)
{
	rewritten_indirect(state, true);
}

/* --------------------------------------------------------- notifications */

static void flush_no_interrupt_flag(void **state)
{
	const uint32_t len[1] = { 1 };
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	publish_writable(&q, 0, 8);
	publish_writable(&q, 1, 8);
	pop_push_n(&q, 1, len);
	assert_true(uvn_vq_dev_flush(q.dev));
	sq_avail(&q)->flags = htole16(VRING_AVAIL_F_NO_INTERRUPT);
	pop_push_n(&q, 1, len);
	assert_false(uvn_vq_dev_flush(q.dev));
	assert_int_equal(le16(sq_used(&q)->idx), 2);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify, 1);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify_suppressed, 1);
	tq_teardown(&q);
}

/* With EVENT_IDX: notify iff one of the entries just published was placed
 * at index used_event (spec 2.7.7.2), flags ignored. Runs over the u16 wrap
 * with batches of 1..4 and events around them. */
static void flush_used_event(void **state)
{
	const uint32_t lens[4] = { 1, 2, 3, 4 };
	struct tq q;
	unsigned notified = 0, iters = 0;

	(void)state;
	tq_setup(&q, 8, F_EVENT_IDX, TQ_DEV);
	sq_avail(&q)->idx = htole16(65500);
	sq_used(&q)->idx = htole16(65500);
	tq_dev_create(&q, 65500, false, 65500, false);
	for (unsigned i = 0; i < 8; i++)
		sq_set_desc(&q, i, tbuf(&q, 8), 8, WRITE, 0);
	sq_avail(&q)->flags = htole16(VRING_AVAIL_F_NO_INTERRUPT);
	/* The first flush after creation notifies whatever used_event says:
	 * the last signalled index is unknown after a (re)start. */
	*sq_used_event(&q) = htole16(0);
	sq_publish(&q, 0);
	pop_push_n(&q, 1, lens);
	assert_true(uvn_vq_dev_flush(q.dev));
	for (unsigned k = 1; k <= 4; k++) {
		for (int off = -3; off <= 6; off++) {
			uint16_t s = uvn_vq_dev_used_state(q.dev);
			uint16_t ev = (uint16_t)(s + off);
			bool want = (uint16_t)(ev - s) < k;

			*sq_used_event(&q) = htole16(ev);
			for (unsigned j = 0; j < k; j++)
				sq_publish(&q, (uint16_t)((s + j) & 7));
			pop_push_n(&q, k, lens);
			assert_int_equal(uvn_vq_dev_flush(q.dev), want);
			notified += want;
			iters++;
		}
	}
	assert_true(uvn_vq_dev_used_state(q.dev) < 65500); /* wrapped */
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify, 1 + notified);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify_suppressed, iters - notified);
	tq_teardown(&q);
}

static void notify_flag_toggles(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	uvn_vq_dev_disable_notify(q.dev);
	assert_int_equal(le16(sq_used(&q)->flags), VRING_USED_F_NO_NOTIFY);
	assert_true(uvn_vq_dev_enable_notify(q.dev));
	assert_int_equal(le16(sq_used(&q)->flags), 0);
	uvn_vq_dev_disable_notify(q.dev);
	/* A chain raced in before notifications were back on. */
	publish_writable(&q, 0, 8);
	assert_false(uvn_vq_dev_enable_notify(q.dev));
	assert_int_equal(le16(sq_used(&q)->flags), 0);
	tq_teardown(&q);
}

/* With EVENT_IDX: avail_event names the next index the device will read;
 * flags stay 0 and disable writes nothing. */
static void notify_avail_event(void **state)
{
	const uint32_t lens[3] = { 1, 1, 1 };
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_EVENT_IDX, TQ_DEV);
	sq_avail(&q)->idx = htole16(65534);
	tq_dev_create(&q, 65534, false, 0, false);
	for (uint16_t i = 0; i < 3; i++)
		publish_writable(&q, i, 8);
	pop_push_n(&q, 3, lens);
	assert_true(uvn_vq_dev_enable_notify(q.dev));
	assert_int_equal(le16(*sq_avail_event(&q)), 1);
	*sq_avail_event(&q) = htole16(0x1234);
	uvn_vq_dev_disable_notify(q.dev);
	assert_int_equal(le16(*sq_avail_event(&q)), 0x1234);
	assert_int_equal(le16(sq_used(&q)->flags), 0);
	publish_writable(&q, 3, 8);
	assert_false(uvn_vq_dev_enable_notify(q.dev));
	assert_int_equal(le16(*sq_avail_event(&q)), 1);
	tq_teardown(&q);
}

/* ------------------------------------------------------------ creation */

static void create_rejects_bad_config(void **state)
{
	struct uvn_vq_dev *dev = NULL;
	struct uvn_vq_dev_cfg cfg;
	struct tq q;

	(void)state;
	tq_setup(&q, 8, 0, 0);
	cfg = tq_dev_cfg(&q, 0, false, 0, false);
	cfg.num = 6;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	cfg.num = 0;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	cfg.num = 65536;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	cfg = tq_dev_cfg(&q, 0, false, 0, false);
	cfg.xlate = NULL;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	/* Ring parts below the spec's alignment (desc 16, avail 2, used 4). */
	cfg = tq_dev_cfg(&q, 0, false, 0, false);
	cfg.desc = (uint8_t *)cfg.desc + 8;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	cfg = tq_dev_cfg(&q, 0, false, 0, false);
	cfg.driver = (uint8_t *)cfg.driver + 1;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	cfg = tq_dev_cfg(&q, 0, false, 0, false);
	cfg.device = (uint8_t *)cfg.device + 2;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	assert_null(dev);
	tq_teardown(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(direct_chain),
		cmocka_unit_test(indirect_chain),
		cmocka_unit_test(direct_then_indirect),
		cmocka_unit_test(chain_of_queue_size),
		cmocka_unit_test(buffer_over_two_pieces),
		cmocka_unit_test(out_of_order_completion),
		cmocka_unit_test(in_order_batch),
		cmocka_unit_test(batch_needs_in_order),
		cmocka_unit_test(batch_switch_while_staged),
		cmocka_unit_test(index_wraps),
		cmocka_unit_test(size_one),
		cmocka_unit_test(set_addrs_moves_ring),
		cmocka_unit_test(unpop_gives_back),
		cmocka_unit_test(good_then_bad),
		cmocka_unit_test(rewritten_direct),
		cmocka_unit_test(rewritten_indirect_table),
		cmocka_unit_test(rewritten_indirect_pieces),
		cmocka_unit_test(flush_no_interrupt_flag),
		cmocka_unit_test(flush_used_event),
		cmocka_unit_test(notify_flag_toggles),
		cmocka_unit_test(notify_avail_event),
		cmocka_unit_test(create_rejects_bad_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
