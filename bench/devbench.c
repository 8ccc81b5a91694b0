/* SPDX-License-Identifier: MIT */
/*
 * uvnet-devbench: the virtio-net device data path alone, in one thread, for
 * profiling. A driver half (ours) and the device's netdev queue share a ring
 * in this process; each round the driver posts a burst, the device moves it
 * (guest tx -> packets, or packets -> guest rx), the driver reclaims. The
 * time per frame mixes both halves, so use it to compare versions of the
 * code (or under `valgrind --tool=callgrind` for instruction counts of the
 * device functions), not as a throughput figure.
 *
 *   uvnet-devbench [--dir tx|rx] [--size N] [--frames N] [--mrg on|off] [--packed]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uvnet/virtqueue.h>

#include "net/device/netdev.h"
#include "util/sys.h"

#define NUM 256
#define BURST 32

static void *xlate(void *ctx, uint64_t addr, uint64_t *len)
{
	(void)ctx;
	(void)len;
	return (void *)(uintptr_t)addr;
}

struct bench {
	struct uvn_vq_drv *drv;
	struct uvn_vq_dev *dev;
	struct uvn_netdev_q q;
	struct uvn_pkt_pool *small, *big;
	uint8_t *bufs;
	uint32_t size;
	bool tx;
};

static void setup(struct bench *b, uint64_t features)
{
	bool packed = features & (1ull << VIRTIO_F_RING_PACKED);
	struct uvn_vq_layout l;
	void *ring;

	uvn_vq_layout(packed, NUM, &l);
	ring = aligned_alloc(4096, (l.size + 4095) & ~(size_t)4095);
	struct uvn_vq_drv_cfg dc = { .num = NUM, .features = features, .ring = ring };
	struct uvn_vq_dev_cfg vc = {
		.num = NUM, .features = features, .desc = ring, .driver = (char *)ring + l.driver,
		.device = (char *)ring + l.device, .xlate = xlate, .avail_wrap = true, .used_wrap = true,
	};
	struct uvn_pkt_pool_cfg sc = { .count = 1024, .buf_size = 2048 };
	struct uvn_pkt_pool_cfg bc = { .count = 64, .buf_size = 65536 + 64 };

	if (uvn_vq_drv_create(&dc, &b->drv) || uvn_vq_dev_create(&vc, &b->dev) ||
	    uvn_pkt_pool_create(&sc, &b->small) || uvn_pkt_pool_create(&bc, &b->big)) {
		fprintf(stderr, "setup failed\n");
		exit(1);
	}
	uvn_netdev_q_init(&b->q, b->dev, features, b->tx);
	b->bufs = aligned_alloc(4096, (size_t)NUM * 4096);
	memset(b->bufs, 0, (size_t)NUM * 4096);
}

static void post(struct bench *b, unsigned n)
{
	static unsigned slot;

	for (unsigned i = 0; i < n; i++) {
		uint8_t *buf = b->bufs + (size_t)(slot++ % NUM) * 4096;
		struct uvn_sg sg = { (uintptr_t)buf, b->tx ? UVN_NET_HDR_LEN + b->size : 4096 };

		if (b->tx)
			buf[UVN_NET_HDR_LEN] = 2; /* a unicast destination */
		if (uvn_vq_drv_add(b->drv, &sg, b->tx ? 1 : 0, b->tx ? 0 : 1, buf, 0))
			break;
	}
	uvn_vq_drv_kick_prepare(b->drv);
}

static void reclaim(struct bench *b)
{
	struct uvn_vq_done done[BURST];

	while (uvn_vq_drv_get_used(b->drv, done, BURST) > 0)
		;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' }, { "size", required_argument, NULL, 's' },
		{ "frames", required_argument, NULL, 'n' }, { "mrg", required_argument, NULL, 'm' },
		{ "packed", no_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t features = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF;
	unsigned long frames = 10000000, moved = 0;
	struct bench b = { .size = 64, .tx = true };
	struct uvn_pkt *pkts[BURST];
	uint64_t t0, t1;
	int c;

	while ((c = getopt_long(argc, argv, "d:s:n:m:ph", opts, NULL)) != -1) {
		switch (c) {
		case 'd': b.tx = strcmp(optarg, "rx"); break;
		case 's': b.size = (uint32_t)atoi(optarg); break;
		case 'n': frames = strtoul(optarg, NULL, 10); break;
		case 'm': if (!strcmp(optarg, "off")) features &= ~(1ull << VIRTIO_NET_F_MRG_RXBUF); break;
		case 'p': features |= 1ull << VIRTIO_F_RING_PACKED; break;
		default:
			puts("uvnet-devbench [--dir tx|rx] [--size N] [--frames N] [--mrg on|off] [--packed]");
			return c == 'h' ? 0 : 2;
		}
	}
	if (b.size < 60 || b.size > 4000) {
		fprintf(stderr, "--size must be 60..4000\n");
		return 2;
	}
	setup(&b, features);
	if (!b.tx && uvn_pkt_alloc_bulk(b.small, pkts, BURST) != BURST)
		return 1;
	for (unsigned i = 0; !b.tx && i < BURST; i++) {
		memset(pkts[i]->buf, 0x5a, b.size);
		uvn_pkt_set_buf(pkts[i], b.size);
	}
	t0 = uvn_now_ns();
	while (moved < frames) {
		post(&b, BURST);
		if (b.tx) {
			unsigned n = uvn_netdev_tx(&b.q, b.small, b.big, pkts, BURST);

			uvn_pkt_free_bulk(pkts, n);
			moved += n;
		} else {
			moved += uvn_netdev_rx(&b.q, pkts, BURST);
		}
		reclaim(&b);
	}
	t1 = uvn_now_ns();
	printf("%s %u B %s: %lu frames, %.1f ns/frame (driver and device halves, one thread)\n",
	       b.tx ? "tx" : "rx", b.size, features & (1ull << VIRTIO_F_RING_PACKED) ? "packed" : "split",
	       moved, (double)(t1 - t0) / (double)moved);
	return 0;
}
