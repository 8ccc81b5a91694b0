/* SPDX-License-Identifier: MIT */
/*
 * The MTU over vhost-user (a scripted frontend on a vhost-user port's socket):
 * - the backend of a port with mtu=N offers protocol feature NET_MTU, takes a
 *   NET_SET_MTU from 68 up to N; a larger or smaller one is NACKed and
 *   counted (err_mtu), the session lives; a NET_SET_MTU the frontend was
 *   not offered is declined; one of the wrong size or with an fd is a
 *   malformed message like any other (the connection goes);
 * - a vhost-user port with mtu=N offers VIRTIO_NET_F_MTU and NET_MTU and
 *   holds QEMU's host_mtu to N; frames over N are dropped and counted
 *   (mtu_drops, also in drops) coming in from the guest and going out to
 *   it (GSO frames again by the guest's RX ring, on the headers it
 *   delivers); a port without mtu= offers no NET_MTU.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>

#include "fake_fe.h"
#include "net/device/vu_device.h"
#include "port/vhost_port.h"
#include "util/loop.h"
#include "util/stats.h"
#include "vhost_user/internal.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))
#define V VHOST_USER_VERSION
#define ACK (VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK)
#define NET_MTU (1ull << VHOST_USER_PROTOCOL_F_NET_MTU)
#define REPLY_ACK (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK)
#define RING 256

/* A vhost-user port of spec options @opts with a frontend on its socket. */
struct rig {
	struct uvn_loop *loop;
	struct uvn_port *port;
	struct vhost_port *v;
	char path[64];
	struct fe f;
};

static void rig_open(struct rig *r, const char *opts)
{
	struct uvn_port_env env = { 0 };
	char spec[160];
	int sock;

	snprintf(r->path, sizeof(r->path), "/tmp/uvn-port-mtu-%d.sock", (int)getpid());
	snprintf(spec, sizeof(spec), "vhost-user:%s%s", r->path, opts);
	unlink(r->path);
	assert_int_equal(uvn_loop_create(&r->loop), 0);
	env.loop = r->loop;
	assert_int_equal(uvn_port_create(spec, &env, &r->port), 0);
	r->v = (struct vhost_port *)r->port;
	sock = uvn_vu_connect(r->path);
	assert_true(sock >= 0);
	while (!r->v->be)
		assert_true(uvn_loop_run_once(r->loop, 1000) >= 0);
	fe_attach(&r->f, sock, r->v->be, NET_FEATURES);
}

static void rig_close(struct rig *r)
{
	fe_close(&r->f);
	r->port->ops->destroy(r->port);
	uvn_loop_destroy(r->loop);
	unlink(r->path);
}

/* ------------------------------------------------------------- backend */

static uint64_t set_proto(struct fe *f, uint64_t proto)
{
	return fe_set_u64_ack(f, VHOST_USER_SET_PROTOCOL_FEATURES, proto);
}

static void test_backend_offer(void **state)
{
	struct rig r;

	(void)state;
	rig_open(&r, ",mtu=9000");
	assert_true(fe_get_u64(&r.f, VHOST_USER_GET_PROTOCOL_FEATURES, 0) & NET_MTU);
	rig_close(&r);
	rig_open(&r, "");
	assert_false(fe_get_u64(&r.f, VHOST_USER_GET_PROTOCOL_FEATURES, 0) & NET_MTU);
	rig_close(&r);
}

