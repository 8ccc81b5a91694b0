/* SPDX-License-Identifier: MIT */
/*
 * Packed ring, driver half. Descriptors are written in ring order; a chain's
 * head flags are stored last (at kick_prepare, after one release fence for
 * the whole batch), which is what makes the chain available. Buffer ids come
 * from a private free list; used descriptors are matched back through them,
 * and only for chains already published: an id whose chain is still pending
 * is not the device's to return (its head is in pend_pos, npend counts it).
 */
#include <stdlib.h>

#include "vq.h"

#define F_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define F_USED (1u << VRING_PACKED_DESC_F_USED)
#define WRAP_BIT (1u << VRING_PACKED_EVENT_F_WRAP_CTR)

/*
 * Chains kept for a resubmission (uvn_packed_drv_keep(), a reconnecting
 * driver): unlike a split ring's table, a packed ring's slots do not keep
 * a chain the device holds. The driver reuses a slot as soon as a used
 * element covering it comes back, and that element may stand for another
 * chain (out of order), so the descriptors of a chain a dead device held
 * may be gone from the ring. Each chain's descriptors are copied here as
 * they are written (links in .next, entries from a free list: the entries
 * in use are the ring slots in flight, never more than num), with the
 * chain's first entry in its state's .last (unused by packed rings) and its
 * age. The block lives behind pend_pos[num], in the same allocation, so
 * the ring objects need no field for it and the destroy path frees it.
 */
struct pk_keep {
	struct uvn_desc *copy;  /* [num]: addr, len, flags (NEXT, WRITE, INDIRECT), next entry */
	uint32_t *age;          /* [num] per id: adds before it */
	uint32_t seq;           /* adds so far */
	uint16_t free_head;     /* first free entry */
	bool on;
};

static size_t keep_offset(unsigned num)
{
	return ((size_t)num * sizeof(uint16_t) + 15) & ~(size_t)15;
}

static size_t keep_size(unsigned num)
{
	return ((sizeof(struct pk_keep) + 15) & ~(size_t)15) +
	       (size_t)num * (sizeof(struct uvn_desc) + sizeof(uint32_t));
}

static struct pk_keep *keep_of(const struct uvn_vq_drv *vq)
{
	return (struct pk_keep *)((char *)vq->pk.pend_pos + keep_offset(vq->num));
}

static void keep_init(struct uvn_vq_drv *vq)
{
	struct pk_keep *k = keep_of(vq);

	k->copy = (struct uvn_desc *)((char *)k + ((sizeof(*k) + 15) & ~(size_t)15));
	k->age = (uint32_t *)(k->copy + vq->num);
	for (unsigned i = 0; i < vq->num; i++)
		k->copy[i].next = (uint16_t)(i + 1);
	k->free_head = 0;
}

/* Copy one descriptor of chain @id (the previous entry *@prev, or none). */
static void keep_desc(struct pk_keep *k, uint16_t *prev, uint16_t *first, uint64_t addr,
		      uint32_t len, uint16_t flags)
{
	uint16_t e = k->free_head;

	k->free_head = k->copy[e].next;
	k->copy[e] = (struct uvn_desc){ .addr = addr, .len = len, .flags = flags };
	if (*prev == UINT16_MAX)
		*first = e;
	else
		k->copy[*prev].next = e;
	*prev = e;
}

/* The copies of a chain given back: its entries return to the free list. */
static void keep_release(struct uvn_vq_drv *vq, const struct uvn_drv_state *s)
{
	struct pk_keep *k = keep_of(vq);
	uint16_t e = s->last;

	for (unsigned i = 0; i < s->ndesc; i++) {
		uint16_t next = k->copy[e].next;

		k->copy[e].next = k->free_head;
		k->free_head = e;
		e = next;
	}
}

int uvn_packed_drv_init(struct uvn_vq_drv *vq, void *ring)
{
	struct uvn_vq_layout lay;

	uvn_vq_layout(true, vq->num, &lay);
	vq->pk.desc = ring;
	vq->pk.driver = (struct vring_packed_desc_event *)((char *)ring + lay.driver);
	vq->pk.device = (struct vring_packed_desc_event *)((char *)ring + lay.device);
	vq->pk.avail_wrap = true;
	vq->pk.used_wrap = true;
	vq->pk.pend_pos = calloc(1, keep_offset(vq->num) + keep_size(vq->num));
	vq->pk.pend_flags = calloc(vq->num, sizeof(uint16_t));
	if (!vq->pk.pend_pos || !vq->pk.pend_flags)
		return -UVN_VQ_E_NOSPC;
	keep_init(vq);
	for (unsigned i = 0; i < vq->num; i++)
		vq->next[i] = (uint16_t)(i + 1);
	vq->free_head = 0;
	vq->num_free = vq->num;
	vq->epoch = 1;
	return 0;
}

