/* SPDX-License-Identifier: MIT */
/**
 * @file driver.h
 * @brief The virtio-net driver: send and receive frames through any
 * vhost-user backend (uvnetd, DPDK's net_vhost, OVS-DPDK, VPP), like DPDK's
 * virtio-user PMD without DPDK.
 *
 * uvn_drv_open() connects to the backend's socket (or waits for it to
 * connect: server mode), negotiates, shares one memory arena (memfd, 2 MB
 * hugepages when the system has them reserved) holding every ring and
 * buffer, sets the rings up and fills the receive rings. Then each queue
 * pair is driven with bursts:
 *
 * @code
 *   struct uvn_drv_cfg cfg;
 *   struct uvn_drv *d;
 *   uvn_drv_cfg_init(&cfg);
 *   cfg.path = "/tmp/vhost.sock";
 *   if (uvn_drv_open(&cfg, &d) < 0) ...
 *   struct uvn_pkt *pkts[32];
 *   int n = uvn_rx_burst(d, 0, pkts, 32);      // n < 0: the backend is gone
 *   ...                                       // use, then uvn_pkt_free() each
 *   unsigned k = uvn_drv_tx_alloc(d, 0, pkts, 32, 64);  // frames in shared memory
 *   ...                                       // write the frames
 *   n = uvn_tx_burst(d, 0, pkts, k);          // packets 0..n-1 now belong to the driver
 *   uvn_drv_close(d);
 * @endcode
 *
 * Threads: one thread per queue pair at a time (the rx and tx queue of a
 * pair may run on two threads). Packets received on queue q come from
 * pools of that queue: free them (uvn_pkt_free()) on the thread that polls
 * queue q, or send them out of queue q of any uvn_drv on that thread. The
 * control functions (queue pairs, MAC, promiscuous mode, options, stats
 * snapshots) may be called from any one thread. Nothing on the data path
 * allocates memory, logs, or takes a lock, except with the two benchmark
 * settings below that do so on purpose (deferred_alloc off: packet objects
 * made at refill; desc_cache off: indirect tables from the shared arena).
 *
 * Errors are negative errno values. A backend that goes away or breaks
 * the protocol never makes a call hang: control requests time out
 * (uvn_drv_cfg::timeout_ms) and the burst functions return -ENOTCONN (the
 * socket closed) or -EPROTO (the backend wrote something invalid into a
 * ring) from then on; uvn_drv_close() still returns every buffer.
 *
 * Reconnecting (uvn_drv_cfg::reconnect): when the backend
 * goes away (killed, restarted, upgraded), the instance keeps its rings,
 * buffers and packets; the link is down (uvn_drv_link_up(), the link_cb
 * callback). The queues keep working on their rings meanwhile: uvn_rx_burst()
 * returns the frames the old backend finished, then none; uvn_tx_burst()
 * takes packets until the ring is full (0 taken after that), and they go
 * out once the link is back. Control requests (queue pairs, MAC,
 * promiscuous mode) return -EAGAIN while down. Once a backend is there
 * again the driver negotiates the same virtio features (a backend that no
 * longer offers one of them, or fewer queues, fails the instance with
 * -ENOTSUP, counted in uvn_drv_link_stats::err_features), shares the same
 * memory, describes each ring at the base the backend must resume from,
 * replays the control state (queue pairs, MAC) and kicks every ring.
 * The base is the ring's used index, as QEMU does:
 *  - with INFLIGHT_SHMFD the driver asked for the in-flight region at open
 *    (GET_INFLIGHT_FD) and hands it to each new backend (SET_INFLIGHT_FD):
 *    the chains the dead backend held are processed first, the rest from
 *    the avail ring: nothing is lost or completed twice, in any order the
 *    backend completed them;
 *  - without it, the new backend takes every chain from the used index on:
 *    the driver first rewrites the avail slots from the used index up to
 *    the published one so they hold exactly the chains the old backend had
 *    not completed (it may have completed them out of order: uvnetd's
 *    zero-copy does), as QEMU's virtio does not. Chains the old one had
 *    taken and not finished are processed again: a frame sent just before
 *    the crash may go out twice, the rx buffers it held are filled again.
 *    The rewrite is done by each ring's own thread at its next call
 *    (burst, reclaim or wait: the reconnect thread wakes waiters), so the
 *    data path takes no lock: keep calling every queue in use while the
 *    link is down. A ring whose thread does not call within timeout_ms is
 *    resumed as it is (counted: fix_skipped). With IN_ORDER negotiated the
 *    chains complete in order and nothing is rewritten.
 * Either way every tx packet is freed exactly once, every rx buffer comes
 * back or stays posted: a restart costs the frames in flight, nothing more.
 * Packed rings have no used index in memory: the driver keeps a copy of
 * each chain in flight, and after a restart lays the chains the dead
 * backend had not completed out again from where its used elements
 * stopped (oldest first), which is the new backend's base; INFLIGHT_SHMFD
 * is not asked for. A late ring is put right by the reconnect thread
 * (fix_skipped); a packed ring whose state does not add up fails the
 * instance with -EPROTO (err_resubmit).
 *
 * Three optimizations come from Linux virtio-net patches, each measured in
 * its netdev thread against the code before it; the older behaviour is
 * kept beside each, switchable at run time (uvn_drv_set_opt(), the cfg
 * fields of the same names), to measure against. The default is the
 * optimization. docs/seeds.md names the threads (the project calls them
 * the "seed threads", numbered 000-004), the figures they reported and the
 * uvnet-perf runs that repeat them:
 *  - deferred rx allocation (deferred_alloc, thread 000): rx rings hold raw
 *    buffers from a page-fragment pool and a packet object is made only
 *    when a buffer comes back used; off: the packet object is made when
 *    the buffer is posted;
 *  - mergeable buffer sizing (mrg_sizing, thread 003): virtio-net header +
 *    MTU frame rounded up to a cache line, so an MTU frame fits one buffer;
 *    or an EWMA of received sizes (Linux today); or the frame alone
 *    (UVN_MRG_MTU_ONLY, Linux's sizing before the fix: an MTU frame takes
 *    two buffers);
 *  - indirect descriptor cache (desc_cache, desc_cache_thr, thread 002):
 *    with INDIRECT_DESC, tables of up to desc_cache_thr entries come from a
 *    per-queue cache; off: each table is allocated from and freed to the
 *    shared arena per packet.
 */
