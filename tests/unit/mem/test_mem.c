/* SPDX-License-Identifier: MIT */
/* Region table: mapping checks, translations at the edges, many regions, no leaks. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem/mem.h"

#define KB 1024ull

static int make_memfd(uint64_t size)
{
	int fd = memfd_create("test-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;

	assert_non_null(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static int map_into(struct uvn_mem *m, int fd, uint64_t gpa, uint64_t size, uint64_t uva, uint64_t off)
{
	struct uvn_mem_region_desc d = { .gpa = gpa, .size = size, .uva = uva, .mmap_offset = off };
	struct uvn_mem_region r;
	int ret = uvn_mem_region_map(&d, fd, &r);

	if (ret)
		return ret;
	ret = uvn_mem_insert(m, &r);
	if (ret)
		uvn_mem_region_unmap(&r);
	return ret;
}

/* The offset is applied: bytes written through the mapping land at mmap_offset in the file. */
static void test_offset_and_edges(void **state)
{
	const uint64_t base = 0x100000, size = 64 * KB, uva = 0x7f0000000000ull;
	struct uvn_mem *m = uvn_mem_create();
	int fd = make_memfd(size + 12 * KB);
	uint8_t *p, byte = 0;

	(void)state;
	assert_int_equal(map_into(m, fd, base, size, uva, 12 * KB + 0), 0);
	p = uvn_mem_gpa(m, base, 1);
	assert_non_null(p);
	p[0] = 0xab;
	p[size - 1] = 0xcd;
	assert_int_equal(pread(fd, &byte, 1, 12 * KB), 1);
	assert_int_equal(byte, 0xab);
	assert_int_equal(pread(fd, &byte, 1, (off_t)(12 * KB + size - 1)), 1);
	assert_int_equal(byte, 0xcd);

	assert_ptr_equal(uvn_mem_gpa(m, base, size), p);
	assert_ptr_equal(uvn_mem_gpa(m, base + size - 1, 1), p + size - 1);
	assert_null(uvn_mem_gpa(m, base + size - 1, 2));
	assert_null(uvn_mem_gpa(m, base, size + 1));
	assert_null(uvn_mem_gpa(m, base - 1, 1));
	assert_null(uvn_mem_gpa(m, base + size, 1));
	assert_null(uvn_mem_gpa(m, base, 0));
	assert_null(uvn_mem_gpa(m, UINT64_MAX, 1));
	assert_null(uvn_mem_gpa(m, base + 8, UINT64_MAX));

	/* Frontend virtual addresses go through userspace_addr, not gpa. */
	assert_ptr_equal(uvn_mem_uva(m, uva + 16, 16), p + 16);
	assert_null(uvn_mem_uva(m, base, 1));
	assert_null(uvn_mem_uva(m, uva + size - 4, 8));
	assert_null(uvn_mem_uva(m, uva, 0));

	uint64_t gpa = 0, avail = 0;
	assert_int_equal(uvn_mem_va_to_gpa(m, p + 100, &gpa, &avail), 0);
	assert_int_equal(gpa, base + 100);
	assert_int_equal(avail, size - 100);
	assert_int_equal(uvn_mem_va_to_gpa(m, p + size, &gpa, &avail), -ENOENT);
	assert_int_equal(uvn_mem_va_to_gpa(m, &byte, &gpa, &avail), -ENOENT);

	/* An unaligned mmap_offset maps too. */
	uvn_mem_clear(m);
	assert_int_equal(map_into(m, fd, base, 4 * KB, uva, 100), 0);
	p = uvn_mem_gpa(m, base, 1);
	p[0] = 0x5a;
	assert_int_equal(pread(fd, &byte, 1, 100), 1);
	assert_int_equal(byte, 0x5a);

	uvn_mem_destroy(m);
	close(fd);
}

