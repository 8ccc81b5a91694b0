/* SPDX-License-Identifier: MIT */
/*
 * vhost-user codec: framing, SCM_RIGHTS, and the central validation of
 * every message against its row of UVN_VU_REQUESTS. Nothing here trusts
 * the peer: sizes are checked before a byte of payload is read, fds beyond
 * what fits are closed, and a message is either whole and valid or refused.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "msg.h"

#define ROW(name, szr, sz, fdr, rep) \
	[VHOST_USER_##name] = { VHOST_USER_##name, #name, szr, (uint32_t)(sz), fdr, rep },
static const struct uvn_vu_req_info reqs[VHOST_USER_REQUEST_MAX] = { UVN_VU_REQUESTS(ROW) };
#undef ROW

/* Names of requests we do not speak, so the log says what was refused. */
static const char *const other_names[] = {
	[VHOST_USER_SEND_RARP] = "SEND_RARP",
	[VHOST_USER_SET_BACKEND_REQ_FD] = "SET_BACKEND_REQ_FD",
	[VHOST_USER_IOTLB_MSG] = "IOTLB_MSG",
	[VHOST_USER_SET_VRING_ENDIAN] = "SET_VRING_ENDIAN",
	[26] = "CREATE_CRYPTO_SESSION",
	[27] = "CLOSE_CRYPTO_SESSION",
	[28] = "POSTCOPY_ADVISE",
	[29] = "POSTCOPY_LISTEN",
	[30] = "POSTCOPY_END",
	[VHOST_USER_GET_INFLIGHT_FD] = "GET_INFLIGHT_FD",
	[VHOST_USER_SET_INFLIGHT_FD] = "SET_INFLIGHT_FD",
	[33] = "GPU_SET_SOCKET",
	[VHOST_USER_RESET_DEVICE] = "RESET_DEVICE",
	[VHOST_USER_VRING_KICK] = "VRING_KICK",
	[41] = "GET_SHARED_OBJECT",
	[42] = "SET_DEVICE_STATE_FD",
	[43] = "CHECK_DEVICE_STATE",
};

const struct uvn_vu_req_info *uvn_vu_req_info(uint32_t request)
{
	if (request >= VHOST_USER_REQUEST_MAX || !reqs[request].name)
		return NULL;
	return &reqs[request];
}

const char *uvn_vu_req_name(uint32_t request)
{
	const struct uvn_vu_req_info *info = uvn_vu_req_info(request);

	if (info)
		return info->name;
	if (request < sizeof(other_names) / sizeof(other_names[0]) && other_names[request])
		return other_names[request];
	return "UNKNOWN";
}

void uvn_vu_msg_init(struct uvn_vu_msg *m, uint32_t request, uint32_t flags, uint32_t size)
{
	memset(m, 0, sizeof(*m));
	m->hdr.request = request;
	m->hdr.flags = flags;
	m->hdr.size = size;
	for (unsigned i = 0; i < UVN_VU_MAX_FDS; i++)
		m->fds[i] = -1;
}

void uvn_vu_msg_init_reply(struct uvn_vu_msg *reply, const struct uvn_vu_msg *req, uint32_t size)
{
	/* Exactly REPLY | version: frontends reject anything else. */
	uvn_vu_msg_init(reply, req->hdr.request, VHOST_USER_REPLY_MASK | VHOST_USER_VERSION, size);
}

void uvn_vu_msg_close_fds(struct uvn_vu_msg *m)
{
	for (unsigned i = 0; i < UVN_VU_MAX_FDS; i++) {
		if (m->fds[i] >= 0)
			close(m->fds[i]);
		m->fds[i] = -1;
	}
	m->nfds = 0;
}

int uvn_vu_msg_take_fd(struct uvn_vu_msg *m, unsigned i)
{
	int fd;

	if (i >= UVN_VU_MAX_FDS)
		return -1;
	fd = m->fds[i];
	m->fds[i] = -1;
	return fd;
}

void uvn_vu_rx_init(struct uvn_vu_rx *rx)
{
	rx->got = 0;
	uvn_vu_msg_init(&rx->msg, 0, 0, 0);
}