#ifndef UVNET_DRIVER_H
#define UVNET_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <uvnet/pkt.h>
#include <uvnet/virtqueue.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libuvnet.so, which hides everything else (lib/uvnet.map). */
#pragma GCC visibility push(default)

/** Most queue pairs a driver instance drives. */
#define UVN_DRV_MAX_QUEUE_PAIRS 16u

/** Bytes in front of a tx pool packet's frame, where the driver writes the virtio-net header. */
#define UVN_DRV_HEADROOM 64u

/** Largest indirect descriptor cache threshold: a header and 19 segments (a 64 KB frame in
 *  4 KB pages and more); larger tables come from the shared arena. */
#define UVN_DRV_DESC_CACHE_MAX 20u

/** How receive buffers are posted. */
enum uvn_rx_mode {
	UVN_RX_AUTO = 0,   /**< mergeable if the backend offers MRG_RXBUF, else small */
	UVN_RX_SMALL,      /**< one header + 1518 B buffer per frame, copied out into a packet;
			    *   no guest GSO is negotiated (the backend segments) */
	UVN_RX_BIG,        /**< a chain of 4 KB pages per frame, up to 64 KB, without MRG_RXBUF */
	UVN_RX_MERGEABLE,  /**< MRG_RXBUF: frames spread over buffers, num_buffers in the header */
};

/** Size of mergeable receive buffers (uvn_drv_cfg::mrg_sizing; docs/seeds.md, 003). */
enum uvn_mrg_sizing {
	UVN_MRG_HDR_MTU = 0, /**< header + MTU frame, cache-line aligned: an MTU frame fits one buffer */
	UVN_MRG_EWMA,        /**< header + EWMA of received sizes, at least an MTU frame, at most a page */
	UVN_MRG_MTU_ONLY,    /**< the MTU frame without room for the header, as Linux sized them
			      *   before header + MTU (kept to measure against): MTU frames take two */
};

/** Ring layout. */
enum uvn_ring_layout {
	UVN_RING_SPLIT = 0,  /**< split virtqueues */
	UVN_RING_PACKED,     /**< packed virtqueues (VIRTIO_F_RING_PACKED must be offered) */
};

