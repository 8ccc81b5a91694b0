/* SPDX-License-Identifier: MIT */
/*
 * Packed ring, device half, against rings written by a minimal driver of
 * the test's own: chains, used elements and their wrap bits over many laps
 * (queue sizes that are not powers of two), every malformed chain it must
 * reject, descriptors rewritten while walked, and event suppression checked
 * against the spec's rules.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "ring_test.h"

#define NEXT VRING_DESC_F_NEXT
#define WRITE VRING_DESC_F_WRITE
#define INDIRECT VRING_DESC_F_INDIRECT
#define WRAP15 (1u << 15)

/* A used element as the spec describes it: AVAIL and USED both equal to
 * the device's wrap counter, WRITE iff something was written. */
static void check_used(struct tq *q, unsigned pos, uint16_t id, uint32_t len, bool wrap)
{
	const struct vring_packed_desc *d = pq_desc(q, pos);
	uint16_t f = le16(d->flags);

	assert_int_equal(!!(f & PK_AVAIL), wrap);
	assert_int_equal(!!(f & PK_USED), wrap);
	assert_int_equal(!!(f & WRITE), len != 0);
	assert_int_equal(le16(d->id), id);
	if (len)
		assert_int_equal(le32toh(d->len), len);
}

static bool looks_used(struct tq *q, unsigned pos, bool wrap)
{
	uint16_t f = le16(pq_desc(q, pos)->flags);

	return !!(f & PK_AVAIL) == wrap && !!(f & PK_USED) == wrap;
}

/* ------------------------------------------------------- normal operation */

static void direct_chain(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 100), b = tbuf(&q, 20), c = tbuf(&q, 300);
	const struct tdesc ds[3] = { { a, 100, 0 }, { b, 20, 0 }, { c, 300, WRITE } };

	assert_int_equal(uvn_vq_dev_avail(q.dev), 0);
	pk_chain(&q, &d, ds, 3, 7);
	assert_int_equal(uvn_vq_dev_avail(q.dev), 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_pchain(&ch, 7, 3, 2, 1, 120, 300);
	check_iov(&q, &iov[0], a, 100);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 300);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 0);
	assert_int_equal(uvn_vq_dev_avail_state(q.dev), 3 | WRAP15);
	uvn_vq_dev_push(q.dev, &ch, 50);
	assert_false(looks_used(&q, 0, true)); /* staged only */
	assert_true(uvn_vq_dev_flush(q.dev));
	check_used(&q, 0, 7, 50, true);
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 3 | WRAP15);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->bufs, 1);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->used, 1);
	tq_teardown(&q);
}

static void indirect_chain(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED | F_INDIRECT, TQ_DEV);
	uint64_t a = tbuf(&q, 10), b = tbuf(&q, 20), c = tbuf(&q, 30);
	uint64_t t = tm_alloc(&q.m, 48, 16);

	/* Tables are read in order; NEXT means nothing there. */
	pt_set(&q, t, 0, a, 10, 0);
	pt_set(&q, t, 1, b, 20, WRITE | NEXT);
	pt_set(&q, t, 2, c, 30, WRITE);
	const struct tdesc ds[1] = { { t, 48, INDIRECT | WRITE } };

	pk_chain(&q, &d, ds, 1, 2);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_pchain(&ch, 2, 1, 1, 2, 10, 50);
	check_iov(&q, &iov[0], a, 10);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 30);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->indirect, 1);
	tq_teardown(&q);
}

/* Only the last descriptor's id counts. */
static void id_from_last_descriptor(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[2] = { { a, 8, 0 }, { a, 8, WRITE } };

	pk_chain(&q, &d, ds, 2, 1);
	pq_desc(&q, 0)->id = htole16(999);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	assert_int_equal(ch.id, 1);
	tq_teardown(&q);
}

