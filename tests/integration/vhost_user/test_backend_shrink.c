/* SPDX-License-Identifier: MIT */
/*
 * A frontend shrinks its guest memory (or the dirty log) under the backend
 * (issue 12, finding 6): the access survives, the session's fault fd
 * becomes readable, and the session dies with err_mem_gone counted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <linux/virtio_config.h>

#include "fake_fe.h"

#define NET_FEATURES ((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX))

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void test_memory_shrunk(void **state)
{
	struct fe f;
	volatile uint8_t *p;

	(void)state;
	fe_open(&f, FE_QUEUES, NET_FEATURES);
	fe_negotiate_qemu(&f, 256);
	p = uvn_mem_gpa(uvn_vu_backend_queue(f.b, 0)->cursor.mem, f.gpa + 4096, 1);
	assert_false(readable(uvn_vu_backend_fault_fd(f.b)));
	assert_int_equal(uvn_vu_backend_check_memory(f.b), 0);
	assert_int_equal(ftruncate(f.memfd, 0), 0);
	assert_int_equal(*p, 0);
	assert_true(readable(uvn_vu_backend_fault_fd(f.b)));
	assert_int_equal(uvn_vu_backend_check_memory(f.b), -EFAULT);
	assert_int_equal(uvn_vu_backend_stats(f.b)->err_mem_gone, 1);
	assert_true(uvn_vu_backend_handle(f.b) < 0);
	assert_int_equal(uvn_vu_backend_stats(f.b)->err_mem_gone, 1);
	fe_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_shrunk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
