/* SPDX-License-Identifier: MIT */
/*
 * Packet descriptors and their pools: a LIFO stack of free descriptors, so
 * the most recently freed (cache-hot) one is handed out next.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <uvnet/pkt.h>

#include "util/abi.h"

/* The ABI promise of pkt.h (UVN_PKT_MAX_SEGS): seg[] is last and stays where it is. */
_Static_assert(sizeof(void *) != 8 || offsetof(struct uvn_pkt, seg) == 72, "seg[] moved");
_Static_assert(sizeof(struct uvn_pkt) ==
	       offsetof(struct uvn_pkt, seg) + UVN_PKT_MAX_SEGS * sizeof(struct iovec),
	       "seg[] is not the last member");

struct uvn_pkt_pool {
	struct uvn_pkt **free;   /* stack of free descriptors */
	unsigned nfree, count;
	size_t buf_size;
	struct uvn_pkt *descs;
	void *mem;               /* data rooms */
	bool own_mem;
	struct uvn_pkt_pool_stats st;
};

int uvn_pkt_pool_create(const struct uvn_pkt_pool_cfg *cfg, struct uvn_pkt_pool **out)
{
	struct uvn_pkt_pool *pool;

	if (!cfg->count || !UVN_RESERVED_ZERO(cfg))
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->count = cfg->count;
	pool->buf_size = cfg->buf_size;
	pool->free = calloc(cfg->count, sizeof(*pool->free));
	pool->descs = aligned_alloc(64, ((sizeof(struct uvn_pkt) * cfg->count) + 63) & ~(size_t)63);
	if (!pool->free || !pool->descs)
		goto fail;
	pool->mem = cfg->mem;
	if (cfg->buf_size && !cfg->mem) {
		pool->mem = mmap(NULL, cfg->buf_size * cfg->count, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pool->mem == MAP_FAILED) {
			pool->mem = NULL;
			goto fail;
		}
		pool->own_mem = true;
	}
	for (unsigned i = 0; i < cfg->count; i++) {
		struct uvn_pkt *p = &pool->descs[i];

		memset(p, 0, sizeof(*p));
		p->pool = pool;
		p->buf = pool->mem ? (char *)pool->mem + cfg->buf_size * i : NULL;
		/* Pop order = index order, so the first descriptors are used first. */
		pool->free[cfg->count - 1 - i] = p;
	}
	pool->nfree = cfg->count;
	*out = pool;
	return 0;
fail:
	uvn_pkt_pool_destroy(pool);
	return -ENOMEM;
}

void uvn_pkt_pool_destroy(struct uvn_pkt_pool *pool)
{
	if (!pool)
		return;
	if (pool->own_mem)
		munmap(pool->mem, pool->buf_size * pool->count);
	free(pool->descs);
	free(pool->free);
	free(pool);
}

unsigned uvn_pkt_pool_avail(const struct uvn_pkt_pool *pool)
{
	return pool->nfree;
}

unsigned uvn_pkt_pool_count(const struct uvn_pkt_pool *pool)
{
	return pool->count;
}

const struct uvn_pkt_pool_stats *uvn_pkt_pool_stats(const struct uvn_pkt_pool *pool)
{
	return &pool->st;
}

size_t uvn_pkt_pool_buf_size(const struct uvn_pkt_pool *pool)
{
	return pool->buf_size;
}

static void reset(struct uvn_pkt *p)
{
	p->ubuf = NULL;
	p->frags = NULL;
	p->len = 0;
	p->nseg = 0;
	p->flags = 0;
	p->refcnt = 1;
	p->port = 0;
	p->queue = 0;
	p->user = 0;
	memset(&p->vnet, 0, sizeof(p->vnet));
}

unsigned uvn_pkt_alloc_bulk(struct uvn_pkt_pool *pool, struct uvn_pkt **pkts, unsigned n)
{
	struct uvn_pkt **top;

	if (pool->nfree < n) {
		pool->st.alloc_fail++;
		return 0;
	}
	/* Popped through a local: the resets' stores could alias the count. */
	top = pool->free + pool->nfree;
	pool->nfree -= n;
	for (unsigned i = 0; i < n; i++) {
		struct uvn_pkt *p = *--top;

		reset(p);
		pkts[i] = p;
	}
	pool->st.alloc += n;
	return n;
}

struct uvn_pkt *uvn_pkt_alloc(struct uvn_pkt_pool *pool)
{
	struct uvn_pkt *p;

	if (__builtin_expect(!pool->nfree, 0)) {
		pool->st.alloc_fail++;
		return NULL;
	}
	p = pool->free[--pool->nfree];
	reset(p);
	pool->st.alloc++;
	return p;
}

/* The segments are fragments of a pool: give them back. */
static inline void put_frags(struct uvn_pkt *p)
{
	if (p->frags) {
		for (unsigned i = 0; i < p->nseg; i++)
			uvn_frag_put(p->frags, p->seg[i].iov_base);
		p->frags = NULL;
	}
}

void uvn_pkt_free(struct uvn_pkt *p)
{
	struct uvn_pkt_pool *pool = p->pool;

	if (--p->refcnt)
		return;
	put_frags(p);
	if (p->ubuf) {
		struct uvn_pkt_ubuf *u = p->ubuf;

		p->ubuf = NULL;
		uvn_pkt_ubuf_put(u);
	}
	pool->free[pool->nfree++] = p;
	pool->st.freed++;
}

void uvn_pkt_free_bulk(struct uvn_pkt **pkts, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct uvn_pkt *p = pkts[i];
		struct uvn_pkt_pool *pool = p->pool;

		/* The common case: the last reference, nothing borrowed (a
		 * received frame's fragments go back to their pool here). */
		if (__builtin_expect(p->refcnt == 1 && !p->ubuf, 1)) {
			put_frags(p);
			p->refcnt = 0;
			pool->free[pool->nfree++] = p;
			pool->st.freed++;
		} else {
			uvn_pkt_free(p);
		}
	}
}

size_t uvn_pkt_read(const struct uvn_pkt *p, size_t off, void *dst, size_t len)
{
	size_t done = 0;

	for (unsigned i = 0; i < p->nseg && done < len; i++) {
		size_t sl = p->seg[i].iov_len, n;

		if (off >= sl) {
			off -= sl;
			continue;
		}
		n = sl - off < len - done ? sl - off : len - done;
		memcpy((char *)dst + done, (char *)p->seg[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return done;
}

struct uvn_pkt *uvn_pkt_copy(const struct uvn_pkt *p, struct uvn_pkt_pool *pool)
{
	struct uvn_pkt *c;

	if (p->len > pool->buf_size)
		return NULL;
	c = uvn_pkt_alloc(pool);
	if (!c)
		return NULL;
	uvn_pkt_read(p, 0, c->buf, p->len);
	uvn_pkt_set_buf(c, p->len);
	c->vnet = p->vnet;
	c->port = p->port;
	c->queue = p->queue;
	c->user = p->user;
	return c;
}
