/* SPDX-License-Identifier: MIT */
/*
 * Receive. Three ways to post buffers:
 *  small      one header + frame buffer per frame; the frame is copied out
 *             into a packet and the buffer reposted;
 *  big        a chain of 4 KB pages per frame (up to 64 KB), no MRG_RXBUF;
 *  mergeable  single buffers; a frame spreads over num_buffers of them.
 *
 * Deferred allocation (seed 000): the ring holds raw buffers (page
 * fragments, or a record of a big chain's pages) and the packet object is
 * made only when a buffer comes back used. Off, each posted buffer carries
 * its packet object from the start (tokens tagged TOK_PKT), as before the
 * seed; mergeable frames then also free the objects of their later buffers.
 * Either way every buffer is accounted for: in the ring, in a packet the
 * application holds, or in the recycle stack, and drain returns them all.
 *
 * Nothing the backend wrote is trusted: used lengths are checked by the
 * ring against what was posted and here against the header and frame
 * limits; num_buffers and the header's flags and offsets are validated.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>

#include "net/driver/drv.h"

#define EWMA_WEIGHT 64u

static unsigned small_frame(const struct uvn_drv *d)
{
	unsigned f = d->cfg.mtu + UVN_ETH_HLEN + 4;

	return f < DRV_GOOD_PACKET_LEN ? DRV_GOOD_PACKET_LEN : f;
}

static unsigned align_up(unsigned v, unsigned a)
{
	return (v + a - 1) & ~(a - 1);
}

unsigned drv_mrg_buf_len(const struct drv_rxq *rq)
{
	const struct uvn_drv *d = rq->d;
	unsigned frame = d->cfg.mtu + UVN_ETH_HLEN + 4, len;

	switch (drv_opt(d, UVN_OPT_MRG_SIZING)) {
	case UVN_MRG_MTU_ONLY:
		/* Before seed 003: room for the frame, none for the header. */
		return frame;
	case UVN_MRG_EWMA: {
		unsigned avg = rq->ewma, hi = DRV_EWMA_MAX - d->hdr_len;

		if (avg > hi)
			avg = hi;
		if (avg < frame)
			avg = frame;
		len = d->hdr_len + avg;
		break;
	}
	default:
		len = d->hdr_len + frame;
		break;
	}
	len = align_up(len, CACHE_LINE);
	/* Jumbo MTUs: keep buffers to a fraction of a fragment page. */
	return len < DRV_MRG_MAX ? len : DRV_MRG_MAX;
}

/* ------------------------------------------------------------- set-up */

