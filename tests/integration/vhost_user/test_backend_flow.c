/* SPDX-License-Identifier: MIT */
/*
 * The backend driven like QEMU and like DPDK virtio-user would, with memfd
 * guest memory: negotiation, the ring state machine, chains pushed by the
 * test as the driver and seen by the device through the ready queue,
 * memory table changes on running rings, fd replacement, generic acks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>

#include "fake_fe.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))

static uint64_t read_eventfd(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

/* Guest RX: the device writes into a writable buffer; the guest sees it. */
static void rx_one(struct fe *f, struct uvn_vq_drv *drv, unsigned idx, uint64_t off)
{
	struct uvn_vu_queue *q = uvn_vu_backend_queue(f->b, idx);
	struct uvn_sg sg = { .addr = f->gpa + off, .len = 64 };
	struct uvn_vq_done done;
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	int token;

	memset(f->mem + off, 0, 64);
	assert_int_equal(uvn_vq_drv_add(drv, &sg, 0, 1, &token, 0), 0);
	uvn_vq_drv_kick_prepare(drv);
	assert_int_equal(uvn_vq_dev_pop(q->vq, &ch, iov, 4), 1);
	assert_int_equal(ch.nin, 1);
	memcpy(iov[0].iov_base, "from the device", 16);
	uvn_vq_dev_push(q->vq, &ch, 16);
	if (uvn_vq_dev_flush(q->vq))
		uvn_vu_queue_notify(q);
	assert_int_equal(uvn_vq_drv_get_used(drv, &done, 1), 1);
	assert_int_equal(done.len, 16);
	assert_string_equal((char *)f->mem + off, "from the device");
}

static void test_qemu_order(void **state)
{
	struct uvn_vq_drv *rx, *tx;
	struct uvn_vu_msg r;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	fe_negotiate_qemu(&f, 256);
	assert_int_equal(f.dev.features, NET_FEATURES);
	assert_int_equal(uvn_vu_backend_features(f.b), f.features);
	rx = fe_driver(&f, 0, 256);
	tx = fe_driver(&f, 1, 256);
	fe_tx(&f, tx, 1, 0x1000, "hello vhost-user");
	assert_int_equal(read_eventfd(f.call[1]), 1);
	assert_int_equal(uvn_vu_backend_queue(f.b, 1)->calls, 1);
	rx_one(&f, rx, 0, 0x2000);
	assert_int_equal(read_eventfd(f.call[0]), 1);
	fe_tx(&f, tx, 1, 0x1000, "second");

	/* QEMU may ask for features at any time */
	assert_int_equal(fe_get_u64(&f, VHOST_USER_GET_FEATURES, 0) & NET_FEATURES, NET_FEATURES);

	/* GET_VRING_BASE: the device is told first (still holding the vq), then the state */
	fe_vring_state(&f, VHOST_USER_GET_VRING_BASE, 1, 0);
	assert_int_equal(fe_reply(&f, VHOST_USER_GET_VRING_BASE, &r), 1);
	assert_int_equal(r.p.state.index, 1);
	assert_int_equal(r.p.state.num, 2);
	assert_int_equal(f.dev.stop_events[1], 1);
	assert_true(f.dev.vq_valid_on_stop);
	assert_false(f.dev.ready[1]);
	assert_null(uvn_vu_backend_queue(f.b, 1)->vq);
	assert_int_equal(uvn_vu_backend_queue(f.b, 1)->kick_fd, -1);
	assert_true(f.dev.ready[0]);

	/* restarted without SET_VRING_BASE: continues where it stopped */
	fe_vring_fd(&f, VHOST_USER_SET_VRING_KICK, 1, f.kick[1]);
	assert_true(f.dev.ready[1]);
	assert_int_equal(uvn_vq_dev_avail(uvn_vu_backend_queue(f.b, 1)->vq), 0);
	fe_tx(&f, tx, 1, 0x1000, "third");

	/* disable / enable */
	fe_vring_state(&f, VHOST_USER_SET_VRING_ENABLE, 1, 0);
	assert_false(f.dev.ready[1]);
	fe_vring_state(&f, VHOST_USER_SET_VRING_ENABLE, 1, 1);
	assert_true(f.dev.ready[1]);
	fe_tx(&f, tx, 1, 0x1000, "fourth");

	uvn_vq_drv_destroy(rx);
	uvn_vq_drv_destroy(tx);
	fe_close(&f);
	/* destroy stopped both queues */
	assert_false(f.dev.ready[0]);
	assert_false(f.dev.ready[1]);
	assert_int_equal(uvn_vu_stats_desc[0].offset, offsetof(struct uvn_vu_stats, msgs));
}