void uvn_vu_rx_reset(struct uvn_vu_rx *rx)
{
	uvn_vu_msg_close_fds(&rx->msg);
	uvn_vu_rx_init(rx);
}

/* Keep the fds that fit; close the rest. @return true if any were lost. */
static bool collect_fds(struct uvn_vu_msg *m, struct msghdr *mh)
{
	bool lost = mh->msg_flags & MSG_CTRUNC; /* the kernel dropped some */

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;
		int *fds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, &fds[i], sizeof(fd));
			if (m->nfds < UVN_VU_MAX_FDS) {
				m->fds[m->nfds++] = fd;
			} else {
				close(fd);
				lost = true;
			}
		}
	}
	return lost;
}

static ssize_t recv_some(int fd, struct uvn_vu_rx *rx, void *dst, size_t want)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * UVN_VU_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = dst, .iov_len = want };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	ssize_t n;

	do {
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (collect_fds(&rx->msg, &mh))
		return -ETOOMANYREFS;
	return n;
}

static int recv_step(int fd, struct uvn_vu_rx *rx)
{
	struct uvn_vu_msg *m = &rx->msg;
	size_t want;
	uint8_t *dst;
	ssize_t n;

	if (rx->got < UVN_VU_HDR_SIZE) {
		dst = (uint8_t *)&m->hdr + rx->got;
		want = UVN_VU_HDR_SIZE - rx->got;
	} else {
		dst = (uint8_t *)&m->p + (rx->got - UVN_VU_HDR_SIZE);
		want = m->hdr.size - (rx->got - UVN_VU_HDR_SIZE);
	}
	n = recv_some(fd, rx, dst, want);
	if (n == -EAGAIN || n == -EWOULDBLOCK)
		return 0;
	if (n < 0)
		return (int)n;
	if (n == 0)
		return rx->got ? -EPIPE : -ECONNRESET;
	rx->got += (size_t)n;
	/* The size is checked before any payload byte is read into the union. */
	if (rx->got == UVN_VU_HDR_SIZE && m->hdr.size > sizeof(m->p))
		return -EMSGSIZE;
	return rx->got >= UVN_VU_HDR_SIZE && rx->got - UVN_VU_HDR_SIZE == m->hdr.size ? 1 : 2;
}

int uvn_vu_msg_recv(int fd, struct uvn_vu_rx *rx)
{
	int ret;

	do {
		ret = recv_step(fd, rx);
	} while (ret == 2);
	if (ret < 0)
		uvn_vu_rx_reset(rx);
	return ret;
}

static int check_size(const struct uvn_vu_msg *m, const struct uvn_vu_req_info *info)
{
	uint32_t size = m->hdr.size;

	switch (info->size_rule) {
	case UVN_VU_SZ_EXACT:
		return size == info->size ? 0 : -EBADMSG;
	case UVN_VU_SZ_MEMORY:
		if (size < UVN_VU_MEMORY_HDR_SIZE || m->p.memory.nregions == 0 ||
		    m->p.memory.nregions > VHOST_MEMORY_BASELINE_NREGIONS)
			return -EBADMSG;
		return size == UVN_VU_MEMORY_HDR_SIZE + m->p.memory.nregions * sizeof(struct uvn_vu_region)
			       ? 0 : -EBADMSG;
	case UVN_VU_SZ_CONFIG:
		if (size < UVN_VU_CONFIG_HDR_SIZE || m->p.config.size > VHOST_USER_MAX_CONFIG_SIZE)
			return -EBADMSG;
		return size == UVN_VU_CONFIG_HDR_SIZE + m->p.config.size ? 0 : -EBADMSG;
	}
	return -EBADMSG;
}

