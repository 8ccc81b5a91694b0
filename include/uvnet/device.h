/* SPDX-License-Identifier: MIT */
/**
 * @file device.h
 * @brief A vhost-user virtio-net device to embed: the host side of a
 * guest's (or any frontend's) virtio-net NIC, as uvnetd's vhost-user ports
 * use it.
 *
 * The device owns the vhost-user socket (it listens on a path, or connects
 * to one: QEMU's server=on), one backend session at a time, and a virtio-net
 * queue for each ring the session makes ready: guest TX chains become
 * packets, packets are written into guest RX buffers, the control queue is
 * answered, the guest is notified when it asked, and writes into guest
 * memory are dirty-logged while a migration runs. The application brings
 * the threads and the event loop:
 *
 * @code
 *   struct uvn_dev_cfg cfg = { .path = "/tmp/vm0.sock", .queue_pairs = 1 };
 *   struct uvn_dev *d;
 *   uvn_dev_create(&cfg, &d);
 *   // poll uvn_dev_listen_fd(d): uvn_dev_accept(d); then poll uvn_dev_fd(d):
 *   // if (uvn_dev_handle(d) < 0) uvn_dev_disconnect(d);
 *   n = uvn_dev_rx_burst(d, 0, pkts, 32);   // frames the guest sent
 *   uvn_dev_tx_burst(d, 0, pkts, n);        // frames into the guest (it echoes)
 *   uvn_pkt_free_bulk(pkts, n);
 *   uvn_dev_rx_done(d, 0);                  // zero-copy: chains go back
 * @endcode
 *
 * Rings are named by number: 2q is queue pair q's guest RX ring (filled by
 * uvn_dev_tx_burst()), 2q + 1 its guest TX ring (read by uvn_dev_rx_burst()),
 * UVN_DEV_CTRL_RING the control queue.
 *
 * Threads: the control functions (create, accept, connect, handle,
 * check_memory, disconnect, discard_disabled, set_zerocopy, queue_stats,
 * ctrl, destroy) and the ops callbacks run on one control thread. A ring
 * stops being ready only inside them, so the data-path functions of queue
 * pair q may run on other threads as long as none of them runs while a
 * control function does (uvnetd parks its workers around every one): one
 * thread at a time for a pair's guest TX ring (rx_burst, rx_done, kicked,
 * arm) and one for its guest RX ring (tx_burst). The guest is not trusted:
 * a ring it breaks is counted and stopped, nothing else is disturbed.
 *
 * Packets from uvn_dev_rx_burst() may point into the guest's memory
 * (zero-copy): free every one of them before any control function runs
 * (a control function may unmap that memory or end the ring they belong
 * to); keep a frame longer only as a copy.
 *
 * Kick fds (uvn_dev_kick_fd(), uvn_dev_ctrl_fd()) are the frontend's and
 * are closed or replaced inside uvn_dev_handle(): watch a dup() of one in
 * an epoll set, and remove it when its ring stops (queue_ready false).
 */
#ifndef UVNET_DEVICE_H
#define UVNET_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include <uvnet/pkt.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libuvnet.so, which hides everything else (lib/uvnet.map). */
#pragma GCC visibility push(default)

/** Most queue pairs a device offers. */
#define UVN_DEV_MAX_QUEUE_PAIRS 16u

/** The control queue's ring number (see the file comment). */
#define UVN_DEV_CTRL_RING (2u * UVN_DEV_MAX_QUEUE_PAIRS)

/** Zero-copy for frames the guest sends (uvn_dev_set_zerocopy()). */
enum uvn_dev_zc {
	UVN_DEV_ZC_OFF = 0, /**< every frame is copied into a packet of the device's */
	UVN_DEV_ZC_ON,      /**< packets point into the guest's buffers */
	UVN_DEV_ZC_AUTO,    /**< frames of at least zc_min bytes are borrowed, shorter ones copied */
};

/** What the device tells the application (every member optional), on the control thread.
 *  64 bytes on LP64 whatever callbacks a later release adds: they take their room from
 *  @c reserved. */
struct uvn_dev_ops {
	/**
	 * Ring @p ring became ready (after the device set it up) or stops
	 * (before the device lets go of it: its counters are still there).
	 */
	void (*queue_ready)(void *ctx, unsigned ring, bool ready);
	/** The frontend set these virtio features. @return 0, or < 0 to refuse (the session ends). */
	int (*set_features)(void *ctx, uint64_t features);
	/** The guest asked for @p pairs queue pairs (control queue, MQ; already within the
	 *  pairs offered). @return 0, or < 0 to refuse. NULL: accepted. */
	int (*set_pairs)(void *ctx, unsigned pairs);
	/** SEND_RARP after a migration: announce @p mac for the guest (offered only with this). */
	void (*send_rarp)(void *ctx, const uint8_t mac[6]);
	/** NULL, as a designated initializer leaves them: room for later callbacks
	 *  (uvn_dev_create() refuses ops with one set). */
	void *reserved[4];
};

