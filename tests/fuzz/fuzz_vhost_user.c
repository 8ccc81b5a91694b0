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
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_vu.h"
#include "util/log.h"
#include "vhost_user/backend.h"

#define MEM_SIZE (1u << 20)
#define MAX_PAYLOAD FZ_VU_MAX_PAYLOAD
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
	int fds[3];
	unsigned got = 0;

	for (; got < nfds; got++) {
		fds[got] = make_fd(got);
		if (fds[got] < 0)
			break;
	}
	fz_vu_send(sock, hdr, payload, len, fds, got);
	for (unsigned i = 0; i < got; i++)
		close(fds[i]); /* the backend has its own copies now */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uvn_vu_backend_cfg cfg = {
		.features = NET_FEATURES, .queue_num = 3, .ops = &ops, .name = "fuzz",
	};
	struct uvn_vu_backend *b;
	unsigned fds0 = fz_count_fds();
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
		(void)fz_vu_drain(sv[0], NULL);
	}
	close(sv[0]);
	while (alive)
		alive = uvn_vu_backend_handle(b) == 0;
	uvn_vu_backend_destroy(b);
	if (fz_count_fds() != fds0)
		abort(); /* an fd the frontend sent, or the session's own, leaked */
	return 0;
}
