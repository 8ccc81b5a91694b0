/* SPDX-License-Identifier: MIT */
/*
 * vhost-user frontend: the driver's side of the conversation (the
 * connection and the exchange here, the protocol's requests in
 * frontend_msgs.c). Requests go
 * out one at a time; each reply is awaited with a deadline and validated
 * against the request table before a byte of it is used. The backend is
 * not trusted: an invalid reply, a timeout or a closed socket kills the
 * connection (and is logged once), so nothing afterwards waits on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "frontend_int.h"
#include "util/bits.h"
#include "util/log.h"
#include "util/stats.h"

#define DEFAULT_TIMEOUT_MS 5000u
#define CONNECT_RETRY_MS 10

#define FE_STAT(f) UVN_STAT(struct uvn_vu_fe_stats, f)
const struct uvn_stat_desc uvn_vu_fe_stats_desc[] = {
	FE_STAT(requests), FE_STAT(replies), FE_STAT(nacks), FE_STAT(err_reply),
	FE_STAT(timeouts), FE_STAT(err_io), { NULL, 0 },
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining(int64_t deadline)
{
	int64_t r = deadline - now_ms();

	return r < 0 ? 0 : (int)r;
}

int vu_fe_fail(struct uvn_vu_fe *fe, int err, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	if (fe->err)
		return fe->err;
	fe->err = err;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	UVN_ERR("%s: vhost-user backend: %s", fe->name, buf);
	return err;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int wait_fd(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int r;

	do {
		r = poll(&p, 1, ms);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r;
}

static int do_connect(struct uvn_vu_fe *fe)
{
	int64_t deadline = now_ms() + fe->timeout_ms;
	int fd;

	for (;;) {
		fd = uvn_vu_connect(fe->path);
		if (fd >= 0)
			return fd;
		/* The backend may still be starting: its socket appears later. */
		if ((fd != -ENOENT && fd != -ECONNREFUSED) || remaining(deadline) == 0)
			return fd;
		if (wait_fd(fe->stop_fd, POLLIN, CONNECT_RETRY_MS) > 0)
			return -ECANCELED;
	}
}

static int do_accept(struct uvn_vu_fe *fe)
{
	int r;

	/* A path that is not ours (a live socket, any other file) makes
	 * this fail, and is left alone: only what we bound is removed. */
	fe->lfd = uvn_vu_listen(fe->path);
	if (fe->lfd < 0) {
		r = fe->lfd;
		fe->lfd = -1;
		return r;
	}
	fe->bound = true;
	if (fe->stop_fd >= 0) {
		struct pollfd p[2] = { { .fd = fe->lfd, .events = POLLIN },
				       { .fd = fe->stop_fd, .events = POLLIN } };

		do {
			r = poll(p, 2, (int)fe->timeout_ms);
		} while (r < 0 && errno == EINTR);
		if (r > 0 && (p[1].revents & POLLIN))
			return -ECANCELED;
		if (r < 0)
			r = -errno;
	} else {
		r = wait_fd(fe->lfd, POLLIN, (int)fe->timeout_ms);
	}
	if (r <= 0)
		return r ? r : -ETIMEDOUT;
	r = uvn_vu_accept(fe->lfd);
	/* One backend per frontend: stop listening. */
	close(fe->lfd);
	fe->lfd = -1;
	return r;
}

int uvn_vu_fe_connect(const struct uvn_vu_fe_cfg *cfg, struct uvn_vu_fe **out)
{
	struct uvn_vu_fe *fe;
	int fd;

	if (!cfg->path || !*cfg->path)
		return -EINVAL;
	if (strlen(cfg->path) >= sizeof(fe->path))
		return -ENAMETOOLONG;
	fe = calloc(1, sizeof(*fe));
	if (!fe)
		return -ENOMEM;
	fe->fd = fe->lfd = -1;
	fe->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
	fe->stop_fd = cfg->stop_fd > 0 ? cfg->stop_fd : -1;
	snprintf(fe->path, sizeof(fe->path), "%s", cfg->path);
	snprintf(fe->name, sizeof(fe->name), "%s", cfg->name ? cfg->name : cfg->path);
	uvn_vu_rx_init(&fe->rx);
	fd = cfg->server ? do_accept(fe) : do_connect(fe);
	if (fd < 0 || set_nonblock(fd) < 0) {
		int err = fd < 0 ? fd : -errno;

		if (fd >= 0)
			close(fd);
		if (fe->bound)
			unlink(fe->path);
		free(fe);
		return err;
	}
	fe->fd = fd;
	*out = fe;
	return 0;
}

void uvn_vu_fe_destroy(struct uvn_vu_fe *fe)
{
	if (!fe)
		return;
	uvn_vu_rx_reset(&fe->rx);
	if (fe->fd >= 0)
		close(fe->fd);
	if (fe->lfd >= 0)
		close(fe->lfd);
	if (fe->bound)
		unlink(fe->path);
	free(fe);
}

int uvn_vu_fe_fd(const struct uvn_vu_fe *fe)
{
	return fe->fd;
}

int uvn_vu_fe_error(const struct uvn_vu_fe *fe)
{
	return fe->err;
}

const struct uvn_vu_fe_stats *uvn_vu_fe_stats(const struct uvn_vu_fe *fe)
{
	return &fe->st;
}

uint64_t uvn_vu_fe_protocol_features(const struct uvn_vu_fe *fe)
{
	return fe->proto;
}

uint64_t uvn_vu_fe_features(const struct uvn_vu_fe *fe)
{
	return fe->features;
}

