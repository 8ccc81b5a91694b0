/* SPDX-License-Identifier: MIT */
/*
 * The virtio-net driver's objects, shared by its files:
 *   open.c     bringing an instance up and down: connection, negotiation,
 *              queue set-up, start, stop and close;
 *   arena.c    the shared arena's size and allocation from it;
 *   cfg.c      the configuration's defaults and its key=value parser;
 *   info.c     run-time options, negotiated features, statistics, queries;
 *   link.c     reconnecting after a backend restart (the link thread);
 *   rx.c       receive: the three rx modes, deferred allocation, the frame
 *              size average for adaptive buffer sizing;
 *   rx_post.c  receive buffers: their size (mergeable sizing), posting and
 *              refill, and taking them back at teardown;
 *   tx.c       transmit: headers, offloads, bounce buffers, reclaim;
 *   cache.c    indirect descriptor tables (per-queue cache or the arena);
 *   ctrl.c     the control queue;  wait.c kicks, calls and connection checks.
 *
 * Ownership: everything a queue touches on its data path lives in its own
 * struct (its pools, its cache, its counters); the instance-wide fields it
 * reads are set before the queues start and the run-time options, read
 * with relaxed atomic loads once per burst.
 */
#ifndef UVN_NET_DRIVER_DRV_H
#define UVN_NET_DRIVER_DRV_H

#include <pthread.h>
#include <stdatomic.h>

#include <linux/virtio_net.h>
#include <uvnet/driver.h>

#include "mem/mem.h"
#include "net/hdr.h"
#include "ring/ring.h"
#include "vhost_user/frontend.h"

#define DRV_BURST 32u
/* A frame in small mode and a tx bounce buffer: Ethernet + VLAN + 1500. */
#define DRV_GOOD_PACKET_LEN (UVN_ETH_HLEN + 4u + 1500u)
/* Largest frame we accept: 64 KB of IP plus Ethernet + VLAN. */
#define DRV_MAX_FRAME (65535u + UVN_ETH_HLEN + 4u)
/* Packet data rooms (small mode rx, tx pool, bounce buffers). */
#define DRV_ROOM 2048u
/* Big mode: pages per chain, enough for header + the largest frame. */
#define DRV_BIG_PAGE 4096u
#define DRV_BIG_PAGES ((UVN_NET_HDR_LEN + DRV_MAX_FRAME + DRV_BIG_PAGE - 1) / DRV_BIG_PAGE)
/* Descriptors of a big chain: the header on its own (as Linux does), then the pages. */
#define DRV_BIG_DESCS (DRV_BIG_PAGES + 1)
/* rx buffer memory is carved from pages of this size. */
#define DRV_FRAG_PAGE (64u * 1024u)
/* EWMA mode: buffers never larger than a page (Linux: PAGE_SIZE). */
#define DRV_EWMA_MAX 4096u
/* No mergeable buffer is larger than this (jumbo MTUs). */
#define DRV_MRG_MAX (DRV_FRAG_PAGE / 2)
/* No mergeable buffer is smaller than this, whatever the MTU and sizing:
 * the device fills every buffer of a frame but the last (virtio-net,
 * "Processing of Incoming Packets"), so a legal frame takes at most
 * DRV_MRG_MAX_BUFS of them, and a packet has segments for that many. */
#define DRV_MRG_MIN DRV_GOOD_PACKET_LEN
#define DRV_MRG_MAX_BUFS ((UVN_NET_HDR_LEN + DRV_MAX_FRAME + DRV_MRG_MIN - 1) / DRV_MRG_MIN)
#define CACHE_LINE 64u

_Static_assert(DRV_BIG_PAGES + 1 <= UVN_PKT_MAX_SEGS, "a big chain fits a packet's segments");
_Static_assert(DRV_MRG_MAX_BUFS <= UVN_PKT_MAX_SEGS, "a mergeable frame fits a packet's segments");

/* Token tags: rx and tx ring tokens are pointers with the low bit saying
 * what they are (everything they point at is at least 8-byte aligned). */
#define TOK_PKT 1u /* rx: a packet object posted with its buffer (deferred_alloc off);
		    * tx: a tx slot (header outside the frame, or a bounce) */

