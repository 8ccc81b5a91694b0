/* SPDX-License-Identifier: MIT */
/*
 * Shared by the ring fuzzers: guest memory as mapped pieces (each its own
 * exact-size allocation, so a read or write past one is caught by ASan),
 * the translate callback over them, and the checks every popped chain must
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

struct fz_piece {
	uint64_t gpa, len;
	uint8_t *host;
};

struct fz_mem {
	struct fz_piece pc[FZ_MEM_MAX_PIECES];
	unsigned npc;
	unsigned xlate_calls;
	/* Called on every translation when set (a driver racing the walker). */
	void (*on_xlate)(void *ctx);
	void *on_xlate_ctx;
};

/* Map @len zeroed bytes at @gpa. @return false when out of memory or pieces. */
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
