/* SPDX-License-Identifier: MIT */
/*
 * Transmit. Each packet becomes one chain: the virtio-net header built from
 * its metadata, then its segments. When the packet owns headroom in shared
 * memory in front of its frame (tx pool packets, received packets) the
 * header is written there and header + first segment are one descriptor:
 * a one-segment frame then takes one descriptor and no table. Otherwise
 * the header goes into a per-slot area of the arena and leads the chain,
 * which with INDIRECT_DESC is one indirect table holding header and
 * segments (from the descriptor cache, cache.c). Frames outside the arena
 * are copied into the slot's bounce buffer.
 *
 * Buffers the backend used are reclaimed in batches (free_old_xmit) when
 * free descriptors run below the threshold, not per packet.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>

#include "net/csum.h"
#include "net/driver/drv.h"
#include "net/hdr.h"
#include "net/iov.h"

enum { XMIT_OK, XMIT_DROP, XMIT_FULL };

int drv_txq_init(struct uvn_drv *d, struct drv_txq *tq)
{
	struct uvn_pkt_pool_cfg pc = { .count = d->cfg.tx_pkts, .buf_size = DRV_ROOM, .name = "tx" };
	unsigned num = tq->r.num;
	int ret;

	tq->pool_mem_len = (size_t)pc.count * DRV_ROOM;
	tq->pool_mem = uvn_arena_alloc(d->arena, tq->pool_mem_len, CACHE_LINE);
	if (!tq->pool_mem)
		return -ENOMEM;
	pc.mem = tq->pool_mem;
	ret = uvn_pkt_pool_create(&pc, &tq->pool);
	if (ret)
		return ret;
	tq->slot_mem_len = (size_t)num * (CACHE_LINE + DRV_ROOM);
	tq->slot_mem = uvn_arena_alloc(d->arena, tq->slot_mem_len, CACHE_LINE);
	tq->slots = calloc(num, sizeof(*tq->slots));
	tq->slot_free = calloc(num, sizeof(*tq->slot_free));
	if (!tq->slot_mem || !tq->slots || !tq->slot_free)
		return -ENOMEM;
	for (unsigned i = 0; i < num; i++) {
		struct drv_tx_slot *s = &tq->slots[i];

		s->hdr = (uint8_t *)tq->slot_mem + (size_t)i * CACHE_LINE;
		s->bounce = (uint8_t *)tq->slot_mem + (size_t)num * CACHE_LINE + (size_t)i * DRV_ROOM;
		tq->slot_free[num - 1 - i] = s;
	}
	tq->nslot_free = num;
	return 0;
}

void drv_txq_fini(struct drv_txq *tq)
{
	struct uvn_drv *d = tq->d;

	if (!d)
		return;
	uvn_pkt_pool_destroy(tq->pool);
	if (tq->pool_mem)
		uvn_arena_free(d->arena, tq->pool_mem, tq->pool_mem_len);
	if (tq->slot_mem)
		uvn_arena_free(d->arena, tq->slot_mem, tq->slot_mem_len);
	free(tq->slots);
	free(tq->slot_free);
	memset(tq, 0, sizeof(*tq));
}

static void done_token(struct drv_txq *tq, void *tok)
{
	if (tok_tag(tok) == TOK_PKT) {
		struct drv_tx_slot *s = tok_ptr(tok);

		if (s->pkt)
			uvn_pkt_free(s->pkt);
		s->pkt = NULL;
		tq->slot_free[tq->nslot_free++] = s;
		return;
	}
	uvn_pkt_free(tok);
}

void drv_txq_drain(struct drv_txq *tq)
{
	void *tok;

	while ((tok = uvn_vq_drv_detach_unused(tq->r.vq)))
		done_token(tq, tok);
}

/* free_old_xmit: everything the backend has finished with, in batches. */
static int reclaim(struct drv_txq *tq)
{
	void *toks[DRV_BURST];
	int total = 0, n;

	do {
		n = uvn_vq_drv_reclaim(tq->r.vq, toks, DRV_BURST);
		if (UVN_UNLIKELY(n < 0))
			return drv_ring_error(tq->d, &tq->r, n);
		for (int i = 0; i < n; i++)
			done_token(tq, toks[i]);
		total += n;
	} while (n == (int)DRV_BURST);
	if (total) {
		tq->st.reclaimed += (unsigned)total;
		tq->st.reclaim_runs++;
	}
	return total;
}

