/* SPDX-License-Identifier: MIT */
/*
 * In-flight tracking of the device half (vhost-user INFLIGHT_SHMFD, QEMU
 * docs/interop/vhost-user.rst "Inflight I/O tracking"): a region shared
 * with the frontend, one slice per queue, that outlives the backend
 * process. Each chain popped is marked in it with a counter that gives the
 * pop order; each chain published as used is cleared. A backend that
 * restarts (after a crash) reads its slice back, repairs the last batch
 * that was being published, and pops the chains still marked again,
 * oldest first, before it reads new avail entries.
 *
 * Only a queue with a tracker attached pays for it: the ring code checks
 * one pointer. The region belongs to the frontend, so everything read from
 * it is validated (and read once) at attach; the running tracker never
 * reads the region back (its batch list is kept privately too).
 *
 * Split rings: inflight.c; packed rings: inflight_packed.c.
 */
#ifndef UVN_RING_INFLIGHT_H
#define UVN_RING_INFLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct uvn_vq_dev;

/* The split layout of vhost-user.rst; fields in host byte order. */
struct uvn_inflight_desc_split {
	uint8_t inflight;    /* 1: head popped and not used yet */
	uint8_t padding[5];
	uint16_t next;       /* the list of the last batch of used heads */
	uint64_t counter;    /* pop order */
};

struct uvn_inflight_split {
	uint64_t features;   /* 0 */
	uint16_t version;    /* 1; 0 = never initialised */
	uint16_t desc_num;   /* queue size */
	uint16_t last_batch_head;
	uint16_t used_idx;   /* used->idx once the last batch was cleared */
	struct uvn_inflight_desc_split desc[];
};

/*
 * The packed layout. A packed ring's descriptors are overwritten by used
 * elements while other chains are still in flight, so the region keeps a
 * copy of every descriptor popped, one entry each, taken from a free list;
 * a chain's entries are linked by next, its head entry holds the rest.
 */
struct uvn_inflight_desc_packed {
	uint8_t inflight;    /* head entry: 1 popped and not used yet */
	uint8_t padding;
	uint16_t next;       /* the next entry of the chain, or of the free list */
	uint16_t last;       /* head entry: the chain's last entry */
	uint16_t num;        /* head entry: ring descriptors of the chain */
	uint64_t counter;    /* head entry: pop order */
	uint16_t id, flags;  /* the descriptor as popped (host byte order) */
	uint32_t len;
	uint64_t addr;
};

struct uvn_inflight_packed {
	uint64_t features;   /* 0 */
	uint16_t version;    /* 1; 0 = never initialised */
	uint16_t desc_num;   /* queue size */
	uint16_t free_head;  /* the free list; desc_num: empty */
	uint16_t old_free_head;
	uint16_t used_idx;   /* the device's used position ... */
	uint16_t old_used_idx;
	uint8_t used_wrap_counter; /* ... and wrap counter */
	uint8_t old_used_wrap_counter;
	uint8_t padding[7];
	struct uvn_inflight_desc_packed desc[];
};

#define UVN_INFLIGHT_PACKED_HDR 32u

_Static_assert(sizeof(struct uvn_inflight_desc_split) == 16, "split in-flight entry is 16 bytes");
_Static_assert(sizeof(struct uvn_inflight_split) == 16, "split in-flight header is 16 bytes");
_Static_assert(sizeof(struct uvn_inflight_desc_packed) == 32, "packed in-flight entry is 32 bytes");
_Static_assert(sizeof(struct uvn_inflight_packed) == UVN_INFLIGHT_PACKED_HDR,
	       "packed in-flight header is 32 bytes");

/* Why attach refused a slice (positive codes). */
enum {
	UVN_INFLIGHT_OK = 0,
	UVN_INFLIGHT_E_SMALL,     /* slice too small for the queue size */
	UVN_INFLIGHT_E_VERSION,   /* version neither 0 nor 1, or features set */
	UVN_INFLIGHT_E_NUM,       /* desc_num is not the queue size */
	UVN_INFLIGHT_E_BATCH,     /* used index moved by more than the queue size since used_idx */
	UVN_INFLIGHT_E_HEAD,      /* a batch list entry >= the queue size */
	UVN_INFLIGHT_E_FLAG,      /* inflight neither 0 nor 1 */
	UVN_INFLIGHT_E_COUNTER,   /* two heads with one counter, or a counter at its end */
	UVN_INFLIGHT_E_NOMEM,
	UVN_INFLIGHT_E_BUSY,      /* chains already popped: attach before the first pop */
	UVN_INFLIGHT_E_POS,       /* packed: a free head, used position or wrap counter out of range */
	UVN_INFLIGHT_E_LIST,      /* packed: entry lists loop, cross, or leave entries out */
	UVN_INFLIGHT_E_ID,        /* packed: a buffer id out of range, or two chains with one */
	UVN_INFLIGHT_E__COUNT
};

/* Our copy of a packed entry's links, never read back from the region. */
struct uvn_inflight_ent {
	uint16_t next, last, num, id;
};