/* DPDK virtio-user: SET_VRING_CALL before SET_FEATURES, gpa == uva, status. */
static void test_virtio_user_order(void **state)
{
	uint64_t proto = (1ull << VHOST_USER_PROTOCOL_F_MQ) | (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK) |
			 (1ull << VHOST_USER_PROTOCOL_F_STATUS);
	struct uvn_vq_drv *tx;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	f.gpa = (uint64_t)(uintptr_t)f.mem;
	assert_int_equal(fe_send(&f, VHOST_USER_SET_OWNER, VHOST_USER_VERSION, NULL, 0, NULL, 0), 0);
	fe_get_u64(&f, VHOST_USER_GET_FEATURES, 0);
	assert_int_equal(fe_get_u64(&f, VHOST_USER_GET_PROTOCOL_FEATURES, 0) & proto, proto);
	assert_int_equal(fe_send(&f, VHOST_USER_SET_PROTOCOL_FEATURES, VHOST_USER_VERSION, &proto, 8,
				 NULL, 0), 0);
	assert_int_equal(uvn_vu_backend_protocol_features(f.b), proto);
	for (unsigned i = 0; i < FE_QUEUES; i++)
		fe_vring_fd(&f, VHOST_USER_SET_VRING_CALL, i, f.call[i]);
	f.features |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	assert_int_equal(fe_set_u64_ack(&f, VHOST_USER_SET_FEATURES, f.features), 0);
	fe_set_mem_table(&f, VHOST_USER_NEED_REPLY_MASK);
	for (unsigned i = 0; i < FE_QUEUES; i++)
		fe_setup_ring(&f, i, 256, FE_RING_OFF(i), 0);
	assert_false(f.dev.ready[1]);
	for (unsigned i = 0; i < FE_QUEUES; i++)
		fe_vring_state(&f, VHOST_USER_SET_VRING_ENABLE, i, 1);
	assert_true(f.dev.ready[0] && f.dev.ready[1]);
	assert_int_equal(fe_set_u64_ack(&f, VHOST_USER_SET_STATUS, 0xf), 0);
	assert_int_equal(f.dev.status, 0xf);
	assert_int_equal(fe_get_u64(&f, VHOST_USER_GET_STATUS, 0), 0xf);
	tx = fe_driver(&f, 1, 256);
	fe_tx(&f, tx, 1, 0x3000, "virtio-user");
	assert_int_equal(read_eventfd(f.call[1]), 1);
	uvn_vq_drv_destroy(tx);
	fe_close(&f);
}

/* Packed ring of a size that is not a power of two; both SET_VRING_BASE encodings. */
static void test_packed(void **state)
{
	struct uvn_vq_drv *tx;
	struct uvn_vu_msg r;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES | (1ull << VIRTIO_F_RING_PACKED));
	fe_negotiate_qemu(&f, 100);
	tx = fe_driver(&f, 1, 100);
	fe_tx(&f, tx, 1, 0x1000, "packed");
	fe_tx(&f, tx, 1, 0x1000, "packed again");
	/* avail: position 2, wrap 1; used (bits 16-31): position 2, wrap 1 */
	fe_vring_state(&f, VHOST_USER_GET_VRING_BASE, 1, 0);
	assert_int_equal(fe_reply(&f, VHOST_USER_GET_VRING_BASE, &r), 1);
	assert_int_equal(r.p.state.num, 0x80028002u);
	/* newer frontends send it back as is */
	fe_vring_state(&f, VHOST_USER_SET_VRING_BASE, 1, r.p.state.num);
	fe_vring_fd(&f, VHOST_USER_SET_VRING_KICK, 1, f.kick[1]);
	fe_tx(&f, tx, 1, 0x1000, "after restart");
	fe_vring_state(&f, VHOST_USER_GET_VRING_BASE, 1, 0);
	assert_int_equal(fe_reply(&f, VHOST_USER_GET_VRING_BASE, &r), 1);
	assert_int_equal(r.p.state.num, 0x80038003u);
	/* older ones send only the avail half: used = avail */
	fe_vring_state(&f, VHOST_USER_SET_VRING_BASE, 1, 0x8003);
	fe_vring_fd(&f, VHOST_USER_SET_VRING_KICK, 1, f.kick[1]);
	fe_tx(&f, tx, 1, 0x1000, "old base");
	assert_int_equal(uvn_vq_dev_used_state(uvn_vu_backend_queue(f.b, 1)->vq), 0x8004);
	/* a base beyond the ring breaks the queue when it starts */
	fe_vring_state(&f, VHOST_USER_GET_VRING_BASE, 1, 0);
	assert_int_equal(fe_reply(&f, VHOST_USER_GET_VRING_BASE, &r), 1);
	fe_vring_state(&f, VHOST_USER_SET_VRING_BASE, 1, 0x8000 | 100);
	fe_vring_fd(&f, VHOST_USER_SET_VRING_KICK, 1, f.kick[1]);
	assert_false(f.dev.ready[1]);
	assert_true(uvn_vu_backend_queue(f.b, 1)->broken);
	assert_int_equal(uvn_vu_backend_stats(f.b)->err_ring, 1);
	uvn_vq_drv_destroy(tx);
	fe_close(&f);
}