static void buffer_over_two_pieces(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 3, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 100), other = tbuf(&q, 4096);
	const struct tdesc ds[1] = { { a, 100, 0 } };

	tm_map(&q.m, a + 70, 4096, tm_ptr(&q.m, other));
	pk_chain(&q, &d, ds, 1, 0);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	check_pchain(&ch, 0, 1, 2, 0, 100, 0);
	check_iov(&q, &iov[0], a, 70);
	check_iov(&q, &iov[1], other, 30);
	tq_teardown(&q);
}

/* Used elements go in completion order, each advancing the used position
 * by its chain's descriptors; the first of a flush becomes visible last. */
static void out_of_order_completion(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch[3];
	struct iovec iov[3][4];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 64);
	const struct tdesc ds[3] = { { a, 8, 0 }, { a, 8, WRITE }, { a, 8, WRITE } };

	pk_chain(&q, &d, ds, 2, 0);
	pk_chain(&q, &d, ds + 2, 1, 1);
	pk_chain(&q, &d, ds, 3, 2);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch[i], iov[i], 4), 1);
	uvn_vq_dev_push(q.dev, &ch[2], 3);
	uvn_vq_dev_push(q.dev, &ch[0], 0);
	uvn_vq_dev_push(q.dev, &ch[1], 2);
	assert_false(looks_used(&q, 0, true));
	uvn_vq_dev_flush(q.dev);
	check_used(&q, 0, 2, 3, true);
	check_used(&q, 3, 0, 0, true);
	check_used(&q, 5, 1, 2, true);
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 6 | WRAP15);
	tq_teardown(&q);
}

/* IN_ORDER batch: one used element with the last id at the batch's first
 * position, the used position skipping every descriptor of the batch. */
static void in_order_batch(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_PACKED | F_IN_ORDER, TQ_DEV);
	uvn_vq_dev_set_batch_used(q.dev, true);
	uint64_t a = tbuf(&q, 64);
	const struct tdesc ds[3] = { { a, 8, WRITE }, { a, 8, WRITE }, { a, 8, WRITE } };

	pk_chain(&q, &d, ds, 2, 5);
	pk_chain(&q, &d, ds, 1, 6);
	pk_chain(&q, &d, ds, 3, 7);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
		uvn_vq_dev_push(q.dev, &ch, 4 + i);
	}
	assert_false(looks_used(&q, 0, true));
	uvn_vq_dev_flush(q.dev);
	check_used(&q, 0, 7, 6, true);
	assert_false(looks_used(&q, 2, true));
	assert_false(looks_used(&q, 3, true));
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 6 | WRAP15);
	/* The next batch crosses the end of the ring. */
	pk_chain(&q, &d, ds, 3, 1);
	pk_chain(&q, &d, ds, 1, 2);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
		uvn_vq_dev_push(q.dev, &ch, 9);
	}
	uvn_vq_dev_flush(q.dev);
	check_used(&q, 6, 2, 9, true);
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 2);
	tq_teardown(&q);
}

/* Switching batching with elements staged keeps every element in place. */
static void batch_switch_while_staged(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_PACKED | F_IN_ORDER, TQ_DEV);
	uint64_t a = tbuf(&q, 64);
	const struct tdesc ds[2] = { { a, 8, WRITE }, { a, 8, WRITE } };

	for (uint16_t id = 0; id < 3; id++)
		pk_chain(&q, &d, ds, 2, id);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	uvn_vq_dev_push(q.dev, &ch, 1);         /* element at 0 */
	uvn_vq_dev_set_batch_used(q.dev, true);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
		uvn_vq_dev_push(q.dev, &ch, 2);  /* batch: one element at 2 */
	}
	uvn_vq_dev_flush(q.dev);
	check_used(&q, 0, 0, 1, true);
	check_used(&q, 2, 2, 2, true);
	assert_false(looks_used(&q, 4, true));
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 6 | WRAP15);
	tq_teardown(&q);
}

/* Many laps of queues of odd sizes, chains of 1..3 descriptors with up to
 * two in flight; wrap counters checked on every used element and state. */