int uvn_vu_fe_check(struct uvn_vu_fe *fe)
{
	struct pollfd p = { .fd = fe->fd, .events = POLLIN };
	char c;
	ssize_t n;

	if (fe->err)
		return fe->err;
	if (poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLERR | POLLNVAL)) {
		fe->st.err_io++;
		return vu_fe_fail(fe, -ENOTCONN, "socket error");
	}
	n = recv(fe->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		fe->st.err_io++;
		return vu_fe_fail(fe, -ENOTCONN, "connection closed");
	}
	if (n > 0) {
		fe->st.err_reply++;
		return vu_fe_fail(fe, -EPROTO, "sent a message nobody asked for");
	}
	return 0;
}

static int send_msg(struct uvn_vu_fe *fe, const struct uvn_vu_msg *m, int64_t deadline)
{
	for (;;) {
		int r = uvn_vu_msg_send(fe->fd, m);

		if (r == 0)
			return 0;
		if (r != -EAGAIN) {
			fe->st.err_io++;
			return vu_fe_fail(fe, -ENOTCONN, "%s not sent: %s", uvn_vu_req_name(m->hdr.request),
				       strerror(-r));
		}
		r = wait_fd(fe->fd, POLLOUT, remaining(deadline));
		if (r == 0) {
			fe->st.timeouts++;
			return vu_fe_fail(fe, -ETIMEDOUT, "not reading requests (%s)",
				       uvn_vu_req_name(m->hdr.request));
		}
	}
}

static int recv_reply(struct uvn_vu_fe *fe, const struct uvn_vu_msg *req, struct uvn_vu_msg *reply,
		      int64_t deadline)
{
	const char *name = uvn_vu_req_name(req->hdr.request);
	int r;

	for (;;) {
		r = uvn_vu_msg_recv(fe->fd, &fe->rx);
		if (r == 1)
			break;
		if (r < 0) {
			fe->st.err_io++;
			if (r == -EMSGSIZE || r == -ETOOMANYREFS) {
				fe->st.err_reply++;
				return vu_fe_fail(fe, -EPROTO, "reply to %s: %s", name, strerror(-r));
			}
			return vu_fe_fail(fe, -ENOTCONN, "connection lost waiting for the reply to %s (%s)",
				       name, r == -ECONNRESET ? "closed" : strerror(-r));
		}
		r = wait_fd(fe->fd, POLLIN, remaining(deadline));
		if (r == 0) {
			fe->st.timeouts++;
			return vu_fe_fail(fe, -ETIMEDOUT, "no reply to %s within %u ms", name,
				       fe->timeout_ms);
		}
	}
	*reply = fe->rx.msg;
	uvn_vu_rx_init(&fe->rx); /* the fds are in *reply now */
	r = uvn_vu_msg_check_reply(req, reply);
	if (r) {
		uint32_t flags = reply->hdr.flags, id = reply->hdr.request, size = reply->hdr.size;
		unsigned nfds = reply->nfds;

		uvn_vu_msg_close_fds(reply);
		fe->st.err_reply++;
		return vu_fe_fail(fe, -EPROTO,
			       "invalid reply to %s: request %u (%s) flags 0x%x size %u fds %u: %s", name,
			       id, uvn_vu_req_name(id), flags, size, nfds,
			       r == -EPROTO ? "flags must be exactly REPLY|version 1, same request"
			       : r == -EBADF ? "fds not expected" : "wrong payload size");
	}
	fe->st.replies++;
	return 0;
}

int uvn_vu_fe_request(struct uvn_vu_fe *fe, struct uvn_vu_msg *m, struct uvn_vu_msg *reply)
{
	const struct uvn_vu_req_info *info = uvn_vu_req_info(m->hdr.request);
	bool reply_ack = uvn_has_feature(fe->proto, VHOST_USER_PROTOCOL_F_REPLY_ACK);
	int64_t deadline = now_ms() + fe->timeout_ms;
	struct uvn_vu_msg tmp;
	int r;

	if (fe->err)
		return fe->err;
	if (!info)
		return -EINVAL;
	/* Ask for an ack wherever the protocol allows one: a backend that
	 * refuses something then says so instead of failing later. */
	if (reply_ack && info->reply == UVN_VU_REPLY_ACK)
		m->hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	/* Nothing may be pending from the backend before we ask. */
	r = uvn_vu_fe_check(fe);
	if (r)
		return r;
	fe->st.requests++;
	r = send_msg(fe, m, deadline);
	if (r)
		return r;
	if (!uvn_vu_msg_expects_reply(m, reply_ack))
		return 0;
	if (!reply)
		reply = &tmp;
	r = recv_reply(fe, m, reply, deadline);
	if (r)
		return r;
	if (info->reply == UVN_VU_REPLY_ACK && reply->p.u64 != 0) {
		fe->st.nacks++;
		UVN_WARN("%s: vhost-user backend refused %s (status %llu)", fe->name,
			 uvn_vu_req_name(m->hdr.request), (unsigned long long)reply->p.u64);
		return -EIO;
	}
	return 0;
}

int uvn_vu_fe_get_u64(struct uvn_vu_fe *fe, uint32_t request, uint64_t *val)
{
	struct uvn_vu_msg m, reply;
	int r;

	uvn_vu_msg_init(&m, request, VHOST_USER_VERSION, 0);
	r = uvn_vu_fe_request(fe, &m, &reply);
	if (!r)
		*val = reply.p.u64;
	return r;
}

int uvn_vu_fe_set_u64(struct uvn_vu_fe *fe, uint32_t request, uint64_t val)
{
	struct uvn_vu_msg m;

	uvn_vu_msg_init(&m, request, VHOST_USER_VERSION, sizeof(uint64_t));
	m.p.u64 = val;
	return uvn_vu_fe_request(fe, &m, NULL);
}

