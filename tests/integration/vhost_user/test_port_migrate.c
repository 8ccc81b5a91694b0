/* SPDX-License-Identifier: MIT */
/*
 * What a live migration needs of uvnetd's vhost-user port, with a scripted
 * frontend on its socket:
 *  - dirty logging of the writes the port makes outside the device's data
 *    path: the used entries the drain of a disabled TX ring publishes, and
 *    the notification fields (used flags, avail_event) it turns on and off;
 *  - SEND_RARP: offered (protocol feature RARP) by the port, declined by a
 *    backend whose device cannot send it; the port takes a RARP from the
 *    guest's MAC in through rx queue 0, once, as if the guest had sent it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>

#include "fake_fe.h"
#include "port/vhost_port.h"
#include "util/loop.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))
#define RING 256
#define FRAME_OFF 0x1000 /* a virtio-net header and a frame, in guest memory */
#define FRAME_LEN (12 + 60)
#define LOG_OFF 4096u
#define LOG_SIZE 40000u  /* pages up to 320000: beyond 0x40000000 + 2 MB */

struct rig {
	struct uvn_loop *loop;
	struct uvn_port *port;
	struct vhost_port *v;
	char path[64];
	struct fe f;
	int logfd;
	uint8_t *log;
};

/* A frontend connects to the port and sets it up as QEMU does. */
static void rig_connect(struct rig *r)
{
	int sock = uvn_vu_connect(r->path);

	assert_true(sock >= 0);
	while (!r->v->be)
		assert_true(uvn_loop_run_once(r->loop, 1000) >= 0);
	fe_attach(&r->f, sock, r->v->be, NET_FEATURES);
	fe_negotiate_qemu(&r->f, RING);
}

static void rig_open(struct rig *r)
{
	struct uvn_port_env env = { 0 };
	struct uvn_vhost_port_cfg cfg = { .queues = 1 };

	memset(r, 0, sizeof(*r));
	r->logfd = -1;
	snprintf(r->path, sizeof(r->path), "/tmp/migrate-port-%d.sock", (int)getpid());
	unlink(r->path);
	assert_int_equal(uvn_loop_create(&r->loop), 0);
	env.loop = r->loop;
	cfg.path = r->path;
	assert_int_equal(uvn_port_vhost_create(&cfg, &env, &r->port), 0);
	r->v = (struct vhost_port *)r->port;
	rig_connect(r);
}

static void rig_close(struct rig *r)
{
	fe_close(&r->f);
	r->port->ops->destroy(r->port);
	uvn_loop_destroy(r->loop);
	unlink(r->path);
	if (r->log) {
		munmap(r->log, LOG_OFF + LOG_SIZE);
		close(r->logfd);
	}
}

/* The ring's guest-physical layout (split, RING entries, at FE_RING_OFF). */
static uint64_t used_gpa(struct rig *r, unsigned idx)
{
	struct uvn_vq_layout lay;

	uvn_vq_layout(false, RING, &lay);
	return r->f.gpa + FE_RING_OFF(idx) + lay.device;
}

/* Migration starts: a log (SET_LOG_BASE), LOG_ALL, F_LOG on ring @idx. */
static void start_logging(struct rig *r, unsigned idx)
{
	struct uvn_vu_log d = { .mmap_size = LOG_SIZE, .mmap_offset = LOG_OFF };
	struct vhost_vring_addr a = { .index = idx, .flags = 1u << VHOST_VRING_F_LOG };
	struct uvn_vq_layout lay;
	struct uvn_vu_msg rep;

	r->logfd = memfd_create("dirty-log", MFD_CLOEXEC);
	assert_int_equal(ftruncate(r->logfd, LOG_OFF + LOG_SIZE), 0);
	r->log = mmap(NULL, LOG_OFF + LOG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, r->logfd, 0);
	assert_true(r->log != MAP_FAILED);
	assert_int_equal(fe_send(&r->f, VHOST_USER_SET_LOG_BASE, VHOST_USER_VERSION, &d, sizeof(d),
				 &r->logfd, 1), 0);
	assert_int_equal(fe_reply(&r->f, VHOST_USER_SET_LOG_BASE, &rep), 1);
	assert_int_equal(rep.p.u64, 0);
	assert_int_equal(fe_set_u64_ack(&r->f, VHOST_USER_SET_FEATURES,
					r->f.features | (1ull << VHOST_F_LOG_ALL)), 0);
	uvn_vq_layout(false, RING, &lay);
	a.desc_user_addr = (uint64_t)(uintptr_t)(r->f.mem + FE_RING_OFF(idx) + lay.desc);
	a.avail_user_addr = (uint64_t)(uintptr_t)(r->f.mem + FE_RING_OFF(idx) + lay.driver);
	a.used_user_addr = (uint64_t)(uintptr_t)(r->f.mem + FE_RING_OFF(idx) + lay.device);
	a.log_guest_addr = used_gpa(r, idx);
	assert_int_equal(fe_send(&r->f, VHOST_USER_SET_VRING_ADDR, VHOST_USER_VERSION, &a, sizeof(a),
				 NULL, 0), 0);
}