static void laps(unsigned num, unsigned chains)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch[2];
	struct iovec iov[2][4];
	bool uwrap = true;
	unsigned upos = 0;
	struct tq q;

	tq_setup(&q, num, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 64);
	const struct tdesc ds[3] = { { a, 5, 0 }, { a + 8, 6, WRITE }, { a + 16, 7, WRITE } };

	srand(num);
	for (unsigned i = 0; i < chains; i += 2) {
		unsigned n[2], inflight = num >= 2 ? 2 : 1, left = num;

		for (unsigned j = 0; j < inflight; j++) {
			unsigned most = left - (inflight - 1 - j); /* room for the rest */

			n[j] = 1 + (unsigned)rand() % (most < 3 ? most : 3);
			left -= n[j];
			pk_chain(&q, &d, ds + 3 - n[j], n[j], (uint16_t)j);
			assert_int_equal(uvn_vq_dev_pop(q.dev, &ch[j], iov[j], 4), 1);
			assert_int_equal(ch[j].id, j);
			assert_int_equal(ch[j].ndesc, n[j]);
			assert_int_equal(uvn_vq_dev_avail_state(q.dev), d.pos | (d.wrap ? WRAP15 : 0));
		}
		/* Complete the last popped first. */
		for (unsigned j = inflight; j-- > 0;) {
			uvn_vq_dev_push(q.dev, &ch[j], ch[j].in_len);
			uvn_vq_dev_flush(q.dev);
			check_used(&q, upos, (uint16_t)j, ch[j].in_len, uwrap);
			upos += n[j];
			if (upos >= num) {
				upos -= num;
				uwrap = !uwrap;
			}
			assert_int_equal(uvn_vq_dev_used_state(q.dev), upos | (uwrap ? WRAP15 : 0));
		}
	}
	assert_int_equal(uvn_vq_dev_error(q.dev), 0);
	tq_teardown(&q);
}

static void laps_size_1(void **state)
{
	(void)state;
	laps(1, 3000);
}

static void laps_size_3(void **state)
{
	(void)state;
	laps(3, 5000);
}

static void laps_size_255(void **state)
{
	(void)state;
	laps(255, 5000);
}

static void laps_size_32768(void **state)
{
	(void)state;
	laps(32768, 70000);
}

/* Devices may start anywhere: position and wrap counters from the config. */
static void starts_mid_ring(void **state)
{
	struct pkdrv d = { 4, false };
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 5, F_PACKED, TQ_DEV);
	tq_dev_create(&q, 4, false, 4, false);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[2] = { { a, 8, WRITE }, { a, 8, WRITE } };

	/* Zeroed memory at position 4 looks "available" to no wrap-0 device
	 * (AVAIL 0 == wrap, USED 0 == wrap is used): nothing to pop. */
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 0);
	pk_chain(&q, &d, ds, 2, 3);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	assert_int_equal(uvn_vq_dev_avail_state(q.dev), 1 | WRAP15);
	uvn_vq_dev_push(q.dev, &ch, 16);
	uvn_vq_dev_flush(q.dev);
	check_used(&q, 4, 3, 16, false);
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 1 | WRAP15);
	tq_teardown(&q);
}

/* Unpop across the end of the ring restores position and wrap counter. */
static void unpop_over_wrap(void **state)
{
	struct pkdrv d = { 3, true };
	struct uvn_vq_chain ch, ch2;
	struct iovec iov[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DEV);
	tq_dev_create(&q, 3, true, 3, true);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[2] = { { a, 8, 0 }, { a, 4, WRITE } };

	pk_chain(&q, &d, ds, 2, 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	assert_int_equal(uvn_vq_dev_avail_state(q.dev), 1);
	uvn_vq_dev_unpop(q.dev, &ch);
	assert_int_equal(uvn_vq_dev_avail_state(q.dev), 3 | WRAP15);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch2, iov, 4), 1);
	check_pchain(&ch2, 1, 2, 1, 1, 8, 4);
	tq_teardown(&q);
}

