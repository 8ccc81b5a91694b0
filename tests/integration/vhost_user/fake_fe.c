/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_fe.h"

static void dev_queue_ready(void *ctx, struct uvn_vu_queue *q, bool ready)
{
	struct fake_dev *d = ctx;

	assert_true(q->idx < FE_QUEUES + 8);
	if (ready) {
		assert_non_null(q->vq);
		assert_false(d->ready[q->idx]);
		d->ready_events[q->idx]++;
	} else {
		assert_true(d->ready[q->idx]);
		d->vq_valid_on_stop = q->vq != NULL;
		d->stop_events[q->idx]++;
	}
	d->ready[q->idx] = ready;
}

static int dev_set_features(void *ctx, uint64_t features)
{
	struct fake_dev *d = ctx;

	d->set_features_calls++;
	if (d->refuse_features)
		return -ENOTSUP;
	d->features = features;
	return 0;
}

static void dev_set_status(void *ctx, uint8_t status)
{
	((struct fake_dev *)ctx)->status = status;
}

static const struct uvn_vu_device_ops dev_ops = {
	.queue_ready = dev_queue_ready,
	.set_features = dev_set_features,
	.set_status = dev_set_status,
};

/* The guest's memory and its rings' eventfds. */
static void fe_guest_init(struct fe *f, uint64_t features)
{
	f->memfd = memfd_create("guest", MFD_CLOEXEC);
	assert_true(f->memfd >= 0);
	assert_int_equal(ftruncate(f->memfd, FE_MEM_SIZE), 0);
	f->mem = mmap(NULL, FE_MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
	assert_true(f->mem != MAP_FAILED);
	f->gpa = 0x40000000;
	f->features = features;
	for (unsigned i = 0; i < FE_QUEUES; i++) {
		f->kick[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		f->call[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	}
}

static void fe_backend(struct fe *f)
{
	struct uvn_vu_backend_cfg cfg = {
		.features = f->offered,
		.queue_num = f->queues,
		.ops = &dev_ops,
		.ctx = &f->dev,
		.name = "test",
	};
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f->sock = sv[0];
	assert_int_equal(uvn_vu_backend_create(sv[1], &cfg, &f->b), 0);
}

void fe_open(struct fe *f, unsigned queues, uint64_t features)
{
	memset(f, 0, sizeof(*f));
	f->queues = queues;
	f->offered = features;
	fe_backend(f);
	fe_guest_init(f, features);
}

void fe_restart(struct fe *f)
{
	assert_false(f->external);
	uvn_vu_backend_destroy(f->b);
	close(f->sock);
	memset(&f->dev, 0, sizeof(f->dev));
	fe_backend(f);
}

void fe_attach(struct fe *f, int sock, struct uvn_vu_backend *b, uint64_t features)
{
	memset(f, 0, sizeof(*f));
	f->sock = sock;
	f->b = b;
	f->external = true;
	fe_guest_init(f, features);
}

void fe_close(struct fe *f)
{
	if (!f->external)
		uvn_vu_backend_destroy(f->b);
	f->b = NULL;
	close(f->sock);
	munmap(f->mem, FE_MEM_SIZE);
	close(f->memfd);
	for (unsigned i = 0; i < FE_QUEUES; i++) {
		close(f->kick[i]);
		close(f->call[i]);
	}
}

int fe_send(struct fe *f, uint32_t req, uint32_t flags, const void *payload, uint32_t size,
	    const int *fds, unsigned nfds)
{
	struct uvn_vu_msg m;

	uvn_vu_msg_init(&m, req, flags, size);
	if (size)
		memcpy(&m.p, payload, size);
	for (unsigned i = 0; i < nfds; i++)
		m.fds[i] = fds[i];
	m.nfds = nfds;
	assert_int_equal(uvn_vu_msg_send(f->sock, &m), 0);
	return uvn_vu_backend_handle(f->b);
}

int fe_reply(struct fe *f, uint32_t req, struct uvn_vu_msg *out)
{
	struct uvn_vu_rx rx;
	int fl = fcntl(f->sock, F_GETFL), ret;

	fcntl(f->sock, F_SETFL, fl | O_NONBLOCK);
	uvn_vu_rx_init(&rx);
	ret = uvn_vu_msg_recv(f->sock, &rx);
	fcntl(f->sock, F_SETFL, fl);
	if (ret <= 0)
		return 0;
	/* every reply: flags exactly REPLY | version 1, the request echoed, no fds */
	assert_int_equal(rx.msg.hdr.flags, 0x5);
	assert_int_equal(rx.msg.hdr.request, req);
	assert_int_equal(rx.msg.nfds, 0);
	*out = rx.msg;
	return 1;
}

uint64_t fe_get_u64(struct fe *f, uint32_t req, uint32_t flags)
{
	struct uvn_vu_msg r;

	assert_int_equal(fe_send(f, req, VHOST_USER_VERSION | flags, NULL, 0, NULL, 0), 0);
	assert_int_equal(fe_reply(f, req, &r), 1);
	assert_int_equal(r.hdr.size, 8);
	return r.p.u64;
}

uint64_t fe_set_u64_ack(struct fe *f, uint32_t req, uint64_t v)
{
	return fe_ack(f, req, &v, 8);
}

uint64_t fe_ack(struct fe *f, uint32_t req, const void *payload, uint32_t size)
{
	struct uvn_vu_msg r;

	assert_int_equal(fe_send(f, req, VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK, payload,
				 size, NULL, 0), 0);
	assert_int_equal(fe_reply(f, req, &r), 1);
	assert_int_equal(r.hdr.size, 8);
	return r.p.u64;
}

void fe_set_mem_table(struct fe *f, uint32_t flags)
{
	struct uvn_vu_memory t = { .nregions = 1 };
	struct uvn_vu_msg r;
	uint32_t size = 8 + 32;

	t.regions[0].guest_phys_addr = f->gpa;
	t.regions[0].memory_size = FE_MEM_SIZE;
	t.regions[0].userspace_addr = (uint64_t)(uintptr_t)f->mem;
	t.regions[0].mmap_offset = 0;
	assert_int_equal(fe_send(f, VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION | flags, &t, size,
				 &f->memfd, 1), 0);
	if (flags & VHOST_USER_NEED_REPLY_MASK) {
		assert_int_equal(fe_reply(f, VHOST_USER_SET_MEM_TABLE, &r), 1);
		assert_int_equal(r.p.u64, 0);
	}
}

void fe_vring_state(struct fe *f, uint32_t req, unsigned idx, unsigned num)
{
	struct vhost_vring_state s = { .index = idx, .num = num };

	assert_int_equal(fe_send(f, req, VHOST_USER_VERSION, &s, sizeof(s), NULL, 0), 0);
}

void fe_vring_fd(struct fe *f, uint32_t req, unsigned idx, int fd)
{
	uint64_t v = idx | (fd < 0 ? VHOST_USER_VRING_NOFD_MASK : 0);

	assert_int_equal(fe_send(f, req, VHOST_USER_VERSION, &v, 8, &fd, fd < 0 ? 0 : 1), 0);
}

void fe_setup_ring(struct fe *f, unsigned idx, unsigned num, uint64_t off, uint32_t base)
{
	bool packed = (f->features >> VIRTIO_F_RING_PACKED) & 1;
	struct vhost_vring_addr a = { .index = idx };
	struct uvn_vq_layout lay;

	assert_int_equal(uvn_vq_layout(packed, num, &lay), 0);
	a.desc_user_addr = (uint64_t)(uintptr_t)(f->mem + off + lay.desc);
	a.avail_user_addr = (uint64_t)(uintptr_t)(f->mem + off + lay.driver);
	a.used_user_addr = (uint64_t)(uintptr_t)(f->mem + off + lay.device);
	a.log_guest_addr = f->gpa + off + lay.device;
	fe_vring_state(f, VHOST_USER_SET_VRING_NUM, idx, num);
	fe_vring_state(f, VHOST_USER_SET_VRING_BASE, idx, base);
	assert_int_equal(fe_send(f, VHOST_USER_SET_VRING_ADDR, VHOST_USER_VERSION, &a, sizeof(a),
				 NULL, 0), 0);
	fe_vring_fd(f, VHOST_USER_SET_VRING_KICK, idx, f->kick[idx]);
}

bool fe_ready(struct fe *f, unsigned idx)
{
	return uvn_vu_backend_queue(f->b, idx)->vq != NULL;
}

void fe_negotiate_qemu(struct fe *f, unsigned num)
{
	uint64_t feat, proto;

	feat = fe_get_u64(f, VHOST_USER_GET_FEATURES, 0);
	assert_true(feat & (1ull << VHOST_USER_F_PROTOCOL_FEATURES));
	proto = fe_get_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES, 0);
	assert_int_equal(fe_send(f, VHOST_USER_SET_PROTOCOL_FEATURES, VHOST_USER_VERSION, &proto, 8,
				 NULL, 0), 0);
	assert_int_equal(fe_get_u64(f, VHOST_USER_GET_QUEUE_NUM, 0), FE_QUEUES / 2);
	assert_int_equal(fe_get_u64(f, VHOST_USER_GET_MAX_MEM_SLOTS, 0), 32);
	assert_int_equal(fe_send(f, VHOST_USER_SET_OWNER, VHOST_USER_VERSION, NULL, 0, NULL, 0), 0);
	feat = fe_get_u64(f, VHOST_USER_GET_FEATURES, 0);
	f->features |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	assert_int_equal(fe_set_u64_ack(f, VHOST_USER_SET_FEATURES, f->features), 0);
	fe_set_mem_table(f, VHOST_USER_NEED_REPLY_MASK);
	/* a fresh packed ring: both wrap counters 1 (bits 15 and 31) */
	uint32_t base = (f->features >> VIRTIO_F_RING_PACKED) & 1 ? 0x80008000u : 0;

	for (unsigned i = 0; i < FE_QUEUES; i++) {
		fe_setup_ring(f, i, num, FE_RING_OFF(i), base);
		fe_vring_fd(f, VHOST_USER_SET_VRING_CALL, i, f->call[i]);
	}
	/* rings start disabled with PROTOCOL_FEATURES */
	for (unsigned i = 0; i < FE_QUEUES; i++)
		assert_false(fe_ready(f, i));
	for (unsigned i = 0; i < FE_QUEUES; i++)
		fe_vring_state(f, VHOST_USER_SET_VRING_ENABLE, i, 1);
	for (unsigned i = 0; i < FE_QUEUES; i++)
		assert_true(fe_ready(f, i));
}

int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

int count_maps(void)
{
	FILE *fp = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp))
		n += strstr(line, "/memfd:") != NULL;
	fclose(fp);
	return n;
}