/* Two regions adjacent in guest-physical space but not in ours, and a hole. */
static void test_straddle_and_hole(void **state)
{
	struct uvn_mem *m = uvn_mem_create();
	int fd1 = make_memfd(64 * KB), fd2 = make_memfd(64 * KB), fd3 = make_memfd(64 * KB);
	struct uvn_mem_cursor c = { .mem = m };
	uint64_t len;
	uint8_t *p;

	(void)state;
	assert_int_equal(map_into(m, fd2, 64 * KB, 64 * KB, 0x20000000, 0), 0);
	assert_int_equal(map_into(m, fd1, 0, 64 * KB, 0x10000000, 0), 0);
	assert_int_equal(map_into(m, fd3, 1024 * KB, 64 * KB, 0x30000000, 0), 0);
	assert_int_equal(m->n, 3);
	assert_true(m->r[0].gpa < m->r[1].gpa && m->r[1].gpa < m->r[2].gpa);

	/* Whole-range translation refuses the straddle... */
	assert_null(uvn_mem_gpa(m, 64 * KB - 8, 16));
	/* ...the xlate callback splits it at the region end. */
	len = 16;
	p = uvn_mem_xlate(&c, 64 * KB - 8, &len);
	assert_ptr_equal(p, uvn_mem_gpa(m, 64 * KB - 8, 8));
	assert_int_equal(len, 8);
	len = 8;
	assert_ptr_equal(uvn_mem_xlate(&c, 64 * KB, &len), uvn_mem_gpa(m, 64 * KB, 8));
	assert_int_equal(len, 8);
	assert_int_equal(c.hint, 1);

	/* The hole between 128 KB and 1 MB. */
	len = 1;
	assert_null(uvn_mem_xlate(&c, 128 * KB, &len));
	len = 1;
	assert_null(uvn_mem_xlate(&c, 512 * KB, &len));
	assert_null(uvn_mem_gpa(m, 1024 * KB - 1, 2));
	len = 4 * KB;
	assert_non_null(uvn_mem_xlate(&c, 1024 * KB + 60 * KB, &len));
	assert_int_equal(len, 4 * KB);
	len = 8 * KB;
	assert_non_null(uvn_mem_xlate(&c, 1024 * KB + 60 * KB, &len));
	assert_int_equal(len, 4 * KB);
	len = 0;
	assert_null(uvn_mem_xlate(&c, 0, &len));
	len = 1;
	assert_null(uvn_mem_xlate(&c, UINT64_MAX, &len));

	/* Overlaps in guest-physical space are refused. */
	assert_int_equal(map_into(m, fd1, 60 * KB, 8 * KB, 0x40000000, 0), -EEXIST);
	assert_int_equal(map_into(m, fd1, 1024 * KB + 63 * KB, 4 * KB, 0x40000000, 0), -EEXIST);
	assert_int_equal(m->n, 3);

	uvn_mem_destroy(m);
	close(fd1);
	close(fd2);
	close(fd3);
}

