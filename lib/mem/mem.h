/* SPDX-License-Identifier: MIT */
/*
 * Guest memory, both sides of vhost-user.
 *
 * Device side: a table of regions the frontend shared (each an fd mapped
 * MAP_SHARED here), translating guest-physical addresses (descriptor
 * buffers) and frontend virtual addresses (ring addresses) to pointers in
 * this process, and back (for dirty logging). Every translation checks the
 * whole range against one region: the frontend is not trusted.
 *
 * Driver side: a shared arena, one memfd (hugepages when the system has
 * them) with a small allocator, sent to the device as a single region whose
 * guest-physical and user address are both our own virtual address.
 *
 * Neither half locks: a table is changed only while nobody translates
 * through it (the vhost-user backend stops its queues around changes).
 */
#ifndef UVN_MEM_H
#define UVN_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guard.h"

/* Regions one table holds: vhost-user's usual VHOST_USER_MAX_RAM_SLOTS. */
#define UVN_MEM_MAX_REGIONS 32u

/* A region as the frontend describes it. */
struct uvn_mem_region_desc {
	uint64_t gpa;         /* guest_phys_addr */
	uint64_t size;
	uint64_t uva;         /* userspace_addr: the frontend's virtual address */
	uint64_t mmap_offset; /* where the region starts in the fd */
};

/* A mapped region. */
struct uvn_mem_region {
	uint64_t gpa, size, uva, mmap_offset;
	uint8_t *host;        /* our address of gpa */
	void *map;            /* the mapping to munmap */
	size_t map_len;
	unsigned refs;        /* ADD_MEM_REGs of this very region not yet removed */
	int guard;            /* its slot in the SIGBUS guard (guard.h), 0 = none */
};

/* Regions sorted by gpa, never overlapping in guest-physical space. */
struct uvn_mem {
	unsigned n;
	struct uvn_mem_region r[UVN_MEM_MAX_REGIONS];
};

/*
 * Map @d from @fd (MAP_SHARED, read/write). The fd is not closed: the
 * mapping keeps its own reference, so the caller closes it either way.
 * The mapping is guarded (guard.h): if the frontend later shrinks the file,
 * an access there reads zeros instead of killing us with SIGBUS, and
 * @owner is told (its fault count and eventfd) so that it can drop the
 * frontend. @owner may be NULL: the fault is still survived, and seen by
 * uvn_mem_faulted().
 * @return 0, or -EINVAL (empty or overflowing region), -EBADF, -ENODEV (not
 * a regular file: memfd, tmpfs or hugetlbfs), -ERANGE (region beyond the
 * end of the fd), -EACCES (fd cannot be mapped shared and writable),
 * -ENOMEM, -ENOSPC (no guard slot left); see uvn_mem_map_hint()
 */
int uvn_mem_region_map_owned(const struct uvn_mem_region_desc *d, int fd, struct uvn_mem_owner *owner,
			     struct uvn_mem_region *out);

/* uvn_mem_region_map_owned() without an owner. */
int uvn_mem_region_map(const struct uvn_mem_region_desc *d, int fd, struct uvn_mem_region *out);

/* Unmap a region from uvn_mem_region_map() (no-op on an unmapped one);
 * nobody may access it meanwhile. */
void uvn_mem_region_unmap(struct uvn_mem_region *r);

/* @return a sentence explaining an error of uvn_mem_region_map() to an operator. */
const char *uvn_mem_map_hint(int err);

/* @return an empty table (calloc), or NULL. */
struct uvn_mem *uvn_mem_create(void);

/* Unmap every region and free the table. */
void uvn_mem_destroy(struct uvn_mem *m);

/* Unmap every region; the table stays usable and empty. */
void uvn_mem_clear(struct uvn_mem *m);

/*
 * Can @r join @m? @return 0, -ENOSPC (table full) or -EEXIST (overlaps a
 * region in guest-physical space).
 */
int uvn_mem_check(const struct uvn_mem *m, const struct uvn_mem_region *r);

/* Insert @r (the table owns the mapping on success). @return as uvn_mem_check(). */
int uvn_mem_insert(struct uvn_mem *m, const struct uvn_mem_region *r);

