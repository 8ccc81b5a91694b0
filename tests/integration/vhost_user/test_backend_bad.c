/* SPDX-License-Identifier: MIT */
/*
 * A hostile or broken frontend. Each case brings a session to some point
 * of the negotiation, sends one bad thing, and checks the documented
 * outcome: the connection dropped, the one queue broken (and its error
 * eventfd signalled), or the request declined with the session alive; the
 * right counter moved; a bystander session on another socketpair keeps
 * moving packets; and no fd or mapping is left behind.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>
#include <linux/virtio_net.h>

#include "fake_fe.h"
#include "ring/inflight.h"
#include "vhost_user/internal.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))

enum level { FRESH, FEATURES, MEMORY, READY };
enum outcome { DROP, BROKEN, ALIVE };

struct bad_case {
	const char *name;
	enum level level;
	int (*send)(struct fe *f);
	enum outcome outcome;
	size_t counter; /* offsetof(struct uvn_vu_stats, ...) */
};

#define V VHOST_USER_VERSION
#define ST(f) offsetof(struct uvn_vu_stats, f)

static int raw(struct fe *f, uint32_t req, uint32_t flags, const void *p, uint32_t size)
{
	return fe_send(f, req, flags, p, size, NULL, 0);
}

static int state_msg(struct fe *f, uint32_t req, unsigned idx, unsigned num)
{
	struct vhost_vring_state s = { .index = idx, .num = num };

	return raw(f, req, V, &s, sizeof(s));
}

static int mem_table(struct fe *f, uint64_t gpa, uint64_t size, uint64_t off, int fd)
{
	struct uvn_vu_memory t = { .nregions = 1 };

	t.regions[0].guest_phys_addr = gpa;
	t.regions[0].memory_size = size;
	t.regions[0].userspace_addr = (uint64_t)(uintptr_t)f->mem;
	t.regions[0].mmap_offset = off;
	return fe_send(f, VHOST_USER_SET_MEM_TABLE, V, &t, 8 + 32, &fd, 1);
}

/* SET_VRING_NUM 256, then SET_VRING_ADDR. */
static int ring_addr(struct fe *f, unsigned idx, uint64_t desc, uint64_t avail, uint64_t used)
{
	struct vhost_vring_addr a = { .index = idx, .desc_user_addr = desc,
				      .avail_user_addr = avail, .used_user_addr = used };

	assert_int_equal(state_msg(f, VHOST_USER_SET_VRING_NUM, idx, 256), 0);
	return raw(f, VHOST_USER_SET_VRING_ADDR, V, &a, sizeof(a));
}

static uint64_t uva(struct fe *f, uint64_t off)
{
	return (uint64_t)(uintptr_t)(f->mem + off);
}

/* --- malformed framing: the connection is dropped */

static int c_wrong_size(struct fe *f)
{
	uint32_t v = 1;

	return raw(f, VHOST_USER_SET_FEATURES, V, &v, 4);
}

static int c_beyond_union(struct fe *f)
{
	struct uvn_vu_hdr h = { VHOST_USER_SET_FEATURES, V, 4096 };

	assert_int_equal(write(f->sock, &h, sizeof(h)), (ssize_t)sizeof(h));
	return uvn_vu_backend_handle(f->b);
}

static int c_missing_fd(struct fe *f)
{
	uint64_t v = 0; /* no NOFD bit, no fd */

	return raw(f, VHOST_USER_SET_VRING_KICK, V, &v, 8);
}

static int c_extra_fds(struct fe *f)
{
	int fds[2] = { eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC) };
	uint64_t v = 0;
	int ret = fe_send(f, VHOST_USER_SET_VRING_CALL, V, &v, 8, fds, 2);

	close(fds[0]);
	close(fds[1]);
	return ret;
}

static int c_fd_with_nofd(struct fe *f)
{
	int fd = eventfd(0, EFD_CLOEXEC);
	uint64_t v = VHOST_USER_VRING_NOFD_MASK;
	int ret = fe_send(f, VHOST_USER_SET_VRING_CALL, V, &v, 8, &fd, 1);

	close(fd);
	return ret;
}

