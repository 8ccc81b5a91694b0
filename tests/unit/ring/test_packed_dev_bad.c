/* SPDX-License-Identifier: MIT */
/*
 * Packed ring, device half: every malformed chain the driver can write,
 * one test each (a table row for each), each asserting its own error code,
 * its counter, and that the queue stays broken without touching guest
 * memory again.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "ring_test.h"

#define NEXT VRING_DESC_F_NEXT
#define WRITE VRING_DESC_F_WRITE
#define INDIRECT VRING_DESC_F_INDIRECT
#define WRAP15 (1u << 15)

/* ------------------------------------------------------- malformed rings */

/* Each function taking a struct tq writes one malformed ring; the table at
 * the end says what the pop must fail with (run_bad_ring()). */

static void one_desc(struct tq *q, uint64_t addr, uint32_t len, uint16_t flags, uint16_t id)
{
	struct pkdrv d = { 0, true };
	const struct tdesc ds[1] = { { addr, len, flags } };

	pk_chain_raw(q, &d, ds, 1, id);
}

static void bad_id(struct tq *q)
{
	one_desc(q, tbuf(q, 8), 8, 0, 5);
}

/* NEXT on every descriptor: the chain runs around the ring. */
static void loop_around_ring(struct tq *q)
{
	struct pkdrv d = { 0, true };
	struct tdesc ds[4];
	uint64_t a = tbuf(q, 8);

	for (unsigned i = 0; i < 4; i++)
		ds[i] = (struct tdesc){ a, 8, NEXT };
	pk_chain_raw(q, &d, ds, 4, 0);
}

static void chain_of_queue_size(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tdesc ds[5];
	struct tq q;

	(void)state;
	tq_setup(&q, 5, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 8);

	for (unsigned i = 0; i < 5; i++)
		ds[i] = (struct tdesc){ a, 8, i >= 3 ? WRITE : 0 };
	pk_chain(&q, &d, ds, 5, 4);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_pchain(&ch, 4, 5, 3, 2, 24, 16);
	assert_int_equal(uvn_vq_dev_avail_state(q.dev), 0);
	tq_teardown(&q);
}

static void indirect_len_not_multiple(struct tq *q)
{
	one_desc(q, tbuf(q, 64), 40, INDIRECT, 0);
}

static void indirect_len_zero(struct tq *q)
{
	one_desc(q, tbuf(q, 64), 0, INDIRECT, 0);
}

static void indirect_longer_than_queue(struct tq *q)
{
	one_desc(q, tbuf(q, 64), 64, INDIRECT, 0);
}

static void indirect_unmapped(struct tq *q)
{
	one_desc(q, 0x2000, 32, INDIRECT, 0);
}

static void indirect_straddles_hole(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 64, 16), a = tbuf(q, 8);

	pt_set(q, t, 0, a, 8, 0);
	tm_map(&q->m, t + 20, 4096, NULL);
	one_desc(q, t, 32, INDIRECT, 0);
}

static void indirect_addr_wraps(struct tq *q)
{
	tm_map(&q->m, 0, 4096, q->m.base);
	tm_map(&q->m, UINT64_MAX - 4095, 4096, q->m.base + 4096);
	one_desc(q, UINT64_MAX - 15, 32, INDIRECT, 0);
}

