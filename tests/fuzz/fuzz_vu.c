/* SPDX-License-Identifier: MIT */
/* The frontend's side of a vhost-user socket (fuzz_vu.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz_vu.h"

void fz_vu_send(int sock, const uint8_t hdr[12], const void *payload, uint32_t len,
		const int *fds, unsigned nfds)
{
	char cbuf[CMSG_SPACE(8 * sizeof(int))];
	uint8_t buf[12 + FZ_VU_MAX_PAYLOAD];
	struct iovec iov = { buf, 12 + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (len > FZ_VU_MAX_PAYLOAD || nfds > 8)
		abort();
	memcpy(buf, hdr, 12);
	if (len)
		memcpy(buf + 12, payload, len);
	if (nfds) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	(void)!sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void fz_vu_request(int sock, uint32_t req, const void *payload, uint32_t len, const int *fds,
		   unsigned nfds)
{
	uint32_t h[3] = { req, 1, len };

	fz_vu_send(sock, (const uint8_t *)h, payload, len, fds, nfds);
}

unsigned fz_vu_drain(int sock, uint64_t *u64)
{
	char cbuf[CMSG_SPACE(8 * sizeof(int))];
	uint8_t buf[4096];
	unsigned n = 0;

	for (;;) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t r = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (r <= 0)
			return n;
		n++;
		if (u64 && r == 12 + 8)
			memcpy(u64, buf + 12, 8);
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
					close(((int *)CMSG_DATA(c))[k]);
	}
}

/*
 * The directory stays open from one call to the next: opening it, and the
 * DIR it came with, was a good part of a vhost_user input's time. It is one
 * of the fds counted, in every count alike; only differences matter.
 */
unsigned fz_count_fds(void)
{
	static int dir = -1;
	static uint64_t buf[2048]; /* 16 KB: one getdents64 most times */
	unsigned n = 0;
	long r;

	if (dir < 0) {
		dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			abort();
	}
	if (lseek(dir, 0, SEEK_SET))
		abort();
	while ((r = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < r;) {
			const struct dirent64 *e = (const void *)((const uint8_t *)buf + off);

			n++;
			off += e->d_reclen;
		}
	}
	if (r < 0)
		abort();
	return n;
}
