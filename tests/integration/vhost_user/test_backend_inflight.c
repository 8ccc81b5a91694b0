/* SPDX-License-Identifier: MIT */
/*
 * INFLIGHT_SHMFD through the backend: GET_INFLIGHT_FD hands out a region,
 * the backend dies holding chains (destroyed without draining), a new
 * backend gets the region back with SET_INFLIGHT_FD and pops the chains
 * it held first, then the new ones: every guest buffer comes back exactly
 * once. Then hostile descriptions, fds, message sizes and region
 * contents: counted errors, nothing else disturbed, no fd leaked.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_fe.h"
#include "ring/inflight.h"

#define NUM 256
#define F_VERSION_1 (1ull << VIRTIO_F_VERSION_1)
#define F_INFLIGHT (1ull << VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)
#define F_PACKED (1ull << VIRTIO_F_RING_PACKED)
/* A packed ring's base as QEMU sends it at a start, and again after its
 * backend died: position 0, wrap counter 1, both halves. */
#define PACKED_FRESH 0x80008000u

static const char *const str[] = { "alpha", "bravo", "charlie", "delta" };

static const struct uvn_vu_stats *st(struct fe *f)
{
	return uvn_vu_backend_stats(f->b);
}

/* GET_INFLIGHT_FD: @return the region's fd or -1, the reply in *@out. */
static int get_inflight(struct fe *f, uint16_t nq, uint16_t qs, struct uvn_vu_inflight *out)
{
	struct uvn_vu_inflight d = { .num_queues = nq, .queue_size = qs };
	struct uvn_vu_msg req;
	struct uvn_vu_rx rx;
	int fd = -1;

	assert_int_equal(fe_send(f, VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_VERSION, &d, sizeof(d),
				 NULL, 0), 0);
	uvn_vu_rx_init(&rx);
	assert_int_equal(uvn_vu_msg_recv(f->sock, &rx), 1);
	uvn_vu_msg_init(&req, VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_VERSION, sizeof(d));
	/* the codec's own rule for this reply: size 24, an fd iff mmap_size */
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rx.msg), 0);
	*out = rx.msg.p.inflight;
	if (rx.msg.nfds)
		fd = uvn_vu_msg_take_fd(&rx.msg, 0);
	uvn_vu_rx_reset(&rx);
	return fd;
}

/* SET_INFLIGHT_FD with an ack. @return the ack (0 = accepted). */
static uint64_t set_inflight(struct fe *f, const struct uvn_vu_inflight *d, int fd)
{
	struct uvn_vu_msg r;

	assert_int_equal(fe_send(f, VHOST_USER_SET_INFLIGHT_FD,
				 VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK, d, sizeof(*d), &fd, 1),
			 0);
	assert_int_equal(fe_reply(f, VHOST_USER_SET_INFLIGHT_FD, &r), 1);
	return r.p.u64;
}

/* Protocol features: all we are offered, less @without. */
static void negotiate_protocol_less(struct fe *f, uint64_t without)
{
	uint64_t proto;

	(void)fe_get_u64(f, VHOST_USER_GET_FEATURES, 0);
	proto = fe_get_u64(f, VHOST_USER_GET_PROTOCOL_FEATURES, 0);
	assert_true(proto & F_INFLIGHT); /* offered by default */
	proto &= ~without;
	assert_int_equal(fe_send(f, VHOST_USER_SET_PROTOCOL_FEATURES, VHOST_USER_VERSION, &proto, 8,
				 NULL, 0), 0);
	assert_int_equal(fe_send(f, VHOST_USER_SET_OWNER, VHOST_USER_VERSION, NULL, 0, NULL, 0), 0);
}

static void negotiate_protocol(struct fe *f)
{
	negotiate_protocol_less(f, 0);
}

