/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user frontend (driver side): one connection to a backend
 * (uvnetd, DPDK's net_vhost, OVS-DPDK, VPP), speaking the same codec and
 * request table as the backend (msg.h, proto.h).
 *
 * Every request waits for its reply only as long as the configured
 * timeout; a reply is accepted only with flags exactly REPLY | version 1,
 * the request's own id, no fds and the size the request table gives (and
 * for GET_VRING_BASE, the ring asked for). Anything else, a timeout, or the
 * socket closing marks the connection dead: every later request fails at
 * once with the same error, and the caller tears down without waiting for
 * a backend that is gone.
 *
 * Single-threaded: one thread at a time uses a frontend (uvn_vu_fe_check()
 * excepted: it only polls the socket and may run concurrently).
 */
#ifndef UVN_VHOST_USER_FRONTEND_H
#define UVN_VHOST_USER_FRONTEND_H

#include <stdbool.h>
#include <stdint.h>

#include "mem/mem.h"
#include "msg.h"
#include "util/stats.h"

struct uvn_vu_fe;

struct uvn_vu_fe_cfg {
	const char *path;     /* the backend's socket */
	bool server;          /* listen on path, accept one backend */
	unsigned timeout_ms;  /* per request (and for connect/accept); 0: 5000 */
	const char *name;     /* for logs; NULL: the path */
	int stop_fd;          /* > 0: readable ends connect/accept early (-ECANCELED); 0 or
			       * -1: none (an fd 0 is never a stop fd) */
};

/* Per-connection counters. */
struct uvn_vu_fe_stats {
	uint64_t requests;     /* requests sent */
	uint64_t replies;      /* replies (and acks) received and valid */
	uint64_t nacks;        /* REPLY_ACK acks with a non-zero status */
	uint64_t err_reply;    /* replies refused: flags, id, size, fds, ring index */
	uint64_t timeouts;     /* replies that did not come in time */
	uint64_t err_io;       /* socket errors and the backend closing */
};

extern const struct uvn_stat_desc uvn_vu_fe_stats_desc[];

/*
 * Connect to the backend (retrying while the socket is missing or refuses,
 * until the timeout), or in server mode listen and accept one.
 * @return 0, or -ENOENT / -ECONNREFUSED (nobody there in time), -ETIMEDOUT
 *         (server: nobody connected), -ENAMETOOLONG, -ENOMEM, -errno
 */
int uvn_vu_fe_connect(const struct uvn_vu_fe_cfg *cfg, struct uvn_vu_fe **out);

/* Close the connection (and in server mode remove the socket file); free. */
void uvn_vu_fe_destroy(struct uvn_vu_fe *fe);

/* @return the connected socket. */
int uvn_vu_fe_fd(const struct uvn_vu_fe *fe);

/* @return 0, or the error that killed the connection (-ENOTCONN, -EPROTO, -ETIMEDOUT). */
int uvn_vu_fe_error(const struct uvn_vu_fe *fe);

/*
 * Is the backend still there? A poll() without waiting: hang-up, an error
 * or end of file kill the connection (-ENOTCONN); bytes the backend sent
 * unasked (it has no channel of its own: BACKEND_REQ is never negotiated)
 * are a protocol error (-EPROTO). @return 0 or the connection's error
 */
int uvn_vu_fe_check(struct uvn_vu_fe *fe);

/*
 * Send @m and, if it gets an answer (its reply rule, or NEED_REPLY with
 * REPLY_ACK negotiated, which is added to every request that allows it),
 * wait for it and validate it into @reply (may be NULL for requests that
 * only get acks). A non-zero ack is -EIO and leaves the connection alive.
 * The fds in @m stay the caller's.
 * @return 0, -EIO (NACK), or the connection's error
 */
int uvn_vu_fe_request(struct uvn_vu_fe *fe, struct uvn_vu_msg *m, struct uvn_vu_msg *reply);