int uvn_tx_reclaim(struct uvn_drv *d, unsigned q)
{
	int err = drv_err(d);

	if (q >= d->pairs)
		return -EINVAL;
	if (err && (err = drv_gate(d, &d->txq[q].r)))
		return err;
	return reclaim(&d->txq[q]);
}

static bool gso_ok(const struct uvn_drv *d, const struct virtio_net_hdr_v1 *h)
{
	uint64_t f = d->features;

	/* Segmenting needs a segment size and per-segment checksums. */
	if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) || !h->gso_size || !d->csum)
		return false;
	if ((h->gso_type & VIRTIO_NET_HDR_GSO_ECN) && !uvn_has_feature(f, VIRTIO_NET_F_HOST_ECN))
		return false;
	switch (h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN) {
	case VIRTIO_NET_HDR_GSO_TCPV4:
		return uvn_has_feature(f, VIRTIO_NET_F_HOST_TSO4);
	case VIRTIO_NET_HDR_GSO_TCPV6:
		return uvn_has_feature(f, VIRTIO_NET_F_HOST_TSO6);
	case VIRTIO_NET_HDR_GSO_UDP:
		return uvn_has_feature(f, VIRTIO_NET_F_HOST_UFO);
#ifdef VIRTIO_NET_HDR_GSO_UDP_L4
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		return uvn_has_feature(f, VIRTIO_NET_F_HOST_USO);
#endif
	default:
		return false;
	}
}

/*
 * The header for @p, or false if the backend cannot take its offloads (the
 * packet is then dropped untouched).
 */
static bool build_hdr(struct drv_txq *tq, struct uvn_pkt *p, struct virtio_net_hdr_v1 *h)
{
	const struct uvn_drv *d = tq->d;

	*h = p->vnet;
	h->num_buffers = 0;
	/* DATA_VALID of a received frame means nothing on the way out. */
	h->flags &= VIRTIO_NET_HDR_F_NEEDS_CSUM;
	if (UVN_LIKELY(h->gso_type == VIRTIO_NET_HDR_GSO_NONE)) {
		h->gso_size = 0;
		h->hdr_len = 0;
	} else if (!gso_ok(d, h)) {
		return false;
	}
	if (h->flags) {
		uint32_t start = le16toh(h->csum_start), off = le16toh(h->csum_offset);

		if (start + off + 2 > p->len)
			return false;
		if (!d->csum) {
			/* The field holds the pseudo-header sum: fold the rest in. */
			uint16_t c = (uint16_t)~uvn_csum_iov(p->seg, p->nseg, start, p->len - start);
			uint8_t be[2] = { (uint8_t)(c >> 8), (uint8_t)c };

			uvn_buf_to_iov(p->seg, p->nseg, start + off, be, 2);
			h->flags = 0;
			h->csum_start = h->csum_offset = 0;
			tq->st.csum_sw++;
		}
	}
	return true;
}

/* Does @p own @hl bytes of shared memory just in front of its frame? */
static bool can_push(const struct uvn_drv *d, const struct uvn_pkt *p, unsigned hl)
{
	const uint8_t *f = p->seg[0].iov_base, *b = p->buf;

	return p->refcnt == 1 && !p->ubuf && b && f >= b + hl && f - hl < b + DRV_ROOM &&
	       drv_shared(d, f - hl, hl);
}