/* The rest of QEMU's start: features, memory, rings from @base, enabled. */
static void start_rings(struct fe *f, uint32_t base)
{
	f->features |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	assert_int_equal(fe_set_u64_ack(f, VHOST_USER_SET_FEATURES, f->features), 0);
	fe_set_mem_table(f, VHOST_USER_NEED_REPLY_MASK);
	for (unsigned i = 0; i < FE_QUEUES; i++) {
		fe_setup_ring(f, i, NUM, FE_RING_OFF(i), base);
		fe_vring_fd(f, VHOST_USER_SET_VRING_CALL, i, f->call[i]);
		fe_vring_state(f, VHOST_USER_SET_VRING_ENABLE, i, 1);
	}
}

/* GET_VRING_BASE: stop ring @i. */
static void stop_ring(struct fe *f, unsigned i)
{
	struct uvn_vu_msg r;

	fe_vring_state(f, VHOST_USER_GET_VRING_BASE, i, 0);
	assert_int_equal(fe_reply(f, VHOST_USER_GET_VRING_BASE, &r), 1);
}

static uint16_t used_idx(struct fe *f, unsigned ring)
{
	struct uvn_vq_layout lay;
	uint16_t v;

	assert_int_equal(uvn_vq_layout(false, NUM, &lay), 0);
	memcpy(&v, f->mem + FE_RING_OFF(ring) + lay.device + 2, 2);
	return le16toh(v);
}

/* The guest posts the four strings as TX buffers on ring 0, @tokens theirs. */
static void post_strings(struct fe *f, struct uvn_vq_drv *drv, int *tokens)
{
	for (int i = 0; i < 4; i++) {
		struct uvn_sg sg = { .addr = f->gpa + 4096 * (i + 1), .len = (uint32_t)strlen(str[i]) + 1 };

		strcpy((char *)f->mem + 4096 * (i + 1), str[i]);
		assert_int_equal(uvn_vq_drv_add(drv, &sg, 1, 0, &tokens[i], 0), 0);
	}
	(void)uvn_vq_drv_kick_prepare(drv);
}

/* The driver takes back @n buffers, counted in @back. */
static void take_back(struct uvn_vq_drv *drv, const int *tokens, int *back, int n)
{
	struct uvn_vq_done done[8];

	assert_int_equal(uvn_vq_drv_get_used(drv, done, 8), n);
	for (int i = 0; i < n; i++)
		back[(const int *)done[i].token - tokens]++;
}

/* The device pops one chain from ring 0 and checks it is string @s. */
static void pop_expect(struct fe *f, struct uvn_vq_chain *ch, const char *s)
{
	struct uvn_vu_queue *q = uvn_vu_backend_queue(f->b, 0);
	struct iovec iov[4];

	assert_non_null(q->vq);
	assert_int_equal(uvn_vq_dev_pop(q->vq, ch, iov, 4), 1);
	assert_int_equal(ch->nout, 1);
	assert_string_equal((char *)iov[0].iov_base, s);
}

/* A packed frontend sharing a region (its fd returned, described in *@d),
 * its rings started fresh and the four strings posted on ring 0. */
static int packed_started(struct fe *f, struct uvn_vu_inflight *d, struct uvn_vq_drv **drv,
			  int *tokens)
{
	int fd;

	fe_open(f, FE_QUEUES, F_VERSION_1 | F_PACKED);
	negotiate_protocol(f);
	fd = get_inflight(f, FE_QUEUES, NUM, d);
	assert_true(fd >= 0);
	assert_int_equal(set_inflight(f, d, fd), 0);
	start_rings(f, PACKED_FRESH);
	*drv = fe_driver(f, 0, NUM);
	post_strings(f, *drv, tokens);
	return fd;
}

