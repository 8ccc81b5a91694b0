/* SPDX-License-Identifier: MIT */
/*
 * A frontend shrinks the memfd behind guest memory after we mapped it
 * (issue 12, finding 6). The next access through a translated pointer, on
 * any thread, must not kill the process: it reads zeros and writes go
 * nowhere. Only the table API a backend uses appears here; what the owner
 * learns is test_guard.c's business.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem/mem.h"

#define KB 1024ull
#define NTHREADS 4

static int make_memfd(uint64_t size)
{
	int fd = memfd_create("test-shrink", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

/* Map a memfd of @size at @gpa into @m, filled with @fill; @return the fd. */
static int add_region(struct uvn_mem *m, uint64_t gpa, uint64_t size, uint8_t fill)
{
	struct uvn_mem_region_desc d = { .gpa = gpa, .size = size, .uva = gpa + 0x7f0000000000ull };
	struct uvn_mem_region r;
	int fd = make_memfd(size);

	assert_int_equal(uvn_mem_region_map(&d, fd, &r), 0);
	assert_int_equal(uvn_mem_insert(m, &r), 0);
	memset(uvn_mem_gpa(m, gpa, size), fill, size);
	return fd;
}

/* Volatile: the compiler must really touch the (possibly vanished) memory. */
static uint8_t peek(const void *p)
{
	return *(const volatile uint8_t *)p;
}

static void poke(void *p, uint8_t v)
{
	*(volatile uint8_t *)p = v;
}

/* Sum of every 1024th byte: touches every page of the region. */
static unsigned sweep(const uint8_t *p, uint64_t size)
{
	unsigned sum = 0;

	for (uint64_t i = 0; i < size; i += 1024)
		sum += peek(p + i);
	return sum;
}

static void test_shrink_then_access(void **state)
{
	const uint64_t size = 64 * KB;
	struct uvn_mem *m = uvn_mem_create();
	int fd = add_region(m, 0x100000, size, 0xab);
	int keep = add_region(m, 0x200000, size, 0xcd);
	uint8_t *p = uvn_mem_gpa(m, 0x100000, size), *q = uvn_mem_gpa(m, 0x200000, size);

	(void)state;
	assert_int_equal(peek(p + 100), 0xab);
	assert_int_equal(ftruncate(fd, 0), 0);
	/* Read, then write, then read back what cannot stick anywhere. */
	assert_int_equal(peek(p + 100), 0);
	assert_int_equal(sweep(p, size), 0);
	poke(p + size - 1, 0x5a);
	memset(p, 0x11, size);
	/* The other region (another fd, not shrunk) is untouched. */
	assert_int_equal(peek(q + 100), 0xcd);
	assert_int_equal(sweep(q, size), 0xcdu * (unsigned)(size / 1024));
	uvn_mem_destroy(m);
	close(fd);
	close(keep);
}

struct worker {
	pthread_barrier_t *go;
	uint8_t *p;
	uint64_t size;
	unsigned sum;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->go);
	w->sum = sweep(w->p, w->size);
	/* Everybody has read before anybody writes. */
	pthread_barrier_wait(w->go);
	memset(w->p, 0x22, w->size);
	return NULL;
}

/* Data-path threads fault, several at once on one region. */
static void test_shrink_other_threads(void **state)
{
	const uint64_t size = 256 * KB;
	struct uvn_mem *m = uvn_mem_create();
	int fd = add_region(m, 0x100000, size, 0xab);
	struct worker w[NTHREADS];
	pthread_t t[NTHREADS];
	pthread_barrier_t go;

	(void)state;
	assert_int_equal(ftruncate(fd, 4 * KB), 0); /* shrunk, not emptied */
	assert_int_equal(pthread_barrier_init(&go, NULL, NTHREADS), 0);
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .go = &go, .p = uvn_mem_gpa(m, 0x100000, size), .size = size };
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	/* Alive, and beyond the first 4 KB (the file's new end) nothing
	 * was read: at most the 4 samples of the first page count. */
	for (unsigned i = 0; i < NTHREADS; i++)
		assert_true(w[i].sum <= 4 * 0xab);
	pthread_barrier_destroy(&go);
	uvn_mem_destroy(m);
	close(fd);
}

/* Every region of a full table shrinks; each access survives. */
static void test_shrink_many_regions(void **state)
{
	const uint64_t size = 8 * KB;
	struct uvn_mem *m = uvn_mem_create();
	int fds[UVN_MEM_MAX_REGIONS];

	(void)state;
	for (unsigned i = 0; i < UVN_MEM_MAX_REGIONS; i++)
		fds[i] = add_region(m, 0x100000 * (i + 1), size, (uint8_t)(i + 1));
	for (unsigned i = 0; i < UVN_MEM_MAX_REGIONS; i += 2)
		assert_int_equal(ftruncate(fds[i], 0), 0);
	for (unsigned i = 0; i < UVN_MEM_MAX_REGIONS; i++) {
		uint8_t *p = uvn_mem_gpa(m, 0x100000 * (i + 1), size);

		assert_int_equal(peek(p + 4 * KB), i % 2 ? i + 1 : 0);
		poke(p, 1);
	}
	uvn_mem_destroy(m);
	for (unsigned i = 0; i < UVN_MEM_MAX_REGIONS; i++)
		close(fds[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shrink_then_access),
		cmocka_unit_test(test_shrink_other_threads),
		cmocka_unit_test(test_shrink_many_regions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