int drv_rxq_init(struct uvn_drv *d, struct drv_rxq *rq)
{
	struct uvn_pkt_pool_cfg pc = { .count = d->cfg.rx_pkts, .name = "rx" };
	unsigned num = rq->r.num;
	size_t page;
	int ret;

	rq->mode = d->rx_mode;
	if (rq->mode == UVN_RX_SMALL && small_frame(d) > DRV_ROOM - UVN_DRV_HEADROOM)
		return -EINVAL;
	/* The arena aligns offsets from its base, which is only page aligned
	 * without hugepages: align the pool's pages ourselves. */
	/* Big mode takes whole 4 KB pages: each is its own pool page, reusable
	 * as soon as it comes back (64 KB pages would stay pinned by any one
	 * of their sixteen 4 KB pieces). */
	page = rq->mode == UVN_RX_BIG ? DRV_BIG_PAGE : DRV_FRAG_PAGE;
	rq->frag_len = drv_rx_buf_bytes(d) + page;
	rq->frag_mem = uvn_arena_alloc(d->arena, rq->frag_len, CACHE_LINE);
	if (!rq->frag_mem)
		return -ENOMEM;
	ret = uvn_frag_pool_create((void *)(((uintptr_t)rq->frag_mem + page - 1) & ~(uintptr_t)(page - 1)),
				   rq->frag_len - page, page, &rq->frags);
	if (ret)
		return ret;
	if (rq->mode == UVN_RX_SMALL) {
		/* Data rooms in the arena: a received frame can be sent on as is. */
		rq->pkt_mem_len = (size_t)pc.count * DRV_ROOM;
		rq->pkt_mem = uvn_arena_alloc(d->arena, rq->pkt_mem_len, CACHE_LINE);
		if (!rq->pkt_mem)
			return -ENOMEM;
		pc.buf_size = DRV_ROOM;
		pc.mem = rq->pkt_mem;
	}
	ret = uvn_pkt_pool_create(&pc, &rq->pkts);
	if (ret)
		return ret;
	if (rq->mode == UVN_RX_MERGEABLE) {
		struct uvn_pkt_pool_cfg oc = {
			.count = DRV_OVERFLOW_PKTS, .buf_size = DRV_OVERFLOW_ROOM, .name = "rx-overflow",
		};

		rq->overflow_mem = uvn_arena_alloc(d->arena, oc.count * oc.buf_size, CACHE_LINE);
		if (!rq->overflow_mem)
			return -ENOMEM;
		oc.mem = rq->overflow_mem;
		ret = uvn_pkt_pool_create(&oc, &rq->overflow);
		if (ret)
			return ret;
	}
	rq->recycle_cap = rq->mode == UVN_RX_BIG ? num * DRV_BIG_PAGES : num;
	rq->recycle = calloc(rq->recycle_cap, sizeof(*rq->recycle));
	if (!rq->recycle)
		return -ENOMEM;
	if (rq->mode == UVN_RX_BIG) {
		rq->recs = calloc(num, sizeof(*rq->recs));
		rq->rec_free = calloc(num, sizeof(*rq->rec_free));
		if (!rq->recs || !rq->rec_free)
			return -ENOMEM;
		for (unsigned i = 0; i < num; i++)
			rq->rec_free[i] = &rq->recs[num - 1 - i];
		rq->nrec_free = num;
	}
	rq->ewma = 0;
	rq->buf_len = drv_mrg_buf_len(rq);
	return 0;
}

void drv_rxq_fini(struct drv_rxq *rq)
{
	struct uvn_drv *d = rq->d;

	if (!d)
		return;
	uvn_pkt_pool_destroy(rq->overflow);
	uvn_pkt_pool_destroy(rq->pkts);
	uvn_frag_pool_destroy(rq->frags);
	if (rq->overflow_mem)
		uvn_arena_free(d->arena, rq->overflow_mem, DRV_OVERFLOW_PKTS * DRV_OVERFLOW_ROOM);
	if (rq->pkt_mem)
		uvn_arena_free(d->arena, rq->pkt_mem, rq->pkt_mem_len);
	if (rq->frag_mem)
		uvn_arena_free(d->arena, rq->frag_mem, rq->frag_len);
	free(rq->recycle);
	free(rq->recs);
	free(rq->rec_free);
	memset(rq, 0, sizeof(*rq));
}

/* ------------------------------------------------------ buffers, pages */

static void recycle(struct drv_rxq *rq, void *buf)
{
	if (UVN_LIKELY(rq->nrecycle < rq->recycle_cap))
		rq->recycle[rq->nrecycle++] = buf;
	else
		uvn_frag_put(rq->frags, buf);
}

/* A small buffer or a big-mode page: reuse one, or carve a new one. */
static void *get_buf(struct drv_rxq *rq, size_t size, size_t align)
{
	if (rq->nrecycle)
		return rq->recycle[--rq->nrecycle];
	return uvn_frag_alloc(rq->frags, size, align);
}

static size_t small_buf_size(const struct drv_rxq *rq)
{
	return rq->d->hdr_len + small_frame(rq->d);
}

static void release_rec(struct drv_rxq *rq, struct drv_big_rec *rec, unsigned from)
{
	for (unsigned i = from; i < DRV_BIG_PAGES; i++)
		recycle(rq, rec->page[i]);
	rq->rec_free[rq->nrec_free++] = rec;
}