static inline void *tok_make(void *p, uintptr_t tag)
{
	return (void *)((uintptr_t)p | tag);
}

static inline uintptr_t tok_tag(const void *t)
{
	return (uintptr_t)t & 1u;
}

static inline void *tok_ptr(const void *t)
{
	return (void *)((uintptr_t)t & ~(uintptr_t)1u);
}

struct uvn_drv;

#define DRV_TABLE_CLASSES 2

/* Cached indirect tables of one size, carved from the arena at set-up. */
struct drv_table_class {
	uint8_t *base;
	size_t len;
	void **free;            /* stack of free tables */
	unsigned nfree;
};

/* Indirect tables: the per-queue cache (desc_cache, docs/seeds.md) or the shared arena. */
struct drv_desc_cache {
	struct uvn_drv *d;
	/* [0]: two entries (a header and a segment), two tables to a cache
	 * line; [1]: up to UVN_DRV_DESC_CACHE_MAX entries */
	struct drv_table_class cls[DRV_TABLE_CLASSES];
	unsigned count;         /* tables per class */
	uint64_t *hit, *miss;   /* the owning queue's counters */
	uint64_t arena_out;     /* tables allocated from the arena and not freed */
};

/* What a ring needs besides its driver half. */
struct drv_ring {
	struct uvn_vq_drv *vq;
	void *mem;              /* the ring in the arena */
	size_t mem_len;
	unsigned idx;           /* vhost-user vring index */
	unsigned num;
	int kick_fd, call_fd;   /* -1 when polling */
	unsigned idle;          /* bursts without progress since the last connection check */
	struct drv_desc_cache cache;
	/* Reconnect without an in-flight region: the avail slots are put right
	 * by the ring's own thread (link.c, drv_gate()), in this scratch. A
	 * packed ring is always put right so (its chains laid out again from
	 * the device's used position, pk_base, which the next backend gets). */
	_Atomic int fix;        /* DRV_FIX_* */
	int fix_result;         /* slots rewritten (packed: chains), or -1 */
	uint8_t *fix_mark;
	uint16_t *fix_list;     /* split */
	uint64_t *fix_keys;     /* packed */
	uint16_t pk_base;       /* packed: position | wrap << 15 to start the next backend at */
};

/* DRV_FIX_LINK: the reconnect thread puts the ring right (its thread was late). */
enum { DRV_FIX_NONE, DRV_FIX_REQ, DRV_FIX_BUSY, DRV_FIX_DONE, DRV_FIX_SKIP, DRV_FIX_LINK };

/* d->err while the reconnect thread waits for each ring's thread to put
 * its ring right (never returned to the application). */
#define DRV_PAUSE 1

/* Big mode: the pages of one posted chain (deferred allocation). */
struct drv_big_rec {
	void *page[DRV_BIG_PAGES];
};

struct drv_rxq {
	struct drv_ring r;
	struct uvn_drv *d;
	unsigned q;
	enum uvn_rx_mode mode;
	struct uvn_frag_pool *frags;
	void *frag_mem;
	size_t frag_len;
	struct uvn_pkt_pool *pkts;  /* small: data rooms in the arena; else descriptors only */
	void *pkt_mem;
	size_t pkt_mem_len;
	/* Buffers given back for reuse: small buffers, big-mode pages. */
	void **recycle;
	unsigned nrecycle, recycle_cap;
	/* Big mode records (deferred allocation). */
	struct drv_big_rec *recs;
	struct drv_big_rec **rec_free;
	unsigned nrec_free;
	unsigned posted;            /* chains in the ring */
	/* Mergeable. */
	unsigned buf_len;           /* current buffer size */
	uint32_t ewma;              /* EWMA of frame sizes, << EWMA_SHIFT */
	/* A mergeable frame whose later buffers have not arrived yet. */
	struct uvn_pkt *partial;
	unsigned partial_left;
	bool partial_drop;          /* the frame is being dropped: consume its buffers */
	struct uvn_drv_rxq_stats st;
} __attribute__((aligned(CACHE_LINE)));

/* A tx buffer whose header could not go into the frame's headroom. */
struct drv_tx_slot {
	struct uvn_pkt *pkt;        /* NULL: the frame was bounced and freed */
	uint8_t *hdr;               /* 64 bytes in the arena: header (and bounced frames follow) */
	uint8_t *bounce;            /* DRV_ROOM bytes in the arena */
};

