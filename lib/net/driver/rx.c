/* SPDX-License-Identifier: MIT */
/*
 * Receive. Three ways to post buffers:
 *  small      one header + frame buffer per frame; the frame is copied out
 *             into a packet and the buffer reposted;
 *  big        a chain of 4 KB pages per frame (up to 64 KB), no MRG_RXBUF;
 *  mergeable  single buffers; a frame spreads over num_buffers of them.
 *
 * Deferred allocation (deferred_alloc; docs/seeds.md, 000): the ring holds
 * raw buffers (page fragments, or a record of a big chain's pages) and the
 * packet object is made only when a buffer comes back used. Off (kept to
 * measure against), each posted buffer carries its packet object from the
 * start (tokens tagged TOK_PKT), as Linux did before deferring it;
 * mergeable frames then also free the objects of their later buffers.
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
#include "net/gso.h"

#define EWMA_WEIGHT 64u

/* ------------------------------------------------------------- set-up */

int drv_rxq_init(struct uvn_drv *d, struct drv_rxq *rq)
{
	struct uvn_pkt_pool_cfg pc = { .count = d->cfg.rx_pkts, .name = "rx" };
	unsigned num = rq->r.num;
	size_t page;
	int ret;

	rq->mode = d->rx_mode;
	if (rq->mode == UVN_RX_SMALL && drv_small_frame(d) > DRV_ROOM - UVN_DRV_HEADROOM)
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
	uvn_pkt_pool_destroy(rq->pkts);
	uvn_frag_pool_destroy(rq->frags);
	if (rq->pkt_mem)
		uvn_arena_free(d->arena, rq->pkt_mem, rq->pkt_mem_len);
	if (rq->frag_mem)
		uvn_arena_free(d->arena, rq->frag_mem, rq->frag_len);
	free(rq->recycle);
	free(rq->recs);
	free(rq->rec_free);
	memset(rq, 0, sizeof(*rq));
}

/* ------------------------------------------------------------ receive */

/*
 * Read the header once and check what the backend may set: @buf holds the
 * header and @len bytes of it and the frame (at least an Ethernet header).
 * A GSO type is checked as the device checks it (uvn_gso_type_ok()).
 */
static bool read_hdr(struct drv_rxq *rq, const uint8_t *buf, uint32_t len,
		     struct virtio_net_hdr_v1 *h)
{
	const struct uvn_drv *d = rq->d;
	unsigned hl = d->hdr_len;

