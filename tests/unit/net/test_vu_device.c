/* SPDX-License-Identifier: MIT */
/*
 * <uvnet/device.h> with a scripted frontend (fake_fe) on its socket:
 * - a config with reserved words set (its own or its ops'), no queue
 *   pair or too many, or an offer the device cannot keep is refused;
 * - the device listens on its path and takes one frontend at a time;
 * - the rings QEMU sets up are reported ready, a frame the guest sends
 *   comes out of uvn_dev_rx_burst() and its buffer goes back, a packet
 *   given to uvn_dev_tx_burst() lands in the guest's RX buffer behind a
 *   virtio-net header, one without a buffer is a counted drop;
 * - when the session ends every ring is reported stopped and the data
 *   path finds nothing;
 * - a ring paused and resumed starts every counter again, the
 *   notifications its event index spared too;
 * - features the application refuses are not the device's;
 * - a disabled TX ring is drained, a chain longer than any iovec array
 *   included.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>

#include "fake_fe.h"
#include "net/device/vu_device.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))
#define RING 256
#define HDR 12            /* virtio-net header, VERSION_1 */
#define FRAME_LEN 60
#define TX_OFF 0x1000     /* the guest's TX buffer: header and frame */
#define RX_OFF 0x2000     /* its RX buffer */
#define RX_LEN 2048

struct rig {
	char path[64];
	struct uvn_dev *d;
	struct fe f;
	unsigned ready[UVN_DEV_CTRL_RING + 1], stopped[UVN_DEV_CTRL_RING + 1];
	bool refuse;             /* ops->set_features refuses */
};

static void on_ready(void *ctx, unsigned ring, bool ready)
{
	struct rig *r = ctx;

	assert_true(ring <= UVN_DEV_CTRL_RING);
	if (ready)
		r->ready[ring]++;
	else
		r->stopped[ring]++;
}

static int on_features(void *ctx, uint64_t features)
{
	struct rig *r = ctx;

	(void)features;
	return r->refuse ? -EPERM : 0;
}

static const struct uvn_dev_ops ops = { .queue_ready = on_ready, .set_features = on_features };

static void cfg_of(struct rig *r, struct uvn_dev_cfg *c)
{
	snprintf(r->path, sizeof(r->path), "/tmp/h5-uvn-dev-%d.sock", (int)getpid());
	*c = (struct uvn_dev_cfg){ .path = r->path, .queue_pairs = 1, .ops = &ops, .ctx = r };
}

/* A device with a frontend on its socket, nothing negotiated. */
static void rig_attach(struct rig *r)
{
	struct uvn_dev_cfg c;
	int sock;

	memset(r, 0, sizeof(*r));
	cfg_of(r, &c);
	assert_int_equal(uvn_dev_create(&c, &r->d), 0);
	sock = uvn_vu_connect(r->path);
	assert_true(sock >= 0);
	assert_false(uvn_dev_connected(r->d));
	assert_int_equal(uvn_dev_accept(r->d), 0);
	assert_true(uvn_dev_connected(r->d));
	assert_true(uvn_dev_fd(r->d) >= 0);
	fe_attach(&r->f, sock, uvn_dev_backend(r->d), NET_FEATURES);
}

/* A device with QEMU's set-up done on its socket: pair 0 ready. */
static void rig_open(struct rig *r)
{
	rig_attach(r);
	fe_negotiate_qemu(&r->f, RING);
}

static void rig_close(struct rig *r)
{
	fe_close(&r->f);
	uvn_dev_destroy(r->d);
}

