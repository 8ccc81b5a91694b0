/* SPDX-License-Identifier: MIT */
/*
 * Send and receive Ethernet frames through a vhost-user socket with the
 * uvnet driver. Try it against uvnetd reflecting frames back:
 *   uvnetd --port vhost-user:/tmp/vu.sock --forward loopback &
 *   hello_vhost /tmp/vu.sock 10
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uvnet/driver.h>

static void fill_frame(uint8_t *f, uint32_t len, unsigned seq)
{
	static const uint8_t dst[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t src[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	f[12] = 0x88; /* local experimental EtherType 0x88b5 */
	f[13] = 0xb5;
	memset(f + 14, 0, len - 14);
	snprintf((char *)f + 14, len - 14, "hello #%u", seq);
}

int main(int argc, char **argv)
{
	unsigned count = argc > 2 ? (unsigned)atoi(argv[2]) : 8, sent = 0, got = 0;
	struct uvn_drv_cfg cfg;
	struct uvn_pkt *pkts[32];
	struct uvn_drv *d;
	int n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s VHOST_USER_SOCKET [COUNT]\n", argv[0]);
		return 2;
	}
	uvn_drv_cfg_init(&cfg);
	cfg.path = argv[1];
	n = uvn_drv_open(&cfg, &d);
	if (n < 0) {
		fprintf(stderr, "cannot open %s: %s\n", argv[1], strerror(-n));
		return 1;
	}
	printf("connected: features 0x%llx, rx mode %d\n",
	       (unsigned long long)uvn_drv_features(d), (int)uvn_drv_rx_mode(d));
	/* Send: packets from the driver's tx pool live in shared memory (zero copy). */
	while (sent < count) {
		unsigned k = count - sent < 32 ? count - sent : 32;

		k = uvn_drv_tx_alloc(d, 0, pkts, k, 64);
		for (unsigned i = 0; i < k; i++)
			fill_frame(pkts[i]->seg[0].iov_base, 64, sent + i);
		n = uvn_tx_burst(d, 0, pkts, k);
		if (n < 0)
			break;
		for (unsigned i = (unsigned)n; i < k; i++)
			uvn_pkt_free(pkts[i]); /* not taken: the ring was full */
		sent += (unsigned)n;
	}
	/* Receive whatever comes back within a second (interrupt-style wait). */
	while (uvn_rx_wait(d, 0, 1000) > 0) {
		n = uvn_rx_burst(d, 0, pkts, 32);
		for (int i = 0; i < n; i++) {
			char text[32] = "";

			uvn_pkt_read(pkts[i], 14, text, sizeof(text) - 1);
			printf("rx %u bytes: %s\n", pkts[i]->len, text);
			uvn_pkt_free(pkts[i]);
		}
		got += n > 0 ? (unsigned)n : 0;
	}
	printf("sent %u, received %u%s%s\n", sent, got, uvn_drv_error(d) ? ", backend error: " : "",
	       uvn_drv_error(d) ? strerror(-uvn_drv_error(d)) : "");
	uvn_drv_close(d);
	return sent == count ? 0 : 1;
}
