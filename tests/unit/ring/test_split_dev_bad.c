/* SPDX-License-Identifier: MIT */
/*
 * Split ring, device half: every malformed chain or index the driver can
 * write, one test each (a table row for each malformed chain), each
 * asserting its own error code, its counter, and that the queue stays
 * broken without touching guest memory again.
 */
#include <endian.h>
#include <string.h>

#include "ring_test.h"

#define NEXT VRING_DESC_F_NEXT
#define WRITE VRING_DESC_F_WRITE
#define INDIRECT VRING_DESC_F_INDIRECT

/* ------------------------------------------------------- malformed rings */

/* Each function taking a struct tq writes one malformed ring; the table at
 * the end says what the pop must fail with (run_bad_ring()). */

static void bad_head(struct tq *q)
{
	sq_set_desc(q, 0, tbuf(q, 8), 8, 0, 0);
	sq_publish(q, 8);
}

static void bad_next(struct tq *q)
{
	sq_set_desc(q, 0, tbuf(q, 8), 8, NEXT, 8);
	sq_publish(q, 0);
}

static void loop_in_chain(struct tq *q)
{
	uint64_t a = tbuf(q, 8);

	sq_set_desc(q, 3, a, 8, NEXT, 4);
	sq_set_desc(q, 4, a, 8, NEXT, 3);
	sq_publish(q, 3);
}

static void indirect_setup(struct tq *q, uint64_t addr, uint32_t len, uint16_t flags)
{
	sq_set_desc(q, 0, addr, len, flags, 1);
	sq_publish(q, 0);
}

static void indirect_len_not_multiple(struct tq *q)
{
	indirect_setup(q, tbuf(q, 64), 24, INDIRECT);
}

static void indirect_len_zero(struct tq *q)
{
	indirect_setup(q, tbuf(q, 64), 0, INDIRECT);
}

static void indirect_longer_than_queue(struct tq *q)
{
	indirect_setup(q, tbuf(q, 9 * 16), 9 * 16, INDIRECT);
}

/* A table of exactly the queue size is fine. */
static void indirect_of_queue_size(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_INDIRECT, TQ_DEV);
	uint64_t t = tm_alloc(&q.m, 8 * 16, 16), a = tbuf(&q, 8);

	for (unsigned i = 0; i < 8; i++)
		it_set(&q, t, i, a, 1, i < 7 ? NEXT : 0, (uint16_t)(i + 1));
	indirect_setup(&q, t, 8 * 16, INDIRECT);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_chain(&ch, 0, 8, 0, 8, 0);
	tq_teardown(&q);
}

static void indirect_unmapped(struct tq *q)
{
	indirect_setup(q, 0x1000, 32, INDIRECT);
}

/* The table's last entry runs into a hole (CVE-2018-1059's shape). */
static void indirect_straddles_hole(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 64, 16), a = tbuf(q, 8);

	it_set(q, t, 0, a, 8, NEXT, 1);
	it_set(q, t, 1, a, 8, NEXT, 2);
	tm_map(&q->m, t + 40, 4096, NULL);
	indirect_setup(q, t, 48, INDIRECT);
}

static void indirect_addr_wraps(struct tq *q)
{
	tm_map(&q->m, 0, 4096, q->m.base);
	tm_map(&q->m, UINT64_MAX - 4095, 4096, q->m.base + 4096);
	indirect_setup(q, UINT64_MAX - 15, 32, INDIRECT);
}