static int xmit(struct drv_txq *tq, struct uvn_pkt *p)
{
	struct uvn_drv *d = tq->d;
	struct uvn_sg sg[UVN_PKT_MAX_SEGS + 1];
	struct virtio_net_hdr_v1 h;
	struct drv_tx_slot *s = NULL;
	unsigned hl = d->hdr_len, nsg = 0, k = 0;
	bool shared = true;
	void *tok;
	int ret;

	if (UVN_UNLIKELY(!p->nseg || p->nseg > UVN_PKT_MAX_SEGS || p->len < UVN_ETH_HLEN ||
			 p->len > DRV_MAX_FRAME || !build_hdr(tq, p, &h))) {
		tq->st.err_offload++;
		return XMIT_DROP;
	}
	/* A chain (header + segments, even through an indirect table) longer
	 * than the ring is the ring's error, and would fail the instance: a
	 * received 64 KB frame (up to 44 segments) sent on a small ring. */
	if (UVN_UNLIKELY((unsigned)p->nseg + 1 > tq->r.num)) {
		tq->st.err_segs++;
		return XMIT_DROP;
	}
	for (unsigned i = 0; i < p->nseg; i++)
		shared &= drv_shared(d, p->seg[i].iov_base, p->seg[i].iov_len);
	if (UVN_LIKELY(shared && can_push(d, p, hl))) {
		uint8_t *at = (uint8_t *)p->seg[0].iov_base - hl;

		uvn_hdr_store(at, &h, hl);
		sg[nsg++] = (struct uvn_sg){ drv_addr(at), (uint32_t)(p->seg[0].iov_len + hl) };
		k = 1;
		tok = p;
	} else {
		if (UVN_UNLIKELY(!tq->nslot_free))
			return XMIT_FULL;
		s = tq->slot_free[--tq->nslot_free];
		if (shared) {
			uvn_hdr_store(s->hdr, &h, hl);
			sg[nsg++] = (struct uvn_sg){ drv_addr(s->hdr), hl };
			s->pkt = p;
		} else if (p->len + hl <= DRV_ROOM) {
			memcpy(s->bounce, &h, hl);
			uvn_pkt_read(p, 0, s->bounce + hl, p->len);
			sg[nsg++] = (struct uvn_sg){ drv_addr(s->bounce), hl + p->len };
			k = p->nseg;
			s->pkt = NULL;
		} else {
			tq->slot_free[tq->nslot_free++] = s;
			tq->st.err_unmapped++;
			return XMIT_DROP;
		}
		tok = tok_make(s, TOK_PKT);
	}
	for (; k < p->nseg; k++)
		if (p->seg[k].iov_len)
			sg[nsg++] = (struct uvn_sg){ drv_addr(p->seg[k].iov_base),
						     (uint32_t)p->seg[k].iov_len };
	ret = uvn_vq_drv_add(tq->r.vq, sg, nsg, 0, tok, 0);
	if (UVN_UNLIKELY(ret)) {
		if (s) {
			s->pkt = NULL;
			tq->slot_free[tq->nslot_free++] = s;
		}
		return ret == -UVN_VQ_E_NOSPC ? XMIT_FULL : ret;
	}
	if (!s)
		tq->st.hdr_pushed++;
	else if (!s->pkt) {
		tq->st.bounced++;
		uvn_pkt_free(p);
	}
	tq->st.packets++;
	tq->st.bytes += p->len;
	return XMIT_OK;
}

/*
 * The common case, without the general path's checks: one segment in
 * shared memory with our own headroom, no offload, so the header is twelve
 * zero bytes in front of the frame (stored only where they are not there
 * yet: uvn_hdr_store) and the chain one descriptor.
 */
static inline bool plain(const struct uvn_drv *d, const struct uvn_pkt *p)
{
	const uint8_t *f = p->seg[0].iov_base, *b = p->buf;
	uint32_t len = (uint32_t)p->seg[0].iov_len;

	return p->nseg == 1 && p->refcnt == 1 && !p->ubuf && !(p->vnet.flags | p->vnet.gso_type) &&
	       len == p->len && len >= UVN_ETH_HLEN && len <= DRV_MAX_FRAME && b &&
	       f >= b + UVN_NET_HDR_LEN && f < b + DRV_ROOM &&
	       drv_shared(d, f - UVN_NET_HDR_LEN, len + UVN_NET_HDR_LEN);
}