/** How to create a device. Zero what you do not set. */
struct uvn_dev_cfg {
	const char *path;            /**< vhost-user socket */
	bool client;                 /**< connect to @c path (uvn_dev_connect()) instead of listening */
	bool ctrl;                   /**< a control queue even with one queue pair (always with more) */
	bool poll;                   /**< the guest TX rings are polled: ask the guest not to kick */
	unsigned queue_pairs;        /**< 1..UVN_DEV_MAX_QUEUE_PAIRS */
	uint64_t features;           /**< virtio features offered; 0: uvn_dev_default_features().
				      *   Must include VERSION_1 and stay within what the device
				      *   implements (the defaults for 2 pairs, GUEST/HOST_UFO);
				      *   control-queue bits need @c ctrl or 2+ pairs */
	uint64_t protocol_features;  /**< vhost-user protocol features offered; 0: every one the
				      *   backend speaks */
	uint32_t mtu;                /**< offer NET_MTU and take the frontend's MTU up to this, and
				      *   deliver no GSO frame whose segments exceed it; 0: not */
	unsigned rx_pkts;            /**< packets per guest TX ring for the frames it sends; 0: 2048 */
	enum uvn_dev_zc zerocopy;    /**< see uvn_dev_set_zerocopy() */
	uint32_t zc_min;
	unsigned zc_max_held;
	const char *name;            /**< for logs, not copied (it may change while the device
				      *   lives, and must outlive it); default: @c path */
	const struct uvn_dev_ops *ops;
	void *ctx;                   /**< passed to @c ops */
	uint64_t max_mem;            /**< bytes of the frontend's files a session maps at most
				      *   (memory table, dirty log, in-flight region together; a
				      *   request past it is refused); 0: physical memory */
	uint64_t reserved[7];        /**< zero: room for later fields, so the struct stays
				      *   144 bytes (LP64) */
};

/** A ring's counters (uvn_dev_queue_stats()). */
struct uvn_dev_q_stats {
	uint64_t packets;          /**< frames taken from the guest, or delivered to it */
	uint64_t bytes;
	uint64_t drops;            /**< frames lost: no guest buffer, too big, an offload the guest
				    *   cannot take, no packet free, a chain of more buffers
				    *   than the device takes (legal, but not served) */
	uint64_t drop_nobuf;       /**< of @c drops: the guest had no buffer posted */
	uint64_t errors;           /**< guest violations: bad headers, chains, rings, commands */
	uint64_t ctrl_cmds;        /**< control queue: commands answered */
	uint64_t calls;            /**< notifications sent to the guest */
	uint64_t calls_suppressed; /**< notifications its event index spared */
	uint64_t zc_packets;       /**< frames handed on in the guest's own buffers */
	bool broken;               /**< the guest broke the ring: it is not served any more */
	uint64_t reserved[6];      /**< room for later counters: the size stays 128 bytes */
};

struct uvn_dev;

/**
 * The features a device offers by default for @p queue_pairs: VERSION_1,
 * MRG_RXBUF, INDIRECT_DESC, EVENT_IDX, RING_PACKED, IN_ORDER, MTU, MAC,
 * STATUS, CSUM, GUEST_CSUM, GUEST_ANNOUNCE, the TSO/USO/ECN offloads both
 * ways, and with more than one pair MQ, CTRL_VQ, CTRL_RX, CTRL_RX_EXTRA and
 * CTRL_MAC_ADDR.
 */
uint64_t uvn_dev_default_features(unsigned queue_pairs);

/**
 * Create a device; unless @c client, listen on @c path (a stale socket file
 * is replaced).
 * @return 0 and the device in @p out, or -EINVAL (bad cfg, reserved words
 *         of the cfg or its ops not zero), -ENOMEM, or the -errno of listening
 */
int uvn_dev_create(const struct uvn_dev_cfg *cfg, struct uvn_dev **out);

/** Disconnect, free everything, stop listening and remove the socket file.
 *  Every packet from uvn_dev_rx_burst() must have been freed. */
void uvn_dev_destroy(struct uvn_dev *d);

/** @return the listening socket to poll for a frontend (-1 with @c client). */
int uvn_dev_listen_fd(const struct uvn_dev *d);

/**
 * Accept a frontend and start a session with it. A second one while a
 * session runs is refused (closed, logged).
 * @return 0 (a session started), -EAGAIN (nobody waiting), -EBUSY, or -errno
 */
int uvn_dev_accept(struct uvn_dev *d);

/** Client: connect to @c path once and start a session. @return 0 or -errno
 *  (-ECONNREFUSED, -ENOENT, -EAGAIN: try again later; -EISCONN) */
int uvn_dev_connect(struct uvn_dev *d);

/** Change cfg.mtu: it applies from the next session on. */
void uvn_dev_set_mtu(struct uvn_dev *d, uint32_t mtu);

/** @return whether a session runs. */
bool uvn_dev_connected(const struct uvn_dev *d);

