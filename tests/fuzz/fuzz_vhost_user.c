/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the vhost-user backend (codec, validation, every
 * request handler) fed a stream of requests from a frontend that cannot be
 * trusted, with real fds attached (a small guest memory memfd, eventfds).
 *
 * Input, per message:
 *   [0] request id (raw: unknown ids too)   [1] flags: 0 -> v1, 1 -> v1 |
 *   NEED_REPLY, else raw   [2] fds (low 2 bits), their kinds (bits 2-3:
 *   0 the guest memory memfd then eventfds, 1 eventfds, 2 timerfds, 3
 *   pipes), bit 7: claim the size in [3..4] instead of the payload
 *   actually sent   [3..4] payload length (le16, at most 512)   then the
 *   payload bytes.
 * Kind 1 is what kick, call, error and log-call fds should be; kinds 2 and
 * 3 must be refused where the protocol means an eventfd (a timerfd has the
 * eventfd's anonymous inode, a pipe does not).
 * The backend must never crash; when the session ends every fd it was
 * given is closed (the process's fd count is back where it started).
 *
 * After each message the backend is given up to four turns, as long as it
 * has bytes to read (a turn with none would only find EAGAIN), and the
 * replies are read when it sent some. Every input starts from the same
 * state (a new session); FZ_REPEAT=1 checks it (fuzz_repeat.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "fuzz_repeat.h"
#include "fuzz_vu.h"
#include "util/log.h"
#include "vhost_user/internal.h"

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

/* fd @i of a message, of @kind (see the input format above). */
static int make_fd(unsigned i, unsigned kind)
{
	int fd, p[2];

	if (kind == 2)
		return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (kind == 3) {
		if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
			return -1;
		close(p[1]);
		return p[0];
	}
	if (i || kind == 1)
		return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fd = memfd_create("fuzz-guest", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, MEM_SIZE)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void send_msg(int sock, const uint8_t *hdr, const uint8_t *payload, uint32_t len,
		     unsigned nfds, unsigned kind)
{
	int fds[3];
	unsigned got = 0;

	for (; got < nfds; got++) {
		fds[got] = make_fd(got, kind);
		if (fds[got] < 0)
			break;
	}
	fz_vu_send(sock, hdr, payload, len, fds, got);
	for (unsigned i = 0; i < got; i++)
		close(fds[i]); /* the backend has its own copies now */
}

/*
 * Would a turn of the backend do anything? It reads the socket (nothing
 * there: EAGAIN, no change) unless the session is already dead or its
 * memory faulted, which the turn reports without reading.
 */
static bool backend_has_work(const struct uvn_vu_backend *b, int sock)
{
	int n = 0;

	if (b->dead || uvn_mem_owner_faults(&b->guard))
		return true;
	if (ioctl(sock, FIONREAD, &n) < 0)
		abort();
	return n > 0;
}

/* How an input ended, to compare two runs of it (FZ_REPEAT). */
struct outcome {
	struct uvn_vu_stats st;
	uint64_t replies_read;
	uint64_t alive_msgs; /* messages sent before the session ended */
};

static void run_input(const uint8_t *data, size_t size, void *out)
{
	struct uvn_vu_backend_cfg cfg = {
		.features = NET_FEATURES, .queue_num = 3, .ops = &ops, .name = "fuzz",
	};
	/* fds open after the last input: where this one must end too (one
	 * count of /proc/self/fd per input, not two); -1: count afresh */
	static int fds_after = -1;
	bool fresh = fds_after < 0;
	unsigned fds0 = fresh ? fz_count_fds() : (unsigned)fds_after, fds1;
	struct outcome mine, *o = out ? out : &mine;
	const uint8_t *const data0 = data;
	const size_t size0 = size;
	struct uvn_vu_backend *b;
	uint64_t replies = 0, io_errs = 0;
	int sv[2];
	bool alive = true, idle_turn = true;

	memset(o, 0, sizeof(*o));
	uvn_log_level = UVN_LOG_ERR - 1; /* quiet: the peer errors are the point */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (uvn_vu_backend_create(sv[1], &cfg, &b))
		abort();
	while (alive && size >= 5) {
		uint8_t hdr[12] = { 0 };
		uint32_t flags = data[1] == 0 ? 1u : data[1] == 1 ? 9u : data[1];
		uint32_t len = (uint32_t)(data[3] | data[4] << 8), claim;
		const struct uvn_vu_stats *st = uvn_vu_backend_stats(b);

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
		send_msg(sv[0], hdr, data + 5, len, data[2] & 3, (data[2] >> 2) & 3);
		data += 5 + len;
		size -= 5 + len;
		o->alive_msgs++;
		/* One message per turn; a short one leaves the rest pending.
		 * The first message also gets one turn with nothing to read:
		 * the backend finding its socket empty is a path too. */
		for (int k = 0; k < 4 && alive; k++) {
			if (!backend_has_work(b, sv[1])) {
				if (!idle_turn)
					break;
				idle_turn = false;
			}
			alive = uvn_vu_backend_handle(b) == 0;
		}
		/* Replies only come from a turn that sent one (or tried to). */
		if (st->replies != replies || st->err_io != io_errs) {
			replies = st->replies;
			io_errs = st->err_io;
			o->replies_read += fz_vu_drain(sv[0], NULL);
		}
	}
	close(sv[0]);
	while (alive)
		alive = uvn_vu_backend_handle(b) == 0;
	o->st = *uvn_vu_backend_stats(b);
	uvn_vu_backend_destroy(b);
	fds1 = fz_count_fds();
	if (fds1 != fds0 && !fresh) {
		/* Maybe not this input's doing (the fuzzer's own files between
		 * inputs): run it again from a fresh count; a leak leaks again. */
		fds_after = -1;
		run_input(data0, size0, out);
		return;
	}
	if (fds1 != fds0)
		abort(); /* an fd the frontend sent, or the session's own, leaked */
	fds_after = (int)fds1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome a, b;

	fz_run_checked(run_input, data, size, &a, &b, sizeof(a));
	return 0;
}
