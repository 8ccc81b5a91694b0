/* SPDX-License-Identifier: MIT */
/**
 * @file pkt.h
 * @brief Packet descriptors, packet pools and page-fragment pools.
 *
 * A packet (struct uvn_pkt) is a small descriptor: a frame as a list of
 * segments, its virtio-net offload metadata, and who owns the bytes:
 *  - the descriptor's own data room (from its pool), or
 *  - page fragments (@c frags set: each segment holds a fragment
 *    reference, dropped when the packet is freed), or
 *  - somebody else's memory (a guest's TX buffer): @c ubuf is then a
 *    completion with a reference count, called when the last packet that
 *    points at the memory is freed (the idea of Linux's ubuf_info, from
 *    the zero-copy threads in docs/seeds.md), so the owner can hand the
 *    buffer back.
 *
 * Pools are single-threaded: allocate and free on the thread that owns the
 * pool. Nothing here allocates memory after creation.
 */
#ifndef UVNET_PKT_H
#define UVNET_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <linux/virtio_net.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libuvnet.so, which hides everything else (lib/uvnet.map). */
#pragma GCC visibility push(default)

/**
 * Segments per packet: enough for the largest legal frame in the smallest
 * pieces it arrives in, so a received frame is always one packet. That is
 * a mergeable receive: 64 KB of IP + Ethernet + VLAN (65553 B) and the
 * 12-byte virtio-net header over buffers of at least 1518 B, each filled
 * by the device but the last: 44; the rest is slack. A big-mode chain
 * takes 17 (4 KB pages), a frame sent from 4 KB pages 17.
 *
 * ABI: seg[] is the last member of struct uvn_pkt and stays at its
 * offset, so this bound can grow without moving a field; packets come
 * from pools (uvn_pkt_pool_create()), whose descriptors are the library's
 * size. A program that only uses pool packets and walks seg[0..nseg)
 * keeps working when it grows; one that sizes its own arrays by it (an
 * iovec array of 1 + UVN_PKT_MAX_SEGS, say) must be rebuilt. It was 19
 * up to 0.1.0's first builds: a 64 KB frame took up to 43 mergeable
 * buffers and was copied or dropped.
 */
#define UVN_PKT_MAX_SEGS 48

/** Completion for packets that borrow memory (zero-copy). */
struct uvn_pkt_ubuf {
	/** Called once, when the last reference is dropped. */
	void (*complete)(struct uvn_pkt_ubuf *u);
	/** References: one per packet pointing at the memory, plus the owner's while it builds them. */
	uint32_t refs;
};

struct uvn_pkt_pool;

/** A packet. */
struct uvn_pkt {
	struct uvn_pkt_pool *pool;  /**< pool the descriptor returns to */
	void *buf;                  /**< the descriptor's data room (pool buffer size bytes) */
	struct uvn_pkt_ubuf *ubuf;  /**< borrowed memory's completion, or NULL */
	struct uvn_frag_pool *frags;/**< segments are fragments of this pool, or NULL */
	uint32_t len;               /**< frame bytes over all segments (no virtio-net header) */
	uint16_t nseg;              /**< segments in use */
	uint16_t flags;             /**< free for the owner's use */
	uint16_t refcnt;            /**< descriptor references (uvn_pkt_ref) */
	uint16_t port;              /**< input port (switch use) */
	uint16_t queue;             /**< input queue */
	uint16_t pad;
	uint64_t user;              /**< owner's cookie */
	struct virtio_net_hdr_v1 vnet; /**< offload metadata, wire format (little-endian) */
	struct iovec seg[UVN_PKT_MAX_SEGS]; /**< the last member (see UVN_PKT_MAX_SEGS) */
};

/** How to create a packet pool. */
struct uvn_pkt_pool_cfg {
	unsigned count;    /**< descriptors */
	size_t buf_size;   /**< data room per descriptor (0: descriptors only) */
	void *mem;         /**< data room memory (count * buf_size bytes, e.g. from a shared arena), or NULL to map privately */
	const char *name;  /**< for statistics */
	uint64_t reserved[4]; /**< zero (room for later fields: the size stays 64 bytes) */
};

/** Pool counters. */
struct uvn_pkt_pool_stats {
	uint64_t alloc;       /**< descriptors handed out */
	uint64_t alloc_fail;  /**< allocations refused: pool empty */
	uint64_t freed;       /**< descriptors returned */
};

/**
 * Create a pool. @return 0 and the pool in @p out, or -errno.
 */
int uvn_pkt_pool_create(const struct uvn_pkt_pool_cfg *cfg, struct uvn_pkt_pool **out);

/** Destroy a pool. Every packet must have been freed. */
void uvn_pkt_pool_destroy(struct uvn_pkt_pool *pool);

/** @return descriptors currently free in the pool. */
unsigned uvn_pkt_pool_avail(const struct uvn_pkt_pool *pool);