/* Give back a posted buffer that carries no frame (teardown, drops). */
static void release_token(struct drv_rxq *rq, void *tok)
{
	if (tok_tag(tok) == TOK_PKT) {
		uvn_pkt_free(tok_ptr(tok));
		return;
	}
	switch (rq->mode) {
	case UVN_RX_SMALL:
		recycle(rq, tok);
		break;
	case UVN_RX_BIG:
		release_rec(rq, tok, 0);
		break;
	default:
		uvn_frag_put(rq->frags, tok);
		break;
	}
}

/* ------------------------------------------------------------- refill */

static int post_small(struct drv_rxq *rq, bool deferred)
{
	struct uvn_drv *d = rq->d;
	size_t size = small_buf_size(rq);
	struct uvn_sg sg;
	struct uvn_pkt *p;
	void *buf;
	int ret;

	if (deferred) {
		buf = get_buf(rq, size, CACHE_LINE);
		if (!buf)
			return -ENOMEM;
		sg = (struct uvn_sg){ drv_addr(buf), (uint32_t)size };
		ret = uvn_vq_drv_add(rq->r.vq, &sg, 0, 1, buf, 0);
		if (ret)
			recycle(rq, buf);
		return ret;
	}
	p = uvn_pkt_alloc(rq->pkts);
	if (!p)
		return -ENOMEM;
	/* The header lands in the headroom, the frame where tx expects it. */
	sg = (struct uvn_sg){ drv_addr((char *)p->buf + UVN_DRV_HEADROOM - d->hdr_len),
			      (uint32_t)size };
	ret = uvn_vq_drv_add(rq->r.vq, &sg, 0, 1, tok_make(p, TOK_PKT), 0);
	if (ret)
		uvn_pkt_free(p);
	return ret;
}

/*
 * Big chains go through an indirect table, except on packed rings: DPDK's
 * vhost (22.11 and later) takes four packed rx descriptors at once when
 * their lengths fit a frame each, without looking at INDIRECT or NEXT, and
 * then writes frames into the table itself or into the pages of one chain
 * as if they were separate buffers. A chain that starts with the header
 * alone (12 bytes, as Linux lays out big buffers) never fits that test;
 * and direct chains avoid the table.
 */
static unsigned big_add_flags(const struct uvn_drv *d)
{
	return d->cfg.ring == UVN_RING_PACKED ? UVN_VQ_ADD_NO_INDIRECT : 0;
}

static int post_big(struct drv_rxq *rq, bool deferred)
{
	struct uvn_sg sg[DRV_BIG_DESCS];
	struct drv_big_rec *rec = NULL;
	struct uvn_pkt *p = NULL;
	void **pages;
	void *tok;
	unsigned i;
	int ret;

	if (deferred) {
		if (!rq->nrec_free)
			return -ENOMEM;
		rec = rq->rec_free[--rq->nrec_free];
		pages = rec->page;
		tok = rec;
	} else {
		p = uvn_pkt_alloc(rq->pkts);
		if (!p)
			return -ENOMEM;
		pages = NULL;
		tok = tok_make(p, TOK_PKT);
	}
	for (i = 0; i < DRV_BIG_PAGES; i++) {
		void *page = get_buf(rq, DRV_BIG_PAGE, DRV_BIG_PAGE);

		if (!page)
			break;
		if (pages)
			pages[i] = page;
		else
			p->seg[i] = (struct iovec){ page, DRV_BIG_PAGE };
		sg[i] = (struct uvn_sg){ drv_addr(page), DRV_BIG_PAGE };
	}
	if (p) {
		p->nseg = (uint16_t)i;
		p->frags = rq->frags;
		p->buf = p->seg[0].iov_base;
	}
	if (i == DRV_BIG_PAGES) {
		/* sg[0] = the header, sg[1] = the rest of page 0, then pages 1.. */
		unsigned hl = rq->d->hdr_len;

		memmove(&sg[1], &sg[0], sizeof(sg[0]) * DRV_BIG_PAGES);
		sg[0].len = hl;
		sg[1].addr += hl;
		sg[1].len -= hl;
	}
	ret = i < DRV_BIG_PAGES ? -ENOMEM
				: uvn_vq_drv_add(rq->r.vq, sg, 0, DRV_BIG_DESCS, tok, big_add_flags(rq->d));
	if (ret) {
		for (unsigned k = 0; k < i; k++)
			recycle(rq, pages ? pages[k] : p->seg[k].iov_base);
		if (rec)
			rq->rec_free[rq->nrec_free++] = rec;
		if (p) {
			p->frags = NULL; /* the pages went back to the recycle stack */
			uvn_pkt_free(p);
		}
		return ret;
	}
	return 0;
}

