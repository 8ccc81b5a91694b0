/* SPDX-License-Identifier: MIT */
/*
 * The queue objects behind the opaque handles of <uvnet/virtqueue.h>, and
 * the per-layout entry points the dispatch in vq.c calls.
 */
#ifndef UVN_RING_VQ_H
#define UVN_RING_VQ_H

#include <uvnet/virtqueue.h>

#include "ring.h"
#include "util/stats.h"

struct uvn_inflight;

/* Driver-private bookkeeping per head (split) or buffer id (packed). */
struct uvn_drv_state {
	void *token;      /* NULL: not in flight */
	void *indirect;   /* table to free on reclaim, or NULL */
	uint32_t in_len;  /* writable bytes, to validate the used length */
	uint16_t ndesc;   /* ring descriptors the chain occupies */
	uint16_t nindir;  /* entries of the indirect table */
	uint16_t last;    /* split: last descriptor of the chain */
	uint16_t epoch;   /* vq->epoch when added: published once that moved on */
};

struct uvn_vq_drv {
	bool packed, event_idx, in_order;
	bool indirect;        /* INDIRECT_DESC negotiated and an allocator given */
	uint16_t num;
	int err;              /* 0, or -UVN_VQ_E_... once broken */
	uint16_t num_free;
	uint16_t added;       /* since the last kick_prepare: chains (split), descriptors (packed) */
	/* IN_ORDER: a used entry that completes a batch ending at batch_id */
	bool in_batch;
	uint16_t batch_id;
	uint32_t batch_len;
	uint16_t in_flight;   /* buffers the device has not returned */
	/* Publish batch the next adds belong to, never 0. A state whose epoch
	 * is this one is not published yet: the device cannot have it. */
	uint16_t epoch;
	struct uvn_drv_state *state;
	uint16_t *next;       /* split: free/chain links; packed: free id links */
	/* split: first free descriptor (IN_ORDER: the next one in ring order,
	 * the free ones being contiguous from there); packed: first free id */
	uint16_t free_head;
	/* IN_ORDER: heads/ids in the order they were made available; ring
	 * positions in [0, num), not free running (num need not divide 2^16) */
	uint16_t *order;
	uint16_t order_head, order_tail;
	uvn_indirect_alloc_fn indirect_alloc;
	uvn_indirect_free_fn indirect_free;
	void *indirect_ctx;
	union {
		struct {
			struct vring_desc *desc;
			struct vring_avail *avail;
			struct vring_used *used;
			uint16_t avail_idx;   /* next avail slot (free running) */
			uint16_t last_used;   /* next used entry to read (free running) */
			uint16_t shadow_used; /* used->idx as last read */
			uint16_t flags_shadow;/* our copy of avail->flags */
		} split;
		struct {
			struct vring_packed_desc *desc;
			struct vring_packed_desc_event *driver; /* we write */
			struct vring_packed_desc_event *device; /* device writes */
			uint16_t next_avail;  /* next ring position to fill */
			bool avail_wrap;
			uint16_t last_used;   /* next ring position to read used */
			bool used_wrap;
			uint16_t event_flags; /* our copy of driver->flags */
			/* heads added but not yet published, with their flags */
			uint16_t *pend_pos, *pend_flags;
			uint16_t npend;
		} pk;
	};
	struct uvn_vq_stats st;
};

struct uvn_vq_dev {
	bool packed, event_idx, in_order, batch_used;
	bool indirect_ok;     /* INDIRECT_DESC negotiated */
	uint16_t num;
	int err;
	uvn_xlate_fn xlate;
	void *xlate_ctx;
	/* In-flight tracking (inflight.h), NULL unless the frontend shared a
	 * region: the only cost to untracked queues is the check. */
	struct uvn_inflight *inflight;
	/* staged used elements not yet published */
	uint16_t staged;
	/*
	 * Ring slots (split: chains; packed: descriptors) popped and not yet
	 * published as used, and of those the ones pushed since the last
	 * flush. A driver reuses a slot only after it saw it used, so held
	 * never exceeds num; only a driver that flips descriptor flags or
	 * indices behind our back gets past that, and then the used position
	 * that batches accumulate could leave the ring (PITFALLS 20). The
	 * pops check it (UVN_VQ_E_OVERRUN): every used write stays in range
	 * by construction.
	 */
	uint16_t held, pushed;
	/* IN_ORDER batch not yet written: chains, id/len of the last one */
	uint16_t batch_n;
	uint16_t batch_id;
	uint32_t batch_len;
	uint16_t batch_ndesc;     /* packed batch: descriptors covered */
	bool signalled_valid;
	uint16_t signalled;       /* used index / position at the last flush's check */
	union {
		struct {
			struct vring_desc *desc;
			struct vring_avail *avail;
			struct vring_used *used;
			uint16_t last_avail;  /* next avail entry to pop */
			uint16_t shadow_avail;/* avail->idx as last read */
			uint16_t used_idx;    /* next used slot to write */
			uint16_t flags_shadow;/* our copy of used->flags */
		} split;
		struct {
			struct vring_packed_desc *desc;
			struct vring_packed_desc_event *driver; /* driver writes */
			struct vring_packed_desc_event *device; /* we write */
			uint16_t last_avail;
			bool avail_wrap;
			uint16_t used_pos;    /* next used slot to write */
			bool used_wrap;
			/* first staged used slot: its flags are stored at flush */
			bool first_held;
			uint16_t first_pos;
			uint16_t first_flags;
			uint16_t event_flags; /* our copy of device->flags */
		} pk;
	};
	struct uvn_vq_stats st;
};