/* The tracker of one queue (ring code only). */
struct uvn_inflight {
	struct uvn_inflight_split *r;  /* the queue's slice (split) */
	struct uvn_inflight_packed *p; /* the queue's slice (packed) */
	uint16_t num;
	uint64_t counter;              /* the last counter given */
	uint16_t *batch;               /* heads (packed: head entries) pushed since the last flush */
	uint16_t nbatch;
	uint16_t last_head;            /* our copy of last_batch_head */
	uint16_t *resubmit;            /* heads (head entries) to pop again, oldest first */
	uint16_t nresubmit, next_resubmit;
	uint64_t ring_popped;          /* chains from the avail ring popped, not given back */
	/* packed */
	struct uvn_inflight_ent *ent;
	uint16_t *entry;               /* head entry of each buffer id held, or num */
	uint16_t free_head;
	uint16_t pos;                  /* the avail position our last pop left */
	bool wrap;
	uint16_t resub_end;            /* the avail position past the chains to pop again */
	bool resub_wrap;
	uint64_t ring_desc;            /* descriptors popped from the ring since (never wraps) */
	bool resumed;                  /* packed: positions from a slice a predecessor kept */
};

/*
 * Bytes of one queue's slice for queues of up to @queue_size entries, the
 * same for both layouts (the larger, 64-byte aligned), so the stride does
 * not depend on features the frontend may set after asking for the region.
 * 0 if @queue_size is 0 or above UVN_VQ_MAX_SIZE.
 */
size_t uvn_inflight_slice_size(unsigned queue_size);

/*
 * Attach the slice @region (@len bytes, shared, mapped writable) to @vq,
 * before its first pop. A slice never used (version 0) is initialised
 * from the ring's used index; otherwise it is checked, the last batch
 * repaired against the used index in guest memory, and the chains still
 * marked queued for pop, oldest first; the queue's next avail index
 * becomes used index + their number (what a frontend that restarted us
 * cannot know). A packed ring has no used index in memory: its used
 * position and wrap counter are the slice's, its avail position the
 * descriptors of the chains still marked past that. @return 0, or a
 * positive UVN_INFLIGHT_E_ code (nothing attached; the slice may have been
 * partly repaired).
 */
int uvn_vq_dev_inflight_attach(struct uvn_vq_dev *vq, void *region, size_t len);

/* Detach and free the tracker (before uvn_vq_dev_destroy()); no-op without one. */
void uvn_vq_dev_inflight_detach(struct uvn_vq_dev *vq);

/* @return chains still to be popped again from the slice attached last. */
unsigned uvn_vq_dev_inflight_pending(const struct uvn_vq_dev *vq);
/* Did the ring's positions come from its slice (a packed ring resumed from
 * what a predecessor kept), not from SET_VRING_BASE? */
bool uvn_vq_dev_inflight_resumed(const struct uvn_vq_dev *vq);

const char *uvn_inflight_strerror(int code);

/* Ring hooks (split_dev.c), only with a tracker. */
static inline void uvn_inflight_split_mark(struct uvn_inflight *t, uint16_t head)
{
	volatile struct uvn_inflight_desc_split *d = &t->r->desc[head];

	/* The counter before the flag: a crash in between leaves it unmarked
	 * (it was never used either, and is popped again from the avail ring). */
	d->counter = ++t->counter;
	d->inflight = 1;
}

void uvn_inflight_split_push(struct uvn_inflight *t, uint16_t head);
/*
 * The chain popped last is given back (uvn_vq_dev_unpop). @return true if
 * it was one popped again after a restart: it stays marked and is popped
 * again next, and the avail index must not move back.
 */
bool uvn_inflight_split_unpop(struct uvn_inflight *t, uint16_t head);
void uvn_inflight_split_published(struct uvn_inflight *t, uint16_t used_idx);

/* Slice accessors: the frontend may write its region at any time, so each
 * field is read once, through volatile; host byte order (vhost-user.rst). */
static inline uint16_t uvn_slice_rd16(const void *p)
{
	return *(const volatile uint16_t *)p;
}

static inline void uvn_slice_wr16(void *p, uint16_t v)
{
	*(volatile uint16_t *)p = v;
}

static inline void uvn_slice_wr8(void *p, uint8_t v)
{
	*(volatile uint8_t *)p = v;
}

/* Zero @n bytes of a slice (volatile: the frontend maps it too). */
void uvn_inflight_zero(void *p, size_t n);

/* A chain marked in a slice: queued for pop again by counter. */
struct uvn_inflight_marked {
	uint64_t counter;
	uint16_t head;
};

/* Sort @m by counter into t->resubmit; counters must be unique and not at
 * their end. @return 0 or UVN_INFLIGHT_E_COUNTER */
int uvn_inflight_order(struct uvn_inflight *t, struct uvn_inflight_marked *m, unsigned n);

/* Packed (inflight_packed.c; hooks in packed_dev.c). */
int uvn_inflight_packed_attach(struct uvn_vq_dev *vq, struct uvn_inflight *t, void *region,
			       size_t len);
struct uvn_vq_chain;
struct iovec;
int uvn_inflight_packed_pop(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
			    unsigned iov_max);
void uvn_inflight_packed_push(struct uvn_inflight *t, const struct uvn_vq_chain *ch);
/* Around the store that publishes a flush's used elements. */
void uvn_inflight_packed_publishing(struct uvn_inflight *t, uint16_t used_pos, bool used_wrap);
void uvn_inflight_packed_published(struct uvn_inflight *t, uint16_t used_pos, bool used_wrap);
/* packed_dev.c: a pop from the ring, without tracking. */
int uvn_packed_dev_pop_ring(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
			    unsigned iov_max);

#endif
