/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the vhost-user backend (codec, validation, every
 * request handler) fed a stream of requests from a frontend that cannot be
 * trusted, with real fds attached (a small guest memory memfd, eventfds).
 *
 * Input, per message:
 *   [0] request id (raw: unknown ids too)   [1] flags: 0 -> v1, 1 -> v1 |
 *   NEED_REPLY, else raw   [2] fds (low 2 bits), bit 7: claim the size in
 *   [3..4] instead of the payload actually sent   [3..4] payload length
 *   (le16, at most 512)   then the payload bytes.
 * The backend must never crash; when the session ends every fd it was
 * given is closed (the process's fd count is back where it started).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "vhost_user/backend.h"

#define MEM_SIZE (1u << 20)
#define MAX_PAYLOAD 512u
#define NET_FEATURES                                                                            \
	((1ull << 32) | (1ull << 15) | (1ull << 28) | (1ull << 29) | (1ull << 35) | (1ull << 34) | \
	 (1ull << 5) | (1ull << 0) | (1ull << 1) | (1ull << 17) | (1ull << 22))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void dev_queue_ready(void *ctx, struct uvn_vu_queue *q, bool ready)
{
	(void)ctx;
	(void)q;
	(void)ready;
}

static int dev_set_features(void *ctx, uint64_t features)
{
	(void)ctx;
	return (features & 1) ? -1 : 0; /* refuse some, to reach that path */
}

static void dev_set_status(void *ctx, uint8_t status)
{
	(void)ctx;
	(void)status;
}

static const struct uvn_vu_device_ops ops = {
	.queue_ready = dev_queue_ready,
	.set_features = dev_set_features,
	.set_status = dev_set_status,
};

static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		abort();
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* fd @i of a message: the guest memory first, then eventfds. */
static int make_fd(unsigned i)
{
	int fd;

	if (i)
		return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fd = memfd_create("fuzz-guest", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, MEM_SIZE)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void send_msg(int sock, const uint8_t *hdr, const uint8_t *payload, uint32_t len,
		     unsigned nfds)
{
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	uint8_t buf[12 + MAX_PAYLOAD];
	struct iovec iov = { buf, 12 + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[3];
	unsigned got = 0;

	memcpy(buf, hdr, 12);
	memcpy(buf + 12, payload, len);
	for (; got < nfds; got++) {
		fds[got] = make_fd(got);
		if (fds[got] < 0)
			break;
	}
	if (got) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(got * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(got * sizeof(int));
		memcpy(CMSG_DATA(c), fds, got * sizeof(int));
	}
	(void)!sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	for (unsigned i = 0; i < got; i++)
		close(fds[i]); /* the backend has its own copies now */
}

/* Read and drop the backend's replies, closing any fds they carry. */
static void drain_replies(int sock)
{
	char cbuf[CMSG_SPACE(8 * sizeof(int))];
	uint8_t buf[4096];

	for (;;) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };

		if (recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
					close(((int *)CMSG_DATA(c))[k]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uvn_vu_backend_cfg cfg = {
		.features = NET_FEATURES, .queue_num = 3, .ops = &ops, .name = "fuzz",
	};
	struct uvn_vu_backend *b;
	unsigned fds0 = count_fds();
	int sv[2];
	bool alive = true;

	uvn_log_level = UVN_LOG_ERR - 1; /* quiet: the peer errors are the point */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (uvn_vu_backend_create(sv[1], &cfg, &b))
		abort();
	while (alive && size >= 5) {
		uint8_t hdr[12] = { 0 };
		uint32_t flags = data[1] == 0 ? 1u : data[1] == 1 ? 9u : data[1];
		uint32_t len = (uint32_t)(data[3] | data[4] << 8), claim;

		hdr[0] = data[0];
		memcpy(hdr + 4, &flags, 4);
		claim = len;
		if (len > MAX_PAYLOAD)
			len = MAX_PAYLOAD;
		if (len > size - 5)
			len = (uint32_t)(size - 5);
		if (!(data[2] & 0x80))
			claim = len;
		memcpy(hdr + 8, &claim, 4);
		send_msg(sv[0], hdr, data + 5, len, data[2] & 3);
		data += 5 + len;
		size -= 5 + len;
		/* One message per call; a short one leaves the rest pending. */
		for (int k = 0; k < 4 && alive; k++)
			alive = uvn_vu_backend_handle(b) == 0;
		drain_replies(sv[0]);
	}
	close(sv[0]);
	while (alive)
		alive = uvn_vu_backend_handle(b) == 0;
	uvn_vu_backend_destroy(b);
	if (count_fds() != fds0)
		abort(); /* an fd the frontend sent, or the session's own, leaked */
	return 0;
}
