/* SPDX-License-Identifier: MIT */
/*
 * Shared by the backend's files: the session object, the error helpers
 * that decide between dropping the connection and breaking one queue, the
 * ring state machine entry points, and one handler per request of
 * UVN_VU_REQUESTS (backend.c, mem_msgs.c, ring_msgs.c, log.c).
 */
#ifndef UVN_VHOST_USER_INTERNAL_H
#define UVN_VHOST_USER_INTERNAL_H

#include <linux/virtio_config.h>

#include "backend.h"
#include "util/bits.h"
#include "msg.h"

/* The dirty log the frontend shared (SET_LOG_BASE) and its eventfd (SET_LOG_FD). */
struct uvn_vu_dirty_log {
	void *map;
	size_t map_len;
	uint8_t *bits;    /* bit n = guest-physical page n */
	uint64_t size;    /* bytes of bits */
	int fd;           /* eventfd to signal after logging, or -1 */
};

/* The in-flight region (GET/SET_INFLIGHT_FD): one slice per queue. */
struct uvn_vu_inflight_map {
	struct uvn_mem_region reg;  /* map NULL: none */
	uint16_t num_queues;        /* queues with a slice */
	uint16_t queue_size;        /* the largest ring a slice holds */
	size_t slice;               /* bytes per queue */
};

struct uvn_vu_backend {
	int fd;
	char name[64];
	const struct uvn_vu_device_ops *ops;
	void *ctx;
	uint64_t offered;       /* features offered */
	uint64_t features;      /* features set */
	bool features_set;
	uint64_t proto_offered;
	uint64_t proto;         /* protocol features set */
	uint8_t status;
	uint32_t mtu_max;       /* NET_SET_MTU accepted up to this (cfg mtu) */
	uint32_t mtu;           /* NET_SET_MTU accepted, 0: none */
	uint64_t max_mem;       /* bytes of the frontend's files we map at most (cfg) */
	bool owner;
	bool dead;              /* a fatal error: the caller destroys the session */
	struct uvn_mem *mem;    /* never NULL; empty until the first table */
	struct uvn_mem_owner guard; /* told when a mapping of ours faults (SIGBUS) */
	struct uvn_vu_dirty_log log;
	struct uvn_vu_inflight_map inflight;
	struct uvn_vu_rx rx;
	struct uvn_vu_stats st;
	unsigned queue_num;
	struct uvn_vu_queue q[];
};

static inline bool vu_packed(const struct uvn_vu_backend *b)
{
	return uvn_has_feature(b->features, VIRTIO_F_RING_PACKED);
}

/* The frontend broke the protocol: log, count, drop the connection. @return -EPROTO */
int vu_conn_error(struct uvn_vu_backend *b, uint64_t *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The frontend misconfigured one queue: log, count, mark it broken, signal its
 * error fd; the connection lives. @return -EINVAL (NACKed if asked) */
int vu_queue_error(struct uvn_vu_backend *b, struct uvn_vu_queue *q, uint64_t *counter,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A request we decline: log, count, NACK if asked; nothing else changes. @return -ENOTSUP */
int vu_req_error(struct uvn_vu_backend *b, uint64_t *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Control-path log line prefixed with the session name. */
void vu_log(struct uvn_vu_backend *b, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A peer's fd where the protocol means an eventfd (kick, call, error, log):
 * checked to be one and made non-blocking. @return 0, or -EBADF (the
 * caller refuses the request and closes the fd) */
int vu_peer_eventfd(int fd);

/* The queue a ring request names, or NULL after a connection error. */
struct uvn_vu_queue *vu_queue(struct uvn_vu_backend *b, uint32_t index);

/* Ring state machine (ring_msgs.c). */
void vu_queue_update(struct uvn_vu_backend *b, struct uvn_vu_queue *q);
void vu_queue_pause(struct uvn_vu_backend *b, struct uvn_vu_queue *q);
void vu_queue_stop(struct uvn_vu_backend *b, struct uvn_vu_queue *q);
/* Translate the ring again (memory or size changed). @return 0 or -EFAULT */
int vu_queue_translate(struct uvn_vu_backend *b, struct uvn_vu_queue *q);

/* What of the frontend's files a session maps (mem_msgs.c). */
enum vu_map_kind { VU_MAP_TABLE, VU_MAP_LOG, VU_MAP_INFLIGHT };
/* Bytes the memory table @m maps. */
uint64_t vu_table_bytes(const struct uvn_mem *m);
/* Would the session, with @bytes mapped as its @kind instead of what it
 * has there now, map at most max_mem in all? A frontend must not take the
 * process's address space (and with it every other session's) with
 * sparse files of terabytes. */
bool vu_map_fits(const struct uvn_vu_backend *b, enum vu_map_kind kind, uint64_t bytes);

/* Take every ready queue out of service / re-evaluate every queue. */
void vu_pause_all(struct uvn_vu_backend *b);
void vu_resume_all(struct uvn_vu_backend *b);
/* The memory table changed: translate every ring again, then re-evaluate. */
void vu_mem_changed(struct uvn_vu_backend *b);

/* Dirty log teardown (log.c). */
void vu_log_release(struct uvn_vu_dirty_log *log);

/* In-flight tracking (inflight_msgs.c): attach queue @q's slice, if there
 * is one, to its fresh device half. @return 0, or -EINVAL (the queue is
 * broken, counted) */
int vu_inflight_attach(struct uvn_vu_backend *b, struct uvn_vu_queue *q);
/* True when ring @q resumes from the frontend's in-flight region (split or
 * packed: a packed ring's positions then come from it, not from its base). */
bool vu_inflight_tracks(const struct uvn_vu_backend *b, const struct uvn_vu_queue *q);
/* Unmap the region (every ring stopped). */
void vu_inflight_release(struct uvn_vu_backend *b);

/* Handlers: fill @reply (its size) for requests that answer; @return 0 or <0. */
#define VU_HANDLER_DECL(name, szr, sz, fdr, rep) \
	int vu_h_##name(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply);
UVN_VU_REQUESTS(VU_HANDLER_DECL)
#undef VU_HANDLER_DECL
/* Not a row of UVN_VU_REQUESTS: dispatched by backend.c itself. */
int vu_h_SEND_RARP(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply);

#endif
