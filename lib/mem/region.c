/* SPDX-License-Identifier: MIT */
/*
 * Mapping one region the frontend shared. Everything about the fd and the
 * numbers is checked before mmap: a region beyond the end of its file maps
 * fine and then raises SIGBUS on first touch, and a private or read-only
 * mapping silently shows us memory the guest never writes. A file that
 * shrinks after mmap is the guard's business (guard.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"

static bool add_overflows(uint64_t a, uint64_t b)
{
	return a + b < a;
}

/* A sealed memfd cannot be mapped shared and writable. */
static bool write_sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);
	int bad = F_SEAL_WRITE;

#ifdef F_SEAL_FUTURE_WRITE
	bad |= F_SEAL_FUTURE_WRITE;
#endif
	return seals > 0 && (seals & bad);
}

static int check_fd(const struct uvn_mem_region_desc *d, int fd, struct stat *st)
{
	int fl;

	if (fd < 0 || fstat(fd, st) < 0)
		return -EBADF;
	/* memfd, tmpfs and hugetlbfs files are regular files; sockets, pipes,
	 * eventfds and devices are not guest memory. */
	if (!S_ISREG(st->st_mode))
		return -ENODEV;
	if (st->st_size < 0 || d->mmap_offset + d->size > (uint64_t)st->st_size)
		return -ERANGE;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -EBADF;
	if ((fl & O_ACCMODE) != O_RDWR || write_sealed(fd))
		return -EACCES;
	return 0;
}

int uvn_mem_region_map_owned(const struct uvn_mem_region_desc *d, int fd, struct uvn_mem_owner *owner,
			     struct uvn_mem_region *out)
{
	uint64_t align = (uint64_t)sysconf(_SC_PAGESIZE), off, delta, len;
	struct stat st;
	void *p;
	int ret;

	out->map = NULL;
	out->guard = 0;
	if (d->size == 0 || add_overflows(d->gpa, d->size) || add_overflows(d->uva, d->size) ||
	    add_overflows(d->mmap_offset, d->size))
		return -EINVAL;
	ret = check_fd(d, fd, &st);
	if (ret)
		return ret;
	/* hugetlbfs reports its page size as the block size and insists on
	 * mappings aligned to it. */
	if ((uint64_t)st.st_blksize > align && !(st.st_blksize & (st.st_blksize - 1)))
		align = (uint64_t)st.st_blksize;
	/* Map only the region, from the aligned offset below it, rather than
	 * the fd from 0: QEMU often sends several regions of one fd at large
	 * offsets (RAM below and above 4 GB). */
	off = d->mmap_offset & ~(align - 1);
	delta = d->mmap_offset - off;
	len = (delta + d->size + align - 1) & ~(align - 1);
	if (len < d->size || len > SIZE_MAX || off > (uint64_t)INT64_MAX)
		return -EINVAL;
	p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	if (p == MAP_FAILED) {
		switch (errno) {
		case EACCES:
		case EPERM:
			return -EACCES;
		case EINVAL:
			return -EINVAL;
		case ENODEV:
			return -ENODEV;
		default:
			return -ENOMEM;
		}
	}
	/* Registered before anyone can touch it: checking the size above
	 * proves nothing about the next access. */
	ret = uvn_mem_guard_add(p, (size_t)len, owner);
	if (ret < 0) {
		munmap(p, (size_t)len);
		return ret;
	}
	out->guard = ret;
	/* Guest memory has no business in our core dumps (best effort). */
	(void)madvise(p, (size_t)len, MADV_DONTDUMP);
	out->gpa = d->gpa;
	out->size = d->size;
	out->uva = d->uva;
	out->mmap_offset = d->mmap_offset;
	out->map = p;
	out->map_len = (size_t)len;
	out->host = (uint8_t *)p + delta;
	out->refs = 1;
	return 0;
}

int uvn_mem_region_map(const struct uvn_mem_region_desc *d, int fd, struct uvn_mem_region *out)
{
	return uvn_mem_region_map_owned(d, fd, NULL, out);
}

void uvn_mem_region_unmap(struct uvn_mem_region *r)
{
	if (r->map) {
		/* Out of the registry first: once unmapped, the addresses may
		 * be anybody's. */
		uvn_mem_guard_del(r->guard);
		r->guard = 0;
		munmap(r->map, r->map_len);
		r->map = NULL;
		r->host = NULL;
	}
}

const char *uvn_mem_map_hint(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return "mapped";
	case EINVAL:
		return "region is empty, wraps around the address space, or is misaligned for its file";
	case EBADF:
		return "no usable file descriptor was passed for the region";
	case ENODEV:
		return "the fd is not a regular file: guest memory must be a memfd, tmpfs or hugetlbfs file";
	case ERANGE:
		return "region (mmap_offset + size) extends beyond the end of its file";
	case EACCES:
		return "the fd cannot be mapped shared and writable: the frontend's memory must be shared "
		       "(QEMU: memory-backend-memfd or memory-backend-file with share=on) and not sealed";
	case ENOMEM:
		return "out of address space or memory mapping the region";
	case ENOSPC:
		return "too many guest memory mappings in this process to guard another";
	default:
		return "cannot map the region";
	}
}