/** How to open a driver instance. Start from uvn_drv_cfg_init(). */
struct uvn_drv_cfg {
	const char *path;        /**< vhost-user socket */
	bool server;             /**< listen on @c path and wait for the backend to connect */
	unsigned queue_pairs;    /**< queue pairs to set up (1..UVN_DRV_MAX_QUEUE_PAIRS, at most
				  *   what the backend offers); default 1 */
	unsigned queue_size;     /**< ring entries (split: a power of two); default 256 */
	enum uvn_ring_layout ring;
	enum uvn_rx_mode rx_mode;
	/**
	 * Virtio feature bits never to negotiate, e.g.
	 * 1ULL << VIRTIO_RING_F_INDIRECT_DESC, VIRTIO_F_IN_ORDER,
	 * VIRTIO_RING_F_EVENT_IDX, VIRTIO_NET_F_MRG_RXBUF, VIRTIO_NET_F_CTRL_VQ.
	 */
	uint64_t features_off;
	/** Extra feature bits to ask for when offered (offloads: VIRTIO_NET_F_CSUM,
	 *  HOST_TSO4/6, HOST_USO, GUEST_CSUM...). Default: CSUM and GUEST_CSUM. */
	uint64_t features_extra;
	/** Polling: no kick or call eventfds (vhost-user NOFD); the backend must
	 *  poll, and uvn_rx_wait()/uvn_tx_wait() are not available. */
	bool poll;
	unsigned mtu;            /**< largest frame payload (IP packet) to receive; default 1500 */
	uint8_t mac[6];          /**< our MAC (sent with CTRL_MAC_ADDR when negotiated) */
	bool mac_set;            /**< @c mac is valid */
	bool no_huge;            /**< plain memfd even if hugepages are reserved */
	unsigned timeout_ms;     /**< control replies, connect and accept; default 5000 */
	unsigned rx_pkts;        /**< rx packet objects per queue (frames the application may hold
				  *   plus the ring); default 4 * queue_size */
	unsigned tx_pkts;        /**< packets in each queue's tx pool (uvn_drv_tx_pool()); default
				  *   4 * queue_size */
	size_t rx_buf_bytes;     /**< rx buffer memory per queue; default from mode and sizes */
	/* The optimizations' switches at open (see "Three optimizations" above,
	 * uvn_drv_set_opt() and docs/seeds.md); off is for benchmarks. */
	bool deferred_alloc;            /**< make rx packet objects only for used buffers;
					 *   default true */
	enum uvn_mrg_sizing mrg_sizing; /**< mergeable rx buffer size; default UVN_MRG_HDR_MTU */
	bool desc_cache;                /**< indirect tables from a per-queue cache; default true */
	unsigned desc_cache_thr;        /**< largest table the cache serves, in entries
					 *   (1..UVN_DRV_DESC_CACHE_MAX); default 4 */
	unsigned tx_free_thresh;        /**< reclaim used tx buffers when fewer descriptors than
					 *   this are free; default 32 */
	size_t app_mem_bytes;           /**< shared memory for uvn_drv_mem_alloc(); default 4 MB */
	/**
	 * Survive a backend restart (see "Reconnecting" above):
	 * a thread of the instance watches the connection and, when the
	 * backend goes away, connects again (client) or waits for it to
	 * connect again (server), forever, until uvn_drv_stop(). Default off:
	 * a lost backend stops the instance (-ENOTCONN).
	 */
	bool reconnect;
	/** Do not negotiate VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD even if offered
	 *  (it is asked for only with @c reconnect: nothing else needs it). */
	bool no_inflight;
	/**
	 * Called on the reconnect thread each time the link goes down (@p up
	 * false) or comes back (@p up true). Must not block long; must not call
	 * uvn_drv_stop()/uvn_drv_close(). NULL: none.
	 */
	void (*link_cb)(void *arg, bool up);
	void *link_arg;
	/** Zero, as uvn_drv_cfg_init() leaves it: room for later fields, so
	 *  the struct a program allocates stays 256 bytes. */
	uint64_t reserved[14];
};

