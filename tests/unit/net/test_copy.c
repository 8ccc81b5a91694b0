/* SPDX-License-Identifier: MIT */
/*
 * uvn_copy() (lib/net/copy.h) copies exactly the bytes asked for and
 * nothing around them, whatever the page offsets of source and
 * destination; and what it hands to memcpy is the point of it: a copy of
 * more than UVN_COPY_CHUNK bytes whose (dst - src) mod 4096 is 1..63 goes
 * in chunks of at most UVN_COPY_CHUNK (short enough that glibc does not
 * use REP MOVSB, which is slow at those distances on AMD Zen 3/4), any
 * other copy as one call. memcpy's calls are recorded here, not timed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* Record what uvn_copy() asks memcpy for. */
struct call {
	uintptr_t dst, src;
	size_t len;
};
static struct call calls[16];
static unsigned ncalls;

static void *rec_memcpy(void *dst, const void *src, size_t len)
{
	if (ncalls < sizeof(calls) / sizeof(calls[0]))
		calls[ncalls] = (struct call){ (uintptr_t)dst, (uintptr_t)src, len };
	ncalls++;
	return memmove(dst, src, len);
}

#define memcpy rec_memcpy
#include "net/copy.h"
#undef memcpy

#define ROOM (4 * 4096)
#define GUARD 4096 /* keeps the destination's page offset */

static uint8_t src_mem[ROOM] __attribute__((aligned(4096)));
static uint8_t dst_mem[ROOM + 2 * GUARD] __attribute__((aligned(4096)));

static void check_copy(size_t soff, size_t doff, size_t len)
{
	uint8_t *src = src_mem + soff, *dst = dst_mem + GUARD + doff;
	size_t dist = (doff - soff) & 4095, sum = 0;

	for (size_t i = 0; i < sizeof(src_mem); i++)
		src_mem[i] = (uint8_t)(i * 7 + soff + len);
	memset(dst_mem, 0xa5, sizeof(dst_mem));
	ncalls = 0;
	uvn_copy(dst, src, len);
	assert_memory_equal(dst, src, len);
	for (uint8_t *b = dst_mem; b < dst; b++)
		assert_int_equal(*b, 0xa5);
	for (uint8_t *b = dst + len; b < dst_mem + sizeof(dst_mem); b++)
		assert_int_equal(*b, 0xa5);

	assert_true(ncalls <= sizeof(calls) / sizeof(calls[0]));
	if (len > UVN_COPY_CHUNK && dist && dist < UVN_COPY_NEAR) {
		/* In order, back to back, none longer than a chunk. */
		for (unsigned i = 0; i < ncalls; i++) {
			assert_true(calls[i].len <= UVN_COPY_CHUNK);
			assert_int_equal(calls[i].dst, (uintptr_t)dst + sum);
			assert_int_equal(calls[i].src, (uintptr_t)src + sum);
			sum += calls[i].len;
		}
		assert_int_equal(sum, len);
	} else {
		assert_int_equal(ncalls, 1);
		assert_int_equal(calls[0].len, len);
	}
}

/* Distances around the slow ones (1..63), each at several lengths. */
static void test_distances(void **state)
{
	static const size_t dists[] = { 0, 1, 12, 15, 16, 31, 32, 63, 64, 100, 2048, 4084, 4095 };
	static const size_t soffs[] = { 0, 12, 4000 };
	static const size_t lens[] = { 4084, 4096, UVN_COPY_CHUNK + 1, 2 * 4096 + 5 };

	(void)state;
	for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++)
		for (size_t s = 0; s < sizeof(soffs) / sizeof(soffs[0]); s++)
			for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
				check_copy(soffs[s], (soffs[s] + dists[d]) & 4095, lens[l]);
}

/* Lengths around a chunk, at a slow distance and at a fast one. */
static void test_lengths(void **state)
{
	static const size_t lens[] = { 0, 1, 63, 64, UVN_COPY_CHUNK - 1, UVN_COPY_CHUNK,
				       UVN_COPY_CHUNK + 1, 2 * UVN_COPY_CHUNK, 2 * UVN_COPY_CHUNK + 1,
				       3 * 4096 };

	(void)state;
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		check_copy(0, 12, lens[l]);
		check_copy(0, 0, lens[l]);
		check_copy(12, 0, lens[l]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distances),
		cmocka_unit_test(test_lengths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