static void clear_log(struct rig *r)
{
	memset(r->log + LOG_OFF, 0, LOG_SIZE);
}

static bool page_logged(struct rig *r, uint64_t gpa)
{
	uint64_t pg = gpa / 4096;

	return r->log[LOG_OFF + pg / 8] & (1u << (pg % 8));
}

static bool any_logged(struct rig *r)
{
	for (unsigned i = 0; i < LOG_SIZE; i++)
		if (r->log[LOG_OFF + i])
			return true;
	return false;
}

static void guest_send(struct rig *r, struct uvn_vq_drv *drv, unsigned n)
{
	struct uvn_sg sg = { .addr = r->f.gpa + FRAME_OFF, .len = FRAME_LEN };

	memset(r->f.mem + FRAME_OFF, 0, FRAME_LEN);
	memset(r->f.mem + FRAME_OFF + 12, 0xff, 6);
	r->f.mem[FRAME_OFF + 12 + 12] = 0x08;
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(uvn_vq_drv_add(drv, &sg, 1, 0, drv, 0), 0);
	(void)uvn_vq_drv_kick_prepare(drv);
}

static unsigned guest_used(struct uvn_vq_drv *drv)
{
	struct uvn_vq_done done[64];
	unsigned n = 0;
	int got;

	while ((got = uvn_vq_drv_get_used(drv, done, 64)) > 0)
		n += (unsigned)got;
	return n;
}

/*
 * A disabled TX ring is the drain's: what it returns to the guest is
 * written into the used ring like any completion, so while a migration
 * runs the used ring's pages must be marked (they may have been sent
 * already, and the destination would see the chains still outstanding).
 */
static void test_discard_logged(void **state)
{
	struct uvn_vq_drv *drv;
	struct rig r;

	(void)state;
	rig_open(&r);
	drv = fe_driver(&r.f, 1, RING);
	start_logging(&r, 1);
	fe_vring_state(&r.f, VHOST_USER_SET_VRING_ENABLE, 1, 0);
	assert_false(fe_ready(&r.f, 1));
	guest_send(&r, drv, 5);
	clear_log(&r);
	r.v->drain_h.fn(&r.v->drain_h, EPOLLIN);
	assert_int_equal(r.v->discarded, 5);
	assert_int_equal(guest_used(drv), 5);
	/* the used ring's header and its first entries: one page here */
	assert_true(page_logged(&r, used_gpa(&r, 1)));
	assert_true(page_logged(&r, used_gpa(&r, 1) + 4 + 8 * 5 - 1));
	/* nothing to discard: nothing written, nothing logged */
	clear_log(&r);
	r.v->drain_h.fn(&r.v->drain_h, EPOLLIN);
	assert_false(any_logged(&r));
	uvn_vq_drv_destroy(drv);
	rig_close(&r);
}

/*
 * Turning notifications on (arm, before the thread sleeps) and off (a
 * kick) writes avail_event (EVENT_IDX) in the used ring: logged too.
 */
static void test_notify_fields_logged(void **state)
{
	struct rig r;

	(void)state;
	rig_open(&r);
	start_logging(&r, 1);
	assert_true(fe_ready(&r.f, 1));
	clear_log(&r);
	assert_true(r.port->ops->arm(r.port, 0));
	assert_true(page_logged(&r, used_gpa(&r, 1)));
	clear_log(&r);
	r.port->ops->rx_event(r.port, 0);
	assert_true(page_logged(&r, used_gpa(&r, 1)));
	rig_close(&r);
}

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0xa5, 0x0e, 0x01 };