struct drv_txq {
	struct drv_ring r;
	struct uvn_drv *d;
	unsigned q;
	struct uvn_pkt_pool *pool;  /* tx pool (data rooms in the arena) */
	void *pool_mem;
	size_t pool_mem_len;
	struct drv_tx_slot *slots;
	struct drv_tx_slot **slot_free;
	unsigned nslot_free;
	void *slot_mem;             /* headers and bounce buffers */
	size_t slot_mem_len;
	struct uvn_drv_txq_stats st;
} __attribute__((aligned(CACHE_LINE)));

struct uvn_drv {
	struct uvn_drv_cfg cfg;
	char path[108];
	struct uvn_vu_fe *fe;
	struct uvn_arena *arena;
	atomic_flag arena_lock;     /* arena allocations after set-up (desc cache off, app) */
	size_t app_mem_used;        /* uvn_drv_mem_alloc() bytes out */
	uint64_t features;          /* negotiated virtio features */
	uint64_t offered;
	unsigned max_pairs;         /* the backend's queue pairs */
	unsigned pairs;             /* queue pairs set up */
	unsigned pairs_on;          /* queue pairs in use (MQ) */
	enum uvn_rx_mode rx_mode;
	bool mrg_rxbuf, indirect, has_ctrl, csum, guest_csum;
	unsigned hdr_len;           /* 12 (VERSION_1) */
	uint8_t *arena_base;        /* for the "is it shared memory" test */
	size_t arena_size;
	_Atomic int err;            /* 0, -ENOTCONN, -EPROTO */
	bool stopped;
	_Atomic unsigned opt[UVN_OPT__COUNT];
	struct drv_rxq *rxq;        /* [pairs] */
	struct drv_txq *txq;
	struct drv_ring ctrl;
	uint8_t *ctrl_buf;          /* command and ack, in the arena */
	bool ctrl_dead;             /* a command was never answered */
	bool promisc;               /* the last promiscuous mode set (replayed on reconnect) */
	uint64_t proto;             /* vhost-user protocol features negotiated */
	/* Reconnection (link.c). The reconnect thread alone uses fe after open. */
	pthread_mutex_t ctrl_lock;  /* the control queue, link_st: app control vs reconnect thread */
	_Atomic int sock_fd;        /* the connected socket, -1 while down */
	_Atomic bool link_up;
	int stop_fd;                /* eventfd: the reconnect thread must end */
	pthread_t link_thread;
	bool link_thread_on;
	int inflight_fd;            /* the in-flight region, kept across backends; -1: none */
	struct uvn_vu_inflight inflight;
	struct uvn_drv_link_stats link_st;
};

static inline unsigned drv_opt(const struct uvn_drv *d, enum uvn_drv_opt o)
{
	return atomic_load_explicit(&d->opt[o], memory_order_relaxed);
}

/* 0, a negative errno, or DRV_PAUSE: the bursts test it for non-zero only. */
static inline int drv_err(const struct uvn_drv *d)
{
	return atomic_load_explicit(&d->err, memory_order_relaxed);
}

/* A burst on ring @r found drv_err() non-zero: put the ring right if the
 * reconnect thread asks for it. @return 0 to go on, or the error */
int drv_gate(struct uvn_drv *d, struct drv_ring *r);

/* Stop the instance with @err (-ENOTCONN, -EPROTO) unless already stopped. @return the error */
int drv_fail(struct uvn_drv *d, int err, const char *why);

/* Is [p, p + len) inside the shared arena? */
static inline bool drv_shared(const struct uvn_drv *d, const void *p, size_t len)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)d->arena_base;

	return off < d->arena_size && len <= d->arena_size - off;
}

static inline uint64_t drv_addr(const void *p)
{
	return (uint64_t)(uintptr_t)p; /* gpa == uva == our address */
}

/* Arena allocation after set-up (serialized between queue threads; arena.c). */
void *drv_arena_alloc(struct uvn_drv *d, size_t size, size_t align);
void drv_arena_free(struct uvn_drv *d, void *p, size_t size);

