/* SPDX-License-Identifier: MIT */
/*
 * vhost-user backend session: creation and teardown, the receive loop,
 * the dispatch table (one row per request of UVN_VU_REQUESTS, validated
 * centrally by the codec before any handler runs), generic REPLY_ACK, and
 * the error policy. Handlers live in features.c, mem_msgs.c, ring_msgs.c
 * and log.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "util/log.h"
#include "util/stats.h"

typedef int (*vu_handler)(struct uvn_vu_backend *b, struct uvn_vu_msg *m, struct uvn_vu_msg *reply);

#define VU_ROW(name, szr, sz, fdr, rep) [VHOST_USER_##name] = vu_h_##name,
static const vu_handler handlers[VHOST_USER_REQUEST_MAX] = { UVN_VU_REQUESTS(VU_ROW) };
#undef VU_ROW

#define DEFAULT_PROTOCOL_FEATURES                                                         \
	((1ull << VHOST_USER_PROTOCOL_F_MQ) | (1ull << VHOST_USER_PROTOCOL_F_LOG_SHMFD) | \
	 (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |                                        \
	 (1ull << VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS) |                              \
	 (1ull << VHOST_USER_PROTOCOL_F_STATUS) |                                           \
	 (1ull << VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD))

#define STAT(f) UVN_STAT(struct uvn_vu_stats, f)
const struct uvn_stat_desc uvn_vu_stats_desc[] = {
	STAT(msgs), STAT(replies), STAT(err_io), STAT(err_header), STAT(err_size),
	STAT(err_fds), STAT(err_fd_type), STAT(err_unknown), STAT(err_order), STAT(err_index),
	STAT(err_feature), STAT(err_mem), STAT(err_ring), STAT(err_log), STAT(err_mem_gone),
	STAT(err_inflight), STAT(err_mtu), STAT(queues_broken), STAT(fds_unused), STAT(mem_changes), { NULL, 0 },
};

/* ------------------------------------------------------------------ errors */

static void __attribute__((format(printf, 4, 0)))
vlog(struct uvn_vu_backend *b, int level, bool peer, const char *fmt, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (peer)
		UVN_LOG_PEER("vhost-user %s: %s", b->name, buf);
	else
		uvn_log(level, "vhost-user %s: %s", b->name, buf);
}

void vu_log(struct uvn_vu_backend *b, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(b, level, false, fmt, ap);
	va_end(ap);
}

int vu_conn_error(struct uvn_vu_backend *b, uint64_t *counter, const char *fmt, ...)
{
	va_list ap;

	(*counter)++;
	b->dead = true;
	va_start(ap, fmt);
	vlog(b, UVN_LOG_WARN, true, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

int vu_queue_error(struct uvn_vu_backend *b, struct uvn_vu_queue *q, uint64_t *counter,
		   const char *fmt, ...)
{
	uint64_t one = 1;
	va_list ap;

	(*counter)++;
	va_start(ap, fmt);
	vlog(b, UVN_LOG_WARN, true, fmt, ap);
	va_end(ap);
	if (!q->broken) {
		q->broken = true;
		b->st.queues_broken++;
		vu_queue_update(b, q); /* takes it out of service */
		/* The error eventfd is how a frontend learns (QEMU logs it).
		 * Non-blocking (vu_peer_eventfd): a full one is not waited for. */
		if (q->err_fd >= 0 && write(q->err_fd, &one, sizeof(one)) != sizeof(one))
			vu_log(b, UVN_LOG_DEBUG, "queue %u: cannot signal the error eventfd", q->idx);
	}
	return -EINVAL;
}

int vu_req_error(struct uvn_vu_backend *b, uint64_t *counter, const char *fmt, ...)
{
	va_list ap;

	(*counter)++;
	va_start(ap, fmt);
	vlog(b, UVN_LOG_WARN, true, fmt, ap);
	va_end(ap);
	return -ENOTSUP;
}

/* --------------------------------------------------------------- peer fds */

/*
 * Every eventfd has the kernel's one anonymous inode behind it (as do
 * timerfds, signalfds, epoll fds...): without /proc that is the closest
 * check there is, and all of those either take an 8-byte write at once or
 * refuse it, once non-blocking.
 */
static bool anon_inode(int fd)
{
	struct stat st, ref;
	int efd = eventfd(0, EFD_CLOEXEC);
	bool same;

	if (efd < 0)
		return false;
	same = fstat(fd, &st) == 0 && fstat(efd, &ref) == 0 && st.st_dev == ref.st_dev &&
	       st.st_ino == ref.st_ino;
	close(efd);
	return same;
}

/*
 * The inode every eventfd has, learned once from two of our own: when they
 * share one (the kernel's anonymous inode), an fd with any other inode is
 * no eventfd, and one fstat refuses it where the /proc lookup costs a path
 * walk. Sharing the inode proves nothing (timerfds... share it too), so
 * those still get the full check; a kernel that gave each eventfd its own
 * inode leaves the full check as the only one.
 */
static struct {
	pthread_once_t once;
	bool shared;
	dev_t dev;
	ino_t ino;
} efd_inode = { .once = PTHREAD_ONCE_INIT };

static void learn_eventfd_inode(void)
{
	int a = eventfd(0, EFD_CLOEXEC), b = eventfd(0, EFD_CLOEXEC);
	struct stat sa, sb;

	if (a >= 0 && b >= 0 && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino) {
		efd_inode.dev = sa.st_dev;
		efd_inode.ino = sa.st_ino;
		efd_inode.shared = true;
	}
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
}

/* Surely not an eventfd (its inode is not theirs, or it is no open fd)? */
static bool not_eventfd_inode(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return true; /* the checks below refuse it too */
	pthread_once(&efd_inode.once, learn_eventfd_inode);
	return efd_inode.shared && (st.st_dev != efd_inode.dev || st.st_ino != efd_inode.ino);
}

static bool is_eventfd(int fd)
{
	static const char want[] = "anon_inode:[eventfd]";
	char path[48], link[sizeof(want)];
	ssize_t n;

	if (not_eventfd_inode(fd))
		return false;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link));
	if (n >= 0)
		return n == (ssize_t)sizeof(want) - 1 && !memcmp(link, want, sizeof(want) - 1);
	/* No /proc (a bare chroot): the inode check. A valid fd whose link
	 * cannot be read for another reason is refused. */
	if (errno == ENOENT && access("/proc/self/fd", F_OK) < 0)
		return anon_inode(fd);
	return false;
}