static void restart_resubmits_held_chains(void **state)
{
	struct uvn_vu_inflight d, d2;
	struct uvn_vq_chain ch[4];
	struct uvn_vq_done done[8];
	struct uvn_vq_drv *drv;
	struct uvn_vu_queue *q;
	int tokens[4], back[4] = { 0 }, fd;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, F_VERSION_1);
	negotiate_protocol(&f);
	fd = get_inflight(&f, FE_QUEUES, NUM, &d);
	assert_true(fd >= 0);
	assert_int_equal(d.num_queues, FE_QUEUES);
	assert_int_equal(d.queue_size, NUM);
	assert_int_equal(d.mmap_size, FE_QUEUES * uvn_inflight_slice_size(NUM));
	assert_int_equal(d.mmap_offset, 0);
	/* sealed: nobody can shrink it under the next backend */
	assert_int_equal(fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK, F_SEAL_SHRINK);
	assert_int_equal(set_inflight(&f, &d, fd), 0); /* QEMU sets it right after */
	start_rings(&f, 0);

	/* The guest posts four TX buffers; the device takes three and
	 * completes the second. */
	drv = fe_driver(&f, 0, NUM);
	post_strings(&f, drv, tokens);
	for (int i = 0; i < 3; i++)
		pop_expect(&f, &ch[i], str[i]);
	q = uvn_vu_backend_queue(f.b, 0);
	uvn_vq_dev_push(q->vq, &ch[1], 0);
	uvn_vq_dev_flush(q->vq);
	assert_int_equal(uvn_vq_drv_get_used(drv, done, 8), 1);
	assert_ptr_equal(done[0].token, &tokens[1]);
	back[1]++;

	/* The backend dies holding alpha and charlie. The frontend cannot ask
	 * where it stopped; like QEMU it restarts the ring from the used index. */
	fe_restart(&f);
	negotiate_protocol(&f);
	assert_int_equal(set_inflight(&f, &d, fd), 0);
	start_rings(&f, used_idx(&f, 0));
	assert_true(fe_ready(&f, 0));
	assert_int_equal(uvn_vq_dev_inflight_pending(uvn_vu_backend_queue(f.b, 0)->vq), 2);
	/* held chains first, in the order they were taken, then the new one */
	pop_expect(&f, &ch[0], "alpha");
	pop_expect(&f, &ch[2], "charlie");
	pop_expect(&f, &ch[3], "delta");
	q = uvn_vu_backend_queue(f.b, 0);
	{
		struct iovec iov[4];
		struct uvn_vq_chain none;

		assert_int_equal(uvn_vq_dev_pop(q->vq, &none, iov, 4), 0);
	}
	uvn_vq_dev_push(q->vq, &ch[2], 0);
	uvn_vq_dev_push(q->vq, &ch[0], 0);
	uvn_vq_dev_push(q->vq, &ch[3], 0);
	uvn_vq_dev_flush(q->vq);
	take_back(drv, tokens, back, 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(back[i], 1); /* every buffer back, once */
	assert_int_equal(uvn_vq_drv_error(drv), 0);
	assert_int_equal(st(&f)->err_inflight, 0);
	assert_int_equal(st(&f)->queues_broken, 0);

	/* A third backend after a clean stop: nothing left to resubmit. */
	stop_ring(&f, 0);
	fe_restart(&f);
	negotiate_protocol(&f);
	assert_int_equal(set_inflight(&f, &d, fd), 0);
	start_rings(&f, used_idx(&f, 0));
	assert_int_equal(uvn_vq_dev_inflight_pending(uvn_vu_backend_queue(f.b, 0)->vq), 0);
	/* and a fresh region replaces the old one while the rings are stopped */
	for (unsigned i = 0; i < FE_QUEUES; i++)
		stop_ring(&f, i);
	int fd2 = get_inflight(&f, 1, 64, &d2);

	assert_true(fd2 >= 0);
	assert_int_equal(d2.mmap_size, uvn_inflight_slice_size(64));
	close(fd2);
	uvn_vq_drv_destroy(drv);
	close(fd);
	fe_close(&f);
}