/* AVAIL matches the driver's wrap counter, USED its inverse. */
static uint16_t avail_flags(bool wrap)
{
	return (uint16_t)(wrap ? F_AVAIL : F_USED);
}

static void write_body(struct vring_packed_desc *d, uint64_t addr, uint32_t len, uint16_t id)
{
	uvn_wr64(&d->addr, addr);
	uvn_wr32(&d->len, len);
	uvn_wr16(&d->id, id);
}

/* Write the chain's descriptors; all but the head's flags are stored now. */
static void write_chain(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout,
			unsigned total, uint16_t id, uint16_t *head_flags)
{
	uint16_t pos = vq->pk.next_avail;
	bool wrap = vq->pk.avail_wrap;

	for (unsigned k = 0; k < total; k++) {
		uint16_t f = (uint16_t)((k + 1 < total ? VRING_DESC_F_NEXT : 0) |
					(k >= nout ? VRING_DESC_F_WRITE : 0) | avail_flags(wrap));

		write_body(&vq->pk.desc[pos], sg[k].addr, sg[k].len, id);
		if (k == 0)
			*head_flags = f;
		else
			uvn_wr16(&vq->pk.desc[pos].flags, f);
		uvn_ring_advance(&pos, &wrap, vq->num);
	}
	vq->pk.next_avail = pos;
	vq->pk.avail_wrap = wrap;
}

/* Keep chain @id's descriptors as written (@taddr: its indirect table, or 0:
 * a table is never at address 0, the arena it comes from is mapped). */
static void keep_chain(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout,
		       unsigned total, uint64_t taddr, uint16_t id)
{
	struct pk_keep *k = keep_of(vq);
	uint16_t prev = UINT16_MAX, first = 0;

	if (taddr) {
		keep_desc(k, &prev, &first, taddr, (uint32_t)(16 * total), VRING_DESC_F_INDIRECT);
	} else {
		for (unsigned i = 0; i < total; i++)
			keep_desc(k, &prev, &first, sg[i].addr, sg[i].len,
				  (uint16_t)((i + 1 < total ? VRING_DESC_F_NEXT : 0) |
					     (i >= nout ? VRING_DESC_F_WRITE : 0)));
	}
	vq->state[id].last = first;
	k->age[id] = k->seq++;
}

int uvn_packed_drv_add(struct uvn_vq_drv *vq, const struct uvn_sg *sg, unsigned nout,
		       unsigned nin, void *token, bool indirect)
{
	unsigned total = nout + nin, ndesc;
	struct vring_packed_desc *table = NULL;
	uint64_t taddr = 0, in_len = 0;
	uint16_t id, head_flags = 0, head_pos = vq->pk.next_avail;

	for (unsigned k = nout; k < total; k++)
		in_len += sg[k].len;
	if (indirect)
		table = vq->indirect_alloc(vq->indirect_ctx, total, &taddr);
	ndesc = table ? 1 : total;
	if (vq->num_free < ndesc) {
		if (table)
			vq->indirect_free(vq->indirect_ctx, table, total);
		return -UVN_VQ_E_NOSPC;
	}
	id = vq->free_head;
	vq->free_head = vq->next[id];
	if (table) {
		for (unsigned k = 0; k < total; k++) {
			write_body(&table[k], sg[k].addr, sg[k].len, 0);
			uvn_wr16(&table[k].flags, k >= nout ? VRING_DESC_F_WRITE : 0);
		}
		write_body(&vq->pk.desc[head_pos], taddr, (uint32_t)(16 * total), id);
		head_flags = (uint16_t)(VRING_DESC_F_INDIRECT | avail_flags(vq->pk.avail_wrap));
		uvn_ring_advance(&vq->pk.next_avail, &vq->pk.avail_wrap, vq->num);
		vq->st.indirect++;
	} else {
		write_chain(vq, sg, nout, total, id, &head_flags);
	}
	/* npend <= ids in flight and not published <= num: get_used takes
	 * back published ids only, detach_unused drops what is pending. */
	vq->pk.pend_pos[vq->pk.npend] = head_pos;
	vq->pk.pend_flags[vq->pk.npend] = head_flags;
	vq->pk.npend++;
	vq->num_free = (uint16_t)(vq->num_free - ndesc);
	vq->state[id] = (struct uvn_drv_state){
		.token = token, .indirect = table, .in_len = (uint32_t)in_len,
		.ndesc = (uint16_t)ndesc, .nindir = table ? (uint16_t)total : 0,
		.epoch = vq->epoch,
	};
	if (keep_of(vq)->on)
		keep_chain(vq, sg, nout, total, table ? taddr : 0, id);
	vq->added = (uint16_t)(vq->added + ndesc);
	vq->in_flight++;
	if (vq->in_order)
		uvn_drv_order_push(vq, id);
	vq->st.bufs++;
	return 0;
}

