/* SPDX-License-Identifier: MIT */
/* The in-process backend of test_driver_be.h. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/device/vu_device.h"
#include "ring/ring.h"
#include "test_driver_be.h"
#include "vhost_user/msg.h"

#define MAXQ 8
#define MAX_REC 4096
#define MAX_PEND 4096

struct rec {
	uint8_t *data;
	unsigned len;
	uint8_t flags, gso;
};

struct tbe {
	struct tbe_cfg cfg;
	char dir[64], path[108];
	pthread_t th;
	atomic_bool stop, kill, corrupt, babble, stall;
	atomic_bool connected;
	struct uvn_dev *dev;
	_Atomic uint64_t features;
	struct uvn_pkt_pool *small, *big; /* frames injected by the test */
	int wake;                  /* eventfd: a request, unstall or stop for the thread */
	pthread_mutex_t mu;        /* guards rec, pending, counters read by the test */
	pthread_cond_t cv;         /* events moved or a request was served */
	uint64_t events;           /* see tbe_events() */
	struct rec rec[MAX_REC];
	unsigned nrec;
	struct { unsigned q; struct uvn_pkt *p; } pend[MAX_PEND];
	unsigned npend;
	_Atomic uint64_t txf;
	uint64_t rxf, drops;
	_Atomic unsigned ctrl_cmds, pairs_set;
};

uint64_t tbe_default_features(void)
{
	return 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MRG_RXBUF |
	       1ull << VIRTIO_RING_F_INDIRECT_DESC | 1ull << VIRTIO_RING_F_EVENT_IDX |
	       1ull << VIRTIO_F_RING_PACKED | 1ull << VIRTIO_F_IN_ORDER | 1ull << VIRTIO_NET_F_CSUM |
	       1ull << VIRTIO_NET_F_GUEST_CSUM;
}

static int set_features(void *ctx, uint64_t f)
{
	((struct tbe *)ctx)->features = f;
	return 0;
}

static int set_pairs(void *ctx, unsigned pairs)
{
	((struct tbe *)ctx)->pairs_set = pairs;
	return 0;
}

static const struct uvn_dev_ops ops = { .set_features = set_features, .set_pairs = set_pairs };

/* The callers below hold b->mu: the lists and the inject pools are the test's too. */
static void record(struct tbe *b, struct uvn_pkt *p)
{
	if (b->nrec < MAX_REC) {
		struct rec *r = &b->rec[b->nrec++];

		r->data = malloc(p->len);
		r->len = p->len;
		uvn_pkt_read(p, 0, r->data, p->len);
		r->flags = p->vnet.flags;
		r->gso = p->vnet.gso_type;
	}
}

static void add_pending(struct tbe *b, unsigned q, struct uvn_pkt *p)
{
	if (b->npend == MAX_PEND) {
		uvn_pkt_free(p);
		b->drops++;
		return;
	}
	b->pend[b->npend].q = q;
	b->pend[b->npend].p = p;
	b->npend++;
}

/* Pair @q takes @p: 1; drops it for good: 0; has no room or no ring: -1 (it waits). */
static int deliver_one(struct tbe *b, unsigned q, struct uvn_pkt *p)
{
	struct uvn_dev_q_stats st;
	uint64_t lost;

	if (uvn_dev_queue_stats(b->dev, 2 * q, &st) || st.broken)
		return -1;
	lost = st.drops - st.drop_nobuf;
	if (uvn_dev_tx_burst(b->dev, q, &p, 1) == 1)
		return 1;
	uvn_dev_queue_stats(b->dev, 2 * q, &st);
	return st.drops - st.drop_nobuf != lost ? 0 : -1;
}

