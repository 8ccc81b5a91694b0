/* SPDX-License-Identifier: MIT */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"

#define SLOTS_MEM (8u << 20)
#define MAX_SLOTS 256u
#define TSO_MSS 1448u

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static unsigned nslots(unsigned size)
{
	size_t n = SLOTS_MEM / round_up(size, WK_SEG);

	return n > MAX_SLOTS ? MAX_SLOTS : (unsigned)n;
}

size_t wkf_app_mem(unsigned size)
{
	if (size <= WK_SMALL_MAX)
		return 0;
	/* Slots, plus slack for the allocator's alignment. */
	return (size_t)nslots(size) * round_up(size, WK_SEG) + (1u << 20);
}

/* Ethernet + IPv4 + UDP (testpmd's txonly frame), or TCP for TSO frames. */
/* From port 1024 to 1025; a TSO frame is TCP, any other UDP. */
static void build_hdr(const struct wk_frames *f, uint8_t *b)
{
	const struct uvn_frame_addr a = { .dst = f->dst, .src = f->src, .sport = 1024, .dport = 1025 };

	if (f->gso)
		uvn_frame_tcp4(b, &a, f->size);
	else
		uvn_frame_udp4(b, &a, f->size);
}

/*
 * The headers into the frame at @b, per frame: a copy of the ones built at
 * init (every frame of a run has the same), as testpmd's txonly copies its
 * prepared headers into each mbuf. Constant lengths: a few moves.
 */
static inline void write_hdr(const struct wk_frames *f, uint8_t *b)
{
	if (f->gso)
		memcpy(b, f->hdr, UVN_FRAME_TCP_HDR);
	else
		memcpy(b, f->hdr, UVN_FRAME_UDP_HDR);
}

/* The offload request of a TSO frame: the device (or whoever) segments it. */
static void set_gso(struct uvn_pkt *p)
{
	p->vnet.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	p->vnet.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	p->vnet.gso_size = htole16(TSO_MSS);
	p->vnet.hdr_len = htole16(54);
	p->vnet.csum_start = htole16(34);
	p->vnet.csum_offset = htole16(16);
}

static void slot_done(struct uvn_pkt_ubuf *u)
{
	struct wk_slot *s = (struct wk_slot *)u;

	s->f->free[s->f->nfree++] = s;
}

static int init_big(struct wk_frames *f)
{
	f->slot_len = round_up(f->size, WK_SEG);
	f->nslots = nslots(f->size);
	f->mem_len = f->slot_len * f->nslots;
	f->mem = uvn_drv_mem_alloc(f->d, f->mem_len);
	f->slots = calloc(f->nslots, sizeof(*f->slots));
	f->free = calloc(f->nslots, sizeof(*f->free));
	if (!f->mem || !f->slots || !f->free)
		return -ENOMEM;
	for (unsigned i = 0; i < f->nslots; i++) {
		struct wk_slot *s = &f->slots[i];

		s->f = f;
		s->buf = f->mem + (size_t)i * f->slot_len;
		s->u.complete = slot_done;
		memset(s->buf, 0, f->size);
		write_hdr(f, s->buf);
		f->free[f->nfree++] = s;
	}
	return 0;
}

/* Write the template into every tx pool buffer of queue @q once. */
static void init_pool(struct wk_frames *f, unsigned q)
{
	struct uvn_pkt_pool *pool = uvn_drv_tx_pool(f->d, q);
	unsigned total = pool ? uvn_pkt_pool_count(pool) : 0, n = 0;
	struct uvn_pkt **all = calloc(total ? total : 1, sizeof(*all));

	if (!all)
		return;
	while (n + 32 <= total && uvn_drv_tx_alloc(f->d, q, all + n, 32, f->size) == 32) {
		for (unsigned i = n; i < n + 32; i++) {
			memset(all[i]->seg[0].iov_base, 0, f->size);
			write_hdr(f, all[i]->seg[0].iov_base);
		}
		n += 32;
	}
	uvn_pkt_free_bulk(all, n);
	free(all);
}

