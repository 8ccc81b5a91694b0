/* SPDX-License-Identifier: MIT */
/*
 * A frontend that attacks the backend through what it hands over rather
 * than through malformed messages:
 * - fds that must be eventfds (kick, call, error, log) but are a full
 *   blocking pipe, a socket, a memfd or a timerfd: refused and counted,
 *   that ring broken, nothing written to them; real eventfds are made
 *   non-blocking, so a full one is never waited for;
 * - memory tables that drop the region a ring lives in, whatever state
 *   the ring is in: no ring keeps a device half pointing into the old
 *   mapping, and the ring resumes from its state when the memory is back.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>

#include "fake_fe.h"
#include "util/stats.h"
#include "vhost_user/internal.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))
#define V VHOST_USER_VERSION
#define EFD_FULL 0xfffffffffffffffeull /* an eventfd's counter at its maximum */

/* A counter by its name in uvn_vu_stats_desc (fails if there is none). */
static uint64_t stat_named(struct fe *f, const char *name)
{
	for (const struct uvn_stat_desc *d = uvn_vu_stats_desc; d->name; d++)
		if (!strcmp(d->name, name))
			return uvn_stat_get(uvn_vu_backend_stats(f->b), d);
	fail_msg("no counter %s", name);
	return 0;
}

/* Is @a the same eventfd as @b (a write through one is read through the other)? */
static bool same_eventfd(int a, int b)
{
	uint64_t one = 1, v = 0;

	return write(a, &one, 8) == 8 && read(b, &v, 8) == 8 && v == 1;
}

static bool nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	return fl & O_NONBLOCK;
}

