/* SPDX-License-Identifier: MIT */
/*
 * Indirect descriptor tables: the descriptor cache (docs/seeds.md, 002).
 * With the cache on (desc_cache), a table of up to desc_cache_thr entries
 * comes from a per-queue stack of tables carved from the arena at set-up,
 * so sending a multi-segment packet costs a pop and a push. Otherwise, or
 * for bigger tables, or when the stack is empty, the table is allocated
 * from the shared arena and freed to it when the backend is done, per
 * packet, as Linux did with kmalloc/kfree before the cache (kept to
 * measure against). A table goes back where it came from: cached tables are
 * recognised by address, so the switches may change at any time.
 *
 * Tables of two entries, the common chain (a header and one segment), have
 * a class of their own, 32 bytes apart, as a slab allocator packs them:
 * the backend reads every table from our CPU's cache, and two tables to a
 * line halve those transfers. Carved at the largest size instead, each
 * table took a line of its own, and the cache measured slower than the
 * arena's dense allocations (pps, 2 segments: 6-7 against 9-10 Mpps).
 */
#include <errno.h>
#include <stdlib.h>

#include "net/driver/drv.h"

#define SMALL_ENTRIES 2u

/* @count tables @stride bytes apart. */
static int class_init(struct drv_table_class *k, struct uvn_drv *d, unsigned count, size_t stride)
{
	k->len = (size_t)count * stride;
	k->base = uvn_arena_alloc(d->arena, k->len, CACHE_LINE);
	k->free = calloc(count, sizeof(*k->free));
	if (!k->base || !k->free)
		return -ENOMEM;
	/* LIFO: the table freed last is handed out next, still in cache. */
	for (unsigned i = 0; i < count; i++)
		k->free[i] = k->base + (size_t)(count - 1 - i) * stride;
	k->nfree = count;
	return 0;
}

int drv_cache_init(struct drv_desc_cache *c, struct uvn_drv *d, unsigned count, uint64_t *hit,
		   uint64_t *miss)
{
	size_t big = ((size_t)UVN_DRV_DESC_CACHE_MAX * 16u + CACHE_LINE - 1) & ~(size_t)(CACHE_LINE - 1);

	c->d = d;
	c->hit = hit;
	c->miss = miss;
	c->count = count;
	if (class_init(&c->cls[0], d, count, SMALL_ENTRIES * 16u) ||
	    class_init(&c->cls[1], d, count, big)) {
		drv_cache_fini(c);
		return -ENOMEM;
	}
	return 0;
}

void drv_cache_fini(struct drv_desc_cache *c)
{
	for (unsigned i = 0; i < DRV_TABLE_CLASSES; i++) {
		struct drv_table_class *k = &c->cls[i];

		if (k->base)
			uvn_arena_free(c->d->arena, k->base, k->len);
		free(k->free);
		*k = (struct drv_table_class){ 0 };
	}
	c->count = 0;
}

/* The class that carved @t, or NULL. */
static struct drv_table_class *owner(struct drv_desc_cache *c, const void *t)
{
	for (unsigned i = 0; i < DRV_TABLE_CLASSES; i++)
		if ((uintptr_t)t - (uintptr_t)c->cls[i].base < c->cls[i].len)
			return &c->cls[i];
	return NULL;
}

void *drv_cache_alloc(void *ctx, unsigned n, uint64_t *addr)
{
	struct drv_desc_cache *c = ctx;
	struct drv_table_class *k = &c->cls[n > SMALL_ENTRIES];
	void *t;

	if (drv_opt(c->d, UVN_OPT_DESC_CACHE) && n <= drv_opt(c->d, UVN_OPT_DESC_CACHE_THR) &&
	    UVN_LIKELY(k->nfree)) {
		t = k->free[--k->nfree];
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
	struct drv_table_class *k = owner(c, table);

	if (k) {
		k->free[k->nfree++] = table;
		return;
	}
	drv_arena_free(c->d, table, (size_t)n * 16u);
	c->arena_out--;
}