/* A table over two mapping pieces is read piecewise, entry 1 straddling. */
static void indirect_over_two_pieces(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	uint8_t img[48];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_INDIRECT, TQ_DEV);
	uint64_t t = tm_alloc(&q.m, 48, 16), other = tm_alloc(&q.m, 4096, 64);
	uint64_t a = tbuf(&q, 10), b = tbuf(&q, 20), c = tbuf(&q, 30);
	struct vring_desc *e = (struct vring_desc *)img;

	e[0] = (struct vring_desc){ htole64(a), htole32(10), htole16(NEXT), htole16(1) };
	e[1] = (struct vring_desc){ htole64(b), htole32(20), htole16(NEXT | WRITE), htole16(2) };
	e[2] = (struct vring_desc){ htole64(c), htole32(30), htole16(WRITE), htole16(0) };
	memcpy(tm_ptr(&q.m, t), img, 24);
	memset((uint8_t *)tm_ptr(&q.m, t) + 24, 0xff, 24); /* not what the device must see */
	memcpy(tm_ptr(&q.m, other), img + 24, 24);
	tm_map(&q.m, t + 24, 4096, tm_ptr(&q.m, other));
	indirect_setup(&q, t, 48, INDIRECT);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_chain(&ch, 0, 1, 2, 10, 50);
	check_iov(&q, &iov[0], a, 10);
	check_iov(&q, &iov[1], b, 20);
	check_iov(&q, &iov[2], c, 30);
	tq_teardown(&q);
}

/* A table that is not 8-byte aligned is still read correctly. */
static void indirect_unaligned(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[8];
	struct tq q;

	(void)state;
	tq_setup(&q, 8, F_INDIRECT, TQ_DEV);
	uint64_t t = tm_alloc(&q.m, 64, 16) + 3, a = tbuf(&q, 10), b = tbuf(&q, 20);
	struct vring_desc e[2] = {
		{ htole64(a), htole32(10), htole16(NEXT), htole16(1) },
		{ htole64(b), htole32(20), htole16(WRITE), htole16(0) },
	};

	memcpy(tm_ptr(&q.m, t), e, sizeof(e));
	indirect_setup(&q, t, 32, INDIRECT);
	assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 8), 1);
	check_chain(&ch, 0, 1, 1, 10, 20);
	check_iov(&q, &iov[1], b, 20);
	tq_teardown(&q);
}

static void indirect_nested(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 32, 16), t2 = tm_alloc(&q->m, 16, 16), a = tbuf(q, 8);

	it_set(q, t2, 0, a, 8, 0, 0);
	it_set(q, t, 0, a, 8, NEXT, 1);
	it_set(q, t, 1, t2, 16, INDIRECT, 0);
	indirect_setup(q, t, 32, INDIRECT);
}

static void indirect_with_next(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 16, 16), a = tbuf(q, 8);

	it_set(q, t, 0, a, 8, 0, 0);
	sq_set_desc(q, 1, a, 8, 0, 0);
	indirect_setup(q, t, 16, INDIRECT | NEXT);
}

static void indirect_without_feature(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 16, 16);

	it_set(q, t, 0, tbuf(q, 8), 8, 0, 0);
	indirect_setup(q, t, 16, INDIRECT);
}

static void readable_after_writable(struct tq *q)
{
	uint64_t a = tbuf(q, 8);

	sq_set_desc(q, 0, a, 8, WRITE | NEXT, 1);
	sq_set_desc(q, 1, a, 8, 0, 0);
	sq_publish(q, 0);
}

static void readable_after_writable_indirect(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 16, 16), a = tbuf(q, 8);

	it_set(q, t, 0, a, 8, 0, 0);
	sq_set_desc(q, 0, a, 8, WRITE | NEXT, 1);
	sq_set_desc(q, 1, t, 16, INDIRECT, 0);
	sq_publish(q, 0);
}

static void readable_after_writable_in_table(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 32, 16), a = tbuf(q, 8);

	it_set(q, t, 0, a, 8, WRITE | NEXT, 1);
	it_set(q, t, 1, a, 8, 0, 0);
	indirect_setup(q, t, 32, INDIRECT);
}

static void buffer_unmapped(struct tq *q)
{
	sq_set_desc(q, 0, 0x1000, 8, 0, 0);
	sq_publish(q, 0);
}

static void buffer_partly_mapped(struct tq *q)
{
	sq_set_desc(q, 0, TM_GPA + q->m.size - 10, 20, WRITE, 0);
	sq_publish(q, 0);
}