/* Without PROTOCOL_FEATURES rings are enabled as they start. */
static void test_no_protocol_features(void **state)
{
	struct uvn_vq_drv *tx;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	assert_int_equal(fe_send(&f, VHOST_USER_SET_FEATURES, VHOST_USER_VERSION, &f.features, 8, NULL,
				 0), 0);
	fe_set_mem_table(&f, 0);
	fe_setup_ring(&f, 1, 64, FE_RING_OFF(1), 0);
	assert_true(f.dev.ready[1]);
	tx = fe_driver(&f, 1, 64);
	fe_tx(&f, tx, 1, 0x1000, "legacy order");
	/* no REPLY_ACK negotiated: NEED_REPLY gets no answer */
	struct uvn_vu_msg r;
	assert_int_equal(fe_send(&f, VHOST_USER_SET_OWNER, VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
				 NULL, 0, NULL, 0), 0);
	assert_int_equal(fe_reply(&f, VHOST_USER_SET_OWNER, &r), 0);
	uvn_vq_drv_destroy(tx);
	fe_close(&f);
}

static void set_region(struct uvn_vu_mem_reg *m, uint64_t gpa, uint64_t size, void *uva)
{
	memset(m, 0, sizeof(*m));
	m->region.guest_phys_addr = gpa;
	m->region.memory_size = size;
	m->region.userspace_addr = (uint64_t)(uintptr_t)uva;
}