/*
 * Without a region, a frontend cannot know where a backend that died had
 * got to: DPDK's virtio-user in server mode sends base 0 whatever its ring
 * holds. The new backend takes the chains made available and not used
 * again from the used index in guest memory (its predecessor completed in
 * order), instead of breaking the ring on an index that moved too far.
 */
static void restart_without_region_resumes_from_used(void **state)
{
	struct uvn_vq_chain ch[4];
	struct uvn_vq_done done[8];
	struct uvn_vq_drv *drv;
	struct uvn_vu_queue *q;
	int tokens[4], back[4] = { 0 };
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, F_VERSION_1);
	negotiate_protocol_less(&f, F_INFLIGHT);
	start_rings(&f, 0);
	drv = fe_driver(&f, 0, NUM);
	post_strings(&f, drv, tokens);
	for (int i = 0; i < 3; i++)
		pop_expect(&f, &ch[i], str[i]);
	q = uvn_vu_backend_queue(f.b, 0);
	uvn_vq_dev_push(q->vq, &ch[0], 0);
	uvn_vq_dev_flush(q->vq);
	assert_int_equal(uvn_vq_drv_get_used(drv, done, 8), 1);
	back[0]++;

	/* dies holding bravo and charlie; the frontend restarts it from 0 */
	fe_restart(&f);
	negotiate_protocol_less(&f, F_INFLIGHT);
	start_rings(&f, 0);
	assert_true(fe_ready(&f, 0));
	pop_expect(&f, &ch[1], "bravo");
	pop_expect(&f, &ch[2], "charlie");
	pop_expect(&f, &ch[3], "delta");
	q = uvn_vu_backend_queue(f.b, 0);
	for (int i = 1; i < 4; i++)
		uvn_vq_dev_push(q->vq, &ch[i], 0);
	uvn_vq_dev_flush(q->vq);
	take_back(drv, tokens, back, 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(back[i], 1);
	assert_int_equal(uvn_vq_drv_error(drv), 0);
	assert_int_equal(st(&f)->queues_broken, 0);
	uvn_vq_drv_destroy(drv);
	fe_close(&f);
}

/*
 * The same for a packed ring, which has no used index in memory: where the
 * dead backend's avail and used halves were comes from the region, and
 * QEMU sends the base of a fresh ring again. The backend dies holding
 * three chains; the next one takes them again, oldest first, then the new
 * one, and completes them out of order: every buffer back once.
 */
static void packed_restart_resubmits_held_chains(void **state)
{
	struct uvn_vu_inflight d;
	struct uvn_vq_chain ch[4], none;
	struct uvn_vq_drv *drv;
	struct uvn_vu_queue *q;
	struct iovec iov[4];
	int tokens[4], back[4] = { 0 }, fd;
	struct fe f;

	(void)state;
	fd = packed_started(&f, &d, &drv, tokens);
	for (int i = 0; i < 3; i++)
		pop_expect(&f, &ch[i], str[i]);

	fe_restart(&f);
	negotiate_protocol(&f);
	assert_int_equal(set_inflight(&f, &d, fd), 0);
	start_rings(&f, PACKED_FRESH);
	assert_true(fe_ready(&f, 0));
	q = uvn_vu_backend_queue(f.b, 0);
	assert_int_equal(uvn_vq_dev_inflight_pending(q->vq), 3);
	assert_int_equal(uvn_vq_dev_avail_state(q->vq), 3 | 1u << 15);
	for (int i = 0; i < 4; i++)
		pop_expect(&f, &ch[i], str[i]);
	assert_int_equal(uvn_vq_dev_pop(q->vq, &none, iov, 4), 0);
	uvn_vq_dev_push(q->vq, &ch[2], 0);
	uvn_vq_dev_push(q->vq, &ch[0], 0);
	uvn_vq_dev_flush(q->vq);
	take_back(drv, tokens, back, 2);
	uvn_vq_dev_push(q->vq, &ch[3], 0);
	uvn_vq_dev_push(q->vq, &ch[1], 0);
	uvn_vq_dev_flush(q->vq);
	take_back(drv, tokens, back, 2);
	for (int i = 0; i < 4; i++)
		assert_int_equal(back[i], 1);
	assert_int_equal(uvn_vq_drv_error(drv), 0);
	assert_int_equal(st(&f)->err_inflight, 0);
	assert_int_equal(st(&f)->queues_broken, 0);
	uvn_vq_drv_destroy(drv);
	close(fd);
	fe_close(&f);
}