/*
 * Has guest memory of any region in @m gone away under us (its file shrunk,
 * the region now reads zeros)? Control path: the frontend must be dropped.
 */
bool uvn_mem_faulted(const struct uvn_mem *m);

/* @return the index of the region with exactly this gpa, uva and size, or -ENOENT. */
int uvn_mem_find(const struct uvn_mem *m, uint64_t gpa, uint64_t uva, uint64_t size);

/* Remove region @idx without unmapping it: it is handed back in @out. */
void uvn_mem_take(struct uvn_mem *m, unsigned idx, struct uvn_mem_region *out);

/*
 * Translate [gpa, gpa + len) which must lie wholly in one region.
 * @return our pointer, or NULL (len 0, overflow, hole, straddle)
 */
void *uvn_mem_gpa(const struct uvn_mem *m, uint64_t gpa, uint64_t len);

/* Same for a frontend virtual address range (ring addresses). */
void *uvn_mem_uva(const struct uvn_mem *m, uint64_t uva, uint64_t len);

/*
 * Reverse: the guest-physical address of our pointer @va.
 * @param avail  receives the bytes from @va to the end of its region
 * @return 0, or -ENOENT if @va is not in guest memory
 */
int uvn_mem_va_to_gpa(const struct uvn_mem *m, const void *va, uint64_t *gpa, uint64_t *avail);

/*
 * A translation context for one user (one queue): the table and the last
 * region it hit, so that users on different threads never share a
 * written cache line.
 */
struct uvn_mem_cursor {
	const struct uvn_mem *mem;
	unsigned hint;
};

/*
 * uvn_xlate_fn for <uvnet/virtqueue.h>: @ctx is a struct uvn_mem_cursor.
 * Returns the pointer and, in *len, the bytes contiguous from it (at most
 * the bytes wanted, clipped at the end of the region), or NULL.
 */
void *uvn_mem_xlate(void *ctx, uint64_t gpa, uint64_t *len);

/* ------------------------------------------------------------------------ */
/* Driver side: the shared arena                                            */
/* ------------------------------------------------------------------------ */

struct uvn_arena;

#define UVN_ARENA_NO_HUGE 1u /* plain memfd even if hugepages are available */

/*
 * Create an arena of at least @size bytes (rounded up to the page size, or
 * to 2 MB with hugepages), mapped shared and populated.
 * @return 0, or a negative errno
 */
int uvn_arena_create(size_t size, unsigned flags, struct uvn_arena **out);

/* Unmap, close the memfd and free. */
void uvn_arena_destroy(struct uvn_arena *a);

/*
 * Allocate @size bytes aligned to @align (a power of two, 0 = natural for
 * the size class up to a page). Blocks come in power-of-two size classes
 * from 64 bytes; the allocator's bookkeeping lives outside the shared
 * memory, where the device cannot corrupt it.
 * @return the block, or NULL when the arena is exhausted or @align is bad
 */
void *uvn_arena_alloc(struct uvn_arena *a, size_t size, size_t align);

/* Free a block; @size as given to uvn_arena_alloc(). */
void uvn_arena_free(struct uvn_arena *a, void *p, size_t size);

/* The memory region to send (gpa == uva == base address, offset 0). */
void uvn_arena_region(const struct uvn_arena *a, struct uvn_mem_region_desc *d);

int uvn_arena_fd(const struct uvn_arena *a);
void *uvn_arena_base(const struct uvn_arena *a);
size_t uvn_arena_size(const struct uvn_arena *a);
bool uvn_arena_is_huge(const struct uvn_arena *a);
/* Bytes handed out and not freed. */
size_t uvn_arena_in_use(const struct uvn_arena *a);

/* Device-visible address of @p (its virtual address), or 0 if not in the arena. */
uint64_t uvn_arena_addr(const struct uvn_arena *a, const void *p);

/* Our pointer for device address @addr with @len bytes, or NULL if outside. */
void *uvn_arena_ptr(const struct uvn_arena *a, uint64_t addr, uint64_t len);

#endif
