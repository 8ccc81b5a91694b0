/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user backend (device side): one session per frontend
 * connection (QEMU, DPDK virtio-user, our own driver). It negotiates,
 * maps the frontend's memory, follows each ring through the states of
 * vhost-user.rst (stopped -> started -> enabled) and hands a ready ring to
 * the device layer as a struct uvn_vq_dev; the device layer moves packets.
 *
 * The frontend is not trusted: a malformed message is logged (rate
 * limited), counted, and either drops the connection or marks the one
 * queue broken (signalled on its error eventfd); nothing leaks, and other
 * sessions are unaffected.
 *
 * Threading: every function here and every device callback runs on the
 * backend's thread. Before the backend changes anything a ready queue
 * depends on (memory table, ring addresses, kick/call fds, features, the
 * dirty log) it takes the queue out of the ready state (queue_ready false)
 * and puts it back afterwards, so a device that processes queues on other
 * threads only has to stop touching a queue when told.
 */
#ifndef UVN_VHOST_USER_BACKEND_H
#define UVN_VHOST_USER_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/vhost_types.h>
#include <uvnet/virtqueue.h>

#include "mem/mem.h"

struct uvn_vu_backend;

/* One virtqueue of a session. The device layer reads the first block only. */
struct uvn_vu_queue {
	struct uvn_vq_dev *vq;   /* non-NULL only while the queue is ready */
	int kick_fd, call_fd;    /* -1 when absent (polling) */
	unsigned idx;
	uint64_t calls, calls_failed; /* counted by uvn_vu_queue_notify() */

	/* Backend state. */
	struct uvn_vu_backend *b;
	int err_fd;              /* signalled when the queue breaks; -1 if none */
	unsigned num;            /* SET_VRING_NUM, 0 = not set */
	bool started;            /* SET_VRING_KICK seen, no GET_VRING_BASE since */
	bool enabled;            /* SET_VRING_ENABLE, or no PROTOCOL_FEATURES */
	bool broken;             /* a frontend error; cleared when the ring stops */
	bool addr_set;           /* SET_VRING_ADDR accepted */
	struct vhost_vring_addr addr; /* frontend addresses, flags, log_guest_addr */
	uint32_t base;           /* SET_VRING_BASE, or the state when last stopped */
	/* The device half: exists while started, set up and in memory. Its ring
	 * pointers are always desc/driver/device of the current memory table:
	 * a table that no longer holds the ring drops it (state kept in base). */
	struct uvn_vq_dev *dev;
	void *desc, *driver, *device; /* translated ring, NULL when not in memory */
	struct uvn_mem_cursor cursor; /* this queue's translation context */
};

struct uvn_vu_device_ops {
	/*
	 * Queue @q became ready (started and enabled, memory and addresses
	 * valid: q->vq is set) or stops being ready. On stop the device must
	 * be finished with the ring (nothing held) before returning.
	 */
	void (*queue_ready)(void *ctx, struct uvn_vu_queue *q, bool ready);
	/* The frontend set these virtio features (already checked against the
	 * offer; vhost-user bits removed). @return 0, or <0 to refuse (the
	 * connection is then dropped). */
	int (*set_features)(void *ctx, uint64_t features);
	/* Optional: the frontend set the device status (STATUS protocol feature). */
	void (*set_status)(void *ctx, uint8_t status);
	/*
	 * Optional: SEND_RARP (protocol feature RARP, offered only with this
	 * callback). After a migration, a guest that cannot announce itself
	 * (no GUEST_ANNOUNCE) has the device send a RARP from @mac for it,
	 * so that switches learn where the guest is now.
	 */
	void (*send_rarp)(void *ctx, const uint8_t mac[6]);
};

struct uvn_vu_backend_cfg {
	uint64_t features;          /* virtio feature bits the device offers (the backend
				     * adds PROTOCOL_FEATURES and LOG_ALL) */
	uint64_t protocol_features; /* 0 = MQ, LOG_SHMFD, REPLY_ACK, CONFIGURE_MEM_SLOTS, STATUS,
				     * INFLIGHT_SHMFD, RARP if ops->send_rarp, NET_MTU if mtu */
	/* The largest MTU the device takes (VIRTIO_NET_F_MTU is the device's
	 * to offer in @features): protocol feature NET_MTU is offered, and a
	 * NET_SET_MTU from 68 up to this is accepted, a larger one refused
	 * (counted in err_mtu; QEMU then does not start the device). 0: no
	 * NET_MTU. */
	uint32_t mtu;
	unsigned queue_num;         /* virtqueues (2 per queue pair, +1 for a control
				     * queue), 1..256 */
	/* Bytes of the frontend's files the session maps at most: memory
	 * table, dirty log and in-flight region together (a request past it
	 * is refused, counted in err_mem, err_log or err_inflight). 0: the
	 * machine's physical memory. */
	uint64_t max_mem;
	const struct uvn_vu_device_ops *ops;
	void *ctx;
	const char *name;           /* for logs */
};