int wkf_init(struct wk_frames *f, struct uvn_drv *d, const struct pt_cfg *c, unsigned size,
	     const uint8_t dst[6], const uint8_t src[6])
{
	memset(f, 0, sizeof(*f));
	f->d = d;
	f->size = size;
	f->segs = c->segs ? c->segs : 1;
	f->queues = uvn_drv_queue_pairs(d);
	f->big = size > WK_SMALL_MAX;
	f->gso = size > PT_PLAIN_MAX &&
		 (uvn_drv_features(d) & (1ull << VIRTIO_NET_F_HOST_TSO4)) &&
		 (uvn_drv_features(d) & (1ull << VIRTIO_NET_F_CSUM));
	memcpy(f->dst, dst, 6);
	memcpy(f->src, src, 6);
	build_hdr(f, f->hdr);
	if (f->big)
		return init_big(f);
	for (unsigned q = 0; q < f->queues; q++)
		init_pool(f, q);
	return 0;
}

void wkf_fini(struct wk_frames *f)
{
	/* Slots still in flight are the driver's until it is closed; their
	 * memory goes with the driver's arena. */
	if (f->mem && f->nfree == f->nslots)
		uvn_drv_mem_free(f->d, f->mem, f->mem_len);
	free(f->slots);
	free(f->free);
	memset(f, 0, sizeof(*f));
}

const char *wkf_offload(const struct wk_frames *f)
{
	return f->gso ? "tso" : f->size > PT_PLAIN_MAX ? "jumbo" : "none";
}

/* Split a tx pool frame into @segs pieces of its data room (indirect tables). */
static void split(struct uvn_pkt *p, unsigned size, unsigned segs)
{
	uint8_t *b = p->seg[0].iov_base;
	unsigned per = size / segs, off = 0;

	for (unsigned i = 0; i < segs; i++) {
		unsigned len = i + 1 == segs ? size - off : per;

		p->seg[i].iov_base = b + off;
		p->seg[i].iov_len = len;
		off += len;
	}
	p->nseg = (uint16_t)segs;
}

static unsigned get_big(struct wk_frames *f, unsigned q, struct uvn_pkt **pkts, unsigned n,
			bool hdr, bool dirty, uint8_t fill)
{
	struct uvn_pkt_pool *pool = uvn_drv_tx_pool(f->d, q);

	if (n > f->nfree)
		n = f->nfree;
	if (!n || !uvn_pkt_alloc_bulk(pool, pkts, n))
		return 0;
	for (unsigned i = 0; i < n; i++) {
		struct wk_slot *s = f->free[--f->nfree];
		struct uvn_pkt *p = pkts[i];
		unsigned off = 0, k = 0;

		if (dirty)
			memset(s->buf, fill, f->size);
		if (hdr || dirty)
			write_hdr(f, s->buf);
		while (off < f->size) {
			unsigned len = f->size - off < WK_SEG ? f->size - off : WK_SEG;

			p->seg[k].iov_base = s->buf + off;
			p->seg[k++].iov_len = len;
			off += len;
		}
		p->nseg = (uint16_t)k;
		p->len = f->size;
		s->u.refs = 1;
		p->ubuf = &s->u;
		if (f->gso)
			set_gso(p);
	}
	return n;
}

unsigned wkf_get(struct wk_frames *f, unsigned q, struct uvn_pkt **pkts, unsigned n, bool hdr,
		 bool dirty, uint8_t fill)
{
	unsigned k;

	if (f->big)
		return get_big(f, q, pkts, n, hdr, dirty, fill);
	k = uvn_drv_tx_alloc(f->d, q, pkts, n, f->size);
	for (unsigned i = 0; i < k; i++) {
		uint8_t *b = pkts[i]->seg[0].iov_base;

		if (dirty)
			memset(b, fill, f->size);
		if (hdr || dirty)
			write_hdr(f, b);
		if (f->segs > 1)
			split(pkts[i], f->size, f->segs);
	}
	return k;
}

void wkf_swap_macs(struct uvn_pkt *p)
{
	uint8_t *m = p->seg[0].iov_base, t[6];

	if (p->seg[0].iov_len < 12)
		return;
	memcpy(t, m, 6);
	memcpy(m, m + 6, 6);
	memcpy(m + 6, t, 6);
}