int vu_peer_eventfd(int fd)
{
	int fl;

	if (!is_eventfd(fd))
		return -EBADF;
	/*
	 * Our writes (call, error, log) and reads (kick) must never wait for
	 * the peer: a frontend can fill an eventfd's counter or drain it
	 * under us, and a blocked write on the control thread, with every
	 * worker parked, stops the whole switch. O_NONBLOCK is a flag of the
	 * open file description, which the frontend shares: it sees its copy
	 * turn non-blocking too. That is what other backends do, and a
	 * frontend only ever writes 1s to its kick eventfd.
	 */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return -EBADF;
	return 0;
}

struct uvn_vu_queue *vu_queue(struct uvn_vu_backend *b, uint32_t index)
{
	if (index >= b->queue_num) {
		vu_conn_error(b, &b->st.err_index, "queue index %u out of range (%u queues)", index,
			      b->queue_num);
		return NULL;
	}
	return &b->q[index];
}

/* ---------------------------------------------------------------- session */

/* The default cap on what a session maps: a guest's shared memory is
 * backed by this machine's, so more than all of it is a sparse file. */
static uint64_t phys_mem(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
}

static uint64_t offered_features(const struct uvn_vu_backend_cfg *cfg, uint64_t proto)
{
	/* No IOTLB here: ACCESS_PLATFORM would need the backend channel. */
	uint64_t f = cfg->features & ~(1ull << VIRTIO_F_ACCESS_PLATFORM);

	f |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	/* Logging needs the log shared as an fd. */
	if (uvn_has_feature(proto, VHOST_USER_PROTOCOL_F_LOG_SHMFD))
		f |= 1ull << VHOST_F_LOG_ALL;
	return f;
}

int uvn_vu_backend_create(int conn_fd, const struct uvn_vu_backend_cfg *cfg,
			  struct uvn_vu_backend **out)
{
	struct uvn_vu_backend *b;
	uint64_t dflt;
	int fl;