/** Run-time options (uvn_drv_set_opt()), the cfg fields of the same names. */
enum uvn_drv_opt {
	UVN_OPT_DEFERRED_ALLOC, /**< 0 or 1: uvn_drv_cfg::deferred_alloc */
	UVN_OPT_MRG_SIZING,     /**< an enum uvn_mrg_sizing: uvn_drv_cfg::mrg_sizing */
	UVN_OPT_DESC_CACHE,     /**< 0 or 1: uvn_drv_cfg::desc_cache */
	UVN_OPT_DESC_CACHE_THR, /**< 1..UVN_DRV_DESC_CACHE_MAX: uvn_drv_cfg::desc_cache_thr */
	UVN_OPT_TX_FREE_THRESH, /**< 0..queue size */
	UVN_OPT__COUNT
};

struct uvn_drv;

/** Fill @p cfg with the defaults (no path). */
void uvn_drv_cfg_init(struct uvn_drv_cfg *cfg);

/**
 * Apply "key=value[,key=value...]" settings to @p cfg, for command lines:
 * path, server, queues, queue_size, ring=split|packed, packed,
 * rx_mode=auto|small|big|mergeable, poll, mtu, mac=xx:xx:xx:xx:xx:xx,
 * no_huge, timeout_ms, rx_pkts, tx_pkts, rx_buf_bytes, app_mem_bytes,
 * deferred_alloc, mrg_sizing=hdr_mtu|ewma|mtu_only, desc_cache,
 * desc_cache_thr, tx_free_thresh, reconnect, inflight (0 sets
 * no_inflight); and the feature switches mrg_rxbuf, indirect, in_order,
 * event_idx, ctrl_vq, csum, guest_csum (0 puts the bit in features_off,
 * 1 takes it out). Every key takes a value: booleans 1/0, on/off,
 * yes/no, true/false; numbers in C notation (decimal, 0x hex, 0 octal).
 * The path string is not copied.
 * @return 0, or -EINVAL (and @p err, if not NULL, points at the bad item)
 */
int uvn_drv_cfg_parse(struct uvn_drv_cfg *cfg, char *spec, const char **err);

/**
 * Connect, negotiate, set up every queue and fill the rx rings.
 * @return 0 and the instance in @p out, or -errno: -ECONNREFUSED/-ENOENT
 *         (no backend), -ETIMEDOUT (no reply or no connection in time),
 *         -EPROTO (an invalid reply), -ENOTSUP (a required feature was not
 *         offered: VERSION_1, MRG_RXBUF for the mergeable mode, RING_PACKED
 *         for packed rings, MQ for more than one pair), -ENOMEM
 */
int uvn_drv_open(const struct uvn_drv_cfg *cfg, struct uvn_drv **out);

/**
 * Stop the rings (the backend gives them back), return every posted rx
 * buffer and every untransmitted tx packet to its pool, and disconnect.
 * The instance stays for statistics and uvn_drv_mem_info(); bursts then
 * return -ENOTCONN. Packets the application still holds stay valid.
 */
void uvn_drv_stop(struct uvn_drv *d);

/**
 * uvn_drv_stop() if needed, then free everything. Every packet received
 * from or allocated through @p d must have been freed.
 */
void uvn_drv_close(struct uvn_drv *d);

/**
 * Receive up to @p n frames from queue pair @p q (polling; never blocks).
 * Each packet's frame starts at seg[0]; its offload metadata (flags
 * DATA_VALID / NEEDS_CSUM, gso fields) is in p->vnet; p->queue is @p q.
 * The ring is refilled before returning.
 * @return packets stored in @p pkts (the caller frees them), or -ENOTCONN
 *         / -EPROTO once the backend is gone or broke the ring, -EINVAL for
 *         a bad queue
 */
int uvn_rx_burst(struct uvn_drv *d, unsigned q, struct uvn_pkt **pkts, unsigned n);

/**
 * Send up to @p n packets on queue pair @p q. Packets are taken in order
 * until the ring is full; taken packets belong to the driver (freed once
 * the backend used them), the rest stay the caller's. The virtio-net
 * header is built from p->vnet (NEEDS_CSUM is completed in software when
 * the backend did not negotiate CSUM; a GSO type it did not negotiate
 * drops the packet). Segments outside the shared arena are copied into a
 * bounce buffer (frames up to 2 KB; larger ones are dropped and counted).
 * Zero copy and one descriptor per frame: packets from uvn_drv_tx_alloc()
 * or received from this instance, with headroom for the header.
 * @return packets taken (dropped ones included, counted in the stats), or
 *         -ENOTCONN / -EPROTO / -EINVAL as uvn_rx_burst()
 */