/* Memory changes on running rings: re-translated, no leaks, rings follow their region. */
static void test_memory_changes(void **state)
{
	struct uvn_vu_mem_reg reg;
	struct uvn_vq_drv *tx;
	int fds0, maps0, fd2;
	uint8_t *mem2;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	fe_negotiate_qemu(&f, 256);
	tx = fe_driver(&f, 1, 256);
	fe_tx(&f, tx, 1, 0x1000, "before");
	fds0 = count_fds();
	maps0 = count_maps();
	for (int i = 0; i < 50; i++)
		fe_set_mem_table(&f, VHOST_USER_NEED_REPLY_MASK);
	assert_int_equal(count_fds(), fds0);
	assert_int_equal(count_maps(), maps0);
	/* paused and resumed around each change */
	assert_int_equal(f.dev.stop_events[1], 50);
	assert_int_equal(f.dev.ready_events[1], 51);
	assert_int_equal(uvn_vu_backend_stats(f.b)->mem_changes, 51);
	fe_tx(&f, tx, 1, 0x1000, "after 50 tables");

	/* a second region: buffers there translate */
	fd2 = memfd_create("guest2", MFD_CLOEXEC);
	assert_int_equal(ftruncate(fd2, 1 << 20), 0);
	mem2 = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	set_region(&reg, 0x80000000, 1 << 20, mem2);
	assert_int_equal(fe_send(&f, VHOST_USER_ADD_MEM_REG, VHOST_USER_VERSION, &reg, sizeof(reg),
				 &fd2, 1), 0);
	{
		struct uvn_mem_cursor *c = &uvn_vu_backend_queue(f.b, 1)->cursor;
		uint64_t len = 16;
		char *p;

		strcpy((char *)mem2 + 100, "region two");
		p = uvn_mem_xlate(c, 0x80000000 + 100, &len);
		assert_non_null(p);
		assert_string_equal(p, "region two");
	}
	/* removing the region the rings live in pauses them; adding it back resumes them */
	set_region(&reg, f.gpa, FE_MEM_SIZE, f.mem);
	assert_int_equal(fe_send(&f, VHOST_USER_REM_MEM_REG, VHOST_USER_VERSION, &reg, sizeof(reg),
				 NULL, 0), 0);
	assert_false(f.dev.ready[0]);
	assert_false(f.dev.ready[1]);
	assert_int_equal(fe_send(&f, VHOST_USER_ADD_MEM_REG, VHOST_USER_VERSION, &reg, sizeof(reg),
				 &f.memfd, 1), 0);
	assert_true(f.dev.ready[0]);
	assert_true(f.dev.ready[1]);
	fe_tx(&f, tx, 1, 0x1000, "region back");
	/* QEMU sends each region once per queue pair: the same region again is
	 * one more reference (no second mapping, nothing dropped), and it stays
	 * until as many REM_MEM_REGs came. */
	maps0 = count_maps();
	fds0 = count_fds();
	{
		int fd = dup(f.memfd);

		assert_int_equal(fe_send(&f, VHOST_USER_ADD_MEM_REG, VHOST_USER_VERSION, &reg,
					 sizeof(reg), &fd, 1), 0);
		close(fd);
	}
	assert_int_equal(count_maps(), maps0);
	assert_int_equal(count_fds(), fds0);
	assert_int_equal(fe_send(&f, VHOST_USER_REM_MEM_REG, VHOST_USER_VERSION, &reg, sizeof(reg),
				 NULL, 0), 0);
	assert_true(f.dev.ready[1]);
	fe_tx(&f, tx, 1, 0x1000, "one reference left");
	assert_int_equal(fe_send(&f, VHOST_USER_REM_MEM_REG, VHOST_USER_VERSION, &reg, sizeof(reg),
				 NULL, 0), 0);
	assert_false(f.dev.ready[1]);
	assert_int_equal(fe_send(&f, VHOST_USER_ADD_MEM_REG, VHOST_USER_VERSION, &reg, sizeof(reg),
				 &f.memfd, 1), 0);
	assert_true(f.dev.ready[1]);
	/* REM_MEM_REG of something never added: declined, the session lives */
	set_region(&reg, 0x90000000, 4096, mem2);
	assert_int_not_equal(fe_ack(&f, VHOST_USER_REM_MEM_REG, &reg, sizeof(reg)), 0);
	assert_int_equal(fe_send(&f, VHOST_USER_REM_MEM_REG, VHOST_USER_VERSION, &reg, sizeof(reg),
				 NULL, 0), 0);
	assert_int_equal(uvn_vu_backend_stats(f.b)->err_mem, 2);
	assert_int_equal(fe_get_u64(&f, VHOST_USER_GET_QUEUE_NUM, 0), 1);
	uvn_vq_drv_destroy(tx);
	fe_close(&f);
	munmap(mem2, 1 << 20);
	close(fd2);
}

/* Call and kick fds replaced on a ready ring; polling with NOFD; generic acks. */
static void test_fds_and_acks(void **state)
{
	int newcall = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct uvn_vq_drv *tx;
	struct uvn_vu_queue *q;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	fe_negotiate_qemu(&f, 256);
	q = uvn_vu_backend_queue(f.b, 1);
	tx = fe_driver(&f, 1, 256);
	fe_vring_fd(&f, VHOST_USER_SET_VRING_CALL, 1, newcall);
	assert_int_equal(f.dev.stop_events[1], 1);
	assert_true(f.dev.ready[1]);
	fe_tx(&f, tx, 1, 0x1000, "new call fd");
	assert_int_equal(read_eventfd(newcall), 1);
	assert_int_equal(read_eventfd(f.call[1]), 0);
	/* polling: no call fd, notify is a no-op */
	fe_vring_fd(&f, VHOST_USER_SET_VRING_CALL, 1, -1);
	assert_int_equal(q->call_fd, -1);
	fe_tx(&f, tx, 1, 0x1000, "polling");
	fe_vring_fd(&f, VHOST_USER_SET_VRING_KICK, 1, -1);
	assert_int_equal(q->kick_fd, -1);
	assert_true(f.dev.ready[1]);
	/* acks: 0 on success, non-zero on failure, for any request */
	assert_int_equal(fe_ack(&f, VHOST_USER_SET_OWNER, NULL, 0), 0);
	struct vhost_vring_state s = { .index = 0, .num = 100 };
	struct uvn_vu_msg r;
	assert_int_equal(fe_send(&f, VHOST_USER_SET_VRING_NUM,
				 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK, &s, 8, NULL, 0), 0);
	assert_int_equal(fe_reply(&f, VHOST_USER_SET_VRING_NUM, &r), 1);
	assert_int_not_equal(r.p.u64, 0);
	uvn_vq_drv_destroy(tx);
	fe_close(&f);
	close(newcall);
}