static void test_map_errors(void **state)
{
	struct uvn_mem_region_desc d = { .gpa = 0, .size = 8 * KB, .uva = 0x1000, .mmap_offset = 0 };
	struct uvn_mem_region r;
	int fd = make_memfd(16 * KB), pipefd[2], ro;
	char path[64];

	(void)state;
	/* Beyond the end of the file: would SIGBUS on first touch. */
	d.mmap_offset = 12 * KB;
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -ERANGE);
	d.mmap_offset = 16 * KB;
	d.size = 1;
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -ERANGE);
	/* Huge sizes and wrap-arounds. */
	d.mmap_offset = 0;
	d.size = 1ull << 62;
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -ERANGE);
	d.size = 0;
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -EINVAL);
	d.size = 4 * KB;
	d.gpa = UINT64_MAX - 100;
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -EINVAL);
	d.gpa = 0;
	d.uva = UINT64_MAX - 100;
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -EINVAL);
	d.uva = 0;
	d.mmap_offset = UINT64_MAX - 100;
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -EINVAL);
	d.mmap_offset = 0;
	/* Not memory. */
	assert_int_equal(uvn_mem_region_map(&d, -1, &r), -EBADF);
	assert_int_equal(pipe(pipefd), 0);
	assert_int_equal(uvn_mem_region_map(&d, pipefd[0], &r), -ENODEV);
	close(pipefd[0]);
	close(pipefd[1]);
	/* Cannot be mapped shared and writable. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	assert_int_equal(uvn_mem_region_map(&d, ro, &r), -EACCES);
	close(ro);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), 0);
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -EACCES);
	assert_non_null(strstr(uvn_mem_map_hint(-EACCES), "share=on"));
	close(fd);
}

/* The most regions a table takes, inserted out of order, from one fd at many offsets. */
static void test_many_regions(void **state)
{
	struct uvn_mem *m = uvn_mem_create();
	struct uvn_mem_cursor c = { .mem = m };
	int fd = make_memfd((UVN_MEM_MAX_REGIONS + 1) * 8 * KB);

	(void)state;
	for (unsigned k = 0; k < UVN_MEM_MAX_REGIONS; k++) {
		unsigned i = (k * 7) % UVN_MEM_MAX_REGIONS; /* a permutation */

		assert_int_equal(map_into(m, fd, i * 1024 * KB, 8 * KB, 0x10000000 + i * 8 * KB,
					  i * 8 * KB), 0);
	}
	assert_int_equal(m->n, UVN_MEM_MAX_REGIONS);
	assert_int_equal(map_into(m, fd, 0x40000000, 4 * KB, 0, 0), -ENOSPC);
	for (unsigned i = 0; i < UVN_MEM_MAX_REGIONS; i++) {
		uint8_t *p = uvn_mem_gpa(m, i * 1024 * KB + 100, 4);
		uint64_t len = 16, gpa, avail;

		assert_non_null(p);
		memcpy(p, &i, sizeof(i));
		assert_ptr_equal(uvn_mem_xlate(&c, i * 1024 * KB + 100, &len), p);
		assert_int_equal(c.hint, i);
		assert_ptr_equal(uvn_mem_uva(m, 0x10000000 + i * 8 * KB + 100, 4), p);
		assert_int_equal(uvn_mem_va_to_gpa(m, p, &gpa, &avail), 0);
		assert_int_equal(gpa, i * 1024 * KB + 100);
		assert_null(uvn_mem_gpa(m, i * 1024 * KB + 8 * KB, 1));
	}
	/* Each region shows its own slice of the file. */
	for (unsigned i = 0; i < UVN_MEM_MAX_REGIONS; i++) {
		unsigned v = 0;

		assert_int_equal(pread(fd, &v, sizeof(v), (off_t)(i * 8 * KB + 100)), sizeof(v));
		assert_int_equal(v, i);
	}
	/* Find and take one out; its translation is gone, the others stay. */
	int idx = uvn_mem_find(m, 5 * 1024 * KB, 0x10000000 + 5 * 8 * KB, 8 * KB);
	struct uvn_mem_region r;

	assert_true(idx >= 0);
	assert_int_equal(uvn_mem_find(m, 5 * 1024 * KB, 0, 8 * KB), -ENOENT);
	uvn_mem_take(m, (unsigned)idx, &r);
	uvn_mem_region_unmap(&r);
	assert_null(uvn_mem_gpa(m, 5 * 1024 * KB, 1));
	assert_non_null(uvn_mem_gpa(m, 6 * 1024 * KB, 1));
	assert_non_null(uvn_mem_gpa(m, 4 * 1024 * KB, 1));
	assert_int_equal(m->n, UVN_MEM_MAX_REGIONS - 1);
	uvn_mem_destroy(m);
	close(fd);
}

/* Replace, add and remove many times: mappings and fds come back to where they were. */
static void test_no_leaks(void **state)
{
	int fd = make_memfd(256 * KB);
	int maps0, fds0;

	(void)state;
	maps0 = count_lines("/proc/self/maps");
	fds0 = count_fds();
	for (int round = 0; round < 50; round++) {
		struct uvn_mem *m = uvn_mem_create();

		for (unsigned i = 0; i < 8; i++)
			assert_int_equal(map_into(m, fd, i * 64 * KB, 32 * KB, i * 64 * KB, i * 32 * KB), 0);
		/* a failing insert must not keep its mapping */
		assert_int_equal(map_into(m, fd, 0, 4 * KB, 0, 0), -EEXIST);
		for (unsigned i = 0; i < 4; i++) {
			struct uvn_mem_region r;

			uvn_mem_take(m, 0, &r);
			uvn_mem_region_unmap(&r);
		}
		uvn_mem_clear(m);
		for (unsigned i = 0; i < 4; i++)
			assert_int_equal(map_into(m, fd, i * 64 * KB, 32 * KB, 0, 0), 0);
		uvn_mem_destroy(m);
	}
	assert_int_equal(count_lines("/proc/self/maps"), maps0);
	assert_int_equal(count_fds(), fds0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offset_and_edges),
		cmocka_unit_test(test_straddle_and_hole),
		cmocka_unit_test(test_map_errors),
		cmocka_unit_test(test_many_regions),
		cmocka_unit_test(test_no_leaks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