int uvn_tx_burst(struct uvn_drv *d, unsigned q, struct uvn_pkt *const *pkts, unsigned n);

/**
 * Allocate @p n packets from queue @p q's tx pool (data rooms in the shared
 * arena, UVN_DRV_HEADROOM bytes of headroom), each with one segment of
 * @p len bytes (at most 2048 - UVN_DRV_HEADROOM) to fill.
 * @return how many (all or none)
 */
unsigned uvn_drv_tx_alloc(struct uvn_drv *d, unsigned q, struct uvn_pkt **pkts, unsigned n,
			  uint32_t len);

/** @return queue @p q's tx pool (for uvn_pkt_alloc_bulk(); then uvn_drv_pkt_set_len()). */
struct uvn_pkt_pool *uvn_drv_tx_pool(struct uvn_drv *d, unsigned q);

/** Make a tx pool packet one segment of @p len bytes after the headroom. */
static inline void uvn_drv_pkt_set_len(struct uvn_pkt *p, uint32_t len)
{
	p->seg[0].iov_base = (char *)p->buf + UVN_DRV_HEADROOM;
	p->seg[0].iov_len = len;
	p->nseg = 1;
	p->len = len;
}

/**
 * Shared memory for frames the application lays out itself (larger than a
 * tx pool packet, or zero copy with a struct uvn_pkt_ubuf completion):
 * packet segments pointing here are sent without a copy. Any thread.
 * @return @p size bytes (64-byte aligned), or NULL when the reserve
 *         (uvn_drv_cfg::app_mem_bytes) is exhausted
 */
void *uvn_drv_mem_alloc(struct uvn_drv *d, size_t size);

/** Free memory from uvn_drv_mem_alloc() (@p size as allocated) once no packet uses it. */
void uvn_drv_mem_free(struct uvn_drv *d, void *p, size_t size);

/**
 * Reclaim transmitted buffers of queue @p q now (uvn_tx_burst() does it
 * when descriptors run low). @return buffers reclaimed, or an error
 */
int uvn_tx_reclaim(struct uvn_drv *d, unsigned q);

/**
 * Interrupt-style waiting: sleep until queue @p q's rx ring has used
 * buffers (the backend signals the call eventfd; with EVENT_IDX through
 * used_event), @p timeout_ms passes (-1: forever) or the backend goes away.
 * @return 1 (frames are waiting), 0 (timeout), -ENOTCONN, -EPROTO, or
 *         -ENOTSUP in polling mode
 */
int uvn_rx_wait(struct uvn_drv *d, unsigned q, int timeout_ms);

/** Like uvn_rx_wait(), for transmitted buffers to reclaim on queue @p q. */
int uvn_tx_wait(struct uvn_drv *d, unsigned q, int timeout_ms);

/**
 * The call eventfd of queue @p q's rx ring, to wait in one's own event
 * loop: uvn_rx_arm() before sleeping on it (if it returns false, frames
 * arrived meanwhile: poll instead), then read the eventfd and poll.
 * @return the fd, or -ENOTSUP in polling mode
 */
int uvn_rx_fd(struct uvn_drv *d, unsigned q);

/** Ask for a call on the next rx buffer used. @return false if some are already waiting */
bool uvn_rx_arm(struct uvn_drv *d, unsigned q);

/** Back to polling queue @p q: ask the backend not to call (best effort). */
void uvn_rx_disarm(struct uvn_drv *d, unsigned q);

/** @return the vhost-user socket, readable/hung up when the backend goes away. */
int uvn_drv_sock_fd(const struct uvn_drv *d);

/**
 * Check the connection now (a poll() of the socket, no waiting); the bursts
 * do it themselves when a queue makes no progress.
 * @return 0, or -ENOTCONN / -EPROTO
 */
int uvn_drv_check(struct uvn_drv *d);

/** @return 0, or the error that stopped the instance (-ENOTCONN, -EPROTO; -ENOTSUP:
 *  a reconnected backend no longer offered the features negotiated). */
int uvn_drv_error(const struct uvn_drv *d);

/** @return true while a backend is connected and the rings are running. Any thread. */
bool uvn_drv_link_up(const struct uvn_drv *d);