static int c_fd_on_get(struct fe *f)
{
	int fd = eventfd(0, EFD_CLOEXEC);
	int ret = fe_send(f, VHOST_USER_GET_FEATURES, V, NULL, 0, &fd, 1);

	close(fd);
	return ret;
}

static int c_nine_fds(struct fe *f)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 9)];
		struct cmsghdr align;
	} ctl;
	struct uvn_vu_hdr h = { VHOST_USER_SET_OWNER, V, 0 };
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	int fds[9];

	for (int i = 0; i < 9; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	assert_int_equal(sendmsg(f->sock, &mh, 0), (ssize_t)sizeof(h));
	for (int i = 0; i < 9; i++)
		close(fds[i]);
	return uvn_vu_backend_handle(f->b);
}

static int c_version_2(struct fe *f)
{
	return raw(f, VHOST_USER_GET_FEATURES, 2, NULL, 0);
}

static int c_reply_flag(struct fe *f)
{
	return raw(f, VHOST_USER_GET_FEATURES, V | VHOST_USER_REPLY_MASK, NULL, 0);
}

static int c_unknown_flag(struct fe *f)
{
	return raw(f, VHOST_USER_GET_FEATURES, V | (1u << 7), NULL, 0);
}

static int c_iotlb(struct fe *f)
{
	uint8_t p[24] = { 0 };

	return raw(f, VHOST_USER_IOTLB_MSG, V, p, sizeof(p));
}

static int c_request_1000(struct fe *f)
{
	return raw(f, 1000, V, NULL, 0);
}

static int c_truncated(struct fe *f)
{
	struct uvn_vu_hdr h = { VHOST_USER_SET_FEATURES, V, 8 };

	assert_int_equal(write(f->sock, &h, 6), 6);
	shutdown(f->sock, SHUT_WR);
	return uvn_vu_backend_handle(f->b);
}

static int c_queue_index(struct fe *f)
{
	return state_msg(f, VHOST_USER_SET_VRING_NUM, 7, 256);
}

static int c_kick_index(struct fe *f)
{
	uint64_t v = 200 | VHOST_USER_VRING_NOFD_MASK;

	return raw(f, VHOST_USER_SET_VRING_KICK, V, &v, 8);
}

static int c_not_offered(struct fe *f)
{
	uint64_t v = 1ull << VIRTIO_NET_F_MRG_RXBUF; /* the device did not offer it */

	return raw(f, VHOST_USER_SET_FEATURES, V, &v, 8);
}

static int c_proto_not_offered(struct fe *f)
{
	uint64_t v = 1ull << VHOST_USER_PROTOCOL_F_CONFIG;

	return raw(f, VHOST_USER_SET_PROTOCOL_FEATURES, V, &v, 8);
}

static int c_device_refuses(struct fe *f)
{
	uint64_t v = NET_FEATURES;

	f->dev.refuse_features = 1;
	return raw(f, VHOST_USER_SET_FEATURES, V, &v, 8);
}

static int c_offset_beyond_fd(struct fe *f)
{
	return mem_table(f, f->gpa, 4096, FE_MEM_SIZE, f->memfd);
}

static int c_huge_region(struct fe *f)
{
	return mem_table(f, f->gpa, 1ull << 62, 0, f->memfd);
}

static int c_region_wraps(struct fe *f)
{
	return mem_table(f, UINT64_MAX - 4095, 8192, 0, f->memfd);
}

static int c_region_pipe(struct fe *f)
{
	int p[2], ret;

	assert_int_equal(pipe(p), 0);
	ret = mem_table(f, f->gpa, 4096, 0, p[0]);
	close(p[0]);
	close(p[1]);
	return ret;
}

static int c_overlapping_regions(struct fe *f)
{
	struct uvn_vu_memory t = { .nregions = 2 };
	int fds[2] = { f->memfd, f->memfd };

	for (int i = 0; i < 2; i++) {
		t.regions[i].guest_phys_addr = f->gpa + i * 4096;
		t.regions[i].memory_size = 8192;
		t.regions[i].userspace_addr = uva(f, 0);
	}
	return fe_send(f, VHOST_USER_SET_MEM_TABLE, V, &t, 8 + 64, fds, 2);
}