/*
 * Did the position move from @old to @new_pos (the last @added descriptors,
 * on wrap counter @wrap) past the event @off_wrap? Positions are unwrapped
 * into one u16 line: an event on the other lap is one ring length behind.
 */
static bool packed_need_event(uint16_t off_wrap, uint16_t new_pos, uint16_t added, bool wrap,
			      uint16_t num)
{
	uint16_t event = off_wrap & (uint16_t)~WRAP_BIT;

	if (!!(off_wrap & WRAP_BIT) != wrap)
		event = (uint16_t)(event - num);
	return uvn_need_event(event, new_pos, (uint16_t)(new_pos - added));
}

void uvn_packed_drv_publish(struct uvn_vq_drv *vq)
{
	if (!vq->pk.npend)
		return;
	/* Bodies of every pending chain before any of their heads. */
	uvn_fence_release();
	for (unsigned i = 0; i < vq->pk.npend; i++)
		uvn_store_release16(&vq->pk.desc[vq->pk.pend_pos[i]].flags, vq->pk.pend_flags[i]);
	vq->pk.npend = 0;
	vq->added = 0;
	uvn_drv_next_epoch(vq);
}

bool uvn_packed_drv_kick_prepare(struct uvn_vq_drv *vq)
{
	uint16_t flags, added = vq->added;
	bool need;

	if (!vq->pk.npend)
		return false;
	uvn_packed_drv_publish(vq);
	/* Heads visible before we read the device's event suppression. */
	uvn_fence_full();
	/* Acquire: the device writes off_wrap before the flags that select it. */
	flags = uvn_load_acquire16(&vq->pk.device->flags) & UVN_EVENT_FLAGS_MASK;
	if (flags == VRING_PACKED_EVENT_FLAG_DESC && vq->event_idx)
		need = packed_need_event(uvn_rd16(&vq->pk.device->off_wrap), vq->pk.next_avail,
					 added, vq->pk.avail_wrap, vq->num);
	else
		need = flags != VRING_PACKED_EVENT_FLAG_DISABLE;
	if (need)
		vq->st.notify++;
	else
		vq->st.notify_suppressed++;
	return need;
}

static bool is_used(uint16_t flags, bool wrap)
{
	return !!(flags & F_AVAIL) == wrap && !!(flags & F_USED) == wrap;
}

/* Give back an id's slot and descriptors without touching the ring. */
static void *forget(struct uvn_vq_drv *vq, uint16_t id)
{
	struct uvn_drv_state *s = &vq->state[id];
	void *token = s->token;

	if (keep_of(vq)->on)
		keep_release(vq, s);
	uvn_drv_release_indirect(vq, s);
	vq->next[id] = vq->free_head;
	vq->free_head = id;
	vq->num_free = (uint16_t)(vq->num_free + s->ndesc);
	s->token = NULL;
	vq->in_flight--;
	return token;
}

static void *detach(struct uvn_vq_drv *vq, uint16_t id)
{
	/* The device skips the rest of the chain's descriptors; so do we. */
	for (unsigned k = 0; k < vq->state[id].ndesc; k++)
		uvn_ring_advance(&vq->pk.last_used, &vq->pk.used_wrap, vq->num);
	vq->st.used++;
	return forget(vq, id);
}

