/* SPDX-License-Identifier: MIT */
/*
 * For the stateful fuzzers, which keep a session's surroundings from one
 * input to the next (fuzz_device, fuzz_qmp): checks that every input
 * starts from the same state, so that an input that fails in a run fails
 * alone too. FZ_REPEAT=1 runs each input twice and aborts if the two runs
 * ended differently; FZ_DIGEST=1 prints a digest of how each input ended,
 * to compare a run alone with one among others.
 */
#ifndef UVN_FUZZ_REPEAT_H
#define UVN_FUZZ_REPEAT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_HASH_SEED 0xcbf29ce484222325ull

/* FNV-1a of @n bytes at @p, continuing from @h. */
static inline uint64_t fz_hash(const void *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
	return h;
}

/*
 * Run one input: @run(data, size, outcome) fills @osize bytes at outcome
 * (all of them: padding too) with how it ended, or is passed NULL when
 * nobody looks (neither variable set).
 */
static inline void fz_run_checked(void (*run)(const uint8_t *, size_t, void *),
				  const uint8_t *data, size_t size, void *a, void *b, size_t osize)
{
	static int repeat = -1, digest;

	if (repeat < 0) {
		repeat = getenv("FZ_REPEAT") != NULL;
		digest = getenv("FZ_DIGEST") != NULL;
	}
	/* What a run leaves unset (an input it refuses) compares equal. */
	memset(a, 0, osize);
	memset(b, 0, osize);
	run(data, size, repeat || digest ? a : NULL);
	if (digest)
		fprintf(stderr, "FZ_DIGEST %016llx\n",
			(unsigned long long)fz_hash(a, osize, FZ_HASH_SEED));
	if (!repeat)
		return;
	run(data, size, b);
	if (memcmp(a, b, osize)) {
		fprintf(stderr, "FZ_REPEAT: two runs of one input ended differently "
			"(digests %016llx, %016llx)\n",
			(unsigned long long)fz_hash(a, osize, FZ_HASH_SEED),
			(unsigned long long)fz_hash(b, osize, FZ_HASH_SEED));
		abort();
	}
}

#endif