/*
 * A packed ring whose backend dies twice, the second time after it used
 * chains out of order: QEMU's base for a fresh ring cannot be right any
 * more (a used element lies at it), the region says where the ring is.
 */
static void packed_restart_after_out_of_order_use(void **state)
{
	struct uvn_vu_inflight d;
	struct uvn_vq_chain ch[4];
	struct uvn_vq_drv *drv;
	struct uvn_vu_queue *q;
	int tokens[4], back[4] = { 0 }, fd;
	struct fe f;

	(void)state;
	fd = packed_started(&f, &d, &drv, tokens);
	for (int i = 0; i < 4; i++)
		pop_expect(&f, &ch[i], str[i]);
	q = uvn_vu_backend_queue(f.b, 0);
	uvn_vq_dev_push(q->vq, &ch[2], 0);
	uvn_vq_dev_flush(q->vq);
	take_back(drv, tokens, back, 1);

	fe_restart(&f);
	negotiate_protocol(&f);
	assert_int_equal(set_inflight(&f, &d, fd), 0);
	start_rings(&f, PACKED_FRESH);
	assert_true(fe_ready(&f, 0));
	q = uvn_vu_backend_queue(f.b, 0);
	assert_int_equal(uvn_vq_dev_inflight_pending(q->vq), 3);
	assert_int_equal(uvn_vq_dev_used_state(q->vq), 1 | 1u << 15);
	pop_expect(&f, &ch[0], str[0]);
	pop_expect(&f, &ch[1], str[1]);
	pop_expect(&f, &ch[3], str[3]);
	uvn_vq_dev_push(q->vq, &ch[3], 0);
	uvn_vq_dev_push(q->vq, &ch[1], 0);
	uvn_vq_dev_push(q->vq, &ch[0], 0);
	uvn_vq_dev_flush(q->vq);
	take_back(drv, tokens, back, 3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(back[i], 1);
	assert_int_equal(uvn_vq_drv_error(drv), 0);
	assert_int_equal(st(&f)->queues_broken, 0);
	uvn_vq_drv_destroy(drv);
	close(fd);
	fe_close(&f);
}

/*
 * A fresh region (version 0) gives a restarted packed ring nothing to
 * resume from: its positions come from the base, which is then checked as
 * without a region, and a stale one (QEMU's fresh base over a ring that
 * ran) breaks the ring, counted, instead of starting it at the wrong slot.
 */
static void packed_fresh_region_checks_the_base(void **state)
{
	struct uvn_vu_inflight d, d2;
	struct uvn_vq_chain ch[4];
	struct uvn_vq_drv *drv;
	struct uvn_vu_queue *q;
	int tokens[4], back[4] = { 0 }, fd, fd2;
	struct fe f;

	(void)state;
	fd = packed_started(&f, &d, &drv, tokens);
	q = uvn_vu_backend_queue(f.b, 0);
	for (int i = 0; i < 4; i++) {
		pop_expect(&f, &ch[i], str[i]);
		uvn_vq_dev_push(q->vq, &ch[i], 0);
	}
	uvn_vq_dev_flush(q->vq);
	take_back(drv, tokens, back, 4);

	fe_restart(&f);
	negotiate_protocol(&f);
	fd2 = get_inflight(&f, FE_QUEUES, NUM, &d2); /* a new region: zeroed */
	assert_true(fd2 >= 0);
	assert_int_equal(set_inflight(&f, &d2, fd2), 0);
	start_rings(&f, PACKED_FRESH);
	assert_int_equal(st(&f)->err_ring, 1);
	q = uvn_vu_backend_queue(f.b, 0);
	assert_int_equal(uvn_vq_dev_inflight_pending(q->vq), 0);
	uvn_vq_drv_destroy(drv);
	close(fd);
	close(fd2);
	fe_close(&f);
}

/* Requests that are declined: a zero-size description back or a NACK,
 * counted, the connection and the rings fine. */
static void hostile_descriptions(void **state)
{
	struct uvn_vu_inflight d, good;
	struct fe f;
	int fd, efd, fds0;

	(void)state;
	fe_open(&f, FE_QUEUES, F_VERSION_1);
	fds0 = count_fds();
	/* before the feature is negotiated */
	assert_int_equal(get_inflight(&f, FE_QUEUES, NUM, &d), -1);
	assert_int_equal(d.mmap_size, 0);
	assert_int_equal(st(&f)->err_feature, 1);
	negotiate_protocol(&f);
	/* queue counts and sizes we cannot have */
	static const uint16_t bad[][2] = { { 0, NUM }, { FE_QUEUES + 1, NUM }, { 1, 0 }, { 1, 32769 } };

	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(get_inflight(&f, bad[i][0], bad[i][1], &d), -1);
		assert_int_equal(d.mmap_size, 0);
		assert_int_equal(st(&f)->err_inflight, i + 1);
	}
	fd = get_inflight(&f, FE_QUEUES, NUM, &good);
	assert_true(fd >= 0);
	/* SET: size not what the queues need, unaligned offset, past the file,
	 * an fd that is no file */
	d = good;
	d.mmap_size -= 64;
	assert_int_equal(set_inflight(&f, &d, fd), 1);
	d = good;
	d.mmap_offset = 8;
	assert_int_equal(set_inflight(&f, &d, fd), 1);
	d = good;
	d.mmap_offset = 4096;
	assert_int_equal(set_inflight(&f, &d, fd), 1);
	efd = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(set_inflight(&f, &good, efd), 1);
	close(efd);
	assert_int_equal(st(&f)->err_inflight, 4 + 4);
	/* every fd we sent was closed by the backend, its own memfd too:
	 * only our copy of the region's is new */
	assert_int_equal(count_fds(), fds0 + 1);
	/* not while a ring runs */
	start_rings(&f, 0);
	assert_int_equal(set_inflight(&f, &good, fd), 1);
	assert_int_equal(get_inflight(&f, FE_QUEUES, NUM, &d), -1);
	assert_int_equal(st(&f)->err_order, 2);
	/* none of it touched the rings or the connection */
	assert_true(fe_ready(&f, 0) && fe_ready(&f, 1));
	assert_int_equal(st(&f)->queues_broken, 0);
	struct uvn_vq_drv *drv = fe_driver(&f, 0, NUM);

	fe_tx(&f, drv, 0, 8192, "still fine");
	uvn_vq_drv_destroy(drv);
	close(fd);
	fe_close(&f);
}