static int c_zero_regions(struct fe *f)
{
	struct uvn_vu_memory t = { .nregions = 0 };

	return raw(f, VHOST_USER_SET_MEM_TABLE, V, &t, 8);
}

static int c_bad_log(struct fe *f)
{
	struct uvn_vu_log l = { .mmap_size = 1 << 20, .mmap_offset = 0 };
	int fd = memfd_create("small-log", MFD_CLOEXEC), ret;

	assert_int_equal(ftruncate(fd, 4096), 0);
	ret = fe_send(f, VHOST_USER_SET_LOG_BASE, V, &l, sizeof(l), &fd, 1);
	close(fd);
	return ret;
}

/* --- one queue misconfigured: that queue breaks, the session lives */

static int c_addr_outside(struct fe *f)
{
	return ring_addr(f, 0, f->gpa, f->gpa + 4096, f->gpa + 8192); /* gpas, not user addresses */
}

static int c_addr_straddles_end(struct fe *f)
{
	return ring_addr(f, 0, uva(f, FE_MEM_SIZE - 2048), uva(f, 0), uva(f, 8192));
}

static int c_addr_misaligned(struct fe *f)
{
	return ring_addr(f, 0, uva(f, 8), uva(f, 8192), uva(f, 16384));
}

static int c_addr_flags(struct fe *f)
{
	struct vhost_vring_addr a = { .index = 0, .flags = 2, .desc_user_addr = uva(f, 0),
				      .avail_user_addr = uva(f, 8192), .used_user_addr = uva(f, 16384) };

	state_msg(f, VHOST_USER_SET_VRING_NUM, 0, 256);
	return raw(f, VHOST_USER_SET_VRING_ADDR, V, &a, sizeof(a));
}

static int c_num_not_pow2(struct fe *f)
{
	return state_msg(f, VHOST_USER_SET_VRING_NUM, 0, 100);
}

static int c_num_too_big(struct fe *f)
{
	return state_msg(f, VHOST_USER_SET_VRING_NUM, 0, 65536);
}

static int c_num_zero(struct fe *f)
{
	return state_msg(f, VHOST_USER_SET_VRING_NUM, 0, 0);
}

static int c_num_while_started(struct fe *f)
{
	return state_msg(f, VHOST_USER_SET_VRING_NUM, 0, 128);
}

static int c_base_while_started(struct fe *f)
{
	return state_msg(f, VHOST_USER_SET_VRING_BASE, 0, 5);
}

static int c_addr_before_mem(struct fe *f)
{
	return ring_addr(f, 0, uva(f, 0), uva(f, 8192), uva(f, 16384));
}

static int c_kick_before_addr(struct fe *f)
{
	state_msg(f, VHOST_USER_SET_VRING_NUM, 0, 256);
	fe_vring_fd(f, VHOST_USER_SET_VRING_KICK, 0, f->kick[0]);
	return 0;
}

static int c_kick_before_num(struct fe *f)
{
	fe_vring_fd(f, VHOST_USER_SET_VRING_KICK, 0, -1);
	return 0;
}

static int c_enable_2(struct fe *f)
{
	return state_msg(f, VHOST_USER_SET_VRING_ENABLE, 0, 2);
}

/* --- declined or tolerated: the session lives */

static int c_get_base_never_started(struct fe *f)
{
	struct uvn_vu_msg r;
	int ret;

	state_msg(f, VHOST_USER_SET_VRING_BASE, 0, 42);
	ret = state_msg(f, VHOST_USER_GET_VRING_BASE, 0, 0);
	assert_int_equal(fe_reply(f, VHOST_USER_GET_VRING_BASE, &r), 1);
	assert_int_equal(r.p.state.num, 42);
	return ret;
}

static int c_get_config(struct fe *f)
{
	struct uvn_vu_config c = { .offset = 0, .size = 6 };
	struct uvn_vu_msg r;
	int ret = raw(f, VHOST_USER_GET_CONFIG, V, &c, 12 + 6);

	/* vhost-user.rst: an empty payload tells the frontend it failed */
	assert_int_equal(fe_reply(f, VHOST_USER_GET_CONFIG, &r), 1);
	assert_int_equal(r.hdr.size, 0);
	return ret;
}