/* Read the used descriptor at last_used. @return 1, 0 if none, or an error. */
static int read_used(struct uvn_vq_drv *vq, uint16_t *id, uint32_t *len)
{
	struct vring_packed_desc *d = &vq->pk.desc[vq->pk.last_used];
	/* Acquire: id and len are read after the flags that publish them. */
	uint16_t flags = uvn_load_acquire16(&d->flags);

	if (!is_used(flags, vq->pk.used_wrap))
		return 0;
	*id = uvn_rd16(&d->id);
	/* Without WRITE the length is reserved and ignored: nothing written. */
	*len = flags & VRING_DESC_F_WRITE ? le32toh(*(volatile uint32_t *)&d->len) : 0;
	/* IN_ORDER: a published id means every chain before it is too. */
	if (UVN_UNLIKELY(*id >= vq->num || !uvn_drv_returnable(vq, &vq->state[*id])))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_ID);
	if (UVN_UNLIKELY(*len > vq->state[*id].in_len))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_LEN);
	return 1;
}

static int get_in_order(struct uvn_vq_drv *vq, struct uvn_vq_done *out)
{
	uint16_t id;

	if (!vq->in_batch) {
		uint32_t len;
		int ret = read_used(vq, &vq->batch_id, &len);

		if (ret <= 0)
			return ret;
		vq->batch_len = len;
		vq->in_batch = true;
	}
	if (UVN_UNLIKELY(!vq->in_flight))
		return uvn_vq_drv_fail(vq, UVN_VQ_E_USED_ID);
	id = uvn_drv_order_peek(vq);
	if (id == vq->batch_id) {
		vq->in_batch = false;
		out->len = vq->batch_len;
	} else {
		out->len = vq->state[id].in_len; /* skipped: used completely */
	}
	uvn_drv_order_pop(vq);
	out->token = detach(vq, id);
	return 1;
}

int uvn_packed_drv_get_used(struct uvn_vq_drv *vq, struct uvn_vq_done *out, unsigned max)
{
	unsigned n = 0;

	while (n < max) {
		int ret;

		if (vq->in_order) {
			ret = get_in_order(vq, &out[n]);
		} else {
			uint16_t id;
			uint32_t len;

			ret = read_used(vq, &id, &len);
			if (ret > 0) {
				out[n].len = len;
				out[n].token = detach(vq, id);
			}
		}
		if (ret < 0)
			/* Buffers reclaimed before the bad element are not lost;
			 * the next call reports the broken queue. */
			return n ? (int)n : ret;
		if (ret == 0)
			break;
		n++;
	}
	return (int)n;
}

bool uvn_packed_drv_has_used(struct uvn_vq_drv *vq)
{
	if (vq->in_batch)
		return true;
	return is_used(uvn_load_acquire16(&vq->pk.desc[vq->pk.last_used].flags), vq->pk.used_wrap);
}

static void set_event_flags(struct uvn_vq_drv *vq, uint16_t flags)
{
	if (vq->pk.event_flags != flags) {
		vq->pk.event_flags = flags;
		uvn_wr16(&vq->pk.driver->flags, flags);
	}
}

void uvn_packed_drv_disable_cb(struct uvn_vq_drv *vq)
{
	set_event_flags(vq, VRING_PACKED_EVENT_FLAG_DISABLE);
}

/* Descriptors the used element of @id stands for: the chain, or with
 * IN_ORDER every chain from the oldest in flight (order cursor *@oh) to it.
 * @return 0 for an id that is not in flight (get_used will report it). */
static unsigned element_span(const struct uvn_vq_drv *vq, uint16_t id, uint16_t *oh,
			     unsigned *left)
{
	unsigned span = 0;

	if (id >= vq->num || !uvn_drv_returnable(vq, &vq->state[id]) || !*left)
		return 0;
	if (!vq->in_order) {
		--*left;
		return vq->state[id].ndesc;
	}
	for (;;) {
		uint16_t x = vq->order[*oh];

		span += vq->state[x].ndesc;
		--*left;
		if (++*oh == vq->num)
			*oh = 0;
		if (x == id)
			return span;
		if (!*left)
			return 0;
	}
}

/*
 * Has the device's used position already gone more than @ahead descriptors
 * past ours? Its elements need not start at any given position (chains and
 * in-order batches are skipped over), so walk them the way get_used will,
 * without taking anything.
 */
static bool device_passed(const struct uvn_vq_drv *vq, unsigned ahead)
{
	unsigned pos = vq->pk.last_used, walked = 0, left = vq->in_flight;
	uint16_t oh = vq->order_head;
	bool wrap = vq->pk.used_wrap;

	while (walked <= ahead) {
		const struct vring_packed_desc *d = &vq->pk.desc[pos];
		unsigned span;

		if (!is_used(uvn_load_acquire16(&d->flags), wrap))
			return false;
		span = element_span(vq, uvn_rd16(&d->id), &oh, &left);
		if (!span)
			return true; /* let get_used deal with it */
		/* A span is at most the ring: one wrap at most. */
		walked += span;
		pos += span;
		if (pos >= vq->num) {
			pos -= vq->num;
			wrap = !wrap;
		}
	}
	return true;
}

