/* SPDX-License-Identifier: MIT */
/*
 * uvnetd's vhost-user port with a scripted frontend on its socket: what
 * the control thread does to rings the data path does not own. A started
 * but disabled guest TX ring is emptied by the drain timer (its handler is
 * called here directly, no time passes): at most a budget of chains per
 * call, and never through pointers into a memory table that went away.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>

#include "fake_fe.h"
#include "port/vhost_port.h"
#include "util/loop.h"
#include "util/sys.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))
#define RING 1024       /* larger than the drain's budget per call */
#define BUDGET 256      /* chains per disabled ring per drain tick */
#define FRAME_OFF 0x1000 /* a virtio-net header and a frame, in guest memory */
#define FRAME_LEN (12 + 60)

struct rig {
	struct uvn_loop *loop;
	struct uvn_port *port;
	struct vhost_port *v;
	char path[64];
	struct fe f;
};

static void rig_open(struct rig *r)
{
	struct uvn_port_env env = { 0 };
	struct uvn_vhost_port_cfg cfg = { .queues = 1 };
	int sock;

	snprintf(r->path, sizeof(r->path), "/tmp/helperA-port-%d.sock", (int)getpid());
	unlink(r->path);
	assert_int_equal(uvn_loop_create(&r->loop), 0);
	env.loop = r->loop;
	cfg.path = r->path;
	assert_int_equal(uvn_port_vhost_create(&cfg, &env, &r->port), 0);
	r->v = (struct vhost_port *)r->port;
	sock = uvn_vu_connect(r->path);
	assert_true(sock >= 0);
	/* the port accepts on its loop; nothing else of it runs until then */
	while (!r->v->be)
		assert_true(uvn_loop_run_once(r->loop, 1000) >= 0);
	fe_attach(&r->f, sock, r->v->be, NET_FEATURES);
	fe_negotiate_qemu(&r->f, RING);
}

static void rig_close(struct rig *r)
{
	fe_close(&r->f);
	r->port->ops->destroy(r->port);
	uvn_loop_destroy(r->loop);
	unlink(r->path);
}

/* One tick of the drain timer. */
static void drain(struct rig *r)
{
	r->v->drain_h.fn(&r->v->drain_h, EPOLLIN);
}