static int c_set_config(struct fe *f)
{
	struct uvn_vu_config c = { .offset = 0, .size = 6 };

	assert_int_not_equal(fe_ack(f, VHOST_USER_SET_CONFIG, &c, 12 + 6), 0);
	return 0;
}

static int c_rem_reg_with_fd(struct fe *f)
{
	struct uvn_vu_mem_reg m = { 0 };
	int fd = eventfd(0, EFD_CLOEXEC), ret;

	m.region.guest_phys_addr = f->gpa;
	m.region.memory_size = FE_MEM_SIZE;
	m.region.userspace_addr = uva(f, 0);
	ret = fe_send(f, VHOST_USER_REM_MEM_REG, V, &m, sizeof(m), &fd, 1);
	close(fd);
	assert_null(uvn_vu_backend_queue(f->b, 0)->vq); /* its ring went with the region */
	return ret;
}

/* --- more of the frontend's files than the session may map (max_mem; a
 * sparse file of terabytes would take the process's address space) */

static int c_table_over_max_mem(struct fe *f)
{
	f->b->max_mem = FE_MEM_SIZE / 2;
	return mem_table(f, f->gpa, FE_MEM_SIZE, 0, f->memfd);
}

static int c_add_reg_over_max_mem(struct fe *f)
{
	struct uvn_vu_mem_reg m = { 0 };

	f->b->max_mem = vu_table_bytes(f->b->mem) + 4096;
	m.region.guest_phys_addr = f->gpa + FE_MEM_SIZE;
	m.region.memory_size = 8192;
	m.region.userspace_addr = uva(f, 0) + FE_MEM_SIZE;
	return fe_send(f, VHOST_USER_ADD_MEM_REG, V, &m, sizeof(m), &f->memfd, 1);
}

static int c_log_over_max_mem(struct fe *f)
{
	struct uvn_vu_log l = { .mmap_size = 4096, .mmap_offset = 0 };
	int fd = memfd_create("log", MFD_CLOEXEC), ret;

	assert_int_equal(ftruncate(fd, 4096), 0);
	f->b->max_mem = vu_table_bytes(f->b->mem);
	ret = fe_send(f, VHOST_USER_SET_LOG_BASE, V, &l, sizeof(l), &fd, 1);
	close(fd);
	return ret;
}

static int c_inflight_over_max_mem(struct fe *f)
{
	struct uvn_vu_inflight d = { .num_queues = 1, .queue_size = 256 };
	int fd = memfd_create("inflight", MFD_CLOEXEC), ret;

	d.mmap_size = uvn_inflight_slice_size(256);
	assert_int_equal(ftruncate(fd, (off_t)d.mmap_size), 0);
	f->b->max_mem = vu_table_bytes(f->b->mem);
	ret = fe_send(f, VHOST_USER_SET_INFLIGHT_FD, V, &d, sizeof(d), &fd, 1);
	close(fd);
	assert_null(f->b->inflight.reg.map);
	return ret;
}