static void set_addrs_moves_ring(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tmem m2;
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 16);
	const struct tdesc ds[1] = { { a, 16, WRITE } };

	pk_chain(&q, &d, ds, 1, 0);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
	uvn_vq_dev_push(q.dev, &ch, 1);
	uvn_vq_dev_flush(q.dev);

	uint64_t ring2 = tm_alloc(&q.m, q.lay.size, 64);
	uint8_t *old = q.ring;

	q.ring = tm_ptr(&q.m, ring2);
	memcpy(q.ring, old, q.lay.size);
	m2 = q.m;
	m2.nreg = 1;
	m2.reg[0] = (struct treg){ .gpa = TM_GPA, .len = 4u << 20, .host = q.m.base + (1u << 20) };
	uvn_vq_dev_set_addrs(q.dev, q.ring + q.lay.desc, q.ring + q.lay.driver,
			     q.ring + q.lay.device, &m2);
	pk_chain(&q, &d, ds, 1, 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
	assert_int_equal(ch.id, 1);
	assert_ptr_equal(iov[0].iov_base, q.m.base + (1u << 20) + (a - TM_GPA));
	uvn_vq_dev_push(q.dev, &ch, 2);
	uvn_vq_dev_flush(q.dev);
	check_used(&q, 1, 1, 2, true);
	assert_false(looks_used(&(struct tq){ .ring = old, .lay = q.lay, .num = 4 }, 1, true));
	tq_teardown(&q);
}

/* ------------------------------------------ descriptors rewritten mid-walk */

struct toctou {
	unsigned n;
	uint64_t addr[4];
	struct vring_packed_desc *d[4];
	struct vring_packed_desc *also;
	unsigned hits;
};

static void clobber(struct vring_packed_desc *d)
{
	d->addr = htole64(0x1000);
	d->len = htole32(0xffffffff);
	d->id = htole16(0xfff0);
	d->flags = htole16(NEXT | INDIRECT | WRITE | PK_AVAIL);
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
}

static void rewritten_direct(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct toctou t;
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 10), b = tbuf(&q, 20), c = tbuf(&q, 30);
	const struct tdesc ds[3] = { { a, 10, 0 }, { b, 20, WRITE }, { c, 30, WRITE } };

	pk_chain(&q, &d, ds, 3, 2);
	t = (struct toctou){ .n = 3, .addr = { a, b, c },
			     .d = { pq_desc(&q, 0), pq_desc(&q, 1), pq_desc(&q, 2) } };
	q.m.hook = toctou_hook;
	q.m.hook_ctx = &t;
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	assert_int_equal(t.hits, 3);
	check_pchain(&ch, 2, 3, 1, 2, 10, 50);
	check_iov(&q, &iov[0], a, 10);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 30);
	assert_int_equal(uvn_vq_dev_avail_state(q.dev), 3 | WRAP15);
	tq_teardown(&q);
}

static void rewritten_indirect(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct toctou t;
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED | F_INDIRECT, TQ_DEV);
	uint64_t a = tbuf(&q, 10), b = tbuf(&q, 20), c = tbuf(&q, 30);
	uint64_t tb = tm_alloc(&q.m, 48, 16);
	struct vring_packed_desc *e = tm_ptr(&q.m, tb);
	const struct tdesc ds[1] = { { tb, 48, INDIRECT } };

	pt_set(&q, tb, 0, a, 10, 0);
	pt_set(&q, tb, 1, b, 20, WRITE);
	pt_set(&q, tb, 2, c, 30, WRITE);
	pk_chain(&q, &d, ds, 1, 1);
	t = (struct toctou){ .n = 3, .addr = { a, b, c }, .d = { &e[0], &e[1], &e[2] },
			     .also = pq_desc(&q, 0) };
	q.m.hook = toctou_hook;
	q.m.hook_ctx = &t;
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	check_pchain(&ch, 1, 1, 1, 2, 10, 50);
	check_iov(&q, &iov[0], a, 10);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 30);
	tq_teardown(&q);
}

