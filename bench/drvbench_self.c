/* SPDX-License-Identifier: MIT */
/*
 * uvnet-drvbench-self: the driver against the project's own device half in a
 * thread of the same process (a vhost-user backend on a private socket:
 * guest tx is consumed and dropped, guest rx is filled with 64-byte
 * frames). Meant for instruction counts of the driver's data path, which
 * do not depend on the machine's load:
 *
 *   valgrind --tool=callgrind --toggle-collect=uvn_tx_burst --toggle-collect=uvn_tx_reclaim \
 *       uvnet-drvbench-self --dir tx --packets 200000
 *   valgrind --tool=callgrind --toggle-collect=uvn_rx_burst --toggle-collect=free_received \
 *       uvnet-drvbench-self --dir rx --packets 200000
 * --fill copy|build writes the Ethernet/IPv4/UDP headers into every frame
 * sent (in fill_frames(), to count with --toggle-collect=fill_frames): a
 * copy of headers built once (testpmd's txonly, uvnet-drvbench, uvnet-perf
 * stream) or the frame builder run per frame (uvn_frame_udp4()).
 * The backend thread answers the vhost-user messages; once the driver is up
 * the device's data path (<uvnet/device.h>) runs in the main thread between the driver's
 * bursts (it drains or fills the whole ring), so every burst is a full one
 * and the counts divided by the packets printed are the per-packet cost.
 * It also prints packets/s, which on its own means little (one thread).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uvnet/device.h>
#include <uvnet/driver.h>

#include "net/frame.h"
#include "util/sys.h"

enum { FILL_NONE, FILL_COPY, FILL_BUILD };

struct dev {
	char dir[64], path[108];
	pthread_t th;
	atomic_bool stop;
	bool tx;                     /* the driver sends */
	unsigned size;               /* frame bytes */
	struct uvn_dev *vd;
	struct uvn_pkt_pool *small;  /* frames for the driver to receive */
};

/* The device's data path, run by the main thread between bursts. */
static void dev_step(struct dev *d)
{
	struct uvn_pkt *pkts[32];
	unsigned n;

	if (d->tx) {
		do {
			n = uvn_dev_rx_burst(d->vd, 0, pkts, 32);
			uvn_pkt_free_bulk(pkts, n);
		} while (n);
		return;
	}
	do {
		unsigned got = uvn_pkt_alloc_bulk(d->small, pkts, 32);

		for (unsigned i = 0; i < got; i++) {
			memset(pkts[i]->buf, 0x11, d->size);
			uvn_pkt_set_buf(pkts[i], d->size);
		}
		n = uvn_dev_tx_burst(d->vd, 0, pkts, got);
		uvn_pkt_free_bulk(pkts, got);
	} while (n == 32);
}

/* The received frames back to the driver: a function of its own, so that
 * callgrind can count it (--toggle-collect) apart from the device's frees. */
static __attribute__((noinline)) void free_received(struct uvn_pkt **pkts, unsigned n)
{
	uvn_pkt_free_bulk(pkts, n);
}

static void build_headers(uint8_t *b, unsigned size)
{
	static const uint8_t dst[6] = { 0x02, 0, 0, 0, 0, 0x02 }, src[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	const struct uvn_frame_addr a = { .dst = dst, .src = src, .sport = 9, .dport = 9 };

	uvn_frame_udp4(b, &a, size);
}

/* --fill: the sender's per-frame work, a function of its own for callgrind. */
static __attribute__((noinline)) void fill_frames(struct uvn_pkt **pkts, unsigned n, int fill,
						  const uint8_t *hdr, unsigned size)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t *b = pkts[i]->seg[0].iov_base;

		if (fill == FILL_COPY)
			memcpy(b, hdr, UVN_FRAME_UDP_HDR);
		else
			build_headers(b, size);
	}
}

/* The backend thread: the vhost-user messages of one frontend. */
static void *dev_main(void *arg)
{
	struct dev *d = arg;

	while (!atomic_load(&d->stop)) {
		bool up = uvn_dev_connected(d->vd);
		struct pollfd p = { .fd = up ? uvn_dev_fd(d->vd) : uvn_dev_listen_fd(d->vd),
				    .events = POLLIN };

		if (poll(&p, 1, up ? 0 : 10) <= 0)
			continue;
		if (!up) {
			if (uvn_dev_accept(d->vd))
				return NULL;
		} else if (uvn_dev_handle(d->vd) < 0) {
			uvn_dev_disconnect(d->vd);
		}
	}
	uvn_dev_disconnect(d->vd);
	return NULL;
}