static uint64_t send_rarp(struct rig *r, const uint8_t *mac)
{
	uint64_t p = 0;

	memcpy(&p, mac, 6);
	return fe_ack(&r->f, VHOST_USER_SEND_RARP, &p, sizeof(p));
}

/* The frame QEMU and DPDK send for a migrated guest (RFC 903). */
static void assert_rarp(const struct uvn_pkt *p, const uint8_t *mac)
{
	uint8_t f[60], want[60] = { 0 };

	assert_int_equal(p->len, 60);
	assert_int_equal(uvn_pkt_read(p, 0, f, sizeof(f)), sizeof(f));
	memset(want, 0xff, 6);
	memcpy(want + 6, mac, 6);
	want[12] = 0x80;
	want[13] = 0x35;
	want[15] = 1;     /* hardware: Ethernet */
	want[16] = 0x08;  /* protocol: IPv4 */
	want[18] = 6;
	want[19] = 4;
	want[21] = 3;     /* request reverse */
	memcpy(want + 22, mac, 6);
	memcpy(want + 32, mac, 6);
	assert_memory_equal(f, want, sizeof(want));
	assert_int_equal(p->vnet.flags, 0);
	assert_int_equal(p->vnet.gso_type, 0);
}

static unsigned port_rx(struct rig *r, struct uvn_pkt **pkts, unsigned n)
{
	unsigned got = r->port->ops->rx(r->port, 0, pkts, n);

	for (unsigned i = 0; i < got; i++)
		assert_int_equal(pkts[i]->port, r->port->id);
	return got;
}

/*
 * SEND_RARP: the port offers it, wakes the thread polling rx queue 0
 * (through the guest's kick eventfd) and hands it one RARP frame from the
 * guest's MAC before the guest's own frames; once, however often it polls.
 */
static void test_rarp_injected(void **state)
{
	struct uvn_pkt *pkts[8];
	struct uvn_vq_drv *drv;
	uint64_t kicks;
	struct rig r;

	(void)state;
	rig_open(&r);
	assert_true(fe_get_u64(&r.f, VHOST_USER_GET_PROTOCOL_FEATURES, 0) &
		    (1ull << VHOST_USER_PROTOCOL_F_RARP));
	drv = fe_driver(&r.f, 1, RING);
	assert_int_equal(port_rx(&r, pkts, 8), 0);
	while (read(r.f.kick[1], &kicks, sizeof(kicks)) == sizeof(kicks))
		;
	assert_int_equal(send_rarp(&r, guest_mac), 0);
	assert_int_equal(read(r.f.kick[1], &kicks, sizeof(kicks)), sizeof(kicks));
	guest_send(&r, drv, 2);
	assert_int_equal(port_rx(&r, pkts, 8), 3);
	assert_rarp(pkts[0], guest_mac);
	assert_int_equal(pkts[1]->len, FRAME_LEN - 12);
	assert_int_equal(pkts[2]->len, FRAME_LEN - 12);
	uvn_pkt_free_bulk(pkts, 3);
	r.port->ops->complete(r.port, 0);
	assert_int_equal(guest_used(drv), 2);
	assert_int_equal(port_rx(&r, pkts, 8), 0);
	assert_int_equal(r.v->rarps, 1);

	/* QEMU repeats it with each announce round: one frame each */
	assert_int_equal(send_rarp(&r, guest_mac), 0);
	assert_int_equal(port_rx(&r, pkts, 1), 1);
	assert_rarp(pkts[0], guest_mac);
	uvn_pkt_free_bulk(pkts, 1);
	assert_int_equal(port_rx(&r, pkts, 8), 0);
	assert_int_equal(r.v->rarps, 2);
	uvn_vq_drv_destroy(drv);
	rig_close(&r);
}

/* A port whose frontend asked for a RARP while rx queue 0 is disabled. */
static void rig_rarp_waiting(struct rig *r)
{
	rig_open(r);
	fe_vring_state(&r->f, VHOST_USER_SET_VRING_ENABLE, 1, 0);
	assert_int_equal(send_rarp(r, guest_mac), 0);
}