static void indirect_over_two_pieces(void **state)
{
	struct vring_packed_desc img[3];
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED | F_INDIRECT, TQ_DEV);
	uint64_t t = tm_alloc(&q.m, 48, 16), other = tm_alloc(&q.m, 4096, 64);
	uint64_t a = tbuf(&q, 10), b = tbuf(&q, 20), c = tbuf(&q, 30);

	img[0] = (struct vring_packed_desc){ htole64(a), htole32(10), 0, 0 };
	img[1] = (struct vring_packed_desc){ htole64(b), htole32(20), 0, htole16(WRITE) };
	img[2] = (struct vring_packed_desc){ htole64(c), htole32(30), 0, htole16(WRITE) };
	memcpy(tm_ptr(&q.m, t), img, 20);
	memset((uint8_t *)tm_ptr(&q.m, t) + 20, 0xff, 28);
	memcpy(tm_ptr(&q.m, other), (uint8_t *)img + 20, 28);
	tm_map(&q.m, t + 20, 4096, tm_ptr(&q.m, other));
	one_desc(&q, t, 48, INDIRECT, 3);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_pchain(&ch, 3, 1, 1, 2, 10, 50);
	check_iov(&q, &iov[0], a, 10);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 30);
	tq_teardown(&q);
}

static void indirect_nested(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 32, 16), a = tbuf(q, 8);

	pt_set(q, t, 0, a, 8, 0);
	pt_set(q, t, 1, t, 16, INDIRECT);
	one_desc(q, t, 32, INDIRECT, 0);
}

static void indirect_with_next(struct tq *q)
{
	struct pkdrv d = { 0, true };
	uint64_t t = tm_alloc(&q->m, 16, 16), a = tbuf(q, 8);
	const struct tdesc ds[2] = { { t, 16, INDIRECT | NEXT }, { a, 8, 0 } };

	pt_set(q, t, 0, a, 8, 0);
	pk_chain_raw(q, &d, ds, 2, 0);
}

static void indirect_without_feature(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 16, 16);

	pt_set(q, t, 0, tbuf(q, 8), 8, 0);
	one_desc(q, t, 16, INDIRECT, 0);
}

static void readable_after_writable(struct tq *q)
{
	struct pkdrv d = { 0, true };
	uint64_t a = tbuf(q, 8);
	const struct tdesc ds[2] = { { a, 8, WRITE }, { a, 8, 0 } };

	pk_chain(q, &d, ds, 2, 0);
}

static void readable_after_writable_in_table(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 32, 16), a = tbuf(q, 8);

	pt_set(q, t, 0, a, 8, WRITE);
	pt_set(q, t, 1, a, 8, 0);
	one_desc(q, t, 32, INDIRECT, 0);
}

static void buffer_unmapped(struct tq *q)
{
	one_desc(q, 0x3000, 8, WRITE, 0);
}

static void buffer_partly_mapped(struct tq *q)
{
	uint64_t a = tbuf(q, 64);

	tm_map(&q->m, a + 32, 64, NULL);
	one_desc(q, a, 64, 0, 0);
}

static void buffer_addr_wraps(struct tq *q)
{
	tm_map(&q->m, 0, 4096, q->m.base);
	tm_map(&q->m, UINT64_MAX - 4095, 4096, q->m.base + 4096);
	one_desc(q, UINT64_MAX - 7, 16, WRITE, 0);
}

static void chain_len_overflows(struct tq *q)
{
	const uint64_t big = 1ull << 40;
	struct pkdrv d = { 0, true };
	tm_map(&q->m, big, 1ull << 33, q->m.base);
	const struct tdesc ds[3] = { { big, 0xffffff00u, 0 }, { big, 0x80u, 0 }, { big, 0x80u, WRITE } };

	pk_chain(q, &d, ds, 3, 0);
}

static void zero_len(struct tq *q)
{
	one_desc(q, tbuf(q, 8), 0, WRITE, 0);
}

static void zero_len_in_table(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 32, 16), a = tbuf(q, 8);

	pt_set(q, t, 0, a, 8, 0);
	pt_set(q, t, 1, a, 0, WRITE);
	one_desc(q, t, 32, INDIRECT, 0);
}

static void iov_too_small(struct tq *q)
{
	struct pkdrv d = { 0, true };
	uint64_t a = tbuf(q, 8);
	const struct tdesc ds[3] = { { a, 8, 0 }, { a, 8, 0 }, { a, 8, WRITE } };

	pk_chain(q, &d, ds, 3, 0);
}

