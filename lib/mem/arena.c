/* SPDX-License-Identifier: MIT */
/*
 * The driver's shared arena: one memfd the device maps as a single region
 * (like DPDK's virtio-user with --single-file-segments), so the memory table
 * never changes while the device runs. 2 MB hugepages when the system has
 * them reserved, a plain memfd otherwise: hugepages are never required.
 *
 * The allocator is a bump pointer plus one free stack per power-of-two
 * size class. Its bookkeeping is ordinary heap memory: anything kept in
 * the arena itself could be rewritten by the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/memfd.h>

#include "mem.h"

#define HUGE_2MB (2u << 20)
#define MIN_SHIFT 6 /* 64-byte blocks: a cache line */
#define NCLASS 64

struct free_stack {
	uint64_t *off;
	size_t n, cap;
};

struct uvn_arena {
	int fd;
	uint8_t *base;
	size_t size;
	bool huge;
	size_t bump;   /* first never-allocated byte */
	size_t in_use;
	struct free_stack free[NCLASS];
};

static int map_memfd(struct uvn_arena *a, size_t size, bool huge)
{
	unsigned mfd = MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB | MFD_HUGE_2MB : 0);
	int fd = memfd_create(huge ? "uvnet-arena-huge" : "uvnet-arena", mfd);
	void *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	/* The device gets this fd: it must not be able to shrink the file
	 * under our mapping (our next access would be SIGBUS), nor seal it
	 * any further. Best effort: hugetlbfs has seals only since Linux 4.16. */
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL);
	/* Without reserved hugepages this is where MFD_HUGETLB fails (ENOMEM). */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	a->fd = fd;
	a->base = p;
	a->size = size;
	a->huge = huge;
	return 0;
fail:
	{
		int err = -errno;

		close(fd);
		return err;
	}
}

int uvn_arena_create(size_t size, unsigned flags, struct uvn_arena **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct uvn_arena *a;
	int ret = -ENOMEM;

	if (size == 0 || size > SIZE_MAX - HUGE_2MB)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	if (!(flags & UVN_ARENA_NO_HUGE))
		ret = map_memfd(a, (size + HUGE_2MB - 1) & ~(size_t)(HUGE_2MB - 1), true);
	if (ret)
		ret = map_memfd(a, (size + page - 1) & ~(page - 1), false);
	if (ret) {
		free(a);
		return ret;
	}
	*out = a;
	return 0;
}

void uvn_arena_destroy(struct uvn_arena *a)
{
	if (!a)
		return;
	munmap(a->base, a->size);
	close(a->fd);
	for (unsigned i = 0; i < NCLASS; i++)
		free(a->free[i].off);
	free(a);
}

static unsigned size_class(size_t size)
{
	unsigned c = MIN_SHIFT;

	while (c < NCLASS - 1 && ((size_t)1 << c) < size)
		c++;
	return c;
}

void *uvn_arena_alloc(struct uvn_arena *a, size_t size, size_t align)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), block, start;
	struct free_stack *fs;
	unsigned c;

	if (size == 0 || size > a->size || (align & (align - 1)) || align > a->size)
		return NULL;
	c = size_class(size);
	block = (size_t)1 << c;
	/* Natural alignment up to a page: a block never straddles more pages
	 * than it must. */
	if (align < (block < page ? block : page))
		align = block < page ? block : page;
	fs = &a->free[c];
	if (fs->n && !(fs->off[fs->n - 1] & (align - 1))) {
		a->in_use += block;
		return a->base + fs->off[--fs->n];
	}
	start = (a->bump + align - 1) & ~(align - 1);
	if (start < a->bump || start > a->size || a->size - start < block)
		return NULL;
	a->bump = start + block;
	a->in_use += block;
	return a->base + start;
}

void uvn_arena_free(struct uvn_arena *a, void *p, size_t size)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)a->base;
	unsigned c = size_class(size);
	struct free_stack *fs = &a->free[c];

	if (!p || (uintptr_t)p < (uintptr_t)a->base || off >= a->bump || (off & ((1u << MIN_SHIFT) - 1)))
		return;
	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? fs->cap * 2 : 16;
		uint64_t *n = realloc(fs->off, cap * sizeof(*n));

		if (!n)
			return; /* the block is lost, nothing else */
		fs->off = n;
		fs->cap = cap;
	}
	fs->off[fs->n++] = off;
	a->in_use -= (size_t)1 << c;
}

void uvn_arena_region(const struct uvn_arena *a, struct uvn_mem_region_desc *d)
{
	d->gpa = (uint64_t)(uintptr_t)a->base;
	d->uva = d->gpa;
	d->size = a->size;
	d->mmap_offset = 0;
}

int uvn_arena_fd(const struct uvn_arena *a)
{
	return a->fd;
}

void *uvn_arena_base(const struct uvn_arena *a)
{
	return a->base;
}

size_t uvn_arena_size(const struct uvn_arena *a)
{
	return a->size;
}

bool uvn_arena_is_huge(const struct uvn_arena *a)
{
	return a->huge;
}

size_t uvn_arena_in_use(const struct uvn_arena *a)
{
	return a->in_use;
}

uint64_t uvn_arena_addr(const struct uvn_arena *a, const void *p)
{
	uintptr_t v = (uintptr_t)p, b = (uintptr_t)a->base;

	if (v < b || v - b >= a->size)
		return 0;
	return (uint64_t)v;
}

void *uvn_arena_ptr(const struct uvn_arena *a, uint64_t addr, uint64_t len)
{
	uint64_t b = (uint64_t)(uintptr_t)a->base;

	if (len == 0 || addr < b || addr - b >= a->size || len > a->size - (addr - b))
		return NULL;
	return a->base + (addr - b);
}