/* Message sizes and fds the codec refuses: connection errors. */
static void bad_messages(void **state)
{
	struct uvn_vu_inflight d = { .num_queues = 1, .queue_size = 8 };
	struct fe f;
	int fd;

	(void)state;
	fe_open(&f, FE_QUEUES, F_VERSION_1);
	negotiate_protocol(&f);
	/* the 20 bytes without the padding QEMU sends */
	assert_true(fe_send(&f, VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_VERSION, &d, 20, NULL, 0) < 0);
	assert_int_equal(st(&f)->err_size, 1);
	fe_close(&f);

	fe_open(&f, FE_QUEUES, F_VERSION_1);
	negotiate_protocol(&f);
	assert_true(fe_send(&f, VHOST_USER_SET_INFLIGHT_FD, VHOST_USER_VERSION, &d, sizeof(d), NULL,
			    0) < 0);
	assert_int_equal(st(&f)->err_fds, 1);
	fe_close(&f);

	fe_open(&f, FE_QUEUES, F_VERSION_1);
	negotiate_protocol(&f);
	fd = memfd_create("x", MFD_CLOEXEC);
	assert_true(fe_send(&f, VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_VERSION, &d, sizeof(d), &fd,
			    1) < 0);
	assert_int_equal(st(&f)->err_fds, 1);
	close(fd);
	fe_close(&f);
}