static void iov_none_for_one(struct tq *q)
{
	one_desc(q, tbuf(q, 8), 8, 0, 2);
}

static void iov_too_small_for_table(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 64, 16), a = tbuf(q, 8);

	for (unsigned i = 0; i < 4; i++)
		pt_set(q, t, i, a, 8, i < 3 ? 0 : WRITE);
	one_desc(q, t, 64, INDIRECT, 1);
}

static void iov_too_small_in_order(struct tq *q)
{
	iov_too_small(q);
}

/* Too long for the array, and malformed further on: the error wins. */
static void loop_past_iov_max(struct tq *q)
{
	loop_around_ring(q);
}

static void bad_id_past_iov_max(struct tq *q)
{
	struct pkdrv d = { 0, true };
	uint64_t a = tbuf(q, 8);
	const struct tdesc ds[3] = { { a, 8, 0 }, { a, 8, 0 }, { a, 8, WRITE } };

	pk_chain(q, &d, ds, 3, 9);
}

/* Not made available (wrong AVAIL/USED bits): nothing to pop, no error. */
static void not_available(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED, TQ_DEV);
	pq_desc(&q, 0)->addr = htole64(tbuf(&q, 8));
	pq_desc(&q, 0)->len = htole32(8);
	pq_desc(&q, 0)->flags = htole16(PK_AVAIL | PK_USED);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 0);
	pq_desc(&q, 0)->flags = htole16(PK_USED);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 0);
	assert_int_equal(uvn_vq_dev_error(q.dev), 0);
	tq_teardown(&q);
}

/*
 * A driver that makes slots available again before the device returned
 * them (flipping AVAIL/USED on the next lap) while the device batches
 * IN_ORDER used elements without a flush in between: once the ring is
 * full the next pop breaks the queue instead of letting the batch carry
 * the used position past the ring (it used to reach num * laps).
 */
static void overrun_between_flushes(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, F_PACKED | F_IN_ORDER, TQ_DEV);
	uvn_vq_dev_set_batch_used(q.dev, true);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[1] = { { a, 8, 0 } };

	for (unsigned i = 0; i < 4; i++) {
		pk_chain(&q, &d, ds, 1, (uint16_t)i);
		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
		uvn_vq_dev_push(q.dev, &ch, 0);
	}
	pk_chain(&q, &d, ds, 1, 0); /* slot 0 again, its used element unpublished */
	expect_pop_fails(&q, UVN_VQ_E_OVERRUN, 2);
	assert_true((uvn_vq_dev_used_state(q.dev) & 0x7fff) < 4);
	tq_teardown(&q);
}

/* Slots popped and still held (not pushed) count as well. */
static void overrun_while_held(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	struct tq q;

	(void)state;
	tq_setup(&q, 5, F_PACKED, TQ_DEV);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc two[2] = { { a, 8, 0 }, { a, 8, 0 } };

	pk_chain(&q, &d, two, 2, 0);
	pk_chain(&q, &d, two, 2, 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 4), 1);
	pk_chain(&q, &d, two, 2, 2); /* positions 4 and 0: one slot too many */
	expect_pop_fails(&q, UVN_VQ_E_OVERRUN, 4);
	tq_teardown(&q);
}

/* A flush gives the slots back: the next lap pops as before. */
static void full_laps_with_flushes(void **state)
{
	struct pkdrv d = { 0, true };
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 3, F_PACKED | F_IN_ORDER, TQ_DEV);
	uvn_vq_dev_set_batch_used(q.dev, true);
	uint64_t a = tbuf(&q, 8);
	const struct tdesc ds[1] = { { a, 8, 0 } };

	for (unsigned lap = 0; lap < 5; lap++) {
		for (unsigned i = 0; i < 3; i++) {
			pk_chain(&q, &d, ds, 1, (uint16_t)i);
			assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
			uvn_vq_dev_push(q.dev, &ch, 0);
		}
		uvn_vq_dev_flush(q.dev);
	}
	assert_int_equal(uvn_vq_dev_error(q.dev), 0);
	/* five laps of three: position 0, wrap counter flipped five times */
	assert_int_equal(uvn_vq_dev_used_state(q.dev), 0);
	tq_teardown(&q);
}

