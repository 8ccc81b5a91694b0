/* SPDX-License-Identifier: MIT */
/* The chain-walker fuzzers' input header, byte by byte (see fuzz_ring.h). */
#include "fuzz_ring.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

void fz_hdr_put(const struct fz_hdr *h, uint8_t out[FZ_HDR_SIZE])
{
	out[0] = h->flags;
	out[1] = h->iov_max;
	put16(out + 2, h->qsize);
	put16(out + 4, h->avail_start);
	put16(out + 6, h->used_start);
	put16(out + 8, h->avail_idx);
	put16(out + 10, h->drv_flags);
	put16(out + 12, h->drv_event);
	out[14] = h->rounds;
	out[15] = h->npieces;
	put16(out + 16, h->ring_len);
	put16(out + 18, h->mem_len);
}

void fz_hdr_get(struct fz_hdr *h, const uint8_t in[FZ_HDR_SIZE])
{
	h->flags = in[0];
	h->iov_max = in[1];
	h->qsize = get16(in + 2);
	h->avail_start = get16(in + 4);
	h->used_start = get16(in + 6);
	h->avail_idx = get16(in + 8);
	h->drv_flags = get16(in + 10);
	h->drv_event = get16(in + 12);
	h->rounds = in[14];
	h->npieces = in[15];
	h->ring_len = get16(in + 16);
	h->mem_len = get16(in + 18);
}