/* --------------------------------------------------------- notifications */

static void pop_push_one(struct tq *q, uint32_t len)
{
	struct uvn_vq_chain ch;
	struct iovec iov[4];

	assert_int_equal(uvn_vq_dev_pop(q->dev, &ch, iov, 4), 1);
	uvn_vq_dev_push(q->dev, &ch, len);
}

static void flush_event_flags(void **state)
{
	struct pkdrv d = { 0, true };
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[1] = { { a, 8, WRITE } };

	pq_driver(&q)->flags = htole16(VRING_PACKED_EVENT_FLAG_ENABLE);
	pk_chain(&q, &d, ds, 1, 0);
	pop_push_one(&q, 1);
	assert_true(uvn_vq_dev_flush(q.dev));
	pq_driver(&q)->flags = htole16(VRING_PACKED_EVENT_FLAG_DISABLE);
	pk_chain(&q, &d, ds, 1, 1);
	pop_push_one(&q, 1);
	assert_false(uvn_vq_dev_flush(q.dev));
	pq_driver(&q)->flags = htole16(VRING_PACKED_EVENT_FLAG_ENABLE);
	pk_chain(&q, &d, ds, 1, 2);
	pop_push_one(&q, 1);
	assert_true(uvn_vq_dev_flush(q.dev));
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify, 2);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify_suppressed, 1);
	tq_teardown(&q);
}

/*
 * RING_EVENT_FLAGS_DESC: notify iff the descriptor at (off, wrap) was
 * marked used by this flush, i.e. lies among the ring positions (with the
 * device's wrap counter at each) the used position moved over. Chains of
 * 1..2 descriptors, two per flush, events at every position and wrap.
 */
static void flush_desc_event(void **state)
{
	const unsigned num = 5;
	struct pkdrv d = { 0, true };
	struct tq q;
	unsigned notified = 0, iters = 0;

	(void)state;
	tq_setup(&q, num, F_PACKED | F_EVENT_IDX, TQ_DEV);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[2] = { { a, 8, WRITE }, { a, 8, WRITE } };

	/* First flush after creation: always notifies (state unknown). */
	pq_driver(&q)->flags = htole16(VRING_PACKED_EVENT_FLAG_DESC);
	pq_driver(&q)->off_wrap = htole16(3);
	pk_chain(&q, &d, ds, 1, 0);
	pop_push_one(&q, 1);
	assert_true(uvn_vq_dev_flush(q.dev));
	srand(5);
	for (unsigned round = 0; round < 40; round++) {
		for (unsigned off = 0; off < num; off++) {
			for (unsigned w = 0; w < 2; w++) {
				uint16_t st = uvn_vq_dev_used_state(q.dev);
				unsigned pos = st & 0x7fff, n1 = 1 + rand() % 2, n2 = 1 + rand() % 2;
				bool wrap = st >> 15, want = false;

				for (unsigned k = 0; k < n1 + n2; k++) {
					want |= pos == off && wrap == w;
					if (++pos == num) {
						pos = 0;
						wrap = !wrap;
					}
				}
				pq_driver(&q)->off_wrap = htole16((uint16_t)(off | w << 15));
				pk_chain(&q, &d, ds, n1, 0);
				pk_chain(&q, &d, ds, n2, 1);
				pop_push_one(&q, 1);
				pop_push_one(&q, 1);
				assert_int_equal(uvn_vq_dev_flush(q.dev), want);
				assert_int_equal(uvn_vq_dev_used_state(q.dev),
						 pos | (wrap ? 1u << 15 : 0));
				notified += want;
				iters++;
			}
		}
	}
	assert_true(notified > 0 && notified < iters);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify, 1 + notified);
	assert_int_equal(uvn_vq_dev_stats(q.dev)->notify_suppressed, iters - notified);
	tq_teardown(&q);
}