/** @return descriptors in the pool. */
unsigned uvn_pkt_pool_count(const struct uvn_pkt_pool *pool);

/** @return the pool's counters (plain: like the pool, for its one thread). */
const struct uvn_pkt_pool_stats *uvn_pkt_pool_stats(const struct uvn_pkt_pool *pool);

/** @return the data room size of the pool's descriptors. */
size_t uvn_pkt_pool_buf_size(const struct uvn_pkt_pool *pool);

/**
 * Allocate up to @p n packets: refcnt 1, no segments, zero metadata; if the
 * pool has data rooms, seg[0] is not set (call uvn_pkt_set_buf()).
 * @return how many were stored in @p pkts (all or none).
 */
unsigned uvn_pkt_alloc_bulk(struct uvn_pkt_pool *pool, struct uvn_pkt **pkts, unsigned n);

/** Allocate one packet, or NULL. */
struct uvn_pkt *uvn_pkt_alloc(struct uvn_pkt_pool *pool);

/** Make the packet one segment of @p len bytes at the start of its data room. */
static inline void uvn_pkt_set_buf(struct uvn_pkt *p, uint32_t len)
{
	p->seg[0].iov_base = p->buf;
	p->seg[0].iov_len = len;
	p->nseg = 1;
	p->len = len;
}

/** Take another reference on a packet (a flood to several ports). */
static inline void uvn_pkt_ref(struct uvn_pkt *p)
{
	p->refcnt++;
}

/**
 * Drop a reference; on the last one, put fragments, drop the borrowed
 * memory's reference (completing it if it was the last), and return the
 * descriptor to its pool.
 */
void uvn_pkt_free(struct uvn_pkt *p);

/** uvn_pkt_free() for @p n packets. */
void uvn_pkt_free_bulk(struct uvn_pkt **pkts, unsigned n);

/** Take a reference on a borrowed-memory completion. */
static inline void uvn_pkt_ubuf_get(struct uvn_pkt_ubuf *u)
{
	u->refs++;
}

/** Drop a reference; the last one calls complete(). */
static inline void uvn_pkt_ubuf_put(struct uvn_pkt_ubuf *u)
{
	if (--u->refs == 0)
		u->complete(u);
}

/**
 * Copy a packet's frame and metadata into a new packet from @p pool (one
 * segment in its data room). For whoever must keep or modify a packet
 * whose bytes are borrowed (ubuf set): keep the copy, free the original.
 * @return the copy, or NULL if @p pool is empty or its rooms are too small
 */
struct uvn_pkt *uvn_pkt_copy(const struct uvn_pkt *p, struct uvn_pkt_pool *pool);

/**
 * Copy @p len bytes starting at @p off of the packet's frame into @p dst.
 * @return bytes copied (less if the frame is shorter)
 */
size_t uvn_pkt_read(const struct uvn_pkt *p, size_t off, void *dst, size_t len);

/* ------------------------------------------------------------------------ */
/* Page-fragment pools: rx buffers carved from big pages                    */
/* (the driver's deferred rx allocation: docs/seeds.md)                     */
/* ------------------------------------------------------------------------ */

struct uvn_frag_pool;

/** Fragment pool counters. */
struct uvn_frag_pool_stats {
	uint64_t frags_out;   /**< fragments handed out and not yet put */
	uint64_t pages_used;  /**< pages holding at least one fragment or being carved */
	uint64_t alloc_fail;  /**< allocations refused: no free page */
};

/**
 * Create a fragment pool over @p mem (@p len bytes, e.g. from a shared
 * arena) cut into pages of @p page_size bytes (a power of two; @p mem must
 * be aligned to it). @return 0 and the pool in @p out, or -errno.
 */
int uvn_frag_pool_create(void *mem, size_t len, size_t page_size, struct uvn_frag_pool **out);

/** Destroy a fragment pool (its memory belongs to the caller). */
void uvn_frag_pool_destroy(struct uvn_frag_pool *fp);

/**
 * Carve a fragment of @p size bytes (rounded up to @p align, a power of two)
 * from the current page, starting a new page when it does not fit.
 * @return the fragment, or NULL when no page is free or size > page size
 */
void *uvn_frag_alloc(struct uvn_frag_pool *fp, size_t size, size_t align);

/** Take one more reference on the fragment's page (a fragment shared by two packets). */
void uvn_frag_get(struct uvn_frag_pool *fp, const void *frag);

/** Drop a fragment's page reference; the page is reused when none is left. */
void uvn_frag_put(struct uvn_frag_pool *fp, const void *frag);

/** Stop carving the current page, so it is released once its fragments come back (teardown). */
void uvn_frag_pool_retire(struct uvn_frag_pool *fp);

/** @return the pool's counters (plain: like the pool, for its one thread). */
const struct uvn_frag_pool_stats *uvn_frag_pool_stats(const struct uvn_frag_pool *fp);

/** @return bytes per page. */
size_t uvn_frag_pool_page_size(const struct uvn_frag_pool *fp);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
