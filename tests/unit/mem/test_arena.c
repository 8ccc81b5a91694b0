/* SPDX-License-Identifier: MIT */
/* Shared arena: allocation, alignment, reuse, exhaustion, the region it sends. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem/mem.h"

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void test_alloc_free(void **state)
{
	struct uvn_arena *a;
	void *p[64];

	(void)state;
	assert_int_equal(uvn_arena_create(1 << 20, UVN_ARENA_NO_HUGE, &a), 0);
	assert_false(uvn_arena_is_huge(a));
	assert_int_equal(uvn_arena_size(a), 1 << 20);
	for (unsigned i = 0; i < 64; i++) {
		size_t sz = 1 + i * 37;

		p[i] = uvn_arena_alloc(a, sz, 0);
		assert_non_null(p[i]);
		/* natural alignment of the size class, at least a cache line */
		assert_int_equal((uintptr_t)p[i] % 64, 0);
		memset(p[i], (int)i, sz);
		for (unsigned j = 0; j < i; j++)
			assert_true((uint8_t *)p[i] >= (uint8_t *)p[j] + 1 + j * 37 ||
				    (uint8_t *)p[j] >= (uint8_t *)p[i] + sz);
	}
	for (unsigned i = 0; i < 64; i++)
		assert_int_equal(*(uint8_t *)p[i], (uint8_t)i);
	/* explicit alignment */
	void *q = uvn_arena_alloc(a, 100, 4096);
	assert_non_null(q);
	assert_int_equal((uintptr_t)q % 4096, 0);
	assert_null(uvn_arena_alloc(a, 100, 3));
	/* a freed block is reused for the same class */
	void *r = uvn_arena_alloc(a, 1000, 0);
	size_t used = uvn_arena_in_use(a);
	uvn_arena_free(a, r, 1000);
	assert_int_equal(uvn_arena_in_use(a), used - 1024);
	assert_ptr_equal(uvn_arena_alloc(a, 700, 0), r);
	/* exhaustion */
	assert_null(uvn_arena_alloc(a, 2 << 20, 0));
	unsigned n = 0;
	while (uvn_arena_alloc(a, 64 * 1024, 0))
		n++;
	assert_true(n >= 10 && n <= 16);
	assert_null(uvn_arena_alloc(a, 64 * 1024, 0));
	uvn_arena_destroy(a);
}

/* The region describes the arena the way virtio-user does: gpa == uva == base. */
static void test_region_and_addresses(void **state)
{
	struct uvn_mem_region_desc d;
	struct uvn_arena *a;
	uint8_t *p;

	(void)state;
	assert_int_equal(uvn_arena_create(100000, UVN_ARENA_NO_HUGE, &a), 0);
	assert_int_equal(uvn_arena_size(a) % 4096, 0);
	uvn_arena_region(a, &d);
	assert_int_equal(d.gpa, (uint64_t)(uintptr_t)uvn_arena_base(a));
	assert_int_equal(d.uva, d.gpa);
	assert_int_equal(d.size, uvn_arena_size(a));
	assert_int_equal(d.mmap_offset, 0);
	p = uvn_arena_alloc(a, 256, 0);
	assert_int_equal(uvn_arena_addr(a, p), (uint64_t)(uintptr_t)p);
	assert_ptr_equal(uvn_arena_ptr(a, uvn_arena_addr(a, p), 256), p);
	assert_int_equal(uvn_arena_addr(a, &d), 0);
	assert_null(uvn_arena_ptr(a, d.gpa + d.size - 4, 8));
	assert_null(uvn_arena_ptr(a, d.gpa - 1, 1));

	/* What the device maps from the fd is the same memory. */
	struct uvn_mem *m = uvn_mem_create();
	struct uvn_mem_region r;
	assert_int_equal(uvn_mem_region_map(&d, uvn_arena_fd(a), &r), 0);
	assert_int_equal(uvn_mem_insert(m, &r), 0);
	strcpy((char *)p, "hello device");
	assert_string_equal((char *)uvn_mem_gpa(m, uvn_arena_addr(a, p), 13), "hello device");
	uvn_mem_destroy(m);
	uvn_arena_destroy(a);
}

/* With hugepages if the system has them reserved, without otherwise: never a failure. */
static void test_huge_or_not(void **state)
{
	int fds0 = count_fds();
	struct uvn_arena *a;

	(void)state;
	assert_int_equal(uvn_arena_create(3 << 20, 0, &a), 0);
	if (uvn_arena_is_huge(a))
		assert_int_equal(uvn_arena_size(a), 4 << 20);
	else
		assert_int_equal(uvn_arena_size(a), 3 << 20);
	memset(uvn_arena_base(a), 1, uvn_arena_size(a));
	assert_int_equal(count_fds(), fds0 + 1);
	uvn_arena_destroy(a);
	assert_int_equal(count_fds(), fds0);
	assert_int_equal(uvn_arena_create(0, 0, &a), -EINVAL);
}

/* The device holds the fd: it cannot shrink the arena under us, nor seal it further. */
static void test_device_cannot_shrink(void **state)
{
	struct uvn_arena *a;
	int fd;

	(void)state;
	assert_int_equal(uvn_arena_create(64 << 10, UVN_ARENA_NO_HUGE, &a), 0);
	fd = uvn_arena_fd(a);
	assert_int_equal(ftruncate(fd, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);
	assert_int_equal(errno, EPERM);
	*(volatile char *)((char *)uvn_arena_base(a) + uvn_arena_size(a) - 1) = 1;
	uvn_arena_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_free),
		cmocka_unit_test(test_region_and_addresses),
		cmocka_unit_test(test_huge_or_not),
		cmocka_unit_test(test_device_cannot_shrink),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