/* Per-connection counters (written on the backend's thread). */
struct uvn_vu_stats {
	uint64_t msgs;          /* requests received whole */
	uint64_t replies;       /* replies and acks sent */
	uint64_t err_io;        /* socket errors, messages cut short */
	uint64_t err_header;    /* bad version or flags */
	uint64_t err_size;      /* payload size wrong for the request or larger than the union */
	uint64_t err_fds;       /* fds missing or extra, or more than 8 */
	uint64_t err_fd_type;   /* a kick, call, error or log fd that is not an eventfd */
	uint64_t err_unknown;   /* requests we do not speak */
	uint64_t err_order;     /* requests out of order */
	uint64_t err_index;     /* queue index out of range */
	uint64_t err_feature;   /* features not offered or refused, GET/SET_CONFIG */
	uint64_t err_mem;       /* memory regions that cannot be used */
	uint64_t err_ring;      /* ring size, address, base or enable value invalid */
	uint64_t err_log;       /* dirty log that cannot be used */
	uint64_t err_mem_gone;  /* guest memory or log shrunk under us (SIGBUS caught) */
	uint64_t err_inflight;  /* in-flight region unusable: bad description, fd or contents */
	uint64_t err_mtu;       /* NET_SET_MTU values refused: over the device's MTU, or under 68 */
	uint64_t queues_broken;
	uint64_t fds_unused;    /* fds received and closed unused */
	uint64_t mem_changes;   /* memory table updates applied */
};

/* {name, offsetof} rows for struct uvn_vu_stats, NULL-terminated. */
extern const struct uvn_stat_desc uvn_vu_stats_desc[];

/*
 * Start a session on a connected socket (made nonblocking; the session
 * owns and closes it from now on, unless this fails).
 * @return 0, -EINVAL (bad cfg), -ENOMEM
 */
int uvn_vu_backend_create(int conn_fd, const struct uvn_vu_backend_cfg *cfg,
			  struct uvn_vu_backend **out);

/* @return the socket to poll for requests (level-triggered: one message per call). */
int uvn_vu_backend_fd(const struct uvn_vu_backend *b);

/*
 * Read and handle at most one message (the part that has arrived is kept).
 * @return 0, or <0: the connection is dead (closed or a fatal frontend
 *         error): destroy the session
 */
int uvn_vu_backend_handle(struct uvn_vu_backend *b);

/*
 * An eventfd that becomes readable when guest memory (or the dirty log) of
 * this session vanished under us: the frontend shrank the file behind it.
 * Poll it beside uvn_vu_backend_fd() and call uvn_vu_backend_check_memory().
 */
int uvn_vu_backend_fault_fd(const struct uvn_vu_backend *b);

/*
 * @return 0, or -EFAULT if guest memory of this session faulted (counted
 * once in err_mem_gone): the connection is dead, destroy the session
 */
int uvn_vu_backend_check_memory(struct uvn_vu_backend *b);

/* Stop every queue (queue_ready false first), unmap, close every fd, free. */
void uvn_vu_backend_destroy(struct uvn_vu_backend *b);

/* @return queue @idx, or NULL if out of range. */
struct uvn_vu_queue *uvn_vu_backend_queue(struct uvn_vu_backend *b, unsigned idx);

/* @return the features the frontend set (0 before SET_FEATURES), vhost-user bits included. */
uint64_t uvn_vu_backend_features(const struct uvn_vu_backend *b);

/* @return the protocol features the frontend set. */
uint64_t uvn_vu_backend_protocol_features(const struct uvn_vu_backend *b);

/* @return the session's counters. */
const struct uvn_vu_stats *uvn_vu_backend_stats(const struct uvn_vu_backend *b);

/* @return the MTU the frontend set with NET_SET_MTU, 0 if none. */
uint32_t uvn_vu_backend_mtu(const struct uvn_vu_backend *b);

/* @return the session's name (for logs). */
const char *uvn_vu_backend_name(const struct uvn_vu_backend *b);

/* Signal the driver: an eventfd write on call_fd if there is one (counted;
 * never blocks: a full eventfd counts as a failed call). */
void uvn_vu_queue_notify(struct uvn_vu_queue *q);

/*
 * A started but disabled ring is still the device's to empty (a guest
 * turning queue pairs off may leave buffers there). @return its device
 * half while that is safe to use from the backend's thread (started,
 * disabled, not broken, in the current memory table, not handed to the
 * device through queue_ready), else NULL. Valid until the next message.
 */
struct uvn_vq_dev *uvn_vu_queue_idle_dev(struct uvn_vu_queue *q);

/*
 * Is a migration's dirty logging on (LOG_ALL set and a log shared)? It only
 * changes while the queues are not ready (they are paused around it), so a
 * device may decide once per queue_ready(true) whether to log its writes.
 */
bool uvn_vu_backend_logging(const struct uvn_vu_backend *b);

/*
 * Dirty-log a device write of @len bytes at @va in guest memory (atomic OR
 * of one bit per 4 KB guest-physical page). No-op unless the frontend set
 * LOG_ALL and a log. Call only while processing a ready queue.
 */
void uvn_vu_log_write(struct uvn_vu_backend *b, const void *va, size_t len);

/*
 * Dirty-log the ring areas the device writes (split: the used ring at
 * log_guest_addr; packed: the descriptor ring and the device event area),
 * after a flush. No-op unless logging and the ring has VHOST_VRING_F_LOG.
 */
void uvn_vu_log_used(struct uvn_vu_backend *b, struct uvn_vu_queue *q);

/*
 * Sockets. @return an fd, or a negative errno.
 * uvn_vu_listen: listen on @path, removing a stale socket file: one whose
 * connection is refused. Not one that still accepts connections or whose
 * listener is too busy to (-EADDRINUSE; the probe is a connection its
 * owner may see open and close), one we cannot reach (that -errno), nor
 * any other file (-EEXIST).
 * uvn_vu_connect: never waits on the peer: -EAGAIN while the listener's
 * backlog is full (try again later), -ECONNREFUSED if nobody listens.
 */
int uvn_vu_listen(const char *path);
int uvn_vu_accept(int lfd);
int uvn_vu_connect(const char *path);

#endif
