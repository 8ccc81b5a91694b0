/* SPDX-License-Identifier: MIT */
/*
 * The ring fixture of the unit tests: a simulated guest memory with a
 * region map (holes, pieces backed by unrelated host memory), a queue
 * fixture holding a ring in that memory with either half or both, raw ring
 * writers so device tests can hand-craft (malformed) rings without our
 * driver, and checks that a queue is broken for good. The net tests use it
 * too (tq_pair()): a driver half and a device half in one process whose
 * buffer addresses are plain host pointers.
 */
#ifndef UVN_RING_TEST_H
#define UVN_RING_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <cmocka.h>

#include <linux/virtio_config.h>
#include <linux/virtio_ring.h>
#include <uvnet/virtqueue.h>

#define F(bit) (1ULL << (bit))
#define F_PACKED F(VIRTIO_F_RING_PACKED)
#define F_INDIRECT F(VIRTIO_RING_F_INDIRECT_DESC)
#define F_EVENT_IDX F(VIRTIO_RING_F_EVENT_IDX)
#define F_IN_ORDER F(VIRTIO_F_IN_ORDER)

#define PK_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define PK_USED (1u << VRING_PACKED_DESC_F_USED)

/* Guest-physical base of the simulated memory: address 0 stays unmapped. */
#define TM_GPA 0x100000ull
#define TM_MAX_REG 8

struct treg {
	uint64_t gpa, len;
	uint8_t *host; /* NULL: a hole */
};

/* Guest memory: one mmap'd block at TM_GPA, plus overriding regions. */
struct tmem {
	uint8_t *base;
	size_t size;
	uint64_t gpa;               /* guest address of base: TM_GPA, or base (TQ_HOST) */
	bool identity;              /* TQ_HOST: an address in no region is a host pointer */
	size_t brk;                 /* bump allocator, offset into base */
	struct treg reg[TM_MAX_REG]; /* first match wins */
	unsigned nreg;
	unsigned xlate_calls;
	/* Called on each translation (after counting), e.g. to rewrite the ring. */
	void (*hook)(void *ctx, uint64_t addr, uint64_t len);
	void *hook_ctx;
};

void *tm_xlate(void *ctx, uint64_t addr, uint64_t *len);
/* Allocate @len bytes of guest memory; @return its guest address. */
uint64_t tm_alloc(struct tmem *m, size_t len, size_t align);
/* Host pointer of a guest address inside the main block. */
void *tm_ptr(struct tmem *m, uint64_t gpa);
/* Put a region in front of the others: @host NULL makes a hole. */
void tm_map(struct tmem *m, uint64_t gpa, uint64_t len, void *host);
/* Make the whole block (rings included) inaccessible, or accessible again. */
void tm_protect(struct tmem *m, bool accessible);

/* Indirect tables for the driver half, from a slot pool in guest memory. */
#define TQ_POOL_SLOTS 256
#define TQ_POOL_ENTRIES 16

struct tq {
	struct tmem m;
	bool packed;
	unsigned num;
	uint64_t features;
	struct uvn_vq_layout lay;
	uint64_t ring_gpa;
	uint8_t *ring;
	struct uvn_vq_drv *drv;
	struct uvn_vq_dev *dev;
	uint64_t pool_gpa;
	bool pool_busy[TQ_POOL_SLOTS];
	unsigned pool_out;    /* tables allocated and not freed */
	unsigned pool_allocs; /* tables ever allocated */
	bool pool_off;        /* make the allocator fail */
};

/* TQ_HOST: guest addresses are host addresses (the block's own, and any
 * pointer outside it), for tests whose buffers are ordinary memory. */
enum { TQ_DRV = 1, TQ_DEV = 2, TQ_NO_ALLOC = 4, TQ_HOST = 8 };

/* Set up a queue of @num entries; features without VIRTIO_F_RING_PACKED
 * pick the split layout. @flags: TQ_DRV and/or TQ_DEV, TQ_NO_ALLOC, TQ_HOST. */