static void test_cfg(void **state)
{
	struct uvn_dev_ops later = { .queue_ready = on_ready };
	struct uvn_dev_cfg c;
	struct uvn_dev *d;
	struct rig r;
	struct stat st;

	(void)state;
	cfg_of(&r, &c);
	c.reserved[6] = 1;
	assert_int_equal(uvn_dev_create(&c, &d), -EINVAL);
	c.reserved[6] = 0;
	/* a callback of a later release this one does not know */
	later.reserved[3] = &later;
	c.ops = &later;
	assert_int_equal(uvn_dev_create(&c, &d), -EINVAL);
	c.ops = &ops;
	c.queue_pairs = 0;
	assert_int_equal(uvn_dev_create(&c, &d), -EINVAL);
	c.queue_pairs = UVN_DEV_MAX_QUEUE_PAIRS + 1;
	assert_int_equal(uvn_dev_create(&c, &d), -EINVAL);
	c.queue_pairs = 1;
	/* offers the device could not keep: no VERSION_1 (another header
	 * layout), a feature it does not implement, a control queue it has not */
	c.features = uvn_dev_default_features(1) & ~(1ull << VIRTIO_F_VERSION_1);
	assert_int_equal(uvn_dev_create(&c, &d), -EINVAL);
	c.features = uvn_dev_default_features(1) | 1ull << VIRTIO_NET_F_HASH_REPORT;
	assert_int_equal(uvn_dev_create(&c, &d), -EINVAL);
	c.features = uvn_dev_default_features(1) | 1ull << VIRTIO_NET_F_CTRL_VQ;
	assert_int_equal(uvn_dev_create(&c, &d), -EINVAL);
	c.ctrl = true; /* with its queue, the same offer is fine */
	assert_int_equal(uvn_dev_create(&c, &d), 0);
	uvn_dev_destroy(d);
	c.ctrl = false;
	c.features = 0;
	assert_int_equal(uvn_dev_create(&c, &d), 0);
	assert_true(uvn_dev_listen_fd(d) >= 0);
	assert_int_equal(stat(r.path, &st), 0);
	assert_int_equal(uvn_dev_fd(d), -1);
	assert_int_equal(uvn_dev_rx_burst(d, 0, NULL, 0), 0);
	uvn_dev_destroy(d);
	assert_int_equal(stat(r.path, &st), -1);
}

/* One frontend per device; the session goes on. */
static void test_second_frontend(void **state)
{
	struct rig r;
	int sock;

	(void)state;
	rig_open(&r);
	sock = uvn_vu_connect(r.path);
	assert_true(sock >= 0);
	assert_int_equal(uvn_dev_accept(r.d), -EBUSY);
	assert_true(uvn_dev_connected(r.d));
	assert_true(uvn_dev_pair_ready(r.d, 0));
	close(sock);
	rig_close(&r);
}

/* The guest sends one frame on its TX ring (ring 1). */
static void guest_sends(struct rig *r, struct uvn_vq_drv *drv)
{
	struct uvn_sg sg = { .addr = r->f.gpa + TX_OFF, .len = HDR + FRAME_LEN };

	memset(r->f.mem + TX_OFF, 0, HDR);
	memset(r->f.mem + TX_OFF + HDR, 0xab, FRAME_LEN);
	assert_int_equal(uvn_vq_drv_add(drv, &sg, 1, 0, drv, 0), 0);
	(void)uvn_vq_drv_kick_prepare(drv);
}

static void test_guest_tx(void **state)
{
	struct uvn_vq_drv *drv;
	struct uvn_dev_q_stats st;
	struct uvn_pkt *pkts[4];
	struct uvn_vq_done done;
	uint8_t frame[FRAME_LEN];
	struct rig r;

	(void)state;
	rig_open(&r);
	assert_int_equal(r.ready[0], 1);
	assert_int_equal(r.ready[1], 1);
	assert_true(uvn_dev_pair_ready(r.d, 0));
	assert_true(uvn_dev_kick_fd(r.d, 0) >= 0);
	drv = fe_driver(&r.f, 1, RING);
	guest_sends(&r, drv);
	assert_int_equal(uvn_dev_rx_burst(r.d, 0, pkts, 4), 1);
	assert_int_equal(pkts[0]->len, FRAME_LEN);
	assert_int_equal(uvn_pkt_read(pkts[0], 0, frame, sizeof(frame)), FRAME_LEN);
	assert_memory_equal(frame, r.f.mem + TX_OFF + HDR, FRAME_LEN);
	uvn_pkt_free(pkts[0]);
	uvn_dev_rx_done(r.d, 0);
	assert_int_equal(uvn_vq_drv_get_used(drv, &done, 1), 1);
	assert_int_equal(uvn_dev_queue_stats(r.d, 1, &st), 0);
	assert_int_equal(st.packets, 1);
	assert_int_equal(st.bytes, FRAME_LEN);
	assert_int_equal(st.errors, 0);
	assert_false(st.broken);
	/* nothing more waiting: notifications back on */
	assert_true(uvn_dev_arm(r.d, 0));
	uvn_vq_drv_destroy(drv);
	rig_close(&r);
}

/* The guest posts its RX buffer (ring 0). */
static void guest_posts(struct rig *r, struct uvn_vq_drv *drv)
{
	struct uvn_sg sg = { .addr = r->f.gpa + RX_OFF, .len = RX_LEN };

	assert_int_equal(uvn_vq_drv_add(drv, &sg, 0, 1, drv, 0), 0);
	(void)uvn_vq_drv_kick_prepare(drv);
}