/* addr + len past 2^64 must not wrap into low memory, mapped or not. */
static void buffer_addr_wraps(struct tq *q)
{
	tm_map(&q->m, 0, 4096, q->m.base);
	tm_map(&q->m, UINT64_MAX - 4095, 4096, q->m.base + 4096);
	sq_set_desc(q, 0, UINT64_MAX - 15, 32, 0, 0);
	sq_publish(q, 0);
}

/* Two 2 GiB descriptors: 2^32 bytes in total. The big region is never
 * dereferenced by the walker, so it aliases the small block. */
static void chain_len_overflows(struct tq *q)
{
	const uint64_t big = 1ull << 40;
	tm_map(&q->m, big, 1ull << 33, q->m.base);
	sq_set_desc(q, 0, big, 0x80000000u, NEXT, 1);
	sq_set_desc(q, 1, big + 0x80000000u, 0x80000000u, WRITE, 0);
	sq_publish(q, 0);
}

static void zero_len(struct tq *q)
{
	uint64_t a = tbuf(q, 8);

	sq_set_desc(q, 0, a, 8, NEXT, 1);
	sq_set_desc(q, 1, a, 0, WRITE, 0);
	sq_publish(q, 0);
}

static void zero_len_in_table(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 16, 16);

	it_set(q, t, 0, tbuf(q, 8), 0, 0, 0);
	indirect_setup(q, t, 16, INDIRECT);
}

static void avail_idx_jumps(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 8, 0, TQ_DEV);
	sq_avail(&q)->idx = htole16(9);
	assert_int_equal(uvn_vq_dev_avail(q.dev), -UVN_VQ_E_AVAIL_IDX);
	expect_dev_broken(&q, UVN_VQ_E_AVAIL_IDX);
	tq_teardown(&q);
}

/* Exactly num entries ahead is fine; from a non-zero start too. */
static void avail_idx_full_ring(void **state)
{
	struct tq q;

	(void)state;
	tq_setup(&q, 8, 0, TQ_DEV);
	sq_avail(&q)->idx = htole16((uint16_t)(65535 + 8));
	tq_dev_create(&q, 65535, false, 65535, false);
	assert_int_equal(uvn_vq_dev_avail(q.dev), 8);
	sq_avail(&q)->idx = htole16((uint16_t)(65535 + 9));
	assert_int_equal(uvn_vq_dev_avail(q.dev), -UVN_VQ_E_AVAIL_IDX);
	expect_dev_broken(&q, UVN_VQ_E_AVAIL_IDX);
	tq_teardown(&q);
}

static void iov_too_small(struct tq *q)
{
	uint64_t a = tbuf(q, 8);

	sq_set_desc(q, 0, a, 8, NEXT, 1);
	sq_set_desc(q, 1, a, 8, NEXT, 2);
	sq_set_desc(q, 2, a, 8, WRITE, 0);
	sq_publish(q, 0);
}

static void iov_too_small_for_pieces(struct tq *q)
{
	uint64_t a = tbuf(q, 100);

	tm_map(&q->m, a + 50, 4096, tm_ptr(&q->m, tbuf(q, 4096)));
	sq_set_desc(q, 0, a, 100, 0, 0);
	sq_publish(q, 0);
}

/* One descriptor, for a pop given no room at all. */
static void iov_none_for_one(struct tq *q)
{
	sq_set_desc(q, 0, tbuf(q, 8), 8, 0, 0);
	sq_publish(q, 0);
}

static void iov_too_small_for_table(struct tq *q)
{
	uint64_t t = tm_alloc(&q->m, 64, 16), a = tbuf(q, 8);

	for (uint16_t i = 0; i < 4; i++)
		it_set(q, t, i, a, 8, i < 3 ? NEXT : WRITE, (uint16_t)(i + 1));
	indirect_setup(q, t, 64, INDIRECT);
}

static void iov_too_small_in_order(struct tq *q)
{
	iov_too_small_for_table(q);
}

/* Too long for the array, and malformed further on: the error wins, the
 * chain being checked whole before IOV_FULL is said. */