static void nop_ready(void *ctx, struct uvn_vu_queue *q, bool ready)
{
	(void)ctx;
	(void)q;
	(void)ready;
}

static int nop_features(void *ctx, uint64_t features)
{
	(void)ctx;
	(void)features;
	return 0;
}

/* Server and client sockets: stale socket files are replaced, live ones and other files are not. */
static void test_sockets(void **state)
{
	static const struct uvn_vu_device_ops no_ops = { 0 };
	static const struct uvn_vu_device_ops ops = { .queue_ready = nop_ready,
						      .set_features = nop_features };
	struct uvn_vu_backend_cfg cfg = { .features = NET_FEATURES, .queue_num = 2, .ops = &no_ops };
	int lfd, cfd, sfd, fd;
	struct uvn_vu_backend *b;
	struct uvn_vu_msg m;
	struct uvn_vu_rx rx;
	char path[64];

	(void)state;
	snprintf(path, sizeof(path), "/tmp/uvn-test-%d.sock", (int)getpid());
	unlink(path);
	lfd = uvn_vu_listen(path);
	assert_true(lfd >= 0);
	cfd = uvn_vu_connect(path);
	assert_true(cfd >= 0);
	sfd = uvn_vu_accept(lfd);
	assert_true(sfd >= 0);
	assert_int_equal(uvn_vu_backend_create(sfd, &cfg, &b), -EINVAL); /* ops without callbacks */
	cfg.ops = &ops;
	assert_int_equal(uvn_vu_backend_create(sfd, &cfg, &b), 0);
	/* the session answers the client over the real socket */
	uvn_vu_msg_init(&m, VHOST_USER_GET_FEATURES, VHOST_USER_VERSION, 0);
	assert_int_equal(uvn_vu_msg_send(cfd, &m), 0);
	assert_int_equal(uvn_vu_backend_handle(b), 0);
	uvn_vu_rx_init(&rx);
	assert_int_equal(uvn_vu_msg_recv(cfd, &rx), 1);
	assert_int_equal(uvn_vu_msg_check_reply(&m, &rx.msg), 0);
	assert_int_equal(rx.msg.p.u64 & NET_FEATURES, NET_FEATURES);
	uvn_vu_backend_destroy(b);
	close(cfd);
	/* someone is listening: left alone (the probe is a connection it will see close) */
	assert_int_equal(uvn_vu_listen(path), -EADDRINUSE);
	close(lfd);
	/* the file is left behind, stale: listen replaces it */
	lfd = uvn_vu_listen(path);
	assert_true(lfd >= 0);
	close(lfd);
	unlink(path);
	/* not a socket: never removed */
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	close(fd);
	assert_int_equal(uvn_vu_listen(path), -EEXIST);
	unlink(path);
	assert_true(uvn_vu_connect(path) < 0);
	assert_int_equal(uvn_vu_listen(""), -EINVAL);
}

/*
 * A listener too busy to accept (its backlog full) is someone's: listen
 * must neither wait on it nor remove its socket file, and connect must
 * not wait on it either (SIGALRM ends the test if either blocks).
 */
static void test_sockets_busy(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd, fds[8], n = 0, r;
	struct stat st;

	(void)state;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/uvn-test-busy-%d.sock", (int)getpid());
	unlink(sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	do {
		fds[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		assert_true(fds[n] >= 0);
		r = connect(fds[n], (struct sockaddr *)&sa, sizeof(sa));
		n++;
	} while (r == 0 && n < 8);
	assert_int_equal(r, -1);
	assert_int_equal(errno, EAGAIN);
	alarm(10);
	assert_int_equal(uvn_vu_connect(sa.sun_path), -EAGAIN);
	assert_int_equal(uvn_vu_listen(sa.sun_path), -EADDRINUSE);
	alarm(0);
	assert_int_equal(lstat(sa.sun_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	/* Once it is gone, the refused file is stale and replaced. */
	close(lfd);
	assert_int_equal(uvn_vu_connect(sa.sun_path), -ECONNREFUSED);
	lfd = uvn_vu_listen(sa.sun_path);
	assert_true(lfd >= 0);
	close(lfd);
	while (n)
		close(fds[--n]);
	unlink(sa.sun_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qemu_order),
		cmocka_unit_test(test_virtio_user_order),
		cmocka_unit_test(test_packed),
		cmocka_unit_test(test_no_protocol_features),
		cmocka_unit_test(test_memory_changes),
		cmocka_unit_test(test_fds_and_acks),
		cmocka_unit_test(test_sockets),
		cmocka_unit_test(test_sockets_busy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