/* Frames towards the driver, in order per queue; what does not fit waits. */
static void deliver(struct tbe *b)
{
	unsigned keep = 0;
	bool blocked[MAXQ] = { false };

	for (unsigned i = 0; i < b->npend; i++) {
		unsigned q = b->pend[i].q;
		int r = blocked[q] ? -1 : deliver_one(b, q, b->pend[i].p);

		if (r < 0) {
			b->pend[keep++] = b->pend[i];
			blocked[q] = true;
			continue;
		}
		if (r)
			b->rxf++;
		else
			b->drops++;
		uvn_pkt_free(b->pend[i].p);
	}
	b->npend = keep;
}

/* Called with b->mu held: wake whoever waits in tbe_wait() or request(). */
static void event(struct tbe *b)
{
	b->events++;
	pthread_cond_broadcast(&b->cv);
}

static void process(struct tbe *b)
{
	struct uvn_pkt *pkts[32];
	uint64_t before;
	int cmds;

	pthread_mutex_lock(&b->mu);
	before = b->txf + b->rxf + b->drops + b->ctrl_cmds;
	for (unsigned q = 0; q < b->cfg.pairs; q++) {
		unsigned n = uvn_dev_rx_burst(b->dev, q, pkts, 32);

		for (unsigned i = 0; i < n; i++) {
			b->txf++;
			if (b->cfg.mode == TBE_SINK) {
				record(b, pkts[i]);
				uvn_pkt_free(pkts[i]);
			} else {
				add_pending(b, q, pkts[i]);
			}
		}
	}
	cmds = uvn_dev_ctrl(b->dev);
	if (cmds > 0)
		b->ctrl_cmds += (unsigned)cmds;
	deliver(b);
	if (b->txf + b->rxf + b->drops + b->ctrl_cmds != before)
		event(b);
	pthread_mutex_unlock(&b->mu);
}

static void corrupt(struct tbe *b)
{
	struct uvn_netdev_q *nq = uvn_dev_netq(b->dev, 0);
	struct uvn_vq_chain ch = { .id = 0x7fff, .ndesc = 1 };

	if (!nq)
		return;
	/* An id far beyond the ring: the driver must refuse it. */
	uvn_vq_dev_push(nq->vq, &ch, 64);
	uvn_vq_dev_flush(nq->vq);
}

static void drop_conn(struct tbe *b)
{
	uvn_dev_disconnect(b->dev); /* stops every queue, closes the socket */
	atomic_store(&b->connected, false);
}

/* A request flag set by the test (see request()): clear it, then say so. */
static bool take(struct tbe *b, atomic_bool *flag)
{
	if (!atomic_exchange(flag, false))
		return false;
	pthread_mutex_lock(&b->mu);
	event(b);
	pthread_mutex_unlock(&b->mu);
	return true;
}

/* The device's features for @cfg: a control queue's commands, MQ with pairs. */
static uint64_t offer(const struct tbe_cfg *cfg)
{
	uint64_t f = cfg->features ? cfg->features : tbe_default_features();

	if (cfg->pairs > 1 || cfg->ctrl)
		f |= 1ull << VIRTIO_NET_F_CTRL_VQ | 1ull << VIRTIO_NET_F_CTRL_RX |
		     1ull << VIRTIO_NET_F_CTRL_MAC_ADDR;
	if (cfg->pairs > 1)
		f |= 1ull << VIRTIO_NET_F_MQ;
	return f;
}

/* A frontend connects or the session has a message. */
static void on_socket(struct tbe *b)
{
	if (uvn_dev_connected(b->dev)) {
		if (uvn_dev_handle(b->dev) < 0)
			drop_conn(b);
	} else if (uvn_dev_accept(b->dev) == 0) {
		atomic_store(&b->connected, true);
		pthread_mutex_lock(&b->mu);
		event(b);
		pthread_mutex_unlock(&b->mu);
	}
}

