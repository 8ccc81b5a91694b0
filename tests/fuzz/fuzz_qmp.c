/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the QMP client that follows a guest's receive filter
 * (lib/port/qmp.c), fed what a hostile QEMU could send on its monitor.
 *
 * Input: byte 0 bit 0: follow "nic0" (else: the only NIC), bit 1: close
 * our end after the input (the client sees EOF); the rest is the stream
 * the client reads, sent in pieces of 1 + (byte 0 >> 2) * 64 bytes with
 * the client's loop run between them; what the client writes is read and
 * dropped. Checked: no crash or leak, and the filter answers for every
 * kind of address afterwards (its sequence counter is even: no write
 * section left open).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/device/filter.h"
#include "port/qmp.h"
#include "util/log.h"
#include "util/loop.h"
#include "vhost_user/backend.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static int lfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	uvn_log_level = UVN_LOG_ERR - 1; /* quiet: every input is a bad peer */
	snprintf(path, sizeof(path), "/tmp/uvn-fuzz-qmp-%d.sock", (int)getpid());
	unlink(path);
	lfd = uvn_vu_listen(path);
	if (lfd < 0)
		abort();
	return 0;
}

static void drain(int fd)
{
	char sink[4096];

	while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

static void run(struct uvn_loop *loop, int sfd)
{
	for (int i = 0; i < 64 && uvn_loop_run_once(loop, 0) > 0; i++)
		drain(sfd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t macs[][6] = {
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, { 0x01, 0, 0x5e, 0, 0, 1 },
		{ 0x52, 0x54, 0, 0x12, 0x34, 0x56 }, { 0x02, 0, 0, 0, 0, 2 },
	};
	struct uvn_rx_filter f;
	struct uvn_loop *loop;
	struct uvn_qmp *q;
	size_t piece, off = 1;
	int sfd;

	if (!size)
		return 0;
	piece = 1 + (size_t)(data[0] >> 2) * 64;
	memset(&f, 0, sizeof(f));
	if (uvn_loop_create(&loop))
		abort();
	if (uvn_qmp_create(loop, path, data[0] & 1 ? "nic0" : NULL, &f, "fuzz", &q))
		abort();
	sfd = uvn_vu_accept(lfd);
	if (sfd < 0)
		abort();
	while (off < size) {
		size_t n = size - off < piece ? size - off : piece;
		ssize_t w = send(sfd, data + off, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w <= 0)
			break; /* the client hung up, or will not read more now */
		off += (size_t)w;
		run(loop, sfd);
	}
	if (data[0] & 2)
		shutdown(sfd, SHUT_WR);
	run(loop, sfd);
	if (atomic_load(&f.seq) & 1)
		abort();
	for (unsigned i = 0; i < sizeof(macs) / sizeof(macs[0]); i++)
		(void)uvn_rx_filter_pass(&f, macs[i]);
	uvn_qmp_destroy(q);
	uvn_loop_destroy(loop);
	close(sfd);
	return 0;
}