static int post_mrg(struct drv_rxq *rq, bool deferred, unsigned len)
{
	struct uvn_sg sg;
	struct uvn_pkt *p = NULL;
	void *buf;
	int ret;

	if (!deferred) {
		p = uvn_pkt_alloc(rq->pkts);
		if (!p)
			return -ENOMEM;
	}
	buf = uvn_frag_alloc(rq->frags, len, CACHE_LINE);
	if (!buf) {
		if (p)
			uvn_pkt_free(p);
		return -ENOMEM;
	}
	sg = (struct uvn_sg){ drv_addr(buf), len };
	if (p) {
		p->frags = rq->frags;
		p->buf = buf;
		p->seg[0] = (struct iovec){ buf, len };
		p->nseg = 1;
		ret = uvn_vq_drv_add(rq->r.vq, &sg, 0, 1, tok_make(p, TOK_PKT), 0);
		if (ret)
			uvn_pkt_free(p); /* puts the fragment too */
		return ret;
	}
	ret = uvn_vq_drv_add(rq->r.vq, &sg, 0, 1, buf, 0);
	if (ret)
		uvn_frag_put(rq->frags, buf);
	return ret;
}

static void refill(struct drv_rxq *rq)
{
	bool deferred;
	unsigned need = rq->mode == UVN_RX_BIG && (!rq->d->indirect || big_add_flags(rq->d))
				? DRV_BIG_DESCS : 1;
	unsigned added = 0, batch = rq->r.num / 8 < DRV_BURST ? rq->r.num / 8 : DRV_BURST;
	int ret = 0;

	/* Refill in batches: each refill ends with a publish and a full fence.
	 * Chains of many descriptors (big mode) go back one by one: holding
	 * one back would cost a sizeable share of the few that fit. */
	if (uvn_vq_drv_num_free(rq->r.vq) < (need > 1 ? need : batch))
		return;
	deferred = drv_opt(rq->d, UVN_OPT_DEFERRED_ALLOC);

	if (rq->mode == UVN_RX_MERGEABLE)
		rq->buf_len = drv_mrg_buf_len(rq);
	while (uvn_vq_drv_num_free(rq->r.vq) >= need) {
		switch (rq->mode) {
		case UVN_RX_SMALL:
			ret = post_small(rq, deferred);
			break;
		case UVN_RX_BIG:
			ret = post_big(rq, deferred);
			break;
		default:
			ret = post_mrg(rq, deferred, rq->buf_len);
			break;
		}
		if (ret)
			break;
		added++;
	}
	if (ret == -ENOMEM)
		rq->st.refill_fail++;
	if (!added)
		return;
	rq->posted += added;
	rq->st.bufs_posted += added;
	drv_kick(&rq->r, &rq->st.kicks, &rq->st.kicks_suppressed);
}

void drv_rxq_fill(struct drv_rxq *rq)
{
	refill(rq);
}

void drv_rxq_drain(struct drv_rxq *rq)
{
	void *tok;

	/* Used or not, every buffer still in the ring comes back here. */
	while ((tok = uvn_vq_drv_detach_unused(rq->r.vq)))
		release_token(rq, tok);
	rq->posted = 0;
	if (rq->partial) {
		uvn_pkt_free(rq->partial);
		rq->partial = NULL;
	}
	rq->partial_left = 0;
	while (rq->nrecycle)
		uvn_frag_put(rq->frags, rq->recycle[--rq->nrecycle]);
	if (rq->frags)
		uvn_frag_pool_retire(rq->frags);
}

