/* SPDX-License-Identifier: MIT */
/*
 * Receive buffers: how big they are and how they are posted (small, big
 * and mergeable; deferred allocation or not, see rx.c), and how every one
 * comes back at teardown. The receive side (rx.c) gives buffers back
 * through drv_rx_recycle() and drv_rx_release_token().
 */
#include <errno.h>
#include <string.h>

#include "net/driver/drv.h"
#include "net/driver/rx_buf.h"

static unsigned align_up(unsigned v, unsigned a)
{
	return (v + a - 1) & ~(a - 1);
}

unsigned drv_mrg_buf_len(const struct drv_rxq *rq)
{
	const struct uvn_drv *d = rq->d;
	unsigned frame = drv_small_frame(d), len; /* at least DRV_MRG_MIN (drv.h) */

	switch (drv_opt(d, UVN_OPT_MRG_SIZING)) {
	case UVN_MRG_MTU_ONLY:
		/* UVN_MRG_MTU_ONLY (docs/seeds.md, 003): room for the frame, none for the header. */
		return frame < DRV_MRG_MAX ? frame : DRV_MRG_MAX;
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

/* ------------------------------------------------------ buffers, pages */

/* A small buffer or a big-mode page: reuse one, or carve a new one. */
static void *get_buf(struct drv_rxq *rq, size_t size, size_t align)
{
	if (rq->nrecycle)
		return rq->recycle[--rq->nrecycle];
	return uvn_frag_alloc(rq->frags, size, align);
}

static size_t small_buf_size(const struct drv_rxq *rq)
{
	return rq->d->hdr_len + drv_small_frame(rq->d);
}

void drv_rx_release_rec(struct drv_rxq *rq, struct drv_big_rec *rec, unsigned from)
{
	for (unsigned i = from; i < DRV_BIG_PAGES; i++)
		drv_rx_recycle(rq, rec->page[i]);
	rq->rec_free[rq->nrec_free++] = rec;
}

/* Give back a posted buffer that carries no frame (teardown, drops). */
void drv_rx_release_token(struct drv_rxq *rq, void *tok)
{
	if (tok_tag(tok) == TOK_PKT) {
		uvn_pkt_free(tok_ptr(tok));
		return;
	}
	switch (rq->mode) {
	case UVN_RX_SMALL:
		drv_rx_recycle(rq, tok);
		break;
	case UVN_RX_BIG:
		drv_rx_release_rec(rq, tok, 0);
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
		ret = uvn_vq_drv_add_one(rq->r.vq, sg.addr, sg.len, true, buf);
		if (ret)
			drv_rx_recycle(rq, buf);
		return ret;
	}
	p = uvn_pkt_alloc(rq->pkts);
	if (!p)
		return -ENOMEM;
	/* The header lands in the headroom, the frame where tx expects it. */
	sg = (struct uvn_sg){ drv_addr((char *)p->buf + UVN_DRV_HEADROOM - d->hdr_len),
			      (uint32_t)size };
	ret = uvn_vq_drv_add_one(rq->r.vq, sg.addr, sg.len, true, tok_make(p, TOK_PKT));
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
			drv_rx_recycle(rq, pages ? pages[k] : p->seg[k].iov_base);
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
		ret = uvn_vq_drv_add_one(rq->r.vq, sg.addr, sg.len, true, tok_make(p, TOK_PKT));
		if (ret)
			uvn_pkt_free(p); /* puts the fragment too */
		return ret;
	}
	ret = uvn_vq_drv_add_one(rq->r.vq, sg.addr, sg.len, true, buf);
	if (ret)
		uvn_frag_put(rq->frags, buf);
	return ret;
}

/*
 * Mergeable with deferred allocation, the common refill: raw fragments,
 * carved a chunk at a time, each posted as one descriptor. @return 0, or
 * the error that stopped it (-ENOMEM: no fragment)
 */
static int fill_mrg_raw(struct drv_rxq *rq, unsigned room, unsigned *added)
{
	struct uvn_vq_drv *vq = rq->r.vq;
	unsigned len = rq->buf_len;
	uint64_t addr[DRV_BURST];
	void *buf[DRV_BURST];

	while (room) {
		unsigned want = room < DRV_BURST ? room : DRV_BURST;
		unsigned got = uvn_frag_alloc_n(rq->frags, len, CACHE_LINE, buf, want), i;
		int ret;

		for (i = 0; i < got; i++)
			addr[i] = drv_addr(buf[i]);
		ret = uvn_vq_drv_add_in_n(vq, addr, buf, len, got);
		i = ret > 0 ? (unsigned)ret : 0;
		*added += i;
		if (UVN_UNLIKELY(i < got)) {
			while (i < got)
				uvn_frag_put(rq->frags, buf[i++]);
			return ret < 0 ? ret : -UVN_VQ_E_NOSPC;
		}
		if (got < want)
			return -ENOMEM;
		room -= got;
	}
	return 0;
}

void drv_rxq_fill(struct drv_rxq *rq)
{
	bool deferred;
	unsigned need = rq->mode == UVN_RX_BIG && (!rq->d->indirect || big_add_flags(rq->d))
				? DRV_BIG_DESCS : 1;
	unsigned added = 0, batch = rq->r.num / 8 < DRV_BURST ? rq->r.num / 8 : DRV_BURST;
	unsigned room = uvn_vq_drv_num_free(rq->r.vq);
	int ret = 0;

	/* Refill in batches: each refill ends with a publish and a full fence.
	 * Chains of many descriptors (big mode) go back one by one: holding
	 * one back would cost a sizeable share of the few that fit. */
	if (room < (need > 1 ? need : batch))
		return;
	deferred = drv_opt(rq->d, UVN_OPT_DEFERRED_ALLOC);

	if (rq->mode == UVN_RX_MERGEABLE) {
		rq->buf_len = drv_mrg_buf_len(rq);
		if (deferred) {
			ret = fill_mrg_raw(rq, room, &added);
			goto posted;
		}
	}
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
posted:
	if (ret == -ENOMEM)
		rq->st.refill_fail++;
	if (!added)
		return;
	rq->posted += added;
	rq->st.bufs_posted += added;
	drv_kick(&rq->r, &rq->st.kicks, &rq->st.kicks_suppressed);
}

void drv_rxq_drain(struct drv_rxq *rq)
{
	void *tok;

	/* Used or not, every buffer still in the ring comes back here. */
	while ((tok = uvn_vq_drv_detach_unused(rq->r.vq)))
		drv_rx_release_token(rq, tok);
	rq->posted = 0;
	if (rq->partial) {
		uvn_pkt_free(rq->partial);
		rq->partial = NULL;
	}
	rq->partial_left = 0;
	rq->partial_drop = false; /* the frame being skipped went with the ring */
	while (rq->nrecycle)
		uvn_frag_put(rq->frags, rq->recycle[--rq->nrecycle]);
	if (rq->frags)
		uvn_frag_pool_retire(rq->frags);
}