bool uvn_packed_drv_enable_cb(struct uvn_vq_drv *vq, bool delayed)
{
	uint16_t pos = vq->pk.last_used;
	bool wrap = vq->pk.used_wrap;
	unsigned ahead = 0;

	if (vq->event_idx) {
		if (delayed)
			ahead = (unsigned)(vq->num - vq->num_free) * 3 / 4;
		pos = (uint16_t)(pos + ahead);
		if (pos >= vq->num) {
			pos = (uint16_t)(pos - vq->num);
			wrap = !wrap;
		}
		/* The event position first: the device reads it after the flags. */
		uvn_wr16(&vq->pk.driver->off_wrap, (uint16_t)(pos | (wrap ? WRAP_BIT : 0)));
		uvn_fence_release();
		set_event_flags(vq, VRING_PACKED_EVENT_FLAG_DESC);
	} else {
		set_event_flags(vq, VRING_PACKED_EVENT_FLAG_ENABLE);
	}
	/* The request visible before we look for used descriptors again. */
	uvn_fence_full();
	if (vq->in_batch)
		return false;
	if (!ahead)
		return !uvn_packed_drv_has_used(vq);
	/* Delayed: the device may have passed the event before it saw it; it
	 * then will not notify, so we must not sleep. */
	return !device_passed(vq, ahead);
}

void *uvn_packed_drv_detach_unused(struct uvn_vq_drv *vq)
{
	void *token = NULL;

	if (!vq->in_flight)
		return NULL;
	/* Chains not yet published never will be: their ids may be given
	 * back now, and pend_pos must not outgrow the ids in flight. */
	vq->pk.npend = 0;
	vq->added = 0;
	if (vq->in_order) {
		/* Oldest first, keeping the order of the rest. */
		token = forget(vq, uvn_drv_order_peek(vq));
		uvn_drv_order_pop(vq);
	} else {
		for (unsigned i = 0; i < vq->num && !token; i++) {
			if (vq->state[i].token)
				token = forget(vq, (uint16_t)i);
		}
	}
	if (!vq->in_flight)
		vq->in_batch = false;
	return token;
}

/*
 * From now on keep every chain's descriptors (struct pk_keep), for
 * uvn_packed_drv_resubmit(); only on a queue with nothing in flight.
 * Declared in net/driver/drv.h: the ring's one user that reconnects.
 * @return 0, or -1 (not packed, or chains in flight already)
 */
int uvn_packed_drv_keep(struct uvn_vq_drv *vq);
int uvn_packed_drv_keep(struct uvn_vq_drv *vq)
{
	if (!vq->packed || vq->in_flight)
		return -1;
	keep_of(vq)->on = true;
	return 0;
}

/* A ring position and the wrap counter that goes with it. */
struct pk_pos {
	uint16_t pos;
	bool wrap;
};

/* Move @p on by @n <= num descriptors. */
static void pos_skip(const struct uvn_vq_drv *vq, struct pk_pos *p, unsigned n)
{
	unsigned v = p->pos + n;

	if (v >= vq->num) {
		v -= vq->num;
		p->wrap = !p->wrap;
	}
	p->pos = (uint16_t)v;
}

/* IN_ORDER: the chains from the order cursor *@oh up to @id are done. */
static void walk_order(const struct uvn_vq_drv *vq, struct pk_pos *p, uint16_t *oh, uint16_t id,
		       uint8_t *mark)
{
	for (unsigned n = 0; n < vq->num; n++) {
		uint16_t x = vq->order[*oh];

		mark[x] = 2;
		pos_skip(vq, p, vq->state[x].ndesc);
		if (++*oh == vq->num)
			*oh = 0;
		if (x == id)
			return;
	}
}

/*
 * The used elements the dead device published that we have not read yet,
 * taken the way get_used will take them (chains skipped as it skips them,
 * IN_ORDER batches as a whole): their chains are marked 2 (done). Stops at
 * the first slot that is not an element get_used would accept: that one
 * and any after it are overwritten by the resubmission, as if the device
 * had never written them (a batch whose first element it had not
 * published yet when it died). @return the position after the last one
 */