/* Mark a queue broken with @code (positive), count it, return -code. */
int uvn_vq_drv_fail(struct uvn_vq_drv *vq, int code);
int uvn_vq_dev_fail(struct uvn_vq_dev *vq, int code);

/*
 * Device side: accumulate one chain's descriptors into iovecs (chain.c).
 * Past iov_max the walk goes on counting the iovecs without storing them,
 * so that a chain too long for the caller's array is still checked whole:
 * it is IOV_FULL only if it is otherwise legal.
 */
struct uvn_chain_walk {
	struct uvn_vq_dev *vq;
	struct iovec *iov;   /* NULL: count only (a pop that drops the chain) */
	unsigned iov_max;
	unsigned cap;        /* niov past this: UVN_VQ_E_CHAIN_LONG */
	unsigned niov;       /* iovecs the chain needs so far (stored: up to iov_max) */
	unsigned nout;
	uint64_t out_len, in_len;
};

void uvn_chain_begin(struct uvn_chain_walk *w, struct uvn_vq_dev *vq, struct iovec *iov,
		     unsigned iov_max);
/* Add one buffer descriptor (not INDIRECT). @return 0 or a positive error code. */
int uvn_chain_add(struct uvn_chain_walk *w, const struct uvn_desc *d);
/* Walk the indirect table @d points to. @return 0 or a positive error code. */
int uvn_chain_indirect(struct uvn_chain_walk *w, const struct uvn_desc *d);
/* Fill @ch from the walk. @return true if the chain did not fit the
 * caller's array (its counts in @ch are then what it needs). */
bool uvn_chain_end(const struct uvn_chain_walk *w, struct uvn_vq_chain *ch);
/* A pop whose chain did not fit: checks done, nothing taken. */
int uvn_chain_iov_full(struct uvn_vq_chain *ch, uint16_t id, unsigned ndesc);

/*
 * The common case on the device side: a chain of one descriptor (no NEXT,
 * no INDIRECT) that lies in one mapping piece. Fills iov[0] and @ch.
 * @return 0 done, -1 when the general walk must do it (no iovec to fill,
 * or the buffer spans mapping pieces), or a positive error code.
 */
static inline int uvn_chain_single(struct uvn_vq_dev *vq, const struct uvn_desc *d,
				   struct iovec *iov, unsigned iov_max, struct uvn_vq_chain *ch)
{
	bool write = d->flags & VRING_DESC_F_WRITE;
	uint64_t n = d->len;
	void *p;

	if (UVN_UNLIKELY(d->len == 0))
		return UVN_VQ_E_ZERO_LEN;
	if (UVN_UNLIKELY(iov_max == 0)) /* iov NULL comes with 0 (a drop) */
		return -1; /* the walk counts what the chain needs */
	if (UVN_UNLIKELY(d->addr + d->len < d->addr))
		return UVN_VQ_E_UNMAPPED;
	p = vq->xlate(vq->xlate_ctx, d->addr, &n);
	if (UVN_UNLIKELY(!p || n == 0))
		return UVN_VQ_E_UNMAPPED;
	if (UVN_UNLIKELY(n < d->len))
		return -1;
	iov[0].iov_base = p;
	iov[0].iov_len = d->len;
	ch->nout = !write;
	ch->nin = write;
	ch->out_len = write ? 0 : d->len;
	ch->in_len = write ? d->len : 0;
	return 0;
}

/* Per-layout halves (split_drv.c, split_dev.c, packed_drv.c, packed_dev.c). */
int uvn_split_drv_init(struct uvn_vq_drv *vq, void *ring);
int uvn_split_drv_add(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout, unsigned nin,
		      void *token, bool indirect);
bool uvn_split_drv_kick_prepare(struct uvn_vq_drv *vq);
void uvn_split_drv_publish(struct uvn_vq_drv *vq);
int uvn_split_drv_add_one(struct uvn_vq_drv *vq, uint64_t addr, uint32_t len, bool writable,
			  void *token);
/* uvn_vq_drv_reclaim() reading the used entries (at most 32 per call). */
int uvn_vq_drv_reclaim_entries(struct uvn_vq_drv *vq, void **tokens, unsigned max);
unsigned uvn_split_drv_add_in_n(struct uvn_vq_drv *vq, const uint64_t *addr, void *const *tokens,
				 uint32_t len, unsigned n);