static int check_fds(const struct uvn_vu_msg *m, const struct uvn_vu_req_info *info)
{
	switch (info->fds) {
	case UVN_VU_FD_NONE:
		return m->nfds == 0 ? 0 : -EBADF;
	case UVN_VU_FD_ONE:
		return m->nfds == 1 ? 0 : -EBADF;
	case UVN_VU_FD_OPTIONAL:
		return m->nfds <= 1 ? 0 : -EBADF;
	case UVN_VU_FD_PER_REGION:
		return m->nfds == m->p.memory.nregions ? 0 : -EBADF;
	case UVN_VU_FD_NOFD_BIT:
		if (m->p.u64 & ~(uint64_t)(VHOST_USER_VRING_IDX_MASK | VHOST_USER_VRING_NOFD_MASK))
			return -EBADMSG;
		return m->nfds == ((m->p.u64 & VHOST_USER_VRING_NOFD_MASK) ? 0u : 1u) ? 0 : -EBADF;
	}
	return -EBADF;
}

int uvn_vu_msg_check_request(const struct uvn_vu_msg *m, const struct uvn_vu_req_info **info)
{
	uint32_t flags = m->hdr.flags;
	int ret;

	*info = NULL;
	if ((flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION || (flags & VHOST_USER_REPLY_MASK) ||
	    (flags & ~VHOST_USER_FLAGS_KNOWN))
		return -EPROTO;
	*info = uvn_vu_req_info(m->hdr.request);
	if (!*info)
		return -ENOSYS;
	if (m->hdr.size > sizeof(m->p))
		return -EBADMSG;
	ret = check_size(m, *info);
	if (ret)
		return ret;
	return check_fds(m, *info);
}

bool uvn_vu_msg_expects_reply(const struct uvn_vu_msg *req, bool reply_ack_negotiated)
{
	const struct uvn_vu_req_info *info = uvn_vu_req_info(req->hdr.request);

	if (!info)
		return false;
	if (info->reply != UVN_VU_REPLY_ACK)
		return true;
	return reply_ack_negotiated && (req->hdr.flags & VHOST_USER_NEED_REPLY_MASK);
}

int uvn_vu_msg_check_reply(const struct uvn_vu_msg *req, const struct uvn_vu_msg *reply)
{
	const struct uvn_vu_req_info *info = uvn_vu_req_info(req->hdr.request);
	uint32_t size = reply->hdr.size;

	if (!info || reply->hdr.flags != (VHOST_USER_REPLY_MASK | VHOST_USER_VERSION) ||
	    reply->hdr.request != req->hdr.request)
		return -EPROTO;
	if (info->reply == UVN_VU_REPLY_INFLIGHT) {
		if (size != sizeof(struct uvn_vu_inflight))
			return -EBADMSG;
		return reply->nfds == (reply->p.inflight.mmap_size ? 1u : 0u) ? 0 : -EBADF;
	}
	if (reply->nfds)
		return -EBADF;
	switch (info->reply) {
	case UVN_VU_REPLY_ACK:
	case UVN_VU_REPLY_U64:
		return size == sizeof(uint64_t) ? 0 : -EBADMSG;
	case UVN_VU_REPLY_STATE:
		return size == sizeof(struct vhost_vring_state) ? 0 : -EBADMSG;
	case UVN_VU_REPLY_CONFIG:
		return size == 0 || size == req->hdr.size ? 0 : -EBADMSG;
	case UVN_VU_REPLY_INFLIGHT:
		break;
	}
	return -EBADMSG;
}

int uvn_vu_msg_send(int fd, const struct uvn_vu_msg *m)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * UVN_VU_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov[2] = {
		{ .iov_base = (void *)&m->hdr, .iov_len = UVN_VU_HDR_SIZE },
		{ .iov_base = (void *)&m->p, .iov_len = m->hdr.size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t total = UVN_VU_HDR_SIZE + m->hdr.size, sent = 0;

	if (m->hdr.size > sizeof(m->p) || m->nfds > UVN_VU_MAX_FDS)
		return -EINVAL;
	if (m->nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * m->nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * m->nfds);
		memcpy(CMSG_DATA(c), m->fds, sizeof(int) * m->nfds);
	}
	while (sent < total) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		sent += (size_t)n;
		/* A short write: the fds went with the first byte; send the rest. */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		while (mh.msg_iovlen && (size_t)n >= mh.msg_iov->iov_len) {
			n -= (ssize_t)mh.msg_iov->iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen) {
			mh.msg_iov->iov_base = (uint8_t *)mh.msg_iov->iov_base + n;
			mh.msg_iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}