/* The malformed rings above: the error each pop must fail with. */
static const struct bad_ring bad[] = {
	BAD_RING(bad_id, 5, F_PACKED, UVN_VQ_E_HEAD_RANGE, 4),
	BAD_RING(loop_around_ring, 4, F_PACKED, UVN_VQ_E_LOOP, 64),
	BAD_RING(indirect_len_not_multiple, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_INDIRECT_LEN, 8),
	BAD_RING(indirect_len_zero, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_INDIRECT_LEN, 8),
	BAD_RING(indirect_longer_than_queue, 3, F_PACKED | F_INDIRECT, UVN_VQ_E_INDIRECT_LEN, 8),
	BAD_RING(indirect_unmapped, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_INDIRECT_MAP, 8),
	BAD_RING(indirect_straddles_hole, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_INDIRECT_MAP, 8),
	BAD_RING(indirect_addr_wraps, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_INDIRECT_MAP, 8),
	BAD_RING(indirect_nested, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_INDIRECT_NESTED, 8),
	BAD_RING(indirect_with_next, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_INDIRECT_NEXT, 8),
	BAD_RING(indirect_without_feature, 4, F_PACKED, UVN_VQ_E_INDIRECT_FEATURE, 8),
	BAD_RING(readable_after_writable, 4, F_PACKED, UVN_VQ_E_WRITE_ORDER, 8),
	BAD_RING(readable_after_writable_in_table, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_WRITE_ORDER, 8),
	BAD_RING(buffer_unmapped, 4, F_PACKED, UVN_VQ_E_UNMAPPED, 8),
	BAD_RING(buffer_partly_mapped, 4, F_PACKED, UVN_VQ_E_UNMAPPED, 8),
	BAD_RING(buffer_addr_wraps, 4, F_PACKED, UVN_VQ_E_UNMAPPED, 8),
	BAD_RING(chain_len_overflows, 4, F_PACKED, UVN_VQ_E_LEN_OVERFLOW, 8),
	BAD_RING(zero_len, 4, F_PACKED, UVN_VQ_E_ZERO_LEN, 8),
	BAD_RING(zero_len_in_table, 4, F_PACKED | F_INDIRECT, UVN_VQ_E_ZERO_LEN, 8),
	BAD_RING(loop_past_iov_max, 4, F_PACKED, UVN_VQ_E_LOOP, 1),
	BAD_RING(bad_id_past_iov_max, 4, F_PACKED, UVN_VQ_E_HEAD_RANGE, 2),
};

/* Legal chains too long for the caller's array: retryable, not errors. */
static const struct iov_full_case iov_full[] = {
	IOV_FULL(iov_too_small, 4, F_PACKED, 2, 3),
	IOV_FULL(iov_none_for_one, 4, F_PACKED, 0, 1),
	IOV_FULL(iov_too_small_for_table, 4, F_PACKED | F_INDIRECT, 3, 4),
	IOV_FULL(iov_too_small_in_order, 4, F_PACKED | F_IN_ORDER, 1, 3),
};

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(chain_of_queue_size),
		cmocka_unit_test(indirect_over_two_pieces),
		cmocka_unit_test(not_available),
		cmocka_unit_test(overrun_between_flushes),
		cmocka_unit_test(overrun_while_held),
		cmocka_unit_test(full_laps_with_flushes),
	};
	static const struct test_table tables[] = { TEST_TABLE(bad, run_bad_ring),
						    TEST_TABLE(iov_full, run_iov_full) };

	return run_test_tables(tests, NELEM(tests), tables, NELEM(tables));
}