int uvn_split_drv_reclaim_in_order(struct uvn_vq_drv *vq, void **tokens, unsigned max);
int uvn_split_drv_get_used(struct uvn_vq_drv *vq, struct uvn_vq_done *out, unsigned max);
bool uvn_split_drv_has_used(struct uvn_vq_drv *vq);
void uvn_split_drv_disable_cb(struct uvn_vq_drv *vq);
bool uvn_split_drv_enable_cb(struct uvn_vq_drv *vq, bool delayed);
void *uvn_split_drv_detach_unused(struct uvn_vq_drv *vq);

int uvn_packed_drv_init(struct uvn_vq_drv *vq, void *ring);
int uvn_packed_drv_add(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout, unsigned nin,
		       void *token, bool indirect);
bool uvn_packed_drv_kick_prepare(struct uvn_vq_drv *vq);
void uvn_packed_drv_publish(struct uvn_vq_drv *vq);
int uvn_packed_drv_get_used(struct uvn_vq_drv *vq, struct uvn_vq_done *out, unsigned max);
bool uvn_packed_drv_has_used(struct uvn_vq_drv *vq);
void uvn_packed_drv_disable_cb(struct uvn_vq_drv *vq);
bool uvn_packed_drv_enable_cb(struct uvn_vq_drv *vq, bool delayed);
void *uvn_packed_drv_detach_unused(struct uvn_vq_drv *vq);

void uvn_split_dev_init(struct uvn_vq_dev *vq, const struct uvn_vq_dev_cfg *cfg);
int uvn_split_dev_avail(struct uvn_vq_dev *vq);
int uvn_split_dev_pop(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
		      unsigned iov_max);
void uvn_split_dev_push(struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch, uint32_t len);
void uvn_split_dev_end_batch(struct uvn_vq_dev *vq);
bool uvn_split_dev_flush(struct uvn_vq_dev *vq);
bool uvn_split_dev_enable_notify(struct uvn_vq_dev *vq);
void uvn_split_dev_disable_notify(struct uvn_vq_dev *vq);

void uvn_packed_dev_init(struct uvn_vq_dev *vq, const struct uvn_vq_dev_cfg *cfg);
int uvn_packed_dev_avail(struct uvn_vq_dev *vq);
int uvn_packed_dev_pop(struct uvn_vq_dev *vq, struct uvn_vq_chain *ch, struct iovec *iov,
		       unsigned iov_max);
void uvn_packed_dev_push(struct uvn_vq_dev *vq, const struct uvn_vq_chain *ch, uint32_t len);
void uvn_packed_dev_end_batch(struct uvn_vq_dev *vq);
bool uvn_packed_dev_flush(struct uvn_vq_dev *vq);
bool uvn_packed_dev_enable_notify(struct uvn_vq_dev *vq);
void uvn_packed_dev_disable_notify(struct uvn_vq_dev *vq);

/* IN_ORDER bookkeeping: remember @id as the newest buffer made available,
 * and take the oldest one. Positions wrap at num with a compare. */
static inline void uvn_drv_order_push(struct uvn_vq_drv *vq, uint16_t id)
{
	vq->order[vq->order_tail] = id;
	if (++vq->order_tail == vq->num)
		vq->order_tail = 0;
}

static inline uint16_t uvn_drv_order_peek(const struct uvn_vq_drv *vq)
{
	return vq->order[vq->order_head];
}

static inline void uvn_drv_order_pop(struct uvn_vq_drv *vq)
{
	if (++vq->order_head == vq->num)
		vq->order_head = 0;
}

/*
 * May the device return the buffer of state @s: is it in flight and
 * published? A hostile device can name a chain we added but have not made
 * available; taking it back would free ids and descriptors the pending
 * publish still refers to.
 */
static inline bool uvn_drv_returnable(const struct uvn_vq_drv *vq, const struct uvn_drv_state *s)
{
	return s->token && s->epoch != vq->epoch;
}

/*
 * The chains added so far are published: start a new epoch. When the
 * counter wraps, every state becomes epoch 0 (published long ago) and the
 * count restarts at 1, so a buffer in flight across 64K publishes never
 * matches the current epoch again.
 */
static inline void uvn_drv_next_epoch(struct uvn_vq_drv *vq)
{
	if (UVN_UNLIKELY(++vq->epoch == 0)) {
		for (unsigned i = 0; i < vq->num; i++)
			vq->state[i].epoch = 0;
		vq->epoch = 1;
	}
}

/* Shared driver helper: return a reclaimed state slot's indirect table. */
static inline void uvn_drv_release_indirect(struct uvn_vq_drv *vq, struct uvn_drv_state *s)
{
	if (s->indirect) {
		vq->indirect_free(vq->indirect_ctx, s->indirect, s->nindir);
		s->indirect = NULL;
	}
}

#endif
