/* SPDX-License-Identifier: MIT */
/*
 * echo_device: the host side of a virtio-net NIC in one thread, with
 * <uvnet/device.h>. It listens on a vhost-user socket, serves one
 * frontend (QEMU, DPDK's virtio-user, hello_vhost), sends every frame the
 * guest sends straight back to it, and exits when that frontend leaves.
 *
 *   echo_device SOCKET &
 *   hello_vhost SOCKET 10
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <uvnet/device.h>

/* One pass of the data path: what the guest sent goes back to it. The
 * device polls (cfg.poll): no kick fd to watch. @return frames echoed */
static unsigned echo(struct uvn_dev *d)
{
	struct uvn_pkt *pkts[32];
	unsigned n, sent;

	if (!uvn_dev_pair_ready(d, 0))
		return 0;
	n = uvn_dev_rx_burst(d, 0, pkts, 32);
	sent = n ? uvn_dev_tx_burst(d, 0, pkts, n) : 0;
	uvn_pkt_free_bulk(pkts, n);
	uvn_dev_rx_done(d, 0);
	return sent;
}

/* One control event, if any: a frontend to accept, a message to handle,
 * guest memory that vanished. @return false once the session is over */
static bool control(struct uvn_dev *d)
{
	struct pollfd p[2] = { { .fd = uvn_dev_connected(d) ? uvn_dev_fd(d) : uvn_dev_listen_fd(d),
				 .events = POLLIN },
			       { .fd = uvn_dev_fault_fd(d), .events = POLLIN } };

	/* Busy guests are served between events: wait 1 ms at most. */
	if (poll(p, 2, 1) <= 0)
		return true;
	if (!uvn_dev_connected(d)) {
		uvn_dev_accept(d); /* -EAGAIN: nobody there after all */
		return true;
	}
	if ((p[1].revents & POLLIN) && uvn_dev_check_memory(d))
		return false;
	return !(p[0].revents & (POLLIN | POLLHUP)) || uvn_dev_handle(d) >= 0;
}

int main(int argc, char **argv)
{
	struct uvn_dev_cfg cfg;
	unsigned long echoed = 0;
	struct uvn_dev *d;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: %s VHOST_USER_SOCKET\n", argv[0]);
		return 2;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.path = argv[1];
	cfg.queue_pairs = 1;
	cfg.poll = true;
	r = uvn_dev_create(&cfg, &d);
	if (r < 0) {
		fprintf(stderr, "cannot listen on %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	printf("listening on %s\n", argv[1]);
	fflush(stdout);
	while (control(d))
		echoed += echo(d);
	printf("echoed %lu frames\n", echoed);
	uvn_dev_disconnect(d);
	uvn_dev_destroy(d);
	return 0;
}