/* A packet of FRAME_LEN bytes, from a pool of its own (@pool). */
static struct uvn_pkt *one_frame(struct uvn_pkt_pool **pool)
{
	struct uvn_pkt_pool_cfg pc = { .count = 1, .buf_size = 2048 };
	struct uvn_pkt *p;

	assert_int_equal(uvn_pkt_pool_create(&pc, pool), 0);
	p = uvn_pkt_alloc(*pool);
	assert_non_null(p);
	memset(p->buf, 0xcd, FRAME_LEN);
	uvn_pkt_set_buf(p, FRAME_LEN);
	return p;
}

static void test_guest_rx(void **state)
{
	struct uvn_pkt_pool *pool;
	struct uvn_dev_q_stats st;
	struct uvn_vq_done done;
	struct uvn_vq_drv *drv;
	struct uvn_pkt *p;
	struct rig r;

	(void)state;
	rig_open(&r);
	drv = fe_driver(&r.f, 0, RING);
	guest_posts(&r, drv);
	p = one_frame(&pool);
	assert_int_equal(uvn_dev_tx_burst(r.d, 0, &p, 1), 1);
	assert_int_equal(uvn_vq_drv_get_used(drv, &done, 1), 1);
	assert_int_equal(done.len, HDR + FRAME_LEN);
	assert_memory_equal(r.f.mem + RX_OFF + HDR, p->buf, FRAME_LEN);
	/* no buffer left: dropped and counted, never waited for */
	assert_int_equal(uvn_dev_tx_burst(r.d, 0, &p, 1), 0);
	assert_int_equal(uvn_dev_queue_stats(r.d, 0, &st), 0);
	assert_int_equal(st.packets, 1);
	assert_int_equal(st.drops, 1);
	assert_int_equal(st.drop_nobuf, 1);
	uvn_pkt_free(p);
	/* rings that do not exist: one pair, no control queue */
	assert_int_equal(uvn_dev_queue_stats(r.d, 2, &st), -EINVAL);
	assert_int_equal(uvn_dev_queue_stats(r.d, UVN_DEV_CTRL_RING, &st), -EINVAL);
	assert_int_equal(uvn_dev_ctrl(r.d), -ENODEV);
	uvn_vq_drv_destroy(drv);
	rig_close(&r);
	uvn_pkt_pool_destroy(pool);
}

/*
 * QEMU disables and enables a ring around changes (SET_VRING_ENABLE 0, 1):
 * the ring stops and is ready again, and its counters start again, as
 * uvnetd adds them up at each stop. The notifications the guest's event
 * index spared are the ring's own count: taken as they were, a resumed
 * ring reported its earlier ones again, and uvnetd counted them twice.
 */
static void test_stats_across_pause(void **state)
{
	struct uvn_pkt_pool *pool;
	struct uvn_dev_q_stats st;
	struct uvn_vq_drv *drv;
	struct uvn_pkt *p;
	struct rig r;

	(void)state;
	rig_open(&r);
	p = one_frame(&pool);
	drv = fe_driver(&r.f, 0, RING);
	/* The guest never moves its used_event from 0: the first frame
	 * notifies it, the second is spared. */
	for (unsigned i = 0; i < 2; i++) {
		guest_posts(&r, drv);
		assert_int_equal(uvn_dev_tx_burst(r.d, 0, &p, 1), 1);
	}
	assert_int_equal(uvn_dev_queue_stats(r.d, 0, &st), 0);
	assert_int_equal(st.packets, 2);
	assert_int_equal(st.calls, 1);
	assert_int_equal(st.calls_suppressed, 1);
	fe_vring_state(&r.f, VHOST_USER_SET_VRING_ENABLE, 0, 0);
	assert_int_equal(r.stopped[0], 1);
	fe_vring_state(&r.f, VHOST_USER_SET_VRING_ENABLE, 0, 1);
	assert_int_equal(r.ready[0], 2);
	assert_int_equal(uvn_dev_queue_stats(r.d, 0, &st), 0);
	assert_int_equal(st.packets, 0);
	assert_int_equal(st.calls, 0);
	assert_int_equal(st.calls_suppressed, 0);
	/* and counting goes on from there */
	guest_posts(&r, drv);
	assert_int_equal(uvn_dev_tx_burst(r.d, 0, &p, 1), 1);
	assert_int_equal(uvn_dev_queue_stats(r.d, 0, &st), 0);
	assert_int_equal(st.packets, 1);
	assert_int_equal(st.calls_suppressed, 1);
	uvn_pkt_free(p);
	uvn_vq_drv_destroy(drv);
	rig_close(&r);
	uvn_pkt_pool_destroy(pool);
}