/*
 * QEMU's first announce round may come before the destination's rings
 * run: the RARP waits for rx queue 0 to be ready. A multicast "MAC" is no
 * guest's: declined (NACK), nothing sent, the connection lives.
 */
static void test_rarp_waits_for_queue(void **state)
{
	static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	struct uvn_pkt *pkts[4];
	struct rig r;

	(void)state;
	rig_rarp_waiting(&r);
	assert_int_equal(port_rx(&r, pkts, 4), 0);
	fe_vring_state(&r.f, VHOST_USER_SET_VRING_ENABLE, 1, 1);
	assert_int_equal(port_rx(&r, pkts, 4), 1);
	assert_rarp(pkts[0], guest_mac);
	uvn_pkt_free_bulk(pkts, 1);

	assert_int_not_equal(send_rarp(&r, mcast), 0);
	assert_int_equal(port_rx(&r, pkts, 4), 0);
	assert_int_equal(r.v->rarps, 1);
	assert_true(fe_ready(&r.f, 1));
	/* a payload that is not a u64 breaks the protocol: the connection goes */
	assert_true(fe_send(&r.f, VHOST_USER_SEND_RARP, VHOST_USER_VERSION, guest_mac, 6, NULL, 0) < 0);
	assert_int_equal(uvn_vu_backend_stats(r.v->be)->err_size, 2); /* + the multicast one */
	rig_close(&r);
}

/*
 * A RARP still waiting when the frontend hangs up was that guest's: the
 * guest of the next frontend on the port does not announce its MAC.
 */
static void test_rarp_goes_with_the_connection(void **state)
{
	struct uvn_pkt *pkts[4];
	struct rig r;

	(void)state;
	rig_rarp_waiting(&r);
	fe_close(&r.f);
	while (r.v->be)
		assert_true(uvn_loop_run_once(r.loop, 1000) >= 0);
	rig_connect(&r);
	assert_true(fe_ready(&r.f, 1));
	assert_int_equal(port_rx(&r, pkts, 4), 0);
	assert_int_equal(r.v->rarps, 0);
	rig_close(&r);
}

static void no_ready(void *ctx, struct uvn_vu_queue *q, bool ready)
{
	(void)ctx;
	(void)q;
	(void)ready;
}

static int no_features(void *ctx, uint64_t features)
{
	(void)ctx;
	(void)features;
	return 0;
}

/* A device without send_rarp: RARP is not offered, SEND_RARP is declined
 * (NACK, counted), the session goes on. */
static void test_rarp_not_offered(void **state)
{
	static const struct uvn_vu_device_ops ops = { .queue_ready = no_ready,
						      .set_features = no_features };
	struct uvn_vu_backend_cfg cfg = { .features = NET_FEATURES, .queue_num = 2, .ops = &ops };
	struct uvn_vu_backend *b;
	uint64_t p = 0;
	struct fe f;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(uvn_vu_backend_create(sv[1], &cfg, &b), 0);
	fe_attach(&f, sv[0], b, NET_FEATURES);
	assert_false(fe_get_u64(&f, VHOST_USER_GET_PROTOCOL_FEATURES, 0) &
		     (1ull << VHOST_USER_PROTOCOL_F_RARP));
	p = 1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK;
	assert_int_equal(fe_send(&f, VHOST_USER_SET_PROTOCOL_FEATURES, VHOST_USER_VERSION, &p,
				 sizeof(p), NULL, 0), 0);
	p = 0;
	memcpy(&p, guest_mac, 6);
	assert_int_not_equal(fe_ack(&f, VHOST_USER_SEND_RARP, &p, sizeof(p)), 0);
	assert_int_equal(uvn_vu_backend_stats(b)->err_feature, 1);
	assert_int_equal(fe_get_u64(&f, VHOST_USER_GET_FEATURES, 0) & NET_FEATURES, NET_FEATURES);
	fe_close(&f);
	uvn_vu_backend_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_discard_logged),
		cmocka_unit_test(test_notify_fields_logged),
		cmocka_unit_test(test_rarp_injected),
		cmocka_unit_test(test_rarp_waits_for_queue),
		cmocka_unit_test(test_rarp_goes_with_the_connection),
		cmocka_unit_test(test_rarp_not_offered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
