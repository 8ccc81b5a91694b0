/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user codec, for both sides: receive a message (with its fds,
 * reassembled across short reads on a nonblocking socket), validate a
 * request or a reply against the one table in proto.h, send a message.
 * The codec never interprets payloads beyond what validation needs.
 */
#ifndef UVN_VHOST_USER_MSG_H
#define UVN_VHOST_USER_MSG_H

#include <stdbool.h>

#include "proto.h"

/* At most this many fds travel with one message. */
#define UVN_VU_MAX_FDS 8

struct uvn_vu_msg {
	struct uvn_vu_hdr hdr;
	union uvn_vu_payload p;
	int fds[UVN_VU_MAX_FDS];
	unsigned nfds;
};

/* A request's rules, from UVN_VU_REQUESTS. */
struct uvn_vu_req_info {
	uint32_t id;
	const char *name;
	enum uvn_vu_size_rule size_rule;
	uint32_t size;
	enum uvn_vu_fd_rule fds;
	enum uvn_vu_reply_rule reply;
};

/* @return the rules for @request, or NULL if we do not speak it. */
const struct uvn_vu_req_info *uvn_vu_req_info(uint32_t request);

/* @return the request's name ("SET_MEM_TABLE"), or "UNKNOWN". */
const char *uvn_vu_req_name(uint32_t request);

/* Start a message: header, no payload, no fds. */
void uvn_vu_msg_init(struct uvn_vu_msg *m, uint32_t request, uint32_t flags, uint32_t size);

/* Start the reply to @req: same request, flags exactly REPLY | version 1. */
void uvn_vu_msg_init_reply(struct uvn_vu_msg *reply, const struct uvn_vu_msg *req, uint32_t size);

/* Close every fd still held by @m. */
void uvn_vu_msg_close_fds(struct uvn_vu_msg *m);

/* Take ownership of fd @i of @m (the message forgets it). @return the fd or -1. */
int uvn_vu_msg_take_fd(struct uvn_vu_msg *m, unsigned i);

/* Receive state of one connection. */
struct uvn_vu_rx {
	size_t got;           /* bytes of header + payload received */
	struct uvn_vu_msg msg;
};

/* Empty receive state (fds -1). */
void uvn_vu_rx_init(struct uvn_vu_rx *rx);

/* Drop a partial or finished message, closing its fds. */
void uvn_vu_rx_reset(struct uvn_vu_rx *rx);

/*
 * Read towards one whole message. Works on blocking sockets (returns when
 * the message is complete) and nonblocking ones (keeps what arrived in @rx).
 * @return 1: rx->msg is complete (the caller owns its fds and calls
 *         uvn_vu_rx_init() before the next message); 0: incomplete, call
 *         again when readable; -ECONNRESET: orderly close between messages;
 *         -EPIPE: closed mid-message; -EMSGSIZE: payload larger than the
 *         union; -ETOOMANYREFS: more than 8 fds; another negative errno
 *         from recvmsg. On any error @rx is reset and every fd received
 *         with the message is closed.
 */
int uvn_vu_msg_recv(int fd, struct uvn_vu_rx *rx);

/*
 * Validate a received request: flags (version 1, no REPLY, no unknown bit),
 * a request we speak, the payload size and the fds its row allows.
 * @param info  receives the row (NULL for an unknown request)
 * @return 0, -EPROTO (flags), -ENOSYS (unknown request), -EBADMSG (size or
 *         payload encoding), -EBADF (fds not as the row allows)
 */
int uvn_vu_msg_check_request(const struct uvn_vu_msg *m, const struct uvn_vu_req_info **info);

/*
 * Validate a reply to @req (frontend side): flags exactly REPLY | version,
 * the same request, no fds, the size its row's reply rule gives.
 * @return 0, -EPROTO, -EBADMSG or -EBADF
 */
int uvn_vu_msg_check_reply(const struct uvn_vu_msg *req, const struct uvn_vu_msg *reply);

/* Does @req (already validated) get an answer from the back-end? */
bool uvn_vu_msg_expects_reply(const struct uvn_vu_msg *req, bool reply_ack_negotiated);

/*
 * Send @m: header, hdr.size payload bytes, fds as SCM_RIGHTS (kept open:
 * the caller closes its copies). Never raises SIGPIPE.
 * @return 0, or a negative errno (-EAGAIN on a full nonblocking socket)
 */
int uvn_vu_msg_send(int fd, const struct uvn_vu_msg *m);

#endif