static void *thread_main(void *arg)
{
	struct tbe *b = arg;

	while (!atomic_load(&b->stop)) {
		bool up = uvn_dev_connected(b->dev);
		struct pollfd p[2] = {
			{ .fd = up ? uvn_dev_fd(b->dev) : uvn_dev_listen_fd(b->dev), .events = POLLIN },
			{ .fd = b->wake, .events = POLLIN },
		};
		bool busy = up && !atomic_load(&b->stall);
		uint64_t n;

		/* Busy: poll the rings like a PMD; idle: sleep until a message,
		 * a connection or a request from the test. */
		if (poll(p, 2, busy ? 0 : -1) <= 0)
			p[0].revents = p[1].revents = 0;
		if (p[1].revents && read(b->wake, &n, sizeof(n)) < 0)
			break;
		if (p[0].revents)
			on_socket(b);
		/* Each request is done before take() tells the test so. */
		if (atomic_load(&b->kill)) {
			drop_conn(b);
			take(b, &b->kill);
		}
		if (atomic_load(&b->corrupt)) {
			corrupt(b);
			take(b, &b->corrupt);
		}
		if (atomic_load(&b->babble)) {
			struct uvn_vu_msg m;

			uvn_vu_msg_init(&m, VHOST_USER_GET_FEATURES, VHOST_USER_VERSION, 0);
			if (uvn_dev_connected(b->dev))
				uvn_vu_msg_send(uvn_dev_fd(b->dev), &m);
			take(b, &b->babble);
		}
		if (busy)
			process(b);
	}
	drop_conn(b);
	return NULL;
}

