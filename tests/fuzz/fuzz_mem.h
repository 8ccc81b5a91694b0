/* SPDX-License-Identifier: MIT */
/*
 * Shared by the ring fuzzers: guest memory as mapped pieces (each in its
 * own fenced area, so a read or write past one is caught by ASan), the
 * translate callback over them, and the checks every popped chain must
 * pass.
 */
#ifndef UVN_FUZZ_MEM_H
#define UVN_FUZZ_MEM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>

#include <uvnet/virtqueue.h>

#define CHECK(c)                                                                            \
	do {                                                                                \
		if (!(c)) {                                                                 \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n", #c, __FILE__,     \
				__LINE__);                                                  \
			abort();                                                            \
		}                                                                           \
	} while (0)

#define FZ_MEM_MAX_PIECES 18
/* The largest piece fz_mem_add maps. */
#define FZ_MEM_PIECE_CAP 65536u

/*
 * A buffer kept mapped from one input to the next: mapping, faulting in and
 * unmapping a fresh allocation per input is most of the time a small input
 * takes under ASan. The mapping is a PROT_NONE page, room for @cap bytes,
 * and another PROT_NONE page; the buffer in use ends at the second guard
 * page (less the slack @align needs, fewer than @align bytes) and
 * everything else is poisoned, so a byte read or written just past the
 * buffer or anywhere before it is caught, as a heap redzone would catch it
 * (and further past it the guard page does, where a redzone stops).
 */
struct fz_area {
	uint8_t *map;  /* the first guard page; NULL before the first use */
	size_t cap;    /* the room between the guard pages */
	uint8_t *p;    /* the buffer in use, or NULL */
	size_t len;
};

/* The area's buffer of @len bytes (<= @cap, the same @cap every call),
 * @align-aligned. Its contents are whatever the last input left: the
 * caller writes every byte. @return NULL when out of memory. */
uint8_t *fz_area_get(struct fz_area *a, size_t cap, size_t len, size_t align);
/* Give the buffer back: poisoned again until the next fz_area_get. */
void fz_area_put(struct fz_area *a);

struct fz_piece {
	uint64_t gpa, len;
	uint8_t *host;
	struct fz_area *area; /* where host lies */
};

struct fz_mem {
	struct fz_piece pc[FZ_MEM_MAX_PIECES];
	unsigned npc;
	unsigned xlate_calls;
	/* Called on every translation when set (a driver racing the walker). */
	void (*on_xlate)(void *ctx);
	void *on_xlate_ctx;
};

/* Map @len (<= FZ_MEM_PIECE_CAP) zeroed bytes at @gpa, in an area of a pool
 * kept across inputs. @return false when out of memory or pieces. */
bool fz_mem_add(struct fz_mem *m, uint64_t gpa, uint64_t len);
void fz_mem_free(struct fz_mem *m);
/* uvn_xlate_fn over the pieces; @ctx is the struct fz_mem. */
void *fz_mem_xlate(void *ctx, uint64_t addr, uint64_t *len);
/* Does @v lie wholly inside one piece? */
bool fz_mem_contains(const struct fz_mem *m, const struct iovec *v);

/* A popped chain: iovecs in mapped memory, lengths adding up, id and
 * descriptor count below the queue size. */
void fz_check_chain(const struct fz_mem *m, unsigned num, const struct uvn_vq_chain *ch,
		    const struct iovec *iov, unsigned iov_max);
/* Use a chain's buffers as a device would (read the readable part, write
 * the writable part). @return the bytes written. */
uint32_t fz_use_chain(const struct uvn_vq_chain *ch, const struct iovec *iov);

#endif
