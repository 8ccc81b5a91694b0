/* SPDX-License-Identifier: MIT */
/*
 * What an open driver instance tells and lets change at run time: the
 * run-time options (the switches of docs/seeds.md, thresholds),
 * negotiated features, per-queue statistics and where the buffers are.
 */
#include <errno.h>
#include <string.h>

#include "net/driver/drv.h"
#include "util/stats.h"

#define RX_STAT(f) UVN_STAT(struct uvn_drv_rxq_stats, f)
const struct uvn_stat_desc uvn_drv_rxq_stats_desc[] = {
	RX_STAT(packets), RX_STAT(bytes), RX_STAT(bursts), RX_STAT(drops), RX_STAT(drop_nopkt),
	RX_STAT(err_len), RX_STAT(err_num_buffers), RX_STAT(bufs_posted), RX_STAT(bufs_used),
	RX_STAT(refill_fail), RX_STAT(mrg_multi), RX_STAT(copies), RX_STAT(kicks),
	RX_STAT(kicks_suppressed), RX_STAT(waits), RX_STAT(interrupts), RX_STAT(indirect),
	RX_STAT(desc_cache_hit), RX_STAT(desc_cache_miss), RX_STAT(err_hdr), { NULL, 0 },
};

#define TX_STAT(f) UVN_STAT(struct uvn_drv_txq_stats, f)
const struct uvn_stat_desc uvn_drv_txq_stats_desc[] = {
	TX_STAT(packets), TX_STAT(bytes), TX_STAT(bursts), TX_STAT(drops), TX_STAT(err_offload), TX_STAT(err_segs),
	TX_STAT(err_unmapped), TX_STAT(bounced), TX_STAT(csum_sw), TX_STAT(hdr_pushed),
	TX_STAT(full), TX_STAT(reclaimed), TX_STAT(reclaim_runs), TX_STAT(kicks),
	TX_STAT(kicks_suppressed), TX_STAT(waits), TX_STAT(interrupts), TX_STAT(indirect),
	TX_STAT(desc_cache_hit), TX_STAT(desc_cache_miss), { NULL, 0 },
};

int uvn_drv_set_opt(struct uvn_drv *d, enum uvn_drv_opt opt, unsigned value)
{
	switch (opt) {
	case UVN_OPT_DEFERRED_ALLOC:
	case UVN_OPT_DESC_CACHE:
		if (value > 1)
			return -EINVAL;
		break;
	case UVN_OPT_MRG_SIZING:
		if (value > UVN_MRG_MTU_ONLY)
			return -EINVAL;
		break;
	case UVN_OPT_DESC_CACHE_THR:
		if (value == 0 || value > UVN_DRV_DESC_CACHE_MAX)
			return -EINVAL;
		break;
	case UVN_OPT_TX_FREE_THRESH:
		if (value > d->cfg.queue_size)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	atomic_store_explicit(&d->opt[opt], value, memory_order_relaxed);
	return 0;
}

unsigned uvn_drv_get_opt(const struct uvn_drv *d, enum uvn_drv_opt opt)
{
	return (unsigned)opt < UVN_OPT__COUNT ? drv_opt(d, opt) : 0;
}

uint64_t uvn_drv_features(const struct uvn_drv *d)
{
	return d->features;
}

uint64_t uvn_drv_protocol_features(const struct uvn_drv *d)
{
	return d->proto;
}

enum uvn_rx_mode uvn_drv_rx_mode(const struct uvn_drv *d)
{
	return d->rx_mode;
}

unsigned uvn_drv_queue_pairs(const struct uvn_drv *d)
{
	return d->pairs;
}

bool uvn_drv_has_ctrl(const struct uvn_drv *d)
{
	return d->has_ctrl;
}

int uvn_drv_error(const struct uvn_drv *d)
{
	int err = drv_err(d);

	return err < 0 ? err : 0;
}

int uvn_drv_sock_fd(const struct uvn_drv *d)
{
	return atomic_load_explicit(&((struct uvn_drv *)d)->sock_fd, memory_order_relaxed);
}

unsigned uvn_drv_mrg_buf_len(const struct uvn_drv *d, unsigned q)
{
	if (q >= d->pairs || d->rx_mode != UVN_RX_MERGEABLE)
		return 0;
	return drv_mrg_buf_len(&d->rxq[q]);
}

int uvn_drv_rxq_stats(const struct uvn_drv *d, unsigned q, struct uvn_drv_rxq_stats *out)
{
	if (q >= d->pairs)
		return -EINVAL;
	*out = d->rxq[q].st;
	out->indirect = uvn_vq_drv_stats(d->rxq[q].r.vq)->indirect;
	return 0;
}

int uvn_drv_txq_stats(const struct uvn_drv *d, unsigned q, struct uvn_drv_txq_stats *out)
{
	if (q >= d->pairs)
		return -EINVAL;
	*out = d->txq[q].st;
	out->indirect = uvn_vq_drv_stats(d->txq[q].r.vq)->indirect;
	return 0;
}

const struct uvn_vq_stats *uvn_drv_vq_stats(const struct uvn_drv *d, unsigned vq)
{
	const struct drv_ring *r = NULL;

	if (vq < 2 * d->pairs)
		r = vq & 1 ? &d->txq[vq / 2].r : &d->rxq[vq / 2].r;
	else if (vq == 2 * d->pairs && d->has_ctrl)
		r = &d->ctrl;
	return r && r->vq ? uvn_vq_drv_stats(r->vq) : NULL;
}

int uvn_drv_mem_info(const struct uvn_drv *d, unsigned q, struct uvn_drv_mem_info *out)
{
	const struct drv_rxq *rq;
	const struct drv_txq *tq;

	if (q >= d->pairs)
		return -EINVAL;
	rq = &d->rxq[q];
	tq = &d->txq[q];
	memset(out, 0, sizeof(*out));
	out->rx_frags_out = uvn_frag_pool_stats(rq->frags)->frags_out;
	out->rx_frag_pages = uvn_frag_pool_stats(rq->frags)->pages_used;
	out->rx_pkts_free = uvn_pkt_pool_avail(rq->pkts);
	out->rx_pkts_total = uvn_pkt_pool_count(rq->pkts);
	out->rx_posted = rq->posted;
	out->tx_pkts_free = uvn_pkt_pool_avail(tq->pool);
	out->tx_pkts_total = uvn_pkt_pool_count(tq->pool);
	out->tx_in_flight = tq->r.vq ? tq->r.num - uvn_vq_drv_num_free(tq->r.vq) : 0;
	out->arena_in_use = uvn_arena_in_use(d->arena);
	out->arena_size = uvn_arena_size(d->arena);
	out->huge = uvn_arena_is_huge(d->arena);
	return 0;
}