struct tbe *tbe_start(const struct tbe_cfg *cfg, const char **path)
{
	struct uvn_pkt_pool_cfg sc = { .count = 1024, .buf_size = 2048, .name = "tbe-small" };
	struct uvn_pkt_pool_cfg bc = { .count = 64, .buf_size = 65536 + 128, .name = "tbe-big" };
	struct uvn_dev_cfg dc = { .path = NULL };
	struct tbe *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->cfg = *cfg;
	if (!b->cfg.pairs)
		b->cfg.pairs = 1;
	snprintf(b->dir, sizeof(b->dir), "/tmp/uvn-drvtest-XXXXXX");
	if (!mkdtemp(b->dir))
		goto fail;
	snprintf(b->path, sizeof(b->path), "%s/vu.sock", b->dir);
	dc = (struct uvn_dev_cfg){
		.path = b->path, .queue_pairs = b->cfg.pairs, .ctrl = cfg->ctrl,
		.features = offer(&b->cfg), .protocol_features = cfg->protocol,
		.rx_pkts = 1024, .name = "test-backend", .ops = &ops, .ctx = b,
	};
	if (uvn_dev_create(&dc, &b->dev))
		goto fail;
	if (uvn_pkt_pool_create(&sc, &b->small) || uvn_pkt_pool_create(&bc, &b->big))
		goto fail;
	b->wake = eventfd(0, EFD_CLOEXEC);
	if (b->wake < 0)
		goto fail;
	pthread_mutex_init(&b->mu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&b->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	atomic_store(&b->stall, cfg->stall);
	if (pthread_create(&b->th, NULL, thread_main, b))
		goto fail;
	*path = b->path;
	return b;
fail:
	free(b);
	return NULL;
}

static void wake(struct tbe *b)
{
	uint64_t one = 1;

	if (write(b->wake, &one, sizeof(one)) != sizeof(one))
		abort();
}

void tbe_stop(struct tbe *b)
{
	atomic_store(&b->stop, true);
	wake(b);
	pthread_join(b->th, NULL);
	for (unsigned i = 0; i < b->npend; i++)
		uvn_pkt_free(b->pend[i].p);
	for (unsigned i = 0; i < b->nrec; i++)
		free(b->rec[i].data);
	uvn_dev_destroy(b->dev); /* after the packets of its pools went back */
	uvn_pkt_pool_destroy(b->small);
	uvn_pkt_pool_destroy(b->big);
	rmdir(b->dir);
	close(b->wake);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

static uint64_t locked_u64(struct tbe *b, const uint64_t *v)
{
	uint64_t r;

	pthread_mutex_lock(&b->mu);
	r = *v;
	pthread_mutex_unlock(&b->mu);
	return r;
}

uint64_t tbe_tx_frames(struct tbe *b)
{
	return atomic_load(&b->txf);
}

uint64_t tbe_rx_frames(struct tbe *b)
{
	return locked_u64(b, &b->rxf);
}

uint64_t tbe_drops(struct tbe *b)
{
	return locked_u64(b, &b->drops);
}

int tbe_frame(struct tbe *b, unsigned i, void *buf, unsigned cap)
{
	int len = -1;

	pthread_mutex_lock(&b->mu);
	if (i < b->nrec && b->rec[i].len <= cap) {
		memcpy(buf, b->rec[i].data, b->rec[i].len);
		len = (int)b->rec[i].len;
	}
	pthread_mutex_unlock(&b->mu);
	return len;
}

int tbe_frame_hdr(struct tbe *b, unsigned i, uint8_t *flags, uint8_t *gso_type)
{
	int r = -1;

	pthread_mutex_lock(&b->mu);
	if (i < b->nrec) {
		*flags = b->rec[i].flags;
		*gso_type = b->rec[i].gso;
		r = 0;
	}
	pthread_mutex_unlock(&b->mu);
	return r;
}

void tbe_inject(struct tbe *b, unsigned q, const void *frame, unsigned len)
{
	struct uvn_pkt *p;

	pthread_mutex_lock(&b->mu);
	p = uvn_pkt_alloc(len <= 2048 ? b->small : b->big);
	if (p) {
		memcpy(p->buf, frame, len);
		uvn_pkt_set_buf(p, len);
		add_pending(b, q, p);
	}
	pthread_mutex_unlock(&b->mu);
}

unsigned tbe_pending(struct tbe *b)
{
	unsigned n;

	pthread_mutex_lock(&b->mu);
	n = b->npend;
	pthread_mutex_unlock(&b->mu);
	return n;
}

void tbe_unstall(struct tbe *b)
{
	atomic_store(&b->stall, false);
	wake(b);
}

/* Ask the thread to do something and wait until it has. */
static void request(struct tbe *b, atomic_bool *flag)
{
	atomic_store(flag, true);
	wake(b);
	pthread_mutex_lock(&b->mu);
	while (atomic_load(flag))
		pthread_cond_wait(&b->cv, &b->mu);
	pthread_mutex_unlock(&b->mu);
}

void tbe_kill(struct tbe *b)
{
	request(b, &b->kill);
}

void tbe_corrupt(struct tbe *b)
{
	request(b, &b->corrupt);
}

void tbe_babble(struct tbe *b)
{
	request(b, &b->babble);
}

uint64_t tbe_events(struct tbe *b)
{
	return locked_u64(b, &b->events);
}

bool tbe_wait(struct tbe *b, uint64_t seen)
{
	struct timespec end;
	bool moved;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 20;
	pthread_mutex_lock(&b->mu);
	while (b->events == seen && pthread_cond_timedwait(&b->cv, &b->mu, &end) == 0)
		;
	moved = b->events != seen;
	pthread_mutex_unlock(&b->mu);
	return moved;
}

bool tbe_wait_tx_frames(struct tbe *b, uint64_t n)
{
	for (;;) {
		uint64_t seen = tbe_events(b);

		if (tbe_tx_frames(b) >= n)
			return true;
		if (!tbe_wait(b, seen))
			return false;
	}
}

unsigned tbe_ctrl_cmds(struct tbe *b)
{
	return atomic_load(&b->ctrl_cmds);
}

unsigned tbe_pairs_set(struct tbe *b)
{
	return atomic_load(&b->pairs_set);
}

bool tbe_connected(struct tbe *b)
{
	return atomic_load(&b->connected);
}

uint64_t tbe_features(struct tbe *b)
{
	return atomic_load(&b->features);
}