static const struct bad_case cases[] = {
	{ "wrong payload size", READY, c_wrong_size, DROP, ST(err_size) },
	{ "payload larger than the union", READY, c_beyond_union, DROP, ST(err_size) },
	{ "missing fd", READY, c_missing_fd, DROP, ST(err_fds) },
	{ "extra fds", READY, c_extra_fds, DROP, ST(err_fds) },
	{ "fd with the NOFD bit", READY, c_fd_with_nofd, DROP, ST(err_fds) },
	{ "fd on a request without fds", READY, c_fd_on_get, DROP, ST(err_fds) },
	{ "nine fds", READY, c_nine_fds, DROP, ST(err_fds) },
	{ "version 2", READY, c_version_2, DROP, ST(err_header) },
	{ "REPLY flag on a request", FRESH, c_reply_flag, DROP, ST(err_header) },
	{ "unknown flag", FRESH, c_unknown_flag, DROP, ST(err_header) },
	{ "IOTLB_MSG (not offered)", READY, c_iotlb, DROP, ST(err_unknown) },
	{ "request 1000", FRESH, c_request_1000, DROP, ST(err_unknown) },
	{ "truncated message", READY, c_truncated, DROP, ST(err_io) },
	{ "queue index out of range", READY, c_queue_index, DROP, ST(err_index) },
	{ "kick index out of range", FRESH, c_kick_index, DROP, ST(err_index) },
	{ "features never offered", FRESH, c_not_offered, DROP, ST(err_feature) },
	{ "protocol features never offered", FRESH, c_proto_not_offered, DROP, ST(err_feature) },
	{ "device refuses features", FRESH, c_device_refuses, DROP, ST(err_feature) },
	{ "mmap_offset beyond the fd", FEATURES, c_offset_beyond_fd, DROP, ST(err_mem) },
	{ "huge region size", READY, c_huge_region, DROP, ST(err_mem) },
	{ "region wraps around", FEATURES, c_region_wraps, DROP, ST(err_mem) },
	{ "region fd is a pipe", FEATURES, c_region_pipe, DROP, ST(err_mem) },
	{ "overlapping regions", FEATURES, c_overlapping_regions, DROP, ST(err_mem) },
	{ "memory table of 0 regions", FEATURES, c_zero_regions, DROP, ST(err_size) },
	{ "log larger than its fd", READY, c_bad_log, DROP, ST(err_log) },
	{ "ring addresses outside memory", MEMORY, c_addr_outside, BROKEN, ST(err_ring) },
	{ "ring straddles the end of memory", MEMORY, c_addr_straddles_end, BROKEN, ST(err_ring) },
	{ "ring misaligned", MEMORY, c_addr_misaligned, BROKEN, ST(err_ring) },
	{ "unknown ring address flags", MEMORY, c_addr_flags, BROKEN, ST(err_ring) },
	{ "ring size not a power of two", MEMORY, c_num_not_pow2, BROKEN, ST(err_ring) },
	{ "ring size above 32768", MEMORY, c_num_too_big, BROKEN, ST(err_ring) },
	{ "ring size 0", MEMORY, c_num_zero, BROKEN, ST(err_ring) },
	{ "SET_VRING_NUM on a started ring", READY, c_num_while_started, BROKEN, ST(err_order) },
	{ "SET_VRING_BASE on a started ring", READY, c_base_while_started, BROKEN, ST(err_order) },
	{ "SET_VRING_ADDR before SET_MEM_TABLE", FEATURES, c_addr_before_mem, BROKEN, ST(err_order) },
	{ "kick before addresses", MEMORY, c_kick_before_addr, BROKEN, ST(err_order) },
	{ "kick before size", FRESH, c_kick_before_num, BROKEN, ST(err_order) },
	{ "SET_VRING_ENABLE 2", READY, c_enable_2, BROKEN, ST(err_ring) },
	{ "GET_VRING_BASE on a never-started ring", MEMORY, c_get_base_never_started, ALIVE, ST(err_order) },
	{ "GET_CONFIG", READY, c_get_config, ALIVE, ST(err_feature) },
	{ "SET_CONFIG", READY, c_set_config, ALIVE, ST(err_feature) },
	{ "REM_MEM_REG with an fd", READY, c_rem_reg_with_fd, ALIVE, ST(fds_unused) },
	{ "memory table over max_mem", FEATURES, c_table_over_max_mem, DROP, ST(err_mem) },
	{ "ADD_MEM_REG over max_mem", READY, c_add_reg_over_max_mem, DROP, ST(err_mem) },
	{ "dirty log over max_mem", READY, c_log_over_max_mem, DROP, ST(err_log) },
	{ "in-flight region over max_mem", MEMORY, c_inflight_over_max_mem, ALIVE,
	  ST(err_inflight) },
};

static void bring_up(struct fe *f, enum level lv)
{
	int err = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t proto;

	if (lv == READY) {
		fe_negotiate_qemu(f, 256);
	} else if (lv >= FEATURES) {
		proto = fe_get_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES, 0);
		assert_int_equal(raw(f, VHOST_USER_SET_PROTOCOL_FEATURES, V, &proto, 8), 0);
		f->features |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
		assert_int_equal(raw(f, VHOST_USER_SET_FEATURES, V, &f->features, 8), 0);
		if (lv == MEMORY)
			fe_set_mem_table(f, 0);
	}
	fe_vring_fd(f, VHOST_USER_SET_VRING_ERR, 0, err);
	close(err);
}