static inline int xmit_plain(struct drv_txq *tq, struct uvn_pkt *p)
{
	static const uint8_t zero[UVN_NET_HDR_LEN];
	uint8_t *at = (uint8_t *)p->seg[0].iov_base - UVN_NET_HDR_LEN;
	int ret;

	uvn_hdr_store(at, zero, UVN_NET_HDR_LEN);
	ret = uvn_vq_drv_add_one(tq->r.vq, drv_addr(at),
				 (uint32_t)p->seg[0].iov_len + UVN_NET_HDR_LEN, false, p);
	if (UVN_LIKELY(!ret))
		return XMIT_OK;
	return ret == -UVN_VQ_E_NOSPC ? XMIT_FULL : ret;
}

int uvn_tx_burst(struct uvn_drv *d, unsigned q, struct uvn_pkt *const *pkts, unsigned n)
{
	struct drv_txq *tq;
	unsigned i, sent = 0, fast = 0;
	uint64_t fast_bytes = 0;
	int err = drv_err(d), r;

	if (UVN_UNLIKELY(q >= d->pairs))
		return -EINVAL;
	tq = &d->txq[q];
	if (UVN_UNLIKELY(err) && (err = drv_gate(d, &tq->r)))
		return err;
	if (uvn_vq_drv_num_free(tq->r.vq) < drv_opt(d, UVN_OPT_TX_FREE_THRESH)) {
		r = reclaim(tq);
		if (UVN_UNLIKELY(r < 0))
			return r;
	}
	for (i = 0; i < n; i++) {
		if (UVN_LIKELY(plain(d, pkts[i]))) {
			r = xmit_plain(tq, pkts[i]);
			if (UVN_LIKELY(r == XMIT_OK)) {
				fast_bytes += pkts[i]->len;
				fast++;
				sent++;
				continue;
			}
		} else {
			r = xmit(tq, pkts[i]);
		}
		if (UVN_LIKELY(r == XMIT_OK)) {
			sent++;
			continue;
		}
		if (r == XMIT_DROP) {
			tq->st.drops++;
			uvn_pkt_free(pkts[i]);
			continue;
		}
		if (r == XMIT_FULL) {
			/* Out of descriptors: take back what is done and try once more. */
			r = reclaim(tq);
			if (r > 0) {
				i--;
				continue;
			}
			if (r == 0)
				tq->st.full++;
			else
				err = r; /* already the instance's error */
			break;
		}
		err = drv_ring_error(d, &tq->r, r);
		break;
	}
	if (sent) {
		drv_kick(&tq->r, &tq->st.kicks, &tq->st.kicks_suppressed);
		tq->st.bursts++;
		tq->st.packets += fast;
		tq->st.bytes += fast_bytes;
		tq->st.hdr_pushed += fast;
	}
	if (i) {
		tq->r.idle = 0;
		return (int)i;
	}
	if (err)
		return err;
	return n ? drv_idle(d, &tq->r) : 0;
}

unsigned uvn_drv_tx_alloc(struct uvn_drv *d, unsigned q, struct uvn_pkt **pkts, unsigned n,
			  uint32_t len)
{
	if (q >= d->pairs || len > DRV_ROOM - UVN_DRV_HEADROOM ||
	    !uvn_pkt_alloc_bulk(d->txq[q].pool, pkts, n))
		return 0;
	for (unsigned i = 0; i < n; i++)
		uvn_drv_pkt_set_len(pkts[i], len);
	return n;
}

struct uvn_pkt_pool *uvn_drv_tx_pool(struct uvn_drv *d, unsigned q)
{
	return q < d->pairs ? d->txq[q].pool : NULL;
}
