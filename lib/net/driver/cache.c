/* SPDX-License-Identifier: MIT */
/*
 * Indirect descriptor tables (seed 002). With the cache on, a table of up
 * to N entries (the threshold) comes from a per-queue stack of tables
 * carved from the arena at set-up, so sending a multi-segment packet costs
 * a pop and a push. Otherwise, or for bigger tables, or when the stack is
 * empty, the table is allocated from the shared arena and freed to it when
 * the backend is done, per packet, as Linux did with kmalloc/kfree before
 * the cache. A table goes back where it came from: cached tables are
 * recognised by address, so the switches may change at any time.
 */
#include <errno.h>
#include <stdlib.h>

#include "net/driver/drv.h"

#define TABLE_BYTES (UVN_DRV_DESC_CACHE_MAX * 16u)
/* Cached tables start on a cache line; the stride keeps them there. */
#define TABLE_STRIDE ((TABLE_BYTES + CACHE_LINE - 1) & ~(CACHE_LINE - 1))

int drv_cache_init(struct drv_desc_cache *c, struct uvn_drv *d, unsigned count, uint64_t *hit,
		   uint64_t *miss)
{
	c->d = d;
	c->hit = hit;
	c->miss = miss;
	c->count = count;
	c->len = (size_t)count * TABLE_STRIDE;
	c->base = uvn_arena_alloc(d->arena, c->len, CACHE_LINE);
	c->free = calloc(count, sizeof(*c->free));
	if (!c->base || !c->free) {
		drv_cache_fini(c);
		return -ENOMEM;
	}
	/* LIFO: the table freed last is handed out next, still in cache. */
	for (unsigned i = 0; i < count; i++)
		c->free[i] = c->base + (size_t)(count - 1 - i) * TABLE_STRIDE;
	c->nfree = count;
	return 0;
}

void drv_cache_fini(struct drv_desc_cache *c)
{
	if (c->base)
		uvn_arena_free(c->d->arena, c->base, c->len);
	free(c->free);
	c->base = NULL;
	c->free = NULL;
	c->nfree = c->count = 0;
}

static bool cached(const struct drv_desc_cache *c, const void *t)
{
	return (uintptr_t)t - (uintptr_t)c->base < c->len;
}

void *drv_cache_alloc(void *ctx, unsigned n, uint64_t *addr)
{
	struct drv_desc_cache *c = ctx;
	void *t;

	if (drv_opt(c->d, UVN_OPT_DESC_CACHE) && n <= drv_opt(c->d, UVN_OPT_DESC_CACHE_THR) &&
	    UVN_LIKELY(c->nfree)) {
		t = c->free[--c->nfree];
		(*c->hit)++;
	} else {
		/* No cache: the table costs an allocation and a free per packet. */
		t = drv_arena_alloc(c->d, (size_t)n * 16u, 16);
		if (!t)
			return NULL; /* the ring falls back to direct descriptors */
		c->arena_out++;
		(*c->miss)++;
	}
	*addr = drv_addr(t);
	return t;
}

void drv_cache_free(void *ctx, void *table, unsigned n)
{
	struct drv_desc_cache *c = ctx;

	if (cached(c, table)) {
		c->free[c->nfree++] = table;
		return;
	}
	drv_arena_free(c->d, table, (size_t)n * 16u);
	c->arena_out--;
}