static void test_backend_accepts_up_to_its_mtu(void **state)
{
	const struct uvn_vu_stats *st;
	struct rig r;
	struct fe *f = &r.f;

	(void)state;
	rig_open(&r, ",mtu=9000");
	st = uvn_vu_backend_stats(f->b);
	assert_int_equal(set_proto(f, NET_MTU | REPLY_ACK), 0);
	assert_int_equal(uvn_vu_backend_mtu(f->b), 0);
	assert_int_equal(fe_set_u64_ack(f, VHOST_USER_NET_SET_MTU, 1500), 0);
	assert_int_equal(uvn_vu_backend_mtu(f->b), 1500);
	assert_int_equal(fe_set_u64_ack(f, VHOST_USER_NET_SET_MTU, 9000), 0);
	assert_int_equal(fe_set_u64_ack(f, VHOST_USER_NET_SET_MTU, 68), 0);
	assert_int_equal(uvn_vu_backend_mtu(f->b), 68);
	/* over the port's, or under the least there is: NACKed, counted */
	assert_int_not_equal(fe_set_u64_ack(f, VHOST_USER_NET_SET_MTU, 9001), 0);
	assert_int_not_equal(fe_set_u64_ack(f, VHOST_USER_NET_SET_MTU, 67), 0);
	assert_int_not_equal(fe_set_u64_ack(f, VHOST_USER_NET_SET_MTU, 1ull << 32 | 1500), 0);
	assert_int_equal(st->err_mtu, 3);
	assert_int_equal(uvn_vu_backend_mtu(f->b), 68);
	/* the session lives on */
	assert_false(f->b->dead);
	assert_true(fe_get_u64(f, VHOST_USER_GET_FEATURES, 0) & (1ull << VIRTIO_NET_F_MTU));
	/* no answer unless one is asked for */
	assert_int_equal(fe_send(f, VHOST_USER_NET_SET_MTU, V, &(uint64_t){ 1500 }, 8, NULL, 0), 0);
	assert_int_equal(fe_reply(f, VHOST_USER_NET_SET_MTU, &(struct uvn_vu_msg){ 0 }), 0);
	assert_int_equal(uvn_vu_backend_mtu(f->b), 1500);
	rig_close(&r);
}

/* Not offered (no mtu=), or offered and not taken: declined, session lives. */
static void test_backend_not_negotiated(void **state)
{
	struct rig r;

	(void)state;
	rig_open(&r, "");
	assert_int_equal(set_proto(&r.f, REPLY_ACK), 0);
	assert_int_not_equal(fe_set_u64_ack(&r.f, VHOST_USER_NET_SET_MTU, 1500), 0);
	assert_int_equal(uvn_vu_backend_stats(r.f.b)->err_feature, 1);
	assert_int_equal(uvn_vu_backend_stats(r.f.b)->err_mtu, 0);
	assert_false(r.f.b->dead);
	rig_close(&r);
	rig_open(&r, ",mtu=1500");
	assert_int_equal(set_proto(&r.f, REPLY_ACK), 0);
	assert_int_not_equal(fe_set_u64_ack(&r.f, VHOST_USER_NET_SET_MTU, 1500), 0);
	assert_int_equal(uvn_vu_backend_mtu(r.f.b), 0);
	assert_false(r.f.b->dead);
	rig_close(&r);
}

