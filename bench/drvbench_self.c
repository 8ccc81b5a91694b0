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
 * The backend thread answers the vhost-user messages; once the driver is up
 * the device's data path runs in the main thread between the driver's
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

#include <uvnet/driver.h>

#include "net/device/netdev.h"
#include "util/sys.h"
#include "vhost_user/backend.h"

struct dev {
	char dir[64], path[108];
	int lfd;
	pthread_t th;
	atomic_bool stop;
	bool tx;                     /* the driver sends */
	unsigned size;               /* frame bytes */
	struct uvn_vu_backend *be;
	struct uvn_netdev_q *q[2];   /* guest rx, guest tx */
	uint64_t features;
	struct uvn_pkt_pool *small, *big;
};

static void queue_ready(void *ctx, struct uvn_vu_queue *q, bool ready)
{
	struct dev *d = ctx;

	if (q->idx > 1)
		return;
	if (!ready) {
		free(d->q[q->idx]);
		d->q[q->idx] = NULL;
		return;
	}
	d->q[q->idx] = calloc(1, sizeof(struct uvn_netdev_q));
	uvn_netdev_q_init(d->q[q->idx], q->vq, d->features, q->idx == 1);
}

static int set_features(void *ctx, uint64_t f)
{
	((struct dev *)ctx)->features = f;
	return 0;
}

static const struct uvn_vu_device_ops ops = { .queue_ready = queue_ready, .set_features = set_features };

/* The device's data path, run by the main thread between bursts. */
static void dev_step(struct dev *d)
{
	struct uvn_pkt *pkts[32];
	unsigned n;

	if (d->tx && d->q[1]) {
		do {
			n = uvn_netdev_tx(d->q[1], d->small, d->big, pkts, 32);
			uvn_pkt_free_bulk(pkts, n);
		} while (n);
	}
	if (!d->tx && d->q[0]) {
		do {
			n = uvn_pkt_alloc_bulk(d->small, pkts, 32);
			for (unsigned i = 0; i < n; i++) {
				memset(pkts[i]->buf, 0x11, d->size);
				uvn_pkt_set_buf(pkts[i], d->size);
			}
			n = uvn_netdev_rx(d->q[0], pkts, n);
			uvn_pkt_free_bulk(pkts, 32);
		} while (n == 32);
	}
}

static void *dev_main(void *arg)
{
	struct dev *d = arg;
	struct uvn_pkt *pkts[32];

	while (!atomic_load(&d->stop)) {
		struct pollfd p = { .fd = d->be ? uvn_vu_backend_fd(d->be) : d->lfd, .events = POLLIN };

		if (poll(&p, 1, d->be ? 0 : 10) > 0) {
			if (!d->be) {
				struct uvn_vu_backend_cfg bc = {
					.features = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF |
						    1ull << VIRTIO_RING_F_INDIRECT_DESC |
						    1ull << VIRTIO_RING_F_EVENT_IDX | 1ull << VIRTIO_F_RING_PACKED |
						    1ull << VIRTIO_F_IN_ORDER,
					.queue_num = 2, .ops = &ops, .ctx = d, .name = "self",
				};
				int fd = uvn_vu_accept(d->lfd);

				if (fd < 0 || uvn_vu_backend_create(fd, &bc, &d->be))
					return NULL;
			} else if (uvn_vu_backend_handle(d->be) < 0) {
				uvn_vu_backend_destroy(d->be);
				d->be = NULL;
			}
		}
		(void)pkts;
	}
	if (d->be)
		uvn_vu_backend_destroy(d->be);
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' }, { "packets", required_argument, NULL, 'n' },
		{ "opt", required_argument, NULL, 'o' }, { "segs", required_argument, NULL, 's' },
		{ "size", required_argument, NULL, 'z' },
		{ NULL, 0, NULL, 0 },
	};
	struct uvn_pkt_pool_cfg sc = { .count = 4096, .buf_size = 2048 };
	struct uvn_pkt_pool_cfg bc = { .count = 16, .buf_size = 65536 + 128 };
	uint64_t want = 200000, done = 0, t0;
	struct uvn_drv_cfg cfg;
	struct uvn_drv *drv;
	struct dev d = { .tx = true, .size = 64 };
	unsigned segs = 1;
	int o, r;

	uvn_drv_cfg_init(&cfg);
	cfg.poll = true;
	while ((o = getopt_long(argc, argv, "d:n:o:s:z:", lo, NULL)) != -1) {
		if (o == 'z')
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
	snprintf(d.dir, sizeof(d.dir), "/tmp/uvn-drvself-XXXXXX");
	if (!mkdtemp(d.dir))
		return 1;
	snprintf(d.path, sizeof(d.path), "%s/vu.sock", d.dir);
	d.lfd = uvn_vu_listen(d.path);
	if (d.lfd < 0 || uvn_pkt_pool_create(&sc, &d.small) || uvn_pkt_pool_create(&bc, &d.big))
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
			uvn_pkt_free_bulk(pkts, (unsigned)r);
		}
		done += (unsigned)r;
		dev_step(&d);
	}
	printf("%s packets %llu in %.3f s\n", d.tx ? "tx" : "rx", (unsigned long long)done,
	       (double)(uvn_now_ns() - t0) / 1e9);
	if (getenv("SELF_STATS")) {
		struct uvn_drv_txq_stats ts;
		struct uvn_drv_rxq_stats rs;

		uvn_drv_rxq_stats(drv, 0, &rs);
		printf("rx bufs_used %llu mrg_multi %llu buf_len %u\n", (unsigned long long)rs.bufs_used,
		       (unsigned long long)rs.mrg_multi, uvn_drv_mrg_buf_len(drv, 0));
		uvn_drv_txq_stats(drv, 0, &ts);
		printf("bursts %llu full %llu reclaim_runs %llu reclaimed %llu dev_tx %llu nopkt %llu\n",
		       (unsigned long long)ts.bursts, (unsigned long long)ts.full,
		       (unsigned long long)ts.reclaim_runs, (unsigned long long)ts.reclaimed,
		       d.q[1] ? (unsigned long long)d.q[1]->st.packets : 0ull,
		       d.q[1] ? (unsigned long long)d.q[1]->st.drop_nopkt : 0ull);
	}
	uvn_drv_close(drv);
	atomic_store(&d.stop, true);
	pthread_join(d.th, NULL);
	close(d.lfd);
	unlink(d.path);
	rmdir(d.dir);
	uvn_pkt_pool_destroy(d.small);
	uvn_pkt_pool_destroy(d.big);
	return 0;
}
