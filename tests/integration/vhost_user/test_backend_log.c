/* SPDX-License-Identifier: MIT */
/*
 * Dirty logging: with a log shared by SET_LOG_BASE and LOG_ALL set, device
 * writes (uvn_vu_log_write) and used-ring updates (uvn_vu_log_used, rings
 * with VHOST_VRING_F_LOG) set exactly the bits of the 4 KB guest-physical
 * pages they touch, and nothing is logged otherwise.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>

#include "fake_fe.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))
#define LOG_OFF 4096u  /* the log starts at this offset in its fd */
#define LOG_SIZE 40000u /* bytes: pages up to 320000, beyond 0x40000000 + 2 MB */

struct logfd {
	int fd;
	uint8_t *map; /* whole file */
};

static void log_open(struct fe *f, struct logfd *l)
{
	struct uvn_vu_log d = { .mmap_size = LOG_SIZE, .mmap_offset = LOG_OFF };
	struct uvn_vu_msg r;

	l->fd = memfd_create("dirty-log", MFD_CLOEXEC);
	assert_int_equal(ftruncate(l->fd, LOG_OFF + LOG_SIZE), 0);
	l->map = mmap(NULL, LOG_OFF + LOG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
	assert_true(l->map != MAP_FAILED);
	assert_int_equal(fe_send(f, VHOST_USER_SET_LOG_BASE, VHOST_USER_VERSION, &d, sizeof(d), &l->fd,
				 1), 0);
	/* LOG_SHMFD: the frontend waits for this answer */
	assert_int_equal(fe_reply(f, VHOST_USER_SET_LOG_BASE, &r), 1);
	assert_int_equal(r.p.u64, 0);
}

static void log_close(struct logfd *l)
{
	munmap(l->map, LOG_OFF + LOG_SIZE);
	close(l->fd);
}

/* The set bits, as page numbers; @return how many. */
static unsigned set_pages(const struct logfd *l, uint64_t *pages, unsigned max)
{
	unsigned n = 0;

	for (uint64_t i = 0; i < LOG_SIZE; i++)
		for (unsigned bit = 0; bit < 8; bit++)
			if (l->map[LOG_OFF + i] & (1u << bit)) {
				if (n < max)
					pages[n] = i * 8 + bit;
				n++;
			}
	return n;
}

/* The backend's pointer for a guest-physical address. */
static void *backend_va(struct fe *f, uint64_t gpa)
{
	return uvn_mem_gpa(uvn_vu_backend_queue(f->b, 0)->cursor.mem, gpa, 1);
}

static void set_log_flag(struct fe *f, unsigned idx, unsigned num, bool on)
{
	struct vhost_vring_addr a = { .index = idx, .flags = on ? 1u << VHOST_VRING_F_LOG : 0 };
	struct uvn_vq_layout lay;

	uvn_vq_layout(false, num, &lay);
	a.desc_user_addr = (uint64_t)(uintptr_t)(f->mem + FE_RING_OFF(idx) + lay.desc);
	a.avail_user_addr = (uint64_t)(uintptr_t)(f->mem + FE_RING_OFF(idx) + lay.driver);
	a.used_user_addr = (uint64_t)(uintptr_t)(f->mem + FE_RING_OFF(idx) + lay.device);
	a.log_guest_addr = f->gpa + FE_RING_OFF(idx) + lay.device;
	assert_int_equal(fe_send(f, VHOST_USER_SET_VRING_ADDR, VHOST_USER_VERSION, &a, sizeof(a), NULL,
				 0), 0);
}

static void test_dirty_log(void **state)
{
	uint64_t pages[16], gpa, v;
	int fds0, maps0, efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct uvn_vu_queue *q;
	struct uvn_vq_layout lay;
	struct logfd l, l2;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	fe_negotiate_qemu(&f, 256);
	q = uvn_vu_backend_queue(f.b, 0);
	log_open(&f, &l);

	/* a log but no LOG_ALL: nothing is logged */
	gpa = f.gpa + 0x3ff0;
	uvn_vu_log_write(f.b, backend_va(&f, gpa), 0x20);
	assert_int_equal(set_pages(&l, pages, 16), 0);

	/* LOG_ALL while the rings run (migration starts): the device is not asked again */
	assert_int_equal(fe_set_u64_ack(&f, VHOST_USER_SET_FEATURES,
					f.features | (1ull << VHOST_F_LOG_ALL)), 0);
	assert_int_equal(f.dev.set_features_calls, 1);
	assert_true(f.dev.ready[0] && f.dev.ready[1]);

	/* 32 bytes across a page boundary: exactly two pages */
	uvn_vu_log_write(f.b, backend_va(&f, gpa), 0x20);
	assert_int_equal(set_pages(&l, pages, 16), 2);
	assert_int_equal(pages[0], gpa / 4096);
	assert_int_equal(pages[1], gpa / 4096 + 1);
	/* one byte at the end of a page: one page, already set */
	uvn_vu_log_write(f.b, backend_va(&f, f.gpa + 0x4fff), 1);
	assert_int_equal(set_pages(&l, pages, 16), 2);
	/* an address not in guest memory logs nothing */
	uvn_vu_log_write(f.b, &v, 8);
	assert_int_equal(set_pages(&l, pages, 16), 2);
	memset(l.map + LOG_OFF, 0, LOG_SIZE);

	/* the used ring is logged only for rings with VHOST_VRING_F_LOG */
	uvn_vu_log_used(f.b, q);
	assert_int_equal(set_pages(&l, pages, 16), 0);
	set_log_flag(&f, 0, 256, true);
	assert_true(f.dev.ready[0]);
	assert_int_equal(fe_send(&f, VHOST_USER_SET_LOG_FD, VHOST_USER_VERSION, NULL, 0, &efd, 1), 0);
	uvn_vu_log_used(f.b, q);
	uvn_vq_layout(false, 256, &lay);
	{
		/* 4 + 8 * 256 + 2 bytes from log_guest_addr */
		uint64_t first = (f.gpa + FE_RING_OFF(0) + lay.device) / 4096;
		uint64_t last = (f.gpa + FE_RING_OFF(0) + lay.device + 4 + 8 * 256 + 2 - 1) / 4096;
		unsigned n = set_pages(&l, pages, 16);

		assert_int_equal(n, last - first + 1);
		for (unsigned i = 0; i < n; i++)
			assert_int_equal(pages[i], first + i);
	}
	/* the log eventfd tells the frontend */
	assert_int_equal(read(efd, &v, 8), 8);
	assert_true(v >= 1);
	memset(l.map + LOG_OFF, 0, LOG_SIZE);
	uvn_vu_log_used(f.b, uvn_vu_backend_queue(f.b, 1)); /* no F_LOG on ring 1 */
	assert_int_equal(set_pages(&l, pages, 16), 0);

	/* a new log replaces the old one without leaking it */
	fds0 = count_fds();
	maps0 = count_maps();
	for (int i = 0; i < 10; i++) {
		log_open(&f, &l2);
		log_close(&l2);
	}
	assert_int_equal(count_fds(), fds0);
	assert_int_equal(count_maps(), maps0 + 0);
	log_open(&f, &l2);
	uvn_vu_log_write(f.b, backend_va(&f, gpa), 1);
	assert_int_equal(set_pages(&l2, pages, 16), 1);
	assert_int_equal(set_pages(&l, pages, 16), 0);

	/* LOG_ALL off again: nothing logged */
	memset(l2.map + LOG_OFF, 0, LOG_SIZE);
	assert_int_equal(fe_set_u64_ack(&f, VHOST_USER_SET_FEATURES, f.features), 0);
	uvn_vu_log_write(f.b, backend_va(&f, gpa), 1);
	uvn_vu_log_used(f.b, q);
	assert_int_equal(set_pages(&l2, pages, 16), 0);

	fe_close(&f);
	log_close(&l);
	log_close(&l2);
	close(efd);
}

/* Memory beyond what the log covers: ignored, no write past the log. */
static void test_log_bounds(void **state)
{
	uint64_t pages[4];
	struct logfd l;
	struct fe f;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	f.gpa = (uint64_t)LOG_SIZE * 8 * 4096 - 4096; /* the last logged page, then beyond */
	fe_negotiate_qemu(&f, 256);
	log_open(&f, &l);
	assert_int_equal(fe_set_u64_ack(&f, VHOST_USER_SET_FEATURES,
					f.features | (1ull << VHOST_F_LOG_ALL)), 0);
	uvn_vu_log_write(f.b, backend_va(&f, f.gpa), 3 * 4096);
	assert_int_equal(set_pages(&l, pages, 4), 1);
	assert_int_equal(pages[0], LOG_SIZE * 8 - 1);
	fe_close(&f);
	log_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dirty_log),
		cmocka_unit_test(test_log_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