static uint64_t stat_of(struct fe *f, size_t off)
{
	return *(const uint64_t *)((const char *)uvn_vu_backend_stats(f->b) + off);
}

static void run_case(const struct bad_case *c, struct fe *bystander, struct uvn_vq_drv *bdrv)
{
	int fds0 = count_fds(), maps0 = count_maps(), ret;
	struct uvn_vu_queue *q;
	uint64_t v = 0;
	struct fe f;

	print_message("case: %s\n", c->name);
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	bring_up(&f, c->level);
	q = uvn_vu_backend_queue(f.b, 0);
	ret = c->send(&f);
	assert_true(stat_of(&f, c->counter) >= 1);
	switch (c->outcome) {
	case DROP:
		assert_true(ret < 0);
		assert_true(uvn_vu_backend_handle(f.b) < 0); /* stays dead */
		break;
	case BROKEN:
		assert_int_equal(ret, 0);
		assert_true(q->broken);
		assert_null(q->vq);
		assert_false(f.dev.ready[0]);
		assert_int_equal(uvn_vu_backend_stats(f.b)->queues_broken, 1);
		/* the frontend hears about it on the queue's error eventfd */
		assert_int_equal(read(q->err_fd, &v, 8), 8);
		assert_int_equal(v, 1);
		if (c->level == READY)
			assert_true(f.dev.ready[1]); /* the other queue is untouched */
		assert_true(fe_get_u64(&f, VHOST_USER_GET_FEATURES, 0) & NET_FEATURES);
		break;
	case ALIVE:
		assert_int_equal(ret, 0);
		assert_true(fe_get_u64(&f, VHOST_USER_GET_FEATURES, 0) & NET_FEATURES);
		break;
	}
	fe_close(&f);
	/* everything the bad frontend sent or made us map is gone */
	assert_int_equal(count_fds(), fds0);
	assert_int_equal(count_maps(), maps0);
	/* and the other session kept working */
	fe_tx(bystander, bdrv, 1, 0x1000, c->name);
	assert_int_equal(fe_get_u64(bystander, VHOST_USER_GET_FEATURES, 0) & NET_FEATURES, NET_FEATURES);
}

static void test_bad_frontends(void **state)
{
	struct uvn_vq_drv *bdrv;
	struct fe other;

	(void)state;
	fe_open(&other, FE_QUEUES, NET_FEATURES);
	/* max_mem 0 in the config: the machine's physical memory */
	assert_true(other.b->max_mem ==
		    (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE));
	fe_negotiate_qemu(&other, 256);
	bdrv = fe_driver(&other, 1, 256);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], &other, bdrv);
	assert_int_equal(uvn_vu_backend_stats(other.b)->queues_broken, 0);
	uvn_vq_drv_destroy(bdrv);
	fe_close(&other);
}

/* Half a message, then the rest: reassembled, nothing lost. */
static void test_partial_message(void **state)
{
	struct uvn_vu_hdr h = { VHOST_USER_GET_FEATURES, V, 0 };
	struct uvn_vu_msg r;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	assert_int_equal(write(f.sock, &h, 5), 5);
	assert_int_equal(uvn_vu_backend_handle(f.b), 0);
	assert_int_equal(fe_reply(&f, VHOST_USER_GET_FEATURES, &r), 0);
	assert_int_equal(write(f.sock, (char *)&h + 5, sizeof(h) - 5), (ssize_t)(sizeof(h) - 5));
	assert_int_equal(uvn_vu_backend_handle(f.b), 0);
	assert_int_equal(fe_reply(&f, VHOST_USER_GET_FEATURES, &r), 1);
	assert_true(r.p.u64 & NET_FEATURES);
	/* an orderly close is not an error */
	close(f.sock);
	assert_int_equal(uvn_vu_backend_handle(f.b), -ECONNRESET);
	assert_int_equal(uvn_vu_backend_stats(f.b)->err_io, 0);
	f.sock = -1;
	fe_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_frontends),
		cmocka_unit_test(test_partial_message),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