static uint64_t read_eventfd(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

/* ------------------------------------------------------- peer fd types */

enum kind { PIPE_FULL, SOCKET, MEMFD, TIMERFD, KINDS };
static const char *const kind_name[KINDS] = { "full blocking pipe", "socket", "memfd", "timerfd" };

/* A fd of @kind to hand over; *@keep is a second fd to close afterwards (or -1). */
static int make_fd(enum kind k, int *keep)
{
	int p[2], fd = -1;

	*keep = -1;
	switch (k) {
	case PIPE_FULL:
		/* the write end of a pipe nobody reads, full, then blocking again */
		assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
		{
			char buf[4096] = { 0 };

			while (write(p[1], buf, sizeof(buf)) > 0)
				;
			assert_int_equal(errno, EAGAIN);
		}
		assert_int_equal(fcntl(p[1], F_SETFL, 0), 0);
		*keep = p[0];
		fd = p[1];
		break;
	case SOCKET:
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
		*keep = p[1];
		fd = p[0];
		break;
	case MEMFD:
		fd = memfd_create("not-an-eventfd", MFD_CLOEXEC);
		break;
	case TIMERFD:
		fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		break;
	default:
		break;
	}
	assert_true(fd >= 0);
	return fd;
}

static const uint32_t ring_fd_reqs[] = { VHOST_USER_SET_VRING_KICK, VHOST_USER_SET_VRING_CALL,
					 VHOST_USER_SET_VRING_ERR };

/* The ring's fd that @req sets. */
static int ring_fd(struct uvn_vu_queue *q, uint32_t req)
{
	return req == VHOST_USER_SET_VRING_KICK ? q->kick_fd :
	       req == VHOST_USER_SET_VRING_CALL ? q->call_fd : q->err_fd;
}

/*
 * Kick, call and error fds that are not eventfds: the request is refused
 * (counted, that ring broken and signalled on its error eventfd), the fd
 * is not kept, the ring's previous fd stays, the other ring and the
 * session carry on, and nothing leaks.
 */
static void test_ring_fd_not_eventfd(void **state)
{
	(void)state;
	for (unsigned r = 0; r < sizeof(ring_fd_reqs) / sizeof(ring_fd_reqs[0]); r++) {
		for (enum kind k = 0; k < KINDS; k++) {
			uint32_t req = ring_fd_reqs[r];
			int fds0 = count_fds(), err, bad, keep, prev;
			struct uvn_vu_queue *q;
			struct uvn_vq_drv *tx;
			struct fe f;

			print_message("%s with a %s\n", uvn_vu_req_name(req), kind_name[k]);
			fe_open(&f, FE_QUEUES, NET_FEATURES);
			fe_negotiate_qemu(&f, 256);
			q = uvn_vu_backend_queue(f.b, 0);
			err = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			fe_vring_fd(&f, VHOST_USER_SET_VRING_ERR, 0, err);
			prev = dup(ring_fd(q, req));
			bad = make_fd(k, &keep);
			fe_vring_fd(&f, req, 0, bad);
			assert_int_equal(stat_named(&f, "err_fd_type"), 1);
			assert_true(q->broken);
			assert_false(fe_ready(&f, 0));
			assert_int_equal(uvn_vu_backend_stats(f.b)->queues_broken, 1);
			assert_int_equal(read_eventfd(err), 1);
			assert_true(same_eventfd(ring_fd(q, req), prev));
			/* the session and the other ring carry on */
			tx = fe_driver(&f, 1, 256);
			fe_tx(&f, tx, 1, 0x1000, "after a bad fd");
			assert_true(fe_get_u64(&f, VHOST_USER_GET_FEATURES, 0) & NET_FEATURES);
			uvn_vq_drv_destroy(tx);
			fe_close(&f);
			close(bad);
			close(prev);
			close(err);
			if (keep >= 0)
				close(keep);
			assert_int_equal(count_fds(), fds0);
		}
	}
}

/* SET_LOG_FD with anything but an eventfd: declined, counted, nothing changes. */
static void test_log_fd_not_eventfd(void **state)
{
	(void)state;
	for (enum kind k = 0; k < KINDS; k++) {
		int fds0 = count_fds(), bad, keep, good = eventfd(0, EFD_CLOEXEC);
		struct uvn_vu_msg r;
		struct fe f;

		print_message("SET_LOG_FD with a %s\n", kind_name[k]);
		fe_open(&f, FE_QUEUES, NET_FEATURES);
		fe_negotiate_qemu(&f, 256);
		assert_int_equal(fe_send(&f, VHOST_USER_SET_LOG_FD, V | VHOST_USER_NEED_REPLY_MASK,
					 NULL, 0, &good, 1), 0);
		assert_int_equal(fe_reply(&f, VHOST_USER_SET_LOG_FD, &r), 1);
		assert_int_equal(r.p.u64, 0);
		bad = make_fd(k, &keep);
		assert_int_equal(fe_send(&f, VHOST_USER_SET_LOG_FD, V | VHOST_USER_NEED_REPLY_MASK,
					 NULL, 0, &bad, 1), 0);
		assert_int_equal(fe_reply(&f, VHOST_USER_SET_LOG_FD, &r), 1);
		assert_int_not_equal(r.p.u64, 0);
		assert_int_equal(stat_named(&f, "err_fd_type"), 1);
		assert_true(same_eventfd(f.b->log.fd, good));
		/* nothing else changed */
		assert_true(fe_ready(&f, 0));
		assert_true(fe_ready(&f, 1));
		assert_int_equal(uvn_vu_backend_stats(f.b)->queues_broken, 0);
		fe_close(&f);
		close(bad);
		close(good);
		if (keep >= 0)
			close(keep);
		assert_int_equal(count_fds(), fds0);
	}
}

/*
 * Real eventfds, handed over blocking, are made non-blocking (on the file
 * description the frontend shares); a frontend that fills one to its
 * maximum makes our write fail, never wait.
 */
static void test_eventfds_nonblocking(void **state)
{
	int kick = eventfd(0, EFD_CLOEXEC), call = eventfd(0, EFD_CLOEXEC);
	int err = eventfd(0, EFD_CLOEXEC), logfd = eventfd(0, EFD_CLOEXEC);
	uint64_t full = EFD_FULL;
	struct uvn_vu_queue *q;
	struct uvn_vq_drv *tx;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	fe_negotiate_qemu(&f, 256);
	q = uvn_vu_backend_queue(f.b, 1);
	fe_vring_fd(&f, VHOST_USER_SET_VRING_KICK, 1, kick);
	fe_vring_fd(&f, VHOST_USER_SET_VRING_CALL, 1, call);
	fe_vring_fd(&f, VHOST_USER_SET_VRING_ERR, 1, err);
	assert_int_equal(fe_send(&f, VHOST_USER_SET_LOG_FD, V, NULL, 0, &logfd, 1), 0);
	assert_true(nonblocking(kick));
	assert_true(nonblocking(call));
	assert_true(nonblocking(err));
	assert_true(nonblocking(logfd));
	assert_int_equal(stat_named(&f, "err_fd_type"), 0);
	assert_true(fe_ready(&f, 1));
	/* our kick reads do not wait on an empty eventfd either */
	assert_true(nonblocking(q->kick_fd));

	/* a call eventfd at its maximum: the call fails, counted */
	tx = fe_driver(&f, 1, 256);
	assert_int_equal(write(call, &full, 8), 8);
	fe_tx(&f, tx, 1, 0x1000, "full call eventfd");
	assert_int_equal(q->calls, 0);
	assert_int_equal(q->calls_failed, 1);
	assert_int_equal(read_eventfd(call), EFD_FULL);
	uvn_vu_queue_notify(q);
	assert_int_equal(q->calls, 1);
	assert_int_equal(read_eventfd(call), 1);

	/* an error eventfd at its maximum: the ring breaks all the same */
	assert_int_equal(write(err, &full, 8), 8);
	fe_vring_state(&f, VHOST_USER_SET_VRING_ENABLE, 1, 2);
	assert_true(q->broken);
	assert_false(fe_ready(&f, 1));
	assert_int_equal(read_eventfd(err), EFD_FULL);
	assert_true(fe_get_u64(&f, VHOST_USER_GET_FEATURES, 0) & NET_FEATURES);

	uvn_vq_drv_destroy(tx);
	fe_close(&f);
	close(kick);
	close(call);
	close(err);
	close(logfd);
}

/* --------------------------------------------------- memory under rings */

/* No ring may keep a device half whose ring is not in the current table. */
static void assert_no_stale_ring(struct fe *f)
{
	for (unsigned i = 0; i < FE_QUEUES; i++) {
		struct uvn_vu_queue *q = uvn_vu_backend_queue(f->b, i);

		if (q->dev)
			assert_non_null(q->desc);
		if (q->vq)
			assert_ptr_equal(q->vq, q->dev);
	}
}

static void table_elsewhere(struct fe *f, int fd, void *mem)
{
	struct uvn_vu_memory t = { .nregions = 1 };

	t.regions[0].guest_phys_addr = 0x80000000;
	t.regions[0].memory_size = 1 << 20;
	t.regions[0].userspace_addr = (uint64_t)(uintptr_t)mem;
	assert_int_equal(fe_send(f, VHOST_USER_SET_MEM_TABLE, V, &t, 8 + 32, &fd, 1), 0);
}

static void region(struct fe *f, uint32_t req, uint64_t gpa, uint64_t size, void *mem, int fd)
{
	struct uvn_vu_mem_reg m = { 0 };

	m.region.guest_phys_addr = gpa;
	m.region.memory_size = size;
	m.region.userspace_addr = (uint64_t)(uintptr_t)mem;
	assert_int_equal(fe_send(f, req, V, &m, sizeof(m), &fd, fd < 0 ? 0 : 1), 0);
}

static uint32_t get_base(struct fe *f, unsigned idx)
{
	struct uvn_vu_msg r;

	fe_vring_state(f, VHOST_USER_GET_VRING_BASE, idx, 0);
	assert_int_equal(fe_reply(f, VHOST_USER_GET_VRING_BASE, &r), 1);
	return r.p.state.num;
}

/*
 * Ring 1 started, used (one chain), disabled: SET_MEM_TABLE without its
 * region, and ADD_MEM_REG + REM_MEM_REG of it. No device half survives
 * pointing into the old mapping; the ring comes back where it was.
 */
static void test_disabled_ring_loses_memory(void **state)
{
	int fd2 = memfd_create("guest2", MFD_CLOEXEC), maps0;
	struct uvn_vq_drv *tx;
	uint8_t *mem2;
	struct fe f;

	(void)state;
	assert_int_equal(ftruncate(fd2, 1 << 20), 0);
	mem2 = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	assert_true(mem2 != MAP_FAILED);
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	fe_negotiate_qemu(&f, 256);
	tx = fe_driver(&f, 1, 256);
	fe_tx(&f, tx, 1, 0x1000, "before");
	maps0 = count_maps();

	fe_vring_state(&f, VHOST_USER_SET_VRING_ENABLE, 1, 0);
	assert_non_null(uvn_vu_backend_queue(f.b, 1)->dev); /* the drain's to empty */
	table_elsewhere(&f, fd2, mem2);
	assert_no_stale_ring(&f);
	assert_null(uvn_vu_backend_queue(f.b, 1)->dev);
	assert_int_equal(count_maps(), maps0); /* the old mapping is gone */
	fe_set_mem_table(&f, 0);
	assert_no_stale_ring(&f);
	fe_vring_state(&f, VHOST_USER_SET_VRING_ENABLE, 1, 1);
	assert_true(fe_ready(&f, 1));
	fe_tx(&f, tx, 1, 0x1000, "after a table without the ring");

	fe_vring_state(&f, VHOST_USER_SET_VRING_ENABLE, 1, 0);
	region(&f, VHOST_USER_ADD_MEM_REG, 0x80000000, 1 << 20, mem2, fd2);
	region(&f, VHOST_USER_REM_MEM_REG, f.gpa, FE_MEM_SIZE, f.mem, -1);
	assert_no_stale_ring(&f);
	assert_null(uvn_vu_backend_queue(f.b, 1)->dev);
	/* stopped while out of memory: its state is the one it had */
	assert_int_equal(get_base(&f, 1), 2);
	region(&f, VHOST_USER_ADD_MEM_REG, f.gpa, FE_MEM_SIZE, f.mem, f.memfd);
	fe_setup_ring(&f, 1, 256, FE_RING_OFF(1), 2);
	fe_vring_state(&f, VHOST_USER_SET_VRING_ENABLE, 1, 1);
	assert_true(fe_ready(&f, 1));
	fe_tx(&f, tx, 1, 0x1000, "after REM_MEM_REG");

	uvn_vq_drv_destroy(tx);
	fe_close(&f);
	munmap(mem2, 1 << 20);
	close(fd2);
}

/*
 * A running ring given addresses outside memory (broken), then a new
 * table: the device half must not keep the old addresses either.
 */
static void test_broken_ring_loses_memory(void **state)
{
	struct vhost_vring_addr a = { .index = 1, .desc_user_addr = 0x1000,
				      .avail_user_addr = 0x2000, .used_user_addr = 0x3000 };
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	fe_negotiate_qemu(&f, 256);
	assert_int_equal(fe_send(&f, VHOST_USER_SET_VRING_ADDR, V, &a, sizeof(a), NULL, 0), 0);
	assert_true(uvn_vu_backend_queue(f.b, 1)->broken);
	assert_no_stale_ring(&f);
	fe_set_mem_table(&f, 0);
	assert_no_stale_ring(&f);
	assert_true(fe_ready(&f, 0));
	fe_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_fd_not_eventfd),
		cmocka_unit_test(test_log_fd_not_eventfd),
		cmocka_unit_test(test_eventfds_nonblocking),
		cmocka_unit_test(test_disabled_ring_loses_memory),
		cmocka_unit_test(test_broken_ring_loses_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