/* A frontend with a region, mapped for the test to write into. */
static uint8_t *open_mapped(struct fe *f, uint64_t features, struct uvn_vu_inflight *d, int *fd)
{
	uint8_t *map;

	fe_open(f, FE_QUEUES, features);
	negotiate_protocol(f);
	*fd = get_inflight(f, FE_QUEUES, NUM, d);
	assert_true(*fd >= 0);
	map = mmap(NULL, d->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	assert_true(map != MAP_FAILED);
	return map;
}

/* Rings started from @base: ring 0 broken by its slice, counted; ring 1
 * runs, tracked (its slice initialised). */
static void expect_ring0_refused(struct fe *f, uint32_t base, const uint8_t *map)
{
	start_rings(f, base);
	assert_false(fe_ready(f, 0));
	assert_true(fe_ready(f, 1));
	assert_int_equal(st(f)->err_inflight, 1);
	assert_int_equal(st(f)->queues_broken, 1);
	/* version is at byte 8 in both layouts */
	assert_int_equal(*(const uint16_t *)(map + uvn_inflight_slice_size(NUM) + 8), 1);
}

/* A region whose contents are wrong breaks that ring at start, counted;
 * the other ring runs, tracked. */
static void hostile_contents(void **state)
{
	struct uvn_vu_inflight d;
	struct uvn_inflight_split *r;
	struct fe f;
	uint8_t *map;
	int fd;

	(void)state;
	map = open_mapped(&f, F_VERSION_1, &d, &fd);
	size_t map_len = d.mmap_size;

	r = (struct uvn_inflight_split *)map; /* ring 0's slice */
	r->version = 1;
	r->desc_num = NUM;
	r->desc[3].inflight = 7;
	expect_ring0_refused(&f, 0, map);
	/* a ring larger than the region's queues */
	for (unsigned i = 0; i < FE_QUEUES; i++)
		stop_ring(&f, i);
	close(fd);
	fd = get_inflight(&f, FE_QUEUES, NUM / 2, &d);
	assert_true(fd >= 0);
	fe_setup_ring(&f, 1, NUM, FE_RING_OFF(1), 0);
	assert_false(fe_ready(&f, 1));
	assert_int_equal(st(&f)->err_inflight, 2);
	munmap(map, map_len);
	close(fd);
	fe_close(&f);
}

/* The same for a packed slice whose free list starts past the queue. */
static void packed_hostile_contents(void **state)
{
	struct uvn_vu_inflight d;
	struct uvn_inflight_packed *r;
	struct fe f;
	uint8_t *map;
	int fd;

	(void)state;
	map = open_mapped(&f, F_VERSION_1 | F_PACKED, &d, &fd);
	r = (struct uvn_inflight_packed *)map;
	r->version = 1;
	r->desc_num = NUM;
	r->free_head = NUM + 5;
	expect_ring0_refused(&f, PACKED_FRESH, map);
	munmap(map, d.mmap_size);
	close(fd);
	fe_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(restart_resubmits_held_chains),
		cmocka_unit_test(restart_without_region_resumes_from_used),
		cmocka_unit_test(packed_restart_resubmits_held_chains),
		cmocka_unit_test(packed_restart_after_out_of_order_use),
		cmocka_unit_test(packed_fresh_region_checks_the_base),
		cmocka_unit_test(hostile_descriptions),
		cmocka_unit_test(bad_messages),
		cmocka_unit_test(hostile_contents),
		cmocka_unit_test(packed_hostile_contents),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