/* ------------------------------------------------------------ receive */

/* Read the header once and check what the backend may set. */
static bool read_hdr(struct drv_rxq *rq, const void *buf, struct virtio_net_hdr_v1 *h)
{
	const struct uvn_drv *d = rq->d;
	uint8_t gso;

	memcpy(h, buf, sizeof(*h));
	if (UVN_UNLIKELY(h->flags)) {
		if (h->flags & ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID) ||
		    !d->guest_csum)
			return false;
	}
	gso = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	if (UVN_UNLIKELY(h->gso_type != VIRTIO_NET_HDR_GSO_NONE)) {
		uint64_t f = d->features;
		bool ok = (gso == VIRTIO_NET_HDR_GSO_TCPV4 && uvn_has_feature(f, VIRTIO_NET_F_GUEST_TSO4)) ||
			  (gso == VIRTIO_NET_HDR_GSO_TCPV6 && uvn_has_feature(f, VIRTIO_NET_F_GUEST_TSO6)) ||
			  (gso == VIRTIO_NET_HDR_GSO_UDP && uvn_has_feature(f, VIRTIO_NET_F_GUEST_UFO));
#ifdef VIRTIO_NET_HDR_GSO_UDP_L4
		ok = ok || (gso == VIRTIO_NET_HDR_GSO_UDP_L4 &&
			    uvn_has_feature(f, VIRTIO_NET_F_GUEST_USO4));
#endif
		if (!ok)
			return false;
	}
	h->num_buffers = 0;
	return true;
}