/* The frontend sets features, then others the application refuses: the
 * session ends, and the device's features stay the ones it had (the
 * backend resumes its rings with those), not the refused ones. */
static void test_features_refused(void **state)
{
	uint64_t first = NET_FEATURES, more = NET_FEATURES | 1ull << VIRTIO_NET_F_CSUM;
	struct rig r;

	(void)state;
	rig_attach(&r);
	assert_int_equal(uvn_dev_features(r.d), 0);
	assert_int_equal(fe_send(&r.f, VHOST_USER_SET_FEATURES, VHOST_USER_VERSION, &first, 8, NULL, 0),
			 0);
	assert_int_equal(uvn_dev_features(r.d), NET_FEATURES);
	r.refuse = true;
	assert_true(fe_send(&r.f, VHOST_USER_SET_FEATURES, VHOST_USER_VERSION, &more, 8, NULL, 0) < 0);
	assert_int_equal(uvn_dev_features(r.d), NET_FEATURES);
	rig_close(&r);
}

/*
 * A TX ring QEMU disabled is drained (its frames dropped) so that the guest
 * gets its buffers back. A legal chain of more buffers than the netdev's
 * iovec array must go back too: popped into that array it is IOV_FULL and
 * stays, and the drain stopped at it, every chain behind it held.
 */
static void test_discard_long_chain(void **state)
{
	enum { BIG = 2048, LONG = UVN_NETDEV_MAX_IOV + 8 };
	static struct uvn_sg sg[LONG];
	struct uvn_vq_done done[2];
	struct uvn_vq_drv *drv;
	struct rig r;

	(void)state;
	rig_attach(&r);
	fe_negotiate_qemu(&r.f, BIG);
	drv = fe_driver(&r.f, 1, BIG);
	for (unsigned i = 0; i < LONG; i++)
		sg[i] = (struct uvn_sg){ .addr = r.f.gpa + TX_OFF, .len = HDR + FRAME_LEN };
	assert_int_equal(uvn_vq_drv_add(drv, sg, LONG, 0, &sg[0], 0), 0);
	assert_int_equal(uvn_vq_drv_add(drv, sg, 1, 0, &sg[1], 0), 0);
	(void)uvn_vq_drv_kick_prepare(drv);
	fe_vring_state(&r.f, VHOST_USER_SET_VRING_ENABLE, 1, 0);
	assert_int_equal(r.stopped[1], 1);
	assert_int_equal(uvn_dev_discard_disabled(r.d, 64), 2);
	assert_int_equal(uvn_vq_drv_get_used(drv, done, 2), 2);
	assert_ptr_equal(done[0].token, &sg[0]);
	assert_ptr_equal(done[1].token, &sg[1]);
	assert_int_equal(uvn_dev_discard_disabled(r.d, 64), 0);
	uvn_vq_drv_destroy(drv);
	rig_close(&r);
}

static void test_disconnect(void **state)
{
	struct uvn_dev_q_stats st;
	struct uvn_pkt *pkts[4];
	struct rig r;

	(void)state;
	rig_open(&r);
	uvn_dev_disconnect(r.d);
	assert_false(uvn_dev_connected(r.d));
	assert_int_equal(r.stopped[0], 1);
	assert_int_equal(r.stopped[1], 1);
	assert_false(uvn_dev_pair_ready(r.d, 0));
	assert_int_equal(uvn_dev_kick_fd(r.d, 0), -1);
	assert_int_equal(uvn_dev_rx_burst(r.d, 0, pkts, 4), 0);
	assert_int_equal(uvn_dev_queue_stats(r.d, 1, &st), -ENODEV);
	assert_int_equal(uvn_dev_handle(r.d), -ENOTCONN);
	rig_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfg),
		cmocka_unit_test(test_second_frontend),
		cmocka_unit_test(test_guest_tx),
		cmocka_unit_test(test_guest_rx),
		cmocka_unit_test(test_stats_across_pause),
		cmocka_unit_test(test_features_refused),
		cmocka_unit_test(test_discard_long_chain),
		cmocka_unit_test(test_disconnect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