/** @return the session's socket (poll for input, then uvn_dev_handle()), -1 without one. */
int uvn_dev_fd(const struct uvn_dev *d);

/** @return an eventfd that becomes readable when the frontend's memory vanished under
 *  the device (poll it, then uvn_dev_check_memory()), -1 without a session. */
int uvn_dev_fault_fd(const struct uvn_dev *d);

/** Handle at most one vhost-user message. @return 0, or < 0: the session is over,
 *  call uvn_dev_disconnect() */
int uvn_dev_handle(struct uvn_dev *d);

/** @return 0, or -EFAULT: the frontend's memory faulted, call uvn_dev_disconnect() */
int uvn_dev_check_memory(struct uvn_dev *d);

/** End the session: every ring stops (queue_ready false), the socket is closed. */
void uvn_dev_disconnect(struct uvn_dev *d);

/** @return the virtio features the frontend set (0 before it did). */
uint64_t uvn_dev_features(const struct uvn_dev *d);

/** @return whether both rings of queue pair @p q are ready. */
bool uvn_dev_pair_ready(const struct uvn_dev *d, unsigned q);

/**
 * Frames the guest sent on queue pair @p q: up to @p n packets (at most 32),
 * copied into the device's packets or (zero-copy) pointing into the guest's
 * buffers, headers checked. Free them on this thread, then call
 * uvn_dev_rx_done(). @return packets stored in @p pkts (0: not ready)
 */
unsigned uvn_dev_rx_burst(struct uvn_dev *d, unsigned q, struct uvn_pkt **pkts, unsigned n);

/** Give back the guest's buffers that freed zero-copy packets still held, and
 *  notify it if it asked. */
void uvn_dev_rx_done(struct uvn_dev *d, unsigned q);

/**
 * Write up to @p n packets into queue pair @p q's guest RX buffers
 * (mergeable or one chain each), completing offloads the guest did not
 * negotiate; notify it if it asked. The packets stay the caller's; those
 * that do not fit are dropped and counted. @return packets delivered
 */
unsigned uvn_dev_tx_burst(struct uvn_dev *d, unsigned q, struct uvn_pkt *const *pkts, unsigned n);

/** @return the pool uvn_dev_rx_burst() of pair @p q copies small frames into
 *  (NULL before its guest TX ring was first ready), for frames the application
 *  makes up as if the guest had sent them; use it on that ring's thread. */
struct uvn_pkt_pool *uvn_dev_rx_pool(const struct uvn_dev *d, unsigned q);

/** @return the eventfd the guest kicks when it sent frames on pair @p q (-1: none
 *  or not ready). */
int uvn_dev_kick_fd(const struct uvn_dev *d, unsigned q);

/** The kick fd was readable: read it and ask the guest not to kick while the ring
 *  is drained. @return kicks read */
uint64_t uvn_dev_kicked(struct uvn_dev *d, unsigned q);

/** The ring looked empty: ask the guest to kick again. @return false if chains
 *  arrived meanwhile (drain again before sleeping) */
bool uvn_dev_arm(struct uvn_dev *d, unsigned q);

/** @return the control queue's kick fd (-1: none or not ready). */
int uvn_dev_ctrl_fd(const struct uvn_dev *d);

/**
 * Answer the control queue's pending commands: receive modes and MAC tables
 * acknowledged, MQ through ops->set_pairs, announcements acknowledged,
 * anything else refused.
 * @return commands answered, -ENODEV (no control queue ready), or -EPROTO
 *         (the guest broke it: it is not served again; a pass that breaks it
 *         returns what it answered, the next one -EPROTO)
 */
int uvn_dev_ctrl(struct uvn_dev *d);

/** Ask the guest to kick the control queue again. @return false if commands
 *  arrived meanwhile (answer again) */
bool uvn_dev_ctrl_arm(struct uvn_dev *d);

/**
 * Empty the guest TX rings that are started but disabled (vhost-user: still
 * the device's, though not ready), at most @p budget chains each, dropping
 * their frames. A guest turning queue pairs off may leave frames there.
 * @return frames dropped
 */
unsigned uvn_dev_discard_disabled(struct uvn_dev *d, unsigned budget);

/**
 * Zero-copy for the guest TX rings, now (rings that are ready) and from
 * now on. A borrowed frame's buffer goes back to the guest when its last
 * packet is freed (uvn_dev_rx_done()), in ring order with IN_ORDER. Every
 * mode copies when more than @p max_held chains are held (0: half the
 * ring). Call between bursts. @return 0, or -EINVAL
 */
int uvn_dev_set_zerocopy(struct uvn_dev *d, enum uvn_dev_zc mode, uint32_t min_len,
			 unsigned max_held);

/** Copy ring @p ring's counters, counted since it last became ready (they
 *  restart each time: add them up at queue_ready false to keep totals).
 *  @return 0, -ENODEV (not ready), -EINVAL */
int uvn_dev_queue_stats(const struct uvn_dev *d, unsigned ring, struct uvn_dev_q_stats *out);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