static void notify_flags(void **state)
{
	struct pkdrv d = { 0, true };
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[1] = { { a, 8, WRITE } };

	uvn_vq_dev_disable_notify(q.dev);
	assert_int_equal(le16(pq_device(&q)->flags), VRING_PACKED_EVENT_FLAG_DISABLE);
	assert_true(uvn_vq_dev_enable_notify(q.dev));
	assert_int_equal(le16(pq_device(&q)->flags), VRING_PACKED_EVENT_FLAG_ENABLE);
	uvn_vq_dev_disable_notify(q.dev);
	pk_chain(&q, &d, ds, 1, 0);
	assert_false(uvn_vq_dev_enable_notify(q.dev));
	tq_teardown(&q);
}

/* With EVENT_IDX the device asks for a kick at its next position/wrap. */
static void notify_desc_event(void **state)
{
	struct pkdrv d = { 0, true };
	struct tq q;

	(void)state;
	tq_setup(&q, 3, F_PACKED | F_EVENT_IDX, TQ_DEV);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[2] = { { a, 8, WRITE }, { a, 8, WRITE } };

	pk_chain(&q, &d, ds, 2, 0);
	pop_push_one(&q, 1);
	uvn_vq_dev_flush(q.dev);
	pk_chain(&q, &d, ds, 2, 1); /* positions 2 and 0 */
	pop_push_one(&q, 1);
	uvn_vq_dev_flush(q.dev);
	assert_true(uvn_vq_dev_enable_notify(q.dev));
	assert_int_equal(le16(pq_device(&q)->flags), VRING_PACKED_EVENT_FLAG_DESC);
	assert_int_equal(le16(pq_device(&q)->off_wrap), 1); /* position 1, wrap 0 */
	uvn_vq_dev_disable_notify(q.dev);
	assert_int_equal(le16(pq_device(&q)->flags), VRING_PACKED_EVENT_FLAG_DISABLE);
	pk_chain(&q, &d, ds, 1, 2);
	assert_false(uvn_vq_dev_enable_notify(q.dev));
	tq_teardown(&q);
}

static void create_rejects_bad_config(void **state)
{
	struct uvn_vq_dev *dev = NULL;
	struct uvn_vq_dev_cfg cfg;
	struct tq q;

	(void)state;
	tq_setup(&q, 5, F_PACKED, 0);
	cfg = tq_dev_cfg(&q, 5, true, 0, true);
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	cfg = tq_dev_cfg(&q, 0, true, 5, true);
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	cfg = tq_dev_cfg(&q, 0, true, 0, true);
	cfg.desc = (uint8_t *)cfg.desc + 4;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	cfg = tq_dev_cfg(&q, 0, true, 0, true);
	cfg.driver = (uint8_t *)cfg.driver + 2;
	assert_int_equal(uvn_vq_dev_create(&cfg, &dev), -UVN_VQ_E_INVAL);
	assert_null(dev);
	tq_teardown(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(direct_chain),
		cmocka_unit_test(indirect_chain),
		cmocka_unit_test(id_from_last_descriptor),
		cmocka_unit_test(buffer_over_two_pieces),
		cmocka_unit_test(out_of_order_completion),
		cmocka_unit_test(in_order_batch),
		cmocka_unit_test(batch_switch_while_staged),
		cmocka_unit_test(laps_size_1),
		cmocka_unit_test(laps_size_3),
		cmocka_unit_test(laps_size_255),
		cmocka_unit_test(laps_size_32768),
		cmocka_unit_test(starts_mid_ring),
		cmocka_unit_test(unpop_over_wrap),
		cmocka_unit_test(set_addrs_moves_ring),
		cmocka_unit_test(rewritten_direct),
		cmocka_unit_test(rewritten_indirect),
		cmocka_unit_test(flush_event_flags),
		cmocka_unit_test(flush_desc_event),
		cmocka_unit_test(notify_flags),
		cmocka_unit_test(notify_desc_event),
		cmocka_unit_test(create_rejects_bad_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