static struct pk_pos walk_used(const struct uvn_vq_drv *vq, uint8_t *mark)
{
	struct pk_pos p = { vq->pk.last_used, vq->pk.used_wrap };
	uint16_t oh = vq->order_head;

	/* An element read already stands for the chains up to batch_id. */
	if (vq->in_batch)
		walk_order(vq, &p, &oh, vq->batch_id, mark);
	for (;;) {
		const struct vring_packed_desc *d = &vq->pk.desc[p.pos];
		uint16_t flags = uvn_load_acquire16(&d->flags), id;
		uint32_t len;

		if (!is_used(flags, p.wrap))
			break;
		id = uvn_rd16(&d->id);
		len = flags & VRING_DESC_F_WRITE ? le32toh(*(volatile uint32_t *)&d->len) : 0;
		if (id >= vq->num || mark[id] != 1 || len > vq->state[id].in_len)
			break;
		if (vq->in_order) {
			walk_order(vq, &p, &oh, id, mark);
		} else {
			mark[id] = 2;
			pos_skip(vq, &p, vq->state[id].ndesc);
		}
	}
	return p;
}

static int older_first(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * After the device died and before another one starts (vhost-user
 * reconnect): lay the chains it had not completed out again, from the
 * used position it had reached on, and say where that is. A packed ring
 * has no index in memory a new device could start from, and the slots of
 * the chains the old one held may be overwritten (by used elements of
 * chains it completed out of order, by chains we added since in slots
 * those freed): so the device's used position is found by walking its
 * elements from ours (walk_used()), and from there every published chain
 * still in flight and not among them is written again from its kept
 * copy, oldest first (IN_ORDER: the order they must come back in). They
 * fill the ring exactly up to our next avail position: the descriptors
 * in flight are those from our used position to it. The new device
 * starts at @base with nothing held (SET_VRING_BASE: position | wrap <<
 * 15). Chains added and not published yet are published first.
 * Declared in net/driver/drv.h: the ring's one user that reconnects.
 * @mark, @keys: scratch of num bytes and num entries (no allocation here).
 * @return chains laid out again, or -1 if the ring's state does not add
 *         up (or chains were not kept): nothing is changed then
 */
int uvn_packed_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint64_t *keys, uint16_t *base);
int uvn_packed_drv_resubmit(struct uvn_vq_drv *vq, uint8_t *mark, uint64_t *keys, uint16_t *base)
{
	struct pk_keep *k = keep_of(vq);
	struct pk_pos u, p;
	unsigned n = 0, ndesc = 0;
	int dist;

	if (!vq->packed || !k->on || vq->err)
		return -1;
	uvn_packed_drv_publish(vq);
	for (unsigned h = 0; h < vq->num; h++)
		mark[h] = uvn_drv_returnable(vq, &vq->state[h]);
	u = walk_used(vq, mark);
	for (unsigned h = 0; h < vq->num; h++) {
		if (mark[h] != 1)
			continue;
		keys[n++] = (uint64_t)(uint32_t)(k->seq - k->age[h]) << 16 | h;
		ndesc += vq->state[h].ndesc;
	}
	dist = (int)vq->pk.next_avail - (int)u.pos + (u.wrap != vq->pk.avail_wrap ? vq->num : 0);
	if (dist < 0 || (unsigned)dist != ndesc)
		return -1;
	qsort(keys, n, sizeof(*keys), older_first);
	p = u;
	for (unsigned i = 0; i < n; i++) {
		uint16_t id = (uint16_t)keys[i];
		uint16_t e = vq->state[id].last;

		for (unsigned j = 0; j < vq->state[id].ndesc; j++) {
			const struct uvn_desc *c = &k->copy[e];
			uint16_t f = (uint16_t)(c->flags | avail_flags(p.wrap));

			write_body(&vq->pk.desc[p.pos], c->addr, c->len, id);
			if (j) {
				uvn_wr16(&vq->pk.desc[p.pos].flags, f);
			} else {
				/* Heads last, as for any add (publish below). */
				vq->pk.pend_pos[vq->pk.npend] = p.pos;
				vq->pk.pend_flags[vq->pk.npend++] = f;
			}
			e = c->next;
			pos_skip(vq, &p, 1);
		}
	}
	uvn_packed_drv_publish(vq);
	*base = (uint16_t)(u.pos | (u.wrap ? WRAP_BIT : 0));
	return (int)n;
}