	memcpy(h, buf, sizeof(*h));
	if (UVN_UNLIKELY(h->flags)) {
		if (h->flags & ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID) ||
		    !d->guest_csum)
			return false;
	}
	if (UVN_UNLIKELY(h->gso_type != VIRTIO_NET_HDR_GSO_NONE) &&
	    !uvn_gso_type_ok(d->features, h->gso_type, uvn_gso_ip_version(buf + hl, len - hl)))
		return false;
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
		drv_rx_release_token(rq, tok);
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
			drv_rx_recycle(rq, tok);
			return;
		}
	}
	if (UVN_UNLIKELY(!read_hdr(rq, buf, len, &p->vnet))) {
		rq->st.err_hdr++;
		rq->st.drops++;
		uvn_pkt_free(p);
		if (tok_tag(tok) != TOK_PKT)
			drv_rx_recycle(rq, tok);
		return;
	}
	if (tok_tag(tok) != TOK_PKT) {
		/* Copy out and keep the buffer for the next refill. */
		memcpy((uint8_t *)p->buf + UVN_DRV_HEADROOM, buf + hl, len - hl);
		drv_rx_recycle(rq, tok);
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
		drv_rx_release_token(rq, tok);
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
			drv_rx_release_rec(rq, rec, 0);
			return;
		}
		p->frags = rq->frags;
		for (unsigned i = 0; i < DRV_BIG_PAGES; i++)
			p->seg[i] = (struct iovec){ rec->page[i], DRV_BIG_PAGE };
		p->nseg = DRV_BIG_PAGES;
		rq->rec_free[rq->nrec_free++] = rec;
	}
	p->buf = p->seg[0].iov_base;
	if (UVN_UNLIKELY(!read_hdr(rq, p->seg[0].iov_base, len < DRV_BIG_PAGE ? len : DRV_BIG_PAGE,
				   &p->vnet))) {
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
		drv_rx_recycle(rq, p->seg[i].iov_base);
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

/* Add a later buffer's bytes to the frame being assembled. rx_mrg() took
 * no frame of more buffers than a packet has segments. */
static void mrg_append(struct drv_rxq *rq, void *tok, uint32_t len)
{
	struct uvn_pkt *p = rq->partial, *obj;
	void *buf = mrg_buf(tok, &obj);

	if (UVN_UNLIKELY(rq->partial_drop || !len || p->len + len > DRV_MAX_FRAME)) {
		if (!rq->partial_drop && len) {
			rq->st.err_len++;
			rq->partial_drop = true;
		}
		drv_rx_release_token(rq, tok);
		return;
	}
	p->seg[p->nseg++] = (struct iovec){ buf, len };
	p->len += len;
	if (obj) {
		/* deferred_alloc off: this buffer's packet object was made for nothing. */
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

/* Drop the frame whose first buffer is @tok: its later buffers are consumed and dropped with it. */
static void mrg_skip(struct drv_rxq *rq, void *tok, uint16_t nb, struct uvn_pkt **out,
		     unsigned *got)
{
	drv_rx_release_token(rq, tok);
	rq->partial = NULL;
	rq->partial_drop = true;
	rq->partial_left = nb - 1u;
	if (!rq->partial_left)
		mrg_done(rq, out, got);
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
		drv_rx_release_token(rq, tok);
		return;
	}
	buf = mrg_buf(tok, &p);
	memcpy(&nb, buf + offsetof(struct virtio_net_hdr_v1, num_buffers), sizeof(nb));
	nb = le16toh(nb);
	/* More buffers than could ever be in flight, or none: invalid. */
	if (UVN_UNLIKELY(nb == 0 || nb > rq->r.num)) {
		rq->st.err_num_buffers++;
		rq->st.drops++;
		drv_rx_release_token(rq, tok);
		return;
	}
	if (nb > 1)
		rq->st.mrg_multi++;
	/* More than a legal frame takes of our buffers (drv.h: DRV_MRG_MAX_BUFS). */
	if (UVN_UNLIKELY(nb > UVN_PKT_MAX_SEGS)) {
		rq->st.err_num_buffers++;
		mrg_skip(rq, tok, nb, out, got);
		return;
	}
	if (!p) {
		p = uvn_pkt_alloc(rq->pkts);
		if (UVN_UNLIKELY(!p)) {
			rq->st.drop_nopkt++;
			mrg_skip(rq, tok, nb, out, got);
			return;
		}
		p->frags = rq->frags;
		p->nseg = 1;
	}
	p->buf = buf;
	p->seg[0] = (struct iovec){ buf + hl, len - hl };
	p->len = len - hl;
	if (UVN_UNLIKELY(!read_hdr(rq, buf, len, &h))) {
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
 * The first line of each buffer of a burst (the header, and with it the
 * frame's first bytes) was just written by the device on its CPU: reading
 * it is a miss to the other CPU, a round trip of 60 ns to 1 us depending
 * on where the two sit. Taken frame by frame, each miss waits behind the
 * previous one's branches; asked for all at once, they overlap. Raw
 * buffers only (deferred allocation; a posted object's buffer is one
 * more load away).
 */
static void prefetch_headers(const struct uvn_vq_done *done, unsigned r)
{
	for (unsigned i = 0; i < r; i++)
		if (tok_tag(done[i].token) != TOK_PKT)
			__builtin_prefetch(done[i].token);
}

/*
 * Mergeable, deferred: the common frame is one buffer with a plain header
 * (num_buffers 1, no flags, no GSO). Its packet object comes from a bulk
 * allocation and needs no header copy (a fresh object's metadata is zero).
 * Anything else takes rx_mrg(). The count of frames delivered is kept in
 * a local (*got could alias the packets' fields) and stored around rx_mrg().
 */
static void rx_mrg_burst(struct drv_rxq *rq, const struct uvn_vq_done *done, unsigned r,
			 struct uvn_pkt **out, unsigned *got)
{
	const unsigned hl = rq->d->hdr_len;
	struct uvn_frag_pool *frags = rq->frags;
	const uint16_t q = (uint16_t)rq->q;
	struct uvn_pkt *objs[DRV_BURST];
	unsigned k = 0, used = 0, g = *got;
	uint64_t bytes = 0;
	uint32_t ewma = rq->ewma;
	/* The average sizes the buffers only in EWMA sizing (drv_mrg_buf_len()):
	 * the fast path keeps it then alone (switched on later, it starts
	 * from where it was left). */
	const bool track = drv_opt(rq->d, UVN_OPT_MRG_SIZING) == UVN_MRG_EWMA;

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

				len -= hl;
				p->frags = frags;
				p->buf = buf;
				p->seg[0].iov_base = buf + hl;
				p->seg[0].iov_len = len;
				p->nseg = 1;
				p->len = len;
				p->queue = q;
				if (track)
					ewma = ewma ? (ewma * (EWMA_WEIGHT - 1) + len) / EWMA_WEIGHT : len;
				bytes += len;
				out[g++] = p;
				continue;
			}
		}
		rq->ewma = ewma;
		*got = g;
		rx_mrg(rq, done[i].token, len, out, got);
		ewma = rq->ewma;
		g = *got;
	}
	*got = g;
	rq->ewma = ewma;
	if (used < k)
		uvn_pkt_free_bulk(objs + used, k - used);
	rq->st.packets += used;
	rq->st.bytes += bytes;
}

int uvn_rx_burst(struct uvn_drv *d, unsigned q, struct uvn_pkt **pkts, unsigned n)
{
	struct uvn_vq_done done[DRV_BURST];
	struct drv_rxq *rq;
	unsigned got = 0;
	int err = drv_err(d), r;

	if (UVN_UNLIKELY(q >= d->pairs))
		return -EINVAL;
	rq = &d->rxq[q];
	if (UVN_UNLIKELY(err) && (err = drv_gate(d, &rq->r)))
		return err;
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
		/* Big mode's tokens are records, not the buffers. */
		if (rq->mode != UVN_RX_BIG)
			prefetch_headers(done, (unsigned)r);
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
	drv_rxq_fill(rq);
	if (got) {
		rq->st.bursts++;
		rq->r.idle = 0;
		return (int)got;
	}
	if (err)
		return err;
	return drv_idle(d, &rq->r);
}