/* Checks that need the whole frame. */
static bool frame_ok(struct drv_rxq *rq, struct uvn_pkt *p)
{
	if (UVN_UNLIKELY(p->vnet.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
	    (uint32_t)le16toh(p->vnet.csum_start) + le16toh(p->vnet.csum_offset) + 2 > p->len) {
		rq->st.err_hdr++;
		return false;
	}
	return true;
}

static void deliver(struct drv_rxq *rq, struct uvn_pkt *p, struct uvn_pkt **out, unsigned *got)
{
	if (UVN_UNLIKELY(!frame_ok(rq, p))) {
		rq->st.drops++;
		uvn_pkt_free(p);
		return;
	}
	p->queue = (uint16_t)rq->q;
	rq->st.packets++;
	rq->st.bytes += p->len;
	out[(*got)++] = p;
}

static bool len_ok(struct drv_rxq *rq, uint32_t len)
{
	if (UVN_LIKELY(len >= rq->d->hdr_len + UVN_ETH_HLEN))
		return true;
	rq->st.err_len++;
	rq->st.drops++;
	return false;
}

static void rx_small(struct drv_rxq *rq, void *tok, uint32_t len, struct uvn_pkt **out,
		     unsigned *got)
{
	unsigned hl = rq->d->hdr_len;
	struct uvn_pkt *p;
	const uint8_t *buf;

	if (UVN_UNLIKELY(!len_ok(rq, len))) {
		release_token(rq, tok);
		return;
	}
	if (tok_tag(tok) == TOK_PKT) {
		p = tok_ptr(tok);
		buf = (const uint8_t *)p->buf + UVN_DRV_HEADROOM - hl;
	} else {
		buf = tok;
		p = uvn_pkt_alloc(rq->pkts);
		if (UVN_UNLIKELY(!p)) {
			rq->st.drop_nopkt++;
			rq->st.drops++;
			recycle(rq, tok);
			return;
		}
	}
	if (UVN_UNLIKELY(!read_hdr(rq, buf, &p->vnet))) {
		rq->st.err_hdr++;
		rq->st.drops++;
		uvn_pkt_free(p);
		if (tok_tag(tok) != TOK_PKT)
			recycle(rq, tok);
		return;
	}
	if (tok_tag(tok) != TOK_PKT) {
		/* Copy out and keep the buffer for the next refill. */
		memcpy((uint8_t *)p->buf + UVN_DRV_HEADROOM, buf + hl, len - hl);
		recycle(rq, tok);
		rq->st.copies++;
	}
	uvn_drv_pkt_set_len(p, len - hl);
	deliver(rq, p, out, got);
}

static void rx_big(struct drv_rxq *rq, void *tok, uint32_t len, struct uvn_pkt **out,
		   unsigned *got)
{
	unsigned hl = rq->d->hdr_len, n = 0;
	struct drv_big_rec *rec = NULL;
	struct uvn_pkt *p;
	uint32_t left;

	if (UVN_UNLIKELY(!len_ok(rq, len))) {
		release_token(rq, tok);
		return;
	}
	if (tok_tag(tok) == TOK_PKT) {
		p = tok_ptr(tok);
	} else {
		rec = tok;
		p = uvn_pkt_alloc(rq->pkts);
		if (UVN_UNLIKELY(!p)) {
			rq->st.drop_nopkt++;
			rq->st.drops++;
			release_rec(rq, rec, 0);
			return;
		}
		p->frags = rq->frags;
		for (unsigned i = 0; i < DRV_BIG_PAGES; i++)
			p->seg[i] = (struct iovec){ rec->page[i], DRV_BIG_PAGE };
		p->nseg = DRV_BIG_PAGES;
		rq->rec_free[rq->nrec_free++] = rec;
	}
	p->buf = p->seg[0].iov_base;
	if (UVN_UNLIKELY(!read_hdr(rq, p->seg[0].iov_base, &p->vnet))) {
		rq->st.err_hdr++;
		rq->st.drops++;
		uvn_pkt_free(p);
		return;
	}
	/* Keep the pages the frame covers; the rest go back for reuse. */
	left = len - hl;
	p->seg[0].iov_base = (uint8_t *)p->seg[0].iov_base + hl;
	p->seg[0].iov_len = DRV_BIG_PAGE - hl;
	while (n < p->nseg && left) {
		if (p->seg[n].iov_len > left)
			p->seg[n].iov_len = left;
		left -= (uint32_t)p->seg[n].iov_len;
		n++;
	}
	for (unsigned i = n; i < p->nseg; i++)
		recycle(rq, p->seg[i].iov_base);
	p->nseg = (uint16_t)n;
	p->len = len - hl;
	deliver(rq, p, out, got);
}

/* Mergeable: the buffer of a used token, and its packet object if it has one. */
static void *mrg_buf(void *tok, struct uvn_pkt **p)
{
	if (tok_tag(tok) == TOK_PKT) {
		*p = tok_ptr(tok);
		return (*p)->seg[0].iov_base;
	}
	*p = NULL;
	return tok;
}

/* Copy a frame that needs more segments than a packet has into one data room. */
static struct uvn_pkt *to_overflow(struct drv_rxq *rq, struct uvn_pkt *p)
{
	struct uvn_pkt *o = uvn_pkt_alloc(rq->overflow);

	if (o) {
		uvn_pkt_read(p, 0, o->buf, p->len);
		uvn_pkt_set_buf(o, p->len);
		o->vnet = p->vnet;
		rq->st.copies++;
	}
	uvn_pkt_free(p);
	return o;
}

/* Add a later buffer's bytes to the frame being assembled. */
static void mrg_append(struct drv_rxq *rq, void *tok, uint32_t len)
{
	struct uvn_pkt *p = rq->partial, *obj;
	void *buf = mrg_buf(tok, &obj);

	if (UVN_UNLIKELY(rq->partial_drop || !len || p->len + len > DRV_MAX_FRAME)) {
		if (!rq->partial_drop && len) {
			rq->st.err_len++;
			rq->partial_drop = true;
		}
		release_token(rq, tok);
		return;
	}
	if (UVN_UNLIKELY(!p->frags)) {
		/* Already copied into an overflow packet. */
		memcpy((uint8_t *)p->buf + p->len, buf, len);
		p->seg[0].iov_len += len;
		p->len += len;
		release_token(rq, tok);
		return;
	}
	if (UVN_UNLIKELY(p->nseg == UVN_PKT_MAX_SEGS)) {
		p = rq->partial = to_overflow(rq, p);
		if (!p) {
			rq->st.drop_nopkt++;
			rq->partial_drop = true;
			release_token(rq, tok);
			return;
		}
		mrg_append(rq, tok, len);
		return;
	}
	p->seg[p->nseg++] = (struct iovec){ buf, len };
	p->len += len;
	if (obj) {
		/* Before the seed: this buffer's packet object was made for nothing. */
		obj->frags = NULL;
		obj->nseg = 0;
		uvn_pkt_free(obj);
	}
}

static void mrg_done(struct drv_rxq *rq, struct uvn_pkt **out, unsigned *got)
{
	struct uvn_pkt *p = rq->partial;

	rq->partial = NULL;
	if (UVN_UNLIKELY(rq->partial_drop)) {
		rq->partial_drop = false;
		rq->st.drops++;
		if (p)
			uvn_pkt_free(p);
		return;
	}
	/* Linux's EWMA of frame sizes, weight 1/64, for the adaptive sizing. */
	rq->ewma = rq->ewma ? (rq->ewma * (EWMA_WEIGHT - 1) + p->len) / EWMA_WEIGHT : p->len;
	deliver(rq, p, out, got);
}

static void rx_mrg(struct drv_rxq *rq, void *tok, uint32_t len, struct uvn_pkt **out,
		   unsigned *got)
{
	unsigned hl = rq->d->hdr_len;
	struct virtio_net_hdr_v1 h;
	struct uvn_pkt *p;
	uint16_t nb;
	uint8_t *buf;

	if (rq->partial_left) {
		mrg_append(rq, tok, len);
		if (--rq->partial_left == 0)
			mrg_done(rq, out, got);
		return;
	}
	if (UVN_UNLIKELY(!len_ok(rq, len))) {
		release_token(rq, tok);
		return;
	}
	buf = mrg_buf(tok, &p);
	memcpy(&nb, buf + offsetof(struct virtio_net_hdr_v1, num_buffers), sizeof(nb));
	nb = le16toh(nb);
	/* More buffers than could ever be in flight, or none: invalid. */
	if (UVN_UNLIKELY(nb == 0 || nb > rq->r.num)) {
		rq->st.err_num_buffers++;
		rq->st.drops++;
		release_token(rq, tok);
		return;
	}
	if (nb > 1)
		rq->st.mrg_multi++;
	if (!p) {
		p = uvn_pkt_alloc(rq->pkts);
		if (UVN_UNLIKELY(!p)) {
			rq->st.drop_nopkt++;
			release_token(rq, tok);
			/* Its later buffers are consumed and dropped with it. */
			rq->partial = NULL;
			rq->partial_drop = true;
			rq->partial_left = nb - 1u;
			if (!rq->partial_left)
				mrg_done(rq, out, got);
			return;
		}
		p->frags = rq->frags;
		p->nseg = 1;
	}
	p->buf = buf;
	p->seg[0] = (struct iovec){ buf + hl, len - hl };
	p->len = len - hl;
	if (UVN_UNLIKELY(!read_hdr(rq, buf, &h))) {
		rq->st.err_hdr++;
		rq->partial_drop = true;
	}
	p->vnet = h;
	rq->partial = p;
	rq->partial_left = nb - 1u;
	if (!rq->partial_left)
		mrg_done(rq, out, got);
}

/*
 * Mergeable, deferred: the common frame is one buffer with a plain header
 * (num_buffers 1, no flags, no GSO). Its packet object comes from a bulk
 * allocation and needs no header copy (a fresh object's metadata is zero).
 * Anything else takes rx_mrg(). @return frames delivered
 */
static unsigned rx_mrg_burst(struct drv_rxq *rq, const struct uvn_vq_done *done, unsigned r,
			     struct uvn_pkt **out, unsigned *got)
{
	const unsigned hl = rq->d->hdr_len;
	struct uvn_pkt *objs[DRV_BURST];
	unsigned k = 0, used = 0, fast = 0;
	uint64_t bytes = 0;
	uint32_t ewma = rq->ewma;

	/* Objects for raw buffers (deferred allocation); posted objects come back with theirs. */
	if (tok_tag(done[0].token) != TOK_PKT)
		k = uvn_pkt_alloc_bulk(rq->pkts, objs, r) ? r : 0;
	for (unsigned i = 0; i < r; i++) {
		uint8_t *buf = done[i].token;
		uint32_t len = done[i].len;
		uint16_t fg, nb;

		if (UVN_LIKELY(used < k && !rq->partial_left && tok_tag(buf) != TOK_PKT &&
			       len >= hl + UVN_ETH_HLEN)) {
			memcpy(&fg, buf, sizeof(fg)); /* flags, gso_type */
			memcpy(&nb, buf + offsetof(struct virtio_net_hdr_v1, num_buffers), sizeof(nb));
			if (UVN_LIKELY(!fg && le16toh(nb) == 1)) {
				struct uvn_pkt *p = objs[used++];

				p->frags = rq->frags;
				p->buf = buf;
				p->seg[0].iov_base = buf + hl;
				p->seg[0].iov_len = len - hl;
				p->nseg = 1;
				p->len = len - hl;
				p->queue = (uint16_t)rq->q;
				ewma = ewma ? (ewma * (EWMA_WEIGHT - 1) + p->len) / EWMA_WEIGHT : p->len;
				bytes += p->len;
				out[(*got)++] = p;
				fast++;
				continue;
			}
		}
		rq->ewma = ewma;
		rx_mrg(rq, done[i].token, len, out, got);
		ewma = rq->ewma;
	}
	rq->ewma = ewma;
	if (used < k)
		uvn_pkt_free_bulk(objs + used, k - used);
	rq->st.packets += fast;
	rq->st.bytes += bytes;
	return fast;
}

int uvn_rx_burst(struct uvn_drv *d, unsigned q, struct uvn_pkt **pkts, unsigned n)
{
	struct uvn_vq_done done[DRV_BURST];
	struct drv_rxq *rq;
	unsigned got = 0;
	int err = drv_err(d), r;

	if (UVN_UNLIKELY(err))
		return err;
	if (UVN_UNLIKELY(q >= d->pairs))
		return -EINVAL;
	rq = &d->rxq[q];
	/* A mergeable frame takes at least one buffer: n buffers never make
	 * more than n frames. */
	while (got < n) {
		unsigned want = n - got < DRV_BURST ? n - got : DRV_BURST;

		r = uvn_vq_drv_get_used(rq->r.vq, done, want);
		if (UVN_UNLIKELY(r < 0)) {
			err = drv_ring_error(d, &rq->r, r);
			break;
		}
		if (!r)
			break;
		rq->posted -= (unsigned)r;
		rq->st.bufs_used += (unsigned)r;
		if (rq->mode == UVN_RX_MERGEABLE) {
			rx_mrg_burst(rq, done, (unsigned)r, pkts, &got);
			if ((unsigned)r < want)
				break;
			continue;
		}
		for (int i = 0; i < r; i++) {
			switch (rq->mode) {
			case UVN_RX_SMALL:
				rx_small(rq, done[i].token, done[i].len, pkts, &got);
				break;
			case UVN_RX_BIG:
				rx_big(rq, done[i].token, done[i].len, pkts, &got);
				break;
			default:
				rx_mrg(rq, done[i].token, done[i].len, pkts, &got);
				break;
			}
		}
		if ((unsigned)r < want)
			break;
	}
	refill(rq);
	if (got) {
		rq->st.bursts++;
		rq->r.idle = 0;
		return (int)got;
	}
	if (err)
		return err;
	return drv_idle(d, &rq->r);
}