void tq_setup(struct tq *q, unsigned num, uint64_t features, unsigned flags);
/* Both halves, buffers given as host pointers (tq_sg()), no indirect
 * tables: what the net device tests drive a netdev queue with. Set
 * q->m.hook to act between a pop's reads and its use of the buffers. */
void tq_pair(struct tq *q, unsigned num, uint64_t features);
/* A driver segment for a TQ_HOST queue. */
struct uvn_sg tq_sg(const void *p, uint32_t len);
/* TQ_HOST, the guest: make @buf (@len bytes, device-writable if @in)
 * available, @buf its token; the kick is the caller's. */
void tq_give(struct tq *q, void *buf, uint32_t len, bool in);
/* TQ_HOST, the guest: take back up to @max used buffers. @return how many */
unsigned tq_take(struct tq *q, struct uvn_vq_done *done, unsigned max);
/* Device half configuration for this queue, starting at the given indices. */
struct uvn_vq_dev_cfg tq_dev_cfg(struct tq *q, uint16_t avail, bool avail_wrap, uint16_t used,
				 bool used_wrap);
void tq_dev_create(struct tq *q, uint16_t avail, bool avail_wrap, uint16_t used, bool used_wrap);
void tq_teardown(struct tq *q);

/* Split ring raw access. */
struct vring_desc *sq_desc(struct tq *q, unsigned i);
struct vring_avail *sq_avail(struct tq *q);
struct vring_used *sq_used(struct tq *q);
uint16_t *sq_used_event(struct tq *q);
uint16_t *sq_avail_event(struct tq *q);
void sq_set_desc(struct tq *q, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next);
/* Put @head in the avail ring and publish it. */
void sq_publish(struct tq *q, uint16_t head);
void sq_read_used(struct tq *q, uint16_t slot, uint32_t *id, uint32_t *len);
/* The used element at @slot says @id and @len. */
void sq_check_used(struct tq *q, uint16_t slot, uint32_t id, uint32_t len);
uint16_t le16(uint16_t v);

/* Split indirect table entry in guest memory. */
void it_set(struct tq *q, uint64_t table, unsigned i, uint64_t addr, uint32_t len,
	    uint16_t flags, uint16_t next);

/* Packed indirect table entry in guest memory (its id field is reserved:
 * written as 0xbeef, which the device must ignore). */
void pt_set(struct tq *q, uint64_t table, unsigned i, uint64_t addr, uint32_t len,
	    uint16_t flags);

/* Packed ring raw access and a minimal independent driver. */
struct vring_packed_desc *pq_desc(struct tq *q, unsigned pos);
struct vring_packed_desc_event *pq_driver(struct tq *q);
struct vring_packed_desc_event *pq_device(struct tq *q);

struct tdesc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags; /* NEXT/WRITE/INDIRECT; avail bits are added */
};

struct pkdrv {
	uint16_t pos;
	bool wrap;
};

uint16_t pk_avail_bits(bool wrap);
/* Write a chain of @n descriptors at the mini driver's position, id in
 * each, the head's flags last; NEXT is added on all but the last. */
void pk_chain(struct tq *q, struct pkdrv *d, const struct tdesc *ds, unsigned n, uint16_t id);
/* Like pk_chain but @flags taken verbatim (no NEXT added). */
void pk_chain_raw(struct tq *q, struct pkdrv *d, const struct tdesc *ds, unsigned n, uint16_t id);

/* Broken-queue checks: the error, its counter (once, no other), and that
 * later calls fail the same way without touching guest memory. */
void expect_dev_broken(struct tq *q, int code);
void expect_drv_broken(struct tq *q, int code);
/* Pop expecting error @code, then expect_dev_broken(). */
void expect_pop_fails(struct tq *q, int code, unsigned iov_max);

