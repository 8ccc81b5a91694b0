/* SPDX-License-Identifier: MIT */
/*
 * The instance's one shared arena (rings, rx buffers, tx packets, indirect
 * tables, the application's reserve): how big it is made, and allocation
 * from it after set-up. Bringing the instance up is open.c.
 */
#include <stdlib.h>
#include <string.h>

#include "net/driver/drv.h"

void *drv_arena_alloc(struct uvn_drv *d, size_t size, size_t align)
{
	void *p;

	while (atomic_flag_test_and_set_explicit(&d->arena_lock, memory_order_acquire))
		;
	p = uvn_arena_alloc(d->arena, size, align);
	atomic_flag_clear_explicit(&d->arena_lock, memory_order_release);
	return p;
}

void drv_arena_free(struct uvn_drv *d, void *p, size_t size)
{
	while (atomic_flag_test_and_set_explicit(&d->arena_lock, memory_order_acquire))
		;
	uvn_arena_free(d->arena, p, size);
	atomic_flag_clear_explicit(&d->arena_lock, memory_order_release);
}

void *uvn_drv_mem_alloc(struct uvn_drv *d, size_t size)
{
	void *p;

	if (!size || size > d->cfg.app_mem_bytes)
		return NULL;
	while (atomic_flag_test_and_set_explicit(&d->arena_lock, memory_order_acquire))
		;
	p = d->app_mem_used + size <= d->cfg.app_mem_bytes ?
		uvn_arena_alloc(d->arena, size, CACHE_LINE) : NULL;
	if (p)
		d->app_mem_used += size;
	atomic_flag_clear_explicit(&d->arena_lock, memory_order_release);
	return p;
}

void uvn_drv_mem_free(struct uvn_drv *d, void *p, size_t size)
{
	if (!p)
		return;
	while (atomic_flag_test_and_set_explicit(&d->arena_lock, memory_order_acquire))
		;
	uvn_arena_free(d->arena, p, size);
	d->app_mem_used -= size;
	atomic_flag_clear_explicit(&d->arena_lock, memory_order_release);
}

/* ------------------------------------------------------------- sizing */

static size_t pow2(size_t v)
{
	size_t p = 64;

	while (p < v)
		p <<= 1;
	return p;
}

size_t drv_ring_bytes(const struct uvn_drv *d)
{
	struct uvn_vq_layout l;

	uvn_vq_layout(d->cfg.ring == UVN_RING_PACKED, d->cfg.queue_size, &l);
	return l.size;
}

/* Big-mode chains a ring holds: one descriptor each through an indirect table. */
static size_t big_chains(const struct uvn_drv *d)
{
	size_t num = d->cfg.queue_size;

	return d->indirect && d->cfg.ring != UVN_RING_PACKED ? num : num / DRV_BIG_DESCS + 1;
}

size_t drv_rx_buf_bytes(const struct uvn_drv *d)
{
	size_t num = d->cfg.queue_size, b;
	unsigned mtu_buf = UVN_NET_HDR_LEN + d->cfg.mtu + UVN_ETH_HLEN + 4;

	if (d->cfg.rx_buf_bytes)
		b = d->cfg.rx_buf_bytes;
	else if (d->rx_mode == UVN_RX_SMALL)
		b = (2 * num + 64) * 1600;
	else if (d->rx_mode == UVN_RX_BIG)
		/* The ring's chains, as many again held by the application (a
		 * burst returns at most a ring's worth) and some: every frame
		 * 64 KB at worst. */
		b = (2 * big_chains(d) + 64) * DRV_BIG_PAGES * DRV_BIG_PAGE;
	else
		b = 2 * num * (mtu_buf <= DRV_EWMA_MAX ? DRV_EWMA_MAX :
			       mtu_buf + CACHE_LINE < DRV_MRG_MAX ? mtu_buf + CACHE_LINE : DRV_MRG_MAX);
	/* Whole pages, and two more for the ones being carved. */
	return (b + 3 * (size_t)DRV_FRAG_PAGE - 1) / DRV_FRAG_PAGE * DRV_FRAG_PAGE;
}

size_t drv_arena_bytes(const struct uvn_drv *d)
{
	size_t num = d->cfg.queue_size, per_pair = 0, total;
	size_t tables = pow2(UVN_DRV_DESC_CACHE_MAX * 16u + CACHE_LINE) * num;

	/* rings with their caches, and room for uncached tables of both */
	per_pair += 2 * (pow2(drv_ring_bytes(d)) + pow2(num * 320) + tables);
	per_pair += pow2(drv_rx_buf_bytes(d)) + (size_t)DRV_FRAG_PAGE;
	if (d->rx_mode == UVN_RX_SMALL)
		per_pair += pow2((size_t)d->cfg.rx_pkts * DRV_ROOM);
	per_pair += pow2((size_t)d->cfg.tx_pkts * DRV_ROOM);
	per_pair += pow2(num * CACHE_LINE) + pow2(num * DRV_ROOM);
	total = per_pair * d->pairs;
	total += pow2(drv_ring_bytes(d)) + 2 * tables + 4096; /* control queue */
	/* The application's reserve, with room for the allocator's rounding. */
	total += 2 * d->cfg.app_mem_bytes;
	return total + (1u << 20);
}