/* Sized and fd-checked by the request table like any request. */
static void test_backend_malformed(void **state)
{
	uint64_t mtu = 1500;
	int sv[2];
	struct rig r;

	(void)state;
	rig_open(&r, ",mtu=9000");
	assert_int_equal(set_proto(&r.f, NET_MTU | REPLY_ACK), 0);
	assert_true(fe_send(&r.f, VHOST_USER_NET_SET_MTU, ACK, &mtu, 4, NULL, 0) < 0);
	assert_int_equal(uvn_vu_backend_stats(r.f.b)->err_size, 1);
	assert_int_equal(uvn_vu_backend_mtu(r.f.b), 0);
	rig_close(&r);

	rig_open(&r, ",mtu=9000");
	assert_int_equal(set_proto(&r.f, NET_MTU | REPLY_ACK), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_true(fe_send(&r.f, VHOST_USER_NET_SET_MTU, ACK, &mtu, 8, sv, 1) < 0);
	assert_int_equal(uvn_vu_backend_stats(r.f.b)->err_fds, 1);
	assert_int_equal(uvn_vu_backend_mtu(r.f.b), 0);
	rig_close(&r);
	close(sv[0]);
	close(sv[1]);
}

/* ---------------------------------------------------------------- port */

static struct uvn_port_stats port_stats(struct rig *r)
{
	struct uvn_port_stats st;

	r->port->ops->stats(r->port, &st);
	return st;
}

static void test_port_offers(void **state)
{
	struct rig r;

	(void)state;
	rig_open(&r, ",mtu=1500");
	assert_true(fe_get_u64(&r.f, VHOST_USER_GET_FEATURES, 0) & (1ull << VIRTIO_NET_F_MTU));
	assert_int_equal(set_proto(&r.f, NET_MTU | REPLY_ACK), 0);
	/* QEMU with host_mtu=9000 on a port of 1500: refused, so it does not
	 * start the device */
	assert_int_not_equal(fe_set_u64_ack(&r.f, VHOST_USER_NET_SET_MTU, 9000), 0);
	assert_int_equal(fe_set_u64_ack(&r.f, VHOST_USER_NET_SET_MTU, 1500), 0);
	rig_close(&r);
	/* without mtu=: F_MTU as ever, no NET_MTU */
	rig_open(&r, "");
	assert_true(fe_get_u64(&r.f, VHOST_USER_GET_FEATURES, 0) & (1ull << VIRTIO_NET_F_MTU));
	assert_false(fe_get_u64(&r.f, VHOST_USER_GET_PROTOCOL_FEATURES, 0) & NET_MTU);
	rig_close(&r);
}

/* The guest sends frames of @len bytes (after a 12-byte header) at @off. */
static void guest_send(struct rig *r, struct uvn_vq_drv *drv, uint64_t off, uint32_t len)
{
	struct uvn_sg sg = { .addr = r->f.gpa + off, .len = 12 + len };

	memset(r->f.mem + off, 0, 12 + len);
	memset(r->f.mem + off + 12, 0xff, 6); /* broadcast */
	r->f.mem[off + 12 + 12] = 0x08;       /* IPv4 */
	assert_int_equal(uvn_vq_drv_add(drv, &sg, 1, 0, drv, 0), 0);
	(void)uvn_vq_drv_kick_prepare(drv);
}

static struct uvn_pkt *frame(struct uvn_pkt_pool *pool, uint32_t len)
{
	struct uvn_pkt *p = uvn_pkt_alloc(pool);

	assert_non_null(p);
	memset(p->buf, 0, len);
	memset(p->buf, 0xff, 6);
	((uint8_t *)p->buf)[12] = 0x08;
	uvn_pkt_set_buf(p, len);
	return p;
}

static void test_port_drops_over_mtu(void **state)
{
	struct uvn_pkt_pool_cfg pc = { .count = 4, .buf_size = 2048 };
	struct uvn_pkt_pool *pool;
	struct uvn_pkt *pkts[8], *p;
	struct uvn_vq_drv *drv;
	struct rig r;
	unsigned got;

	(void)state;
	assert_int_equal(uvn_pkt_pool_create(&pc, &pool), 0);
	rig_open(&r, ",mtu=1500");
	fe_negotiate_qemu(&r.f, RING);
	drv = fe_driver(&r.f, 1, RING);
	/* in from the guest: 1514 fits, 1515 and 1600 do not */
	guest_send(&r, drv, 0x1000, 1514);
	guest_send(&r, drv, 0x2000, 1515);
	guest_send(&r, drv, 0x3000, 1600);
	guest_send(&r, drv, 0x4000, 60);
	got = r.port->ops->rx(r.port, 0, pkts, 8);
	assert_int_equal(got, 2);
	assert_int_equal(pkts[0]->len, 1514);
	assert_int_equal(pkts[1]->len, 60);
	uvn_pkt_free_bulk(pkts, got);
	r.port->ops->complete(r.port, 0);
	assert_int_equal(port_stats(&r).mtu_drops, 2);
	assert_int_equal(port_stats(&r).drops, 2);
	assert_int_equal(port_stats(&r).rx_packets, 4); /* the ring's count: what the guest sent */

	/* out to the guest: over the MTU, counted here; a fitting frame is
	 * not (it finds no buffer: the guest posted none) */
	p = frame(pool, 1515);
	assert_int_equal(r.port->ops->tx(r.port, 0, &p, 1), 0);
	uvn_pkt_free(p);
	assert_int_equal(port_stats(&r).mtu_drops, 3);
	p = frame(pool, 1514);
	r.port->ops->tx(r.port, 0, &p, 1);
	uvn_pkt_free(p);
	assert_int_equal(port_stats(&r).mtu_drops, 3);
	/* the guest's RX ring checks GSO frames again, on the headers it
	 * delivers (a zero-copy sender may rewrite them after our check) */
	assert_int_equal(r.v->dev->rx[0].nq.mtu, 1500);

	uvn_vq_drv_destroy(drv);
	rig_close(&r);
	uvn_pkt_pool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backend_offer),
		cmocka_unit_test(test_backend_accepts_up_to_its_mtu),
		cmocka_unit_test(test_backend_not_negotiated),
		cmocka_unit_test(test_backend_malformed),
		cmocka_unit_test(test_port_offers),
		cmocka_unit_test(test_port_drops_over_mtu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