/* cache.c */
int drv_cache_init(struct drv_desc_cache *c, struct uvn_drv *d, unsigned count, uint64_t *hit,
		   uint64_t *miss);
void drv_cache_fini(struct drv_desc_cache *c);
void *drv_cache_alloc(void *ctx, unsigned n, uint64_t *addr);
void drv_cache_free(void *ctx, void *table, unsigned n);

/* wait.c: notifications and the connection. */
void drv_kick(struct drv_ring *r, uint64_t *kicks, uint64_t *suppressed);
/* A burst made no progress: check the connection now and then. @return 0 or the error */
int drv_idle(struct uvn_drv *d, struct drv_ring *r);
/* A ring reported an error: the backend broke it. @return the instance error */
int drv_ring_error(struct uvn_drv *d, struct drv_ring *r, int vq_err);

/* Bytes of rx buffer memory one queue gets (arena.c). */
size_t drv_rx_buf_bytes(const struct uvn_drv *d);
/* Bytes of one ring, and of the whole arena the instance asks for (arena.c). */
size_t drv_ring_bytes(const struct uvn_drv *d);
size_t drv_arena_bytes(const struct uvn_drv *d);

/* rx.c: set-up and receive */
int drv_rxq_init(struct uvn_drv *d, struct drv_rxq *rq);
void drv_rxq_fini(struct drv_rxq *rq);

/* rx_post.c: buffer sizes, posting, giving buffers back */
void drv_rxq_fill(struct drv_rxq *rq);    /* post buffers while the ring has room */
void drv_rxq_drain(struct drv_rxq *rq);   /* return every posted buffer (ring stopped) */
unsigned drv_mrg_buf_len(const struct drv_rxq *rq);
void drv_rx_release_rec(struct drv_rxq *rq, struct drv_big_rec *rec, unsigned from);
void drv_rx_release_token(struct drv_rxq *rq, void *tok); /* a posted buffer carrying no frame */

/* Frame room of a small buffer: MTU frame + VLAN tag, at least a good packet. */
static inline unsigned drv_small_frame(const struct uvn_drv *d)
{
	unsigned f = d->cfg.mtu + UVN_ETH_HLEN + 4;

	return f < DRV_GOOD_PACKET_LEN ? DRV_GOOD_PACKET_LEN : f;
}

/* A buffer or page back for reuse (the recycle stack, or its fragment pool). */
static inline void drv_rx_recycle(struct drv_rxq *rq, void *buf)
{
	if (UVN_LIKELY(rq->nrecycle < rq->recycle_cap))
		rq->recycle[rq->nrecycle++] = buf;
	else
		uvn_frag_put(rq->frags, buf);
}

/* tx.c */
int drv_txq_init(struct uvn_drv *d, struct drv_txq *tq);
void drv_txq_drain(struct drv_txq *tq);
void drv_txq_fini(struct drv_txq *tq);

/* ctrl.c: send one command, wait for its ack. @return 0, -EIO, -ETIMEDOUT, ... */
int drv_ctrl_cmd(struct uvn_drv *d, uint8_t class, uint8_t cmd, const void *data, size_t len);

/* open.c: the vhost-user set-up of a connection (features set onwards);
 * @resume: the rings run already (reconnect). */
int drv_start(struct uvn_drv *d, bool resume);
/* The vhost-user protocol features the driver asks for. */
uint64_t drv_proto_want(const struct uvn_drv *d);

/* lib/ring/split_drv.c, packed_drv.c (not in the ring API: only a reconnecting
 * driver needs them). */
int uvn_split_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint16_t *list);
int uvn_packed_drv_keep(struct uvn_vq_drv *vq);
int uvn_packed_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint64_t *keys, uint16_t *base);

/* link.c: the reconnect thread. */
int drv_link_start(struct uvn_drv *d);
void drv_link_stop(struct uvn_drv *d);

/* Ring helpers shared by the queue kinds (open.c). */
/* @fds: kick and call eventfds (always for the control queue, else unless polling). */
int drv_ring_create(struct uvn_drv *d, struct drv_ring *r, unsigned idx, bool fds,
		    bool with_cache, uint64_t *hit, uint64_t *miss);
void drv_ring_destroy(struct uvn_drv *d, struct drv_ring *r);

#endif