/* Requests with a u64 payload or answer, and the ring requests. */
int uvn_vu_fe_get_u64(struct uvn_vu_fe *fe, uint32_t request, uint64_t *val);
int uvn_vu_fe_set_u64(struct uvn_vu_fe *fe, uint32_t request, uint64_t val);
int uvn_vu_fe_set_owner(struct uvn_vu_fe *fe);

/*
 * Negotiate: GET_FEATURES; with PROTOCOL_FEATURES offered, protocol
 * features (the offered ones among @proto_want), and GET_QUEUE_NUM with MQ.
 * @param offered      receives the backend's virtio features
 * @param queue_pairs  receives GET_QUEUE_NUM (1 without MQ)
 */
int uvn_vu_fe_negotiate(struct uvn_vu_fe *fe, uint64_t proto_want, uint64_t *offered,
			unsigned *queue_pairs);

/* SET_FEATURES (@features must be a subset of the offer; PROTOCOL_FEATURES is added). */
int uvn_vu_fe_set_features(struct uvn_vu_fe *fe, uint64_t features);

/* @return the negotiated protocol features / the features set. */
uint64_t uvn_vu_fe_protocol_features(const struct uvn_vu_fe *fe);
uint64_t uvn_vu_fe_features(const struct uvn_vu_fe *fe);

/*
 * Share memory: SET_MEM_TABLE, or with CONFIGURE_MEM_SLOTS one ADD_MEM_REG
 * per region (after checking GET_MAX_MEM_SLOTS).
 */
int uvn_vu_fe_set_mem(struct uvn_vu_fe *fe, const struct uvn_mem_region_desc *regions,
		      const int *fds, unsigned n);

/* The rings. Addresses are frontend virtual addresses (user addresses). */
int uvn_vu_fe_set_vring_num(struct uvn_vu_fe *fe, unsigned idx, unsigned num);
int uvn_vu_fe_set_vring_base(struct uvn_vu_fe *fe, unsigned idx, unsigned base);
int uvn_vu_fe_set_vring_addr(struct uvn_vu_fe *fe, unsigned idx, uint64_t desc, uint64_t avail,
			     uint64_t used);
/* @fd < 0: no fd (the NOFD bit: the backend polls / does not signal). */
int uvn_vu_fe_set_vring_kick(struct uvn_vu_fe *fe, unsigned idx, int fd);
int uvn_vu_fe_set_vring_call(struct uvn_vu_fe *fe, unsigned idx, int fd);
/* Only with PROTOCOL_FEATURES (otherwise a no-op returning 0). */
int uvn_vu_fe_set_vring_enable(struct uvn_vu_fe *fe, unsigned idx, bool on);
/* Stop a ring; @base receives the backend's next avail index (state). */
int uvn_vu_fe_get_vring_base(struct uvn_vu_fe *fe, unsigned idx, uint32_t *base);
/*
 * INFLIGHT_SHMFD (only when negotiated): GET_INFLIGHT_FD for @num_queues
 * rings of @queue_size entries; the region's description goes to @out and
 * its fd to @fd (the caller's to close). @return 0, -EIO (declined: no
 * region), -ENOTSUP (not negotiated), or the connection's error
 */
int uvn_vu_fe_get_inflight(struct uvn_vu_fe *fe, unsigned num_queues, unsigned queue_size,
			   struct uvn_vu_inflight *out, int *fd);
/* SET_INFLIGHT_FD: give a region (from an earlier backend) to this one. @fd stays ours. */
int uvn_vu_fe_set_inflight(struct uvn_vu_fe *fe, const struct uvn_vu_inflight *desc, int fd);

/* SET_STATUS, then GET_STATUS to check it took (only with the STATUS protocol feature). */
int uvn_vu_fe_set_status(struct uvn_vu_fe *fe, uint8_t status);

/* @return the connection's counters. */
const struct uvn_vu_fe_stats *uvn_vu_fe_stats(const struct uvn_vu_fe *fe);

#endif