	if (conn_fd < 0 || !cfg || !cfg->ops || !cfg->ops->queue_ready || !cfg->ops->set_features ||
	    cfg->queue_num == 0 || cfg->queue_num > VHOST_USER_VRING_IDX_MASK + 1)
		return -EINVAL;
	fl = fcntl(conn_fd, F_GETFL);
	/* Nonblocking: a frontend that sends half a message must not stall us. */
	if (fl < 0 || fcntl(conn_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -EINVAL;
	b = calloc(1, sizeof(*b) + cfg->queue_num * sizeof(b->q[0]));
	if (!b)
		return -ENOMEM;
	b->mem = uvn_mem_create();
	if (!b->mem || uvn_mem_owner_init(&b->guard)) {
		uvn_mem_destroy(b->mem);
		free(b);
		return -ENOMEM;
	}
	b->fd = conn_fd;
	snprintf(b->name, sizeof(b->name), "%s", cfg->name ? cfg->name : "session");
	b->ops = cfg->ops;
	b->ctx = cfg->ctx;
	dflt = DEFAULT_PROTOCOL_FEATURES;
	if (cfg->ops->send_rarp)
		dflt |= 1ull << VHOST_USER_PROTOCOL_F_RARP;
	if (cfg->mtu)
		dflt |= 1ull << VHOST_USER_PROTOCOL_F_NET_MTU;
	b->mtu_max = cfg->mtu;
	b->max_mem = cfg->max_mem ? cfg->max_mem : phys_mem();
	b->proto_offered = cfg->protocol_features ? cfg->protocol_features & dflt : dflt;
	b->offered = offered_features(cfg, b->proto_offered);
	b->log.fd = -1;
	b->queue_num = cfg->queue_num;
	uvn_vu_rx_init(&b->rx);
	for (unsigned i = 0; i < cfg->queue_num; i++) {
		struct uvn_vu_queue *q = &b->q[i];

		q->idx = i;
		q->b = b;
		q->kick_fd = q->call_fd = q->err_fd = -1;
	}
	*out = b;
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void uvn_vu_backend_destroy(struct uvn_vu_backend *b)
{
	if (!b)
		return;
	for (unsigned i = 0; i < b->queue_num; i++) {
		vu_queue_stop(b, &b->q[i]);
		close_fd(&b->q[i].call_fd);
		close_fd(&b->q[i].err_fd);
	}
	uvn_mem_destroy(b->mem);
	vu_log_release(&b->log);
	vu_inflight_release(b);
	/* after every mapping that names it is gone */
	uvn_mem_owner_fini(&b->guard);
	close_fd(&b->log.fd);
	uvn_vu_rx_reset(&b->rx);
	close(b->fd);
	free(b);
}

int uvn_vu_backend_fd(const struct uvn_vu_backend *b)
{
	return b->fd;
}

int uvn_vu_backend_fault_fd(const struct uvn_vu_backend *b)
{
	return uvn_mem_owner_fd(&b->guard);
}

int uvn_vu_backend_check_memory(struct uvn_vu_backend *b)
{
	uint64_t n;

	if (!uvn_mem_owner_faults(&b->guard))
		return 0;
	/* rearm; the fault count stays */
	while (read(uvn_mem_owner_fd(&b->guard), &n, sizeof(n)) == sizeof(n))
		;
	if (b->dead)
		return -EFAULT;
	vu_conn_error(b, &b->st.err_mem_gone,
		      "guest memory vanished under us (the frontend shrank its memory file)");
	return -EFAULT;
}

struct uvn_vu_queue *uvn_vu_backend_queue(struct uvn_vu_backend *b, unsigned idx)
{
	return idx < b->queue_num ? &b->q[idx] : NULL;
}

uint64_t uvn_vu_backend_features(const struct uvn_vu_backend *b)
{
	return b->features;
}

uint64_t uvn_vu_backend_protocol_features(const struct uvn_vu_backend *b)
{
	return b->proto;
}

const struct uvn_vu_stats *uvn_vu_backend_stats(const struct uvn_vu_backend *b)
{
	return &b->st;
}

uint32_t uvn_vu_backend_mtu(const struct uvn_vu_backend *b)
{
	return b->mtu;
}

const char *uvn_vu_backend_name(const struct uvn_vu_backend *b)
{
	return b->name;
}

struct uvn_vq_dev *uvn_vu_queue_idle_dev(struct uvn_vu_queue *q)
{
	if (q->vq || !q->dev || !q->desc || !q->started || q->enabled || q->broken)
		return NULL;
	return q->dev;
}

void uvn_vu_queue_notify(struct uvn_vu_queue *q)
{
	uint64_t one = 1;

	if (q->call_fd < 0)
		return;
	if (write(q->call_fd, &one, sizeof(one)) == sizeof(one))
		q->calls++;
	else
		q->calls_failed++;
}

/* ---------------------------------------------------------------- dispatch */

static int recv_error(struct uvn_vu_backend *b, int err)
{
	b->dead = true;
	switch (err) {
	case -ECONNRESET:
		vu_log(b, UVN_LOG_INFO, "frontend closed the connection");
		return err;
	case -EMSGSIZE:
		return vu_conn_error(b, &b->st.err_size, "message payload larger than any request");
	case -ETOOMANYREFS:
		return vu_conn_error(b, &b->st.err_fds, "more than %d fds with one message",
				     UVN_VU_MAX_FDS);
	case -EPIPE:
		return vu_conn_error(b, &b->st.err_io, "connection closed in the middle of a message");
	default:
		return vu_conn_error(b, &b->st.err_io, "receive failed: %s", strerror(-err));
	}
}

static int check_error(struct uvn_vu_backend *b, const struct uvn_vu_msg *m, int err)
{
	const char *name = uvn_vu_req_name(m->hdr.request);

	switch (err) {
	case -EPROTO:
		return vu_conn_error(b, &b->st.err_header, "%s (%u): bad flags 0x%x (version 1, no REPLY)",
				     name, m->hdr.request, m->hdr.flags);
	case -ENOSYS:
		return vu_conn_error(b, &b->st.err_unknown, "request %s (%u) not supported", name,
				     m->hdr.request);
	case -EBADF:
		return vu_conn_error(b, &b->st.err_fds, "%s: %u fds is not what the request allows",
				     name, m->nfds);
	default:
		return vu_conn_error(b, &b->st.err_size, "%s: payload of %u bytes is malformed",
				     name, m->hdr.size);
	}
}

static void send_reply(struct uvn_vu_backend *b, const struct uvn_vu_msg *reply)
{
	int ret = uvn_vu_msg_send(b->fd, reply);

	if (ret) {
		/* Replies are small and the frontend waits for them: a full
		 * socket means it stopped reading. */
		vu_conn_error(b, &b->st.err_io, "cannot send the %s reply: %s",
			      uvn_vu_req_name(reply->hdr.request), strerror(-ret));
		return;
	}
	b->st.replies++;
}

/*
 * SEND_RARP is not a row of UVN_VU_REQUESTS, the codec's table that the
 * frontend shares (it never receives this request): its payload and fds
 * are checked here (the codec checked the flags), and it is acked like
 * any request when asked.
 */
static void dispatch_rarp(struct uvn_vu_backend *b, struct uvn_vu_msg *m)
{
	struct uvn_vu_msg reply;
	int ret;

	if (m->hdr.size != sizeof(uint64_t) || m->nfds) {
		check_error(b, m, m->nfds ? -EBADF : -EBADMSG);
		return;
	}
	uvn_vu_msg_init_reply(&reply, m, 0);
	ret = vu_h_SEND_RARP(b, m, &reply);
	if (b->dead || !uvn_has_feature(b->proto, VHOST_USER_PROTOCOL_F_REPLY_ACK) ||
	    !(m->hdr.flags & VHOST_USER_NEED_REPLY_MASK))
		return;
	reply.hdr.size = sizeof(uint64_t);
	reply.p.u64 = ret ? 1 : 0;
	send_reply(b, &reply);
}

static void dispatch(struct uvn_vu_backend *b, struct uvn_vu_msg *m)
{
	const struct uvn_vu_req_info *info;
	struct uvn_vu_msg reply;
	int ret;

	b->st.msgs++;
	ret = uvn_vu_msg_check_request(m, &info);
	if (ret == -ENOSYS && m->hdr.request == VHOST_USER_SEND_RARP) {
		dispatch_rarp(b, m);
		return;
	}
	if (ret) {
		check_error(b, m, ret);
		return;
	}
	if (uvn_log_enabled(UVN_LOG_DEBUG))
		vu_log(b, UVN_LOG_DEBUG, "%s (size %u, flags 0x%x, u64 0x%llx)",
		       uvn_vu_req_name(m->hdr.request), m->hdr.size, m->hdr.flags,
		       m->hdr.size >= 8 ? (unsigned long long)m->p.u64 : 0ull);
	uvn_vu_msg_init_reply(&reply, m, 0);
	ret = handlers[m->hdr.request](b, m, &reply);
	if (b->dead)
		return;
	if (info->reply == UVN_VU_REPLY_ACK) {
		/* Generic REPLY_ACK: any request may ask, 0 = success. */
		if (!uvn_vu_msg_expects_reply(m, uvn_has_feature(b->proto, VHOST_USER_PROTOCOL_F_REPLY_ACK)))
			return;
		reply.hdr.size = sizeof(uint64_t);
		reply.p.u64 = ret ? 1 : 0;
	}
	send_reply(b, &reply);
	/* our copies of fds the reply carried (GET_INFLIGHT_FD) */
	uvn_vu_msg_close_fds(&reply);
}

int uvn_vu_backend_handle(struct uvn_vu_backend *b)
{
	int ret;

	if (b->dead)
		return -EPROTO;
	if (uvn_vu_backend_check_memory(b))
		return -EFAULT;
	ret = uvn_vu_msg_recv(b->fd, &b->rx);
	if (ret < 0)
		return recv_error(b, ret);
	if (ret == 0)
		return 0;
	dispatch(b, &b->rx.msg);
	/* Whatever fds the handler did not take are closed here, used or not. */
	for (unsigned i = 0; i < UVN_VU_MAX_FDS; i++)
		b->st.fds_unused += b->rx.msg.fds[i] >= 0;
	uvn_vu_rx_reset(&b->rx);
	return b->dead ? -EPROTO : 0;
}
