/* SPDX-License-Identifier: MIT */
/*
 * The workload: chain shapes and byte patterns as pure functions of
 * (seed, sequence number), so the driver and the device agree on them
 * without talking.
 */
#include "cross.h"

uint64_t cross_mix(uint64_t a, uint64_t b)
{
	/* splitmix64 finaliser over a combination of both words */
	uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t cross_rand(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return cross_mix(*state, 0);
}

unsigned cross_below(uint64_t *state, unsigned n)
{
	return n ? (unsigned)(cross_rand(state) % n) : 0;
}

static uint32_t seg_len(uint64_t *r, unsigned total)
{
	unsigned limit = CROSS_SLOT_CAP / total, cls = cross_below(r, 100), max;

	/* Mostly small buffers (many ops per second), sometimes large ones. */
	max = cls < 70 ? 64 : cls < 95 ? 512 : limit;
	if (max > limit)
		max = limit;
	return 1 + cross_below(r, max);
}

void cross_shape(const struct cross_cfg *cfg, uint64_t seq, struct cross_shape *s)
{
	uint64_t r = cross_mix(cfg->seed, seq);
	unsigned total;

	/* Half the chains short, the rest anything up to max_segs. */
	if (cross_below(&r, 2))
		total = 1 + cross_below(&r, cfg->max_segs < 3 ? cfg->max_segs : 3);
	else
		total = 1 + cross_below(&r, cfg->max_segs);
	s->nout = cross_below(&r, total + 1);
	s->nin = total - s->nout;
	s->out_len = s->in_len = 0;
	for (unsigned k = 0; k < total; k++) {
		s->len[k] = seg_len(&r, total);
		if (k < s->nout)
			s->out_len += s->len[k];
		else
			s->in_len += s->len[k];
	}
	if (!s->nin)
		s->used_len = 0;
	else if (cfg->order == ORDER_IN_BATCH || cross_below(&r, 4) == 0)
		/* A batched used element reports whole buffers. */
		s->used_len = s->in_len;
	else
		s->used_len = cross_below(&r, s->in_len + 1);
}

uint64_t cross_key(const struct cross_cfg *cfg, uint64_t seq, unsigned who)
{
	return cross_mix(cross_mix(cfg->seed, who), seq);
}

static inline uint8_t pattern(uint64_t key, uint32_t i)
{
	return (uint8_t)((uint8_t)(key >> ((i & 7) << 3)) + (uint8_t)(i >> 3));
}

void cross_fill(uint8_t *p, uint32_t len, uint64_t key, uint32_t from)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pattern(key, from + i);
}

long cross_check(const uint8_t *p, uint32_t len, uint64_t key, uint32_t from)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pattern(key, from + i))
			return (long)(from + i);
	return -1;
}

/* Fill or check bytes [skip, skip+len) of what an iovec array describes. */
static long iov_walk(const struct iovec *iov, unsigned n, uint32_t skip, uint32_t len,
		     uint64_t key, bool fill)
{
	uint32_t at = 0; /* pattern index of the piece's first byte */

	for (unsigned k = 0; k < n && len; k++) {
		uint8_t *base = iov[k].iov_base;
		uint32_t l = (uint32_t)iov[k].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		base += skip;
		l -= skip;
		skip = 0;
		if (l > len)
			l = len;
		if (fill) {
			cross_fill(base, l, key, at);
		} else {
			long bad = cross_check(base, l, key, at);

			if (bad >= 0)
				return bad;
		}
		at += l;
		len -= l;
	}
	return len ? (long)at : -1; /* short iovecs: the first missing byte */
}

void cross_iov_fill(const struct iovec *iov, unsigned n, uint32_t skip, uint32_t len,
		    uint64_t key)
{
	iov_walk(iov, n, skip, len, key, true);
}

long cross_iov_check(const struct iovec *iov, unsigned n, uint32_t skip, uint32_t len,
		     uint64_t key)
{
	return iov_walk(iov, n, skip, len, key, false);
}