/* A popped chain's iovec: host address of @gpa, @len bytes. */
void check_iov(struct tq *q, const struct iovec *iov, uint64_t gpa, size_t len);
/* A popped chain's id, segment counts and byte counts. */
void check_chain(const struct uvn_vq_chain *ch, uint16_t id, unsigned nout, unsigned nin,
		 uint32_t out_len, uint32_t in_len);
/* check_chain() and the descriptors it took (packed: the ring slots to skip). */
void check_pchain(const struct uvn_vq_chain *ch, uint16_t id, unsigned ndesc, unsigned nout,
		  unsigned nin, uint32_t out_len, uint32_t in_len);

/*
 * A malformed ring, one row of a table: the device half of a @num-entry
 * queue with @features pops what @write laid out and must fail with @err,
 * that error counted once and the queue broken for good without another
 * look at guest memory (expect_pop_fails()).
 */
struct bad_ring {
	const char *name;
	unsigned num;
	uint64_t features;
	void (*write)(struct tq *q);
	int err;          /* UVN_VQ_E_* */
	unsigned iov_max; /* iovecs the pop gets */
};

#define BAD_RING(write, num, features, err, iov_max) \
	{ #write, num, features, write, err, iov_max }

void run_bad_ring(void **state);

/*
 * A legal chain too long for the caller's iovec array: a device half of a
 * queue with @features pops what @write laid out with @iov_max iovecs and
 * gets -UVN_VQ_E_IOV_FULL and the @need iovecs the chain needs; the queue
 * is not broken, nothing is counted, the chain is still there: popped with
 * @need iovecs it comes whole, and popped without iovecs (a drop) it is
 * taken all the same (expect_iov_full()).
 */
struct iov_full_case {
	const char *name;
	unsigned num;
	uint64_t features;
	void (*write)(struct tq *q);
	unsigned iov_max; /* iovecs the first pop gets */
	unsigned need;    /* iovecs the chain needs */
};

#define IOV_FULL(write, num, features, iov_max, need) \
	{ #write, num, features, write, iov_max, need }

void expect_iov_full(struct tq *q, unsigned iov_max, unsigned need);
void run_iov_full(void **state);

/*
 * Tests as tables: each row of @rows (an array of structs whose first
 * member is the test's name) is one cmocka test, @fn with the row as its
 * state. run_test_tables() runs the plain tests, then every table's rows.
 */
struct test_table {
	const void *rows;
	size_t size;
	unsigned n;
	CMUnitTestFunction fn;
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define TEST_TABLE(rows, fn) { rows, sizeof((rows)[0]), NELEM(rows), fn }

int run_test_tables(const struct CMUnitTest *plain, unsigned nplain,
		    const struct test_table *tables, unsigned ntables);

/* A buffer in guest memory filled with a pattern. */
uint64_t tbuf(struct tq *q, size_t len);

/* Deterministic pseudo-random numbers for the tests. */
uint32_t trand(uint32_t *state);

/*
 * Driver half against device half (roundtrip.c): chains of random shape
 * whose readable bytes the device checks and whose writable bytes it fills
 * with what the driver can verify, completed in or out of order, until
 * @chains have come back. Checks tokens, lengths, contents, num_free and
 * counters at the end.
 */
struct rt_opts {
	unsigned chains;       /* buffers to complete */
	unsigned max_segs;     /* segments per chain (1..6) */
	unsigned max_inflight; /* 0: the queue size */
	bool shuffle;          /* device completes out of order */
	bool batch;            /* IN_ORDER: device uses uvn_vq_dev_set_batch_used() */
	bool unpop;            /* device sometimes gives a chain back */
	uint32_t seed;
};

void roundtrip(struct tq *q, const struct rt_opts *o);

/* A round trip (roundtrip()) over a @num-entry queue, both halves. */
struct rt_case {
	const char *name;
	unsigned num;
	uint64_t features;
	struct rt_opts o;
};

void run_roundtrip(void **state);

#endif