/* The guest posts @n frames on its TX ring (vq 1). */
static void guest_send(struct rig *r, struct uvn_vq_drv *drv, unsigned n)
{
	struct uvn_sg sg = { .addr = r->f.gpa + FRAME_OFF, .len = FRAME_LEN };

	memset(r->f.mem + FRAME_OFF, 0, FRAME_LEN);
	memset(r->f.mem + FRAME_OFF + 12, 0xff, 6); /* broadcast */
	r->f.mem[FRAME_OFF + 12 + 12] = 0x08;       /* IPv4 */
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

static void set_enable(struct rig *r, unsigned idx, unsigned on)
{
	fe_vring_state(&r->f, VHOST_USER_SET_VRING_ENABLE, idx, on);
}

/* The port takes the guest's @n frames on the data path, and no more. */
static void port_gets_frames(struct rig *r, unsigned n)
{
	struct uvn_pkt *pkts[8];
	unsigned got;

	got = r->port->ops->rx(r->port, 0, pkts, 8);
	assert_int_equal(got, n);
	for (unsigned i = 0; i < got; i++)
		assert_int_equal(pkts[i]->len, FRAME_LEN - 12);
	uvn_pkt_free_bulk(pkts, got);
	if (r->port->ops->complete)
		r->port->ops->complete(r->port, 0);
}

/* A disabled ring kept full: each tick discards at most the budget. */
static void test_discard_budget(void **state)
{
	struct uvn_vq_drv *drv;
	struct rig r;

	(void)state;
	rig_open(&r);
	drv = fe_driver(&r.f, 1, RING);
	set_enable(&r, 1, 0);
	assert_false(fe_ready(&r.f, 1));
	guest_send(&r, drv, RING);
	for (unsigned tick = 1; tick <= RING / BUDGET; tick++) {
		drain(&r);
		assert_int_equal(r.v->discarded, tick * BUDGET);
		assert_int_equal(guest_used(drv), BUDGET);
		/* the guest refills what it got back: the ring stays full */
		guest_send(&r, drv, BUDGET);
	}
	drain(&r);
	assert_int_equal(r.v->discarded, (RING / BUDGET + 1) * BUDGET);
	/* enabled again: the data path gets the ring where the drain left it */
	set_enable(&r, 1, 1);
	assert_true(fe_ready(&r.f, 1));
	uvn_vq_drv_destroy(drv);
	rig_close(&r);
}

/* A second guest memory region elsewhere, the only one of a new table. */
/* The message budget is the port's, not the connection's: a frontend that
 * hangs up and connects again in the same window does not start afresh,
 * and its first message past the budget pauses the new connection. */
static void test_budget_per_port(void **state)
{
	static const uint32_t get_features[3] = { VHOST_USER_GET_FEATURES, VHOST_USER_VERSION, 0 };
	struct rig r;
	int sock;

	(void)state;
	rig_open(&r);
	r.v->msg_window = uvn_now_ns();
	r.v->msg_count = 63;
	close(r.f.sock);
	r.f.sock = -1;
	while (r.v->be)
		assert_true(uvn_loop_run_once(r.loop, 1000) >= 0);
	assert_int_equal(r.v->msg_count, 63);
	sock = uvn_vu_connect(r.path);
	assert_true(sock >= 0);
	while (!r.v->be)
		assert_true(uvn_loop_run_once(r.loop, 1000) >= 0);
	r.f.external = true;
	fe_close(&r.f);
	fe_attach(&r.f, sock, r.v->be, NET_FEATURES);
	/* the window restarted so that it cannot end before the message */
	r.v->msg_window = uvn_now_ns();
	assert_int_equal(write(sock, get_features, sizeof(get_features)), sizeof(get_features));
	for (int i = 0; i < 100 && r.v->msg_count == 63; i++)
		assert_true(uvn_loop_run_once(r.loop, 10) >= 0);
	assert_int_equal(r.v->msg_count, 64);
	assert_true(r.v->conn_paused);
	rig_close(&r);
}

/* While a frontend is attached the listening socket's handler is light
 * (uvnetd runs it without parking the workers): a second frontend is
 * refused and counted as a port error; once the first hangs up, taking
 * the next one in is control work again. */
static void test_second_frontend_refused_light(void **state)
{
	struct uvn_port_stats st;
	struct rig r;
	char c;
	int sock;

	(void)state;
	rig_open(&r);
	assert_true(r.v->listen_h.light);
	sock = uvn_vu_connect(r.path);
	assert_true(sock >= 0);
	while (atomic_load(&r.v->refused) == 0)
		assert_true(uvn_loop_run_once(r.loop, 1000) >= 0);
	assert_int_equal(read(sock, &c, 1), 0); /* hung up on */
	close(sock);
	r.port->ops->stats(r.port, &st);
	assert_int_equal(st.errors, 1);
	close(r.f.sock);
	r.f.sock = -1;
	while (r.v->be)
		assert_true(uvn_loop_run_once(r.loop, 1000) >= 0);
	assert_false(r.v->listen_h.light);
	rig_close(&r);
}

static void other_table(struct rig *r, int fd, void *mem)
{
	struct uvn_vu_memory t = { .nregions = 1 };

	t.regions[0].guest_phys_addr = 0x80000000;
	t.regions[0].memory_size = 1 << 20;
	t.regions[0].userspace_addr = (uint64_t)(uintptr_t)mem;
	assert_int_equal(fe_send(&r->f, VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION, &t, 8 + 32,
				 &fd, 1), 0);
}

static void mem_reg(struct rig *r, uint32_t req, uint64_t gpa, uint64_t size, void *mem, int fd)
{
	struct uvn_vu_mem_reg m = { 0 };

	m.region.guest_phys_addr = gpa;
	m.region.memory_size = size;
	m.region.userspace_addr = (uint64_t)(uintptr_t)mem;
	assert_int_equal(fe_send(&r->f, req, VHOST_USER_VERSION, &m, sizeof(m), &fd, fd < 0 ? 0 : 1),
			 0);
}

/*
 * Started, enabled, disabled: the ring is the drain's. Then a memory table
 * without the ring's region (SET_MEM_TABLE, or REM_MEM_REG) unmaps the old
 * mapping: the drain must not touch the ring, and once the memory is back
 * and the ring enabled, it carries frames from where it was.
 */
static void test_drain_after_memory_change(void **state)
{
	struct uvn_vq_drv *drv;
	uint8_t *mem2;
	int fd2;
	struct rig r;

	(void)state;
	fd2 = memfd_create("guest2", MFD_CLOEXEC);
	assert_true(fd2 >= 0);
	assert_int_equal(ftruncate(fd2, 1 << 20), 0);
	mem2 = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	assert_true(mem2 != MAP_FAILED);
	rig_open(&r);
	drv = fe_driver(&r.f, 1, RING);
	guest_send(&r, drv, 1);
	port_gets_frames(&r, 1);
	assert_int_equal(guest_used(drv), 1);

	/* SET_MEM_TABLE without the ring's region, then the drain */
	set_enable(&r, 1, 0);
	guest_send(&r, drv, 3);
	other_table(&r, fd2, mem2);
	drain(&r);
	/* back in memory, still disabled: the ring was set aside when its
	 * memory went, so its frames wait for the ring to be enabled */
	fe_set_mem_table(&r.f, 0);
	drain(&r);
	assert_int_equal(r.v->discarded, 0);
	set_enable(&r, 1, 1);
	assert_true(fe_ready(&r.f, 1));
	port_gets_frames(&r, 3);
	assert_int_equal(guest_used(drv), 3);

	/* the same through ADD_MEM_REG + REM_MEM_REG of the ring's region */
	set_enable(&r, 1, 0);
	guest_send(&r, drv, 2);
	mem_reg(&r, VHOST_USER_ADD_MEM_REG, 0x80000000, 1 << 20, mem2, fd2);
	mem_reg(&r, VHOST_USER_REM_MEM_REG, r.f.gpa, FE_MEM_SIZE, r.f.mem, -1);
	drain(&r);
	mem_reg(&r, VHOST_USER_ADD_MEM_REG, r.f.gpa, FE_MEM_SIZE, r.f.mem, r.f.memfd);
	drain(&r);
	assert_int_equal(r.v->discarded, 0);
	set_enable(&r, 1, 1);
	assert_true(fe_ready(&r.f, 1));
	port_gets_frames(&r, 2);
	assert_int_equal(guest_used(drv), 2);

	uvn_vq_drv_destroy(drv);
	rig_close(&r);
	munmap(mem2, 1 << 20);
	close(fd2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_discard_budget),
		cmocka_unit_test(test_budget_per_port),
		cmocka_unit_test(test_second_frontend_refused_light),
		cmocka_unit_test(test_drain_after_memory_change),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