/** Reconnection counters (uvn_drv_cfg::reconnect). */
struct uvn_drv_link_stats {
	uint64_t disconnects;    /**< the backend went away */
	uint64_t reconnects;     /**< the link came back */
	uint64_t attempts_failed;/**< connections that failed during set-up (tried again) */
	uint64_t err_features;   /**< a backend offered fewer features or queues: instance failed */
	uint64_t inflight_sets;  /**< SET_INFLIGHT_FD sent (the region handed to a new backend) */
	uint64_t resubmitted;    /**< without the region: avail slots rewritten so the new backend
				  *   takes the chains the dead one left (it completed out of order);
				  *   packed: chains laid out again */
	uint64_t err_resubmit;   /**< rings whose state did not add up (left as they were) */
	uint64_t fix_skipped;    /**< rings whose thread did not call in within timeout_ms */
	uint64_t last_down_us;   /**< how long the last reconnect took (socket lost to link up) */
	/** Chains the backend still held when uvn_drv_stop() stopped the rings
	 *  (its avail index past the used index; packed: descriptors between the
	 *  two halves of GET_VRING_BASE): 0 once traffic is quiet. */
	uint64_t held_at_stop;
	uint64_t reserved[6];    /**< room for later counters: the size stays 128 bytes */
};

/** Copy the reconnection counters. Any thread (a snapshot, not atomic as a whole). */
void uvn_drv_link_stats(const struct uvn_drv *d, struct uvn_drv_link_stats *out);

/**
 * Set a run-time option for every queue (a control function): each takes
 * it at its next refill (rx), table (tx) or reclaim; buffers and tables
 * already in a ring go back where they came from. @return 0 or -EINVAL
 */
int uvn_drv_set_opt(struct uvn_drv *d, enum uvn_drv_opt opt, unsigned value);

/** @return an option's current value. */
unsigned uvn_drv_get_opt(const struct uvn_drv *d, enum uvn_drv_opt opt);

/**
 * Use @p pairs queue pairs (control queue VIRTIO_NET_CTRL_MQ; 1..the
 * pairs set up). @return 0, -ENOTSUP (no MQ), -EINVAL, -EIO (the backend
 * refused), -ETIMEDOUT, or the instance's error
 */
int uvn_drv_set_queue_pairs(struct uvn_drv *d, unsigned pairs);

/** Promiscuous mode (VIRTIO_NET_CTRL_RX). @return as uvn_drv_set_queue_pairs() */
int uvn_drv_set_promisc(struct uvn_drv *d, bool on);

/** Set our MAC (VIRTIO_NET_CTRL_MAC_ADDR_SET). @return as uvn_drv_set_queue_pairs() */
int uvn_drv_set_mac(struct uvn_drv *d, const uint8_t mac[6]);

/** @return the negotiated virtio feature bits. */
uint64_t uvn_drv_features(const struct uvn_drv *d);

/** @return the negotiated vhost-user protocol feature bits. */
uint64_t uvn_drv_protocol_features(const struct uvn_drv *d);

/** @return the rx mode in use (never UVN_RX_AUTO). */
enum uvn_rx_mode uvn_drv_rx_mode(const struct uvn_drv *d);

/** @return the queue pairs set up. */
unsigned uvn_drv_queue_pairs(const struct uvn_drv *d);

/** @return true if a control queue was negotiated. */
bool uvn_drv_has_ctrl(const struct uvn_drv *d);

/** @return the current mergeable buffer size of queue @p q (0 in other modes). */
unsigned uvn_drv_mrg_buf_len(const struct uvn_drv *d, unsigned q);

/** Receive queue counters (written by the queue's thread, plainly: read
 * them on that thread, as uvn_drv_rxq_stats() and uvn_drv_txq_stats() do). */