struct uvn_vq_drv *fe_driver(struct fe *f, unsigned idx, unsigned num)
{
	struct uvn_vq_drv_cfg cfg = {
		.num = num,
		.features = f->features & ~(1ull << VHOST_USER_F_PROTOCOL_FEATURES),
		.ring = f->mem + FE_RING_OFF(idx),
	};
	struct uvn_vq_drv *vq;

	assert_int_equal(uvn_vq_drv_create(&cfg, &vq), 0);
	return vq;
}

void fe_tx(struct fe *f, struct uvn_vq_drv *drv, unsigned idx, uint64_t off, const char *s)
{
	struct uvn_vu_queue *q = uvn_vu_backend_queue(f->b, idx);
	struct uvn_sg sg = { .addr = f->gpa + off, .len = (uint32_t)strlen(s) + 1 };
	struct uvn_vq_done done;
	struct uvn_vq_chain ch;
	struct iovec iov[4];
	int token;

	strcpy((char *)f->mem + off, s);
	assert_int_equal(uvn_vq_drv_add(drv, &sg, 1, 0, &token, 0), 0);
	(void)uvn_vq_drv_kick_prepare(drv); /* EVENT_IDX decides; the test polls */
	assert_non_null(q->vq);
	assert_int_equal(uvn_vq_dev_avail(q->vq), 1);
	assert_int_equal(uvn_vq_dev_pop(q->vq, &ch, iov, 4), 1);
	assert_int_equal(ch.nout, 1);
	assert_int_equal(ch.out_len, sg.len);
	/* the backend's own mapping of the same memory */
	assert_ptr_not_equal(iov[0].iov_base, f->mem + off);
	assert_string_equal((char *)iov[0].iov_base, s);
	uvn_vq_dev_push(q->vq, &ch, 0);
	if (uvn_vq_dev_flush(q->vq))
		uvn_vu_queue_notify(q);
	assert_int_equal(uvn_vq_drv_get_used(drv, &done, 1), 1);
	assert_ptr_equal(done.token, &token);
}
