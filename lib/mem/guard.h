/* SPDX-License-Identifier: MIT */
/*
 * Guarded mappings: file-backed memory a peer can take away.
 *
 * A frontend that ftruncate()s the memfd behind its guest memory (or the
 * dirty log) after we mapped it turns our next access there into SIGBUS.
 * Checking the size at map time cannot prevent that, and requiring seals
 * would refuse QEMU file-backed memory and DPDK virtio-user. So every such
 * mapping is registered here, and a SIGBUS handler (installed on the first
 * registration, chaining to the one before it) recognises a fault inside a
 * registered mapping, replaces that whole mapping with anonymous zero
 * memory so the access completes harmlessly, and tells the mapping's owner.
 * The owner (one per vhost-user connection) then drops that connection
 * from its control thread. A SIGBUS anywhere else is not ours: it goes to
 * the previous handler, or kills the process as it would have.
 *
 * The data path never consults the registry: the cost is one slot per
 * mapping and nothing per access.
 */
#ifndef UVN_MEM_GUARD_H
#define UVN_MEM_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Guarded mappings per process: 64 ports x (2 tables of 32 regions during
 * a change + a log), with room for tests and other users of the library. */
#define UVN_MEM_GUARD_SLOTS 8192u

/*
 * Whoever must learn that its memory went away (one vhost-user connection).
 * Written by the SIGBUS handler, on whichever thread faulted.
 */
struct uvn_mem_owner {
	_Atomic uint64_t faults; /* mappings of this owner that faulted */
	int efd;                 /* eventfd, readable once one has */
};

/* Create the owner's eventfd (non-blocking). @return 0 or a negative errno */
int uvn_mem_owner_init(struct uvn_mem_owner *o);

/* Close it; every mapping naming @o must be unregistered first. */
void uvn_mem_owner_fini(struct uvn_mem_owner *o);

/* The fd to poll (EPOLLIN) in the owner's control loop; read it to rearm. */
static inline int uvn_mem_owner_fd(const struct uvn_mem_owner *o)
{
	return o->efd;
}

/* Faults so far in @o's mappings; nonzero means: drop the connection. */
static inline uint64_t uvn_mem_owner_faults(const struct uvn_mem_owner *o)
{
	return atomic_load_explicit(&o->faults, memory_order_relaxed);
}

/*
 * Register [addr, addr + len), an existing mapping of its own (nothing
 * else may share its pages). (Re)installs the SIGBUS handler if it is not
 * the current one: a handler installed later that does not chain to the
 * previous one disarms the guard until the next registration.
 * @param owner  told about a fault, or NULL (still survived and counted)
 * @return a slot id (> 0) for the calls below, or -ENOSPC (every slot
 * taken), -EINVAL, or the errno of installing the handler
 */
int uvn_mem_guard_add(void *addr, size_t len, struct uvn_mem_owner *owner);

/*
 * Unregister, before the mapping is unmapped and while nobody accesses it
 * (afterwards the address range may be reused by anything). Id 0 is a no-op.
 */
void uvn_mem_guard_del(int id);

/* Name the owner later (a region mapped before its table's owner was known). */
void uvn_mem_guard_set_owner(int id, struct uvn_mem_owner *owner);

/* Has the mapping of slot @id faulted (and now shows zeros)? */
bool uvn_mem_guard_faulted(int id);

/* SIGBUS caught in guarded mappings since the process started. */
uint64_t uvn_mem_guard_faults_total(void);

/* Slots in use (for tests: unregistering leaves none behind). */
unsigned uvn_mem_guard_slots_used(void);

/*
 * mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset) and
 * register the mapping for @owner; for memory a peer's fd backs that is
 * not a region of a table (the dirty log).
 * @return 0 and the mapping in *out, or a negative errno (nothing mapped)
 */
int uvn_mem_map_guarded(int fd, uint64_t offset, size_t len, struct uvn_mem_owner *owner, void **out);

/* Unregister and munmap a mapping from uvn_mem_map_guarded(). NULL is a no-op. */
void uvn_mem_unmap_guarded(void *p, size_t len);

#endif