static void print_stats(struct uvn_drv *drv, struct dev *d)
{
	struct uvn_drv_txq_stats ts;
	struct uvn_drv_rxq_stats rs;
	struct uvn_dev_q_stats ds = { 0 };

	uvn_drv_rxq_stats(drv, 0, &rs);
	printf("rx bufs_used %llu mrg_multi %llu buf_len %u\n", (unsigned long long)rs.bufs_used,
	       (unsigned long long)rs.mrg_multi, uvn_drv_mrg_buf_len(drv, 0));
	uvn_drv_txq_stats(drv, 0, &ts);
	uvn_dev_queue_stats(d->vd, 1, &ds);
	printf("bursts %llu full %llu reclaim_runs %llu reclaimed %llu dev_tx %llu drops %llu\n",
	       (unsigned long long)ts.bursts, (unsigned long long)ts.full,
	       (unsigned long long)ts.reclaim_runs, (unsigned long long)ts.reclaimed,
	       (unsigned long long)ds.packets, (unsigned long long)ds.drops);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' }, { "packets", required_argument, NULL, 'n' },
		{ "opt", required_argument, NULL, 'o' }, { "segs", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'z' }, { "fill", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct uvn_pkt_pool_cfg sc = { .count = 4096, .buf_size = 2048 };
	struct uvn_dev_cfg dc = {
		.queue_pairs = 1, .rx_pkts = 4096, .name = "self",
		.features = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF |
			    1ull << VIRTIO_RING_F_INDIRECT_DESC | 1ull << VIRTIO_RING_F_EVENT_IDX |
			    1ull << VIRTIO_F_RING_PACKED | 1ull << VIRTIO_F_IN_ORDER,
	};
	uint64_t want = 200000, done = 0, t0;
	struct uvn_drv_cfg cfg;
	struct uvn_drv *drv;
	struct dev d = { .tx = true, .size = 64 };
	uint8_t hdr[UVN_FRAME_UDP_HDR];
	unsigned segs = 1;
	int o, r, fill = FILL_NONE;

	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	while ((o = getopt_long(argc, argv, "d:n:o:s:z:f:", lo, NULL)) != -1) {
		if (o == 'f' && (!strcmp(optarg, "copy") || !strcmp(optarg, "build")))
			fill = !strcmp(optarg, "copy") ? FILL_COPY : FILL_BUILD;
		else if (o == 'z')
			d.size = (unsigned)atoi(optarg);
		else if (o == 'd')
			d.tx = !strcmp(optarg, "tx");
		else if (o == 'n')
			want = strtoull(optarg, NULL, 10);
		else if (o == 's')
			segs = (unsigned)atoi(optarg);
		else if (o != 'o' || uvn_drv_cfg_parse(&cfg, optarg, NULL))
			return 2;
	}
	if (!segs || segs > 4 || d.size < 60 || d.size > 1984)
		return 2;
	build_headers(hdr, d.size);
	snprintf(d.dir, sizeof(d.dir), "/tmp/uvn-drvself-XXXXXX");
	if (!mkdtemp(d.dir))
		return 1;
	snprintf(d.path, sizeof(d.path), "%s/vu.sock", d.dir);
	dc.path = d.path;
	if (uvn_dev_create(&dc, &d.vd) || uvn_pkt_pool_create(&sc, &d.small))
		return 1;
	pthread_create(&d.th, NULL, dev_main, &d);
	cfg.path = d.path;
	r = uvn_drv_open(&cfg, &drv);
	if (r) {
		fprintf(stderr, "open: %s\n", strerror(-r));
		return 1;
	}
	t0 = uvn_now_ns();
	while (done < want) {
		struct uvn_pkt *pkts[32];

		if (d.tx) {
			unsigned k = uvn_drv_tx_alloc(drv, 0, pkts, 32, d.size);

			if (fill)
				fill_frames(pkts, k, fill, hdr, d.size);
			for (unsigned i = 0; i < k && segs > 1; i++) {
				uint8_t *f = pkts[i]->seg[0].iov_base;
				unsigned per = d.size / segs;

				for (unsigned s = 0; s < segs; s++)
					pkts[i]->seg[s] = (struct iovec){ f + s * per,
									  s + 1 == segs ? d.size - s * per : per };
				pkts[i]->nseg = (uint16_t)segs;
			}
			r = uvn_tx_burst(drv, 0, pkts, k);
			if (r < 0)
				break;
			uvn_pkt_free_bulk(pkts + r, k - (unsigned)r);
			if (!k || (unsigned)r < k)
				uvn_tx_reclaim(drv, 0);
		} else {
			r = uvn_rx_burst(drv, 0, pkts, 32);
			if (r < 0)
				break;
			free_received(pkts, (unsigned)r);
		}
		done += (unsigned)r;
		dev_step(&d);
	}
	printf("%s packets %llu in %.3f s\n", d.tx ? "tx" : "rx", (unsigned long long)done,
	       (double)(uvn_now_ns() - t0) / 1e9);
	if (getenv("SELF_STATS"))
		print_stats(drv, &d);
	uvn_drv_close(drv);
	atomic_store(&d.stop, true);
	pthread_join(d.th, NULL);
	uvn_dev_destroy(d.vd);
	rmdir(d.dir);
	uvn_pkt_pool_destroy(d.small);
	return 0;
}