struct uvn_drv_rxq_stats {
	uint64_t packets;        /**< frames delivered */
	uint64_t bytes;          /**< frame bytes delivered (no virtio-net header) */
	uint64_t bursts;         /**< calls that delivered at least one frame */
	uint64_t drops;          /**< frames dropped (the errors below, no packet object) */
	uint64_t drop_nopkt;     /**< frames dropped: no packet object free */
	uint64_t err_len;        /**< used length shorter than header + Ethernet header, or too long */
	uint64_t err_num_buffers;/**< mergeable: num_buffers 0 or beyond what was posted */
	uint64_t bufs_posted;    /**< buffers (chains) made available */
	uint64_t bufs_used;      /**< buffers the backend returned */
	uint64_t refill_fail;    /**< refills cut short: no buffer memory or packet object */
	uint64_t mrg_multi;      /**< mergeable frames that took more than one buffer */
	uint64_t copies;         /**< frames copied out (small mode with deferred allocation) */
	uint64_t kicks;          /**< kicks the backend asked for and we sent (0 when polling:
				      the backend's request is not read) */
	uint64_t kicks_suppressed; /**< kicks its event suppression spared */
	uint64_t waits;          /**< uvn_rx_wait() calls that slept */
	uint64_t interrupts;     /**< wake-ups by the call eventfd */
	uint64_t indirect;       /**< chains posted through an indirect table (big mode) */
	uint64_t desc_cache_hit; /**< indirect tables from the per-queue cache */
	uint64_t desc_cache_miss;/**< indirect tables allocated from the arena */
	uint64_t err_hdr;        /**< virtio-net header with flags or GSO not negotiated, bad csum range */
	uint64_t reserved[12];   /**< room for later counters: the size stays 256 bytes */
};

/** Transmit queue counters. */
struct uvn_drv_txq_stats {
	uint64_t packets;        /**< frames made available */
	uint64_t bytes;          /**< frame bytes (no virtio-net header) */
	uint64_t bursts;         /**< calls that took at least one packet */
	uint64_t drops;          /**< packets taken but dropped (errors below) */
	uint64_t err_offload;    /**< GSO type the backend did not negotiate, bad csum range */
	uint64_t err_unmapped;   /**< segments outside the arena and too big to bounce */
	uint64_t bounced;        /**< frames copied into a bounce buffer */
	uint64_t csum_sw;        /**< checksums completed in software */
	uint64_t hdr_pushed;     /**< headers written into the packet's headroom (one descriptor) */
	uint64_t full;           /**< calls that stopped at a full ring */
	uint64_t reclaimed;      /**< buffers reclaimed (free_old_xmit) */
	uint64_t reclaim_runs;   /**< reclaim batches */
	uint64_t kicks;
	uint64_t kicks_suppressed;
	uint64_t waits;
	uint64_t interrupts;
	uint64_t indirect;       /**< packets sent through an indirect table */
	uint64_t desc_cache_hit;
	uint64_t desc_cache_miss;
	uint64_t err_segs;       /**< frames of more segments than the ring holds in one chain */
	uint64_t reserved[12];   /**< room for later counters: the size stays 256 bytes */
};

/** {name, offsetof} rows, NULL-terminated. */
extern const struct uvn_stat_desc uvn_drv_rxq_stats_desc[];
extern const struct uvn_stat_desc uvn_drv_txq_stats_desc[];

/** Copy queue @p q's counters. @return 0 or -EINVAL */
int uvn_drv_rxq_stats(const struct uvn_drv *d, unsigned q, struct uvn_drv_rxq_stats *out);
int uvn_drv_txq_stats(const struct uvn_drv *d, unsigned q, struct uvn_drv_txq_stats *out);

/**
 * The ring counters of virtqueue @p vq (2q: rx of pair q, 2q + 1: its tx,
 * 2 * pairs: control). @return NULL if there is no such ring
 */
const struct uvn_vq_stats *uvn_drv_vq_stats(const struct uvn_drv *d, unsigned vq);

/** Where queue @p q's buffers are (to check that nothing leaks). */
struct uvn_drv_mem_info {
	uint64_t rx_frags_out;     /**< rx buffer fragments out (posted or held in packets) */
	uint64_t rx_frag_pages;    /**< rx buffer pages in use */
	unsigned rx_pkts_free;     /**< rx packet objects free */
	unsigned rx_pkts_total;
	unsigned rx_posted;        /**< buffers in the rx ring now */
	unsigned tx_pkts_free;     /**< tx pool packets free */
	unsigned tx_pkts_total;
	unsigned tx_in_flight;     /**< tx ring descriptors not reclaimed yet */
	size_t arena_in_use;       /**< arena bytes allocated (whole instance) */
	size_t arena_size;
	bool huge;                 /**< the arena is on 2 MB hugepages */
	uint64_t reserved[8];      /**< room for later fields: the size stays 128 bytes */
};

/** @return 0 and queue @p q's figures in @p out, or -EINVAL. */
int uvn_drv_mem_info(const struct uvn_drv *d, unsigned q, struct uvn_drv_mem_info *out);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
