/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: TAP input with hostile virtio-net headers, through the
 * real TAP port (lib/port/tap.c): tap_rx's read, header check and big-frame
 * handling, then the packets out again through tap_tx (GSO pass-through or
 * software segmentation) and into a guest's rx queue (uvn_netdev_rx).
 *
 * The port is created once on a real TAP interface (so it negotiates its
 * offloads with the kernel as uvnetd does: needs CAP_NET_ADMIN and
 * /dev/net/tun, and fails loudly without them), then its fd is replaced
 * by one end of a SOCK_SEQPACKET pair: every message the fuzzer writes to
 * the other end is one frame "from the kernel", read as tun delivers one.
 *
 * Input:
 *   [0] the guest's features (fz_rx_features)   [1] its rx buffers:
 *       (v + 1) * 32 bytes, 32 of them
 *   frames: le16 length, then that many bytes (virtio-net header + frame)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_guest.h"
#include "fuzz_mem.h"
#include "net/hdr.h"
#include "port/port.h"
#include "util/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ALL_OFFLOADS                                                                          \
	((1ull << VIRTIO_NET_F_CSUM) | (1ull << VIRTIO_NET_F_HOST_TSO4) |                     \
	 (1ull << VIRTIO_NET_F_HOST_TSO6) | (1ull << VIRTIO_NET_F_HOST_ECN) |                 \
	 (1ull << VIRTIO_NET_F_HOST_USO))

#define TAP_SMALL 64u
#define TAP_BIG 8u

static struct uvn_port *tap;
static struct uvn_pkt_pool *tap_small, *tap_big; /* the port's own */
static int kernel = -1; /* our end: the "kernel" side of the TAP fd */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct uvn_pkt_pool_cfg sc = { .count = TAP_SMALL, .buf_size = 2048, .name = "tap-small" };
	struct uvn_pkt_pool_cfg bc = { .count = TAP_BIG, .buf_size = UVN_NETDEV_MAX_FRAME + 64,
				       .name = "tap-big" };
	char name[16];
	int sv[2];

	(void)argc;
	(void)argv;
	uvn_log_level = UVN_LOG_ERR - 1;
	snprintf(name, sizeof(name), "uvnfz%d", (int)getpid() % 100000);
	if (uvn_pkt_pool_create(&sc, &tap_small) || uvn_pkt_pool_create(&bc, &tap_big))
		abort();
	if (uvn_port_tap_create(name, NULL, tap_small, tap_big, &tap)) {
		fprintf(stderr, "fuzz_tap_rx: cannot create TAP %s (needs root and /dev/net/tun)\n",
			name);
		abort();
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) ||
	    dup3(sv[1], uvn_port_tap_fd(tap), O_CLOEXEC) < 0)
		abort();
	close(sv[1]); /* the TAP interface goes away with its last fd */
	kernel = sv[0];
	return 0;
}

/* What tap_tx wrote: one frame per message, a header it may send. */
static void drain_kernel(void)
{
	static uint8_t buf[UVN_NETDEV_MAX_FRAME + 64];
	ssize_t n;

	while ((n = recv(kernel, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
		struct virtio_net_hdr_v1 h;

		CHECK((size_t)n >= UVN_NET_HDR_LEN);
		memcpy(&h, buf, sizeof(h));
		h.flags &= (uint8_t)~VIRTIO_NET_HDR_F_DATA_VALID; /* tun takes it */
		CHECK(!uvn_hdr_check_tx(&h, (uint32_t)(n - UVN_NET_HDR_LEN), ALL_OFFLOADS));
		CHECK(!h.num_buffers);
	}
	CHECK(errno == EAGAIN);
}

static void run(const uint8_t *data, size_t size, struct fz_guest *g)
{
	uint32_t buf_size = (data[1] + 1u) * 32;
	struct uvn_pkt *pkts[32];
	unsigned n;

	for (unsigned i = 0; i < 32; i++)
		CHECK(fz_guest_post(g, NULL, &buf_size, 1, false));
	fz_guest_kick(g);
	data += 2;
	size -= 2;
	while (size >= 2) {
		size_t len = (size_t)(data[0] | data[1] << 8);

		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		(void)!send(kernel, data, len, MSG_DONTWAIT);
		data += len;
		size -= len;
	}
	while ((n = tap->ops->rx(tap, 0, pkts, 32)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			const struct uvn_pkt *p = pkts[i];
			struct virtio_net_hdr_v1 h = p->vnet;

			CHECK(p->len >= UVN_ETH_HLEN && p->len <= UVN_NETDEV_MAX_FRAME);
			/* hdr_len never trusted. (num_buffers is cleared only for frames
			 * with offloads: no consumer reads it from a packet.) */
			CHECK(!h.hdr_len);
			h.flags &= (uint8_t)~VIRTIO_NET_HDR_F_DATA_VALID; /* the kernel's to set */
			CHECK(!uvn_hdr_check_tx(&h, p->len, ALL_OFFLOADS));
		}
		tap->ops->tx(tap, 0, pkts, n);
		drain_kernel();
		(void)uvn_netdev_rx(g->q, pkts, n);
		uvn_netdev_q_flush(g->q);
		fz_guest_check_rx(g, buf_size);
		uvn_pkt_free_bulk(pkts, n);
	}
	/* Whatever tap_rx did not take (a full pool) must not stay for the next input. */
	while (recv(uvn_port_tap_fd(tap), pkts, sizeof(pkts), MSG_DONTWAIT) >= 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz_guest g;

	if (size < 2)
		return 0;
	memset(&g, 0, sizeof(g));
	if (fz_guest_init(&g, fz_rx_features(data[0]), false))
		run(data, size, &g);
	fz_guest_fini(&g);
	/* Every packet back; the port keeps one big descriptor spare. */
	CHECK(uvn_pkt_pool_avail(tap_small) == TAP_SMALL);
	CHECK(uvn_pkt_pool_avail(tap_big) + 1 >= TAP_BIG);
	return 0;
}