static void loop_past_iov_max(struct tq *q)
{
	loop_in_chain(q);
}

static void unmapped_past_iov_max(struct tq *q)
{
	uint64_t a = tbuf(q, 8);

	sq_set_desc(q, 0, a, 8, NEXT, 1);
	sq_set_desc(q, 1, a, 8, NEXT, 2);
	sq_set_desc(q, 2, a, 8, NEXT, 3);
	sq_set_desc(q, 3, 8, 8, 0, 0);
	sq_publish(q, 0);
}

/* One more buffer than the device takes in a chain (UVN_VQ_MAX_CHAIN_IOV):
 * legal for the ring's size, refused whatever the caller's array, so that
 * no pop walks further. Directly, and as an indirect table. */
static void chain_over_cap(struct tq *q)
{
	uint64_t a = tbuf(q, 8);

	for (uint16_t i = 0; i < UVN_VQ_MAX_CHAIN_IOV; i++)
		sq_set_desc(q, i, a, 8, NEXT, (uint16_t)(i + 1));
	sq_set_desc(q, UVN_VQ_MAX_CHAIN_IOV, a, 8, 0, 0);
	sq_publish(q, 0);
}

static void table_over_cap(struct tq *q)
{
	enum { N = UVN_VQ_MAX_CHAIN_IOV + 1 };
	uint64_t t = tm_alloc(&q->m, N * 16, 16), a = tbuf(q, 8);

	for (unsigned i = 0; i < N; i++)
		it_set(q, t, i, a, 8, i + 1 < N ? NEXT : 0, (uint16_t)(i + 1));
	indirect_setup(q, t, N * 16, INDIRECT);
}

/*
 * The avail index stays within num of what we popped, yet a driver that
 * re-posts heads whose used entries are not published yet gets more than
 * num chains out of us: the pop past the ring breaks the queue.
 */
static void overrun_between_flushes(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 4, 0, TQ_DEV);
	uint64_t a = tbuf(&q, 8);

	for (unsigned i = 0; i < 4; i++) {
		sq_set_desc(&q, i, a, 8, 0, 0);
		sq_publish(&q, (uint16_t)i);
		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
		uvn_vq_dev_push(q.dev, &ch, 0);
	}
	sq_publish(&q, 0);
	expect_pop_fails(&q, UVN_VQ_E_OVERRUN, 2);
	tq_teardown(&q);
}

/* Published entries free their slots; an unpopped chain frees its own. */
static void no_overrun_after_flush_or_unpop(void **state)
{
	struct uvn_vq_chain ch;
	struct iovec iov[2];
	struct tq q;

	(void)state;
	tq_setup(&q, 2, 0, TQ_DEV);
	uint64_t a = tbuf(&q, 8);

	sq_set_desc(&q, 0, a, 8, 0, 0);
	sq_set_desc(&q, 1, a, 8, 0, 0);
	for (unsigned i = 0; i < 20; i++) {
		sq_publish(&q, (uint16_t)(i & 1));
		assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
		if (i % 3 == 0) {
			uvn_vq_dev_unpop(q.dev, &ch);
			assert_int_equal(uvn_vq_dev_pop(q.dev, &ch, iov, 2), 1);
		}
		uvn_vq_dev_push(q.dev, &ch, 0);
		if (i & 1)
			uvn_vq_dev_flush(q.dev);
	}
	assert_int_equal(uvn_vq_dev_error(q.dev), 0);
	tq_teardown(&q);
}

/* The malformed rings above: the error each pop must fail with. */
static const struct bad_ring bad[] = {
	BAD_RING(bad_head, 8, 0, UVN_VQ_E_HEAD_RANGE, 4),
	BAD_RING(bad_next, 8, 0, UVN_VQ_E_NEXT_RANGE, 4),
	BAD_RING(loop_in_chain, 8, 0, UVN_VQ_E_LOOP, 64),
	BAD_RING(indirect_len_not_multiple, 8, F_INDIRECT, UVN_VQ_E_INDIRECT_LEN, 8),
	BAD_RING(indirect_len_zero, 8, F_INDIRECT, UVN_VQ_E_INDIRECT_LEN, 8),
	BAD_RING(indirect_longer_than_queue, 8, F_INDIRECT, UVN_VQ_E_INDIRECT_LEN, 16),
	BAD_RING(indirect_unmapped, 8, F_INDIRECT, UVN_VQ_E_INDIRECT_MAP, 8),
	BAD_RING(indirect_straddles_hole, 8, F_INDIRECT, UVN_VQ_E_INDIRECT_MAP, 8),
	BAD_RING(indirect_addr_wraps, 8, F_INDIRECT, UVN_VQ_E_INDIRECT_MAP, 8),
	BAD_RING(indirect_nested, 8, F_INDIRECT, UVN_VQ_E_INDIRECT_NESTED, 8),
	BAD_RING(indirect_with_next, 8, F_INDIRECT, UVN_VQ_E_INDIRECT_NEXT, 8),
	BAD_RING(indirect_without_feature, 8, 0, UVN_VQ_E_INDIRECT_FEATURE, 8),
	BAD_RING(readable_after_writable, 8, 0, UVN_VQ_E_WRITE_ORDER, 8),
	BAD_RING(readable_after_writable_indirect, 8, F_INDIRECT, UVN_VQ_E_WRITE_ORDER, 8),
	BAD_RING(readable_after_writable_in_table, 8, F_INDIRECT, UVN_VQ_E_WRITE_ORDER, 8),
	BAD_RING(buffer_unmapped, 8, 0, UVN_VQ_E_UNMAPPED, 8),
	BAD_RING(buffer_partly_mapped, 8, 0, UVN_VQ_E_UNMAPPED, 8),
	BAD_RING(buffer_addr_wraps, 8, 0, UVN_VQ_E_UNMAPPED, 8),
	BAD_RING(chain_len_overflows, 8, 0, UVN_VQ_E_LEN_OVERFLOW, 8),
	BAD_RING(zero_len, 8, 0, UVN_VQ_E_ZERO_LEN, 8),
	BAD_RING(zero_len_in_table, 8, F_INDIRECT, UVN_VQ_E_ZERO_LEN, 8),
	BAD_RING(loop_past_iov_max, 8, 0, UVN_VQ_E_LOOP, 1),
	BAD_RING(unmapped_past_iov_max, 8, 0, UVN_VQ_E_UNMAPPED, 2),
	BAD_RING(chain_over_cap, 2048, 0, UVN_VQ_E_CHAIN_LONG, 4),
	BAD_RING(table_over_cap, 2048, F_INDIRECT, UVN_VQ_E_CHAIN_LONG, 0),
};

/* Legal chains too long for the caller's array: retryable, not errors. */
static const struct iov_full_case iov_full[] = {
	IOV_FULL(iov_too_small, 8, 0, 2, 3),
	IOV_FULL(iov_too_small_for_pieces, 8, 0, 1, 2),
	IOV_FULL(iov_none_for_one, 8, 0, 0, 1),
	IOV_FULL(iov_too_small_for_table, 8, F_INDIRECT, 3, 4),
	IOV_FULL(iov_too_small_in_order, 8, F_INDIRECT | F_IN_ORDER, 1, 4),
};

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(indirect_of_queue_size),
		cmocka_unit_test(indirect_over_two_pieces),
		cmocka_unit_test(indirect_unaligned),
		cmocka_unit_test(avail_idx_jumps),
		cmocka_unit_test(avail_idx_full_ring),
		cmocka_unit_test(overrun_between_flushes),
		cmocka_unit_test(no_overrun_after_flush_or_unpop),
	};
	static const struct test_table tables[] = { TEST_TABLE(bad, run_bad_ring),
						    TEST_TABLE(iov_full, run_iov_full) };

	return run_test_tables(tests, NELEM(tests), tables, NELEM(tables));
}
